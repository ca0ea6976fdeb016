"""GPU compilation and launch glue: tile IR -> PTX (`_C.compile_to_ptx`) ->
cubin (ptxas, when installed) -> the on-disk cache -> `_C.GpuKernel.launch`.

Nothing here touches the CUDA driver until a GPU launch (or `load()`) asks
for it, so compiling for a target works on a machine with no GPU, and the
CPU executor works with no libcuda at all. torch is never imported here; it
is used (for the current stream and device) only when the program has
imported it already.

Entry points:
  - `uses_gpu(values)`: whether a launch's runtime values hold GPU tensors.
  - `run_jit(jit_fn, bound, key, params, values, grid, options, warmup)`:
    what `JITFunction.run` calls for such a launch.
  - `compile_gpu(jit_fn, params, spec_key, ...)`: one specialisation,
    compiled (through the cache) to a `GPUKernel`.
"""

import json
import os
import sys

from ..errors import CompilationError, ExecutionError, load_C, user_error_args
from . import cache as _cache
from .launcher import PointerArg, pointer_arg

DEFAULT_NUM_WARPS = 4
DEFAULT_NUM_STAGES = 3


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


def _current_device():
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        return torch.cuda.current_device()
    return 0


def _device_of(obj):
    """The CUDA device index of a tensor-like, or None."""
    d = getattr(obj, "device", None)
    if d is None and getattr(obj, "base", None) is not None:
        d = getattr(obj.base, "device", None)
    if d is None:
        return None
    idx = getattr(d, "index", None)
    return idx if idx is not None else _current_device()


def uses_gpu(values):
    """Whether a launch's runtime values (jit.specialize's third result)
    include a tensor that is not on the CPU."""
    for v in values:
        if type(v) is PointerArg and v.device != "cpu":
            return True
    return False


# ---------------------------------------------------------------------------
# the compiled kernel


class GPUKernel:
    """One specialisation compiled for a GPU target.

    asm: "tir-raw", "tir" (tile IR), "gir" (GPU IR), "ptx", and "cubin" when
    ptxas ran. metadata: name, num_warps, num_stages, shared (dynamic shared
    memory bytes), target, params [[kind, name]], ptxas_log.
    Launch with `kernel[grid](*runtime_args)` or `kernel.launch(grid3, args)`."""

    def __init__(self, name, asm, metadata, tile=None):
        self.name = name
        self.asm = asm
        self.metadata = metadata
        self.arg_names = [p[1] for p in metadata["params"]]
        self.tile = tile  # the frontend's CompiledKernel (CPU executor), if at hand
        self._kernel = None
        self._cpu_module = None

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
            k = self._kernel = C.GpuKernel(self.name, image, bool(cubin), self.metadata["target"],
                                           self.metadata["num_warps"], self.metadata["shared"],
                                           [tuple(p) for p in self.metadata["params"]])
        return k

    def load(self, device=0):
        self.gpu_kernel().load(device)

    @property
    def n_regs(self):
        return self.gpu_kernel().attributes(_current_device())["num_regs"]

    @property
    def n_spills(self):
        return self.gpu_kernel().attributes(_current_device())["local_bytes"]

    def launch(self, grid, args, stream=None, device=None, check_pointers=True):
        """Launches on `grid` (3 ints, all > 0) with `args` (one per runtime
        parameter: GPU tensors or integer addresses, ints, floats, bools)."""
        if device is None:
            device = _current_device()
        if stream is None:
            stream = current_stream(device)
        self.gpu_kernel().launch(grid[0], grid[1], grid[2], stream, device, args, check_pointers)

    # -- kernel[grid](*args) ------------------------------------------------------
    def __getitem__(self, grid):
        def launch(*args, stream=None):
            from ..jit import normalize_grid  # noqa: PLC0415
            if len(args) != len(self.arg_names):
                raise TypeError(f"{self.name}: expected {len(self.arg_names)} runtime arguments "
                                f"({', '.join(self.arg_names)}), got {len(args)}")
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
                    device = _device_of(p.keepalive)
                vals[i] = p.address
            self.launch(g, vals, stream=stream, device=device)
            return None

        return launch

    def _run_cpu(self, grid, args):
        """Runs this specialisation on the CPU executor (CPU tensors)."""
        from ..jit import convert_runtime_args  # noqa: PLC0415
        if self.tile is not None:
            values = _exec_args(convert_runtime_args(self.tile, args))
            if all(x > 0 for x in grid):
                self.tile.run(grid, values)
            return None
        C = load_C()
        if self._cpu_module is None:
            self._cpu_module = C.parse_module(self.asm["tir"], f"<{self.name}>")
        values = _exec_args(convert_runtime_args(self, args))
        if all(x > 0 for x in grid):
            try:
                C.execute(self._cpu_module, self.name, tuple(grid), list(values), 0)
            except C.ExecutionError as e:
                message, file, line, col = user_error_args(e)
                raise ExecutionError(message, file or "", line, col) from None
        return None


