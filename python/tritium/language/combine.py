"""tl.reduce and tl.associative_scan with a @jit combine function, and the
scans built on them (cumsum, cumprod).

The combine function is compiled once per call site into the op's combine
region: a block of scalar arguments (the accumulated values, then the next
ones) that ends with tt.combine.return. It is called there like any @jit
function (a tt.call the inline pass later inlines), so it may call other
@jit functions and use any scalar operation."""
import contextlib

from . import core
from .core import _builder, _unwrap, _axis, builtin, tensor


@contextlib.contextmanager
def generating(generator):
    """Makes `generator` (the code generator of the function being built) the
    one that compiles combine functions while a builtin runs."""
    previous = getattr(core._state, "generator", None)
    core._state.generator = generator
    try:
        yield
    finally:
        core._state.generator = previous


def _inputs(input, what):
    """(list of tensors, whether the user passed a tuple)."""
    x = _unwrap(input)
    is_tuple = isinstance(x, (tuple, list))
    items = list(x) if is_tuple else [x]
    if not items:
        raise TypeError(f"{what} expects at least one input tensor")
    for t in items:
        if not isinstance(_unwrap(t), tensor):
            raise TypeError(f"{what} expects a tensor or a tuple of tensors, got {t!r}")
    return [_unwrap(t) for t in items], is_tuple


def _combine_block(handles, what, body):
    """The combine region: `body(lhs, rhs)` (lists of scalar tensors) returns
    the combined values, built into a detached block the op then takes."""
    b = _builder()
    ip = b.save_ip()
    block = b.new_combine_block(handles, what)
    try:
        b.set_insertion_point_to_end(block)
        args = [tensor(a) for a in block.args]
        n = len(handles)
        out = body(args[:n], args[n:])
        out = _unwrap(out)
        out = list(out) if isinstance(out, (tuple, list)) else [out]
        values = []
        for v in out:
            v = _unwrap(v)
            if not isinstance(v, tensor):
                raise TypeError(f"the combine function of {what} must return tensors, "
                                f"got {v!r}")
            values.append(v.handle)
        b.combine_return(values)
    finally:
        b.restore_ip(ip)
    return block


def _jit_body(combine_fn, what):
    fn = _unwrap(combine_fn)
    if not getattr(fn, "__tritium_jit__", False):
        raise TypeError(f"{what}'s combine_fn must be a @jit function, got {fn!r}")
    generator = getattr(core._state, "generator", None)
    if generator is None:
        raise RuntimeError(f"{what} needs the code generator of a kernel")

    def body(lhs, rhs):
        return generator.call_jit(fn, lhs + rhs, {})

    return body


def _results(handles, is_tuple):
    out = tuple(tensor(h) for h in handles)
    return out if is_tuple else out[0]


@builtin
def associative_scan(input, axis, combine_fn, reverse=False):
    """The inclusive scan of `input` (a tensor or a tuple of tensors of one
    shape) along `axis` with the associative `combine_fn(*lhs, *rhs)`; from
    the end when `reverse`."""
    xs, is_tuple = _inputs(input, "tl.associative_scan")
    handles = [x.handle for x in xs]
    block = _combine_block(handles, "tl.associative_scan",
                           _jit_body(combine_fn, "tl.associative_scan"))
    axis = _axis(axis)
    if axis is None:
        raise TypeError("tl.associative_scan needs an axis")
    return _results(_builder().scan(handles, axis, bool(_unwrap(reverse)), block), is_tuple)


@builtin
def reduce(input, axis, combine_fn, keep_dims=False):
    """Reduces `input` (a tensor or a tuple of tensors of one shape) along
    `axis` (all axes when None) with the associative `combine_fn(*lhs, *rhs)`."""
    xs, is_tuple = _inputs(input, "tl.reduce")
    handles = [x.handle for x in xs]
    block = _combine_block(handles, "tl.reduce", _jit_body(combine_fn, "tl.reduce"))
    return _results(_builder().reduce_combine(handles, _axis(axis), bool(_unwrap(keep_dims)),
                                              block), is_tuple)


def _scan_with(input, axis, reverse, op, what):
    x = _unwrap(input)
    if not isinstance(x, tensor):
        raise TypeError(f"{what} expects a tensor, got {x!r}")
    b = _builder()
    block = _combine_block([x.handle], what,
                           lambda lhs, rhs: tensor(b.binary(op, lhs[0].handle, rhs[0].handle)))
    axis = _axis(axis)
    if axis is None:
        raise TypeError(f"{what} needs an axis")
    return tensor(b.scan([x.handle], axis, bool(_unwrap(reverse)), block)[0])


@builtin
def cumsum(input, axis=0, reverse=False, dtype=None):
    """Inclusive prefix sum. As Triton: bf16 sums in fp32; ints narrower
    than 32 bits (and bool) sum in int32 / uint32 by their signedness, unless
    `dtype` says otherwise."""
    x = _unwrap(input)
    if isinstance(x, tensor):
        d = _unwrap(dtype)
        if d is not None:
            x = core.cast(x, d)
        elif x.dtype.name == "bf16":
            x = core.cast(x, core.float32)
        elif x.dtype.is_int() and x.dtype.primitive_bitwidth < 32:
            x = core.cast(x, core.int32 if x.dtype.is_int_signed() else core.uint32)
    return _scan_with(x, axis, reverse, "add", "tl.cumsum")


