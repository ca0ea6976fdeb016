"""The CUDA side of the runtime: devices, streams and targets, and
`GPUKernel`, one specialisation compiled for a GPU target (its PTX and cubin,
metadata, the disk cache's blobs), loaded and launched through
`_C.GpuKernel`.

Nothing here touches the CUDA driver until a GPU launch (or `load()`) asks
for it, so compiling for a target works on a machine with no GPU, and the
CPU executor works with no libcuda at all. torch is never imported here; it
is used (for the current stream and device) only when the program has
imported it already.

Compiling (tile IR -> PTX -> cubin) is compiler.compiler's; launching a
@jit function on GPU tensors is jit.py's (`JITFunction.run`);
bounds-checked launches and their error reports are runtime.debug's.
"""

import json
import os
import sys

from ..errors import ExecutionError, load_C, user_error_args
from . import debug as _debug
from .debug import OutOfBoundsError  # noqa: F401 -- where users caught it before
from .launcher import (CompiledKernel, KernelAsm, KernelMetadata, PointerArg, convert_runtime_args,
                       declared_memory, normalize_grid, pointer_arg)

# ---------------------------------------------------------------------------
# devices and streams


def is_available():
    """True when libcuda loads and reports a GPU (loads the driver)."""
    ok, _ = load_C().cuda_available()
    return bool(ok)


def target_for_capability(major, minor):
    """The compile target for a device: sm_90a on Hopper (wgmma/TMA), else
    sm_<major><minor>."""
    if (major, minor) == (9, 0):
        return "sm_90a"
    return f"sm_{major}{minor}"


_targets = {}


def default_target(device=0):
    """$TRITIUM_TARGET, else the target of `device` (loads the driver)."""
    env = os.environ.get("TRITIUM_TARGET")
    if env:
        return env
    t = _targets.get(device)
    if t is None:
        t = _targets[device] = target_for_capability(*load_C().device_capability(device))
    return t