def _exec_args(converted):
    """jit.convert_runtime_args's executor arguments (older versions also
    returned the devices, as a tuple)."""
    return converted[0] if isinstance(converted, tuple) else converted


# ---------------------------------------------------------------------------
# compiling


def _compile_to_ptx(C, tile, target, num_warps, num_stages):
    fn = getattr(C, "compile_to_ptx", None)
    if fn is None:
        raise NotImplementedError("this build of tritium._C has no NVIDIA backend "
                                  "(_C.compile_to_ptx); rebuild with `make build`")
    try:
        # compile_to_ptx works on its own copy: tile.module stays the tile IR.
        return fn(tile.module, tile.name, target, num_warps, num_stages)
    except C.UserError as e:
        message, file, line, col = user_error_args(e)
        raise CompilationError(message, file, line, col, function=tile.name) from None


def compile_gpu(jit_fn, params, spec_key, *, num_warps=DEFAULT_NUM_WARPS,
                num_stages=DEFAULT_NUM_STAGES, target="sm_90a", name=None, use_cache=True):
    """Compiles one specialisation of `jit_fn` for `target` (no GPU needed).

    params / spec_key: as JITFunction.specialize returns them. Looks in the
    disk cache first; stores what it compiles there."""
    from ..compiler.compiler import compile_kernel  # noqa: PLC0415
    C = load_C()
    num_warps, num_stages = int(num_warps), int(num_stages)
    if num_warps < 1 or num_warps > 32 or num_warps & (num_warps - 1):
        raise ValueError(f"num_warps must be a power of two in [1, 32], got {num_warps}")
    if num_stages < 1:
        raise ValueError(f"num_stages must be at least 1, got {num_stages}")
    ptxas = C.ptxas_path()
    store = _cache.default_cache() if use_cache else None
    key = None
    if store is not None:
        options = {"num_warps": num_warps, "num_stages": num_stages, "target": target,
                   "name": name}
        key = _cache.make_key(jit_fn, spec_key, options,
                              extra="ptxas=" + (C.ptxas_version() if ptxas else "none"))
        blobs = store.get(key)
        if blobs is not None:
            try:
                return GPUKernel.from_blobs(blobs)
            except (KeyError, ValueError, UnicodeDecodeError):
                pass  # an entry of an older layout: recompile and replace it
    tile = compile_kernel(jit_fn, params, name)
    res = _compile_to_ptx(C, tile, target, num_warps, num_stages)
    asm = dict(tile.asm)
    asm["gir"] = res["gir"]
    asm["ptx"] = res["ptx"]
    ptxas_log = ""
    if ptxas:
        cubin, ptxas_log = C.run_ptxas(res["ptx"], target, [])
        asm["cubin"] = cubin
    metadata = {
        "name": res["name"],
        "num_warps": int(res.get("num_warps", num_warps)),
        "num_stages": num_stages,
        "shared": int(res.get("shared_bytes", 0)),
        "target": target,
        "params": [[str(k), str(n)] for k, n in res["params"]],
        "ptxas_log": ptxas_log,
    }
    if len(metadata["params"]) != len(tile.arg_names):
        raise RuntimeError(f"internal error: kernel {tile.name!r} has {len(tile.arg_names)} "
                           f"runtime arguments but its PTX {len(metadata['params'])} parameters")
    kernel = GPUKernel(res["name"], asm, metadata, tile)
    if store is not None:
        store.put(key, kernel.to_blobs())
    return kernel


