"""CPU tests of pointers built from 64-bit integers (issue 12): every bit of the address survives
tt.addptr, tl.where, the int <-> pointer casts and the tensors that carry them.

The addresses here point at no argument, so they are only computed and cast back to int64, never
dereferenced; the last test checks that one built from a real argument's address still loads.
"""

import numpy as np

from harness import triton, tl, launch

# Values whose upper bits a 48-bit pointer field would lose: negative, 2^47, 2^62, small.
ADDRS = np.array([-5, 2**47, 2**62, 7], dtype=np.int64)


@triton.jit
def _ptr_roundtrip_kernel(a_ptr, plus_ptr, where_ptr, back_ptr, minus_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    a = tl.load(a_ptr + offs)
    p = a.to(tl.pi32_t)
    tl.store(back_ptr + offs, p.to(tl.int64))
    tl.store(plus_ptr + offs, (p + 1).to(tl.int64))
    # q is p reversed: lane i takes p's lane N-1-i.
    q = tl.load(a_ptr + (N - 1 - offs)).to(tl.pointer_type(tl.int32))
    tl.store(where_ptr + offs, tl.where(offs % 2 == 0, p, q).to(tl.int64))
    # Far out and back again: 2^60 int32 elements (2^62 bytes) up, then down.
    far = p + (1 << 60)
    tl.store(minus_ptr + offs, (far - (1 << 60)).to(tl.int64))


def test_pointer_from_int64_keeps_upper_bits():
    outs = [np.full(4, 123, dtype=np.int64) for _ in range(4)]
    plus, where, back, minus = outs
    launch(_ptr_roundtrip_kernel, (1,), ADDRS, plus, where, back, minus, N=4)
    np.testing.assert_array_equal(back, ADDRS)
    # + 1 on a pointer to int32 advances 4 bytes.
    np.testing.assert_array_equal(plus, np.array([-1, 2**47 + 4, 2**62 + 4, 11], dtype=np.int64))
    np.testing.assert_array_equal(where, np.array([-5, 2**62, 2**62, -5], dtype=np.int64))
    np.testing.assert_array_equal(minus, ADDRS)


@triton.jit
def _ptr_wrap_kernel(a_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    p = tl.load(a_ptr + offs).to(tl.pi32_t)
    # 64-bit address arithmetic wraps, as on the GPU.
    tl.store(out_ptr + offs, (p + 2).to(tl.int64))


def test_pointer_arithmetic_wraps_at_64_bits():
    a = np.array([2**63 - 4, -(2**63), -8, 2**47 - 8], dtype=np.int64)
    out = np.zeros(4, dtype=np.int64)
    launch(_ptr_wrap_kernel, (1,), a, out, N=4)
    want = np.array([-(2**63) + 4, -(2**63) + 8, 0, 2**47], dtype=np.int64)
    np.testing.assert_array_equal(out, want)


@triton.jit
def _ptr_from_address_kernel(addr_ptr, x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    p = tl.load(addr_ptr).to(tl.pi32_t)
    # Through a pointer 2^50 elements past x (beyond a 48-bit offset) and back, then a where.
    far = tl.where(offs >= 0, p + (1 << 50), p)
    q = far - (1 << 50) + offs
    tl.store(out_ptr + offs, tl.load(q) * 2)


def test_pointer_from_address_still_loads():
    x = np.arange(4, dtype=np.int32) + 10
    out = np.zeros(4, dtype=np.int32)
    # The kernel reads x's address from an int64 array and loads through it; x itself is passed
    # too, so the executor knows the extent the address falls in (and checks the access).
    launch(_ptr_from_address_kernel, (1,), np.array([x.ctypes.data], dtype=np.int64), x, out, N=4)
    np.testing.assert_array_equal(out, (np.arange(4) + 10) * 2)
