"""Block pointers (`tl.make_block_ptr`, `tl.advance`) and tensor descriptors
(`tl.make_tensor_descriptor`, a host `TensorDescriptor` argument).

Both are frontend values, not IR types: a small Python object holding scalar
IR values (base pointer, shape, strides and, for a block pointer, offsets)
plus the compile-time block shape. A load or store through one expands here
into a tensor of pointers and a bounds mask:

    ptrs = base + sum over d of (offset_d + arange(0, B_d)) * stride_d
    mask = AND over the checked d of 0 <= offset_d + arange(0, B_d) < shape_d

so everything downstream (axis analysis, coalescing, cp.async pipelining on
the GPU, the CPU executor) sees the plain masked loads and stores it already
handles, and the TMA lowering can later match this shape or replace it.

Where a value must cross a block boundary (a loop-carried variable, an
`if`'s result, an argument or result of a @jit helper) the code generator
flattens the object into its scalar components (`_components`) and rebuilds
it (`_with_components`); only the components that change are carried, so a
loop that only advances offsets keeps its base, shape and strides invariant
(and constant strides constant, which the axis analysis needs to vectorise).
"""

from . import core
from .core import (_builder, _unwrap, _unwrap_deep, builtin, constexpr, literal_value,
                   tensor)

_PADDINGS = ("", "zero", "nan")


def _is_pow2(n):
    return n > 0 and n & (n - 1) == 0


def _block_shape(block_shape, what):
    """block_shape as a tuple of Python ints (constexpr, powers of two)."""
    bs = _unwrap(block_shape)
    if not isinstance(bs, (tuple, list)):
        bs = [bs]
    out = []
    for i, d in enumerate(bs):
        d = literal_value(d)
        if isinstance(d, tensor):
            raise TypeError(f"{what}: Expected a list of constant integers (`int32_t` range) "
                            f"in `block_shape`; element {i} is only known at run time")
        if isinstance(d, bool) or not isinstance(d, int) or not -2**31 <= d < 2**31:
            raise TypeError(f"{what}: Expected a list of constant integers (`int32_t` range) "
                            f"in `block_shape`, got {d!r} as element {i}")
        if not _is_pow2(d):
            raise ValueError(f"{what}: Shape element {i} must be a power of 2, got {d}")
        out.append(d)
    if not out:
        raise ValueError(f"{what}: block_shape must have at least one dimension")
    return tuple(out)


def _sequence(x, what):
    x = _unwrap(x)
    if isinstance(x, (tuple, list)):
        return list(x)
    return [x]


def _scalar(x, ir_dtype, what):
    """An integer scalar (constexpr, literal or scalar tensor) as a scalar
    tensor of `ir_dtype`."""
    b = _builder()
    x = _unwrap(x)
    if isinstance(x, tensor) and x._literal is None:
        if x.type.is_block():
            raise TypeError(f"{what} must be a scalar, got a tensor of shape "
                            f"{list(x.type.shape)}")
        if not x.dtype.is_int():
            raise TypeError(f"{what} must be an integer, got {x.dtype}")
        if x.dtype.ir_name == ir_dtype:
            return x
        return tensor(b.cast(x.handle, ir_dtype, False))
    x = literal_value(x)
    if isinstance(x, bool) or not isinstance(x, int):
        raise TypeError(f"{what} must be an integer, got {x!r}")
    return tensor(b.const_int(x, ir_dtype))


def _padding(padding_option, dtype, what):
    p = _unwrap(padding_option)
    if p is None:
        p = ""
    if not isinstance(p, str) or p not in _PADDINGS:
        raise ValueError(f"{what}: Padding option {p} not supported (expected \"zero\", "
                         "\"nan\" or \"\")")
    if p == "nan" and not dtype.is_floating():
        raise ValueError(f"{what}: Padding option `nan` is not supported for integer blocks "
                         f"(the element type is {dtype})")
    return p


def _base_pointer(base, what):
    base = _unwrap(base)
    if not isinstance(base, tensor) or base.type.is_block() or not base.dtype.is_ptr():
        raise TypeError(f"{what}: Expected `base` to be a pointer type (a scalar pointer, not "
                        f"a tensor of pointers or a block pointer), got {base!r}")
    return base


