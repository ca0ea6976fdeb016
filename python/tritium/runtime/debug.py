"""Debug launches: bounds-checked kernels (TRITIUM_DEBUG=1, @jit(debug=True),
or the launch option debug=True). See docs/gpu-debug.md.

A bounds-checked kernel takes hidden trailing parameters: one extent per
pointer argument (the bytes it reaches) and the address of an error record
the threads fill in on the first out-of-bounds access. This module decides
whether a launch is checked (`debug_enabled`), keeps the compile's site
table in the kernel's metadata (`bounds_metadata`), launches with the
hidden arguments (`launch_debug`) and turns a filled-in record into an
`OutOfBoundsError` that names the kernel, the line, the argument, the
offset and the program id, or a `DeviceAssertionError` for a failed
tl.device_assert (`bounds_error`).

It knows no compiler: a kernel is anything with `name`, `metadata` and
`gpu_kernel()` (runtime.cuda.GPUKernel).
"""

import linecache
import os
import struct
import sys
import warnings

from ..errors import ExecutionError, load_C
from .launcher import PointerArg, pointer_arg

UNKNOWN_EXTENT = 2 ** 64 - 1  # an extent no offset exceeds: the access is not checked
_TRUE = ("1", "true", "yes", "on")


class OutOfBoundsError(ExecutionError, IndexError):
    """A bounds-checked GPU kernel accessed memory outside a tensor argument.

    Besides ExecutionError's message, file, line and col: kernel, kind
    ("load", "store", "atomic"), argument (its name), offset (bytes from the
    argument's address to the first byte out of bounds; negative below it),
    extent (the bytes the argument reaches), program_id (x, y, z) and count
    (how many violating accesses the threads counted; only the first is
    described)."""

    def __init__(self, message, file="", line=0, col=0, **info):
        super().__init__(message, file, line, col)
        self.kernel = info.get("kernel")
        self.kind = info.get("kind")
        self.argument = info.get("argument")
        self.offset = info.get("offset")
        self.extent = info.get("extent")
        self.program_id = info.get("program_id")
        self.count = info.get("count", 1)


class DeviceAssertionError(ExecutionError, AssertionError):
    """A tl.device_assert failed in a debug build of a GPU kernel.

    Besides ExecutionError's message, file, line and col: kernel,
    assert_message (the assertion's own message), program_id (x, y, z) and
    count (how many false elements and failed accesses the threads counted;
    only the first is described)."""

    def __init__(self, message, file="", line=0, col=0, **info):
        super().__init__(message, file, line, col)
        self.kernel = info.get("kernel")
        self.assert_message = info.get("assert_message")
        self.program_id = info.get("program_id")
        self.count = info.get("count", 1)


def debug_enabled(jit_fn, options):
    """Whether a launch compiles with bounds checks: the launch option
    `debug`, else the @jit(debug=...) argument, else $TRITIUM_DEBUG."""
    d = options.get("debug") if options else None
    if d is None:
        d = getattr(jit_fn, "debug", None)
    if d is None:
        d = os.environ.get("TRITIUM_DEBUG", "").strip().lower() in _TRUE
    return bool(d)


def bounds_metadata(res):
    """The JSON-able part of compile_to_ptx's bounds_check result."""
    bc = res.get("bounds_check")
    if bc is None:
        raise RuntimeError("this build of tritium._C ignores bounds_check; rebuild with "
                           "`make build`")
    return {
        "hidden_params": [[str(k), str(n)] for k, n in bc["hidden_params"]],
        "sites": [[str(kind), int(param), int(eb), str(file or ""), int(line), int(col),
                   str(message), [int(d) for d in shape]]
                  for kind, param, eb, file, line, col, message, shape in bc["sites"]],
        "unchecked": int(bc["unchecked"]),
        "record_bytes": int(bc["record_bytes"]),
    }


def hidden_params(metadata):
    bc = metadata.get("bounds_check")
    return list(bc["hidden_params"]) if bc else []


def _extent(value):
    """Bytes reachable from a pointer argument's address, or UNKNOWN_EXTENT.

    A torch tensor reaches to the end of its storage (as on the CPU
    executor); an object with __cuda_array_interface__ to the end of its
    strided footprint; a bare integer address is unknown."""
    if type(value) is PointerArg:
        address, obj, nbytes = value.address, value.keepalive, value.nbytes
    elif hasattr(value, "data_ptr") or hasattr(value, "__cuda_array_interface__"):
        p = pointer_arg(value, "argument")
        if p is None:
            return UNKNOWN_EXTENT
        address, obj, nbytes = p.address, p.keepalive, p.nbytes
    else:
        return UNKNOWN_EXTENT
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(obj, torch.Tensor):
        try:
            storage = obj.untyped_storage()
            end = storage.data_ptr() + storage.nbytes()
            return max(end - address, nbytes, 0)
        except Exception:  # a tensor subclass without a storage
            return nbytes
    cai = getattr(obj, "__cuda_array_interface__", None)
    if isinstance(cai, dict):
        shape = cai.get("shape")
        typestr = cai.get("typestr", "")
        try:
            itemsize = int(typestr[2:])
        except ValueError:
            return UNKNOWN_EXTENT
        if shape is None:
            return UNKNOWN_EXTENT
        strides = cai.get("strides")
        if strides is None:  # C-contiguous
            strides, acc = [], itemsize
            for n in reversed(shape):
                strides.insert(0, acc)
                acc *= n
        if any(st < 0 for st in strides):
            return UNKNOWN_EXTENT
        if any(n == 0 for n in shape):
            return 0
        return sum((n - 1) * st for n, st in zip(shape, strides)) + itemsize
    return nbytes


