"""Kernels with block pointers and tensor descriptors, shared by the CPU tests
(test_block_ptr_cpu.py: run on the executor, and compiled to PTX for sm_80 /
sm_90a and assembled with ptxas) and the GPU tests (test_gpu_block_ptr.py)."""

import tritium as triton
import tritium.language as tl


@triton.jit
def copy2d_kernel(x, y, M, N, sxm, sxn, sym, syn, BM: tl.constexpr, BN: tl.constexpr,
                  PAD: tl.constexpr, ORDER: tl.constexpr):
    """y = x + 1 over a 2-D grid of BMxBN blocks, bounds-checked on both dims."""
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    src = tl.make_block_ptr(x, (M, N), (sxm, sxn), (pm * BM, pn * BN), (BM, BN), ORDER)
    dst = tl.make_block_ptr(y, shape=(M, N), strides=(sym, syn), offsets=(pm * BM, pn * BN),
                            block_shape=(BM, BN), order=ORDER)
    v = tl.load(src, boundary_check=(0, 1), padding_option=PAD)
    tl.store(dst, v + 1, boundary_check=(1, 0))


@triton.jit
def padded_block_kernel(x, out, M, N, om, on, BM: tl.constexpr, BN: tl.constexpr,
                        PAD: tl.constexpr):
    """One BMxBN block of x at (om, on) (possibly out of bounds, negative
    offsets included), written whole to out (BMxBN): shows the padding."""
    src = tl.make_block_ptr(x, (M, N), (N, 1), (om, on), (BM, BN), (1, 0))
    v = tl.load(src, boundary_check=(0, 1), padding_option=PAD)
    offs = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    tl.store(out + offs, v)


@triton.jit
def copy3d_kernel(x, y, A, B, C, BA: tl.constexpr, BB: tl.constexpr, BC: tl.constexpr):
    pa = tl.program_id(0)
    pb = tl.program_id(1)
    pc = tl.program_id(2)
    offsets = (pa * BA, pb * BB, pc * BC)
    src = tl.make_block_ptr(x, (A, B, C), (B * C, C, 1), offsets, (BA, BB, BC), (2, 1, 0))
    dst = tl.make_block_ptr(y, (A, B, C), (B * C, C, 1), offsets, (BA, BB, BC), (2, 1, 0))
    v = tl.load(src, boundary_check=(0, 1, 2))
    tl.store(dst, v * 2, boundary_check=(0, 1, 2))


@triton.jit
def block_ptr_matmul_kernel(a, b, c, M, N, K, sam, sak, sbk, sbn, scm, scn,
                            BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """c = a @ b with block pointers advanced along K (the common pattern)."""
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    a_ptr = tl.make_block_ptr(a, (M, K), (sam, sak), (pm * BM, 0), (BM, BK), (1, 0))
    b_ptr = tl.make_block_ptr(b, (K, N), (sbk, sbn), (0, pn * BN), (BK, BN), (1, 0))
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(0, tl.cdiv(K, BK)):
        av = tl.load(a_ptr, boundary_check=(0, 1), padding_option="zero")
        bv = tl.load(b_ptr, boundary_check=(0, 1), padding_option="zero")
        acc = tl.dot(av, bv, acc)
        a_ptr = tl.advance(a_ptr, (0, BK))
        b_ptr = tl.advance(b_ptr, (BK, 0))
    c_ptr = tl.make_block_ptr(c, (M, N), (scm, scn), (pm * BM, pn * BN), (BM, BN), (1, 0))
    tl.store(c_ptr, acc.to(c.dtype.element_ty), boundary_check=(0, 1))


@triton.jit
def descriptor_matmul_kernel(a_desc, b_desc, c_desc, K, BM: tl.constexpr, BN: tl.constexpr,
                             BK: tl.constexpr):
    """c = a @ b through host TensorDescriptors."""
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        av = a_desc.load([pm * BM, k])
        bv = b_desc.load([k, pn * BN])
        acc = tl.dot(av, bv, acc)
    c_desc.store([pm * BM, pn * BN], acc.to(c_desc.dtype))


@triton.jit
def device_descriptor_kernel(x, y, M, N, BM: tl.constexpr, BN: tl.constexpr,
                             PAD: tl.constexpr):
    """y = 2 * x through descriptors made in the kernel."""
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    xd = tl.make_tensor_descriptor(x, shape=[M, N], strides=[N, 1], block_shape=[BM, BN],
                                   padding_option=PAD)
    yd = tl.make_tensor_descriptor(y, [M, N], [N, 1], [BM, BN])
    v = xd.load([pm * BM, pn * BN])
    yd.store([pm * BM, pn * BN], v * 2)


@triton.jit
def gather_scatter_kernel(x, y, idx_ptr, M, N, Y0, NROWS: tl.constexpr, BN: tl.constexpr):
    """desc.gather of rows idx[0..NROWS) at columns Y0..Y0+BN of x (out of bounds: 0), then
    desc.scatter of 2 * those rows into the same rows and columns of y (out of bounds: dropped)."""
    xd = tl.make_tensor_descriptor(x, [M, N], [N, 1], [1, BN])
    yd = tl.make_tensor_descriptor(y, [M, N], [N, 1], [1, BN])
    rows = tl.load(idx_ptr + tl.arange(0, NROWS))
    v = xd.gather(rows, Y0)
    yd.scatter(v * 2, rows, Y0)


@triton.jit
def desc_store_kernel(x, y, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """y = x + 1 (both [M, N], row stride N): masked pointer loads, the block written through an
    in-kernel descriptor (on sm_90a, with N divisible by 16, a TMA store through shared memory)."""
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    rows = pm * BM + tl.arange(0, BM)
    cols = pn * BN + tl.arange(0, BN)
    inside = (rows[:, None] < M) & (cols[None, :] < N)
    v = tl.load(x + rows[:, None] * N + cols[None, :], mask=inside, other=0)
    yd = tl.make_tensor_descriptor(y, [M, N], [N, 1], [BM, BN])
    yd.store([pm * BM, pn * BN], v + 1)


@triton.jit
def desc_store_readback_kernel(x, y, z, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """y = x + 1 through a descriptor, then z = y read back with pointer loads in the same
    program (the store must be complete for every thread, not only read out of shared memory)."""
    pm = tl.program_id(0)
    rows = pm * BM + tl.arange(0, BM)
    cols = tl.arange(0, BN)
    inside = (rows[:, None] < M) & (cols[None, :] < N)
    offs = rows[:, None] * N + cols[None, :]
    v = tl.load(x + offs, mask=inside, other=0)
    yd = tl.make_tensor_descriptor(y, [M, N], [N, 1], [BM, BN])
    yd.store([pm * BM, 0], v + 1)
    w = tl.load(y + offs, mask=inside, other=0)
    tl.store(z + offs, w, mask=inside)
