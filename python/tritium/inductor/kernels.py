"""`triton.compile(ASTSource(...), target=GPUTarget(...), options=...)` as
Inductor calls it, on tritium: the compile, the compiled kernel and the
launcher Inductor's generated launch code calls.

Inductor (torch/_inductor/runtime/triton_heuristics.py) compiles every
autotuning config of a kernel ahead of time with `triton.compile`, then builds
a small Python launcher that calls

    binary.run(grid_0, grid_1, grid_2, stream, function, metadata,
               launch_metadata, launch_enter_hook, launch_exit_hook, *args)

with every parameter of the kernel in order, the constexprs included (the
Triton >= 3.3 calling convention, which Inductor picks because this surface
has no `AttrsDescriptor`). `CompiledKernel.run` here drops the specialised
parameters and hands the rest to the CPU executor.

Two targets: "cpu" (GPUTarget("cpu", 0, 0), Inductor's cpu_backend="triton")
runs on the CPU executor; "cuda" (GPUTarget("cuda", 90, 32) and the like)
compiles PTX/cubin with tritium's GPU compiler (its disk cache included) and
launches through the runtime's launcher on the stream Inductor passes. Any
other backend, or a launch option tritium lacks (cooperative grids,
programmatic dependent launch), raises NotImplementedError naming it.

On the GPU, Inductor's `debug` option (it asks for the device asserts of
indirect indexing) compiles the asserts away, as a Triton build with
debug=False does: tritium checks device asserts only in its bounds-checked
TRITIUM_DEBUG build, whose launches are far slower.
"""

import collections
import concurrent.futures
import hashlib
import operator
import os
import threading
import time
import weakref

from ..compile_api import build_specialization
from ..errors import CompilationError, load_C
from ..compiler.compiler import compile_gpu_future
from ..compiler.pipeline import compile_tile
from ..runtime.driver import GPUTarget  # noqa: F401 -- triton.backends.compiler's, here too
from ..runtime.launcher import convert_runtime_args

# How many kernels tritium compiled for Inductor in this process, and their
# names (tests assert on them; `tritium.inductor.stats()` returns a copy).
_stats_lock = threading.Lock()
# "seconds": time spent compiling on Inductor's thread (inside triton.compile,
# plus waiting for a GPU compile's back half when its kernel is first used).
compile_stats = {"compiles": 0, "launches": 0, "kernels": [], "seconds": 0.0}


def _add_seconds(t0):
    with _stats_lock:
        compile_stats["seconds"] += time.perf_counter() - t0


class _BackHalf:
    """A GPU compile's back half (GPU passes, PTX, ptxas), maybe still running
    on the thread pool. Pickled, it is the finished kernel: Inductor's compile
    workers send their CompiledKernels to the parent as their __dict__ (taken
    before it reads `metadata`, which waits), and a thread's future does not
    cross processes."""

    def __init__(self, future):
        self.future = future

    def result(self, timeout=None):
        return self.future.result(timeout)

    def __reduce__(self):
        return (_BackHalf.done, (self.future.result(),))

    @staticmethod
    def done(gpu):
        f = concurrent.futures.Future()
        f.set_result(gpu)
        return _BackHalf(f)


def _lazy(name, step="_resolve"):
    """An attribute of a GPU CompiledKernel known once its compile's back half
    is done: reading it waits for that (CompiledKernel._resolve), or, with
    step="_resolve_metadata", only for the back half's PTX step."""

    def get(self):
        d = self.__dict__
        if name not in d:
            getattr(self, step)()
        return d[name]

    def put(self, value):
        self.__dict__[name] = value

    return property(get, put, doc=f"the kernel's {name} (waits for its compile)")