@builtin
def cumprod(input, axis=0, reverse=False):
    """Inclusive prefix product (bf16 multiplies in fp32, as in Triton)."""
    x = _unwrap(input)
    if isinstance(x, tensor) and x.dtype.name == "bf16":
        x = core.cast(x, core.float32)
    return _scan_with(x, axis, reverse, "mul", "tl.cumprod")


# The tensor methods (x.cumsum(0), ...), as in Triton.
def _reduce_method(self, axis, combine_fn, keep_dims=False):
    return reduce(self, axis, combine_fn, keep_dims)


def _associative_scan_method(self, axis, combine_fn, reverse=False):
    return associative_scan(self, axis, combine_fn, reverse)


def _cumsum_method(self, axis=0, reverse=False, dtype=None):
    return cumsum(self, axis, reverse, dtype)


def _cumprod_method(self, axis=0, reverse=False):
    return cumprod(self, axis, reverse)


tensor.reduce = _reduce_method
tensor.associative_scan = _associative_scan_method
tensor.cumsum = _cumsum_method
tensor.cumprod = _cumprod_method


# ---------------------------------------------------------------------------
# tl.flip and tl.sort: built from reshapes, picks and selects
# ---------------------------------------------------------------------------
# A dim of size n = 2^L is reshaped into L dims of size 2 (the bits of the
# index, most significant first). Picking one half of a size-2 dim is a
# reduction whose combine returns its first (or last) argument: exact for
# every dtype (no arithmetic), and lowered like any tl.reduce.


def _pick(y, axis, which, keep=True):
    """The elements of y at index `which` (0 or 1) of its size-2 dim `axis`
    (kept, of size 1, when `keep`; a size-1 dim picks its one element)."""
    b = _builder()
    block = _combine_block([y.handle], "tl.flip",
                           lambda lhs, rhs: rhs[0] if which else lhs[0])
    return tensor(b.reduce_combine([y.handle], axis, keep, block)[0])


def _bit(rank, axis):
    """0/1 along dim `axis` of a rank-`rank` block (size 2 there, 1 elsewhere)."""
    shape = [1] * rank
    shape[axis] = 2
    return core.reshape(core.arange(0, 2), shape)


def _split_bits(x, dim, what):
    shape = [int(_unwrap(s)) for s in x.shape]
    n = shape[dim]
    levels = n.bit_length() - 1
    if n != 1 << levels:
        raise ValueError(f"{what} needs a power-of-two dimension, got {n}")
    return shape, levels, core.reshape(x, shape[:dim] + [2] * levels + shape[dim + 1:])


def _dim(x, dim, what):
    rank = len(x.shape)
    d = rank - 1 if _unwrap(dim) is None else int(_unwrap(dim))
    if not -rank <= d < rank:
        raise ValueError(f"invalid dim {d} for {what} of a {rank}-D tensor")
    return d % rank


@builtin
def flip(x, dim=None):
    """x reversed along `dim` (the last dim when None)."""
    x = _unwrap(x)
    d = _dim(x, dim, "tl.flip")
    shape, levels, y = _split_bits(x, d, "tl.flip")
    if levels == 0:
        return x
    rank = len(y.shape)
    for a in range(d, d + levels):
        lo, hi = _pick(y, a, 0), _pick(y, a, 1)
        y = core.where(_bit(rank, a) == 0, hi, lo)
    return core.reshape(y, shape)


@builtin
def sort(x, dim=None, descending=False):
    """x sorted along `dim` (only the last dim, as in Triton), ascending
    unless `descending`: a bitonic network of compare-and-swap steps."""
    x = _unwrap(x)
    rank0 = len(x.shape)
    d = _dim(x, dim, "tl.sort")
    if d != rank0 - 1:
        raise ValueError("tl.sort only supports sorting along the last dimension")
    desc = bool(_unwrap(descending))
    shape, levels, y = _split_bits(x, d, "tl.sort")
    rank = len(y.shape)

    def bit_axis(b):  # the dim of index bit b (0: least significant)
        return d + levels - 1 - b

    for stage in range(levels):
        # Blocks of 2^(stage+1) sorted alternately up and down (bit stage+1
        # of the index says which); the last stage sorts the whole dim.
        flipped = None if stage + 1 == levels else _bit(rank, bit_axis(stage + 1)) == 1
        for b in range(stage, -1, -1):
            a = bit_axis(b)
            lo, hi = _pick(y, a, 0), _pick(y, a, 1)
            up, down = (hi < lo), (lo < hi)
            if desc:
                up, down = down, up
            out_of_order = up if flipped is None else core.where(flipped, down, up)
            partner = core.where(_bit(rank, a) == 0, hi, lo)
            y = core.where(out_of_order, partner, y)
    return core.reshape(y, shape)


def _flip_method(self, dim=None):
    return flip(self, dim)


def _sort_method(self, dim=None, descending=False):
    return sort(self, dim, descending)


tensor.flip = _flip_method
tensor.sort = _sort_method
