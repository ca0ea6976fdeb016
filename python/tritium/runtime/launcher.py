"""Kernel arguments: classify a Python value (numpy array, torch tensor, an
object with __cuda_array_interface__ or __dlpack__, int, float, bool, None)
for the specialisation key, convert it to what `_C.execute` takes
(`_C.ExecPointer`, int, float, bool), and normalise a launch grid.
`CompiledKernel` is what every compile returns (a TileKernel on the CPU
executor, a GPUKernel for a GPU target).

torch is never imported here: a torch tensor is recognised by its type's
module, and everything needed is read from the tensor itself.
"""

import contextlib
import contextvars
import sys

from .. import language as tl
from ..errors import load_C

GPU_LAUNCH_MESSAGE = ("GPU launch is not implemented yet; pass CPU tensors to run on the "
                      "CPU executor")

# numpy dtype names and torch dtype names (without "torch.") -> tl dtypes.
_DTYPES = {
    "bool": tl.int1, "int8": tl.int8, "int16": tl.int16, "int32": tl.int32,
    "int64": tl.int64, "uint8": tl.uint8, "uint16": tl.uint16, "uint32": tl.uint32,
    "uint64": tl.uint64, "float16": tl.float16, "bfloat16": tl.bfloat16,
    "float32": tl.float32, "float64": tl.float64, "float8_e4m3fn": tl.float8e4nv,
    "float8_e5m2": tl.float8e5, "float8_e4m3fnuz": tl.float8e4b8,
    "float8_e5m2fnuz": tl.float8e5b16,
}


class PointerArg:
    """A tensor argument: element dtype, address, the bytes reachable from
    the address (to the end of the underlying storage), its device, and the
    bytes of its storage below the address (`before`: a view with a storage
    offset, whose kernels may address elements before its first one, as
    Inductor's do for as_strided views; the CPU executor checks against it)."""

    __slots__ = ("dtype", "address", "nbytes", "device", "keepalive", "before")

    def __init__(self, dtype, address, nbytes, device, keepalive, before=0):
        self.dtype = dtype
        self.address = address
        self.nbytes = nbytes
        self.device = device
        self.keepalive = keepalive
        self.before = before

    @property
    def aligned16(self):
        return self.address % 16 == 0


# Offsets into a tensor of this many elements or more may not fit in int32.
INT64_OFFSET_ELEMENTS = 2 ** 31


