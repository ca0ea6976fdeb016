"""The backward of the fused attention of _attention_kernels.py, written as a Triton user writes it
(shared by test_attention_bwd_cpu.py, test_gpu_attention_bwd.py and
benchmarks/bench_attention_bwd.py, which reads this file's source for both compilers).

With S = Q Kᵀ, c = sm_scale * log2(e) and the forward's row log-sum-exp in base 2, M (attn_fwd with
STORE_M), the probabilities are recomputed as P = exp2(S c - M), and with Delta = rowsum(O ∘ dO):

    dV = Pᵀ dO,   dP = dO Vᵀ,   dS = P ∘ (dP - Delta),   dK = dSᵀ Q · sm_scale,   dQ = dS K · sm_scale

Three kernels, no atomics (the FlashAttention-2 split):
  attn_bwd_preprocess  Delta, one program per (query block, batch*head).
  attn_bwd_dkdv        one program per (key block, batch*head) holds K and V and loops over the query
                       blocks, computing the transposed tiles Sᵀ = K Qᵀ, Pᵀ, dPᵀ = V dOᵀ, dSᵀ
                       directly, so that Pᵀ and dSᵀ are the A operands of dV += Pᵀ dO and
                       dK += dSᵀ Q without transposing a computed tile.
  attn_bwd_dq          one program per (query block, batch*head) holds Q, dO, M, Delta and loops
                       over the key/value blocks; Vᵀ is loaded transposed, K twice, as K
                       (dQ += dS K) and as Kᵀ (S = Q Kᵀ).
TRANSPOSE_LOADED=True is the form of Triton's tutorial: Qᵀ and dO (dK/dV), Kᵀ (dQ) loaded once each
and tl.trans'd where the other orientation is read.
Causal kernels visit only the blocks a query row can see and mask only the blocks that straddle the
diagonal; the ragged end (N not a multiple of the blocks) is masked by the loads (a query row past
N gets M = +inf, hence P = 0) and, in the dQ kernel, by a key mask on the last block only.
Q, K, V, dO, dQ, dK, dV share one set of strides (the host makes them contiguous); M and Delta are
(Z*H, N) fp32."""

import tritium as triton
import tritium.language as tl


