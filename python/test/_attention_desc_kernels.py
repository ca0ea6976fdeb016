"""The attention forward with host tensor descriptors for Q, K, V and O: the form Triton's
fused-attention tutorial takes since its tensor-descriptor API (every block a TMA copy on sm_90a,
the output a TMA store), as a user writes it for both compilers. Shared by test_attention_cpu.py,
test_gpu_attention.py and benchmarks/bench_attention_tma.py (which swaps the import below for
Triton's).

The four tensors are viewed as (Z*H*N, D) matrices, one descriptor each; a program's blocks start
at row (z*H + h)*N. A block that ran past its head would read the next head's rows, so N must be
a multiple of BLOCK_M and BLOCK_N (attention_desc checks it)."""

import tritium as triton
import tritium.language as tl
from tritium.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def attn_fwd_desc(q_desc, k_desc, v_desc, o_desc, sm_scale, N_CTX,
                  HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  CAUSAL: tl.constexpr):
    start_m = tl.program_id(0)
    row0 = tl.program_id(1) * N_CTX
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    q = q_desc.load([row0 + start_m * BLOCK_M, 0])
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    if CAUSAL:
        hi = (start_m + 1) * BLOCK_M
    else:
        hi = N_CTX
    for start_n in range(0, hi, BLOCK_N):
        k = k_desc.load([row0 + start_n, 0])
        qk = tl.dot(q, k.T) * qk_scale
        if CAUSAL:
            qk = tl.where(offs_m[:, None] >= start_n + offs_n[None, :], qk, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = v_desc.load([row0 + start_n, 0])
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_ij
    acc = acc / l_i[:, None]
    o_desc.store([row0 + start_m * BLOCK_M, 0], acc.to(o_desc.dtype))


def descriptors(q, k, v, o, BLOCK_M, BLOCK_N):
    """The host descriptors of (Z, H, N, D) tensors viewed as (Z*H*N, D) matrices."""
    Z, H, N, D = q.shape
    if N % BLOCK_M or N % BLOCK_N:
        raise ValueError(f"attention_desc: N = {N} must be a multiple of BLOCK_M = {BLOCK_M} and "
                         f"BLOCK_N = {BLOCK_N} (a block past its head reads the next head's rows)")
    rows = Z * H * N

    def desc(t, block_rows):
        return TensorDescriptor(t.reshape(rows, D), [rows, D], [D, 1], [block_rows, D])
    return desc(q, BLOCK_M), desc(k, BLOCK_N), desc(v, BLOCK_N), desc(o, BLOCK_M)


def attention_desc(q, k, v, causal, sm_scale, BLOCK_M=128, BLOCK_N=64, num_warps=4,
                   num_stages=2):
    """Launches attn_fwd_desc on contiguous (Z, H, N, D) tensors (torch, CPU or CUDA); returns
    the output."""
    import torch  # noqa: PLC0415
    Z, H, N, D = q.shape
    o = torch.full_like(q, float("nan"))
    descs = descriptors(q.contiguous(), k.contiguous(), v.contiguous(), o, BLOCK_M, BLOCK_N)
    attn_fwd_desc[(N // BLOCK_M, Z * H)](*descs, sm_scale, N, HEAD_DIM=D, BLOCK_M=BLOCK_M,
                                         BLOCK_N=BLOCK_N, CAUSAL=causal, num_warps=num_warps,
                                         num_stages=num_stages)
    return o
