"""Fused attention kernels written exactly as a Triton user writes them (shared by the CPU test
test_attention_cpu.py, the GPU test test_gpu_attention.py and benchmarks/bench_attention.py).

attn_fwd is the FlashAttention-2 style forward a user writes first: one program per (query block,
batch*head), a loop over key/value blocks with two tl.dot, an online softmax in base 2, and an
optional causal mask through tl.where. Sequence lengths need not be multiples of the blocks.
With STORE_M, it also writes each row's log-sum-exp in base 2 of the scaled scores
(M[z*H + h, row] = max + log2(sum), in units of S * sm_scale * log2(e)), which the backward of
_attention_bwd_kernels.py reads to recompute P = exp2(S * sm_scale * log2(e) - M) without a second
softmax pass. M defaults to None and STORE_M to False, so existing callers compile the same kernel."""

import tritium as triton
import tritium.language as tl


@triton.jit
def attn_fwd(Q, K, V, Out, sm_scale, H, N_CTX,
             stride_qz, stride_qh, stride_qm, stride_kz, stride_kh, stride_kn,
             stride_vz, stride_vh, stride_vn, stride_oz, stride_oh, stride_om,
             HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
             CAUSAL: tl.constexpr, M=None, STORE_M: tl.constexpr = False):
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    off_z = off_hz // H
    off_h = off_hz % H
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q_ptrs = Q + off_z * stride_qz + off_h * stride_qh + offs_m[:, None] * stride_qm + offs_d[None, :]
    k_base = K + off_z * stride_kz + off_h * stride_kh
    v_base = V + off_z * stride_vz + off_h * stride_vh
    q = tl.load(q_ptrs, mask=offs_m[:, None] < N_CTX, other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    if CAUSAL:
        hi = tl.minimum((start_m + 1) * BLOCK_M, N_CTX)
    else:
        hi = N_CTX
    for start_n in range(0, hi, BLOCK_N):
        cols = start_n + offs_n
        k = tl.load(k_base + cols[None, :] * stride_kn + offs_d[:, None], mask=cols[None, :] < N_CTX,
                    other=0.0)
        qk = tl.dot(q, k) * qk_scale
        keep = cols[None, :] < N_CTX
        if CAUSAL:
            keep = keep & (offs_m[:, None] >= cols[None, :])
        qk = tl.where(keep, qk, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = tl.load(v_base + cols[:, None] * stride_vn + offs_d[None, :], mask=cols[:, None] < N_CTX,
                    other=0.0)
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_ij
    acc = acc / l_i[:, None]
    o_ptrs = Out + off_z * stride_oz + off_h * stride_oh + offs_m[:, None] * stride_om + offs_d[None, :]
    tl.store(o_ptrs, acc.to(Out.dtype.element_ty), mask=offs_m[:, None] < N_CTX)
    if STORE_M:
        tl.store(M + off_hz * N_CTX + offs_m, m_i + tl.math.log2(l_i), mask=offs_m < N_CTX)


def attention(q, k, v, causal, sm_scale, BLOCK_M=128, BLOCK_N=64, num_warps=4, num_stages=2,
              return_m=False):
    """Launches attn_fwd on (Z, H, N, D) tensors (torch, CPU or CUDA); returns the output, or
    (output, M) with return_m (M: (Z*H, N) fp32, the rows' log-sum-exp in base 2)."""
    import torch  # noqa: PLC0415
    Z, H, N, D = q.shape
    o = torch.full_like(q, float("nan"))
    m = torch.full((Z * H, N), float("nan"), device=q.device, dtype=torch.float32) if return_m \
        else None
    grid = (triton.cdiv(N, BLOCK_M), Z * H)
    attn_fwd[grid](q, k, v, o, sm_scale, H, N,
                   q.stride(0), q.stride(1), q.stride(2), k.stride(0), k.stride(1), k.stride(2),
                   v.stride(0), v.stride(1), v.stride(2), o.stride(0), o.stride(1), o.stride(2),
                   HEAD_DIM=D, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, CAUSAL=causal, M=m,
                   STORE_M=return_m, num_warps=num_warps, num_stages=num_stages)
    return (o, m) if return_m else o


def reference(q, k, v, causal, sm_scale):
    """fp32 attention in torch (the check's reference)."""
    import torch  # noqa: PLC0415
    s = (q.float() @ k.float().transpose(-1, -2)) * sm_scale
    if causal:
        n = q.shape[2]
        s = s.masked_fill(torch.triu(torch.ones(n, n, dtype=torch.bool, device=q.device), 1),
                          float("-inf"))
    return torch.softmax(s, -1) @ v.float()
