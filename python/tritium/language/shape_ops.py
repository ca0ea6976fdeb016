"""tl.join, tl.split, tl.interleave, tl.cat, tl.histogram, tl.gather, tl.topk and tensor.item(),
built from ops the compiler already has (expand_dims, where, reshape, permute, a combine
reduction that picks one of two elements), so they run wherever those do: the CPU executor and
the GPU.

Every one of them is exact: elements are selected, never computed (a float's -0.0 and NaN
payloads survive), and histogram counts in int32."""
from . import core
from .combine import _bit, _combine_block, _pick
from .core import _builder, _unwrap, builtin, tensor


def _tensor(x, what):
    x = _unwrap(x)
    if not isinstance(x, tensor):
        x = core.full([], x, core.float32 if isinstance(x, float) else core.int32) \
            if isinstance(x, (int, float)) else x
    if not isinstance(x, tensor):
        raise TypeError(f"{what} expects tensors, got {x!r}")
    return x


@builtin
def join(a, b):
    """a and b (one dtype, broadcast to one shape) stacked along a new last dim of size 2."""
    a, b = _tensor(a, "tl.join"), _tensor(b, "tl.join")
    if a.dtype != b.dtype:
        raise TypeError(f"tl.join expects two tensors of one dtype, got {a.dtype} and {b.dtype}")
    if list(a.shape) != list(b.shape):
        a, b = core.broadcast(a, b)
    rank = len(a.shape)
    first = _bit(rank + 1, rank) == 0  # shape [1, ..., 1, 2]
    return core.where(first, core.expand_dims(a, rank), core.expand_dims(b, rank))


@builtin
def split(a):
    """The two halves of a's last dim, which must have size 2 (the inverse of tl.join)."""
    a = _tensor(a, "tl.split")
    shape = [int(_unwrap(s)) for s in a.shape]
    if not shape or shape[-1] != 2:
        raise ValueError(f"tl.split expects a last dim of size 2, got shape {shape}")
    axis = len(shape) - 1
    return _pick(a, axis, 0, False), _pick(a, axis, 1, False)


@builtin
def interleave(a, b):
    """a and b interleaved along their last dim: [a0, b0, a1, b1, ...]."""
    j = join(a, b)
    shape = [int(_unwrap(s)) for s in j.shape]
    if len(shape) == 1:
        return j
    return core.reshape(j, shape[:-2] + [2 * shape[-2]])


@builtin
def cat(input, other, can_reorder=False):
    """input and other (one shape and dtype) concatenated along dim 0. Triton only promises the
    elements in some order (can_reorder); this keeps them in order."""
    a, b = _tensor(input, "tl.cat"), _tensor(other, "tl.cat")
    if list(a.shape) != list(b.shape):
        raise ValueError(f"tl.cat expects two tensors of one shape, got {list(a.shape)} and "
                         f"{list(b.shape)}")
    shape = [int(_unwrap(s)) for s in a.shape]
    if not shape:
        raise ValueError("tl.cat expects tensors of rank 1 or more")
    j = join(a, b)  # [n, ..., 2]
    rank = len(shape)
    j = core.permute(j, [rank] + list(range(rank)))  # [2, n, ...]
    return core.reshape(j, [2 * shape[0]] + shape[1:])


@builtin
def histogram(input, num_bins, mask=None):
    """Counts (int32, shape [num_bins]) of input's values in each bin [k, k + 1) for k in
    0 .. num_bins - 1; values outside every bin, and masked-off elements, are not counted."""
    x = _tensor(input, "tl.histogram")
    if len(x.shape) != 1:
        raise ValueError(f"tl.histogram expects a 1-D tensor, got shape {list(x.shape)}")
    if not x.dtype.is_int():
        raise TypeError(f"tl.histogram expects integer values, got {x.dtype}")
    n = int(_unwrap(num_bins))
    bins = core.arange(0, n)
    hit = core.expand_dims(x, 1) == core.expand_dims(bins.to(x.dtype), 0)
    m = _unwrap(mask)
    if m is not None:
        hit = hit & core.expand_dims(_tensor(m, "tl.histogram's mask"), 1)
    return core.sum(hit.to(core.int32), 0)


