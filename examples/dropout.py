"""Dropout with a seed instead of a stored mask: each element keeps (scaled by 1 / (1 - p)) or
drops according to tl.rand(seed, offset), a counter-based Philox stream, so the same seed gives
the same mask anywhere (forward and backward need no mask tensor in memory).
Written exactly as for Triton (swap the imports for triton's and it runs there unchanged).

Run: python3 examples/dropout.py
"""

import os
import sys

import numpy as np

from _bench import benchmark, gpu_available, nan_like, triton_twin

import tritium as triton
import tritium.language as tl


@triton.jit
def seeded_dropout_kernel(x_ptr, out_ptr, n, p, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    keep = tl.rand(seed, offs) > p
    tl.store(out_ptr + offs, tl.where(keep, x / (1 - p), 0.0), mask=mask)


def dropout(x, p, seed, block=1024):
    assert x.ndim == 1
    n = x.shape[0]
    out = nan_like(x)
    seeded_dropout_kernel[(triton.cdiv(n, block),)](x, out, n, p, seed, BLOCK=block)
    return out


def main(seed=0):
    rng = np.random.default_rng(seed)
    ok = True
    for n, p in [(1000, 0.5), (4097, 0.1), (20000, 0.9)]:
        x = (rng.standard_normal(n) + 3).astype(np.float32)  # no zeros: a zero output is a drop
        a, b, c = dropout(x, p, 123), dropout(x, p, 123), dropout(x, p, 124)
        kept = a != 0
        scaled = np.allclose(a[kept], x[kept] / (1 - p), rtol=1e-6)
        rate = 1 - kept.mean()
        passed = (scaled and np.array_equal(a, b) and not np.array_equal(a, c)
                  and abs(rate - p) < 4 * np.sqrt(p * (1 - p) / n) and not np.isnan(a).any())
        ok &= passed
        print(f"dropout       n={n:<6d} p={p:<4} dropped={rate:.3f} same seed same mask="
              f"{np.array_equal(a, b)!s:<5} {'PASS' if passed else 'FAIL'}")
    if ok and gpu_available():
        ok &= gpu_benchmark()
    return ok


def gpu_benchmark():
    """fp32 vectors: the GPU's mask is the CPU executor's (same seed, same Philox stream), then
    timed beside torch.nn.functional.dropout (which draws its own mask and also writes it)."""
    import torch
    twin = triton_twin(os.path.abspath(__file__))
    x_small = np.random.default_rng(1).standard_normal(5000).astype(np.float32) + 3
    gpu = dropout(torch.from_numpy(x_small).cuda(), 0.3, 77).cpu().numpy()
    cpu = dropout(x_small, 0.3, 77)
    err = float(np.max(np.abs(gpu - cpu) / np.abs(x_small)))  # NaN if one was missed
    ok = bool(np.array_equal(gpu == 0, cpu == 0)) and err <= 1e-6  # the division may round apart
    print(f"dropout       GPU mask == CPU executor mask (n=5000) max_rel_err={err:.3e}  "
          f"{'PASS' if ok else 'FAIL'}")
    sizes = [2 ** k for k in range(12, 29, 4)]
    inputs = {str(n): torch.randn(n, device="cuda") for n in sizes}
    impls = {"tritium": lambda label: (lambda: dropout(inputs[label], 0.5, 123)),
             "torch": lambda label: (lambda: torch.nn.functional.dropout(inputs[label], 0.5))}
    if twin is not None:
        impls["triton"] = lambda label: (lambda: twin.dropout(inputs[label], 0.5, 123))
    benchmark("dropout", [(str(n), n) for n in sizes], impls,
              lambda label, ms: 2 * 4 * int(label) / ms / 1e6, "GB/s", "elements")
    return ok


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
