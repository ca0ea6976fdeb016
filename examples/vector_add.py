"""Vector addition: the smallest useful kernel.

Each program instance adds one BLOCK-sized slice of two vectors; the last slice is masked so that
vectors of any length work. Written exactly as for Triton: swap the two imports below for
`import triton` / `import triton.language as tl` and it runs there unchanged.

Run: python3 examples/vector_add.py
"""

import os
import sys

import numpy as np

from _bench import benchmark, gpu_available, nan_like, triton_twin

import tritium as triton
import tritium.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # which slice of the vectors this program owns
    start = tl.program_id(axis=0) * BLOCK
    idx = start + tl.arange(0, BLOCK)
    # lanes past the end of the vectors neither load nor store
    in_bounds = idx < n
    a = tl.load(a_ptr + idx, mask=in_bounds)
    b = tl.load(b_ptr + idx, mask=in_bounds)
    tl.store(out_ptr + idx, a + b, mask=in_bounds)


def add(a, b, block=1024):
    assert a.shape == b.shape and a.dtype == b.dtype and a.ndim == 1
    n = a.shape[0]
    out = nan_like(a)  # poisoned: a lane the kernel misses shows up as NaN
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)
    add_kernel[grid](a, b, out, n, BLOCK=block)
    return out


def main(seed=0):
    rng = np.random.default_rng(seed)
    ok = True
    for n, block in [(1, 1024), (1000, 1024), (4097, 1024), (98_432, 1024), (12_345, 256)]:
        a = rng.standard_normal(n).astype(np.float32)
        b = rng.standard_normal(n).astype(np.float32)
        out = add(a, b, block)
        err = float(np.max(np.abs(out - (a + b))))  # NaN if any lane was left unwritten
        passed = err == 0.0
        ok &= passed
        print(f"vector_add    n={n:<8d} BLOCK={block:<5d} max_abs_err={err:.3e}  {'PASS' if passed else 'FAIL'}")
    if ok and gpu_available():
        ok &= gpu_benchmark()
    return ok


def gpu_benchmark():
    """fp32 vectors of 2^12 to 2^28 elements: checked against torch, then timed beside a + b."""
    import torch
    twin = triton_twin(os.path.abspath(__file__))
    sizes = [2 ** k for k in range(12, 29, 4)]
    inputs = {str(n): (torch.randn(n, device="cuda"), torch.randn(n, device="cuda")) for n in sizes}
    ok = True
    for label, (a, b) in inputs.items():
        err = float((add(a, b) - (a + b)).abs().max())
        ok &= err == 0.0
        print(f"vector_add    GPU n={label:<10} max_abs_err={err:.3e}  {'PASS' if err == 0.0 else 'FAIL'}")
    impls = {"tritium": lambda label: (lambda: add(*inputs[label])),
             "torch": lambda label: (lambda: torch.add(*inputs[label]))}
    if twin is not None:
        impls["triton"] = lambda label: (lambda: twin.add(*inputs[label]))
    benchmark("vector_add", [(str(n), n) for n in sizes], impls,
              lambda label, ms: 3 * 4 * int(label) / ms / 1e6, "GB/s", "elements")
    return ok


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
