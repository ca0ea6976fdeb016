"""The compile driver: one specialisation of a @jit function -> tile IR
(compiler.pipeline.compile_tile) -> GPU passes, PTX and cubin (ptxas, when
installed) in `_C.compile_batch`, which runs the one C++ pipeline
(lib/target/nvidia/pipeline.cpp) per job -> a GPUKernel, through the on-disk
cache. Needs no GPU: the target is a value.

Entry points:
  - `compile_gpu(jit_fn, params, spec_key, ...)`: one specialisation (what
    `tritium.compile` and a GPU launch of a @jit function call).
  - `compile_gpu_batch(requests)`: many at once, the back halves in parallel.
  - `precompile(requests)` / `discard_precompiled(tokens)`: the autotuner's
    batch, handed to the compile_gpu calls that its warmup loop makes.

`CompiledKernel` here is the base of both kinds of compiled kernel
(runtime.launcher), the name Triton users import from
`triton.compiler.compiler`.
"""

import os
import re
import sys
import time

from ..errors import CompilationError, load_C, user_error_args
from ..runtime import cache as _cache
from ..runtime.cuda import GPUKernel
from ..runtime.debug import bounds_metadata
from ..runtime.launcher import CompiledKernel  # noqa: F401 -- Triton's import path
from .dump import dump_stages
from .pipeline import compile_tile

DEFAULT_NUM_WARPS = 4
DEFAULT_NUM_STAGES = 3


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

_PHASES = (("lookup", "cache lookup"), ("ast", "AST walk"), ("tile", "tile passes"),
           ("ptx", "GPU passes+PTX"), ("ptxas", "ptxas"), ("store", "cache store"))

# Counters of the batch path (tests and benchmarks read them).
compile_stats = {"batches": 0, "batch_jobs": 0, "precompiled": 0, "precompiled_used": 0}

# Kernels a batch compiled ahead of the launches that will ask for them:
# (jit_fn, spec_key, num_warps, num_stages, target, name) -> GPUKernel. An
# entry is handed out once (the @jit function's gpu_cache keeps it from then on).
_precompiled = {}


def disabled_passes():
    """The optimizations TRITIUM_DISABLE_PASSES names (comma-separated; the GPU compile
    rejects a name it cannot leave out), sorted: part of the cache key, so a kernel compiled
    without them is never read back for a compile with them."""
    names = os.environ.get("TRITIUM_DISABLE_PASSES", "")
    return tuple(sorted({n.strip() for n in names.split(",") if n.strip()}))


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

    __slots__ = ("tile", "target", "num_warps", "num_stages", "bounds_check", "skip", "store",
                 "key", "times", "t0")

    def __init__(self, tile, target, num_warps, num_stages, bounds_check, skip, store, key,
                 times, t0):
        self.tile, self.target, self.store, self.key = tile, target, store, key
        self.num_warps, self.num_stages = num_warps, num_stages
        self.bounds_check, self.skip = bounds_check, skip
        self.times, self.t0 = times, t0



def _compile_front(jit_fn, params, spec_key, num_warps, num_stages, target, name, use_cache,
                   bounds_check=False):
    """A GPUKernel (from the disk cache) or a _Pending for the back half."""
    t0 = time.perf_counter()
    times = {} if compile_times_enabled() else None
    C = load_C()
    num_warps, num_stages = _check_launch_options(num_warps, num_stages)
    ptxas = C.ptxas_path()
    skip = disabled_passes()
    store = _cache.default_cache() if use_cache else None
    key = None
    if store is not None:
        options = {"num_warps": num_warps, "num_stages": num_stages, "target": target,
                   "name": name}
        if bounds_check:
            options["bounds_check"] = True
        if skip:
            options["disable_passes"] = list(skip)
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
    tile = compile_tile(jit_fn, params, name, times, dump=False)
    return _Pending(tile, target, num_warps, num_stages, bool(bounds_check), skip, store, key,
                    times, t0)