def _pointers_and_mask(base, shape, strides, offsets, block_shape, checked, per_dim=False):
    """The pointer tensor and the mask (None when nothing is checked) of a
    block at `offsets` (see the module doc). per_dim: advance the pointer one
    dim at a time (a descriptor's: its last stride is 1) instead of adding
    the sum of every dim's offsets."""
    b = _builder()
    rank = len(block_shape)
    ptrs = base.handle
    total = None
    mask = None
    for d in range(rank):
        idx = b.binary("add", b.arange(0, block_shape[d]), offsets[d].handle)
        for _ in range(d):
            idx = b.expand_dims(idx, 0)
        for k in range(d + 1, rank):
            idx = b.expand_dims(idx, k)
        term = b.binary("mul", b.cast(idx, "i64", False), strides[d].handle)
        if per_dim:
            # base + rows * stride is then a thin tensor that a K loop's pipeliner computes
            # once (lib/gpu/pipeline_loops.cpp), and each iteration adds its contiguous
            # columns; the sum of every dim's offsets is a full tile computed each
            # iteration. Not for block pointers, whose last stride may be a runtime value:
            # with an address per element, the per-dim form holds more registers (the
            # tutorial's block-pointer matmul at 128x128x64 spilled 660 bytes).
            ptrs = b.binary("add", ptrs, term)
        else:
            total = term if total is None else b.binary("add", total, term)
        if d in checked:
            inside = b.binary("logical_and", b.binary("ge", idx, 0),
                              b.binary("lt", idx, shape[d].handle))
            mask = inside if mask is None else b.binary("logical_and", mask, inside)
    if total is not None:
        ptrs = b.binary("add", ptrs, total)
    if mask is not None:
        mask = b.broadcast_to(mask, list(block_shape))
    return ptrs, mask


def _descriptor_block(base, shape, strides, offsets, block_shape, padding):
    """One tt.descriptor_load of the block at `offsets`: the op the GPU compile copies with
    TMA where it can (expand-descriptor-loads expands it into the masked load of
    _pointers_and_mask(..., per_dim=True) everywhere else)."""
    return tensor(_builder().descriptor_load(
        base.handle, [s.handle for s in shape], [s.handle for s in strides],
        [o.handle for o in offsets], list(block_shape), padding))


def _other(padding, dtype):
    if padding == "":
        return None
    if padding == "nan":
        return float("nan")
    return 0.0 if dtype.is_floating() else 0


def _store_value(value, block_shape, what):
    v = _unwrap(value)
    if isinstance(v, tensor) and v.type.is_block() and tuple(v.type.shape) != block_shape:
        raise ValueError(f"{what}: Block shape({list(block_shape)}) and value "
                         f"shape({list(v.type.shape)}) mismatch")
    if isinstance(v, tensor) and not v.type.is_block():
        return _builder().broadcast_to(v.handle, list(block_shape))
    return core._operand(v, "value")


class _Aggregate:
    """What the code generator needs to carry a block pointer or descriptor
    through control flow and calls: its scalar IR components, a copy with
    other components, and the static part that must agree between paths."""

    _tritium_aggregate = True

    def _components(self):
        raise NotImplementedError

    def _with_components(self, values):
        raise NotImplementedError

    def _static_key(self):
        raise NotImplementedError

    def _component_names(self):
        raise NotImplementedError

    def _with_component(self, i, value):
        values = list(self._components())
        values[i] = value
        return self._with_components(values)


def is_aggregate(v):
    return getattr(type(v), "_tritium_aggregate", False)


# ---------------------------------------------------------------------------
# Block pointers
# ---------------------------------------------------------------------------


