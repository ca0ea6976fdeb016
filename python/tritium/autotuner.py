"""`@tritium.autotune`, `tritium.Config` and `@tritium.heuristics`, with
Triton's semantics, plus results that persist on disk.

    @tritium.autotune(configs=[tritium.Config({"BLOCK": 64}, num_warps=2),
                               tritium.Config({"BLOCK": 256}, num_warps=8)],
                      key=["n"])
    @tritium.jit
    def kernel(x_ptr, n, BLOCK: tl.constexpr): ...

    kernel[grid](x, n)          # tunes on the first launch for each value of n

As in Triton:
- The values of the `key` arguments (and the dtypes of the tensor arguments)
  select an entry of `Autotuner.cache`; on a new key every config left after
  pruning is benchmarked and the fastest is kept (`kernel.best_config`).
- `prune_configs_by={"early_config_prune": fn(configs, named_args, **kwargs),
  "perf_model": fn(**args, **config.all_kwargs()) -> estimated time,
  "top_k": int, or a float <= 1 (a fraction of the configs)}`.
- `reset_to_zero` names tensors zeroed before every timing run (and once more
  before the launch that follows tuning, or reading the tuned config from the
  disk cache: the same result either way); `restore_value` names tensors saved
  before every timing run and restored after it. A user `pre_hook(args,
  reset_only=False)` / `post_hook(args, exception)` replaces those default
  hooks. `Config.pre_hook(args)` runs before every launch with that config.
- A config's kwargs become constexpr arguments of the launch; num_warps,
  num_stages, num_ctas and maxnreg are passed as launch options (no effect on
  the CPU executor).
- A single config (after pruning) is used without timing.
- `do_bench(kernel_call, quantiles)` replaces the benchmarker; by default it
  is `tritium.testing.do_bench` (CUDA events on a GPU, time.perf_counter on
  the CPU executor), `do_bench_cudagraph` with `use_cuda_graph=True`.

Beyond Triton:
- Every config is compiled (the kernel's `warmup`) before any is timed. A
  config that fails to compile or to run is skipped with a warning naming it;
  when every config fails, AutotunerError lists each one and why. On the GPU
  the configs not compiled yet are compiled in one batch first: the code
  generator runs for each in turn, then the GPU passes, PTX and ptxas of all
  of them in parallel on a C++ thread pool (`compiler.compiler.precompile`).
- Tuned results persist on disk (`cache_results=True` by default):
  `$TRITIUM_CACHE_DIR/autotune` (else `~/.cache/tritium/autotune`), one JSON
  file per (device, kernel source with its @jit callees, compiler version,
  pruned config list, key values), written atomically, with a checksum. A
  file whose checksum or identity does not match is ignored with a warning
  and rewritten after tuning. TRITIUM_CACHE_DISABLE=1 turns it off.
- `TRITIUM_PRINT_AUTOTUNING=1` (or TRITON_PRINT_AUTOTUNING=1) prints each
  config's time and the winner.
- `stats` (module level) and `Autotuner.bench_calls` count timing runs, so a
  caller can check that a result came from the disk without timing.
"""

import builtins
import contextlib
import hashlib
import inspect
import json
import os
import platform
import sys
import tempfile
import time
import warnings

from . import testing
from .compiler import compiler as _compiler
from .errors import CompilationError
from .jit import LAUNCH_OPTIONS
from .language.core import constexpr, _unwrap
from .runtime import cache as _cache
from .runtime import cuda as _cuda
from .runtime import debug as _debug

__all__ = ["Autotuner", "AutotunerError", "Config", "Heuristics", "KernelInterface",
           "autotune", "heuristics", "stats"]

CACHE_FORMAT = 1


