"""Matrix multiplication with block pointers and tensor descriptors: the same tile loop as
matmul.py, with the address arithmetic and the edge masks left to the compiler.

`tl.make_block_ptr` describes a BLOCK_M x BLOCK_K window of A (its shape, strides and offsets);
`tl.advance` slides it along K; `boundary_check=(0, 1)` pads the elements outside A with zeros, so
no mask is written by hand. The second kernel takes host `TensorDescriptor`s instead, whose loads
are bounds-checked in every dimension. On a GPU both compile to the same masked, pipelined copies
and tensor-core dots as the hand-written matmul; here the CPU executor runs them. Written exactly
as for Triton: swap the imports for `import triton` / `import triton.language as tl` (and
`triton.tools.tensor_descriptor`).

Run: python3 examples/block_ptr_matmul.py
"""

import os
import sys

import numpy as np

from _bench import benchmark, gpu_available, nan_like, strides, triton_twin

import tritium as triton
import tritium.language as tl
from tritium.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def block_ptr_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk,
                            stride_bn, stride_cm, stride_cn, BLOCK_M: tl.constexpr,
                            BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    a_block = tl.make_block_ptr(a_ptr, shape=(M, K), strides=(stride_am, stride_ak),
                                offsets=(pid_m * BLOCK_M, 0), block_shape=(BLOCK_M, BLOCK_K),
                                order=(1, 0))
    b_block = tl.make_block_ptr(b_ptr, shape=(K, N), strides=(stride_bk, stride_bn),
                                offsets=(0, pid_n * BLOCK_N), block_shape=(BLOCK_K, BLOCK_N),
                                order=(1, 0))
    accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_block, boundary_check=(0, 1), padding_option="zero")
        b = tl.load(b_block, boundary_check=(0, 1), padding_option="zero")
        accumulator = tl.dot(a, b, accumulator)
        a_block = tl.advance(a_block, (0, BLOCK_K))
        b_block = tl.advance(b_block, (BLOCK_K, 0))
    c_block = tl.make_block_ptr(c_ptr, shape=(M, N), strides=(stride_cm, stride_cn),
                                offsets=(pid_m * BLOCK_M, pid_n * BLOCK_N),
                                block_shape=(BLOCK_M, BLOCK_N), order=(1, 0))
    tl.store(c_block, accumulator.to(tl.float16), boundary_check=(0, 1))


@triton.jit
def descriptor_matmul_kernel(a_desc, b_desc, c_desc, K, BLOCK_M: tl.constexpr,
                             BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = a_desc.load([pid_m * BLOCK_M, k])
        b = b_desc.load([k, pid_n * BLOCK_N])
        accumulator = tl.dot(a, b, accumulator)
    c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], accumulator.to(tl.float16))


def matmul(a, b, use_descriptors, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32, num_warps=4, num_stages=2):
    M, K = a.shape
    N = b.shape[1]
    c = nan_like(a, (M, N))  # poisoned: an unwritten element shows as NaN
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
    if use_descriptors:
        descriptor_matmul_kernel[grid](TensorDescriptor.from_tensor(a, [BLOCK_M, BLOCK_K]),
                                       TensorDescriptor.from_tensor(b, [BLOCK_K, BLOCK_N]),
                                       TensorDescriptor.from_tensor(c, [BLOCK_M, BLOCK_N]), K,
                                       BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                                       num_warps=num_warps, num_stages=num_stages)
    else:
        block_ptr_matmul_kernel[grid](a, b, c, M, N, K, *strides(a), *strides(b), *strides(c),
                                      BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                                      num_warps=num_warps, num_stages=num_stages)
    return c


def main(seed=0):
    rng = np.random.default_rng(seed)
    ok = True
    # Descriptors need 16-byte-aligned rows: K and N multiples of 8 halves.
    for M, N, K in [(64, 64, 64), (96, 80, 72), (33, 24, 104)]:
        a = rng.standard_normal((M, K)).astype(np.float16)
        b = rng.standard_normal((K, N)).astype(np.float16)
        ref = a.astype(np.float32) @ b.astype(np.float32)
        for use_descriptors in (False, True):
            c = matmul(a, b, use_descriptors)
            err = float(np.max(np.abs(c.astype(np.float32) - ref)))  # NaN if one was missed
            passed = err <= 2e-2 * max(1.0, float(np.max(np.abs(ref))))
            ok &= passed
            kind = "descriptors " if use_descriptors else "block ptrs  "
            print(f"matmul {kind} M={M:<4d} N={N:<4d} K={K:<4d} max_abs_err={err:.3e}  "
                  f"{'PASS' if passed else 'FAIL'}")
    if ok and gpu_available():
        ok &= gpu_benchmark()
    return ok


def gpu_benchmark():
    """Square fp16 products with block pointers and with descriptors, beside torch.matmul."""
    import torch
    twin = triton_twin(os.path.abspath(__file__))
    cfg = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, num_warps=8, num_stages=3)
    sizes = [512, 1024, 2048, 4096]
    inputs = {str(n): (torch.randn(n, n, device="cuda", dtype=torch.float16),
                       torch.randn(n, n, device="cuda", dtype=torch.float16)) for n in sizes}
    ok = True
    for label, (a, b) in inputs.items():
        ref = a.float() @ b.float()
        for use_descriptors in (False, True):
            c = matmul(a, b, use_descriptors, **cfg)
            err = float((c.float() - ref).abs().max() / ref.abs().max())
            passed = err <= 1e-2
            ok &= passed
            print(f"matmul {'descriptors ' if use_descriptors else 'block ptrs  '} GPU n={label:<5} "
                  f"max_rel_err={err:.3e}  {'PASS' if passed else 'FAIL'}")

    def run(module, use_descriptors):
        return lambda label: (lambda: module.matmul(*inputs[label], use_descriptors, **cfg))

    impls = {"tritium block ptr": lambda label: (lambda: matmul(*inputs[label], False, **cfg)),
             "tritium descriptor": lambda label: (lambda: matmul(*inputs[label], True, **cfg)),
             "torch": lambda label: (lambda: torch.matmul(*inputs[label]))}
    if twin is not None:
        impls["triton block ptr"] = run(twin, False)
        impls["triton descriptor"] = run(twin, True)
    benchmark("block_ptr_matmul", [(str(n), n) for n in sizes], impls,
              lambda label, ms: 2 * int(label) ** 3 / ms / 1e9, "TFLOP/s", "M = N = K")
    return ok


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
