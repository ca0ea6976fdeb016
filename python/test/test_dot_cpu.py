"""CPU tests of tl.dot (fp32, fp16, bf16 and int8 inputs, with accumulators, transposed operands,
and the tutorial's blocked matmul with masked edges), against numpy.

`TRITIUM_TEST_AGAINST_TRITON=1|cuda` runs the same kernels under Triton's interpreter or on a GPU
under real Triton (see harness.py).
"""

import numpy as np
import pytest

from harness import triton, tl, torch, dtype_id, interpreter_gap, launch, needs_torch, poisoned, rand


# ----------------------------------------------------------------------------------------------
# tl.dot


@triton.jit
def _dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, BK: tl.constexpr,
                PRECISION: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, BK)
    acc = tl.zeros((M, N), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        if PRECISION == "default":
            acc += tl.dot(a, b)
        else:
            acc = tl.dot(a, b, acc, input_precision=PRECISION)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


DOT_SHAPES = [(16, 16, 16, 16), (32, 16, 32, 16), (16, 64, 32, 32), (64, 64, 32, 16), (32, 32, 64, 32)]


@pytest.mark.parametrize("M,N,K,BK", DOT_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", [np.float16, np.float32], ids=dtype_id)
def test_dot(dtype, M, N, K, BK):
    rng = np.random.default_rng(80)
    a = rand(rng, (M, K), dtype)
    b = rand(rng, (K, N), dtype)
    c = poisoned((M, N), np.float32)
    precision = "ieee" if dtype == np.float32 else "default"
    launch(_dot_kernel, (1,), a, b, c, M=M, N=N, K=K, BK=BK, PRECISION=precision)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-5 * np.sqrt(K))


def test_dot_fp32_default_precision():
    # fp32 inputs under the default input_precision ("tf32" on GPUs): at least tf32-accurate
    rng = np.random.default_rng(81)
    a = rand(rng, (32, 32), np.float32)
    b = rand(rng, (32, 32), np.float32)
    c = poisoned((32, 32), np.float32)
    launch(_dot_kernel, (1,), a, b, c, M=32, N=32, K=32, BK=32, PRECISION="default")
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, ref, rtol=1e-2, atol=2e-2)


@triton.jit
def _dot_acc_kernel(a_ptr, b_ptr, c_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    c = tl.load(c_ptr + rm[:, None] * N + rn[None, :])
    d = tl.dot(a, b, acc=c)
    tl.static_assert(d.dtype == tl.float32)
    # and fp16 output of an fp16 x fp16 product
    e = tl.dot(a, b, out_dtype=tl.float16)
    tl.static_assert(e.dtype == tl.float16)
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], d)
    tl.store(out_ptr + M * N + rm[:, None] * N + rn[None, :], e)


def test_dot_with_acc_and_out_dtype():
    rng = np.random.default_rng(82)
    M, N, K = 32, 16, 16
    a = rand(rng, (M, K), np.float16)
    b = rand(rng, (K, N), np.float16)
    c = rand(rng, (M, N), np.float32)
    out = poisoned(2 * M * N, np.float32)
    launch(_dot_acc_kernel, (1,), a, b, c, out, M=M, N=N, K=K)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(out[:M * N].reshape(M, N), ref + c, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out[M * N:].reshape(M, N), ref, rtol=2e-3, atol=5e-3)


@triton.jit
def _matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                   BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # the tutorial's blocked matmul, with masks on every edge
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        k_left = K - k * BK
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] < k_left) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK * stride_ak
        b_ptrs += BK * stride_bk
    c = acc.to(c_ptr.dtype.element_ty)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, c, mask=(rm[:, None] < M) & (rn[None, :] < N))


@pytest.mark.parametrize("M,N,K", [(16, 16, 16), (50, 40, 70), (64, 33, 17)], ids=str)
def test_blocked_matmul_fp16(M, N, K):
    rng = np.random.default_rng(83)
    a = rand(rng, (M, K), np.float16)
    b = rand(rng, (K, N), np.float16)
    c = poisoned((M, N), np.float16)
    launch(_matmul_kernel, (triton.cdiv(M, 32), triton.cdiv(N, 32)), a, b, c, M, N, K, K, 1, N, 1, N, 1,
           BM=32, BN=32, BK=16)
    ref = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float16)
    np.testing.assert_allclose(c.astype(np.float32), ref.astype(np.float32), rtol=2e-3, atol=2e-3)


# ----------------------------------------------------------------------------------------------
# more dot flavours

@triton.jit
def _dot_int8_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    c = tl.dot(a, b)
    tl.static_assert(c.dtype == tl.int32)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c)


def test_dot_int8():
    rng = np.random.default_rng(94)
    M, N, K = 32, 16, 64
    a = rand(rng, (M, K), np.int8)
    b = rand(rng, (K, N), np.int8)
    c = poisoned((M, N), np.int32)
    launch(_dot_int8_kernel, (1,), a, b, c, M=M, N=N, K=K)
    np.testing.assert_array_equal(c, a.astype(np.int32) @ b.astype(np.int32))


@triton.jit
def _dot_trans_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    # b is stored N x K; the kernel multiplies by its transpose
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    bt = tl.load(b_ptr + rn[:, None] * K + rk[None, :])
    c = tl.dot(a, tl.trans(bt), input_precision="ieee")
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c)


def test_dot_with_transposed_operand():
    rng = np.random.default_rng(95)
    M, N, K = 16, 32, 16
    a = rand(rng, (M, K), np.float32)
    b = rand(rng, (N, K), np.float32)
    c = poisoned((M, N), np.float32)
    launch(_dot_trans_kernel, (1,), a, b, c, M=M, N=N, K=K)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.T.astype(np.float64), rtol=1e-5, atol=1e-5)


@needs_torch
@interpreter_gap
def test_dot_bf16():
    g = torch.Generator().manual_seed(96)
    M, N, K = 32, 32, 32
    a = torch.randn(M, K, generator=g).to(torch.bfloat16)
    b = torch.randn(K, N, generator=g).to(torch.bfloat16)
    c = torch.full((M, N), float("nan"))
    launch(_dot_kernel, (1,), a, b, c, M=M, N=N, K=K, BK=16, PRECISION="default")
    ref = a.double() @ b.double()
    assert torch.allclose(c.double(), ref, rtol=1e-5, atol=1e-4), (c - ref).abs().max()


def test_persistent_matmul_on_the_executor():
    """The persistent kernel of test_gpu_dot.py (programs walk the tiles with tl.range(...,
    flatten=True, warp_specialize=True)) on the CPU executor."""
    import _dot_kernels as k  # noqa: PLC0415
    M, N, K = 80, 48, 40
    rng = np.random.default_rng(7)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.full((M, N), np.nan, dtype=np.float16)
    k.persistent_matmul_kernel[(3,)](a, b, c, M, N, K, K, 1, N, 1, N, 1, BLOCK_M=32, BLOCK_N=16,
                                     BLOCK_K=16, NUM_SMS=3, WS=True)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    assert np.allclose(c.astype(np.float32), ref, rtol=1e-2, atol=1e-2)