@contextlib.contextmanager
def _tuning_lock(path):
    """An exclusive lock between processes for the result file `path`: flock on a file of
    its own in `autotune-locks/` beside the results' folder (kept: removing a lock file
    would race with a process that opened it). Where there is no flock, no lock: each
    process tunes, and the cache's atomic writes keep the file whole."""
    try:
        import fcntl  # noqa: PLC0415
    except ImportError:
        yield
        return
    results = os.path.dirname(os.path.abspath(path))
    locks = os.path.join(os.path.dirname(results), os.path.basename(results) + "-locks")
    try:
        _cache._makedirs_private(locks)  # as private as the results' folders
        fd = os.open(os.path.join(locks, os.path.basename(path) + ".lock"),
                     os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:  # a cache that cannot be written: tune without the lock
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


class AutotunerError(RuntimeError):
    """Autotuning could not pick a config (none left after pruning, or every
    config failed)."""


class _Stats:
    """Process-wide counters of the autotuner (see `reset`)."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.tunings = 0          # keys tuned by timing
        self.bench_calls = 0      # calls of the benchmarker (one per config timed)
        self.disk_hits = 0        # keys whose result came from the disk
        self.disk_misses = 0      # keys with no usable file on disk
        self.disk_rejected = 0    # files ignored (corrupt, or another identity)
        self.disk_writes = 0

    def as_dict(self):
        return dict(vars(self))

    def __repr__(self):
        return f"autotuner.stats({self.as_dict()})"


stats = _Stats()


def _env_flag(*names):
    return any(os.environ.get(n, "") not in ("", "0") for n in names)


def _print_enabled():
    return _env_flag("TRITIUM_PRINT_AUTOTUNING", "TRITON_PRINT_AUTOTUNING")


class KernelInterface:
    """`kernel[grid](*args, **kwargs)` is `kernel.run(*args, grid=grid,
    warmup=False, **kwargs)`."""

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.run(*args, grid=grid, warmup=False, **kwargs)


def _innermost_jit(fn):
    while not getattr(fn, "__tritium_jit__", False):
        inner = getattr(fn, "fn", None)
        if inner is None:
            raise TypeError(f"expected a @tritium.jit function (possibly wrapped by "
                            f"@autotune/@heuristics), got {fn!r}")
        fn = inner
    return fn


def _base_fn(fn):
    while not inspect.isfunction(fn):
        fn = fn.fn
    return fn


# ---------------------------------------------------------------------------
# tensors: torch tensors and numpy arrays


def _zero(x):
    if hasattr(x, "zero_"):
        x.zero_()
    else:
        x[...] = 0


def _clone(x):
    if hasattr(x, "clone"):
        return x.clone()
    return x.copy()


def _copy_into(dst, src):
    if hasattr(dst, "copy_"):
        dst.copy_(src)
    else:
        dst[...] = src


def _is_tensor(v):
    return hasattr(v, "dtype") and hasattr(v, "shape") and not isinstance(v, (int, float))


def _key_value(v):
    """A hashable stand-in for a key argument's value."""
    v = _unwrap(v)
    if _is_tensor(v):
        if len(v.shape) != 0:
            return ("tensor", str(v.dtype), tuple(v.shape))
        v = v.item()  # a 0-d tensor or a numpy scalar: its value
    try:
        hash(v)
    except TypeError:
        return repr(v)
    return v


def _describe_error(e):
    if isinstance(e, CompilationError):
        where = f" ({e.file}:{e.line})" if e.file and e.line else ""
        return f"CompilationError{where}: {e.message}"
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}".rstrip(": ")


# ---------------------------------------------------------------------------
# Config