def _compile_error(C, e, tile):
    """A back-half failure as the single-compile path reports it: a user's
    mistake as CompilationError at its line, anything else as it is."""
    if isinstance(e, C.UserError):
        message, file, line, col = user_error_args(e)
        return CompilationError(message, file, line, col, function=tile.name)
    return e


def _finish(p, res, publish=None):
    """The GPUKernel of a _Pending from its back half's result (a dict of
    compile_batch's), stored in the disk cache. publish: called with the kernel
    before the store (whoever waits for it need not wait for the disk)."""
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
        # Where the constexprs sit among the parameters: compiled[grid](*every_parameter).
        "constexpr_positions": tile.metadata["constexpr_positions"],
    }
    # Registers and spills as ptxas reports them (Triton's n_regs / n_spills); absent without
    # ptxas (the driver's JIT compiles the PTX at load time).
    regs = re.search(r"Used (\d+) registers", metadata["ptxas_log"])
    spills = re.search(r"(\d+) bytes spill stores", metadata["ptxas_log"])
    if regs:
        metadata["n_regs"] = int(regs.group(1))
        metadata["n_spills"] = int(spills.group(1)) if spills else 0
    # TMA tensor maps the launcher encodes from the arguments at every launch (TensorMapSpec
    # flatten() lists); absent when there are none, so other kernels' metadata is unchanged.
    tensor_maps = [[int(x) for x in m] for m in res.get("tensor_maps", [])]
    if tensor_maps:
        metadata["tensor_maps"] = tensor_maps
    if p.bounds_check:
        metadata["bounds_check"] = bounds_metadata(res)
        metadata["debug"] = True
    if len(metadata["params"]) != len(tile.arg_names):
        raise RuntimeError(f"internal error: kernel {tile.name!r} has {len(tile.arg_names)} "
                           f"runtime arguments but its PTX {len(metadata['params'])} parameters")
    kernel = GPUKernel(res["name"], asm, metadata, tile)
    dump_stages(res["name"], asm, metadata)
    times = p.times
    if times is not None:
        times["ptx"] = float(res.get("ptx_ms", 0.0))
        if "cubin" in asm:
            times["ptxas"] = float(res.get("ptxas_ms", 0.0))
    if publish is not None:
        publish(kernel)
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


def _job(p):
    """compile_batch's job tuple for a _Pending."""
    return (p.tile.module, p.tile.name, p.target, p.num_warps, p.num_stages, p.bounds_check,
            list(p.skip))


def _compile_back(C, pending, num_threads=0, publish=None):
    """The back halves of `pending` (GPU passes, PTX, ptxas) on up to
    num_threads threads: a GPUKernel or an exception per entry, in order.
    publish: see _finish (for one entry)."""
    # Every GPU compile, bounds-checked or not, one or many, goes through
    # _C.compile_batch, i.e. the one C++ pipeline (compileKernel).
    batch = getattr(C, "compile_batch", None)
    if batch is None:
        raise NotImplementedError("this build of tritium._C has no NVIDIA backend "
                                  "(_C.compile_batch); rebuild with `make build`")
    jobs = [_job(p) for p in pending]
    results = batch(jobs, None, num_threads) if jobs else []
    out = []
    for p, res in zip(pending, results):
        if res.get("error") is not None:
            out.append(_compile_error(C, res["error"], p.tile))
            continue
        try:
            out.append(_finish(p, res, publish))
        except Exception as e:  # noqa: BLE001
            out.append(e)
    return out