# ---------------------------------------------------------------------------
# JITFunction.run for GPU tensors


def _launch_device(jit_fn, params, values):
    """The device index of a launch (the first GPU tensor's) and the runtime
    arguments as the launcher takes them (pointers as addresses). Raises for
    CPU tensors mixed in, or tensors on non-CUDA devices."""
    device = None
    args = []
    for v in values:
        if type(v) is not PointerArg:
            args.append(v)
            continue
        if v.device != "cuda":
            _device_error(jit_fn, params, values, v)
        if device is None:
            device = _device_of(v.keepalive)
        args.append(v.address)
    return (device if device is not None else _current_device()), args


def _device_error(jit_fn, params, values, bad):
    names = [n for n, p in params if p[0] == "arg"]
    name = next((n for n, v in zip(names, values) if v is bad), "?")
    if bad.device == "cpu":
        raise ExecutionError(
            f"{jit_fn.__name__}: argument {name!r} is a CPU tensor, but other arguments are "
            "on the GPU; a launch runs on the GPU (all tensors there) or on the CPU "
            "executor (all tensors on the CPU)")
    raise ExecutionError(f"{jit_fn.__name__}: argument {name!r} is on device "
                         f"{bad.device!r}; tritium launches on CUDA GPUs only")


def run_jit(jit_fn, bound, key, params, values, grid, options, warmup):
    """JITFunction.run for a launch whose tensors are on the GPU: compile
    (per specialisation, options and device; memory and disk cached) and
    launch on torch's current stream. Returns the GPUKernel.

    bound: the launch's inspect.BoundArguments (for a callable grid's meta);
    key, params, values: JITFunction's specialisation key, the code
    generator's params and the runtime values (PointerArg for tensors);
    grid: as given to kernel[grid]; options: the launch options
    (num_warps, num_stages, stream, ...)."""
    device, args = _launch_device(jit_fn, params, values)
    num_warps = options.get("num_warps") or DEFAULT_NUM_WARPS
    num_stages = options.get("num_stages") or DEFAULT_NUM_STAGES
    try:
        gpu_cache = jit_fn.gpu_cache
    except AttributeError:
        gpu_cache = jit_fn.gpu_cache = {}
    ck = (key, num_warps, num_stages, device)
    kernel = gpu_cache.get(ck)
    if kernel is None:
        try:
            kernel = compile_gpu(jit_fn, params, key, num_warps=num_warps,
                                 num_stages=num_stages, target=default_target(device))
        except CompilationError as e:
            raise e.with_traceback(None) from None
        gpu_cache[ck] = kernel
    if warmup:
        return kernel
    if grid is None:
        raise TypeError(f"{jit_fn.__name__}: no grid given; launch with "
                        f"{jit_fn.__name__}[grid](...)")
    if callable(grid):
        from ..language.core import _unwrap  # noqa: PLC0415
        meta = {k: _unwrap(v) for k, v in bound.arguments.items()}
        meta.update(options)
        grid = grid(meta)
    if type(grid) is tuple and 1 <= len(grid) <= 3 and all(type(x) is int and x >= 0
                                                           for x in grid):
        g = grid + (1,) * (3 - len(grid))  # the common case, checked inline
    else:
        from ..jit import normalize_grid  # noqa: PLC0415
        g = normalize_grid(grid, None)
    if g[0] == 0 or g[1] == 0 or g[2] == 0:
        return kernel
    stream = options.get("stream")
    if stream is None:
        stream = current_stream(device)
    # Pointers were checked above (torch says they are CUDA tensors).
    kernel.gpu_kernel().launch(g[0], g[1], g[2], stream, device, args, False)
    return kernel
