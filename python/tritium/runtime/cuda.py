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
import time

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
            params = self.metadata["params"] + _hidden_params(self.metadata)
            k = self._kernel = C.GpuKernel(self.name, image, bool(cubin), self.metadata["target"],
                                           self.metadata["num_warps"], self.metadata["shared"],
                                           [tuple(p) for p in params])
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
        if self.metadata.get("bounds_check"):
            return _launch_debug(self, grid, args, None, stream, device, check_pointers)
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
#
# compile_gpu runs in two halves. The front half (_compile_front) needs the
# GIL: the disk cache lookup and the Python code generator (AST -> tile IR,
# then the tile passes). The back half (_compile_back: GPU passes, PTX,
# ptxas) is C++ that runs without the GIL, for many kernels at once on a
# thread pool (`_C.compile_batch`). compile_gpu_batch runs the front halves
# one by one, then all the back halves in one batch; the autotuner uses it
# (through `precompile`) to compile every config of a tuning before timing.
#
# TRITIUM_COMPILE_TIMES=1 prints, per compile, where the time went (stderr);
# `GPUKernel.compile_times` keeps the figures (ms) of the compile that made it.

def _compile_to_ptx(C, tile, target, num_warps, num_stages, bounds_check=False):
    fn = getattr(C, "compile_to_ptx", None)
    if fn is None:
        raise NotImplementedError("this build of tritium._C has no NVIDIA backend "
                                  "(_C.compile_to_ptx); rebuild with `make build`")
    extra = {"bounds_check": True} if bounds_check else {}
    try:
        # compile_to_ptx works on its own copy: tile.module stays the tile IR.
        return fn(tile.module, tile.name, target, num_warps, num_stages, **extra)
    except C.UserError as e:
        message, file, line, col = user_error_args(e)
        raise CompilationError(message, file, line, col, function=tile.name) from None


_PHASES = (("lookup", "cache lookup"), ("ast", "AST walk"), ("tile", "tile passes"),
           ("ptx", "GPU passes+PTX"), ("ptxas", "ptxas"), ("store", "cache store"))

# Counters of the batch path (tests and benchmarks read them).
compile_stats = {"batches": 0, "batch_jobs": 0, "precompiled": 0, "precompiled_used": 0}

# Kernels a batch compiled ahead of the launches that will ask for them:
# (jit_fn, spec_key, num_warps, num_stages, target, name) -> GPUKernel. An
# entry is handed out once (the launcher keeps it from then on).
_precompiled = {}


def compile_times_enabled():
    return os.environ.get("TRITIUM_COMPILE_TIMES", "") not in ("", "0")


def _ms(t0):
    return (time.perf_counter() - t0) * 1e3


def _report_times(name, target, num_warps, times, note=""):
    parts = [f"{label} {times[k]:.1f} ms" for k, label in _PHASES if k in times]
    print(f"tritium compile {name} [{target}, num_warps={num_warps}]{note}: "
          + ", ".join(parts) + f"; total {times.get('total', 0.0):.1f} ms",
          file=sys.stderr, flush=True)


def _check_launch_options(num_warps, num_stages):
    num_warps, num_stages = int(num_warps), int(num_stages)
    if num_warps < 1 or num_warps > 32 or num_warps & (num_warps - 1):
        raise ValueError(f"num_warps must be a power of two in [1, 32], got {num_warps}")
    if num_stages < 1:
        raise ValueError(f"num_stages must be at least 1, got {num_stages}")
    return num_warps, num_stages


_ptxas_ids = {}


def _ptxas_identity(C, path):
    """What the cache key records of ptxas: its path, size and mtime (a
    stat, where `ptxas --version` would start a process on every cold
    start); C.ptxas_version() when the file cannot be stat'ed."""
    ident = _ptxas_ids.get(path)
    if ident is None:
        try:
            st = os.stat(path)
            ident = f"{os.path.realpath(path)}:{st.st_size}:{st.st_mtime_ns}"
        except OSError:
            ident = C.ptxas_version()
        _ptxas_ids[path] = ident
    return ident


