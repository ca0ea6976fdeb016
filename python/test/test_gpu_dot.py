"""GPU tests (marker gpu) of tl.dot on the tensor cores: the tutorial's matmul for every dtype and
precision, ragged shapes, several warps and block shapes, chained dots, dots in branches and nested
loops, transposed operands. Against torch on fresh random inputs, outputs poisoned with NaN (or an
integer sentinel) before each launch. The kernels are written exactly as for Triton."""

import zlib

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu

import _dot_kernels  # noqa: E402
import tritium as triton  # noqa: E402
import tritium.language as tl  # noqa: E402

DEV = "cuda"


@pytest.fixture(autouse=True)
def _seed(request):
    torch.manual_seed(zlib.crc32(request.node.nodeid.encode()))


def poisoned(shape, dtype):
    if dtype.is_floating_point:
        return torch.full(shape, float("nan"), dtype=dtype, device=DEV)
    return torch.full(shape, torch.iinfo(dtype).max - 5, dtype=dtype, device=DEV)


def rand(shape, dtype):
    if dtype in (torch.int8,):
        return torch.randint(-128, 128, shape, device=DEV, dtype=torch.int32).to(dtype)
    if dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
        return (torch.randn(shape, device=DEV) * 2).to(dtype)
    return torch.randn(shape, device=DEV).to(dtype)


def tf32(x):
    """x (fp32) rounded to tf32 as cvt.rna.tf32.f32 does: nearest, ties away from zero."""
    b = x.contiguous().view(torch.int32)
    b = (b + 0x1000) & ~0x1FFF
    return b.view(torch.float32)


def rel_err(out, ref):
    out64, ref64 = out.double(), ref.double()
    assert not torch.isnan(out64).any(), "output holds NaN (an unwritten element?)"
    return float((out64 - ref64).norm() / ref64.norm().clamp_min(1e-30))


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm,
                  stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  GROUP_M: tl.constexpr, PRECISION: tl.constexpr, OUT_F16_ACC: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    if OUT_F16_ACC:
        accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float16)
    elif a_ptr.dtype.element_ty == tl.int8:
        accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32)
    else:
        accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        if OUT_F16_ACC:
            accumulator = tl.dot(a, b, accumulator, out_dtype=tl.float16)
        else:
            accumulator = tl.dot(a, b, accumulator, input_precision=PRECISION)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c = accumulator.to(c_ptr.dtype.element_ty)
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


def run_matmul(a, b, out_dtype, BM=64, BN=64, BK=32, num_warps=4, precision="tf32", f16acc=False):
    M, K = a.shape
    _, N = b.shape
    c = poisoned((M, N), out_dtype)
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                        c.stride(1), BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, GROUP_M=8, PRECISION=precision,
                        OUT_F16_ACC=f16acc, num_warps=num_warps)
    return c


SHAPES = [(64, 64, 64), (128, 256, 96), (200, 136, 72), (33, 65, 80), (512, 512, 512)]
CONFIGS = [(64, 64, 32, 4), (128, 128, 32, 4), (128, 64, 64, 8), (32, 32, 16, 1), (16, 128, 16, 2)]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("M,N,K", SHAPES, ids=str)
@pytest.mark.parametrize("BM,BN,BK,warps", CONFIGS, ids=str)
def test_matmul_16bit(dtype, M, N, K, BM, BN, BK, warps):
    a, b = rand((M, K), dtype), rand((K, N), dtype)
    c = run_matmul(a, b, dtype, BM, BN, BK, warps)
    ref = a.float() @ b.float()
    assert rel_err(c.float(), ref) < 1e-2


@pytest.mark.parametrize("M,N,K", SHAPES[:4], ids=str)
def test_matmul_fp32_out(M, N, K):
    a, b = rand((M, K), torch.float16), rand((K, N), torch.float16)
    c = run_matmul(a, b, torch.float32)
    ref = a.double() @ b.double()
    assert rel_err(c, ref) < 1e-5


@pytest.mark.parametrize("M,N,K", SHAPES[:4], ids=str)
def test_matmul_fp16_accumulate(M, N, K):
    a, b = rand((M, K), torch.float16), rand((K, N), torch.float16)
    c = run_matmul(a, b, torch.float16, f16acc=True)
    ref = a.float() @ b.float()
    assert rel_err(c.float(), ref) < 2e-2


