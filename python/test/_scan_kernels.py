"""Kernels and numpy references shared by test_scan_cpu.py, test_gpu_scan.py and test_scan_ptx.py.

Blocks of rank 1-3 are addressed row-major with the constexpr extents A, B, C (unused ones 1)."""
import numpy as np

from harness import triton, tl

SHAPES = [(128,), (16, 32), (32, 16), (4, 8, 16), (8, 4, 32)]


@triton.jit
def _offsets(A: tl.constexpr, B: tl.constexpr, C: tl.constexpr, RANK: tl.constexpr):
    if RANK == 1:
        offs = tl.arange(0, A)
    elif RANK == 2:
        offs = tl.arange(0, A)[:, None] * B + tl.arange(0, B)[None, :]
    else:
        offs = (tl.arange(0, A)[:, None, None] * (B * C) + tl.arange(0, B)[None, :, None] * C +
                tl.arange(0, C)[None, None, :])
    return offs


@triton.jit
def _add(a, b):
    return a + b


@triton.jit
def _max(a, b):
    return tl.maximum(a, b)


@triton.jit
def scan_kernel(x_ptr, y_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr, AXIS: tl.constexpr,
                RANK: tl.constexpr, OP: tl.constexpr, REVERSE: tl.constexpr):
    offs = _offsets(A, B, C, RANK)
    x = tl.load(x_ptr + offs)
    if OP == "cumsum":
        y = tl.cumsum(x, AXIS, reverse=REVERSE)
    elif OP == "cumprod":
        y = tl.cumprod(x, axis=AXIS, reverse=REVERSE)
    elif OP == "assoc_add":
        y = tl.associative_scan(x, AXIS, _add, reverse=REVERSE)
    else:
        y = tl.associative_scan(x, AXIS, _max, REVERSE)
    tl.store(y_ptr + offs, y)


@triton.jit
def cumsum_dtype_kernel(x_ptr, y_ptr, N: tl.constexpr, DTYPE: tl.constexpr = None):
    offs = tl.arange(0, N)
    tl.store(y_ptr + offs, tl.cumsum(tl.load(x_ptr + offs), 0, dtype=DTYPE))


@triton.jit
def _recurrence(a1, b1, a2, b2):
    return a1 * a2, b1 * a2 + b2


@triton.jit
def linear_recurrence_kernel(a_ptr, b_ptr, oa_ptr, ob_ptr, A: tl.constexpr, B: tl.constexpr,
                             C: tl.constexpr, AXIS: tl.constexpr, RANK: tl.constexpr,
                             REVERSE: tl.constexpr):
    offs = _offsets(A, B, C, RANK)
    a, b = tl.associative_scan((tl.load(a_ptr + offs), tl.load(b_ptr + offs)), AXIS, _recurrence,
                               reverse=REVERSE)
    tl.store(oa_ptr + offs, a)
    tl.store(ob_ptr + offs, b)


@triton.jit
def reduce_kernel(x_ptr, out_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr,
                  AXIS: tl.constexpr, RANK: tl.constexpr, OA: tl.constexpr, OB: tl.constexpr,
                  OC: tl.constexpr, ORANK: tl.constexpr):
    x = tl.load(x_ptr + _offsets(A, B, C, RANK))
    r = tl.reduce(x, AXIS, _add)
    if ORANK == 0:
        tl.store(out_ptr, r)
    else:
        tl.store(out_ptr + _offsets(OA, OB, OC, ORANK), r)


@triton.jit
def _argmax_combine(v1, i1, v2, i2):
    better = (v2 > v1) | ((v2 == v1) & (i2 < i1))
    return tl.where(better, v2, v1), tl.where(better, i2, i1)