class ASTSource:
    """Triton's `triton.compiler.compiler.ASTSource(fn, signature, constexprs,
    attrs)`: one specialisation of a @jit function. signature maps parameter
    names to type strings ("*fp32", "i32", "constexpr"); constexprs maps
    names (or Triton's (index,) tuples) to values; attrs maps (index,) to
    [["tt.divisibility", 16]] lists."""

    def __init__(self, fn, signature, constexprs=None, attrs=None):
        if not getattr(fn, "__tritium_jit__", False):
            raise TypeError(f"ASTSource expects a @triton.jit function, got {fn!r}")
        self.fn = fn
        self.signature = dict(signature or {})
        self.constants = {_name_of(fn, k): v for k, v in (constexprs or {}).items()}
        self.attrs = dict(attrs or {})
        self.ext = "ttir"
        self.name = fn.__name__

    def hash(self):
        parts = [self.fn.cache_key, repr(sorted(self.signature.items())),
                 repr(sorted((k, repr(v)) for k, v in self.constants.items())),
                 repr(sorted((repr(k), repr(v)) for k, v in self.attrs.items()))]
        return hashlib.sha256("|".join(parts).encode()).hexdigest()


def _name_of(fn, key):
    """A parameter name for a constexprs key: a name, an index or (index,)."""
    if isinstance(key, tuple) and len(key) == 1:
        key = key[0]
    if isinstance(key, int):
        return fn.arg_names[key]
    return key


# Metadata fields Inductor reads from a compiled kernel (and the launcher
# generator's getattr probes): names, launch shape, resources.
KernelMetadata = collections.namedtuple(
    "KernelMetadata",
    ["name", "hash", "target", "num_warps", "num_stages", "num_ctas", "cluster_dims",
     "shared", "debug", "launch_pdl", "launch_cooperative_grid", "global_scratch_size",
     "profile_scratch_size", "tmem_size"])


