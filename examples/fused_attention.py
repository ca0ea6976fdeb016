"""Fused attention, forward pass (FlashAttention-2 style): one program per block of queries and
(batch, head); a loop over blocks of keys and values with two tl.dot, an online softmax in base 2
(the running row maximum m and row sum l rescale the accumulator as new blocks arrive) and an
optional causal mask through tl.where. Sequence lengths need not be multiples of the blocks.
Written exactly as for Triton (swap the imports for triton's and it runs there unchanged); on the
H200 benchmarks/bench_attention.py times the same kernel beside Triton and torch's SDPA.

Run: python3 examples/fused_attention.py
"""

import os
import sys

import numpy as np

from _bench import benchmark, gpu_available, nan_like, strides, triton_twin

import tritium as triton
import tritium.language as tl


@triton.jit
def attn_fwd(Q, K, V, Out, sm_scale, N_CTX, stride_h, stride_m,
             HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
             CAUSAL: tl.constexpr):
    start_m = tl.program_id(0)
    head = tl.program_id(1)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    base = head * stride_h
    q = tl.load(Q + base + offs_m[:, None] * stride_m + offs_d[None, :],
                mask=offs_m[:, None] < N_CTX, other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504  # exp(x) = exp2(x * log2(e))
    hi = tl.minimum((start_m + 1) * BLOCK_M, N_CTX) if CAUSAL else N_CTX
    for start_n in range(0, hi, BLOCK_N):
        cols = start_n + offs_n
        k = tl.load(K + base + cols[None, :] * stride_m + offs_d[:, None],
                    mask=cols[None, :] < N_CTX, other=0.0)
        qk = tl.dot(q, k) * qk_scale
        keep = cols[None, :] < N_CTX
        if CAUSAL:
            keep = keep & (offs_m[:, None] >= cols[None, :])
        qk = tl.where(keep, qk, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + base + cols[:, None] * stride_m + offs_d[None, :],
                    mask=cols[:, None] < N_CTX, other=0.0)
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
        m_i = m_ij
    out = acc / l_i[:, None]
    tl.store(Out + base + offs_m[:, None] * stride_m + offs_d[None, :], out.to(Out.dtype.element_ty),
             mask=offs_m[:, None] < N_CTX)


def attention(q, k, v, causal, block_m=32, block_n=16, num_warps=4, num_stages=2):
    """q, k, v: (heads, n, d) float16 arrays or tensors, contiguous, of the same strides."""
    heads, n, d = q.shape
    assert strides(q) == strides(k) == strides(v) and strides(q)[2] == 1
    out = nan_like(q)
    grid = (triton.cdiv(n, block_m), heads)
    attn_fwd[grid](q, k, v, out, d ** -0.5, n, strides(q)[0], strides(q)[1], HEAD_DIM=d,
                   BLOCK_M=block_m, BLOCK_N=block_n, CAUSAL=causal, num_warps=num_warps,
                   num_stages=num_stages)
    return out


def reference(q, k, v, causal):
    s = q.astype(np.float64) @ k.astype(np.float64).transpose(0, 2, 1) * q.shape[-1] ** -0.5
    if causal:
        n = q.shape[1]
        s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v.astype(np.float64)


def main(seed=0):
    rng = np.random.default_rng(seed)
    ok = True
    for heads, n, d, causal in [(2, 64, 16, False), (2, 100, 32, True), (1, 33, 64, False)]:
        q, k, v = (rng.standard_normal((heads, n, d)).astype(np.float16) for _ in range(3))
        out = attention(q, k, v, causal)
        err = float(np.max(np.abs(out.astype(np.float64) - reference(q, k, v, causal))))
        passed = err <= 5e-3 and not np.isnan(out).any()
        ok &= passed
        print(f"attention     heads={heads} n={n:<4d} d={d:<3d} causal={causal!s:<5} "
              f"max_err={err:.3e}  {'PASS' if passed else 'FAIL'}")
    if ok and gpu_available():
        ok &= gpu_benchmark()
    return ok


def gpu_benchmark():
    """32 heads of d=64 in fp16, causal: checked against torch's scaled_dot_product_attention,
    then timed beside it."""
    import torch
    twin = triton_twin(os.path.abspath(__file__))
    cfg = dict(block_m=128, block_n=64, num_warps=8, num_stages=2)
    sizes = [512, 1024, 2048, 4096]
    inputs = {str(n): [torch.randn(32, n, 64, device="cuda", dtype=torch.float16) for _ in range(3)]
              for n in sizes}
    sdpa = torch.nn.functional.scaled_dot_product_attention
    ok = True
    for label, (q, k, v) in inputs.items():
        err = float((attention(q, k, v, True, **cfg).float() - sdpa(q, k, v, is_causal=True).float())
                    .abs().max())
        passed = err <= 1e-2
        ok &= passed
        print(f"attention     GPU heads=32 n={label:<5} d=64 causal max_abs_err={err:.3e}  "
              f"{'PASS' if passed else 'FAIL'}")
    impls = {"tritium": lambda label: (lambda: attention(*inputs[label], True, **cfg)),
             "torch": lambda label: (lambda: sdpa(*inputs[label], is_causal=True))}
    if twin is not None:
        impls["triton"] = lambda label: (lambda: twin.attention(*inputs[label], True, **cfg))
    # causal: half of the 4 * n^2 * d multiply-adds per head
    benchmark("fused_attention", [(str(n), n) for n in sizes], impls,
              lambda label, ms: 32 * 2 * int(label) ** 2 * 64 / ms / 1e9, "TFLOP/s",
              "sequence length (32 heads, d=64, causal)")
    return ok


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