@triton.jit
def argmax_reduce_kernel(x_ptr, v_ptr, i_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr,
                         AXIS: tl.constexpr, RANK: tl.constexpr, STRIDE: tl.constexpr,
                         SIZE: tl.constexpr, OA: tl.constexpr, OB: tl.constexpr, OC: tl.constexpr,
                         ORANK: tl.constexpr):
    offs = _offsets(A, B, C, RANK)
    x = tl.load(x_ptr + offs)
    idx = (offs // STRIDE) % SIZE
    v, i = tl.reduce((x, idx), AXIS, _argmax_combine)
    if ORANK == 0:
        tl.store(v_ptr, v)
        tl.store(i_ptr, i)
    else:
        o = _offsets(OA, OB, OC, ORANK)
        tl.store(v_ptr + o, v)
        tl.store(i_ptr + o, i)


@triton.jit
def methods_kernel(x_ptr, s_ptr, p_ptr, r_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(s_ptr + offs, x.cumsum(0))
    tl.store(p_ptr + offs, x.cumprod(axis=0))
    tl.store(r_ptr + offs, x.reduce(0, _max) + tl.zeros_like(x))


# ---------------------------------------------------------------------------------------------
# references


def cumsum_out_dtype(dtype):
    """Triton's cumsum: ints narrower than 32 bits (bool counts as unsigned) sum in 32 bits."""
    d = np.dtype(dtype)
    if d == np.bool_:
        return np.dtype(np.uint32)
    if d.kind in "iu" and d.itemsize < 4:
        return np.dtype(np.int32 if d.kind == "i" else np.uint32)
    return d


def _sequential(xs, axis, reverse, combine):
    """The scan by definition: acc = combine(acc, next) along the axis."""
    xs = [np.moveaxis(np.asarray(x), axis, -1) for x in xs]
    outs = [np.empty_like(x) for x in xs]
    n = xs[0].shape[-1]
    order = range(n - 1, -1, -1) if reverse else range(n)
    acc = None
    with np.errstate(over="ignore"):
        for k in order:
            cur = [x[..., k] for x in xs]
            acc = cur if acc is None else list(combine(*acc, *cur))
            for o, a in zip(outs, acc):
                o[..., k] = a
    return [np.moveaxis(o, -1, axis) for o in outs]


def scan_ref(op, x, axis, reverse):
    if op == "recurrence":
        return _sequential(x, axis, reverse, lambda a1, b1, a2, b2: (a1 * a2, b1 * a2 + b2))
    if op == "cumsum":
        x = x.astype(cumsum_out_dtype(x.dtype))
    if op in ("cumsum", "assoc_add"):
        fn = lambda a, b: (a + b,)  # noqa: E731
    elif op == "cumprod":
        fn = lambda a, b: (a * b,)  # noqa: E731
    else:
        fn = lambda a, b: (np.maximum(a, b),)  # noqa: E731
    return _sequential([x], axis, reverse, fn)[0]


def reduce_ref(x, axis):
    return np.asarray(x.sum(axis=axis, dtype=x.dtype))


def out_dims(shape):
    """OA, OB, OC, ORANK of a result shape."""
    s = list(shape) + [1] * (3 - len(shape))
    return dict(OA=s[0], OB=s[1], OC=s[2], ORANK=len(shape))


@triton.jit
def sort_flip_kernel(x_ptr, y_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr,
                     RANK: tl.constexpr, OP: tl.constexpr, DIM: tl.constexpr,
                     DESCENDING: tl.constexpr):
    offs = _offsets(A, B, C, RANK)
    x = tl.load(x_ptr + offs)
    if OP == "sort":
        y = tl.sort(x, descending=DESCENDING)
    elif OP == "sort_method":
        y = x.sort(DIM, DESCENDING)
    else:
        y = tl.flip(x, DIM)
    tl.store(y_ptr + offs, y)


@triton.jit
def reduce_keep_dims_kernel(x_ptr, out_ptr, A: tl.constexpr, B: tl.constexpr, AXIS: tl.constexpr):
    offs = tl.arange(0, A)[:, None] * B + tl.arange(0, B)[None, :]
    x = tl.load(x_ptr + offs)
    r = tl.reduce(x, AXIS, _max, keep_dims=True)
    tl.static_assert(len(r.shape) == 2)
    tl.store(out_ptr + offs, x - r)  # broadcasts back over the reduced dim