class _Pending:
    """A specialisation through the front half: its tile IR, waiting for the
    back half (PTX, cubin) and the cache store."""

    __slots__ = ("tile", "target", "num_warps", "num_stages", "bounds_check", "store", "key",
                 "times", "t0")

    def __init__(self, tile, target, num_warps, num_stages, bounds_check, store, key, times, t0):
        self.tile, self.target, self.store, self.key = tile, target, store, key
        self.num_warps, self.num_stages = num_warps, num_stages
        self.bounds_check = bounds_check
        self.times, self.t0 = times, t0


def _build_tile(jit_fn, params, name, times):
    """The tile IR of one specialisation (compiler.compile_kernel); with
    `times`, the AST walk and the tile passes are timed apart."""
    from ..compiler import compiler as _compiler  # noqa: PLC0415
    if times is None:
        return _compiler.compile_kernel(jit_fn, params, name)
    from ..compiler import codegen  # noqa: PLC0415
    C = load_C()
    t0 = time.perf_counter()
    module, kernel_name = codegen.build_kernel(jit_fn, params, name)
    raw = C.print_module(module, False)
    times["ast"] = _ms(t0)
    t0 = time.perf_counter()
    check = _compiler.check_roundtrip_enabled()
    if check:
        C.verify(module)
    try:
        stats = C.run_passes(module, C.default_pipeline(), check)
    except C.UserError as e:
        message, file, line, col = user_error_args(e)
        raise CompilationError(message, file, line, col, function=kernel_name) from None
    asm = {"tir-raw": raw, "tir": C.print_module(module, False)}
    times["tile"] = _ms(t0)
    return _compiler.CompiledKernel(kernel_name, module, asm, params, stats)


def _compile_front(jit_fn, params, spec_key, num_warps, num_stages, target, name, use_cache,
                   bounds_check=False):
    """A GPUKernel (from the disk cache) or a _Pending for the back half."""
    t0 = time.perf_counter()
    times = {} if compile_times_enabled() else None
    C = load_C()
    num_warps, num_stages = _check_launch_options(num_warps, num_stages)
    ptxas = C.ptxas_path()
    store = _cache.default_cache() if use_cache else None
    key = None
    if store is not None:
        options = {"num_warps": num_warps, "num_stages": num_stages, "target": target,
                   "name": name}
        if bounds_check:
            options["bounds_check"] = True
        key = _cache.make_key(jit_fn, spec_key, options,
                              extra="ptxas=" + (_ptxas_identity(C, ptxas) if ptxas else "none"))
        blobs = store.get(key)
        if blobs is not None:
            try:
                kernel = GPUKernel.from_blobs(blobs)
            except (KeyError, ValueError, UnicodeDecodeError):
                pass  # an entry of an older layout: recompile and replace it
            else:
                if times is not None:
                    times["lookup"] = times["total"] = _ms(t0)
                    kernel.compile_times = times
                    _report_times(kernel.name, target, num_warps, times, " (disk cache hit)")
                return kernel
    if times is not None:
        times["lookup"] = _ms(t0)
    tile = _build_tile(jit_fn, params, name, times)
    return _Pending(tile, target, num_warps, num_stages, bool(bounds_check), store, key, times,
                    t0)


def _compile_error(C, e, tile):
    """A back-half failure as the single-compile path reports it: a user's
    mistake as CompilationError at its line, anything else as it is."""
    if isinstance(e, C.UserError):
        message, file, line, col = user_error_args(e)
        return CompilationError(message, file, line, col, function=tile.name)
    return e