@pytest.mark.parametrize("precision", ["tf32", "tf32x3", "ieee"])
@pytest.mark.parametrize("M,N,K", SHAPES[:4], ids=str)
@pytest.mark.parametrize("BM,BN,BK,warps", [(64, 64, 32, 4), (32, 64, 16, 2)], ids=str)
def test_matmul_fp32(precision, M, N, K, BM, BN, BK, warps):
    a, b = rand((M, K), torch.float32), rand((K, N), torch.float32)
    c = run_matmul(a, b, torch.float32, BM, BN, BK, warps, precision=precision)
    exact = a.double() @ b.double()
    if precision == "tf32":
        # Products of tf32-rounded inputs, summed in fp32: close to that, far from exact fp32.
        ref = tf32(a).double() @ tf32(b).double()
        assert rel_err(c, ref) < 1e-5
        assert rel_err(c, exact) > 1e-5
    else:
        assert rel_err(c, exact) < 1e-5


def test_matmul_int8():
    M, N, K = 96, 80, 112
    a, b = rand((M, K), torch.int8), rand((K, N), torch.int8)
    c = run_matmul(a, b, torch.int32, 32, 32, 32, 4)
    ref = (a.cpu().long() @ b.cpu().long()).to(torch.int32).to(DEV)  # no integer matmul on CUDA
    assert torch.equal(c, ref)


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.float8_e5m2], ids=str)
def test_matmul_fp8(dtype):
    M, N, K = 128, 64, 96
    a, b = rand((M, K), dtype), rand((K, N), dtype)
    c = run_matmul(a, b, torch.float32, 64, 64, 32, 4)
    ref = a.double() @ b.double()
    # Products are exact; wgmma's fp8 accumulation keeps fewer bits than fp32
    # (what max_num_imprecise_acc is about), mma.sync's (fp16 path) keeps fp32.
    assert rel_err(c, ref) < 1e-3


@triton.jit
def chain_kernel(q_ptr, k_ptr, v_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr, D: tl.constexpr,
                 USE_IF: tl.constexpr, flag):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rd = tl.arange(0, D)
    q = tl.load(q_ptr + rm[:, None] * D + rd[None, :])
    kt = tl.load(k_ptr + rn[None, :] * D + rd[:, None])  # D x N: k transposed by the pointers
    v = tl.load(v_ptr + rn[:, None] * D + rd[None, :])
    s = tl.dot(q, kt)
    if USE_IF:
        if flag > 0:
            s = s * 0.5
    p = s.to(tl.float16)
    o = tl.dot(p, v)
    tl.store(o_ptr + rm[:, None] * D + rd[None, :], o)


@pytest.mark.parametrize("use_if", [False, True])
@pytest.mark.parametrize("M,N,D,warps", [(64, 64, 32, 4), (32, 128, 64, 4), (128, 64, 64, 8)], ids=str)
def test_chained_dots(M, N, D, warps, use_if):
    q = rand((M, D), torch.float16) * 0.25
    k = rand((N, D), torch.float16) * 0.25
    v = rand((N, D), torch.float16)
    o = poisoned((M, D), torch.float32)
    chain_kernel[(1,)](q, k, v, o, M=M, N=N, D=D, USE_IF=use_if, flag=1, num_warps=warps)
    s = q.float() @ k.float().T
    if use_if:
        s = s * 0.5
    ref = s.half().float() @ v.float()
    assert rel_err(o, ref) < 1e-2


@triton.jit
def nested_kernel(a_ptr, b_ptr, c_ptr, R, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                  BK: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, BK)
    total = tl.zeros((M, N), dtype=tl.float32)
    for r in range(R):
        acc = tl.zeros((M, N), dtype=tl.float32)
        for k in range(0, K, BK):
            a = tl.load(a_ptr + r * M * K + rm[:, None] * K + (k + rk)[None, :])
            b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
            acc += tl.dot(a, b)
        total += tl.where(acc > 0, acc, 0.0)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], total)


def test_nested_loops():
    R, M, N, K, BK = 3, 64, 32, 64, 16
    a = rand((R, M, K), torch.bfloat16)
    b = rand((K, N), torch.bfloat16)
    c = poisoned((M, N), torch.float32)
    nested_kernel[(1,)](a, b, c, R, M=M, N=N, K=K, BK=BK)
    ref = sum(torch.relu(a[r].float() @ b.float()) for r in range(R))
    assert rel_err(c, ref) < 1e-5