class block_pointer(_Aggregate):
    """The value of `tl.make_block_ptr`: shape and strides as int64 scalars,
    offsets as int32 scalars (Triton's types), block_shape and order constexpr."""

    def __init__(self, base, shape, strides, offsets, block_shape, order, unit_last=False):
        self.base = base
        self.shape = list(shape)
        self.strides = list(strides)
        self.offsets = list(offsets)
        self.block_shape = tuple(block_shape)
        self.order = tuple(order)
        # The last stride is the constant 1: a fully bounds-checked load is then a
        # tensor descriptor's block (see _tritium_load).
        self.unit_last = unit_last

    def __repr__(self):
        return f"block_pointer({self.base.dtype.element_ty}, {list(self.block_shape)})"

    @property
    def element_ty(self):
        """The type of the elements the block pointer points at."""
        return self.base.dtype.element_ty

    @property
    def dtype(self):
        # As Triton's: a pointer to the block (`.dtype.element_ty` is the block's type,
        # which x.to() takes as its element type).
        return self.type

    @property
    def type(self):
        return core.pointer_type(core.block_type(self.element_ty, self.block_shape))

    def _components(self):
        return [self.base] + self.shape + self.strides + self.offsets

    def _component_names(self):
        r = range(len(self.block_shape))
        return (["base"] + [f"shape[{d}]" for d in r] + [f"strides[{d}]" for d in r]
                + [f"offsets[{d}]" for d in r])

    def _with_components(self, values):
        r = len(self.block_shape)
        return block_pointer(values[0], values[1:1 + r], values[1 + r:1 + 2 * r],
                             values[1 + 2 * r:1 + 3 * r], self.block_shape, self.order,
                             self.unit_last)

    def _static_key(self):
        return ("block_pointer", self.block_shape, self.order, self.unit_last)

    def advance(self, offsets):
        return advance(self, offsets)

    # tl.load / tl.store dispatch here (see core.load and core.store).
    def _tritium_load(self, mask, other, boundary_check, padding_option):
        what = "tl.load"
        if _unwrap(mask) is not None or _unwrap(other) is not None:
            raise ValueError("`mask` and `other` arguments cannot be specified for loading "
                             "block pointers (use boundary_check and padding_option)")
        padding = _padding(padding_option, self.element_ty, what)
        checked = _boundary_check(boundary_check, len(self.block_shape), what)
        rank = len(self.block_shape)
        if self.unit_last and checked == tuple(range(rank)) and self.element_ty != core.int1:
            # Every dim checked, rows contiguous: a descriptor's block (the same elements and
            # padding).
            return _descriptor_block(self.base, self.shape, self.strides, self.offsets,
                                     self.block_shape, padding or "zero")
        ptrs, m = _pointers_and_mask(self.base, self.shape, self.strides, self.offsets,
                                     self.block_shape, checked)
        return tensor(_builder().load(ptrs, m, _other(padding, self.element_ty) if m is not None
                                      else None))

    def _tritium_store(self, value, mask, boundary_check):
        what = "tl.store"
        if _unwrap(mask) is not None:
            raise ValueError("`mask` argument cannot be specified for storing block pointers "
                             "(use boundary_check)")
        checked = _boundary_check(boundary_check, len(self.block_shape), what)
        v = _store_value(value, self.block_shape, what)
        ptrs, m = _pointers_and_mask(self.base, self.shape, self.strides, self.offsets,
                                     self.block_shape, checked)
        _builder().store(ptrs, v, m)


def _boundary_check(boundary_check, rank, what):
    bc = _unwrap_deep(boundary_check)
    if bc is None or bc == () or bc == []:
        return ()
    if not isinstance(bc, (tuple, list)):
        bc = [bc]
    dims = []
    for d in bc:
        d = literal_value(d)
        if isinstance(d, bool) or not isinstance(d, int):
            raise TypeError(f"{what}: boundary_check must list constexpr dimensions, got "
                            f"{d!r}")
        if not 0 <= d < rank:
            raise ValueError(f"{what}: boundary_check dimension {d} is out of range for a "
                             f"block of rank {rank} (expected 0 <= dim < {rank})")
        dims.append(d)
    if len(set(dims)) != len(dims):
        raise ValueError(f"{what}: Duplicate dimension in `boundary_check`: {dims}")
    return tuple(sorted(dims))