def _finish(p, res):
    """The GPUKernel of a _Pending from its back half's result (a dict of
    compile_batch's), stored in the disk cache."""
    tile = p.tile
    asm = dict(tile.asm)
    asm["gir"] = res["gir"]
    asm["ptx"] = res["ptx"]
    if res.get("cubin") is not None:
        asm["cubin"] = res["cubin"]
    metadata = {
        "name": res["name"],
        "num_warps": int(res.get("num_warps", p.num_warps)),
        "num_stages": p.num_stages,
        "shared": int(res.get("shared_bytes", 0)),
        "target": p.target,
        "params": [[str(k), str(n)] for k, n in res["params"]],
        "ptxas_log": res.get("ptxas_log", ""),
    }
    if p.bounds_check:
        metadata["bounds_check"] = _bounds_metadata(res)
        metadata["debug"] = True
    if len(metadata["params"]) != len(tile.arg_names):
        raise RuntimeError(f"internal error: kernel {tile.name!r} has {len(tile.arg_names)} "
                           f"runtime arguments but its PTX {len(metadata['params'])} parameters")
    kernel = GPUKernel(res["name"], asm, metadata, tile)
    times = p.times
    if times is not None:
        times["ptx"] = float(res.get("ptx_ms", 0.0))
        if "cubin" in asm:
            times["ptxas"] = float(res.get("ptxas_ms", 0.0))
    if p.store is not None:
        t0 = time.perf_counter()
        p.store.put(p.key, kernel.to_blobs())
        if times is not None:
            times["store"] = _ms(t0)
    if times is not None:
        times["total"] = _ms(p.t0)
        kernel.compile_times = times
        _report_times(kernel.name, p.target, p.num_warps, times)
    return kernel


def _back_one(C, p):
    """The back half of one _Pending on this thread, with the GIL (bounds-
    checked kernels, or an older _C without compile_batch): returns
    compile_batch's dict for it, or raises."""
    t0 = time.perf_counter()
    res = _compile_to_ptx(C, p.tile, p.target, p.num_warps, p.num_stages, p.bounds_check)
    res["ptx_ms"] = _ms(t0)
    if C.ptxas_path():
        t0 = time.perf_counter()
        res["cubin"], res["ptxas_log"] = C.run_ptxas(res["ptx"], p.target, [])
        res["ptxas_ms"] = _ms(t0)
    return res


def _compile_back(C, pending, num_threads=0):
    """The back halves of `pending` (GPU passes, PTX, ptxas) on up to
    num_threads threads: a GPUKernel or an exception per entry, in order."""
    batch = getattr(C, "compile_batch", None)
    results = [None] * len(pending)
    jobs, where = [], []
    for i, p in enumerate(pending):
        if batch is None or p.bounds_check:
            try:
                results[i] = _back_one(C, p)
            except Exception as e:  # noqa: BLE001 -- reported in its slot
                results[i] = {"error": e}
        else:
            jobs.append((p.tile.module, p.tile.name, p.target, p.num_warps, p.num_stages))
            where.append(i)
    if jobs:
        for i, res in zip(where, batch(jobs, None, num_threads)):
            results[i] = res
    out = []
    for p, res in zip(pending, results):
        if res.get("error") is not None:
            out.append(_compile_error(C, res["error"], p.tile))
            continue
        try:
            out.append(_finish(p, res))
        except Exception as e:  # noqa: BLE001
            out.append(e)
    return out


def compile_gpu(jit_fn, params, spec_key, *, num_warps=DEFAULT_NUM_WARPS,
                num_stages=DEFAULT_NUM_STAGES, target="sm_90a", name=None, use_cache=True,
                bounds_check=False):
    """Compiles one specialisation of `jit_fn` for `target` (no GPU needed).

    params / spec_key: as JITFunction.specialize returns them. bounds_check:
    a debug build (see the debug launches below). Takes a kernel a batch
    (`precompile`) made for it, else looks in the disk cache first; stores
    what it compiles there."""
    if not bounds_check:
        kernel = _precompiled.pop((jit_fn, spec_key, num_warps, num_stages, target, name), None)
        if kernel is not None:
            compile_stats["precompiled_used"] += 1
            return kernel
    front = _compile_front(jit_fn, params, spec_key, num_warps, num_stages, target, name,
                           use_cache, bounds_check)
    if isinstance(front, GPUKernel):
        return front
    C = load_C()
    if bounds_check or getattr(C, "compile_batch", None) is None:
        return _finish(front, _back_one(C, front))
    out = _compile_back(C, [front], num_threads=1)[0]  # on this thread, GIL released
    if isinstance(out, BaseException):
        raise out.with_traceback(None)
    return out


