"""Dropout with a seed instead of a stored mask: each element keeps (scaled by 1 / (1 - p)) or
drops according to tl.rand(seed, offset), a counter-based Philox stream, so the same seed gives
the same mask anywhere (forward and backward need no mask tensor in memory).
Written exactly as for Triton (swap the imports for triton's and it runs there unchanged).

Run: python3 examples/dropout.py
"""

import sys

import numpy as np

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
    out = np.full_like(x, np.nan)
    seeded_dropout_kernel[(triton.cdiv(x.size, block),)](x, out, x.size, p, seed, BLOCK=block)
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
    return ok


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
