"""CPU tests of scans and reductions with a combine function, against numpy.

tl.cumsum / tl.cumprod / tl.associative_scan (one or several inputs, reverse) and tl.reduce with
a @jit combine, on 1-D, 2-D and 3-D blocks along every axis, on the CPU executor. Outputs are
poisoned before each launch. The GPU counterparts are in test_gpu_scan.py (the same kernels:
_scan_kernels.py); test_scan_ptx.py assembles their PTX.
"""

import numpy as np
import pytest

import tritium

from harness import AGAINST_TRITON, launch, poisoned, rand
from _scan_kernels import (
    SHAPES, argmax_reduce_kernel, cumsum_dtype_kernel, linear_recurrence_kernel, reduce_kernel,
    scan_kernel, scan_ref, reduce_ref, cumsum_out_dtype, out_dims,
)

pytestmark = pytest.mark.skipif(bool(AGAINST_TRITON), reason="tritium only (combine region text)")

DTYPES = [np.int8, np.int32, np.int64, np.uint8, np.float16, np.float32, np.float64]


def _tol(dtype):
    return {np.dtype(np.float16): 2e-2, np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-12}.get(
        np.dtype(dtype), 0)


def _check(out, ref):
    ref = np.asarray(ref)
    if ref.dtype.kind == "f":
        tol = _tol(ref.dtype)
        np.testing.assert_allclose(out.astype(np.float64), ref.astype(np.float64), rtol=tol,
                                   atol=tol * max(1.0, float(np.abs(ref.astype(np.float64)).max())))
    else:
        np.testing.assert_array_equal(out, ref)


def _run_scan(op, shape, axis, reverse, dtype, seed=0):
    rng = np.random.default_rng(seed)
    lo, hi = (-3, 3) if op != "cumprod" else (-2, 2)
    x = rand(rng, shape, dtype, lo=0 if np.dtype(dtype).kind == "u" else lo, hi=hi)
    if np.dtype(dtype).kind == "f" and op == "cumprod":
        x = (1.0 + 0.05 * rand(rng, shape, np.float64)).astype(dtype)
    out_dtype = cumsum_out_dtype(dtype) if op == "cumsum" else np.dtype(dtype)
    out = poisoned(shape, out_dtype)
    launch(scan_kernel, (1,), x, out, *_dims(shape), AXIS=axis, RANK=len(shape), OP=op,
           REVERSE=reverse)
    _check(out, scan_ref(op, x, axis, reverse))


def _dims(shape):
    s = list(shape) + [1] * (3 - len(shape))
    return dict(A=s[0], B=s[1], C=s[2]).values()


@pytest.mark.parametrize("op", ["cumsum", "cumprod", "assoc_add", "assoc_max"])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_scan_1d(op, dtype):
    for reverse in (False, True):
        _run_scan(op, (128,), 0, reverse, dtype)


@pytest.mark.parametrize("shape,axis", [(s, a) for s in SHAPES for a in range(-1, len(s))],
                         ids=str)
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("op", ["cumsum", "assoc_max"])
def test_scan_shapes(shape, axis, reverse, op):
    _run_scan(op, shape, axis, reverse, np.float32 if op == "cumsum" else np.int32)


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.int16, np.uint8, np.uint16, np.int64,
                                   np.float16, np.float32], ids=lambda d: np.dtype(d).name)
def test_cumsum_promotes_like_triton(dtype):
    """Triton sums small ints in 32 bits (bool as uint32) and keeps the others."""
    rng = np.random.default_rng(3)
    x = rand(rng, (64,), np.int8 if dtype == np.bool_ else dtype, lo=0, hi=100)
    x = (x % 2 == 1) if dtype == np.bool_ else x
    want = cumsum_out_dtype(dtype)
    out = poisoned((64,), want)
    launch(cumsum_dtype_kernel, (1,), x, out, N=64)
    _check(out, np.cumsum(x.astype(np.float64 if want.kind == "f" else np.int64)).astype(want))


def test_cumsum_dtype_argument():
    x = np.full(64, 100, np.int8)
    out = poisoned((64,), np.int64)
    launch(cumsum_dtype_kernel, (1,), x, out, N=64, DTYPE=tritium.language.int64)
    np.testing.assert_array_equal(out, np.cumsum(x.astype(np.int64)))


@pytest.mark.parametrize("shape,axis", [((64,), 0), ((8, 32), 1), ((32, 8), 0), ((4, 8, 16), 2),
                                        ((4, 8, 16), 1)], ids=str)
