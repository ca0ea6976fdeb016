"""`tritium.reinterpret(tensor, dtype)`: Triton's way to pass a tensor's
memory to a kernel as another element type of the same width, e.g. a uint8
tensor as `tl.float8e4b15`, which has no torch or numpy dtype. The kernel
sees a pointer to `dtype`; the bytes are not touched."""

from .. import language as tl


def _data_ptr(x):
    if hasattr(x, "data_ptr"):
        return x.data_ptr()
    face = getattr(x, "__array_interface__", None)
    if face is not None:
        return face["data"][0]
    raise TypeError(f"tritium.reinterpret expects a tensor or array, got {type(x).__name__}")


def _itemsize(x):
    if hasattr(x, "element_size"):
        return x.element_size()
    return x.itemsize


class TensorWrapper:
    """A tensor seen as elements of another dtype (what reinterpret returns)."""

    def __init__(self, base, dtype):
        self.base = base
        self.dtype = dtype
        # As Triton's wrapper: the base's `data`, a plain attribute.
        self.data = getattr(base, "data", None)

    def data_ptr(self):
        return _data_ptr(self.base)

    @property
    def shape(self):
        return self.base.shape

    @property
    def device(self):
        return getattr(self.base, "device", "cpu")

    def numel(self):
        n = getattr(self.base, "numel", None)
        return n() if callable(n) else self.base.size

    def element_size(self):
        return self.dtype.primitive_bitwidth // 8

    def stride(self, *args):
        return self.base.stride(*args)

    def __str__(self):
        return f"TensorWrapper[{self.dtype}]({self.base})"

    # Triton's host-side methods (its tests allocate outputs and copy through the wrapper):
    # each acts on the base and keeps the dtype.
    def cpu(self):
        return TensorWrapper(self.base.cpu(), self.dtype)

    def copy_(self, other):
        self.base.copy_(other.base if isinstance(other, TensorWrapper) else other)
        return self

    def clone(self):
        return TensorWrapper(self.base.clone(), self.dtype)

    def to(self, device):
        return TensorWrapper(self.base.to(device), self.dtype)

    def new_empty(self, sizes):
        return TensorWrapper(self.base.new_empty(sizes), self.dtype)


def reinterpret(tensor, dtype):
    """`tensor`'s memory as elements of tl dtype `dtype` (same width)."""
    if not isinstance(dtype, tl.dtype) or isinstance(dtype, (tl.pointer_type, tl.block_type)):
        raise TypeError(f"tritium.reinterpret expects a tl dtype, got {dtype!r}")
    base = tensor.base if isinstance(tensor, TensorWrapper) else tensor
    if dtype.primitive_bitwidth != 8 * _itemsize(base):
        raise TypeError(f"tritium.reinterpret: {dtype} is {dtype.primitive_bitwidth} bits wide "
                        f"but the tensor's elements are {8 * _itemsize(base)} bits")
    return TensorWrapper(base, dtype)
