"""Layer normalisation, forward and backward.

Forward: one program per row, columns walked in BLOCK_SIZE chunks. A row may be longer than one
block, so the kernel makes three passes over it: the first sums the row for the mean, the second
sums squared deviations for the (biased) variance, the third normalises, scales by the weight and
shifts by the bias. It also writes each row's mean and reciprocal standard deviation, which the
backward reuses instead of recomputing them.

Backward, with x_hat = (x - mean) * rstd and g = dy * w:
    dx = rstd * (g - mean(g * x_hat) - x_hat * mean(g))      (means over the row)
    dw = sum over rows of dy * x_hat,   db = sum over rows of dy
dx is per row, but dw and db sum over every row, so two kernels: the first gives each program
a strided set of rows (rows pid, pid + P, pid + 2P, ...), writes their dx and keeps running sums
of dy * x_hat and dy in registers, storing them as one row of a (P, n_cols) partial buffer; the
second sums that buffer over its P rows, one column block per program. No atomics, so the
result is the same on every run. The backward keeps a whole row in one block (rows of up to
8192 columns here).

`LayerNorm.apply` wraps both in a torch.autograd.Function when torch is installed.
Written exactly as for Triton (swap the imports for triton's and it runs there unchanged).

Run: python3 examples/layer_norm.py
"""

import os
import sys

import numpy as np

from _bench import benchmark, gpu_available, is_torch, nan_like, strides, triton_twin

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