class CompileRequest:
    """One specialisation for compile_gpu_batch: compile_gpu's arguments."""

    __slots__ = ("jit_fn", "params", "spec_key", "num_warps", "num_stages", "target", "name",
                 "use_cache")

    def __init__(self, jit_fn, params, spec_key, *, num_warps=DEFAULT_NUM_WARPS,
                 num_stages=DEFAULT_NUM_STAGES, target="sm_90a", name=None, use_cache=True):
        self.jit_fn, self.params, self.spec_key = jit_fn, params, spec_key
        self.num_warps, self.num_stages = num_warps, num_stages
        self.target, self.name, self.use_cache = target, name, use_cache

    def ident(self):
        """What tells two requests apart (compile_gpu's hand-off key)."""
        return (self.jit_fn, self.spec_key, self.num_warps, self.num_stages, self.target,
                self.name)

    def __repr__(self):
        return (f"CompileRequest({getattr(self.jit_fn, '__name__', self.jit_fn)}, "
                f"{self.spec_key}, num_warps={self.num_warps}, target={self.target})")


def compile_gpu_batch(requests, num_threads=0):
    """Compiles many specialisations: the front halves (cache lookup, AST
    walk) one after the other, then every back half (PTX, ptxas) at once on
    a thread pool of num_threads (0: one per core). Returns, per request and
    in order, a GPUKernel or the exception its compile raised (one failure
    does not stop the others). Identical requests are compiled once."""
    C = load_C()
    t0 = time.perf_counter()
    out = [None] * len(requests)
    pending, slots, first = [], [], {}
    for i, r in enumerate(requests):
        ident = r.ident()
        if ident in first:
            slots.append((i, first[ident]))
            continue
        first[ident] = i
        try:
            front = _compile_front(r.jit_fn, r.params, r.spec_key, r.num_warps, r.num_stages,
                                   r.target, r.name, r.use_cache)
        except Exception as e:  # noqa: BLE001 -- reported in its slot
            out[i] = e.with_traceback(None) if isinstance(e, CompilationError) else e
            continue
        if isinstance(front, GPUKernel):
            out[i] = front
        else:
            pending.append((i, front))
    t1 = time.perf_counter()
    if pending:
        compile_stats["batches"] += 1
        compile_stats["batch_jobs"] += len(pending)
        for (i, _), res in zip(pending, _compile_back(C, [p for _, p in pending], num_threads)):
            out[i] = res
    for i, j in slots:
        out[i] = out[j]
    if compile_times_enabled():
        print(f"tritium compile batch: {len(requests)} requests, {len(pending)} compiled; "
              f"front halves {(t1 - t0) * 1e3:.1f} ms, back halves "
              f"{(time.perf_counter() - t1) * 1e3:.1f} ms (parallel)", file=sys.stderr,
              flush=True)
    return out


def compile_request(jit_fn, args, kwargs):
    """The CompileRequest that `jit_fn[grid](*args, **kwargs)` would compile
    (as JITFunction.run and run_jit would make it), or None when that
    launch does not run on the GPU."""
    kwargs = dict(kwargs)
    launch_options = getattr(jit_fn, "_launch_options", None)
    if launch_options is None:
        from ..jit import LAUNCH_OPTIONS as launch_options  # noqa: PLC0415
    options = {o: kwargs.pop(o) for o in launch_options if o in kwargs}
    try:
        bound = jit_fn.signature.bind(*args, **kwargs)
    except TypeError:
        return None  # the launch itself reports it
    bound.apply_defaults()
    key, params, values = jit_fn.specialize(list(bound.arguments.values()))
    if not uses_gpu(values) or debug_enabled(jit_fn, options):
        return None  # the CPU executor, or a debug build (compiled on its own)
    device, _ = _launch_device(jit_fn, params, values)
    return CompileRequest(jit_fn, params, key,
                          num_warps=options.get("num_warps") or DEFAULT_NUM_WARPS,
                          num_stages=options.get("num_stages") or DEFAULT_NUM_STAGES,
                          target=default_target(device))


def precompile(requests, num_threads=0):
    """Compiles `requests` in one batch (compile_gpu_batch) and keeps the
    kernels for the compile_gpu calls that will ask for them. Returns
    (tokens, errors): tokens for discard_precompiled; errors maps a request's
    index to the exception its compile raised."""
    tokens, errors = [], {}
    for i, (r, res) in enumerate(zip(requests, compile_gpu_batch(requests, num_threads))):
        if isinstance(res, BaseException):
            errors[i] = res
            continue
        ident = r.ident()
        if ident not in _precompiled:
            _precompiled[ident] = res
            compile_stats["precompiled"] += 1
        tokens.append(ident)
    return tokens, errors