class Config:
    """A configuration for the autotuner to try.

    kwargs: meta-parameters (constexpr arguments) of the kernel; num_warps,
    num_stages, num_ctas, maxnreg: launch options for GPUs (ignored by the CPU
    executor); pre_hook(args): called before every launch with this config,
    with all the launch's arguments by name."""

    def __init__(self, kwargs, num_warps=4, num_stages=3, num_ctas=1, maxnreg=None,
                 pre_hook=None):
        self.kwargs = kwargs
        self.num_warps = num_warps
        self.num_ctas = num_ctas
        self.num_stages = num_stages
        self.maxnreg = maxnreg
        self.pre_hook = pre_hook

    def __setstate__(self, state):
        self.kwargs = state.get("kwargs", {})
        self.num_warps = state.get("num_warps", 4)
        self.num_stages = state.get("num_stages", 3)
        self.num_ctas = state.get("num_ctas", 1)
        self.maxnreg = state.get("maxnreg", None)
        self.pre_hook = state.get("pre_hook", None)

    def all_kwargs(self):
        """The kwargs and the launch options that are not None."""
        opts = (("num_warps", self.num_warps), ("num_ctas", self.num_ctas),
                ("num_stages", self.num_stages), ("maxnreg", self.maxnreg))
        return {**self.kwargs, **{k: v for k, v in opts if v is not None}}

    def __str__(self):
        res = [f"{k}: {v}" for k, v in self.kwargs.items()]
        res.append(f"num_warps: {self.num_warps}")
        res.append(f"num_ctas: {self.num_ctas}")
        res.append(f"num_stages: {self.num_stages}")
        res.append(f"maxnreg: {self.maxnreg}")
        return ", ".join(res)

    def __repr__(self):
        return f"Config({self})"

    def __hash__(self):
        return hash((*self.all_kwargs().items(), self.pre_hook))

    def __eq__(self, other):
        if not isinstance(other, Config):
            return NotImplemented
        return ((*self.all_kwargs().items(), self.pre_hook)
                == (*other.all_kwargs().items(), other.pre_hook))

    def _identity(self):
        """A stable text for the disk cache key (the pre_hook by name)."""
        text = str(self)
        if self.pre_hook is not None:
            h = self.pre_hook
            text += (f", pre_hook: {getattr(h, '__module__', '?')}."
                     f"{getattr(h, '__qualname__', type(h).__name__)}")
        return text


# ---------------------------------------------------------------------------
# the disk cache of tuned results


def autotune_cache_dir():
    """$TRITIUM_CACHE_DIR/autotune, else ~/.cache/tritium/autotune."""
    return os.path.join(_cache.default_cache_dir(), "autotune")


def _checksum(doc):
    body = {k: v for k, v in doc.items() if k != "checksum"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _write_atomic(path, text):
    d = os.path.dirname(path)
    _cache._makedirs_private(d)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=d)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)  # readers see the old file or the new one
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _device_name(args):
    """The device a launch with these arguments runs on: the GPU's name and
    compute capability for CUDA tensors, else the CPU executor."""
    for v in args:
        dev = getattr(v, "device", None)
        if dev is not None and getattr(dev, "type", None) == "cuda":
            torch = sys.modules.get("torch")
            if torch is not None:
                index = dev.index if dev.index is not None else torch.cuda.current_device()
                major, minor = torch.cuda.get_device_capability(index)
                return f"cuda:{torch.cuda.get_device_name(index)}:sm_{major}{minor}"
    return "cpu-executor-" + platform.machine()


def _source_hash(jit_fn):
    """sha256 of the kernel's source and its @jit callees' (the runtime
    cache's fingerprint; the kernel's own source or bytecode when that
    fails)."""
    try:
        return _cache.source_fingerprint(jit_fn)
    except Exception:  # noqa: BLE001
        fn = _base_fn(jit_fn)
        try:
            src = inspect.getsource(fn)
        except (OSError, TypeError):
            code = fn.__code__
            src = repr(code.co_code) + repr(code.co_consts)
        return hashlib.sha256(src.encode("utf-8")).hexdigest()


# ---------------------------------------------------------------------------
# Autotuner


