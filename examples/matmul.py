"""Matrix multiplication on tensor cores: the blocked matmul every Triton user starts from.

Each program computes one BLOCK_M x BLOCK_N tile of C = A @ B, walking K in BLOCK_K steps with
`tl.dot`; programs are ordered in groups of GROUP_M rows of tiles so that neighbouring programs
share tiles of A and B in the L2 cache. On an NVIDIA GPU tritium compiles the loop to wgmma
(sm_90a) or mma.sync (sm_80/sm_90) fed by cp.async copies, `num_stages` deep; here, without a GPU,
the CPU executor runs it with the same rounding (fp16 products exact, fp32 accumulation). Written
exactly as for Triton: swap the imports for `import triton` / `import triton.language as tl`.

Run: python3 examples/matmul.py
"""

import os
import sys

import numpy as np

from _bench import benchmark, gpu_available, nan_like, strides, triton_twin

import tritium as triton
import tritium.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    # which tile of C this program computes (grouped order)
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    # rows of A and columns of B this tile needs (wrapped: the store below masks the edges)
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        # the last K step is ragged: masked-off elements read as 0
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c = accumulator.to(tl.float16)
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    tl.store(c_ptrs, c, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


def matmul(a, b, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32, num_warps=4, num_stages=2):
    M, K = a.shape
    K2, N = b.shape
    assert K == K2 and a.dtype == b.dtype
    c = nan_like(a, (M, N))  # poisoned: an unwritten element shows as NaN
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    matmul_kernel[grid](a, b, c, M, N, K, *strides(a), *strides(b), *strides(c),
                        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=4,
                        num_warps=num_warps, num_stages=num_stages)
    return c


def main(seed=0):
    rng = np.random.default_rng(seed)
    ok = True
    for M, N, K in [(64, 64, 64), (96, 80, 72), (33, 17, 100)]:
        a = rng.standard_normal((M, K)).astype(np.float16)
        b = rng.standard_normal((K, N)).astype(np.float16)
        c = matmul(a, b)
        ref = a.astype(np.float32) @ b.astype(np.float32)
        err = float(np.max(np.abs(c.astype(np.float32) - ref)))  # NaN if an element was missed
        passed = err <= 2e-2 * max(1.0, float(np.max(np.abs(ref))))
        ok &= passed
        print(f"matmul        M={M:<4d} N={N:<4d} K={K:<4d} max_abs_err={err:.3e}  "
              f"{'PASS' if passed else 'FAIL'}")
    if ok and gpu_available():
        ok &= gpu_benchmark()
    return ok


def gpu_benchmark():
    """Square fp16 products: checked against torch.matmul, then timed beside it."""
    import torch
    twin = triton_twin(os.path.abspath(__file__))
    cfg = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, num_warps=8, num_stages=3)
    sizes = [512, 1024, 2048, 4096]
    inputs = {str(n): (torch.randn(n, n, device="cuda", dtype=torch.float16),
                       torch.randn(n, n, device="cuda", dtype=torch.float16)) for n in sizes}
    ok = True
    for label, (a, b) in inputs.items():
        ref = a.float() @ b.float()
        err = float((matmul(a, b, **cfg).float() - ref).abs().max() / ref.abs().max())
        passed = err <= 1e-2
        ok &= passed
        print(f"matmul        GPU n={label:<5} max_rel_err={err:.3e}  {'PASS' if passed else 'FAIL'}")
    impls = {"tritium": lambda label: (lambda: matmul(*inputs[label], **cfg)),
             "torch": lambda label: (lambda: torch.matmul(*inputs[label]))}
    if twin is not None:
        impls["triton"] = lambda label: (lambda: twin.matmul(*inputs[label], **cfg))
    benchmark("matmul", [(str(n), n) for n in sizes], impls,
              lambda label, ms: 2 * int(label) ** 3 / ms / 1e9, "TFLOP/s", "M = N = K")
    return ok


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