def launch_debug(kernel, grid, args, values, stream, device, check_pointers):
    """Launches a bounds-checked kernel: passes each pointer argument's
    extent and a zeroed error record, waits for the kernel, and raises
    OutOfBoundsError when the record reports a violation.

    values: the launch's runtime values (PointerArg for tensors; their
    extents) or None, when `args` themselves are tensors or addresses."""
    meta = kernel.metadata
    params = meta["params"]
    extents = []
    for i, (kind, _name) in enumerate(params):
        if kind != "ptr":
            extents.append(0)
            continue
        v = values[i] if values is not None else args[i]
        extents.append(_extent(v))
    torch = sys.modules.get("torch")
    C = load_C()
    if torch is not None and torch.cuda.is_current_stream_capturing():
        # The check waits for the kernel and reads its error record back; neither can happen
        # inside a graph capture (the synchronisation would invalidate it).
        raise ExecutionError(f"{kernel.name}: a bounds-checked launch (TRITIUM_DEBUG=1 or "
                             "debug=True) cannot be captured in a CUDA graph, since it waits "
                             "for the kernel to read its error record; capture without debug")
    if torch is None:
        _warn_unchecked()
        record = None
        record_address = 0
        extents = [UNKNOWN_EXTENT] * len(extents)
    else:
        record = torch.zeros(meta["bounds_check"]["record_bytes"], dtype=torch.uint8,
                             device=f"cuda:{device}")
        # The zeros are written on torch's current stream; the kernel may run
        # on another.
        torch.cuda.synchronize(device)
        record_address = record.data_ptr()
    kernel.gpu_kernel().launch(grid[0], grid[1], grid[2], stream, device,
                               list(args) + extents + [record_address], check_pointers)
    C.synchronize(device)
    if record is None:
        return None
    raw = bytes(record.cpu().tolist())
    error = bounds_error(kernel.name, meta, raw, extents)
    if error is not None:
        raise error
    return None


_warned = []


def _warn_unchecked():
    if not _warned:
        _warned.append(True)
        warnings.warn("tritium debug launch: bounds checks need torch (for the error record); "
                      "import torch to enable them. Launching unchecked.", stacklevel=3)


def bounds_error(kernel_name, metadata, raw, extents):
    """The OutOfBoundsError a device record `raw` (BoundsRecordLayout's 32
    bytes) describes, or None when it records no violation. extents: the
    ones passed to the kernel, per parameter."""
    count, site, px, py, pz, nbytes, offset = struct.unpack_from("<IIIIIIq", raw, 0)
    if count == 0:
        return None
    sites = metadata["bounds_check"]["sites"]
    if site >= len(sites):
        return ExecutionError(f"kernel '{kernel_name}': an out-of-bounds access was reported "
                              f"with an invalid site {site} (a corrupt record?)")
    kind, param, elem_bytes, file, line, col = sites[site][:6]
    if kind == "assert":
        message, shape = sites[site][6:8]
        return _assert_error(kernel_name, file, line, col, message, shape, offset,
                             (px, py, pz), count)
    arg = metadata["params"][param][1]
    extent = extents[param]
    elem_bytes = max(int(elem_bytes), 1)
    first = offset
    if 0 <= offset < extent < offset + nbytes:
        # A vector access straddling the end: name its first element outside.
        first = offset + ((extent - offset) // elem_bytes) * elem_bytes
    where = f"{file}:{line}:{col}" if file and line > 0 else "an unknown location"
    what = f"byte offset {first}"
    if first % elem_bytes == 0:
        what += f" (element {first // elem_bytes})"
    size = f"{extent} bytes"
    if extent % elem_bytes == 0:
        size += f" = {extent // elem_bytes} elements of {elem_bytes} bytes"
    message = (f"out-of-bounds {kind} in kernel '{kernel_name}' at {where}: {what} of "
               f"argument '{arg}', which reaches {size}; program id ({px}, {py}, {pz})")
    if count > 1:
        message += f"; {count - 1} more out-of-bounds accesses were suppressed"
    message += _source_excerpt(file, line, col)
    return OutOfBoundsError(message, file or "", line, col, kernel=kernel_name, kind=kind,
                            argument=arg, offset=first, extent=extent,
                            program_id=(px, py, pz), count=count)


def _source_excerpt(file, line, col):
    """The source line and a caret under col, as lines to append ("" when
    the file cannot be read)."""
    if not file or line <= 0:
        return ""
    text = linecache.getline(file, line).rstrip("\r\n")
    if not text.strip():
        return ""
    stripped = text.lstrip()
    indent = len(text) - len(stripped)
    out = "\n    " + stripped.rstrip()
    if col > 0:
        out += "\n    " + " " * max(col - 1 - indent, 0) + "^"
    return out


def _assert_error(kernel_name, file, line, col, message, shape, index, pid, count):
    """The DeviceAssertionError of a failed tl.device_assert, worded as the
    CPU executor words it."""
    where = f"{file}:{line}:{col}" if file and line > 0 else "an unknown location"
    detail = message or "assertion"
    if shape:
        coords = []
        for n in reversed(shape):
            coords.append(index % n)
            index //= n
        detail += " (element (" + ", ".join(str(c) for c in reversed(coords)) + "))"
    text = (f"device assertion failed in kernel '{kernel_name}' at {where}: {detail}, "
            f"program id ({pid[0]}, {pid[1]}, {pid[2]})")
    if count > 1:
        text += f"; {count - 1} more failures (false elements or out-of-bounds accesses) " \
                "were suppressed"
    text += _source_excerpt(file, line, col)
    return DeviceAssertionError(text, file or "", line, col, kernel=kernel_name,
                                assert_message=message, program_id=pid, count=count)