@triton.jit
def trans_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rn[:, None] * K + rk[None, :])  # N x K
    c = tl.dot(a, tl.trans(b))
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c)


def test_trans_operand():
    M, N, K = 64, 128, 32
    a, b = rand((M, K), torch.float16), rand((N, K), torch.float16)
    c = poisoned((M, N), torch.float32)
    trans_kernel[(1,)](a, b, c, M=M, N=N, K=K)
    assert rel_err(c, a.float() @ b.float().T) < 1e-5


@pytest.mark.parametrize("target", ["sm_90a", "sm_90"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("M,N,K,BM,BN,BK,warps,stages", [(300, 200, 136, 64, 64, 32, 4, 3),
                                                         (512, 512, 512, 128, 256, 64, 8, 3),
                                                         (130, 260, 200, 128, 128, 64, 4, 4)],
                         ids=str)
def test_matmul_transposed_operand_in_loop(monkeypatch, target, dtype, M, N, K, BM, BN, BK, warps,
                                           stages):
    monkeypatch.setenv("TRITIUM_TARGET", target)
    a, b = rand((M, K), dtype), rand((N, K), dtype)
    c = poisoned((M, N), dtype)
    _dot_kernels.matmul_bt_kernel[(triton.cdiv(M, BM), triton.cdiv(N, BN))](
        a, b, c, M, N, K, BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, num_warps=warps, num_stages=stages)
    assert rel_err(c.float(), a.float() @ b.float().T) < 1e-2


@pytest.mark.parametrize("target", ["sm_90a", "sm_90"])
@pytest.mark.parametrize("D,BN,BM,warps,stages", [(64, 64, 64, 4, 3), (128, 128, 64, 8, 2)],
                         ids=str)
def test_one_load_read_as_loaded_and_transposed(monkeypatch, target, D, BN, BM, warps, stages):
    monkeypatch.setenv("TRITIUM_TARGET", target)
    n_m = 1000
    k, q = rand((BN, D), torch.float16) / 4, rand((n_m, D), torch.float16) / 4
    dk = poisoned((BN, D), torch.float32)
    _dot_kernels.dk_like_kernel[(1,)](k, q, dk, n_m, BLOCK_N=BN, BLOCK_M=BM, D=D,
                                      num_warps=warps, num_stages=stages)
    ref = (k.float() @ q.float().T).half().float() @ q.float()
    assert rel_err(dk, ref) < 1e-2


def test_dot_matches_executor():
    """The same kernel on the GPU and on the CPU executor (numpy inputs) gives the same result."""
    np = pytest.importorskip("numpy")
    M, N, K = 64, 64, 64
    a, b = rand((M, K), torch.float16), rand((K, N), torch.float16)
    c = run_matmul(a, b, torch.float32)
    a_np, b_np = a.cpu().numpy(), b.cpu().numpy()
    c_np = np.full((M, N), np.nan, dtype=np.float32)
    matmul_kernel[(1,)](a_np, b_np, c_np, M, N, K, K, 1, N, 1, N, 1, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32,
                        GROUP_M=8, PRECISION="tf32", OUT_F16_ACC=False)
    assert rel_err(c.cpu(), torch.from_numpy(c_np)) < 1e-6


@pytest.mark.parametrize("ws", [False, True])
@pytest.mark.parametrize("M,N,K", [(512, 384, 256), (300, 200, 136)], ids=str)
def test_persistent_matmul(M, N, K, ws):
    a, b = rand((M, K), torch.float16), rand((K, N), torch.float16)
    c = poisoned((M, N), torch.float16)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    tiles = triton.cdiv(M, 128) * triton.cdiv(N, 64)
    _dot_kernels.persistent_matmul_kernel[(min(sms, tiles),)](
        a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        BLOCK_M=128, BLOCK_N=64, BLOCK_K=32, NUM_SMS=min(sms, tiles), WS=ws, num_warps=4, num_stages=3)
    assert rel_err(c.float(), a.float() @ b.float()) < 1e-2


BATCHED_KINDS = ["fp16", "fp16-acc16", "bf16", "fp32-ieee", "fp32-tf32", "fp32-tf32x3", "int8",
                 "fp8e4", "fp8e5"]


def run_batched(kind, NB, M, N, K, BB, BM, BN, BK, num_warps=4):
    """batched_kernel on fresh inputs of `kind`, its output poisoned; the output and torch's
    result (fp64, or int64 for int8)."""
    dt = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32,
          "int8": torch.int8, "fp8e4": torch.float8_e4m3fn,
          "fp8e5": torch.float8_e5m2}[kind.split("-")[0]]
    f16acc = kind == "fp16-acc16"
    a, b = rand((NB, M, K), dt), rand((NB, K, N), dt)
    out_dt = torch.int32 if dt == torch.int8 else torch.float16 if f16acc else torch.float32
    c = rand((NB, M, N), torch.float32).to(out_dt)
    out = poisoned((NB, M, N), out_dt)
    precision = kind.split("-")[1] if kind.startswith("fp32") else "ieee"
    grid = (triton.cdiv(NB, BB), triton.cdiv(M, BM), triton.cdiv(N, BN))
    _dot_kernels.batched_kernel[grid](a, b, c, out, NB, M, N, K, BB=BB, BM=BM, BN=BN, BK=BK,
                                      PRECISION=precision, HAS_ACC=True, F16_ACC=f16acc,
                                      num_warps=num_warps)
    if dt == torch.int8:
        want = torch.bmm(a.cpu().to(torch.int64), b.cpu().to(torch.int64)) + c.cpu().to(torch.int64)
    elif precision == "tf32":
        want = torch.bmm(tf32(a).double(), tf32(b).double()) + c.double()
    else:
        want = torch.bmm(a.double(), b.double()) + c.double()
    return out, want


def check_batched(kind, out, want, K):
    if kind == "int8":
        assert torch.equal(out.cpu().to(torch.int64), want)
    elif kind == "fp16-acc16":
        # fp16 sums (rounded per instruction), then + c in fp16.
        assert rel_err(out, want) < 2e-2
    else:
        assert rel_err(out, want) < 1e-5


@pytest.mark.parametrize("kind", BATCHED_KINDS)
@pytest.mark.parametrize("NB,M,N,K,BB,BM,BN,BK", [(2, 16, 16, 16, 2, 16, 16, 16),
                                                  (5, 40, 24, 70, 2, 32, 16, 32),
                                                  (3, 64, 64, 64, 1, 64, 64, 16)], ids=str)
def test_batched_dot(kind, NB, M, N, K, BB, BM, BN, BK):
    """Batched (rank-3) tl.dot against torch.bmm, ragged shapes included."""
    out, want = run_batched(kind, NB, M, N, K, BB, BM, BN, BK)
    check_batched(kind, out, want, K)


@pytest.mark.parametrize("kind", [k for k in BATCHED_KINDS if k != "fp32-ieee"])
@pytest.mark.parametrize("warps", [1, 4, 8])
@pytest.mark.parametrize("NB,M,N,K,BB,BM,BN,BK", [(2, 16, 16, 16, 2, 16, 16, 16),
                                                  (4, 64, 32, 32, 4, 64, 32, 32),
                                                  (2, 128, 64, 64, 2, 128, 64, 64),
                                                  (7, 100, 72, 200, 4, 64, 32, 64),
                                                  (9, 33, 17, 40, 8, 32, 16, 32)], ids=str)
def test_batched_dot_tensor_cores(kind, warps, NB, M, N, K, BB, BM, BN, BK):
    """Rank-3 dots on mma.sync (batched mma layouts: warps over the batch, then M and N), with
    1, 4 and 8 warps; whole tiles and ragged ones (masks on batch, M, N and K). Tiles whose
    operand buffers do not fit shared memory at num_stages=3 (fp32 2x128x64x64) are skipped:
    the compiler refuses them with the bytes they need, as for a 2-D dot."""
    eb = 4 if kind.startswith("fp32") else 1 if kind == "int8" or kind.startswith("fp8") else 2
    if (BB * BM * BK + BB * BK * BN) * eb * 3 > 200 * 1024:
        pytest.skip("operand buffers over shared memory at num_stages=3")
    out, want = run_batched(kind, NB, M, N, K, BB, BM, BN, BK, num_warps=warps)
    check_batched(kind, out, want, K)


@pytest.mark.parametrize("warps", [1, 4, 8])
@pytest.mark.parametrize("B,M,N,D", [(2, 32, 64, 32), (4, 16, 16, 16), (2, 64, 32, 64)], ids=str)
def test_batched_attention(B, M, N, D, warps):
    """Two chained rank-3 dots (softmax(q k^T) v over B heads) on the tensor cores, the row
    statistics between them reductions of a batched mma accumulator."""
    q, k, v = rand((B, M, D), torch.float16), rand((B, N, D), torch.float16), rand((B, N, D),
                                                                                  torch.float16)
    o = poisoned((B, M, D), torch.float32)
    _dot_kernels.batched_attention_kernel[(1,)](q, k, v, o, B=B, M=M, N=N, D=D, num_warps=warps)
    s = torch.bmm(q.double(), k.double().transpose(1, 2))
    p = torch.exp(s - s.amax(-1, keepdim=True))
    want = torch.bmm(p, v.double()) / p.sum(-1, keepdim=True)
    assert rel_err(o, want) < 5e-3  # p is rounded to fp16 before the second dot


@pytest.mark.parametrize("B,M,N,K", [(1, 1, 64, 64), (1, 64, 2, 64), (1, 2, 2, 16), (1, 64, 64, 4),
                                     (1, 16, 16, 8), (2, 8, 8, 32), (2, 32, 2, 32)], ids=str)
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32], ids=str)
def test_gpu_small_dot(dtype, B, M, N, K):
    # M, N or K below 16 (test_dot_small.py: the executor and ptxas): FMAs on the GPU.
    from test_dot_small import small_dot_kernel  # noqa: PLC0415

    shape = (lambda *s: s) if B == 1 else (lambda *s: (B, *s))
    a = torch.randn(shape(M, K), device="cuda", dtype=dtype)
    b = torch.randn(shape(K, N), device="cuda", dtype=dtype)
    c = poisoned(shape(M, N), torch.float32)
    small_dot_kernel[(1,)](a, b, c, B=B, M=M, N=N, K=K)
    ref = torch.matmul(a.double(), b.double())
    torch.testing.assert_close(c.double(), ref, rtol=1e-5, atol=1e-5 * K ** 0.5)