class CompiledKernel:
    """Triton's `triton.compiler.CompiledKernel` for a kernel tritium compiled
    for Inductor: `.run` (the launcher), `.metadata` and `.packed_metadata`,
    `.function`, `.hash`, `.name`, `.asm`, `.src`, `.n_regs`, `.n_spills`,
    `.launch_metadata(...)`. One class for both targets (Inductor rebuilds a
    pickled kernel as `CompiledKernel.__new__(CompiledKernel)` plus its
    __dict__): `tile` is set for the CPU executor, `gpu` (a GPUKernel) for
    the GPU.

    A GPU kernel is made while its compile's back half (GPU passes, PTX,
    ptxas) still runs on a thread pool, so that Inductor's several configs of
    one kernel compile at once: `gpu` and `asm` wait for it when first read,
    `metadata` and `packed_metadata` only for its PTX (which fixes the shared
    memory a launch asks for). Inductor reads them in make_launcher, after
    every config was submitted. For the kernels whose registers Inductor does
    not ask for before their first launch (_defers_load), `_init_handles`
    does not wait for ptxas either: the first launch does, so that the ptxas
    runs of a graph's kernels overlap."""

    gpu = _lazy("gpu")
    metadata = _lazy("metadata", "_resolve_metadata")
    packed_metadata = _lazy("packed_metadata", "_resolve_metadata")
    asm = _lazy("asm")

    def __init__(self, src, metadata, constexpr_params, tile=None, gpu_future=None,
                 ptx_future=None):
        self.src = src
        self.tile = tile
        self.hash = metadata.hash
        self.name = metadata.name
        self.function = None  # the driver handle stays inside tritium's launcher
        self.module = None
        self.n_regs = 0
        self.n_spills = 0
        if gpu_future is None:
            self.gpu = None
            self.metadata = self.packed_metadata = metadata
            self.asm = dict(tile.asm)
            self.n_max_threads = 1
        else:
            self._future, self._partial_metadata = _BackHalf(gpu_future), metadata
            if ptx_future is not None:
                self._ptx_future = _BackHalf(ptx_future)
            self.n_max_threads = 32 * metadata.num_warps
        # Positions in a launch's argument list that are specialised away,
        # and the ones that stay (in order).
        nparams = len(src.fn.arg_names)
        self._dropped = frozenset(constexpr_params)
        self._kept = tuple(i for i in range(nparams) if i not in self._dropped)
        self._nparams = nparams

    def _resolve(self):
        """Waits for the GPU compile and fills in what it decides (the kernel,
        its shared memory, its asm)."""
        future = self.__dict__.get("_future")
        if future is None:
            raise AttributeError(f"{self.name}: a CompiledKernel with neither a CPU nor a GPU "
                                 "compile behind it")
        t0 = time.perf_counter()
        try:
            gpu = future.result()
        finally:
            _add_seconds(t0)
        if "_partial_metadata" in self.__dict__:
            metadata = self._partial_metadata._replace(shared=gpu.shared)
            self.__dict__.update(metadata=metadata, packed_metadata=metadata)
            del self.__dict__["_partial_metadata"]
        self.__dict__.update(gpu=gpu, asm=dict(gpu.asm))
        del self.__dict__["_future"]
        self.__dict__.pop("_ptx_future", None)

    def _resolve_metadata(self):
        """Waits for the GPU compile's PTX (not for ptxas, where the compile
        runs in two steps) and fills in the metadata: its shared memory."""
        ptx = self.__dict__.get("_ptx_future")
        if ptx is None or "_partial_metadata" not in self.__dict__:
            return self._resolve()
        t0 = time.perf_counter()
        try:
            shared = ptx.result()["shared"]
        finally:
            _add_seconds(t0)
        metadata = self._partial_metadata._replace(shared=shared)
        self.__dict__.update(metadata=metadata, packed_metadata=metadata)
        del self.__dict__["_partial_metadata"]
        del self.__dict__["_ptx_future"]

    # Inductor's kernel names by kind (torch/_inductor/codegen: triton_poi_ for pointwise,
    # triton_per_ for persistent reductions). For these it reads no register count before
    # the first launch; for a non-persistent reduction (triton_red_) it may, to halve the
    # reduction block of a config that limits occupancy (_registers_read_first), so those,
    # and kernels of any other name, load (and wait for ptxas) in _init_handles as Triton's
    # do where that may happen.
    _DEFERRED_KINDS = ("triton_poi_", "triton_per_")

    def _defers_load(self):
        """Whether _init_handles leaves loading the kernel to its first launch:
        ptxas is still running and Inductor does not need its registers before."""
        future = self.__dict__.get("_future")
        if future is None or future.future.done():
            return False
        if self.name.startswith(self._DEFERRED_KINDS):
            return True
        return self.name.startswith("triton_red_") and not self._registers_read_first()

    def _registers_read_first(self):
        """Whether Inductor's precompile may read this reduction config's
        registers: its dynamic_scale_rblock halves the reduction block of a
        config whose registers limit occupancy, and only looks at them when the
        config's reduction block is above 64 elements and its programs
        (size_hints["x"] / XBLOCK) outnumber the SMs (one program per SM fits
        whatever the registers). The size hints are on Inductor's autotuner,
        the module global of the kernel's name; anything not found as expected
        answers True (wait, as Triton's kernels do)."""
        try:
            fn = self.src.fn
            tuner = getattr(fn, "__globals__", {}).get(fn.__name__)
            consts = self.src.constants
            rblock = 1  # every R* constant counted: a product at least Inductor's
            for name, value in consts.items():
                if name.startswith("R"):
                    rblock *= int(value)
            if rblock <= 64:
                return False
            x = int(tuner.size_hints["x"])
            xblock = int(consts.get("XBLOCK", 1))
            sms = int(tuner.device_props.multi_processor_count)
            return -(-x // xblock) > sms
        except Exception:  # noqa: BLE001 -- not Inductor's autotuner as expected: wait
            return True

    @property
    def shared(self):
        return self.metadata.shared

    @property
    def num_warps(self):
        return self.metadata.num_warps

    def _init_handles(self):
        """Triton loads the cubin here. On the GPU: loads the module on the
        current device and reads its registers and spills (Inductor skips
        configs that spill), or, where ptxas is still running and Inductor
        will not read the registers first (_defers_load), leaves that to the
        first launch; nothing to load for the CPU executor. A kernel rebuilt
        from Inductor's pickled state has `run` set to None in its __dict__,
        which would hide the method: dropped."""
        if self.__dict__.get("run", 0) is None:
            del self.__dict__["run"]
        self._install_c_run()
        if self._defers_load():
            # Registers and spills unknown until ptxas is done (Inductor then does not
            # skip a config for spilling); the first launch loads the kernel.
            self.n_regs = self.n_spills = None
            self._fast = self._first_launch
            return
        self._load()

    def _install_c_run(self):
        """Inductor reads `binary.run` once, right after _init_handles, and
        calls it for every launch. For a GPU kernel in a process that sees one
        GPU, that is a C function (lib/bindings/inductor_launch.cpp) with this
        class's `run` signature: once _load gave it the kernel, a warm launch
        runs no Python; everything else (a deferred kernel's first launch,
        hooks, errors) it hands to the method below."""
        if self.tile is not None or "_c_run" in self.__dict__:
            return
        from ..runtime import cuda as _cuda  # noqa: PLC0415

        try:
            if _cuda.device_count() != 1:
                return
        except Exception:  # noqa: BLE001 -- no driver: the method raises at the launch
            return
        # The fallback holds the kernel weakly: the C function it sits in is held by
        # the kernel (a capsule is not tracked by the cycle collector).
        ref = weakref.ref(self)

        def fallback(*args):
            kernel = ref()
            if kernel is None:
                raise RuntimeError("a launch of an Inductor kernel tritium has freed")
            return CompiledKernel.run(kernel, *args)

        c_run = load_C().inductor_launcher(list(self._kept), self._nparams, fallback)
        self.__dict__.update(_c_run=c_run, run=c_run)

    def _first_launch(self, grid_0, grid_1, grid_2, stream, args):
        """The warm launch of a kernel whose load _init_handles deferred: waits
        for its compile (counted as compile time), loads it, then launches as
        the bound warm path does from then on."""
        self._load()
        return self._fast(grid_0, grid_1, grid_2, stream, args)

    def _load(self):
        if self.gpu is not None:
            from ..runtime import cuda as _cuda  # noqa: PLC0415

            kernel = self.gpu.gpu_kernel()
            self._launch = kernel.launch
            attrs = kernel.attributes(_cuda.current_device())
            self.n_regs = attrs["num_regs"]
            self.n_spills = attrs["local_bytes"] // 4  # Triton counts 32-bit words
            self._fast = self._make_fast(kernel.launch, _cuda.device_count() == 1)
            c_run = self.__dict__.get("_c_run")
            if c_run is not None:
                try:
                    load_C().inductor_launcher_set_kernel(c_run, kernel)
                except ValueError:
                    pass  # hidden parameters (TRITIUM_DEBUG): the Python path launches

    def _make_fast(self, launch, one_device):
        """The warm launch, bound once: Inductor's launcher calls `run` for
        every launch of a model's step, so what runs here is per-launch host
        time. The C++ launcher reads the tensors' addresses itself; with one
        GPU in the process every tensor is on device 0, so no tensor is asked
        for its device. Returns False when the call needs the general path
        (a wrong argument count, no stream, an empty grid, several GPUs)."""
        kept, nparams = self._kept, self._nparams
        # The runtime arguments out of Inductor's (constexprs dropped): one itemgetter call
        # where two or more stay.
        if len(kept) == nparams:
            pick = None
        elif len(kept) <= 1:
            pick = lambda args: tuple(args[i] for i in kept)  # noqa: E731
        else:
            pick = operator.itemgetter(*kept)
        lock, stats = _stats_lock, compile_stats

        def fast(grid_0, grid_1, grid_2, stream, args):
            if (not one_device or stream is None or len(args) != nparams
                    or grid_0 <= 0 or grid_1 <= 0 or grid_2 <= 0):
                return False
            launch(grid_0, grid_1, grid_2, stream, 0, args if pick is None else pick(args),
                   False)
            with lock:
                stats["launches"] += 1
            return True

        return fast

    def launch_metadata(self, grid, stream, *args):
        """What the launch-enter hook receives (Triton's LazyDict): the name
        and the grid, here computed eagerly."""
        return {"name": self.name, "grid": tuple(grid), "stream": stream}

    def run(self, grid_0, grid_1, grid_2, stream, function, packed_metadata, launch_metadata,
            launch_enter_hook, launch_exit_hook, *args):
        fast = self.__dict__.get("_fast")
        if (fast is not None and launch_enter_hook is None and launch_exit_hook is None
                and fast(grid_0, grid_1, grid_2, stream, args)):
            return
        if len(args) != self._nparams:
            raise TypeError(f"{self.name}: the launcher passed {len(args)} arguments, the "
                            f"kernel has {self._nparams} parameters "
                            f"({', '.join(self.src.fn.arg_names)})")
        if launch_enter_hook is not None:
            launch_enter_hook(launch_metadata)
        grid = (int(grid_0), int(grid_1), int(grid_2))
        if grid[0] > 0 and grid[1] > 0 and grid[2] > 0:
            if self.gpu is not None:
                self._run_gpu(grid, stream, args)
            else:
                runtime = [args[i] for i in self._kept]
                self.tile.run(grid, convert_runtime_args(self.tile, runtime))
        with _stats_lock:
            compile_stats["launches"] += 1
        if launch_exit_hook is not None:
            launch_exit_hook(launch_metadata)

    def _run_gpu(self, grid, stream, args):
        """Launches on the GPU: tensors go as their addresses (None as a
        null pointer), on the device of the first tensor (else the current
        one) and the stream Inductor passed (None: torch's current one)."""
        from ..runtime import cuda as _cuda  # noqa: PLC0415

        runtime, device = [], None
        for i in self._kept:
            a = args[i]
            ptr = getattr(a, "data_ptr", None)
            if ptr is not None:
                if device is None:
                    device = a.get_device()
                runtime.append(ptr())
            elif a is None:
                runtime.append(0)
            else:
                runtime.append(a)
        if device is None or device < 0:
            device = _cuda.current_device()
        if stream is None:
            stream = _cuda.current_stream(device)
        launch = self.__dict__.get("_launch")
        if launch is None:
            launch = self._launch = self.gpu.gpu_kernel().launch
        launch(grid[0], grid[1], grid[2], stream, device, runtime, False)

    def __getitem__(self, grid):
        """binary[grid](*args): every parameter, constexprs included, in order."""
        g = tuple(grid) + (1,) * (3 - len(grid))

        def launch(*args):
            self.run(g[0], g[1], g[2], None, None, self.packed_metadata, None, None, None,
                     *args)

        return launch


_cache_lock = threading.Lock()
# (jit function, specialisation key) -> TileKernel. num_warps and num_stages
# do not change what the CPU executor runs, so Inductor's configs that differ
# only in them share one compile.
_tiles = {}
# (jit function, specialisation key, num_warps, num_stages, sm target) ->
# (Future of its shared memory, set once its PTX is; Future of the GPUKernel)
# (tritium's disk cache sits below this one).
_gpus = {}
_pool = None


def _back_pool():
    """The threads GPU compiles' back halves run on, one per core, in two pools:
    GPU passes and PTX (what Inductor's precompile waits for: the shared
    memory) on the first, ptxas (a process of its own; the first launch waits
    for it) on the second, so that a kernel's PTX never queues behind other
    kernels' ptxas runs."""
    global _pool
    with _cache_lock:
        if _pool is None:
            n = os.cpu_count() or 1
            _pool = (concurrent.futures.ThreadPoolExecutor(
                         max_workers=n, thread_name_prefix="tritium-inductor-ptx"),
                     concurrent.futures.ThreadPoolExecutor(
                         max_workers=n, thread_name_prefix="tritium-inductor-ptxas"))
        return _pool

# Launch options of Inductor's GPU configs tritium does not implement: a
# config that asks for one is refused by name rather than run without it.
_UNSUPPORTED_OPTIONS = ("launch_cooperative_grid", "launch_pdl", "num_consumer_groups",
                        "num_buffers_warp_spec", "maxnreg")


def sm_target(arch):
    """tritium's target name for Triton's GPUTarget.arch (an int such as 90,
    or a string such as "sm_90a"/"90"): the GPU's own target (sm_90a on an
    H200, $TRITIUM_TARGET respected) when the capability is the current
    device's, else the one for that capability."""
    from ..runtime import cuda as _cuda  # noqa: PLC0415

    text = str(arch)
    if text.startswith("sm_"):
        return text
    cap = int(text.rstrip("a"))
    major, minor = divmod(cap, 10)
    try:
        if _cuda.is_available():
            device = _cuda.current_device()
            here = _cuda.default_target(device)
            if here.startswith(f"sm_{cap}"):
                return here
    except Exception:  # noqa: BLE001 -- no driver: the capability's own target
        pass
    return _cuda.target_for_capability(major, minor)


def compile(src, target=None, options=None):  # noqa: A001 -- Triton's name
    """Triton's `triton.compile` for the `ASTSource` of a @jit function."""
    t0 = time.perf_counter()
    try:
        return _compile(src, target, options)
    finally:
        _add_seconds(t0)


def _compile(src, target, options):
    if not isinstance(src, ASTSource):
        raise NotImplementedError(
            "tritium's triton.compile takes an ASTSource only (compiling IR text or a "
            f"file, as Triton's IRSource does, is not implemented); got {type(src).__name__}")
    options = dict(options or {})
    backend = getattr(target, "backend", None) if target is not None else "cpu"
    if backend not in ("cpu", "cuda"):
        raise NotImplementedError(
            f"tritium's triton.compile: target backend {backend!r} is not implemented on the "
            "Inductor surface; 'cuda' (NVIDIA GPUs) and 'cpu' (torch._inductor.config."
            "cpu_backend = 'triton', run by tritium's CPU executor) are")
    fn = src.fn
    num_warps = int(options.get("num_warps", 4))
    num_stages = int(options.get("num_stages", 3))
    # Triton's signature carries every parameter; "constexpr" entries take
    # their value from the constants (or the parameter's default).
    params, key = build_specialization(fn, src.signature, src.constants, src.attrs)
    dropped = [i for i, (_, p) in enumerate(params) if p[0] == "const"]
    if backend == "cuda":
        return _compile_cuda(src, target, options, params, key, num_warps, num_stages, dropped)
    # The text too: _unsafe_update_src replaces it in place.
    ck = (fn, getattr(fn, "cache_key", None), key)
    with _cache_lock:
        tile = _tiles.get(ck)
    if tile is None:
        try:
            tile = compile_tile(fn, params)
        except CompilationError as e:
            raise e.with_traceback(None) from None
        with _cache_lock:
            tile = _tiles.setdefault(ck, tile)
        _count_compile(tile.name)
    metadata = _metadata(src, tile.name, target, options, num_warps, num_stages, shared=0)
    return CompiledKernel(src, metadata, dropped, tile=tile)


def _compile_cuda(src, target, options, params, key, num_warps, num_stages, dropped):
    """The "cuda" half of compile: a GPUKernel for the target's capability."""
    wanted = [k for k in _UNSUPPORTED_OPTIONS if options.get(k)]
    if wanted:
        raise NotImplementedError(
            f"tritium's triton.compile: the launch option(s) {', '.join(wanted)} of "
            f"{src.name} are not implemented")
    sm = sm_target(target.arch)
    ck = (src.fn, getattr(src.fn, "cache_key", None), key, num_warps, num_stages, sm)
    with _cache_lock:
        future = _gpus.get(ck)
    if future is None:
        ptx = concurrent.futures.Future()
        try:
            ptx_pool, ptxas_pool = _back_pool()
            kernel = compile_gpu_future(src.fn, params, key, ptx_pool, num_warps=num_warps,
                                        num_stages=num_stages, target=sm, ptx_future=ptx,
                                        assembler=ptxas_pool)
        except CompilationError as e:
            raise e.with_traceback(None) from None
        with _cache_lock:
            future = _gpus.setdefault(ck, (ptx, kernel))
        _count_compile(src.name)
    # shared is filled in once the PTX is (CompiledKernel._resolve_metadata).
    metadata = _metadata(src, src.name, target, options, num_warps, num_stages, shared=None)
    return CompiledKernel(src, metadata, dropped, gpu_future=future[1], ptx_future=future[0])


def _count_compile(name):
    with _stats_lock:
        compile_stats["compiles"] += 1
        compile_stats["kernels"].append(name)


def _metadata(src, name, target, options, num_warps, num_stages, shared):
    return KernelMetadata(
        name=name, hash=src.hash(), target=target, num_warps=num_warps,
        num_stages=num_stages, num_ctas=1, cluster_dims=(1, 1, 1), shared=shared,
        debug=bool(options.get("debug", False)), launch_pdl=False,
        launch_cooperative_grid=False, global_scratch_size=0, profile_scratch_size=0,
        tmem_size=0)
