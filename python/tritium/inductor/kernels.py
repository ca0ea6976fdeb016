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

Only the CPU target ("cpu") is implemented: a GPU target raises
NotImplementedError naming what is missing.
"""

import collections
import hashlib
import threading

from ..compile_api import build_specialization
from ..errors import CompilationError
from ..compiler.pipeline import compile_tile
from ..runtime.launcher import convert_runtime_args

# How many kernels tritium compiled for Inductor in this process, and their
# names (tests assert on them; `tritium.inductor.stats()` returns a copy).
_stats_lock = threading.Lock()
compile_stats = {"compiles": 0, "launches": 0, "kernels": []}


class GPUTarget(collections.namedtuple("GPUTarget", ["backend", "arch", "warp_size"])):
    """Triton's `triton.backends.compiler.GPUTarget(backend, arch, warp_size)`:
    backend "cpu" runs on tritium's CPU executor; "cuda" is not implemented
    on this surface yet."""

    __slots__ = ()


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
    for the CPU executor: `.run` (the launcher), `.metadata` and
    `.packed_metadata`, `.function`, `.hash`, `.name`, `.asm`, `.src`,
    `.n_regs`, `.n_spills`, `.launch_metadata(...)`."""

    def __init__(self, src, tile, metadata, constexpr_params):
        self.src = src
        self.tile = tile
        self.metadata = metadata
        self.packed_metadata = metadata
        self.hash = metadata.hash
        self.name = metadata.name
        self.asm = dict(tile.asm)
        self.function = None  # a CPU kernel has no driver handle
        self.module = None
        self.n_regs = 0
        self.n_spills = 0
        self.n_max_threads = 1
        # Positions in a launch's argument list that are specialised away.
        self._dropped = frozenset(constexpr_params)
        self._nparams = len(src.fn.arg_names)

    @property
    def shared(self):
        return self.metadata.shared

    @property
    def num_warps(self):
        return self.metadata.num_warps

    def _init_handles(self):
        """Nothing to load for the CPU executor (Triton loads the cubin here)."""

    def launch_metadata(self, grid, stream, *args):
        """What the launch-enter hook receives (Triton's LazyDict): the name
        and the grid, here computed eagerly."""
        return {"name": self.name, "grid": tuple(grid), "stream": stream}

    def run(self, grid_0, grid_1, grid_2, stream, function, packed_metadata, launch_metadata,
            launch_enter_hook, launch_exit_hook, *args):
        if len(args) != self._nparams:
            raise TypeError(f"{self.name}: the launcher passed {len(args)} arguments, the "
                            f"kernel has {self._nparams} parameters "
                            f"({', '.join(self.src.fn.arg_names)})")
        runtime = [a for i, a in enumerate(args) if i not in self._dropped]
        if launch_enter_hook is not None:
            launch_enter_hook(launch_metadata)
        grid = (int(grid_0), int(grid_1), int(grid_2))
        if grid[0] > 0 and grid[1] > 0 and grid[2] > 0:
            self.tile.run(grid, convert_runtime_args(self.tile, runtime))
        with _stats_lock:
            compile_stats["launches"] += 1
        if launch_exit_hook is not None:
            launch_exit_hook(launch_metadata)

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


def compile(src, target=None, options=None):  # noqa: A001 -- Triton's name
    """Triton's `triton.compile` for the `ASTSource` of a @jit function."""
    if not isinstance(src, ASTSource):
        raise NotImplementedError(
            "tritium's triton.compile takes an ASTSource only (compiling IR text or a "
            f"file, as Triton's IRSource does, is not implemented); got {type(src).__name__}")
    options = dict(options or {})
    backend = getattr(target, "backend", None) if target is not None else "cpu"
    if backend != "cpu":
        raise NotImplementedError(
            f"tritium's triton.compile: target backend {backend!r} is not implemented on the "
            "Inductor surface yet; only 'cpu' (torch._inductor.config.cpu_backend = 'triton', "
            "run by tritium's CPU executor) is")
    fn = src.fn
    num_warps = int(options.get("num_warps", 4))
    num_stages = int(options.get("num_stages", 3))
    # Triton's signature carries every parameter; "constexpr" entries take
    # their value from the constants (or the parameter's default).
    params, key = build_specialization(fn, src.signature, src.constants, src.attrs)
    ck = (fn, key)
    with _cache_lock:
        tile = _tiles.get(ck)
    if tile is None:
        try:
            tile = compile_tile(fn, params)
        except CompilationError as e:
            raise e.with_traceback(None) from None
        with _cache_lock:
            tile = _tiles.setdefault(ck, tile)
        with _stats_lock:
            compile_stats["compiles"] += 1
            compile_stats["kernels"].append(tile.name)
    metadata = KernelMetadata(
        name=tile.name, hash=src.hash(), target=target, num_warps=num_warps,
        num_stages=num_stages, num_ctas=1, cluster_dims=(1, 1, 1), shared=0,
        debug=bool(options.get("debug", False)), launch_pdl=False,
        launch_cooperative_grid=False, global_scratch_size=0, profile_scratch_size=0,
        tmem_size=0)
    dropped = [i for i, (_, p) in enumerate(params) if p[0] == "const"]
    return CompiledKernel(src, tile, metadata, dropped)