def discard_precompiled(tokens):
    """Forgets the precompiled kernels of `tokens` nobody asked for; returns
    the tokens whose kernels compile_gpu handed out."""
    taken = []
    for t in tokens:
        if _precompiled.pop(t, None) is None:
            taken.append(t)
    return taken


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
    debug = debug_enabled(jit_fn, options)
    ck = (key, num_warps, num_stages, device, debug)
    kernel = gpu_cache.get(ck)
    if kernel is None:
        try:
            kernel = compile_gpu(jit_fn, params, key, num_warps=num_warps,
                                 num_stages=num_stages, target=default_target(device),
                                 bounds_check=debug)
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
    if debug:
        _launch_debug(kernel, g, args, values, stream, device, False)
        return kernel
    # Pointers were checked above (torch says they are CUDA tensors).
    kernel.gpu_kernel().launch(g[0], g[1], g[2], stream, device, args, False)
    return kernel


# ---------------------------------------------------------------------------
# debug launches: bounds-checked kernels (TRITIUM_DEBUG=1, @jit(debug=True),
# or the launch option debug=True). See docs/gpu-debug.md.

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


def debug_enabled(jit_fn, options):
    """Whether a launch compiles with bounds checks: the launch option
    `debug`, else the @jit(debug=...) argument, else $TRITIUM_DEBUG."""
    d = options.get("debug") if options else None
    if d is None:
        d = getattr(jit_fn, "debug", None)
    if d is None:
        d = os.environ.get("TRITIUM_DEBUG", "").strip().lower() in _TRUE
    return bool(d)


def _bounds_metadata(res):
    """The JSON-able part of compile_to_ptx's bounds_check result."""
    bc = res.get("bounds_check")
    if bc is None:
        raise RuntimeError("this build of tritium._C ignores bounds_check; rebuild with "
                           "`make build`")
    return {
        "hidden_params": [[str(k), str(n)] for k, n in bc["hidden_params"]],
        "sites": [[str(kind), int(param), int(eb), str(file or ""), int(line), int(col)]
                  for kind, param, eb, file, line, col in bc["sites"]],
        "unchecked": int(bc["unchecked"]),
        "record_bytes": int(bc["record_bytes"]),
    }


def _hidden_params(metadata):
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


def _launch_debug(kernel, grid, args, values, stream, device, check_pointers):
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
        import warnings  # noqa: PLC0415
        warnings.warn("tritium debug launch: bounds checks need torch (for the error record); "
                      "import torch to enable them. Launching unchecked.", stacklevel=3)


def bounds_error(kernel_name, metadata, raw, extents):
    """The OutOfBoundsError a device record `raw` (BoundsRecordLayout's 32
    bytes) describes, or None when it records no violation. extents: the
    ones passed to the kernel, per parameter."""
    import struct  # noqa: PLC0415
    count, site, px, py, pz, nbytes, offset = struct.unpack_from("<IIIIIIq", raw, 0)
    if count == 0:
        return None
    sites = metadata["bounds_check"]["sites"]
    if site >= len(sites):
        return ExecutionError(f"kernel '{kernel_name}': an out-of-bounds access was reported "
                              f"with an invalid site {site} (a corrupt record?)")
    kind, param, elem_bytes, file, line, col = sites[site]
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
    if file and line > 0:
        import linecache  # noqa: PLC0415
        text = linecache.getline(file, line).rstrip("\r\n")
        if text.strip():
            stripped = text.lstrip()
            indent = len(text) - len(stripped)
            message += "\n    " + stripped.rstrip()
            if col > 0:
                message += "\n    " + " " * max(col - 1 - indent, 0) + "^"
    return OutOfBoundsError(message, file or "", line, col, kernel=kernel_name, kind=kind,
                            argument=arg, offset=first, extent=extent,
                            program_id=(px, py, pz), count=count)
