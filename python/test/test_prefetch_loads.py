"""--prefetch-loads (lib/transforms/prefetch_loads.cpp): a reducing row loop's loads one
iteration ahead, the loop versioned on a runtime check where it also stores. The GPU compile runs
the pass; here the transformed tile IR runs on the CPU executor beside the loop as written, on
cases where the check must pass (separate output) and must fail (in place; a row that reads the
row the previous iteration wrote), and the GPU IR and PTX are checked (no GPU needed)."""

import copy
import re

import numpy as np
import pytest

import tritium
import tritium.language as tl
from tritium.errors import load_C

C = load_C()


@tritium.jit
def _norm_rows(x_ptr, y_ptr, sums_ptr, row_start, row_end, stride, n, BLOCK: tl.constexpr):
    # A row loop as Liger writes its backward kernels: loads, a sum across the
    # program, a store of the row.
    offs = tl.arange(0, BLOCK)
    m = offs < n
    total = 0.0
    for r in range(row_start, row_end):
        x = tl.load(x_ptr + r * stride + offs, mask=m, other=0.0)
        s = tl.sum(x * x, axis=0)
        total += s
        tl.store(y_ptr + r * stride + offs, x * (1.0 / (s + 1.0)), mask=m)
    tl.store(sums_ptr, total)


@tritium.jit
def _recurrence(x_ptr, rows, n, BLOCK: tl.constexpr):
    # Row r reads row r - 1, written by the iteration before: the load of
    # iteration r + 1 must not move above the store of iteration r.
    offs = tl.arange(0, BLOCK)
    m = offs < n
    for r in range(1, rows):
        prev = tl.load(x_ptr + (r - 1) * n + offs, mask=m, other=0.0)
        s = tl.sum(prev, axis=0)
        tl.store(x_ptr + r * n + offs, prev * 0.5 + s * 0.25, mask=m)


@tritium.jit
def _row_maxes(x_ptr, out_ptr, rows, n, BLOCK: tl.constexpr):
    # No store in the loop: prefetched without a check.
    offs = tl.arange(0, BLOCK)
    m = offs < n
    best = -float("inf")
    for r in range(0, rows):
        x = tl.load(x_ptr + r * n + offs, mask=m, other=-float("inf"))
        best = tl.maximum(best, tl.max(x, axis=0))
    tl.store(out_ptr, best)


def _tile_kernel(fn, grid, args, **constexprs):
    """The TileKernel the CPU path compiles for `args`, after running it once."""
    fn.cache.clear()
    fn[grid](*args, **constexprs)
    return next(iter(fn.cache.values()))


def _prefetched(tk, num_warps=4):
    """`tk` with --prefetch-loads applied to its tile IR, laid out for `num_warps` (as the GPU
    compile does)."""
    text = re.sub(r"num_warps = \d+", f"num_warps = {num_warps}", tk.asm["tir"])
    module = C.parse_module(text, "<prefetch>")
    stats = C.run_passes(module, ["prefetch-loads"], True, num_warps=num_warps)
    out = copy.copy(tk)
    out.module = module
    out.asm = dict(tk.asm)
    out.asm["tir"] = C.print_module(module, False)
    return out, stats


def _norm_rows_ref(x, row_start, row_end, stride, n):
    y = np.full_like(x, np.nan)
    total = 0.0
    for r in range(row_start, row_end):
        row = x[r * stride:r * stride + n].astype(np.float64)
        s = (row * row).sum()
        total += s
        y[r * stride:r * stride + n] = row / (s + 1.0)
    return y, total


@pytest.mark.parametrize("row_start,row_end", [(0, 7), (2, 3), (3, 3), (5, 2)])
def test_separate_output_matches_the_loop_as_written(row_start, row_end):
    rows, n, stride = 7, 100, 128
    rng = np.random.default_rng(3)
    x = rng.standard_normal(rows * stride).astype(np.float32)
    y = np.full_like(x, np.nan)
    sums = np.zeros(1, np.float32)
    args = (x, y, sums, row_start, row_end, stride, n)
    tk = _tile_kernel(_norm_rows, (1,), args, BLOCK=128)
    pk, stats = _prefetched(tk)
    assert stats["prefetch-loads.loops"] == 1 and stats["prefetch-loads.versioned"] == 1
    assert "prefetched = 1" in pk.asm["tir"] and "scf.if" in pk.asm["tir"]
    want_y, want_total = _norm_rows_ref(x, row_start, row_end, stride, n)
    y[:] = np.nan
    sums[:] = np.nan
    pk[(1,)](x, y, sums, row_start, row_end, stride, n)
    np.testing.assert_allclose(y, want_y, rtol=1e-5, atol=1e-6)  # NaN where not written
    np.testing.assert_allclose(sums[0], want_total, rtol=1e-5)