@builtin
def make_block_ptr(base, shape, strides, offsets, block_shape, order):
    """A pointer to a `block_shape` block of the `shape` tensor at `base`
    (row strides `strides`), starting at `offsets`; `order` is a layout hint
    (the dimensions from fastest- to slowest-varying) and changes no result."""
    what = "tl.make_block_ptr"
    base = _base_pointer(base, what)
    bs = _block_shape(block_shape, what)
    order = [literal_value(o) for o in _unwrap_deep(_sequence(order, what))]
    if sorted(order) != list(range(len(order))):
        raise ValueError(f"{what}: Expected a permutation of (0, 1, ..., len(order)-1) in "
                         f"order, got {tuple(order)}")
    shape, strides = _sequence(shape, what), _sequence(strides, what)
    offsets = _sequence(offsets, what)
    if not all(len(x) == len(bs) for x in (shape, strides, offsets, order)):
        raise ValueError(f"{what}: Expected shape/strides/offsets/block_shape to have the same "
                         f"length (got {len(shape)}, {len(strides)}, {len(offsets)}, {len(bs)}; "
                         f"order {len(order)})")
    last = literal_value(_unwrap(strides[-1]))
    unit_last = not isinstance(last, tensor) and last == 1
    shape = [_scalar(s, "i64", f"{what}'s shape[{i}]") for i, s in enumerate(shape)]
    strides = [_scalar(s, "i64", f"{what}'s strides[{i}]") for i, s in enumerate(strides)]
    offsets = [_scalar(s, "i32", f"{what}'s offsets[{i}]") for i, s in enumerate(offsets)]
    return block_pointer(base, shape, strides, offsets, bs, order, unit_last)


@builtin
def advance(base, offsets):
    """The block pointer `base` moved by `offsets` (one per dimension)."""
    what = "tl.advance"
    ptr = _unwrap(base)
    if not isinstance(ptr, block_pointer):
        raise TypeError(f"{what} expects a block pointer (tl.make_block_ptr), got {ptr!r}")
    deltas = _sequence(offsets, what)
    if len(deltas) != len(ptr.block_shape):
        raise ValueError(f"{what}: Expected {len(ptr.block_shape)} offsets (the block "
                         f"pointer's rank), got {len(deltas)}")
    new = []
    for i, (o, delta) in enumerate(zip(ptr.offsets, deltas)):
        delta = literal_value(delta)
        if not isinstance(delta, tensor) and delta == 0:
            new.append(o)  # unchanged: not loop-carried when advancing in a loop
            continue
        delta = _scalar(delta, "i32", f"{what}'s offsets[{i}]")
        new.append(tensor(_builder().binary("add", o.handle, delta.handle)))
    return block_pointer(ptr.base, ptr.shape, ptr.strides, new, ptr.block_shape, ptr.order,
                         ptr.unit_last)


# ---------------------------------------------------------------------------
# Tensor descriptors
# ---------------------------------------------------------------------------