@triton.jit
def attn_bwd_preprocess(O, DO, Delta, H, N_CTX, stride_z, stride_h, stride_n,
                        HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr):
    off_hz = tl.program_id(1)
    base = (off_hz // H) * stride_z + (off_hz % H) * stride_h
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs = base + rows[:, None] * stride_n + tl.arange(0, HEAD_DIM)[None, :]
    inside = rows[:, None] < N_CTX
    o = tl.load(O + offs, mask=inside, other=0.0).to(tl.float32)
    do = tl.load(DO + offs, mask=inside, other=0.0).to(tl.float32)
    tl.store(Delta + off_hz * N_CTX + rows, tl.sum(o * do, 1), mask=rows < N_CTX)


@triton.jit
def _dkdv_query_block(dk, dv, k, v, Q, DO, M, Delta, base, row_base, start_m, offs_n, N_CTX,
                      stride_n, qk_scale, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                      DIAGONAL: tl.constexpr, TRANSPOSE_LOADED: tl.constexpr):
    """dK, dV of one key block after the query rows start_m .. start_m + BLOCK_M."""
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    offs = base + offs_m[:, None] * stride_n + offs_d[None, :]
    offs_t = base + offs_m[None, :] * stride_n + offs_d[:, None]
    qt = tl.load(Q + offs_t, mask=offs_m[None, :] < N_CTX, other=0.0)
    do = tl.load(DO + offs, mask=offs_m[:, None] < N_CTX, other=0.0)
    if TRANSPOSE_LOADED:
        # As Triton's tutorial writes it: Q^T and dO loaded once each, the other orientation a
        # tl.trans of the loaded tile (one shared buffer, read both ways).
        q = tl.trans(qt)
        dot_ = tl.trans(do)
    else:
        # Q and dO read twice, as rows and as their transposes (each load one dot operand).
        q = tl.load(Q + offs, mask=offs_m[:, None] < N_CTX, other=0.0)
        dot_ = tl.load(DO + offs_t, mask=offs_m[None, :] < N_CTX, other=0.0)
    # A row past N_CTX gets M = +inf: its column of P^T is exp2(-inf) = 0.
    m = tl.load(M + row_base + offs_m, mask=offs_m < N_CTX, other=float("inf"))
    delta = tl.load(Delta + row_base + offs_m, mask=offs_m < N_CTX, other=0.0)
    pt = tl.math.exp2(tl.dot(k, qt) * qk_scale - m[None, :])
    if DIAGONAL:
        pt = tl.where(offs_m[None, :] >= offs_n[:, None], pt, 0.0)
    dv = tl.dot(pt.to(do.dtype), do, dv)
    dpt = tl.dot(v, dot_)
    dst = pt * (dpt - delta[None, :])
    dk = tl.dot(dst.to(q.dtype), q, dk)
    return dk, dv


@triton.jit
def attn_bwd_dkdv(Q, K, V, DO, DK, DV, M, Delta, sm_scale, H, N_CTX, stride_z, stride_h, stride_n,
                  HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  CAUSAL: tl.constexpr, TRANSPOSE_LOADED: tl.constexpr = False):
    start_n = tl.program_id(0) * BLOCK_N
    off_hz = tl.program_id(1)
    base = (off_hz // H) * stride_z + (off_hz % H) * stride_h
    row_base = off_hz * N_CTX
    offs_n = start_n + tl.arange(0, BLOCK_N)
    offs = base + offs_n[:, None] * stride_n + tl.arange(0, HEAD_DIM)[None, :]
    k = tl.load(K + offs, mask=offs_n[:, None] < N_CTX, other=0.0)
    v = tl.load(V + offs, mask=offs_n[:, None] < N_CTX, other=0.0)
    dk = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)
    dv = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    lo = 0
    if CAUSAL:
        # Query blocks that straddle this key block's diagonal, masked; those below it are not.
        lo = (start_n // BLOCK_M) * BLOCK_M
        past_diagonal = tl.minimum((start_n + BLOCK_N + BLOCK_M - 1) // BLOCK_M * BLOCK_M, N_CTX)
        for start_m in range(lo, past_diagonal, BLOCK_M):
            dk, dv = _dkdv_query_block(dk, dv, k, v, Q, DO, M, Delta, base, row_base, start_m,
                                       offs_n, N_CTX, stride_n, qk_scale, HEAD_DIM, BLOCK_M, True,
                                       TRANSPOSE_LOADED)
        lo = past_diagonal
    for start_m in range(lo, N_CTX, BLOCK_M):
        dk, dv = _dkdv_query_block(dk, dv, k, v, Q, DO, M, Delta, base, row_base, start_m, offs_n,
                                   N_CTX, stride_n, qk_scale, HEAD_DIM, BLOCK_M, False,
                                   TRANSPOSE_LOADED)
    tl.store(DK + offs, (dk * sm_scale).to(DK.dtype.element_ty), mask=offs_n[:, None] < N_CTX)
    tl.store(DV + offs, dv.to(DV.dtype.element_ty), mask=offs_n[:, None] < N_CTX)


@triton.jit
def _dq_key_block(dq, q, do, m, delta, K, V, base, start_n, offs_m, N_CTX, stride_n, qk_scale,
                  HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr, MASK: tl.constexpr,
                  CAUSAL: tl.constexpr, TRANSPOSE_LOADED: tl.constexpr):
    """dQ of one query block after the keys start_n .. start_n + BLOCK_N."""
    offs_n = start_n + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    offs_t = base + offs_n[None, :] * stride_n + offs_d[:, None]
    kt = tl.load(K + offs_t, mask=offs_n[None, :] < N_CTX, other=0.0)
    if TRANSPOSE_LOADED:
        k = tl.trans(kt)  # the tutorial's form: K^T loaded once, read both ways
    else:
        k = tl.load(K + base + offs_n[:, None] * stride_n + offs_d[None, :],
                    mask=offs_n[:, None] < N_CTX, other=0.0)
    vt = tl.load(V + offs_t, mask=offs_n[None, :] < N_CTX, other=0.0)
    p = tl.math.exp2(tl.dot(q, kt) * qk_scale - m[:, None])
    if MASK:
        keep = offs_n[None, :] < N_CTX
        if CAUSAL:
            keep = keep & (offs_m[:, None] >= offs_n[None, :])
        p = tl.where(keep, p, 0.0)
    ds = p * (tl.dot(do, vt) - delta[:, None])
    return tl.dot(ds.to(k.dtype), k, dq)


@triton.jit
def attn_bwd_dq(Q, K, V, DO, DQ, M, Delta, sm_scale, H, N_CTX, stride_z, stride_h, stride_n,
                HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                CAUSAL: tl.constexpr, TRANSPOSE_LOADED: tl.constexpr = False):
    start_m = tl.program_id(0) * BLOCK_M
    off_hz = tl.program_id(1)
    base = (off_hz // H) * stride_z + (off_hz % H) * stride_h
    row_base = off_hz * N_CTX
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs = base + offs_m[:, None] * stride_n + tl.arange(0, HEAD_DIM)[None, :]
    q = tl.load(Q + offs, mask=offs_m[:, None] < N_CTX, other=0.0)
    do = tl.load(DO + offs, mask=offs_m[:, None] < N_CTX, other=0.0)
    m = tl.load(M + row_base + offs_m, mask=offs_m < N_CTX, other=0.0)
    delta = tl.load(Delta + row_base + offs_m, mask=offs_m < N_CTX, other=0.0)
    dq = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    if CAUSAL:
        # Key blocks wholly left of the diagonal, unmasked; those that straddle it, masked.
        diagonal = (start_m // BLOCK_N) * BLOCK_N
        hi = tl.minimum(start_m + BLOCK_M, N_CTX)
    else:
        # Full key blocks unmasked; the ragged last one masked.
        diagonal = (N_CTX // BLOCK_N) * BLOCK_N
        hi = N_CTX
    for start_n in range(0, diagonal, BLOCK_N):
        dq = _dq_key_block(dq, q, do, m, delta, K, V, base, start_n, offs_m, N_CTX, stride_n,
                           qk_scale, HEAD_DIM, BLOCK_N, False, CAUSAL, TRANSPOSE_LOADED)
    for start_n in range(diagonal, hi, BLOCK_N):
        dq = _dq_key_block(dq, q, do, m, delta, K, V, base, start_n, offs_m, N_CTX, stride_n,
                           qk_scale, HEAD_DIM, BLOCK_N, True, CAUSAL, TRANSPOSE_LOADED)
    tl.store(DQ + offs, (dq * sm_scale).to(DQ.dtype.element_ty), mask=offs_m[:, None] < N_CTX)


# (BLOCK_M1, BLOCK_N1, BLOCK_M2, BLOCK_N2, num_warps, num_stages): the dK/dV kernel's query and key
# blocks, the dQ kernel's query and key blocks, and the launch options of both.
# For sm_90a (ptxas, fp16, the eighteenth session's compiler): no kernel spills at these configs
# (head dim 64: dK/dV 187-195 registers, dQ 134-150; 128: dK/dV 173-184, dQ 156-157).
DEFAULT_CONFIG = (64, 128, 128, 64, 8, 2)
CONFIG_D128 = (64, 64, 128, 32, 8, 2)
PRE_BLOCK = 64


def attention_backward(q, k, v, o, do, m, causal, sm_scale, config=DEFAULT_CONFIG, kernels=None,
                       poison=True, transpose_loaded=False):
    """dQ, dK, dV of attention(q, k, v) on (Z, H, N, D) tensors (torch, CPU or CUDA) given its output
    o, the output's gradient do and the forward's M ((Z*H, N) fp32, base-2 log-sum-exp). The results
    start as NaN (unless poison=False, as a timed run wants), so an element no kernel writes shows.
    kernels: the three kernels (preprocess,
    dkdv, dq) to launch, e.g. this file's source compiled by another compiler; default this
    module's. transpose_loaded: the tutorial's loads (each of Q^T, dO, K^T loaded once and
    transposed in the kernel where the other orientation is read) instead of loading both."""
    import torch  # noqa: PLC0415
    pre, dkdv, dqk = kernels or (attn_bwd_preprocess, attn_bwd_dkdv, attn_bwd_dq)
    bm1, bn1, bm2, bn2, warps, stages = config
    q, k, v, o, do = (t.contiguous() for t in (q, k, v, o, do))
    Z, H, N, D = q.shape
    if poison:
        dq, dk, dv = (torch.full_like(q, float("nan")) for _ in range(3))
        delta = torch.full((Z * H, N), float("nan"), device=q.device, dtype=torch.float32)
    else:
        dq, dk, dv = (torch.empty_like(q) for _ in range(3))
        delta = torch.empty((Z * H, N), device=q.device, dtype=torch.float32)
    pre[(triton.cdiv(N, PRE_BLOCK), Z * H)](o, do, delta, H, N, *q.stride()[:3], HEAD_DIM=D,
                                            BLOCK_M=PRE_BLOCK)
    dkdv[(triton.cdiv(N, bn1), Z * H)](q, k, v, do, dk, dv, m, delta, sm_scale, H, N,
                                       *q.stride()[:3], HEAD_DIM=D, BLOCK_M=bm1, BLOCK_N=bn1,
                                       CAUSAL=causal, TRANSPOSE_LOADED=transpose_loaded,
                                       num_warps=warps, num_stages=stages)
    dqk[(triton.cdiv(N, bm2), Z * H)](q, k, v, do, dq, m, delta, sm_scale, H, N, *q.stride()[:3],
                                      HEAD_DIM=D, BLOCK_M=bm2, BLOCK_N=bn2, CAUSAL=causal,
                                      TRANSPOSE_LOADED=transpose_loaded, num_warps=warps,
                                      num_stages=stages)
    return dq, dk, dv


def _autograd_function():
    import torch  # noqa: PLC0415

    import _attention_kernels as fwd  # noqa: PLC0415

    class Attention(torch.autograd.Function):
        """attention(q, k, v, causal, sm_scale) with this file's backward."""

        @staticmethod
        def forward(ctx, q, k, v, causal, sm_scale, fwd_config=(128, 64, 4, 2),
                    bwd_config=DEFAULT_CONFIG):
            bm, bn, warps, stages = fwd_config
            o, m = fwd.attention(q, k, v, causal, sm_scale, BLOCK_M=bm, BLOCK_N=bn,
                                 num_warps=warps, num_stages=stages, return_m=True)
            ctx.save_for_backward(q, k, v, o, m)
            ctx.causal, ctx.sm_scale, ctx.bwd_config = causal, sm_scale, bwd_config
            return o

        @staticmethod
        def backward(ctx, do):
            q, k, v, o, m = ctx.saved_tensors
            dq, dk, dv = attention_backward(q, k, v, o, do, m, ctx.causal, ctx.sm_scale,
                                            ctx.bwd_config)
            return dq, dk, dv, None, None, None, None

    return Attention


def attention(q, k, v, causal, sm_scale, fwd_config=(128, 64, 4, 2), bwd_config=DEFAULT_CONFIG):
    """The fused attention forward with this file's backward, as a differentiable torch function."""
    global _Attention
    if _Attention is None:
        _Attention = _autograd_function()
    return _Attention.apply(q, k, v, causal, sm_scale, fwd_config, bwd_config)


_Attention = None