def test_in_place_takes_the_loop_as_written():
    rows, n, stride = 6, 100, 128
    rng = np.random.default_rng(4)
    x = rng.standard_normal(rows * stride).astype(np.float32)
    sums = np.zeros(1, np.float32)
    want_y, want_total = _norm_rows_ref(x, 0, rows, stride, n)
    want = x.copy()
    for r in range(rows):
        want[r * stride:r * stride + n] = want_y[r * stride:r * stride + n]
    tk = _tile_kernel(_norm_rows, (1,), (x.copy(), x.copy(), sums, 0, rows, stride, n), BLOCK=128)
    pk, _ = _prefetched(tk)
    pk[(1,)](x, x, sums, 0, rows, stride, n)  # y is x
    np.testing.assert_allclose(x, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(sums[0], want_total, rtol=1e-5)


def test_a_row_read_after_the_previous_iteration_wrote_it():
    rows, n = 6, 50
    x0 = np.random.default_rng(5).standard_normal(rows * n).astype(np.float32)
    want = x0.astype(np.float64).copy()
    for r in range(1, rows):
        prev = want[(r - 1) * n:r * n].copy()
        want[r * n:(r + 1) * n] = prev * 0.5 + prev.sum() * 0.25
    tk = _tile_kernel(_recurrence, (1,), (x0.copy(), rows, n), BLOCK=64)
    pk, stats = _prefetched(tk)
    assert stats["prefetch-loads.versioned"] == 1
    x = x0.copy()
    pk[(1,)](x, rows, n)
    np.testing.assert_allclose(x, want, rtol=1e-5, atol=1e-5)


def test_a_loop_without_stores_needs_no_check():
    rows, n = 9, 70
    x = np.random.default_rng(6).standard_normal(rows * n).astype(np.float32)
    out = np.zeros(1, np.float32)
    tk = _tile_kernel(_row_maxes, (1,), (x, out, rows, n), BLOCK=128)
    pk, stats = _prefetched(tk)
    assert stats["prefetch-loads.loops"] == 1 and stats["prefetch-loads.versioned"] == 0
    assert "scf.if" not in pk.asm["tir"]
    for r in (0, 1, rows):
        out[:] = np.nan
        pk[(1,)](x, out, r, n)
        want = x[:r * n].max() if r else -np.inf
        assert out[0] == want


def test_the_budget_leaves_wide_rows_alone():
    # 4096 fp32 on one warp: 512 bytes a thread, over the 128 the pass allows.
    x = np.zeros(4 * 4096, np.float32)
    out = np.zeros(1, np.float32)
    tk = _tile_kernel(_row_maxes, (1,), (x, out, 4, 4096), BLOCK=4096)
    _, stats = _prefetched(tk, num_warps=1)
    assert stats["prefetch-loads.loops"] == 0
    _, stats = _prefetched(tk, num_warps=32)  # 16 bytes a thread
    assert stats["prefetch-loads.loops"] == 1
    # 1024 threads have 64 registers each: an eighth of them (32 bytes) is the budget there.
    x = np.zeros(2 * 32768, np.float32)
    tk = _tile_kernel(_row_maxes, (1,), (x, out, 2, 32768), BLOCK=32768)
    _, stats = _prefetched(tk, num_warps=32)  # 128 bytes a thread
    assert stats["prefetch-loads.loops"] == 0
    _, stats = _prefetched(tk, num_warps=8)  # 512 bytes a thread: over the 128 of any size
    assert stats["prefetch-loads.loops"] == 0


def test_the_gpu_compile_prefetches():
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "sums_ptr": "*fp32", "row_start": "i32",
           "row_end": "i32", "stride": "i32", "n": "i32"}
    for target in ("sm_90a", "sm_80"):
        ck = tritium.compile(_norm_rows, signature=sig, constexprs={"BLOCK": 1024},
                             num_warps=8, target=target, use_cache=False)
        assert "prefetch" not in ck.asm["tir"]  # the tile IR (the CPU executor's) is as written
        gir = ck.asm["gir"]
        assert "prefetched = 1" in gir and "scf.if" in gir, gir[:2000]
        # Two copies of the row loop in the PTX, one load ahead of the prefetching one.
        ptx = ck.asm["ptx"]
        assert ptx.count("ld.global") >= 3, ptx