@pytest.mark.parametrize("case", range(11), ids=str)
@pytest.mark.parametrize("MNK", [(32, 32, 64), (64, 128, 128)], ids=str)
def test_gpu_dot_scaled(case, MNK):
    # tl.dot_scaled (test_dot_scaled.py: the executor and ptxas) on the GPU, against the numpy
    # reference that decodes each format from its bits.
    import numpy as np  # noqa: PLC0415
    from test_dot_scaled import (CASES, dot_scaled_kernel, operand_shapes, raw_operand,  # noqa: PLC0415
                                 reference)

    fa, fb, sa_on, sb_on, ka, kb = CASES[case]
    M, N, K = MNK
    rng = np.random.default_rng(case * 100 + M)
    comp = "fp16" if "fp16" in (fa, fb) else "bf16"
    a_shape, b_shape = operand_shapes(fa, fb, ka, kb, M, N, K)
    a = raw_operand(rng, a_shape, fa, comp)
    b = raw_operand(rng, b_shape, fb, comp)
    lo, hi = (124, 131) if comp == "fp16" else (117, 138)
    sa = rng.integers(lo, hi, (M, K // 32), dtype=np.uint8) if sa_on else None
    sb = rng.integers(lo, hi, (N, K // 32), dtype=np.uint8) if sb_on else None
    g = (lambda x: None if x is None else torch.from_numpy(x).to(DEV))
    c = poisoned((M, N), torch.float32)
    dot_scaled_kernel[(1,)](g(a), g(sa), g(b), g(sb), None, c, M=M, N=N, K=K, FA=fa, FB=fb,
                            A_ROWS=a_shape[0], A_COLS=a_shape[1], B_ROWS=b_shape[0],
                            B_COLS=b_shape[1], A_K_PACK=ka, B_K_PACK=kb, HAS_ACC=False, FAST=False)
    ref, mag = reference(a, sa, fa, ka, b, sb, fb, kb)
    np.testing.assert_allclose(c.cpu().numpy(), ref, rtol=0, atol=1e-5 * mag.max())