@triton.jit
def layer_norm_bwd_dx_kernel(x_ptr, dy_ptr, dx_ptr, w_ptr, mean_ptr, rstd_ptr, part_dw_ptr,
                             part_db_ptr, row_stride, n_rows, n_cols, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    n_progs = tl.num_programs(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    dw_acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    db_acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for row in range(pid, n_rows, n_progs):
        x = tl.load(x_ptr + row * row_stride + cols, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + row * row_stride + cols, mask=mask, other=0.0).to(tl.float32)
        mean = tl.load(mean_ptr + row)
        rstd = tl.load(rstd_ptr + row)
        x_hat = tl.where(mask, (x - mean) * rstd, 0.0)
        g = dy * w
        mean_gx = tl.sum(g * x_hat, axis=0) / n_cols
        mean_g = tl.sum(g, axis=0) / n_cols
        dx = (g - mean_gx * x_hat - mean_g) * rstd
        tl.store(dx_ptr + row * row_stride + cols, dx, mask=mask)
        dw_acc += dy * x_hat
        db_acc += dy
    # this program's share of dw and db: one row of the partial buffers
    tl.store(part_dw_ptr + pid * n_cols + cols, dw_acc, mask=mask)
    tl.store(part_db_ptr + pid * n_cols + cols, db_acc, mask=mask)


@triton.jit
def layer_norm_bwd_dwdb_kernel(part_dw_ptr, part_db_ptr, dw_ptr, db_ptr, n_parts, n_cols,
                               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    dw = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    db = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for start in range(0, n_parts, BLOCK_M):
        rows = start + tl.arange(0, BLOCK_M)
        mask = (rows[:, None] < n_parts) & (cols[None, :] < n_cols)
        offs = rows[:, None] * n_cols + cols[None, :]
        dw += tl.load(part_dw_ptr + offs, mask=mask, other=0.0)
        db += tl.load(part_db_ptr + offs, mask=mask, other=0.0)
    tl.store(dw_ptr + cols, tl.sum(dw, axis=0), mask=cols < n_cols)
    tl.store(db_ptr + cols, tl.sum(db, axis=0), mask=cols < n_cols)


def layer_norm(x, weight, bias, eps=1e-5, max_block=256):
    """Forward: (y, mean, rstd) for a 2-D numpy array or torch tensor (rows contiguous)."""
    assert x.ndim == 2 and strides(x)[1] == 1
    n_rows, n_cols = x.shape
    y = nan_like(x)
    mean = nan_like(x, (n_rows,), _float32_of(x))
    rstd = nan_like(x, (n_rows,), _float32_of(x))
    block = min(max_block, triton.next_power_of_2(n_cols))
    layer_norm_fwd_kernel[(n_rows,)](x, y, weight, bias, mean, rstd, strides(x)[0], n_cols, eps,
                                     BLOCK_SIZE=block)
    return y, mean, rstd


def layer_norm_backward(dy, x, weight, mean, rstd, n_programs=None):
    """Backward: (dx, dw, db) from the forward's saved mean and rstd."""
    assert x.ndim == 2 and strides(x) == strides(dy) and strides(x)[1] == 1
    n_rows, n_cols = x.shape
    block = triton.next_power_of_2(n_cols)
    if block > 8192:
        raise ValueError(f"the backward keeps a row in one block; {n_cols} columns is too many")
    # enough programs to fill a GPU, each with several rows to amortise its partial row
    n_programs = n_programs or max(1, min(n_rows, 128))
    dx = nan_like(x)
    part_dw = nan_like(x, (n_programs, n_cols), _float32_of(x))
    part_db = nan_like(x, (n_programs, n_cols), _float32_of(x))
    layer_norm_bwd_dx_kernel[(n_programs,)](x, dy, dx, weight, mean, rstd, part_dw, part_db,
                                            strides(x)[0], n_rows, n_cols, BLOCK_SIZE=block,
                                            num_warps=8 if block >= 2048 else 4)
    dw = nan_like(weight)
    db = nan_like(weight)
    block_n = min(128, block)
    layer_norm_bwd_dwdb_kernel[(triton.cdiv(n_cols, block_n),)](part_dw, part_db, dw, db,
                                                                n_programs, n_cols, BLOCK_M=32,
                                                                BLOCK_N=block_n)
    return dx, dw, db


def _float32_of(x):
    if is_torch(x):
        return sys.modules["torch"].float32
    return np.float32


def _autograd_function():
    """LayerNorm as a torch.autograd.Function (None without torch)."""
    try:
        import torch
    except ImportError:
        return None

    class LayerNorm(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, weight, bias, eps=1e-5):
            shape = x.shape
            x2 = x.reshape(-1, shape[-1]).contiguous()
            y, mean, rstd = layer_norm(x2, weight, bias, eps)
            ctx.save_for_backward(x2, weight, mean, rstd)
            return y.reshape(shape)

        @staticmethod
        def backward(ctx, dy):
            x2, weight, mean, rstd = ctx.saved_tensors
            dy2 = dy.reshape(x2.shape).contiguous()
            dx, dw, db = layer_norm_backward(dy2, x2, weight, mean, rstd)
            return dx.reshape(dy.shape), dw, db, None

    return LayerNorm


LayerNorm = _autograd_function()


def reference(x, weight, bias, eps):
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=1)
    var = ((x64 - mean[:, None]) ** 2).mean(axis=1)
    rstd = 1 / np.sqrt(var + eps)
    return (x64 - mean[:, None]) * rstd[:, None] * weight + bias, mean, rstd


def reference_backward(dy, x, weight, eps):
    """(dx, dw, db) in float64 from the definition: dx by the chain rule through mean and var."""
    x64, dy64, w64 = x.astype(np.float64), dy.astype(np.float64), weight.astype(np.float64)
    mean = x64.mean(axis=1, keepdims=True)
    rstd = 1 / np.sqrt(((x64 - mean) ** 2).mean(axis=1, keepdims=True) + eps)
    x_hat = (x64 - mean) * rstd
    g = dy64 * w64
    dx = rstd * (g - g.mean(axis=1, keepdims=True) - x_hat * (g * x_hat).mean(axis=1, keepdims=True))
    return dx, (dy64 * x_hat).sum(axis=0), dy64.sum(axis=0)

def _max_err(got, want):
    return float(np.max(np.abs(np.asarray(got, np.float64) - want) / (1 + np.abs(want))))


def check_backward(rng, n_rows, n_cols, eps, n_programs=None):
    x = (rng.standard_normal((n_rows, n_cols)) * 2 + 0.5).astype(np.float32)
    w = rng.standard_normal(n_cols).astype(np.float32)
    b = rng.standard_normal(n_cols).astype(np.float32)
    dy = rng.standard_normal((n_rows, n_cols)).astype(np.float32)
    _, mean, rstd = layer_norm(x, w, b, eps)
    dx, dw, db = layer_norm_backward(dy, x, w, mean, rstd, n_programs)
    refs = reference_backward(dy, x, w, eps)
    return max(_max_err(got, want) for got, want in zip((dx, dw, db), refs))


def check_autograd(torch, eps):
    """LayerNorm.apply's forward and gradients against torch.nn.functional.layer_norm (CPU
    tensors: the kernels run on the executor)."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, 5, 300, generator=g, requires_grad=True)
    w = torch.randn(300, generator=g, requires_grad=True)
    b = torch.randn(300, generator=g, requires_grad=True)
    dy = torch.randn(3, 5, 300, generator=g)
    y = LayerNorm.apply(x, w, b, eps)
    y.backward(dy)
    got = [y.detach(), x.grad, w.grad, b.grad]
    x.grad = w.grad = b.grad = None
    y_ref = torch.nn.functional.layer_norm(x, (300,), w, b, eps)
    y_ref.backward(dy)
    want = [y_ref.detach(), x.grad, w.grad, b.grad]
    return max(float(((a - e).abs() / (1 + e.abs())).max()) for a, e in zip(got, want))


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
    # backward: fewer programs than rows, so each program sums several rows into its partials
    for n_rows, n_cols, n_programs in [(1, 1, None), (4, 100, None), (37, 300, 5), (64, 1000, 16)]:
        err = check_backward(rng, n_rows, n_cols, eps, n_programs)
        passed = err <= 1e-4  # NaN (an unwritten element) fails too
        ok &= passed
        print(f"layer_norm bwd shape=({n_rows}, {n_cols}){'':<{11 - len(str(n_rows)) - len(str(n_cols))}}"
              f"programs={n_programs or min(n_rows, 128):<4d} max_rel_err={err:.3e}  "
              f"{'PASS' if passed else 'FAIL'}")
    try:
        import torch
    except ImportError:
        print("layer_norm    torch is not installed: autograd check skipped")
        torch = None
    if torch is not None:
        err = check_autograd(torch, eps)
        passed = err <= 1e-4
        ok &= passed
        print(f"layer_norm    autograd.Function vs torch (y, dx, dw, db) max_rel_err={err:.3e}  "
              f"{'PASS' if passed else 'FAIL'}")
    if ok and gpu_available():
        ok &= gpu_benchmark()
    return ok


def gpu_benchmark():
    """Forward + backward on the GPU: checked against torch, then timed beside torch (and
    Triton): bytes moved per ms for a (4096, n) fp16 input."""
    import torch
    twin = triton_twin(os.path.abspath(__file__))
    n_rows, eps = 4096, 1e-5
    sizes = [512, 1024, 2048, 4096, 8192]
    inputs = {}
    for n in sizes:
        x = torch.randn(n_rows, n, device="cuda", dtype=torch.float16, requires_grad=True)
        w = torch.randn(n, device="cuda", dtype=torch.float16, requires_grad=True)
        b = torch.randn(n, device="cuda", dtype=torch.float16, requires_grad=True)
        inputs[str(n)] = (x, w, b, torch.randn_like(x))
    ok = True
    for label, (x, w, b, dy) in inputs.items():
        outs = []
        for fn in (lambda: LayerNorm.apply(x, w, b, eps),
                   lambda: torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, eps)):
            y = fn()
            y.backward(dy)
            outs.append([y.detach().float(), x.grad.float(), w.grad.float(), b.grad.float()])
            x.grad = w.grad = b.grad = None
        err = max(float(((a - e).abs() / (1 + e.abs())).max()) for a, e in zip(*outs))
        passed = err <= 5e-2  # fp16 outputs; dw/db sum 4096 rows
        ok &= passed
        print(f"layer_norm    GPU fp16 ({n_rows}, {label}) fwd+bwd vs torch max_rel_err={err:.3e}  "
              f"{'PASS' if passed else 'FAIL'}")

    def fwd_bwd(apply):
        def make(label):
            x, w, b, dy = inputs[label]

            def run():
                y = apply(x, w, b)
                y.backward(dy)
            return run
        return make

    impls = {"tritium": fwd_bwd(lambda x, w, b: LayerNorm.apply(x, w, b, eps)),
             "torch": fwd_bwd(lambda x, w, b: torch.nn.functional.layer_norm(x, (x.shape[-1],), w,
                                                                            b, eps))}
    if twin is not None:
        impls["triton"] = fwd_bwd(lambda x, w, b: twin.LayerNorm.apply(x, w, b, eps))
    # forward reads x, writes y; backward reads x, dy, writes dx (fp16): 5 * M * N * 2 bytes
    benchmark("layer_norm", [(str(n), n) for n in sizes], impls,
              lambda label, ms: 5 * n_rows * int(label) * 2 / ms / 1e6, "GB/s", "columns (4096 rows)")
    return ok


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
