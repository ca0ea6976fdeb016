"""Kernels of test_shape_ops_cpu.py and test_gpu_shape_ops.py, written as for Triton."""

import tritium as triton
import tritium.language as tl


@triton.jit
def join_split_kernel(a_ptr, b_ptr, j_ptr, i_ptr, sa_ptr, sb_ptr, M: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    j = tl.join(a, b)
    jo = offs[:, :, None] * 2 + tl.arange(0, 2)[None, None, :]
    tl.store(j_ptr + jo, j)
    io = tl.arange(0, M)[:, None] * (2 * N) + tl.arange(0, 2 * N)[None, :]
    tl.store(i_ptr + io, tl.interleave(a, b))
    x, y = tl.split(j)
    tl.store(sa_ptr + offs, x)
    tl.store(sb_ptr + offs, y)


@triton.jit
def scalar_join_kernel(out_ptr):
    j = tl.join(3.0, 5.0)
    x, y = tl.split(j)
    offs = tl.arange(0, 2)
    tl.store(out_ptr + offs, j)
    tl.store(out_ptr + 2, y)
    tl.store(out_ptr + 3, x)


@triton.jit
def cat_kernel(a_ptr, b_ptr, out_ptr, N: tl.constexpr, C: tl.constexpr, RANK: tl.constexpr):
    if RANK == 1:
        offs = tl.arange(0, N)
        r = tl.cat(tl.load(a_ptr + offs), tl.load(b_ptr + offs), can_reorder=True)
        tl.store(out_ptr + tl.arange(0, 2 * N), r)
    else:
        offs = tl.arange(0, N)[:, None] * C + tl.arange(0, C)[None, :]
        r = tl.cat(tl.load(a_ptr + offs), tl.load(b_ptr + offs), can_reorder=True)
        tl.store(out_ptr + tl.arange(0, 2 * N)[:, None] * C + tl.arange(0, C)[None, :], r)


@triton.jit
def histogram_kernel(x_ptr, m_ptr, out_ptr, N: tl.constexpr, BINS: tl.constexpr,
                     MASKED: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    if MASKED:
        h = tl.histogram(x, BINS, mask=tl.load(m_ptr + offs) != 0)
    else:
        h = tl.histogram(x, BINS)
    tl.store(out_ptr + tl.arange(0, BINS), h)


@triton.jit
def item_kernel(x_ptr, out_ptr):
    v = tl.load(x_ptr + tl.arange(0, 1)).item()
    tl.store(out_ptr + tl.arange(0, 4), tl.full([4], v, tl.float32))


@triton.jit
def bad_split_kernel(out_ptr):
    tl.split(tl.arange(0, 4))


@triton.jit
def bad_join_kernel(out_ptr):
    tl.join(tl.arange(0, 4), tl.arange(0, 4).to(tl.float32))


@triton.jit
def bad_item_kernel(out_ptr):
    tl.arange(0, 4).item()


@triton.jit
def gather_kernel(src_ptr, idx_ptr, out_ptr, S: tl.constexpr, I: tl.constexpr, C: tl.constexpr,
                  AXIS: tl.constexpr):
    if AXIS == 0:
        src = tl.load(src_ptr + tl.arange(0, S)[:, None] * C + tl.arange(0, C)[None, :])
        io = tl.arange(0, I)[:, None] * C + tl.arange(0, C)[None, :]
    else:
        src = tl.load(src_ptr + tl.arange(0, C)[:, None] * S + tl.arange(0, S)[None, :])
        io = tl.arange(0, C)[:, None] * I + tl.arange(0, I)[None, :]
    tl.store(out_ptr + io, tl.gather(src, tl.load(idx_ptr + io), AXIS))


@triton.jit
def topk_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                DESCENDING: tl.constexpr = True):
    x = tl.load(x_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    tl.store(out_ptr + tl.arange(0, M)[:, None] * K + tl.arange(0, K)[None, :],
             tl.topk(x, K, descending=DESCENDING))