@tritium.jit
def _store_then_load(y_ptr, out_ptr, rows, n, BLOCK: tl.constexpr):
    # Row r is written, then read back, in the same iteration: the load of row
    # r + 1 must not move above the store of row r + 1.
    offs = tl.arange(0, BLOCK)
    m = offs < n
    total = 0.0
    for r in range(0, rows):
        tl.store(y_ptr + r * n + offs, (offs + r).to(tl.float32), mask=m)
        v = tl.load(y_ptr + r * n + offs, mask=m, other=0.0)
        total += tl.sum(v, axis=0)
    tl.store(out_ptr, total)


@pytest.mark.parametrize("stride", [128, 100, 64])
def test_in_place_rows_a_stride_apart(stride):
    # y is x: each row is read, then written in place. Rows of 100 elements
    # (128 lanes, masked) `stride` apart: disjoint rows at 128, overlapping
    # unmasked lanes at 100 and overlapping rows at 64 (the loop as written).
    rows, n = 6, 100 if stride >= 100 else stride
    rng = np.random.default_rng(8)
    x0 = rng.standard_normal(rows * stride + 128).astype(np.float32)
    want = x0.astype(np.float64).copy()
    total = 0.0
    for r in range(rows):
        row = want[r * stride:r * stride + n].copy()
        s = (row * row).sum()
        total += s
        want[r * stride:r * stride + n] = row / (s + 1.0)
    sums = np.zeros(1, np.float32)
    tk = _tile_kernel(_norm_rows, (1,), (x0.copy(), x0.copy(), sums, 0, rows, stride, n), BLOCK=128)
    pk, stats = _prefetched(tk)
    assert stats["prefetch-loads.versioned"] == 1
    x = x0.copy()
    pk[(1,)](x, x, sums, 0, rows, stride, n)
    np.testing.assert_allclose(x, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(sums[0], total, rtol=1e-5)


def test_a_row_stored_before_it_is_loaded():
    # Rows exactly BLOCK apart: row r + 1's load would not overlap row r's
    # store; it is row r + 1's own store that it must follow.
    rows, n = 5, 64
    y = np.full(rows * n, np.nan, np.float32)
    out = np.zeros(1, np.float32)
    tk = _tile_kernel(_store_then_load, (1,), (y.copy(), out, rows, n), BLOCK=64)
    pk, stats = _prefetched(tk)
    assert stats["prefetch-loads.versioned"] == 1
    pk[(1,)](y, out, rows, n)
    want = sum(float(np.arange(n).sum() + r * n) for r in range(rows))
    assert out[0] == want


@tritium.jit
def _double_stride(x_ptr, rows, n, BLOCK: tl.constexpr):
    # Reads row r, writes row 2r: iteration 1 writes the row iteration 2
    # reads. The addresses are affine in r with different coefficients.
    offs = tl.arange(0, BLOCK)
    m = offs < n
    for r in range(0, rows):
        v = tl.load(x_ptr + r * n + offs, mask=m, other=0.0)
        s = tl.sum(v, axis=0)
        tl.store(x_ptr + 2 * r * n + offs, v * 0.5 + s, mask=m)


def test_rows_at_different_strides():
    rows, n = 4, 64
    x0 = np.random.default_rng(9).standard_normal(2 * rows * n).astype(np.float32)
    want = x0.astype(np.float64).copy()
    for r in range(rows):
        v = want[r * n:(r + 1) * n].copy()
        want[2 * r * n:(2 * r + 1) * n] = v * 0.5 + v.sum()
    tk = _tile_kernel(_double_stride, (1,), (x0.copy(), rows, n), BLOCK=64)
    pk, stats = _prefetched(tk)
    assert stats["prefetch-loads.versioned"] == 1
    x = x0.copy()
    pk[(1,)](x, rows, n)
    np.testing.assert_allclose(x, want, rtol=1e-5, atol=1e-5)


@tritium.jit
def _pointer_rows(x_ptr, out_ptr, rows, n, BLOCK: tl.constexpr):
    # The row pointer is carried by the loop and advanced by the body, as
    # kernels written `ptrs += stride` do: row r + 1 is loaded through the
    # advance computed from row r's pointer.
    offs = tl.arange(0, BLOCK)
    ptrs = x_ptr + offs
    best = -float("inf")
    for r in range(0, rows):
        x = tl.load(ptrs, mask=offs < n, other=-float("inf"))
        best = tl.maximum(best, tl.max(x, axis=0) + r)
        ptrs += n
    tl.store(out_ptr, best)


def test_a_pointer_advanced_by_the_loop():
    rows, n = 7, 90
    x = np.random.default_rng(10).standard_normal(rows * n).astype(np.float32)
    out = np.zeros(1, np.float32)
    tk = _tile_kernel(_pointer_rows, (1,), (x, out, rows, n), BLOCK=128)
    pk, stats = _prefetched(tk)
    assert stats["prefetch-loads.loops"] == 1 and stats["prefetch-loads.loads"] == 1
    for r in (0, 1, rows):
        out[:] = np.nan
        pk[(1,)](x, out, r, n)
        want = max(x[i * n:(i + 1) * n].max() + i for i in range(r)) if r else -np.inf
        assert out[0] == np.float32(want)


@tritium.jit
def _dot_rows(K, Q, M, D, Out, n, BLOCK: tl.constexpr):
    # The attention backward's dK/dV loop in small: a dot per block of query
    # rows, whose row statistics (M by the induction variable, D by an offset
    # the loop advances) are vectors loaded in the loop.
    offs = tl.arange(0, BLOCK)
    k = tl.load(K + offs[:, None] * BLOCK + offs[None, :])
    acc = tl.zeros([BLOCK, BLOCK], tl.float32)
    curr = 0
    for start in range(0, n, BLOCK):
        rows = start + offs
        qt = tl.load(Q + rows[None, :] * BLOCK + offs[:, None], mask=rows[None, :] < n, other=0.0)
        m = tl.load(M + rows, mask=rows < n, other=float("inf"))
        d = tl.load(D + curr + offs, mask=curr + offs < n, other=0.0)
        p = tl.math.exp2(tl.dot(k, qt) - m[None, :]) * d[None, :]
        acc = tl.dot(p.to(tl.float16), k, acc)
        curr += BLOCK
    tl.store(Out + offs[:, None] * BLOCK + offs[None, :], acc)


_GPU_LAYOUT_PASSES = ["convert-to-gpu", "remove-layout-conversions", "accelerate-matmul",
                      "propagate-layouts", "remove-layout-conversions"]


@pytest.mark.parametrize("n", [0, 64, 100, 192])
def test_a_dot_loop_prefetches_its_vectors_in_the_gpu_ir(n):
    # The GPU compile's second run: on the laid-out IR, M and D go one block
    # ahead; the executor runs that IR beside the tile IR as written.
    B = 64
    rng = np.random.default_rng(11)
    K = (rng.standard_normal((B, B)) * 0.1).astype(np.float16)
    Q = (rng.standard_normal((max(n, 1), B)) * 0.1).astype(np.float16)
    M = rng.standard_normal(max(n, 1)).astype(np.float32)
    D = rng.standard_normal(max(n, 1)).astype(np.float32)
    want = np.full((B, B), np.nan, np.float32)
    tk = _tile_kernel(_dot_rows, (1,), (K, Q, M, D, want, n), BLOCK=B)
    module = C.parse_module(re.sub(r"num_warps = \d+", "num_warps = 4", tk.asm["tir"]), "<dot>")
    C.run_passes(module, _GPU_LAYOUT_PASSES, True, num_warps=4)
    stats = C.run_passes(module, ["prefetch-loads"], True, num_warps=4)
    assert stats["prefetch-loads.loops"] == 1 and stats["prefetch-loads.loads"] == 2
    text = C.print_module(module, False)
    assert "prefetched = 2" in text
    pk = copy.copy(tk)
    pk.module = module
    got = np.full((B, B), np.nan, np.float32)
    pk[(1,)](K, Q, M, D, got, n)
    np.testing.assert_array_equal(got, want)


def test_a_dot_loop_is_left_to_the_gpu_ir():
    # On the tile IR (before layouts) the pass leaves a loop with a dot alone.
    B = 64
    K = np.zeros((B, B), np.float16)
    out = np.zeros((B, B), np.float32)
    tk = _tile_kernel(_dot_rows, (1,), (K, K, out, out, out, B), BLOCK=B)
    _, stats = _prefetched(tk)
    assert stats["prefetch-loads.loops"] == 0


def test_the_gpu_compile_prefetches_a_dot_loops_vectors():
    # With num_stages = 1 (nothing pipelined): the pipeliner, which otherwise stages these
    # vectors through shared memory (test_pipeline_staging.py), leaves the loop to this pass.
    sig = {"K": "*fp16", "Q": "*fp16", "M": "*fp32", "D": "*fp32", "Out": "*fp32", "n": "i32"}
    for target in ("sm_90a", "sm_80"):
        ck = tritium.compile(_dot_rows, signature=sig, constexprs={"BLOCK": 64}, num_warps=4,
                             num_stages=1, target=target, use_cache=False)
        assert "prefetch" not in ck.asm["tir"]
        assert "prefetched = 2" in ck.asm["gir"], ck.asm["gir"][:3000]
        assert "cp.async" not in ck.asm["ptx"]
        staged = tritium.compile(_dot_rows, signature=sig, constexprs={"BLOCK": 64},
                                 num_warps=4, num_stages=3, target=target, use_cache=False)
        assert "prefetched" not in staged.asm["gir"]


@tritium.jit
def _grid_stride_rows(x_ptr, y_ptr, sums_ptr, rows, n, BLOCK: tl.constexpr):
    # Liger's dyt backward steps its row loop by the grid (tl.num_programs), a step known only
    # at run time.
    offs = tl.arange(0, BLOCK)
    m = offs < n
    total = 0.0
    for r in range(tl.program_id(0), rows, tl.num_programs(0)):
        x = tl.load(x_ptr + r * n + offs, mask=m, other=0.0)
        s = tl.sum(x * x, axis=0)
        total += s
        tl.store(y_ptr + r * n + offs, x * (1.0 / (s + 1.0)), mask=m)
    tl.store(sums_ptr + tl.program_id(0), total)


@pytest.mark.parametrize("programs", [1, 3])
@pytest.mark.parametrize("in_place", [False, True])
def test_a_runtime_step(programs, in_place):
    rows, n = 8, 100
    x0 = np.random.default_rng(12).standard_normal(rows * n).astype(np.float32)
    x64 = x0.astype(np.float64)
    want_y = np.empty_like(x64)
    want_sums = np.zeros(programs)
    for r in range(rows):
        row = x64[r * n:(r + 1) * n]
        s = (row * row).sum()
        want_sums[r % programs] += s
        want_y[r * n:(r + 1) * n] = row / (s + 1.0)
    sums = np.zeros(programs, np.float32)
    tk = _tile_kernel(_grid_stride_rows, (programs,), (x0.copy(), x0.copy(), sums, rows, n),
                      BLOCK=128)
    pk, stats = _prefetched(tk)
    assert stats["prefetch-loads.loops"] == 1 and stats["prefetch-loads.versioned"] == 1
    x = x0.copy()
    y = x if in_place else np.full_like(x0, np.nan)
    sums[:] = np.nan
    pk[(programs,)](x, y, sums, rows, n)
    np.testing.assert_allclose(y, want_y, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(sums, want_sums, rtol=1e-5)


@tritium.jit
def _weighted_rows(x_ptr, w_ptr, out_ptr, rows, n, BLOCK: tl.constexpr):
    # The layer-norm backward's shape: a row of sums carried through the loop and a weight row
    # read in it, both held in registers for the whole loop.
    offs = tl.arange(0, BLOCK)
    m = offs < n
    w = tl.load(w_ptr + offs, mask=m, other=0.0)
    acc = tl.zeros([BLOCK], tl.float32)
    total = 0.0
    for r in range(0, rows):
        x = tl.load(x_ptr + r * n + offs, mask=m, other=0.0)
        acc += x * w
        total += tl.sum(x, axis=0)
    tl.store(out_ptr + offs, acc + total, mask=m)


def test_what_the_loop_holds_counts_against_the_budget():
    # 8192 columns on 8 warps: the carried sums, the weight row and the offsets and mask take
    # 416 bytes a thread, and the row (128 bytes more) would pass half of its 255 registers.
    # At 2048 columns each takes a quarter of that.
    out = np.zeros(8192, np.float32)
    for block, prefetched in ((8192, 0), (2048, 1)):
        x = np.zeros(2 * block, np.float32)
        tk = _tile_kernel(_weighted_rows, (1,), (x, x[:block], out[:block], 2, block),
                          BLOCK=block)
        _, stats = _prefetched(tk, num_warps=8)
        assert stats["prefetch-loads.loops"] == prefetched, block