@pytest.mark.parametrize("reverse", [False, True])
def test_tuple_scan_linear_recurrence(shape, axis, reverse):
    """A two-input scan: h = a * h + b (the first-order recurrence of SSMs)."""
    rng = np.random.default_rng(1)
    a = (0.5 + 0.5 * rng.random(shape)).astype(np.float32)
    b = rng.standard_normal(shape).astype(np.float32)
    oa, ob = poisoned(shape, np.float32), poisoned(shape, np.float32)
    launch(linear_recurrence_kernel, (1,), a, b, oa, ob, *_dims(shape), AXIS=axis,
           RANK=len(shape), REVERSE=reverse)
    ra, rb = scan_ref("recurrence", (a, b), axis, reverse)
    _check(oa, ra)
    _check(ob, rb)


@pytest.mark.parametrize("shape,axis", [(s, a) for s in SHAPES for a in list(range(len(s))) + [None]],
                         ids=str)
@pytest.mark.parametrize("dtype", [np.int32, np.float32], ids=lambda d: np.dtype(d).name)
def test_reduce_combine(shape, axis, dtype):
    rng = np.random.default_rng(2)
    x = rand(rng, shape, dtype, lo=-50, hi=50)
    ref = reduce_ref(x, axis)
    out = poisoned(max(ref.size, 1), dtype)
    launch(reduce_kernel, (1,), x, out, *_dims(shape), AXIS=axis, RANK=len(shape),
           **out_dims(ref.shape))
    _check(out.reshape(ref.shape), ref)


@pytest.mark.parametrize("shape,axis", [((128,), 0), ((16, 32), 1), ((16, 32), 0), ((4, 8, 16), 1)],
                         ids=str)
def test_reduce_tuple_argmax(shape, axis):
    """(value, index) pairs reduced together: the first index of the maximum."""
    rng = np.random.default_rng(4)
    x = rng.integers(-20, 20, size=shape).astype(np.float32)  # many ties
    ref_v, ref_i = x.max(axis=axis), x.argmax(axis=axis)
    ov, oi = poisoned(ref_v.size, np.float32), poisoned(ref_i.size, np.int32)
    stride = int(np.prod(shape[axis + 1:]))
    launch(argmax_reduce_kernel, (1,), x, ov, oi, *_dims(shape), AXIS=axis, RANK=len(shape),
           STRIDE=stride, SIZE=shape[axis], **out_dims(ref_v.shape))
    np.testing.assert_array_equal(ov.reshape(ref_v.shape), ref_v)
    np.testing.assert_array_equal(oi.reshape(ref_i.shape), ref_i)


def test_tensor_methods():
    from _scan_kernels import methods_kernel
    x = np.arange(1, 33, dtype=np.float32) / 8
    s, p, r = (poisoned(32, np.float32) for _ in range(3))
    launch(methods_kernel, (1,), x, s, p, r, N=32)
    _check(s, np.cumsum(x))
    _check(p, np.cumprod(x))
    _check(r, np.full(32, x.max(), np.float32))


# ----------------------------------------------------------------------------------------------
# user errors: located at the call, with the reason


import inspect  # noqa: E402
import sys  # noqa: E402

from harness import triton, tl  # noqa: E402


@triton.jit
def _two_values(a, b):
    return a + b, a - b


@triton.jit
def _to_float(a, b):
    return (a + b).to(tl.float32)


@triton.jit
def _bad_combine_kernel(x_ptr, WHICH: tl.constexpr):
    offs = tl.arange(0, 16)
    x = tl.load(x_ptr + offs)
    if WHICH == 0:
        y = tl.associative_scan(x, 0, _two_values)  # ERR arity
    elif WHICH == 1:
        y = tl.reduce(x, 0, _to_float)  # ERR type
    elif WHICH == 2:
        y = tl.cumsum(x, axis=1)  # ERR axis
    else:
        y = tl.associative_scan(x, 0, tl.maximum)  # ERR notjit
    tl.store(x_ptr + offs, y)


def _line_of(marker):
    src = inspect.getsource(sys.modules[__name__]).splitlines()
    return next(i + 1 for i, t in enumerate(src) if t.rstrip().endswith(f"# ERR {marker}"))


@pytest.mark.parametrize("which,marker,pattern", [
    (0, "arity", r"combine function must return 1 value \(i32\), got 2"),
    (1, "type", r"combine function must return \(i32\).*got \(fp32\)|got \(f32\)"),
    (2, "axis", r"invalid axis 1"),
    (3, "notjit", r"combine_fn must be a @jit function"),
])
def test_combine_errors_are_located(which, marker, pattern):
    import re
    x = np.zeros(16, np.int32)
    with pytest.raises(tritium.CompilationError) as info:
        _bad_combine_kernel[(1,)](x, WHICH=which)
    e = info.value
    assert e.line == _line_of(marker), str(e)
    assert re.search(pattern, str(e)), str(e)
    assert "^" in str(e)


