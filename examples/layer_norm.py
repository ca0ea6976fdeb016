"""Layer normalisation, forward pass: one program per row, columns walked in BLOCK_SIZE chunks.

A row may be longer than one block, so the kernel makes three passes over it: the first sums
the row for the mean, the second sums squared deviations for the (biased) variance, the third
normalises, scales by the weight and shifts by the bias. It also writes each row's mean and
reciprocal standard deviation (what a backward pass would need).
Written exactly as for Triton (swap the imports for triton's and it runs there unchanged).

Run: python3 examples/layer_norm.py
"""

import sys

import numpy as np

import tritium as triton
import tritium.language as tl


@triton.jit
def layer_norm_fwd_kernel(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, row_stride, n_cols, eps,
                          BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * row_stride
    y_row = y_ptr + row * row_stride

    # pass 1: mean
    partial = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        partial += tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    mean = tl.sum(partial, axis=0) / n_cols

    # pass 2: variance around that mean (masked lanes must not add (0 - mean)^2)
    partial = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        centred = tl.where(cols < n_cols, x - mean, 0.0)
        partial += centred * centred
    var = tl.sum(partial, axis=0) / n_cols
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)

    # pass 3: normalise, scale, shift
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        w = tl.load(w_ptr + cols, mask=mask)
        b = tl.load(b_ptr + cols, mask=mask)
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        y = (x - mean) * rstd * w + b
        tl.store(y_row + cols, y, mask=mask)


def layer_norm(x, weight, bias, eps=1e-5, max_block=256):
    assert x.ndim == 2 and x.dtype == np.float32
    n_rows, n_cols = x.shape
    y = np.full_like(x, np.nan)
    mean = np.full(n_rows, np.nan, np.float32)
    rstd = np.full(n_rows, np.nan, np.float32)
    block = min(max_block, triton.next_power_of_2(n_cols))
    layer_norm_fwd_kernel[(n_rows,)](x, y, weight, bias, mean, rstd, x.strides[0] // x.itemsize, n_cols, eps,
                                     BLOCK_SIZE=block)
    return y, mean, rstd


def reference(x, weight, bias, eps):
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=1)
    var = ((x64 - mean[:, None]) ** 2).mean(axis=1)
    rstd = 1 / np.sqrt(var + eps)
    return (x64 - mean[:, None]) * rstd[:, None] * weight + bias, mean, rstd


def main(seed=0):
    rng = np.random.default_rng(seed)
    ok = True
    eps = 1e-5
    for n_rows, n_cols in [(1, 1), (4, 100), (16, 256), (31, 1000), (8, 4097)]:
        x = (rng.standard_normal((n_rows, n_cols)) * 2 + 0.5).astype(np.float32)
        w = rng.standard_normal(n_cols).astype(np.float32)
        b = rng.standard_normal(n_cols).astype(np.float32)
        y, mean, rstd = layer_norm(x, w, b, eps)
        y_ref, mean_ref, rstd_ref = reference(x, w, b, eps)
        err = max(float(np.max(np.abs(y - y_ref))), float(np.max(np.abs(mean - mean_ref))),
                  float(np.max(np.abs(rstd - rstd_ref) / rstd_ref)))
        passed = err <= 1e-4 and not (np.isnan(y).any() or np.isnan(mean).any() or np.isnan(rstd).any())
        ok &= passed
        block = min(256, triton.next_power_of_2(n_cols))
        print(f"layer_norm    shape=({n_rows}, {n_cols}){'':<{12 - len(str(n_rows)) - len(str(n_cols))}}"
              f"BLOCK_SIZE={block:<4d} max_err={err:.3e}  {'PASS' if passed else 'FAIL'}")
    return ok


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