def needs_int64_offsets(ptr):
    """Whether a kernel's offsets from this PointerArg can reach 2^31
    elements (the bytes reachable from its address, over its element size):
    then the compiler computes them in 64 bits (tt.int64_offsets)."""
    itemsize = max(ptr.dtype.primitive_bitwidth // 8, 1)
    return ptr.nbytes >= INT64_OFFSET_ELEMENTS * itemsize


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
        start = address
        root = x
        while _is_numpy_array(root.base):
            root = root.base
        if root is not x:
            root_address = root.__array_interface__["data"][0]
            end = max(end, _footprint_end(root_address, root.shape, root.strides,
                                          root.itemsize))
            if root.flags.c_contiguous or root.flags.f_contiguous:
                start = min(start, root_address)
        return PointerArg(d, address, max(end - address, 0), "cpu", x, address - start)
    if _is_torch_tensor(x):
        d = _dtype_of_object(x.dtype, lambda t: str(t).replace("torch.", ""), what)
        device = x.device.type
        address = x.data_ptr()
        itemsize = x.element_size()
        end = _footprint_end(address, x.shape, [s * itemsize for s in x.stride()], itemsize)
        before = 0
        # torch gives a tensor without elements (a view too) a null data_ptr: no storage
        # around it is the kernel's to read.
        if device == "cpu" and address != 0:
            try:
                storage = x.untyped_storage()
                end = max(end, storage.data_ptr() + storage.nbytes())
                before = max(address - storage.data_ptr(), 0)
            except Exception:  # e.g. a tensor subclass without a storage
                pass
        return PointerArg(d, address, max(end - address, 0), device, x, before)
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
    if hasattr(type(x), "__dlpack__"):
        return pointer_arg(_from_dlpack(x, what), what)
    return None


def _from_dlpack(x, what):
    """A torch tensor (when torch is imported) or a numpy array (host memory only) viewing the
    memory of an object with __dlpack__; the view keeps the producer alive."""
    torch = sys.modules.get("torch")
    if torch is not None:
        return torch.from_dlpack(x)
    import numpy as np  # noqa: PLC0415
    try:
        return np.from_dlpack(x)
    except (BufferError, RuntimeError, TypeError) as e:
        raise TypeError(f"{what}: a DLPack tensor outside host memory needs torch imported "
                        f"to be passed to a kernel ({e})") from None


_EXECUTOR_MEMORY = contextvars.ContextVar("tritium_executor_memory", default=())


@contextlib.contextmanager
def executor_memory(*tensors):
    """Declares host memory that kernels run on the CPU executor inside the `with` block may
    reach through addresses they read or compute (a table of pointers, as in a grouped GEMM),
    besides their pointer arguments' own memory. The executor checks every access against the
    memory it knows, so an address from an integer must fall in one of these. GPU launches need
    no declaration; there it only has to be a device address. Nested blocks add up.

        with tritium.executor_memory(*As, *Bs, *Cs):
            grouped_kernel[grid](a_ptrs, b_ptrs, c_ptrs, ...)"""
    regions = []
    for i, t in enumerate(tensors):
        p = pointer_arg(t, f"executor_memory argument {i}")
        if p is None:
            raise TypeError(f"executor_memory argument {i}: expected a numpy array or a tensor, "
                            f"got {type(t).__name__}")
        if p.device != "cpu":
            continue  # the GPU reaches any device address
        regions.append(p)
    token = _EXECUTOR_MEMORY.set(_EXECUTOR_MEMORY.get() + tuple(regions))
    try:
        yield
    finally:
        _EXECUTOR_MEMORY.reset(token)


def declared_memory():
    """_C.ExecPointers of the memory declared by the enclosing executor_memory blocks."""
    regions = _EXECUTOR_MEMORY.get()
    if not regions:
        return []
    C = load_C()
    return [C.ExecPointer(p.address, p.nbytes) for p in regions]


class IntArgumentOverflow(TypeError, OverflowError):
    """An int argument outside int64 and uint64: an OverflowError as in Triton, and a TypeError
    (a wrong argument) as tritium raised before."""


def int_dtype(v):
    """Triton's type of a Python int argument."""
    if -(2 ** 31) <= v < 2 ** 31:
        return tl.int32
    if -(2 ** 63) <= v < 2 ** 63:
        return tl.int64
    if 2 ** 63 <= v < 2 ** 64:
        return tl.uint64
    raise IntArgumentOverflow(f"{v} does not fit in 64 bits")


def exec_int(v):
    """An int argument as the executor's int64 (u64 values wrap)."""
    return v - 2 ** 64 if v >= 2 ** 63 else v


class KernelAsm(dict):
    """A compiled kernel's texts by stage ("tir-raw", "tir", "gir", "ptx", "cubin"). Triton's
    names read them too: "ttir" is the tile IR ("tir": tritium's tt.* ops, not Triton's MLIR
    byte for byte) and "ttgir" the GPU IR ("gir"); they are not stored twice."""

    __slots__ = ()
    ALIASES = {"ttir": "tir", "ttgir": "gir"}

    def __missing__(self, key):
        alias = self.ALIASES.get(key)
        if alias is not None and dict.__contains__(self, alias):
            return self[alias]
        raise KeyError(key)

    def __contains__(self, key):
        return dict.__contains__(self, key) or dict.__contains__(self, self.ALIASES.get(key, ""))

    def get(self, key, default=None):
        return self[key] if key in self else default


class KernelMetadata(dict):
    """A compiled kernel's metadata: a dict, which also reads as attributes, as Triton's
    `CompiledKernel.metadata` does (its fused-softmax tutorial reads `kernel.metadata.shared`)."""

    __slots__ = ()

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"kernel metadata has no {name!r} "
                                 f"(it has {', '.join(sorted(self))})") from None