class Autotuner(KernelInterface):
    """The object `@autotune` makes of a @jit function (or of another
    @autotune/@heuristics object): `fn` is the wrapped object, `base_fn` the
    Python function, `cache` maps keys to the chosen Config, `best_config` is
    the config of the last launch."""

    def __init__(self, fn, arg_names, configs, key, reset_to_zero=None, restore_value=None,
                 pre_hook=None, post_hook=None, prune_configs_by=None, warmup=None, rep=None,
                 use_cuda_graph=False, do_bench=None, cache_results=True):
        self.fn = fn
        self.base_fn = _base_fn(fn)
        self.arg_names = list(arg_names)
        self.configs = list(configs) if configs else [Config({}, num_warps=4, num_stages=3,
                                                             num_ctas=1)]
        for c in self.configs:
            if not isinstance(c, Config):
                raise TypeError(f"autotune of {self.base_fn.__name__!r}: configs must be "
                                f"tritium.Config objects, got {c!r}")
        if isinstance(key, str):
            key = [key]
        self.keys = list(key)
        unknown = [k for k in self.keys if k not in self.arg_names]
        if unknown:
            # Triton ignores them; a typo here silently turns off re-tuning.
            warnings.warn(f"autotune of {self.base_fn.__name__!r}: key names "
                          f"{unknown} are not parameters of the kernel and are ignored",
                          stacklevel=3)
        self.cache = {}
        self.cache_results = bool(cache_results)
        self.reset_to_zero = list(reset_to_zero or [])
        self.restore_value = list(restore_value or [])
        for what, names in (("reset_to_zero", self.reset_to_zero),
                            ("restore_value", self.restore_value)):
            bad = [n for n in names if n not in self.arg_names]
            if bad:
                raise ValueError(f"autotune of {self.base_fn.__name__!r}: {what} names "
                                 f"{bad}, which are not parameters of the kernel")
        self.restore_copies = {}

        self.user_defined_pre_hook = pre_hook is not None
        self.user_defined_post_hook = post_hook is not None
        if pre_hook is not None:
            self.pre_hook = pre_hook
        elif self.reset_to_zero or self.restore_value:
            self.pre_hook = self._default_pre_hook
        else:
            self.pre_hook = lambda kwargs, reset_only=False: None
        if post_hook is not None:
            self.post_hook = post_hook
        elif self.restore_value:
            self.post_hook = self._default_post_hook
        else:
            self.post_hook = lambda kwargs, exception: None

        self.perf_model = None
        self.configs_top_k = 1.0
        self.early_config_prune = None
        if prune_configs_by:
            self.perf_model = prune_configs_by.get("perf_model")
            self.configs_top_k = prune_configs_by.get("top_k", 1.0)
            self.early_config_prune = prune_configs_by.get("early_config_prune")

        self.num_warmups = warmup
        self.num_reps = rep
        self.use_cuda_graph = use_cuda_graph
        self._user_do_bench = do_bench
        self.nargs = None
        self.best_config = None
        self.configs_timings = {}
        self.configs_failures = {}
        self.bench_time = 0.0
        self.bench_calls = 0
        # Where the config of the last launch came from: "memory", "disk",
        # "tuned" or "single" (one config after pruning, not timed).
        self.last_source = None
        self._source_hash = None
        # Compile requests (compiler.compiler.CompileRequest.ident()) a batch compiled
        # and the launcher took: later tunings leave them out of their batch.
        self._batched = set()
        self.__name__ = self.base_fn.__name__

    def __repr__(self):
        return f"Autotuner({self.base_fn.__module__}:{self.base_fn.__qualname__})"

    # -- hooks -----------------------------------------------------------------
    def _default_pre_hook(self, kwargs, reset_only=False):
        for name in self.reset_to_zero:
            if kwargs.get(name) is not None:
                _zero(kwargs[name])
        if not reset_only:
            self.restore_copies = {name: _clone(kwargs[name]) for name in self.restore_value
                                   if kwargs.get(name) is not None}

    def _default_post_hook(self, kwargs, exception):
        for name, value in self.restore_copies.items():
            _copy_into(kwargs[name], value)
        self.restore_copies = {}

    # -- benchmarking ----------------------------------------------------------
    @property
    def do_bench(self):
        if self._user_do_bench is not None:
            return self._user_do_bench
        warmup = self.num_warmups if self.num_warmups is not None else 25
        rep = self.num_reps if self.num_reps is not None else 100
        if self.use_cuda_graph:
            return lambda fn, quantiles: testing.do_bench_cudagraph(
                fn, rep=rep, quantiles=quantiles)
        return lambda fn, quantiles: testing.do_bench(fn, warmup=warmup, rep=rep,
                                                      quantiles=quantiles)

    @do_bench.setter
    def do_bench(self, fn):
        self._user_do_bench = fn

    def _launch_kwargs(self, config):
        """The config's kwargs as constexprs, and its launch options."""
        out = {k: constexpr(v) for k, v in config.kwargs.items()}
        out.update({k: v for k, v in config.all_kwargs().items() if k not in config.kwargs})
        return out

    def _bench(self, args, meta, grid, config):
        full_nargs = {**self.nargs, **meta, **config.all_kwargs()}
        launch = {**meta, **self._launch_kwargs(config)}

        def kernel_call():
            if config.pre_hook:
                config.pre_hook(full_nargs)
            self.pre_hook(full_nargs)
            try:
                self.fn.run(*args, grid=grid, warmup=False, **launch)
            except Exception as e:
                try:
                    self.post_hook(full_nargs, exception=e)
                finally:
                    raise  # noqa: B012 -- the kernel's error, not the hook's
            self.post_hook(full_nargs, exception=None)

        self.bench_calls += 1
        stats.bench_calls += 1
        t = self.do_bench(kernel_call, quantiles=(0.5, 0.2, 0.8))
        return _as_timing(t)

    def _tune(self, key, args, meta, grid, configs):
        """Compiles every config, times those that compiled, sets
        self.cache[key]. Failing configs are skipped with a warning."""
        name = self.base_fn.__name__
        verbose = _print_enabled()
        start = time.perf_counter()
        failures = {}
        candidates = []
        tokens = self._precompile(args, meta, configs)
        try:
            for config in configs:  # compile everything first
                try:
                    self.fn.warmup(*args, grid=grid, **meta, **self._launch_kwargs(config))
                except Exception as e:  # noqa: BLE001 -- reported, the config skipped
                    failures[config] = ("failed to compile", e)
                    warnings.warn(f"autotune of {name!r}: config [{config}] failed to compile "
                                  f"and is skipped: {_describe_error(e)}", stacklevel=4)
                    continue
                candidates.append(config)
        finally:
            if tokens:
                self._batched.update(_compiler.discard_precompiled(tokens))
        timings = {}
        for config in candidates:
            if verbose:
                print(f"tritium autotuning {name} with config [{config}]")
            try:
                timings[config] = self._bench(args, meta, grid, config)
            except Exception as e:  # noqa: BLE001
                failures[config] = ("failed to run", e)
                warnings.warn(f"autotune of {name!r}: config [{config}] failed to run and "
                              f"is skipped: {_describe_error(e)}", stacklevel=4)
        self.bench_time = time.perf_counter() - start
        self.configs_failures = failures
        if not timings:
            lines = [f"autotune of {name!r}: every config failed (key {key}):"]
            for config in configs:
                why, e = failures[config]
                lines.append(f"  [{config}] {why}: {_describe_error(e)}")
            first = next(iter(failures.values()))[1]
            raise AutotunerError("\n".join(lines)) from first
        best = builtins.min(timings, key=lambda c: timings[c])
        self.cache[key] = best
        self.configs_timings = timings
        stats.tunings += 1
        if verbose:
            print(f"tritium autotuning {name}, key {key}: {len(configs)} configs in "
                  f"{self.bench_time:.2f}s")
            for config in configs:
                if config in timings:
                    print(f"  [{config}]: {timings[config][0]:.6f} ms")
                else:
                    print(f"  [{config}]: {failures[config][0]}")
            print(f"  best config: [{best}]")
        return best

    def _precompile(self, args, meta, configs):
        """For a launch on the GPU: compiles, in one batch, every config not
        compiled yet, so that the warmup loop of _tune finds them compiled.
        Returns the batch's tokens (compiler.compiler.precompile). A config the
        batch cannot plan or compile is left to the warmup loop, which
        compiles it again and reports its error as before."""
        if not _on_gpu(args, meta):
            return []
        requests = []
        for config in configs:
            try:
                req = _compile_request(self.fn, args, {**meta, **self._launch_kwargs(config)})
            except Exception:  # noqa: BLE001 -- the warmup loop reports it
                continue
            if req is not None and req.ident() not in self._batched:
                requests.append(req)
        if not requests:
            return []
        tokens, _ = _compiler.precompile(requests)
        return tokens

    # -- disk cache ------------------------------------------------------------
    def _identity(self, key, configs, args):
        jit_fn = _innermost_jit(self.fn)
        if self._source_hash is None:
            self._source_hash = _source_hash(jit_fn)
        return {
            "kernel": self.base_fn.__qualname__,
            "device": _device_name(args),
            "source": self._source_hash,
            "compiler": _cache.compiler_version(),
            "configs": [c._identity() for c in configs],
            "key": [repr(k) for k in key],
        }

    def _cache_path(self, identity):
        digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()
        safe = "".join(ch if ch.isalnum() or ch == "_" else "_"
                       for ch in self.base_fn.__name__)[:100]
        return os.path.join(autotune_cache_dir(), f"{safe}-{digest}.json")

    def _load(self, path, identity, configs):
        """The cached best config, or None (a warning when a file is there
        but unusable)."""
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except FileNotFoundError:
            return None
        except OSError as e:
            warnings.warn(f"autotune of {self.base_fn.__name__!r}: cannot read {path}: {e}",
                          stacklevel=4)
            return None
        why = None
        try:
            doc = json.loads(text)
            if not isinstance(doc, dict):
                why = "not a JSON object"
            elif doc.get("format") != CACHE_FORMAT:
                why = f"format {doc.get('format')!r}, expected {CACHE_FORMAT}"
            elif doc.get("checksum") != _checksum(doc):
                why = "checksum mismatch"
            elif doc.get("identity") != identity:
                why = "it was tuned for another kernel source, device or config list"
            else:
                best = doc.get("best")
                timings = doc.get("timings")
                if (type(best) is not int or not 0 <= best < len(configs)
                        or not isinstance(timings, list) or len(timings) != len(configs)
                        or timings[best] is None):
                    why = "bad 'best' or 'timings'"
        except ValueError as e:  # JSONDecodeError, or NaN in the checksum body
            why = f"not valid JSON ({e})"
        if why is not None:
            stats.disk_rejected += 1
            warnings.warn(f"autotune of {self.base_fn.__name__!r}: ignoring the cached result "
                          f"{path}: {why}; tuning again", stacklevel=4)
            return None
        self.configs_timings = {c: _as_timing(t) for c, t in zip(configs, timings)
                                if t is not None}
        return configs[best]

    def _store(self, path, identity, configs, best):
        doc = {
            "format": CACHE_FORMAT,
            "identity": identity,
            "timings": [self.configs_timings.get(c) for c in configs],
            "failures": [None if c not in self.configs_failures else
                         f"{self.configs_failures[c][0]}: "
                         f"{_describe_error(self.configs_failures[c][1])}" for c in configs],
            "best": configs.index(best),
            "created": time.time(),
        }
        if any(t is not None and not all(x == x and abs(x) != float("inf") for x in t)
               for t in doc["timings"]):
            return  # NaN/inf timings: not worth persisting (and not JSON)
        doc["checksum"] = _checksum(doc)
        try:
            _write_atomic(path, json.dumps(doc, indent=1, sort_keys=True))
        except OSError as e:
            warnings.warn(f"autotune of {self.base_fn.__name__!r}: cannot write the tuned "
                          f"result to {path}: {e}", stacklevel=4)
            return
        stats.disk_writes += 1

    def _disk_enabled(self):
        return self.cache_results and not _env_flag("TRITIUM_CACHE_DISABLE")

    # -- launching -------------------------------------------------------------
    def _key(self, args, kwargs):
        all_args = {**self.nargs, **kwargs}
        _args = {k: v for k, v in all_args.items() if k in self.arg_names}
        key = [_key_value(_args[k]) for k in self.keys if k in _args]
        for v in _args.values():
            if _is_tensor(v):
                key.append(str(v.dtype))
        return tuple(key)

    def run(self, *args, grid=None, warmup=False, **kwargs):
        if warmup:
            return self.warmup(*args, grid=grid, **kwargs)
        self.nargs = dict(zip(self.arg_names, args))
        try:
            config = self._select(args, kwargs, grid)
            self.best_config = config
            if config.pre_hook is not None:
                config.pre_hook({**self.nargs, **kwargs, **config.all_kwargs()})
            if grid is None:
                return self.fn.run(*args, grid=grid, warmup=False, **kwargs,
                                   **self._launch_kwargs(config))
            # Through kernel[grid]: a JITFunction's launch then takes the C++
            # fast path once this config's specialisation has run.
            return self.fn[grid](*args, **kwargs, **self._launch_kwargs(config))
        finally:
            self.nargs = None

    def _select(self, args, kwargs, grid):
        if len(self.configs) == 1:
            self.last_source = "single"
            self._check_conflicts(self.configs, kwargs)
            return self.configs[0]
        key = self._key(args, kwargs)
        config = self.cache.get(key)
        if config is not None:
            self.last_source = "memory"
            return config
        pruned = self.prune_configs(kwargs)
        self._check_conflicts(pruned, kwargs)
        if len(pruned) == 1:
            self.cache[key] = pruned[0]
            self.last_source = "single"
            return pruned[0]
        if self._disk_enabled():
            identity = self._identity(key, pruned, list(args) + list(kwargs.values()))
            path = self._cache_path(identity)
            # One process tunes a key; the others (ranks of a distributed job sharing the
            # cache) wait for it here and then read its result instead of timing the configs.
            with _tuning_lock(path):
                config = self._load(path, identity, pruned)
                if config is not None:
                    stats.disk_hits += 1
                    self.cache[key] = config
                    self.last_source = "disk"
                    if _print_enabled():
                        print(f"tritium autotuning {self.base_fn.__name__}, key {key}: best "
                              f"config [{config}] (cached in {path})")
                else:
                    stats.disk_misses += 1
                    config = self._tune(key, args, kwargs, grid, pruned)
                    self.last_source = "tuned"
                    self._store(path, identity, pruned, config)
        else:
            config = self._tune(key, args, kwargs, grid, pruned)
            self.last_source = "tuned"
        # As Triton does after tuning: the pre_hook with reset_only=True (by default, zero the
        # reset_to_zero tensors), so the launch that follows starts from zero and not from what
        # the timing runs accumulated. A result read from disk stands for that tuning and gets
        # the same handling: the caller sees one answer whether the config was timed now or
        # in an earlier process (restore_value tensors hold the caller's data either way).
        self.pre_hook({**self.nargs, **kwargs, **config.all_kwargs()}, reset_only=True)
        return config

    def _check_conflicts(self, configs, kwargs):
        for config in configs:
            conflicts = kwargs.keys() & config.kwargs.keys()
            if conflicts:
                raise ValueError(f"Conflicting meta-parameters: {', '.join(sorted(conflicts))}."
                                 " Make sure that you don't re-define auto-tuned symbols.")

    def prune_configs(self, kwargs):
        """The configs left after early_config_prune and the perf model."""
        pruned = self.configs
        nargs = self.nargs or {}
        named_args = {**nargs, **{k: v for k, v in kwargs.items() if k in self.arg_names}}
        if self.early_config_prune:
            pruned = list(self.early_config_prune(self.configs, named_args, **kwargs))
            if not pruned:
                raise AutotunerError(
                    f"autotune of {self.base_fn.__name__!r}: no configs left after pruning; "
                    "`early_config_prune` must return at least one config")
        if self.perf_model:
            top_k = self.configs_top_k
            if isinstance(top_k, float) and top_k <= 1.0:
                top_k = builtins.max(1, int(len(pruned) * top_k))
            elif isinstance(top_k, bool) or not isinstance(top_k, int):
                raise TypeError("prune_configs_by['top_k'] must be an int or a float <= 1.0, "
                                f"got {top_k!r}")
            if len(pruned) > top_k:
                est = {config: self.perf_model(**{**nargs, **kwargs, **config.all_kwargs()})
                       for config in pruned}
                pruned = sorted(est, key=lambda c: est[c])[:top_k]
        return pruned

    def warmup(self, *args, grid=None, **kwargs):
        """Compiles every config left after pruning (on the GPU in one batch
        first, as tuning does); returns the kernels."""
        self.nargs = dict(zip(self.arg_names, args))
        tokens = []
        try:
            configs = self.prune_configs(kwargs)
            tokens = self._precompile(args, kwargs, configs)
            return [self.fn.warmup(*args, grid=grid, **kwargs, **self._launch_kwargs(config))
                    for config in configs]
        finally:
            self.nargs = None
            if tokens:
                self._batched.update(_compiler.discard_precompiled(tokens))