def compile_gpu(jit_fn, params, spec_key, *, num_warps=DEFAULT_NUM_WARPS,
                num_stages=DEFAULT_NUM_STAGES, target="sm_90a", name=None, use_cache=True,
                bounds_check=False):
    """Compiles one specialisation of `jit_fn` for `target` (no GPU needed).

    params / spec_key: as JITFunction.specialize returns them. bounds_check:
    a debug build (see runtime.debug). Takes a kernel a batch
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
    return _back_one(front)


def _back_one(front, publish=None):
    """The back half of one _Pending on the calling thread (GIL released): its GPUKernel, or
    the error it raised. publish: see _finish."""
    out = _compile_back(load_C(), [front], num_threads=1, publish=publish)[0]
    if isinstance(out, BaseException):
        raise out.with_traceback(None)
    return out


def _back_ptx(front):
    """The first step of a back half run in two (compile_gpu_future's ptx_future): GPU
    passes and PTX, compile_batch without ptxas. Returns its result dict; raises its error."""
    C = load_C()
    res = C.compile_batch([_job(front)], False, 1)[0]
    if res.get("error") is not None:
        raise _compile_error(C, res["error"], front.tile).with_traceback(None)
    return res


def _back_assemble(front, res, publish=None):
    """The second step: ptxas on _back_ptx's PTX (assemble_ptx: the same assembly, register
    cap included, as the one-step compile makes), then the GPUKernel (_finish)."""
    C = load_C()
    if C.ptxas_path() is not None:  # as compile_batch's ptxas=None decides
        a = C.assemble_ptx(res["ptx"], res["target"], int(res["num_warps"]) * 32,
                           bool(res["loop_loads"]), int(res["shared_bytes"]))
        res.update(ptx=a["ptx"], cubin=a["cubin"], ptxas_log=a["ptxas_log"],
                   ptxas_ms=a["ptxas_ms"])
    return _finish(front, res, publish)


def compile_gpu_future(jit_fn, params, spec_key, executor, *, num_warps=DEFAULT_NUM_WARPS,
                       num_stages=DEFAULT_NUM_STAGES, target="sm_90a", ptx_future=None,
                       assembler=None):
    """compile_gpu with its back half (GPU passes, PTX, ptxas: most of the time, run with the
    GIL released) on `executor` (a concurrent.futures executor): returns a Future of the
    GPUKernel, done at once on a disk-cache hit. The front half (cache lookup, AST walk, tile
    passes) runs on this thread, so a mistake it finds raises here; one the back half finds
    comes out of the Future's result(). Lets a caller that compiles several configs one call
    at a time (Inductor) overlap their ptxas runs. The Future is done as soon as the kernel
    is: its disk-cache store follows on the executor's thread.

    ptx_future: a Future set, before ptxas runs, to {"shared": bytes} of the kernel (its
    PTX emitted, so what it asks of a launch is known): the back half then runs as two steps
    (_back_ptx, _back_assemble), which lets a caller prepare the launch while ptxas still
    runs. It fails with the kernel's Future where the compile fails before ptxas. assembler:
    the executor of the second step (default: `executor`, after the first), so that the
    first steps of later kernels do not queue behind earlier kernels' ptxas runs."""
    import concurrent.futures  # noqa: PLC0415

    front = _compile_front(jit_fn, params, spec_key, num_warps, num_stages, target, None, True)
    future = concurrent.futures.Future()
    if isinstance(front, GPUKernel):
        if ptx_future is not None:
            ptx_future.set_result({"shared": front.shared})
        future.set_result(front)
        return future

    def fail(e):
        if ptx_future is not None and not ptx_future.done():
            ptx_future.set_exception(e)
        if not future.done():
            future.set_exception(e)
        # else the kernel is out and the store failed: put() warns of what it could
        # not write; the next process compiles the kernel again.

    def assemble(res):
        try:
            _back_assemble(front, res, publish=future.set_result)
        except BaseException as e:  # noqa: BLE001 -- handed to whoever waits
            fail(e)

    def back():
        if not future.set_running_or_notify_cancel():
            return
        try:
            if ptx_future is None:
                _back_one(front, publish=future.set_result)
                return
            res = _back_ptx(front)
            ptx_future.set_result({"shared": int(res["shared_bytes"])})
        except BaseException as e:  # noqa: BLE001 -- handed to whoever waits
            fail(e)
            return
        if assembler is None:
            assemble(res)
        else:
            assembler.submit(assemble, res)

    executor.submit(back)
    return future


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
