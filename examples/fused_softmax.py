"""Fused row-wise softmax: one program per row, the whole row in one block.

The block is the next power of two at or above the row length; lanes past the end of the row
load -inf, so they neither win the max nor add to the sum (exp(-inf) = 0). The row is read
once and written once: max, exp, sum and the division all happen in registers.
Written exactly as for Triton (swap the imports for triton's and it runs there unchanged).

Run: python3 examples/fused_softmax.py
"""

import os
import sys

import numpy as np

from _bench import benchmark, gpu_available, nan_like, strides, triton_twin

import tritium as triton
import tritium.language as tl


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    valid = cols < n_cols
    x = tl.load(in_ptr + row * in_row_stride + cols, mask=valid, other=-float("inf"))
    # subtract the row max first so that exp never overflows
    shifted = x - tl.max(x, axis=0)
    numerator = tl.exp(shifted)
    denominator = tl.sum(numerator, axis=0)
    tl.store(out_ptr + row * out_row_stride + cols, numerator / denominator, mask=valid)


def softmax(x):
    assert x.ndim == 2 and strides(x)[1] == 1
    n_rows, n_cols = x.shape
    out = nan_like(x)
    block = triton.next_power_of_2(n_cols)
    # strides in elements (numpy counts bytes)
    softmax_kernel[(n_rows,)](out, x, strides(x)[0], strides(out)[0], n_cols, BLOCK=block,
                              num_warps=8 if block >= 2048 else 4)
    return out


def reference(x):
    z = x.astype(np.float64)
    z = np.exp(z - z.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


def main(seed=0):
    rng = np.random.default_rng(seed)
    ok = True
    for n_rows, n_cols in [(1, 1), (3, 7), (17, 33), (64, 128), (32, 1000), (8, 1823)]:
        x = (rng.standard_normal((n_rows, n_cols)) * 3).astype(np.float32)
        out = softmax(x)
        err = float(np.max(np.abs(out - reference(x))))
        passed = err <= 1e-6 and not np.isnan(out).any()
        ok &= passed
        print(f"fused_softmax shape=({n_rows}, {n_cols}){'':<{12 - len(str(n_rows)) - len(str(n_cols))}}"
              f"BLOCK={triton.next_power_of_2(n_cols):<5d} max_abs_err={err:.3e}  {'PASS' if passed else 'FAIL'}")
    # a strided view: rows of a wider buffer
    wide = (rng.standard_normal((10, 300)) * 3).astype(np.float32)
    view = wide[:, :250]
    out = softmax(view)
    err = float(np.max(np.abs(out - reference(view))))
    passed = err <= 1e-6 and not np.isnan(out).any()
    ok &= passed
    print(f"fused_softmax shape=(10, 250) strided  BLOCK=256   max_abs_err={err:.3e}  {'PASS' if passed else 'FAIL'}")
    if ok and gpu_available():
        ok &= gpu_benchmark()
    return ok


def gpu_benchmark():
    """(4096, n) fp32 rows: checked against torch.softmax, then timed beside it."""
    import torch
    twin = triton_twin(os.path.abspath(__file__))
    sizes = [256, 1024, 2048, 4096, 8192]
    inputs = {str(n): torch.randn(4096, n, device="cuda") for n in sizes}
    ok = True
    for label, x in inputs.items():
        err = float((softmax(x) - torch.softmax(x, dim=1)).abs().max())
        passed = err <= 1e-6
        ok &= passed
        print(f"fused_softmax GPU (4096, {label:<5}) max_abs_err={err:.3e}  {'PASS' if passed else 'FAIL'}")
    impls = {"tritium": lambda label: (lambda: softmax(inputs[label])),
             "torch": lambda label: (lambda: torch.softmax(inputs[label], dim=1))}
    if twin is not None:
        impls["triton"] = lambda label: (lambda: twin.softmax(inputs[label]))
    benchmark("fused_softmax", [(str(n), n) for n in sizes], impls,
              lambda label, ms: 2 * 4 * 4096 * int(label) / ms / 1e6, "GB/s", "columns (4096 rows)")
    return ok


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