class tensor_descriptor(_Aggregate):
    """The value of `tl.make_tensor_descriptor` or of a host TensorDescriptor
    argument: shape as int32 scalars and strides as int64 scalars (Triton's
    types), block_shape constexpr. Every load is bounds-checked in every
    dimension and padded with zeros (or NaN with padding_option="nan")."""

    def __init__(self, base, shape, strides, block_shape, padding):
        self.base = base
        self._shape = list(shape)
        self._strides = list(strides)
        self._block_shape = tuple(block_shape)
        self.padding = padding

    def __repr__(self):
        return f"tensor_descriptor({self.dtype}, {list(self._block_shape)})"

    @property
    def dtype(self):
        return self.base.dtype.element_ty

    @property
    def shape(self):
        return list(self._shape)

    @property
    def strides(self):
        return list(self._strides)

    @property
    def block_shape(self):
        return [constexpr(d) for d in self._block_shape]

    @property
    def block_type(self):
        return core.block_type(self.dtype, self._block_shape)

    def _components(self):
        return [self.base] + self._shape + self._strides

    def _component_names(self):
        r = range(len(self._block_shape))
        return ["base"] + [f"shape[{d}]" for d in r] + [f"strides[{d}]" for d in r]

    def _with_components(self, values):
        r = len(self._block_shape)
        return tensor_descriptor(values[0], values[1:1 + r], values[1 + r:1 + 2 * r],
                                 self._block_shape, self.padding)

    def _static_key(self):
        return ("tensor_descriptor", self._block_shape, self.padding)

    def _offsets(self, offsets, what):
        offs = _sequence(offsets, what)
        if len(offs) != len(self._block_shape):
            raise ValueError(f"{what}: Expected {len(self._block_shape)} offsets (the "
                             f"descriptor's rank), got {len(offs)}")
        return [_scalar(o, "i32", f"{what}'s offsets[{i}]") for i, o in enumerate(offs)]

    def _access(self, offsets, what):
        offs = self._offsets(offsets, what)
        return _pointers_and_mask(self.base, self._shape, self._strides, offs,
                                  self._block_shape, tuple(range(len(offs))), per_dim=True)

    def load(self, offsets):
        if self.dtype != core.int1:
            return _descriptor_block(self.base, self._shape, self._strides,
                                     self._offsets(offsets, "desc.load"), self._block_shape,
                                     self.padding or "zero")
        ptrs, mask = self._access(offsets, "desc.load")
        pad = _other(self.padding or "zero", self.dtype)
        return tensor(_builder().load(ptrs, mask, pad))

    def store(self, offsets, value):
        v = _store_value(value, self._block_shape, "desc.store")
        if self.dtype != core.int1:
            # tt.descriptor_store: expand-descriptor-loads makes it the masked store below
            # in the GPU compile; the executor runs it as one.
            _builder().descriptor_store(self.base.handle, [s.handle for s in self._shape],
                                        [s.handle for s in self._strides],
                                        [o.handle for o in self._offsets(offsets, "desc.store")],
                                        v)
            return
        ptrs, mask = self._access(offsets, "desc.store")
        _builder().store(ptrs, v, mask)

    def _rows(self, x_offsets, y_offset, what):
        """Pointers and mask of rows `x_offsets` (a 1-D integer tensor), columns
        y_offset .. y_offset + block_shape[1]: Triton's TMA gather/scatter, which
        need a 2-D descriptor with 1-row blocks, at least 8 rows and 32 bytes of
        columns. Out-of-bounds rows and columns read `padding`, store nothing."""
        if len(self._block_shape) != 2:
            raise ValueError(f"{what}: descriptor must be 2D, but got {list(self._block_shape)}")
        if self._block_shape[0] != 1:
            raise ValueError(f"{what}: descriptor block must have 1 row, but got "
                             f"{list(self._block_shape)}")
        xs = _unwrap(x_offsets)
        if not isinstance(xs, tensor) or not xs.type.is_block() or len(xs.type.shape) != 1 \
                or not xs.dtype.is_int():
            raise ValueError(f"{what}: x offsets must be a 1D integer tensor, got {xs!r}")
        n = xs.type.shape[0]
        if n < 8:
            raise ValueError(f"{what}: descriptor gather must have at least 8 rows, but got "
                             f"[{n}]")
        cols = self._block_shape[1]
        min_cols = 32 // self.dtype.primitive_bitwidth * 8
        if cols < min_cols:
            raise ValueError(f"{what}: descriptor gather of {self.dtype} must have at least "
                             f"{min_cols} columns, but got {cols}")
        b = _builder()
        y = _scalar(y_offset, "i32", f"{what}'s y offset")
        rows = b.expand_dims(b.cast(xs.handle, "i32", False), 1)
        col = b.expand_dims(b.binary("add", b.arange(0, cols), y.handle), 0)
        offs = b.binary("add",
                        b.binary("mul", b.cast(rows, "i64", False), self._strides[0].handle),
                        b.binary("mul", b.cast(col, "i64", False), self._strides[1].handle))
        inside_r = b.binary("logical_and", b.binary("ge", rows, 0),
                            b.binary("lt", rows, self._shape[0].handle))
        inside_c = b.binary("logical_and", b.binary("ge", col, 0),
                            b.binary("lt", col, self._shape[1].handle))
        mask = b.binary("logical_and", b.broadcast_to(inside_r, [n, cols]),
                        b.broadcast_to(inside_c, [n, cols]))
        ptrs = b.binary("add", self.base.handle, b.broadcast_to(offs, [n, cols]))
        return ptrs, mask, (n, cols)

    def gather(self, x_offsets, y_offset):
        ptrs, mask, _ = self._rows(x_offsets, y_offset, "desc.gather")
        pad = _other(self.padding or "zero", self.dtype)
        return tensor(_builder().load(ptrs, mask, pad))

    def scatter(self, value, x_offsets, y_offset):
        ptrs, mask, shape = self._rows(x_offsets, y_offset, "desc.scatter")
        v = _store_value(value, shape, "desc.scatter")
        _builder().store(ptrs, v, mask)

    def _atomic(self, fn, offsets, value, what):
        v = _store_value(value, self._block_shape, what)
        ptrs, mask = self._access(offsets, what)
        # As Triton's descriptor reductions: no result.
        fn(tensor(ptrs), tensor(v) if not isinstance(v, (bool, int, float)) else v,
           mask=tensor(mask))

    def atomic_add(self, offsets, value):
        self._atomic(core.atomic_add, offsets, value, "desc.atomic_add")

    def atomic_min(self, offsets, value):
        self._atomic(core.atomic_min, offsets, value, "desc.atomic_min")

    def atomic_max(self, offsets, value):
        self._atomic(core.atomic_max, offsets, value, "desc.atomic_max")

    def atomic_and(self, offsets, value):
        self._atomic(core.atomic_and, offsets, value, "desc.atomic_and")

    def atomic_or(self, offsets, value):
        self._atomic(core.atomic_or, offsets, value, "desc.atomic_or")

    def atomic_xor(self, offsets, value):
        self._atomic(core.atomic_xor, offsets, value, "desc.atomic_xor")