# ----------------------------------------------------------------------------------------------
# tl.sort and tl.flip (built from the combine reduction)


@pytest.mark.parametrize("shape", [(2,), (128,), (16, 32), (4, 8, 16)], ids=str)
@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint8, np.float16, np.float32],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("descending", [False, True])
def test_sort(shape, dtype, descending):
    from _scan_kernels import sort_flip_kernel
    rng = np.random.default_rng(5)
    x = rand(rng, shape, dtype, lo=0 if np.dtype(dtype).kind == "u" else -40, hi=40)
    out = poisoned(shape, dtype)
    launch(sort_flip_kernel, (1,), x, out, *_dims(shape), RANK=len(shape), OP="sort",
           DIM=len(shape) - 1, DESCENDING=descending)
    ref = np.sort(x, axis=-1)
    np.testing.assert_array_equal(out, np.flip(ref, -1) if descending else ref)


@pytest.mark.parametrize("shape,dim", [((128,), 0), ((16, 32), 1), ((16, 32), 0), ((4, 8, 16), 1),
                                       ((4, 8, 16), -1), ((8, 1), 1)], ids=str)
def test_flip(shape, dim):
    from _scan_kernels import sort_flip_kernel
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) - 7.5
    out = poisoned(shape, np.float32)
    launch(sort_flip_kernel, (1,), x, out, *_dims(shape), RANK=len(shape), OP="flip", DIM=dim,
           DESCENDING=False)
    np.testing.assert_array_equal(out, np.flip(x, dim))


def test_sort_method_and_errors():
    from _scan_kernels import sort_flip_kernel
    x = np.random.default_rng(6).standard_normal((8, 16)).astype(np.float32)
    out = poisoned((8, 16), np.float32)
    launch(sort_flip_kernel, (1,), x, out, 8, 16, 1, RANK=2, OP="sort_method", DIM=1,
           DESCENDING=True)
    np.testing.assert_array_equal(out, -np.sort(-x, axis=1))
    with pytest.raises(tritium.CompilationError, match="only supports sorting along the last"):
        sort_flip_kernel[(1,)](x, out, 8, 16, 1, RANK=2, OP="sort_method", DIM=0, DESCENDING=True)


@pytest.mark.parametrize("axis", [0, 1, None])
def test_reduce_keep_dims(axis):
    from _scan_kernels import reduce_keep_dims_kernel
    x = np.random.default_rng(7).standard_normal((8, 16)).astype(np.float32)
    out = poisoned((8, 16), np.float32)
    launch(reduce_keep_dims_kernel, (1,), x, out, A=8, B=16, AXIS=axis)
    np.testing.assert_array_equal(out, x - x.max(axis=axis, keepdims=True))


@triton.jit
def _promote_to_tensor(x):
    # Inductor's triton_helpers: a one-element tensor only to read a dtype.
    return x + tl.zeros((1,), tl.int1)


@triton.jit
def _minimum_nan(a, b):
    mask = a < b
    if _promote_to_tensor(a).dtype.is_floating():
        mask |= a != a
    return tl.where(mask, a, b)


@triton.jit
def _min_rows_kernel(x_ptr, out_ptr, R: tl.constexpr, C: tl.constexpr):
    rows = tl.arange(0, R)
    x = tl.load(x_ptr + rows[:, None] * C + tl.arange(0, C)[None, :])
    tl.store(out_ptr + rows, tl.reduce(x, 1, _minimum_nan))


def test_combine_with_dead_tensor_code():
    """A combine that builds a tensor it only reads the dtype of (Inductor's min/max helpers):
    the dead tensor passes the verifier (which runs after every pass in tests) and is removed
    before lowering; NaN propagates as in torch.amin."""
    x = np.random.default_rng(3).standard_normal((8, 16)).astype(np.float32)
    x[2, 5] = np.nan
    out = poisoned((8,), np.float32)
    launch(_min_rows_kernel, (1,), x, out, R=8, C=16)
    want = x.min(axis=1)
    np.testing.assert_array_equal(np.isnan(out), np.isnan(want))
    np.testing.assert_array_equal(out[~np.isnan(want)], want[~np.isnan(want)])
    k = tritium.compile(_min_rows_kernel, signature={"x_ptr": "*fp32", "out_ptr": "*fp32"},
                        constexprs={"R": 8, "C": 16}, target="sm_90a", use_cache=False)
    assert "tensor<1xi1>" not in k.asm["gir"]