def _on_gpu(args, kwargs):
    """Whether some argument is a CUDA tensor (cheap: no specialisation)."""
    for v in (*args, *kwargs.values()):
        dev = getattr(v, "device", None)
        if dev is not None and getattr(dev, "type", dev) == "cuda":
            return True
    return False


def _compile_request(fn, args, kwargs):
    """The compiler.compiler.CompileRequest of launching `fn` (a @jit
    function, possibly under @heuristics) with these arguments on the GPU,
    or None."""
    if isinstance(fn, Heuristics):
        return _compile_request(fn.fn, args, fn._apply(args, dict(kwargs)))
    if getattr(fn, "__tritium_jit__", False):
        return _jit_compile_request(fn, args, kwargs)
    return None  # another autotuner inside: its own tuning compiles


def _jit_compile_request(jit_fn, args, kwargs):
    """The CompileRequest that `jit_fn[grid](*args, **kwargs)` would compile
    (as JITFunction.run would make it), or None when that launch does not
    run on the GPU."""
    kwargs = dict(kwargs)
    launch_options = getattr(jit_fn, "_launch_options", LAUNCH_OPTIONS)
    options = {o: kwargs.pop(o) for o in launch_options if o in kwargs}
    try:
        bound = jit_fn.signature.bind(*args, **kwargs)
    except TypeError:
        return None  # the launch itself reports it
    bound.apply_defaults()
    key, params, values = jit_fn.specialize(list(bound.arguments.values()))
    if not _cuda.uses_gpu(values) or _debug.debug_enabled(jit_fn, options):
        return None  # the CPU executor, or a debug build (compiled on its own)
    device, _ = _cuda.launch_device(jit_fn, params, values)
    return _compiler.CompileRequest(
        jit_fn, params, key,
        num_warps=options.get("num_warps") or _compiler.DEFAULT_NUM_WARPS,
        num_stages=options.get("num_stages") or _compiler.DEFAULT_NUM_STAGES,
        target=_cuda.default_target(device))