def descriptor_from_components(base, shape, strides, block_shape, padding):
    """A descriptor from kernel arguments (a host TensorDescriptor, already
    validated on the host): casts the scalars to the descriptor's types."""
    what = "a TensorDescriptor argument"
    shape = [_scalar(s, "i32", f"{what}'s shape[{i}]") for i, s in enumerate(shape)]
    strides = [_scalar(s, "i64", f"{what}'s strides[{i}]") for i, s in enumerate(strides)]
    return tensor_descriptor(_unwrap(base), shape, strides, block_shape, padding)


@builtin
def make_tensor_descriptor(base, shape, strides, block_shape, padding_option="zero"):
    """A descriptor of the `shape` tensor at `base` (strides `strides`, the
    last one 1) whose loads and stores move `block_shape` blocks. Needs no
    global scratch (see tritium.set_allocator): it is expanded into plain
    masked loads and stores."""
    what = "tl.make_tensor_descriptor"
    base = _base_pointer(base, what)
    shape, strides = _sequence(shape, what), _sequence(strides, what)
    ndim = len(shape)
    if not 1 <= ndim <= 5:
        raise ValueError(f"{what}: Expected 1 <= ndim <= 5 but got {ndim} dimensions")
    if len(strides) != ndim:
        raise ValueError(f"{what}: Expected {ndim} strides but got {len(strides)}")
    bs_list = _sequence(block_shape, what)
    if len(bs_list) != ndim:
        raise ValueError(f"{what}: Expected block_shape to have {ndim} dimensions but got "
                         f"{len(bs_list)}")
    bs = _block_shape(bs_list, what)
    dtype = base.dtype.element_ty
    elem_bytes = max(dtype.primitive_bitwidth // 8, 1)
    if bs[-1] * elem_bytes < 16:
        raise ValueError(f"{what}: Descriptor block shape must have at least 16 bytes in the "
                         f"last dimension, but got {bs[-1]} * {elem_bytes} = "
                         f"{bs[-1] * elem_bytes} bytes")
    last = literal_value(_unwrap(strides[-1]))
    if isinstance(last, tensor) or last != 1:
        raise ValueError(f"{what}: Tensor descriptor last dim must be 1 but got "
                         f"{last if not isinstance(last, tensor) else 'a runtime value'} "
                         "(the last stride must be the constant 1)")
    padding = _padding(padding_option, dtype, what)
    if padding == "":
        padding = "zero"
    return descriptor_from_components(base, shape, strides, bs, padding)


@builtin
def load_tensor_descriptor(desc, offsets):
    return _descriptor(desc, "tl.load_tensor_descriptor").load(offsets)


@builtin
def store_tensor_descriptor(desc, offsets, value):
    return _descriptor(desc, "tl.store_tensor_descriptor").store(offsets, value)


def _descriptor(desc, what):
    d = _unwrap(desc)
    if not isinstance(d, tensor_descriptor):
        raise TypeError(f"{what} expects a tensor descriptor, got {d!r}")
    return d


class DescriptorParam:
    """The code generator's parameter for a host TensorDescriptor argument
    (jit.py flattens it): the names of its part parameters (base, shape...,
    strides...; some may be specialised to constants) and its static part."""

    def __init__(self, parts, block_shape, padding):
        self.parts = list(parts)
        self.block_shape = tuple(block_shape)
        self.padding = padding

    def __repr__(self):
        return f"TensorDescriptor{list(self.block_shape)}"

    def build(self, values):
        r = len(self.block_shape)
        return descriptor_from_components(values[0], values[1:1 + r], values[1 + r:],
                                          self.block_shape, self.padding)
