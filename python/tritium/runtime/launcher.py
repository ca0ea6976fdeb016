"""Kernel arguments on the CPU: classify a Python value (numpy array, torch
tensor, int, float, bool, None) for the specialisation key, and convert it to
what `_C.execute` takes (`_C.ExecPointer`, int, float, bool).

torch is never imported here: a torch tensor is recognised by its type's
module, and everything needed is read from the tensor itself.
"""

import sys

from .. import language as tl

GPU_LAUNCH_MESSAGE = ("GPU launch is not implemented yet; pass CPU tensors to run on the "
                      "CPU executor")

# numpy dtype names and torch dtype names (without "torch.") -> tl dtypes.
_DTYPES = {
    "bool": tl.int1, "int8": tl.int8, "int16": tl.int16, "int32": tl.int32,
    "int64": tl.int64, "uint8": tl.uint8, "uint16": tl.uint16, "uint32": tl.uint32,
    "uint64": tl.uint64, "float16": tl.float16, "bfloat16": tl.bfloat16,
    "float32": tl.float32, "float64": tl.float64, "float8_e4m3fn": tl.float8e4nv,
    "float8_e5m2": tl.float8e5,
}


class PointerArg:
    """A tensor argument: element dtype, address, the bytes reachable from
    the address (to the end of the underlying storage) and its device."""

    __slots__ = ("dtype", "address", "nbytes", "device", "keepalive")

    def __init__(self, dtype, address, nbytes, device, keepalive):
        self.dtype = dtype
        self.address = address
        self.nbytes = nbytes
        self.device = device
        self.keepalive = keepalive

    @property
    def aligned16(self):
        return self.address % 16 == 0


def _footprint_end(address, shape, strides, itemsize):
    """One past the last byte a strided view touches (strides in bytes)."""
    if any(s == 0 for s in shape):
        return address
    return address + sum((n - 1) * st for n, st in zip(shape, strides) if st > 0) + itemsize


def _is_torch_tensor(x):
    mod = type(x).__module__
    if not mod.startswith("torch"):
        return False
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


def _is_numpy_array(x):
    np = sys.modules.get("numpy")
    return np is not None and isinstance(x, np.ndarray)


_BY_OBJECT = {}  # numpy / torch dtype object -> tl dtype (a cache)


def _dtype_of(name, what):
    d = _DTYPES.get(name)
    if d is None:
        raise TypeError(f"{what}: tensors of dtype {name} are not supported")
    return d


def _dtype_of_object(obj, name_of, what):
    d = _BY_OBJECT.get(obj)
    if d is None:
        d = _BY_OBJECT[obj] = _dtype_of(name_of(obj), what)
    return d


def pointer_arg(x, what):
    """A PointerArg for a numpy array, a torch tensor or an object with
    data_ptr() and a tl dtype (triton.reinterpret's wrapper); None when x is
    not a tensor at all."""
    if _is_numpy_array(x):
        d = _dtype_of_object(x.dtype, lambda t: t.name, what)
        address = x.__array_interface__["data"][0]
        end = _footprint_end(address, x.shape, x.strides, x.itemsize)
        root = x
        while _is_numpy_array(root.base):
            root = root.base
        if root is not x:
            root_address = root.__array_interface__["data"][0]
            end = max(end, _footprint_end(root_address, root.shape, root.strides,
                                          root.itemsize))
        return PointerArg(d, address, max(end - address, 0), "cpu", x)
    if _is_torch_tensor(x):
        d = _dtype_of_object(x.dtype, lambda t: str(t).replace("torch.", ""), what)
        device = x.device.type
        address = x.data_ptr()
        itemsize = x.element_size()
        end = _footprint_end(address, x.shape, [s * itemsize for s in x.stride()], itemsize)
        if device == "cpu":
            try:
                storage = x.untyped_storage()
                end = max(end, storage.data_ptr() + storage.nbytes())
            except Exception:  # e.g. a tensor subclass without a storage
                pass
        return PointerArg(d, address, max(end - address, 0), device, x)
    if hasattr(x, "data_ptr") and isinstance(getattr(x, "dtype", None), tl.dtype):
        base = getattr(x, "base", None)
        inner = pointer_arg(base, what) if base is not None else None
        address = x.data_ptr()
        if inner is not None:
            nbytes = max(inner.address + inner.nbytes - address, 0)
            device = inner.device
        else:
            nbytes, device = 0, "cpu"
        return PointerArg(x.dtype, address, nbytes, device, x)
    cai = getattr(x, "__cuda_array_interface__", None)
    if isinstance(cai, dict):
        import numpy as np  # noqa: PLC0415
        d = _dtype_of(np.dtype(cai["typestr"]).name, what)
        return PointerArg(d, int(cai["data"][0]), 0, "cuda", x)
    return None


def int_dtype(v):
    """Triton's type of a Python int argument."""
    if -(2 ** 31) <= v < 2 ** 31:
        return tl.int32
    if -(2 ** 63) <= v < 2 ** 63:
        return tl.int64
    if 2 ** 63 <= v < 2 ** 64:
        return tl.uint64
    raise TypeError(f"{v} does not fit in 64 bits")


def exec_int(v):
    """An int argument as the executor's int64 (u64 values wrap)."""
    return v - 2 ** 64 if v >= 2 ** 63 else v