def _as_timing(t):
    """A benchmarker's result as a list of floats (compared as tuples, as
    Triton compares the lists of quantiles)."""
    if isinstance(t, (list, tuple)):
        return [float(x) for x in t]
    return [float(t)]


def autotune(configs, key, prune_configs_by=None, reset_to_zero=None, restore_value=None,
             pre_hook=None, post_hook=None, warmup=None, rep=None, use_cuda_graph=False,
             do_bench=None, cache_results=True):
    """Decorator for auto-tuning a @tritium.jit function (see the module
    docstring). configs: a list of Config; key: names of arguments whose
    values select a tuning; warmup/rep: ms for the default benchmarker;
    do_bench(kernel_call, quantiles): a custom benchmarker; cache_results:
    persist tuned results on disk (default True)."""

    def decorator(fn):
        return Autotuner(fn, fn.arg_names, configs, key, reset_to_zero, restore_value,
                         pre_hook=pre_hook, post_hook=post_hook,
                         prune_configs_by=prune_configs_by, warmup=warmup, rep=rep,
                         use_cuda_graph=use_cuda_graph, do_bench=do_bench,
                         cache_results=cache_results)

    return decorator


# ---------------------------------------------------------------------------
# Heuristics


class Heuristics(KernelInterface):
    """The object `@heuristics(values)` makes: each launch computes the
    meta-parameters `values[name](args)` (args: all the launch's arguments by
    name) and passes them as constexprs."""

    def __init__(self, fn, arg_names, values):
        self.fn = fn
        self.values = values
        self.arg_names = list(arg_names)
        self.base_fn = _base_fn(fn)
        self.__name__ = self.base_fn.__name__

    def __repr__(self):
        return f"Heuristics({self.base_fn.__module__}:{self.base_fn.__qualname__})"

    def _apply(self, args, kwargs):
        for name, heur in self.values.items():
            named = {**dict(zip(self.arg_names, args)),
                     **{k: _unwrap(v) for k, v in kwargs.items()}}
            kwargs[name] = constexpr(heur(named))
        return kwargs

    def run(self, *args, grid=None, warmup=False, **kwargs):
        kwargs = self._apply(args, kwargs)
        return self.fn.run(*args, grid=grid, warmup=warmup, **kwargs)

    def warmup(self, *args, grid=None, **kwargs):
        kwargs = self._apply(args, kwargs)
        return self.fn.warmup(*args, grid=grid, **kwargs)


def heuristics(values):
    """Decorator: `@heuristics({"BLOCK": lambda args: next_power_of_2(args["n"])})`
    computes meta-parameters from the other arguments at each launch."""

    def decorator(fn):
        return Heuristics(fn, fn.arg_names, values)

    return decorator