def current_stream(device):
    """The integer CUstream torch launches on for `device` (torch's current
    stream) when torch is imported, else 0 (the legacy default stream)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return 0
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw(device)
    return torch.cuda.current_stream(device).cuda_stream


def device_count():
    """How many GPUs this process sees (loads the driver)."""
    return int(load_C().device_count())


def current_device():
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        return torch.cuda.current_device()
    return 0


def device_of(obj):
    """The CUDA device index of a tensor-like, or None."""
    d = getattr(obj, "device", None)
    if d is None and getattr(obj, "base", None) is not None:
        d = getattr(obj.base, "device", None)
    if d is None:
        return None
    idx = getattr(d, "index", None)
    return idx if idx is not None else current_device()


def uses_gpu(values):
    """Whether a launch's runtime values (jit.specialize's third result)
    include a tensor that is not on the CPU."""
    for v in values:
        if type(v) is PointerArg and v.device != "cpu":
            return True
    return False


# ---------------------------------------------------------------------------
# the compiled kernel


class GPUKernel(CompiledKernel):
    """One specialisation compiled for a GPU target (made by
    compiler.compiler.compile_gpu, or read back from the disk cache).

    asm: "tir-raw", "tir" (tile IR), "gir" (GPU IR), "ptx", and "cubin" when
    ptxas ran. metadata: name, num_warps, num_stages, shared (dynamic shared
    memory bytes), target, params [[kind, name]], ptxas_log.
    Launch with `kernel[grid](*runtime_args)` or `kernel.launch(grid3, args)`."""

    def __init__(self, name, asm, metadata, tile=None):
        self.name = name
        self.asm = KernelAsm(asm)
        self.metadata = KernelMetadata(metadata)
        self.arg_names = [p[1] for p in metadata["params"]]
        self.tile = tile  # the compile's TileKernel (CPU executor), if at hand
        self._kernel = None
        self._cpu_module = None

    def __getstate__(self):
        # Pickled to another process (Inductor's compile workers send their
        # kernels to the parent): the driver's handle and the executor's
        # module belong to this one; both are rebuilt from asm on first use.
        return dict(self.__dict__, _kernel=None, _cpu_module=None)

    def __repr__(self):
        return (f"GPUKernel({self.name}, target={self.metadata['target']}, "
                f"num_warps={self.metadata['num_warps']}, shared={self.metadata['shared']})")

    # Triton-compatible attributes
    @property
    def num_warps(self):
        return self.metadata["num_warps"]

    @property
    def num_stages(self):
        return self.metadata["num_stages"]

    @property
    def shared(self):
        return self.metadata["shared"]

    @property
    def signature(self):
        return {n: k for k, n in self.metadata["params"]}

    # -- serialisation (the disk cache) ----------------------------------------
    def to_blobs(self):
        blobs = {"metadata.json": json.dumps(dict(self.metadata, name=self.name), sort_keys=True)}
        for k, v in self.asm.items():
            blobs["asm/" + k] = v
        return blobs

    @classmethod
    def from_blobs(cls, blobs):
        meta = json.loads(blobs["metadata.json"].decode("utf-8"))
        asm = {}
        for k, v in blobs.items():
            if k.startswith("asm/"):
                name = k[4:]
                asm[name] = v if name == "cubin" else v.decode("utf-8")
        return cls(meta["name"], asm, meta)

    # -- the GPU --------------------------------------------------------------
    def gpu_kernel(self):
        """The `_C.GpuKernel` (created on first use; the driver loads the
        module on the first launch on each device)."""
        k = self._kernel
        if k is None:
            C = load_C()
            cubin = self.asm.get("cubin")
            image = cubin if cubin else self.asm["ptx"].encode("utf-8")
            params = self.metadata["params"] + _debug.hidden_params(self.metadata)
            # TMA tensor maps go after the kernel's own parameters, before the hidden ones.
            maps = self.metadata.get("tensor_maps")
            extra = {}
            if maps:
                extra = {"tensor_maps": maps, "tensor_maps_at": len(self.metadata["params"])}
            k = self._kernel = C.GpuKernel(self.name, image, bool(cubin), self.metadata["target"],
                                           self.metadata["num_warps"], self.metadata["shared"],
                                           [tuple(p) for p in params], **extra)
        return k

    def load(self, device=0):
        self.gpu_kernel().load(device)

    def _init_handles(self):
        """Triton's name for loading the module (here on the current device)."""
        self.load(current_device())

    @property
    def n_regs(self):
        return self.gpu_kernel().attributes(current_device())["num_regs"]

    @property
    def n_spills(self):
        return self.gpu_kernel().attributes(current_device())["local_bytes"]

    def launch(self, grid, args, stream=None, device=None, check_pointers=True):
        """Launches on `grid` (3 ints, all > 0) with `args` (one per runtime
        parameter: GPU tensors or integer addresses, ints, floats, bools)."""
        if device is None:
            device = current_device()
        if stream is None:
            stream = current_stream(device)
        if self.metadata.get("bounds_check"):
            return _debug.launch_debug(self, grid, args, None, stream, device, check_pointers)
        self.gpu_kernel().launch(grid[0], grid[1], grid[2], stream, device, args, check_pointers)

    # -- kernel[grid](*args) ------------------------------------------------------
    def __getitem__(self, grid):
        def launch(*args, stream=None):
            args = self._runtime_args(args)
            g = normalize_grid(grid, {})
            ptrs = [(i, pointer_arg(a, f"argument {self.arg_names[i]!r}"))
                    for i, a in enumerate(args) if self.metadata["params"][i][0] == "ptr"]
            devices = {p.device for _, p in ptrs if p is not None}
            if devices and devices <= {"cpu"}:
                return self._run_cpu(g, args)
            if any(x == 0 for x in g):
                return None
            device = None
            vals = list(args)
            for i, p in ptrs:
                if p is None:
                    continue
                if p.device == "cpu":
                    raise ExecutionError(
                        f"{self.name}: argument {self.arg_names[i]!r} is a CPU tensor, but other "
                        "arguments are on the GPU; move it to the GPU (tensor.cuda())")
                if device is None:
                    device = device_of(p.keepalive)
                vals[i] = p.address
            self.launch(g, vals, stream=stream, device=device)
            return None

        return launch

    def _run_cpu(self, grid, args):
        """Runs this specialisation on the CPU executor (CPU tensors)."""
        if self.tile is not None:
            values = convert_runtime_args(self.tile, args)
            if all(x > 0 for x in grid):
                self.tile.run(grid, values)
            return None
        C = load_C()
        if self._cpu_module is None:
            self._cpu_module = C.parse_module(self.asm["tir"], f"<{self.name}>")
        values = convert_runtime_args(self, args)
        if all(x > 0 for x in grid):
            try:
                C.execute(self._cpu_module, self.name, tuple(grid), list(values), 0,
                          declared_memory())
            except C.ExecutionError as e:
                message, file, line, col = user_error_args(e)
                raise ExecutionError(message, file or "", line, col) from None
        return None


# ---------------------------------------------------------------------------
# the device of a launch (JITFunction.run for GPU tensors)


def launch_device(jit_fn, params, values):
    """The device index of a launch (the first GPU tensor's) and the runtime
    arguments as the launcher takes them (pointers as addresses). Raises for
    CPU tensors mixed in, or tensors on non-CUDA devices."""
    device = first = None
    args = []
    for v in values:
        if type(v) is not PointerArg:
            args.append(v)
            continue
        if v.device != "cuda":
            _device_error(jit_fn, params, values, v)
        d = device_of(v.keepalive)
        if device is None:
            device, first = d, v
        elif d is not None and d != device:
            raise ExecutionError(
                f"{jit_fn.__name__}: argument {_arg_name(params, values, first)!r} is on "
                f"cuda:{device} and argument {_arg_name(params, values, v)!r} on cuda:{d}; a "
                "launch takes the tensors of one GPU (move them with .to(), or launch once per "
                "device)")
        args.append(v.address)
    return (device if device is not None else current_device()), args


def _arg_name(params, values, arg):
    """The parameter name of runtime value `arg` in a launch."""
    names = [n for n, p in params if p[0] == "arg"]
    return next((n for n, v in zip(names, values) if v is arg), "?")


def _device_error(jit_fn, params, values, bad):
    name = _arg_name(params, values, bad)
    if bad.device == "cpu":
        raise ExecutionError(
            f"{jit_fn.__name__}: argument {name!r} is a CPU tensor, but other arguments are "
            "on the GPU; a launch runs on the GPU (all tensors there) or on the CPU "
            "executor (all tensors on the CPU)")
    raise ExecutionError(f"{jit_fn.__name__}: argument {name!r} is on device "
                         f"{bad.device!r}; tritium launches on CUDA GPUs only")