class CompiledKernel:
    """One specialisation of a kernel, compiled: what `tritium.compile`,
    `kernel.warmup(...)` and `kernel[grid](...)` return (Triton's
    `triton.compiler.CompiledKernel`). Two kinds: compiler.pipeline.TileKernel
    (tile IR, run by the CPU executor) and runtime.cuda.GPUKernel (PTX and
    cubin for a GPU target). Both have name, asm, metadata, arg_names (the
    runtime arguments, in order) and launch with kernel[grid](*runtime_args)."""

    __slots__ = ()

    def _init_handles(self):
        """Triton loads the binary here, before a caller reads n_regs / n_spills (its
        tutorials do); for tritium a no-op where nothing is to load."""

    def _runtime_args(self, args):
        """The runtime arguments of `compiled[grid](*args)`: `args` themselves, or, as Triton's
        compiled kernels take them (its fused-softmax tutorial does), every parameter in order
        with the constexprs' values passed and ignored."""
        if len(args) == len(self.arg_names):
            return args
        consts = self.metadata.get("constexpr_positions")
        if consts is not None and len(args) == len(self.arg_names) + len(consts):
            dropped = set(consts)
            return tuple(a for i, a in enumerate(args) if i not in dropped)
        every = ("" if consts is None
                 else f" (or all {len(self.arg_names) + len(consts)} parameters)")
        raise TypeError(f"{self.name}: expected {len(self.arg_names)} runtime arguments "
                        f"({', '.join(self.arg_names)}){every}, got {len(args)}")


def normalize_grid(grid, meta):
    """The grid as 3 ints; a callable grid is called with `meta` first."""
    if type(grid) is tuple and len(grid) == 3 and all(type(x) is int and x >= 0 for x in grid):
        return grid
    if callable(grid):
        grid = grid(meta)
    grid = tl.core._unwrap(grid)
    if not isinstance(grid, (tuple, list)):
        grid = (grid,)
    if not 1 <= len(grid) <= 3:
        raise ValueError(f"the grid must have 1 to 3 dimensions, got {tuple(grid)!r}")
    try:
        g = [int(tl.core._unwrap(x)) for x in grid]
    except (TypeError, ValueError):
        raise TypeError(f"the grid must be a tuple of ints, got {tuple(grid)!r}") from None
    if any(x < 0 for x in g):
        raise ValueError(f"the grid must not be negative, got {tuple(g)!r}")
    return tuple(g + [1] * (3 - len(g)))


def python_scalar(v):
    """numpy scalars as Python bool/int/float."""
    if type(v).__module__ == "numpy" and hasattr(v, "item") and getattr(v, "ndim", 1) == 0:
        return v.item()
    return v


def check_devices(values, allow_cuda=False):
    """Tensors must be in host memory (the CPU executor) or on a CUDA GPU."""
    for v in values:
        if type(v) is PointerArg and v.device != "cpu":
            if v.device == "cuda":
                if not allow_cuda:
                    raise RuntimeError(GPU_LAUNCH_MESSAGE)
                continue
            raise RuntimeError(f"tensors on device '{v.device}' cannot be kernel arguments; "
                               "pass CPU tensors to run on the CPU executor")


def convert_runtime_args(compiled, values):
    """Executor arguments (_C.ExecPointer / int / float / bool) for the
    runtime arguments of `compiled`, in order. Values are PointerArgs (from
    JITFunction._key) or what the user passed."""
    C = load_C()
    out = []
    for name, v in zip(compiled.arg_names, values):
        t = type(v)
        if t is PointerArg:
            p = v
        elif t is bool or t is float:
            out.append(v)
            continue
        elif t is int:
            out.append(exec_int(v))
            continue
        else:
            p = pointer_arg(v, f"argument {name!r}")
            if p is None:
                v = python_scalar(v)
                if isinstance(v, (bool, float)):
                    out.append(v)
                elif isinstance(v, int):
                    out.append(exec_int(v))
                else:
                    raise TypeError(f"argument {name!r}: unsupported type "
                                    f"{type(v).__name__}")
                continue
        if p.device != "cpu":
            check_devices([p])
        out.append(C.ExecPointer(p.address, p.nbytes, p.before))
    return out
