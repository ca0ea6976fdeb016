"""`TensorDescriptor`: a host-side description of a tensor (base, shape,
strides) and the block a kernel moves at a time, passed as a kernel argument
(as `triton.tools.tensor_descriptor.TensorDescriptor`).

The launcher flattens it into the base pointer, the shape and the strides
(each specialised like an int argument; the last stride, 1, becomes a
constant) and the kernel sees a `tl.tensor_descriptor` whose loads and stores
are bounds-checked masked accesses (language/block.py). The checks here are
those TMA imposes, so a kernel written for Triton's descriptors keeps them.
"""

import sys
from dataclasses import dataclass
from typing import Any, List


def _is_pow2(n):
    return n > 0 and n & (n - 1) == 0


def _element_strides_and_shape(base):
    """(shape, strides in elements, element size in bytes) of a torch tensor or
    a numpy array."""
    if hasattr(base, "stride") and callable(base.stride):  # torch
        return list(base.shape), list(base.stride()), base.element_size()
    np = sys.modules.get("numpy")
    if np is not None and isinstance(base, np.ndarray):
        item = base.itemsize
        if any(s % item for s in base.strides):
            raise ValueError("TensorDescriptor: the array's strides are not whole elements")
        return list(base.shape), [s // item for s in base.strides], item
    raise TypeError(f"TensorDescriptor: expected a torch tensor or a numpy array, got "
                    f"{type(base).__name__}")


def _address(base):
    if hasattr(base, "data_ptr"):
        return base.data_ptr()
    return base.__array_interface__["data"][0]


def _is_floating(base):
    dt = base.dtype
    if hasattr(dt, "is_floating_point"):  # torch.dtype
        return dt.is_floating_point
    return getattr(dt, "kind", "") == "f"


@dataclass
class TensorDescriptor:
    base: Any
    shape: List[int]
    strides: List[int]
    block_shape: List[int]
    padding: str = "zero"

    def __post_init__(self):
        self.shape = [int(s) for s in self.shape]
        self.strides = [int(s) for s in self.strides]
        self.block_shape = [int(b) for b in self.block_shape]
        rank = len(self.shape)
        if not 1 <= rank <= 5:
            raise ValueError(f"TensorDescriptor: rank must be 1 to 5, got {rank}")
        if len(self.strides) != rank:
            raise ValueError(f"TensorDescriptor: {rank} dims but {len(self.strides)} strides")
        if len(self.block_shape) != rank:
            raise ValueError(f"TensorDescriptor: {rank} dims but a block_shape of rank "
                             f"{len(self.block_shape)}")
        for i, d in enumerate(self.block_shape):
            if not _is_pow2(d):
                raise ValueError(f"TensorDescriptor: Shape element {i} must be a power of 2, "
                                 f"got {d}")
        if type(self.base).__name__ not in ("FakeTensor", "FunctionalTensor"):
            if _address(self.base) % 16 != 0:
                raise ValueError("TensorDescriptor: base must be 16-byte aligned")
        _, _, elem = _element_strides_and_shape(self.base)
        if self.strides[-1] != 1:
            raise ValueError(f"TensorDescriptor: Last dimension must be contiguous (stride 1), "
                             f"got stride {self.strides[-1]}")
        for s in self.strides[:-1]:
            if (s * elem) % 16 != 0:
                raise ValueError(f"TensorDescriptor: strides must be 16-byte aligned, got "
                                 f"{s} elements of {elem} bytes")
        if self.padding not in ("zero", "nan"):
            raise ValueError(f"TensorDescriptor: Padding option {self.padding} not supported "
                             "(expected \"zero\" or \"nan\")")
        if self.padding == "nan" and not _is_floating(self.base):
            raise ValueError("TensorDescriptor: padding \"nan\" needs a floating-point tensor")

    @staticmethod
    def from_tensor(tensor: Any, block_shape: List[int], padding="zero"):
        """The descriptor of a whole torch tensor or numpy array."""
        shape, strides, _ = _element_strides_and_shape(tensor)
        return TensorDescriptor(tensor, shape, strides, block_shape, padding)