def _item(self):
    """The one element of a one-element tensor, as a scalar."""
    shape = [int(_unwrap(s)) for s in self.shape]
    count = 1
    for s in shape:
        count *= s
    if count != 1:
        raise ValueError(f"item() needs a tensor of one element, got shape {shape}")
    y = self
    for axis in reversed(range(len(shape))):  # drop the size-1 dims, last first
        y = _pick(y, axis, 0, keep=False)
    return y


tensor.item = builtin(_item)


@builtin
def gather(src, index, axis):
    """out[..., i, ...] = src[..., index[..., i, ...], ...] along `axis` (index: integers, the
    rank of src, the other dims equal to src's): every candidate element is compared with the
    index and the hit is selected, so the work is index.numel() * src.shape[axis]."""
    src, index = _tensor(src, "tl.gather"), _tensor(index, "tl.gather")
    rank = len(src.shape)
    a = int(_unwrap(axis))
    if not -rank <= a < rank:
        raise ValueError(f"invalid axis {a} for tl.gather of a {rank}-D tensor")
    a %= rank
    if len(index.shape) != rank or not index.dtype.is_int():
        raise ValueError(f"tl.gather's index must be an integer tensor of rank {rank}")
    for d in range(rank):
        if d != a and int(_unwrap(index.shape[d])) != int(_unwrap(src.shape[d])):
            raise ValueError("tl.gather's index must match src's shape on every dim but the axis: "
                             f"{list(index.shape)} and {list(src.shape)}")
    n = int(_unwrap(src.shape[a]))
    # Dims [..., I_a, K, ...]: the candidate k of src's axis right after the output's.
    cand = [1] * (rank + 1)
    cand[a + 1] = n
    k = core.reshape(core.arange(0, n), cand)
    hit = core.expand_dims(index, a + 1) == k.to(index.dtype)
    vals = core.expand_dims(src, a)
    vals, hit = core.broadcast(vals, hit)

    def pick(lhs, rhs):  # the value whose candidate was hit, and whether one was
        return core.where(lhs[1], lhs[0], rhs[0]), lhs[1] | rhs[1]

    block = _combine_block([vals.handle, hit.handle], "tl.gather", pick)
    return tensor(_builder().reduce_combine([vals.handle, hit.handle], a + 1, False, block)[0])


@builtin
def topk(input, k, dim=None, descending=True):
    """The k largest elements along the last dim, largest first (k a power of two dividing it);
    with `descending=False` (a newer Triton's keyword) the k smallest, smallest first."""
    x = _tensor(input, "tl.topk")
    from .combine import sort  # noqa: PLC0415 (sort is a builtin of the same layer)
    shape = [int(_unwrap(s)) for s in x.shape]
    d = len(shape) - 1 if _unwrap(dim) is None else int(_unwrap(dim)) % len(shape)
    if d != len(shape) - 1:
        raise ValueError("tl.topk only supports the last dimension")
    kk = int(_unwrap(k))
    n = shape[-1]
    if kk <= 0 or kk & (kk - 1) or n % kk:
        raise ValueError(f"tl.topk's k must be a power of two dividing {n}, got {kk}")
    s = sort(x, d, descending=bool(_unwrap(descending)))
    if kk == n:
        return s
    groups = core.reshape(s, shape[:-1] + [n // kk, kk])
    y = groups
    # Keep the first group: halve the group dim, taking the front half, until it is gone.
    while int(_unwrap(y.shape[-2])) > 1:
        m = int(_unwrap(y.shape[-2]))
        y = core.reshape(y, shape[:-1] + [2, m // 2, kk])
        y = _pick(y, len(shape) - 1, 0, False)
    return core.reshape(y, shape[:-1] + [kk])
