"""torch.compile on tritium (tritium.inductor): Inductor's Triton kernels for
the CPU (cpu_backend="triton") compiled by tritium and run on its CPU
executor.

The models run in one subprocess (_inductor_models.py), since install()
replaces `triton` in sys.modules; the pieces of the surface are tested here
in-process through `surface.build()`, which installs nothing."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import tritium
import tritium.language as tl
from tritium.inductor import driver as surface_driver
from tritium.inductor import kernels as surface_kernels
from tritium.inductor import surface
from tritium.inductor.jit import jit as surface_jit

_HERE = os.path.dirname(os.path.abspath(__file__))
_PYTHON_DIR = os.path.dirname(_HERE)


def _has_torch():
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


needs_torch = pytest.mark.skipif(not _has_torch(), reason="torch is not installed")


def _env(tmp_path, **extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = _PYTHON_DIR + os.pathsep + env.get("PYTHONPATH", "")
    # A fresh Inductor cache: every kernel is generated and compiled here.
    env["TORCHINDUCTOR_CACHE_DIR"] = str(tmp_path / "inductor-cache")
    env.pop("TRITIUM_INDUCTOR", None)
    env.pop("TORCHINDUCTOR_COMPILE_THREADS", None)
    env.update(extra)
    return env


# ---------------------------------------------------------------------------
# models under torch.compile


@pytest.fixture(scope="module")
def model_results(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("inductor")
    proc = subprocess.run([sys.executable, os.path.join(_HERE, "_inductor_models.py")],
                          env=_env(tmp), capture_output=True, text=True, timeout=1800)
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert proc.returncode == 0 and lines, (proc.stdout[-3000:], proc.stderr[-5000:])
    return {r.get("model", "_summary"): r for r in lines}


MODELS = ["mlp", "reductions", "elementwise", "conv_bn", "dynamic", "training", "softmax",
          "cumsum", "dropout", "transformer", "special", "sort"]


@needs_torch
@pytest.mark.parametrize("model", MODELS)
def test_model_matches_eager(model_results, model):
    r = model_results[model]
    assert r["ok"], r["error"]
    # tritium compiled this model's kernels (Inductor's names) and ran them.
    assert r["compiles"] >= 1 and r["launches"] >= 1, r
    assert all(k.startswith("triton_") for k in r["kernels"]), r["kernels"]


@needs_torch
def test_no_real_triton(model_results):
    summary = model_results["_summary"]
    assert summary["surface"] is True
    assert summary["foreign_triton_modules"] == []


@needs_torch
def test_models_cover_inductor_kernel_kinds(model_results):
    """Pointwise, persistent-reduction and looped-reduction kernels were
    among those compiled."""
    names = [k for r in model_results.values() for k in r.get("kernels", [])]
    for kind in ("triton_poi_", "triton_per_", "triton_red_"):
        assert any(k.startswith(kind) for k in names), (kind, names)


# ---------------------------------------------------------------------------
# install() and TRITIUM_INDUCTOR


@needs_torch
def test_caches_across_processes(tmp_path):
    """A second process with the same Inductor and tritium caches: Inductor's FX graph cache
    hits, its autotuning cache picks each kernel's config without timing them again (one compile
    and one launch per kernel), and the outputs still match eager."""
    env = _env(tmp_path, TRITIUM_CACHE_DIR=str(tmp_path / "tritium-cache"))
    runs = []
    for _ in range(2):
        proc = subprocess.run([sys.executable, os.path.join(_HERE, "_inductor_models.py"),
                               "mlp", "softmax"], env=env, capture_output=True, text=True,
                              timeout=900)
        assert proc.returncode == 0, proc.stderr[-3000:]
        lines = [json.loads(x) for x in proc.stdout.splitlines() if x.startswith("{")]
        runs.append({r["model"]: r for r in lines if "model" in r})
    first, second = runs
    for model in ("mlp", "softmax"):
        a, b = first[model], second[model]
        assert a["ok"] and b["ok"], (a["error"], b["error"])
        assert a["fxgraph_cache"] == {"hit": 0, "miss": 1}, a
        assert b["fxgraph_cache"] == {"hit": 1, "miss": 0}, b
        kernels = set(b["kernels"])
        assert kernels == set(a["kernels"]) and b["compiles"] == len(kernels), (a, b)
        assert b["launches"] == len(kernels) < a["launches"], (a, b)


def _run_python(code, tmp_path, **env):
    return subprocess.run([sys.executable, "-c", code], env=_env(tmp_path, **env),
                          capture_output=True, text=True, timeout=600)


def test_env_variable_installs_surface(tmp_path):
    p = _run_python("import tritium, triton, triton.language as tl, os\n"
                    "from triton.compiler.compiler import ASTSource\n"
                    "print(triton.__tritium_surface__, tl.load is tritium.language.load,\n"
                    "      os.environ['TORCHINDUCTOR_COMPILE_THREADS'],\n"
                    "      os.environ['TORCHINDUCTOR_USE_STATIC_CUDA_LAUNCHER'])",
                    tmp_path, TRITIUM_INDUCTOR="1", TORCHINDUCTOR_USE_STATIC_CUDA_LAUNCHER="1")
    assert p.returncode == 0, p.stderr
    # Inductor's static CUDA launcher cannot launch tritium's kernels: off, whatever was set.
    assert p.stdout.split() == ["True", "True", "1", "0"]


def test_without_install_triton_is_absent(tmp_path):
    """The surface exists only after install(): plain `import tritium` leaves
    `triton` alone (and no real triton is installed on the CI machine)."""
    p = _run_python("import tritium, sys\n"
                    "try:\n    import triton\nexcept ImportError:\n    print('absent')\n"
                    "else:\n    print(getattr(triton, '__tritium_surface__', 'real'))",
                    tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() in ("absent", "real")


@needs_torch
def test_install_after_inductor_import_fails(tmp_path):
    p = _run_python("import torch._inductor.runtime.triton_compat\n"
                    "import tritium.inductor\n"
                    "try:\n    tritium.inductor.install()\n"
                    "except tritium.inductor.InstallError as e:\n    print('error:', e)",
                    tmp_path)
    assert p.returncode == 0, p.stderr
    assert "error:" in p.stdout and "imported before install()" in p.stdout


# ---------------------------------------------------------------------------
# the surface's pieces, without installing it


@pytest.fixture(scope="module")
def mods():
    return surface.build()


@surface_jit
def _axpy(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, alpha * x + y, mask=mask)


def _axpy_source(mods, block=32):
    ASTSource = mods["triton.compiler.compiler"].ASTSource
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32",
           "alpha": "fp32", "BLOCK": "constexpr"}
    return ASTSource(_axpy, sig, {"BLOCK": block}, {(0,): [["tt.divisibility", 16]]})


def test_compile_and_run_with_inductors_calling_convention(mods):
    triton = mods["triton"]
    before = surface_kernels.compile_stats["compiles"]
    target = mods["triton.backends.compiler"].GPUTarget("cpu", 0, 0)
    k = triton.compile(_axpy_source(mods), target=target, options={"num_warps": 2})
    assert surface_kernels.compile_stats["compiles"] == before + 1
    assert k.metadata.num_warps == 2 and k.metadata.shared == 0
    assert k.metadata.name == k.name and k.packed_metadata is k.metadata
    assert k.n_spills == 0 and k.n_regs == 0 and k.function is None
    assert "tir" in k.asm
    x = np.arange(100, dtype=np.float32)
    y = np.ones(100, dtype=np.float32)
    out = np.zeros(100, dtype=np.float32)
    k._init_handles()
    calls = []
    # grid, stream, function, metadata, launch metadata, hooks, then every
    # parameter (the constexpr BLOCK too), as Inductor's launcher passes them.
    k.run(4, 1, 1, 0, k.function, k.packed_metadata, "meta", calls.append, calls.append,
          x, y, out, 100, 2.0, 32)
    np.testing.assert_array_equal(out, 2 * x + 1)
    assert calls == ["meta", "meta"]
    # The same specialisation compiles once, whatever num_warps says.
    k2 = triton.compile(_axpy_source(mods), target=target, options={"num_warps": 8})
    assert surface_kernels.compile_stats["compiles"] == before + 1
    assert k2.metadata.num_warps == 8 and k2.hash == k.hash


def test_run_checks_argument_count(mods):
    k = mods["triton"].compile(_axpy_source(mods, 16), target=surface_kernels.GPUTarget(
        "cpu", 0, 0))
    with pytest.raises(TypeError, match="6 parameters"):
        k.run(1, 1, 1, 0, None, k.metadata, None, None, None, 1, 2)


def test_gpu_warm_launch_passes_the_runtime_arguments(mods):
    """The GPU kernel's warm launch (bound once in _init_handles; here on a stub of the C++
    launcher): Inductor's arguments with the specialised-away ones dropped, in order, on the
    stream it passed, counted; anything it cannot take (no stream, a wrong count, an empty grid,
    several GPUs) goes to the general path."""
    k = surface_kernels.CompiledKernel.__new__(surface_kernels.CompiledKernel)
    k.name = "k"
    for nparams, dropped in ((5, (4,)), (5, (1, 3)), (3, ()), (2, (0,)), (2, (0, 1))):
        k._nparams = nparams
        k._kept = tuple(i for i in range(nparams) if i not in dropped)
        calls = []
        fast = k._make_fast(lambda *a: calls.append(a), True)
        args = tuple(f"a{i}" for i in range(nparams))
        before = surface_kernels.compile_stats["launches"]
        assert fast(3, 2, 1, 77, args) is True
        assert surface_kernels.compile_stats["launches"] == before + 1
        (g0, g1, g2, stream, device, runtime, check), = calls
        assert (g0, g1, g2, stream, device, check) == (3, 2, 1, 77, 0, False)
        assert list(runtime) == [a for i, a in enumerate(args) if i not in dropped]
        for bad in ((3, 2, 1, None, args), (3, 2, 1, 77, args[:-1]), (0, 1, 1, 77, args),
                    (1, 1, -2, 77, args)):
            assert fast(*bad) is False
        assert k._make_fast(lambda *a: calls.append(a), False)(3, 2, 1, 77, args) is False
        assert len(calls) == 1


def test_different_constants_hash_apart(mods):
    assert _axpy_source(mods, 16).hash() != _axpy_source(mods, 64).hash()
    assert _axpy_source(mods, 16).hash() == _axpy_source(mods, 16).hash()


def test_cuda_target_compiles_for_the_gpu(mods):
    """GPUTarget("cuda", cc, 32) compiles with tritium's GPU compiler (no GPU needed to
    compile): PTX for the capability's target, one compile per (specialisation, num_warps,
    num_stages, target); launching is test_gpu_inductor's."""
    GPUTarget = mods["triton.backends.compiler"].GPUTarget
    before = surface_kernels.compile_stats["compiles"]
    k = mods["triton"].compile(_axpy_source(mods, 128), target=GPUTarget("cuda", 90, 32),
                               options={"num_warps": 2, "num_stages": 2, "debug": True})
    # The back half (GPU passes, PTX, ptxas) runs on a thread; what it decides is read after.
    seconds = surface_kernels.compile_stats["seconds"]
    assert "_future" in k.__dict__ and "metadata" not in k.__dict__
    assert k.gpu is not None and k.tile is None
    assert "_future" not in k.__dict__ and surface_kernels.compile_stats["seconds"] >= seconds
    assert ".target sm_90" in k.asm["ptx"] and k.name == "_axpy"
    assert k.metadata.num_warps == 2 and k.metadata.num_stages == 2
    assert k.metadata.shared == k.gpu.shared and k.n_max_threads == 64
    # The constexpr BLOCK is dropped from a launch's arguments, the rest kept in order.
    assert k._kept == (0, 1, 2, 3, 4)
    again = mods["triton"].compile(_axpy_source(mods, 128), target=GPUTarget("cuda", 90, 32),
                                   options={"num_warps": 2, "num_stages": 2})
    assert again.gpu is k.gpu
    assert surface_kernels.compile_stats["compiles"] == before + 1
    w4 = mods["triton"].compile(_axpy_source(mods, 128), target=GPUTarget("cuda", 80, 32),
                                options={"num_warps": 4})
    assert ".target sm_80" in w4.asm["ptx"] and w4.metadata.num_warps == 4
    assert surface_kernels.compile_stats["compiles"] == before + 2


_FRESH_KERNEL = """
import tritium.language as tl
from tritium.inductor.jit import jit

@jit
def {name}(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2.0, mask=offs < n)
"""


def _fresh_kernel(tmp_path, name):
    """A surface @jit function of a module of its own (nothing about it cached yet)."""
    import importlib.util  # noqa: PLC0415

    path = tmp_path / f"{name}.py"
    path.write_text(_FRESH_KERNEL.format(name=name))
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, name)


def _fresh_source(mods, fn):
    ASTSource = mods["triton.compiler.compiler"].ASTSource
    return ASTSource(fn, {"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}, {"BLOCK": 64},
                     {(0,): [["tt.divisibility", 16]]})


def test_cuda_compile_reads_the_kernel_source_once(mods, tmp_path, monkeypatch):
    """A surface @jit function reads its source when it is made (Inductor reads `src`); the
    compile (cache key, code generator) takes it from there instead of reading and
    tokenizing the file again."""
    import inspect  # noqa: PLC0415

    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path / "cache"))
    fn = _fresh_kernel(tmp_path, "_read_once_kernel")
    reads = []
    real = inspect.getsourcelines

    def counted(obj):
        reads.append(obj)
        return real(obj)

    monkeypatch.setattr(inspect, "getsourcelines", counted)
    GPUTarget = mods["triton.backends.compiler"].GPUTarget
    k = mods["triton"].compile(_fresh_source(mods, fn), target=GPUTarget("cuda", 90, 32),
                               options={"num_warps": 1})
    assert ".target sm_90a" in k.asm["ptx"]
    assert [getattr(o, "__name__", o) for o in reads] == []


def test_cuda_compile_does_not_wait_for_the_cache_store(mods, tmp_path, monkeypatch):
    """The kernel of a GPU compile is handed to Inductor as soon as it is made: the write of
    its disk-cache entry follows on the compile thread."""
    import threading  # noqa: PLC0415

    from tritium.runtime import cache as disk_cache  # noqa: PLC0415

    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path / "cache"))
    release, stored = threading.Event(), threading.Event()
    real_put = disk_cache.KernelCache.put

    def slow_put(self, key, blobs):
        release.wait(60)
        out = real_put(self, key, blobs)
        stored.set()
        return out

    monkeypatch.setattr(disk_cache.KernelCache, "put", slow_put)
    fn = _fresh_kernel(tmp_path, "_store_after_kernel")
    GPUTarget = mods["triton.backends.compiler"].GPUTarget
    k = mods["triton"].compile(_fresh_source(mods, fn), target=GPUTarget("cuda", 90, 32),
                               options={"num_warps": 1})
    try:
        gpu = k.__dict__["_future"].result(timeout=20)
        assert not stored.is_set()
    finally:
        release.set()
    assert gpu.name == "_store_after_kernel" and k.gpu is gpu
    assert stored.wait(60)
    entries = [f for _, _, files in os.walk(tmp_path / "cache") for f in files]
    assert len(entries) == 1 and entries[0].endswith(".tkc")


# What the subprocess scripts below start with: the surface's pieces, and the directory of
# their kernel modules (argv[1]) on the path.
_SURFACE_PRELUDE = r"""
import importlib, os, sys, threading, types
sys.path.insert(0, sys.argv[1])
from tritium.inductor import kernels as K, surface
mods = surface.build()
GPUTarget = mods["triton.backends.compiler"].GPUTarget
ASTSource = mods["triton.compiler.compiler"].ASTSource
"""

_DEFERRED_SCRIPT = _SURFACE_PRELUDE + r"""
poi = importlib.import_module("triton_poi_fused_mul_0").triton_poi_fused_mul_0
red_mod = importlib.import_module("triton_red_fused_mul_0")
red = red_mod.triton_red_fused_mul_0
# In Inductor's module the kernel's name is its autotuner, which holds the size hints.
tuner = types.SimpleNamespace(size_hints={"x": 4096},
                              device_props=types.SimpleNamespace(multi_processor_count=132))
red_mod.triton_red_fused_mul_0 = tuner

def compile(fn, block=64, r0=None):
    sig = {"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
    consts = {"BLOCK": block}
    if r0 is not None:
        sig["R0_BLOCK"], consts["R0_BLOCK"] = "constexpr", r0
    src = ASTSource(fn, sig, consts, {(0,): [["tt.divisibility", 16]]})
    return mods["triton"].compile(src, target=GPUTarget("cuda", 90, 32),
                                  options={"num_warps": 2})

k, r = compile(poi), compile(red, r0=128)
# ptxas waits for the flag: the metadata (shared memory) is known without it.
assert k.metadata.shared == 0 and k.packed_metadata is k.metadata
assert not k.__dict__["_future"].future.done()
k._init_handles()   # a pointwise kernel: the load is left to its first launch
assert k.n_regs is None and k.n_spills is None and k.__dict__["_fast"] == k._first_launch
assert not k.__dict__["_future"].future.done()
# A looped reduction whose programs outnumber the SMs, its reduction block above 64: Inductor
# may read its registers in precompile (to halve the block), so it waits.
assert r._registers_read_first() is True and r._defers_load() is False
assert r.metadata.shared == 0      # its PTX did not queue behind the first kernel's ptxas
r_small = compile(red, block=32, r0=64)     # a reduction block of 64: registers never read
assert r_small._defers_load() is True
tuner.size_hints["x"] = 100                 # fewer programs than SMs: registers never read
r_few = compile(red, block=16, r0=128)
assert r_few._defers_load() is True
red_mod.triton_red_fused_mul_0 = red        # no autotuner where Inductor keeps it: wait
assert compile(red, block=8, r0=128)._registers_read_first() is True
calls = []

def load():   # _load without a driver: the warm path on a stub of the C++ launcher
    gpu = k.gpu
    k._fast = k._make_fast(lambda *a: calls.append(a), True)

k._load = load
threading.Timer(0.5, lambda: open(os.environ["PTXAS_FLAG"], "w").close()).start()
before = K.compile_stats["seconds"]
k.run(2, 1, 1, 7, None, k.packed_metadata, None, None, None, "x", 100, 64)
waited = K.compile_stats["seconds"] - before
assert len(calls) == 1 and calls[0][:5] == (2, 1, 1, 7, 0) and list(calls[0][5]) == ["x", 100]
assert waited >= 0.3, waited
k.run(2, 1, 1, 7, None, k.packed_metadata, None, None, None, "x", 100, 64)
assert len(calls) == 2
assert k.asm["cubin"] and ".target sm_90a" in k.asm["ptx"] and k.metadata.shared == 0
assert r.gpu.asm["cubin"]
print("OK")
"""


def _run_with_ptxas(tmp_path, script, ptxas_body, **env):
    """Runs `script` in a fresh process whose ptxas is a shell script of `ptxas_body` (the real
    one is $REAL_PTXAS), with an empty tritium cache and Inductor-named kernel modules in
    tmp_path: triton_poi_fused_mul_0 and triton_red_fused_mul_0 (with an R0_BLOCK)."""
    real = "/usr/local/cuda/bin/ptxas"
    if not os.access(real, os.X_OK):
        pytest.skip("needs ptxas")
    wrapper = tmp_path / "ptxas"
    wrapper.write_text(f"#!/bin/sh\nREAL_PTXAS={real}\n{ptxas_body}")
    wrapper.chmod(0o755)
    (tmp_path / "triton_poi_fused_mul_0.py").write_text(
        _FRESH_KERNEL.format(name="triton_poi_fused_mul_0"))
    (tmp_path / "triton_red_fused_mul_0.py").write_text(_FRESH_KERNEL.format(
        name="triton_red_fused_mul_0").replace("BLOCK: tl.constexpr)",
                                               "BLOCK: tl.constexpr, R0_BLOCK: tl.constexpr)"))
    env = _env(tmp_path, TRITIUM_PTXAS=str(wrapper), TRITIUM_CACHE_DIR=str(tmp_path / "cache"),
               **env)
    return subprocess.run([sys.executable, "-c", script, str(tmp_path)], env=env,
                          capture_output=True, text=True, timeout=120)


def test_cuda_kernel_loads_at_its_first_launch(tmp_path):
    """A pointwise kernel's GPU compile hands out its metadata once its PTX is emitted, and
    _init_handles leaves the wait for ptxas to the first launch (counted as compile time), so
    that the ptxas runs of a graph's kernels overlap; a looped reduction config whose registers
    Inductor may read before launching it still loads in _init_handles, the others do not.
    ptxas here waits for a flag file that a timer creates."""
    flag = tmp_path / "go"
    # At most 10 s, so that a compile that waits for ptxas too early fails instead of hanging.
    proc = _run_with_ptxas(
        tmp_path, _DEFERRED_SCRIPT,
        f"i=0\nwhile [ ! -e {flag} ] && [ $i -lt 500 ]; do sleep 0.02; i=$((i+1)); done\n"
        'exec "$REAL_PTXAS" "$@"\n', PTXAS_FLAG=str(flag))
    assert proc.returncode == 0 and "OK" in proc.stdout, proc.stderr[-3000:]


_FAILING_PTXAS_SCRIPT = _SURFACE_PRELUDE + r"""
poi = importlib.import_module("triton_poi_fused_mul_0").triton_poi_fused_mul_0
src = ASTSource(poi, {"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}, {"BLOCK": 64}, {})
k = mods["triton"].compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 2})
assert k.metadata.shared == 0   # the PTX step succeeded
try:
    k._init_handles()           # defers, or (ptxas already failed) raises here
    k.run(1, 1, 1, 7, None, k.packed_metadata, None, None, None, "x", 10, 64)
except Exception as e:  # noqa: BLE001
    print("RAISED", type(e).__name__, str(e)[:400])
"""


def test_cuda_kernel_whose_ptxas_fails_raises_at_load(tmp_path):
    """ptxas failing after the PTX step (the metadata already handed out) is an error at the
    kernel's load, in _init_handles or at its first launch, with ptxas's message."""
    proc = _run_with_ptxas(tmp_path, _FAILING_PTXAS_SCRIPT,
                           "echo 'ptxas fatal: made to fail' >&2\nexit 1\n")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "RAISED" in proc.stdout and "made to fail" in proc.stdout, proc.stdout


def test_other_backends_and_launch_options_are_clear_errors(mods):
    GPUTarget = mods["triton.backends.compiler"].GPUTarget
    with pytest.raises(NotImplementedError, match="'hip' is not implemented"):
        mods["triton"].compile(_axpy_source(mods), target=GPUTarget("hip", 942, 64))
    with pytest.raises(NotImplementedError, match="launch_cooperative_grid of _axpy"):
        mods["triton"].compile(_axpy_source(mods), target=GPUTarget("cuda", 90, 32),
                               options={"launch_cooperative_grid": True})


def test_sm_target_of_a_capability():
    assert surface_kernels.sm_target(80) == "sm_80"
    assert surface_kernels.sm_target("sm_90") == "sm_90"
    assert surface_kernels.sm_target(90).startswith("sm_90")


def test_compile_needs_an_ast_source(mods):
    with pytest.raises(NotImplementedError, match="ASTSource only"):
        mods["triton"].compile("kernel.ttir")


def test_ast_source_needs_a_jit_function(mods):
    with pytest.raises(TypeError, match="@triton.jit"):
        mods["triton.compiler.compiler"].ASTSource(lambda x: x, {"x": "i32"})


def test_missing_names_say_so(mods):
    assert not hasattr(mods["triton.language"], "associative_scan_of_nothing")
    with pytest.raises(AttributeError, match="not implemented by tritium"):
        mods["triton"].no_such_thing  # noqa: B018
    lib = mods["triton.language.extra.libdevice"]
    with pytest.raises(AttributeError, match="libdevice.no_such_function"):
        lib.no_such_function  # noqa: B018
    assert lib.exp is tl.exp and lib.tanh is tl.tanh
    assert mods["triton.language.extra"].libdevice is lib
    assert mods["triton.language"].extra.libdevice is lib


def test_language_is_tritiums(mods):
    lang = mods["triton.language"]
    assert lang.constexpr is tl.constexpr and lang.load is tl.load and lang.float32 is tl.float32
    assert mods["triton.language.core"].view is tl.core.view
    assert mods["triton.language.math"].exp is tl.math.exp
    assert mods["triton"].Config is tritium.Config
    assert mods["triton"].cdiv(7, 2) == 4 and mods["triton"].cdiv(8, 2) == 4
    assert [mods["triton"].next_power_of_2(n) for n in (0, 1, 5, 8)] == [1, 1, 8, 8]
    assert mods["triton"].language is mods["triton.language"]


def test_log2_of_a_constexpr(mods):
    _log2 = mods["triton.language.standard"]._log2
    assert _log2(tl.constexpr(64)).value == 6 and _log2(1).value == 0
    with pytest.raises(ValueError, match="positive int"):
        _log2(0)


def test_driver_and_backends(mods):
    runtime = mods["triton.runtime"]
    drv = runtime.driver
    assert drv is mods["triton.runtime.driver"].driver
    backend = mods["triton.backends"].backends["cpu"]
    cpu = backend.driver()
    drv.set_active(cpu)
    try:
        assert isinstance(drv.active, backend.driver)
        assert drv.active.get_current_target().backend == "cpu"
        assert drv.active.get_current_device() == 0 and drv.active.get_current_stream() == 0
        opts = mods["triton.compiler.compiler"].make_backend(
            drv.active.get_current_target()).parse_options({"num_warps": 2})
        assert opts.num_warps == 2 and opts.num_stages == 3
    finally:
        drv.reset_active()
    cuda = surface_driver.make_backend(surface_kernels.GPUTarget("cuda", 90, 32))
    assert cuda.supports_target(surface_kernels.GPUTarget("cuda", 90, 32))
    assert cuda.parse_options({}).num_warps == 4 and cuda.hash() == "tritium-cuda-90"
    assert mods["triton.backends"].backends["nvidia"].compiler is type(cuda)
    with pytest.raises(NotImplementedError, match="'hip'"):
        surface_driver.make_backend(surface_kernels.GPUTarget("hip", 942, 64))


def test_knobs_hooks_default_to_none(mods):
    knobs = mods["triton"].knobs
    assert knobs is mods["triton.knobs"] is mods["triton.runtime.cache"].knobs
    assert knobs.runtime.launch_enter_hook is None and knobs.runtime.jit_post_compile_hook is None


def test_autotuner_names(mods):
    at = mods["triton.runtime.autotuner"]
    assert at.Config is tritium.Config and issubclass(at.OutOfResources, Exception)
    assert issubclass(at.Autotuner, mods["triton.runtime.jit"].KernelInterface)
    assert "out of resource: shared memory" in str(at.OutOfResources(10, 5, "shared memory"))


def test_triton_key_is_stable(mods):
    key = mods["triton.compiler.compiler"].triton_key
    assert key() == key() and len(key()) == 64
    assert mods["triton.runtime.cache"]._base32("00ff") == "AD7Q"


def test_jit_function_has_tritons_attributes():
    f = _axpy
    assert isinstance(f, tritium.JITFunction)
    assert [p.num for p in f.params] == list(range(6))
    assert f.arg_names[-1] == "BLOCK" and f.constexprs == [5]
    assert "def _axpy" in f.src and len(f.cache_key) == 64
    assert f.repr(f) == "_axpy" and f.used_global_vals == {}
    assert f.__globals__ is globals()


# ---------------------------------------------------------------------------
# Inductor's compile workers (TORCHINDUCTOR_COMPILE_THREADS > 1)

_WORKERS = """
import os, sys, time
import tritium.inductor
tritium.inductor.install()
import torch
import torch._inductor.config as cfg
from torch._inductor.async_compile import AsyncCompile
cfg.cpu_backend = "triton"
t0 = time.time()
while not AsyncCompile.use_process_pool():  # compiles go to the workers once it is up
    assert time.time() - t0 < 240, "Inductor's compile worker pool never came up"
    time.sleep(0.1)
def f(x, y):
    return torch.nn.functional.gelu(x) * y + x.sum(1, keepdim=True)
torch.manual_seed(0)
x, y = torch.randn(64, 128), torch.randn(64, 128)
out = torch.compile(f)(x, y)
s = tritium.inductor.stats()
print("RESULT", (out - f(x, y)).abs().max().item(), s["compiles"], s["launches"])
"""


@needs_torch
def test_compile_workers_use_tritium(tmp_path):
    """With compile workers, Inductor's worker processes (started with this
    process's sys.path) import tritium's surface as `triton` too
    (inductor/worker_path), compile there, and send the kernels back
    pickled: the parent compiles nothing itself and runs them. A `triton`
    package later on the path that fails to import stands for the real one:
    a worker that reached it would fail the compile."""
    fake = tmp_path / "not-tritium" / "triton"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('the real triton was imported')\n")
    env = _env(tmp_path, TORCHINDUCTOR_COMPILE_THREADS="2")
    env["PYTHONPATH"] = env["PYTHONPATH"] + os.pathsep + str(fake.parent)
    p = subprocess.run([sys.executable, "-c", _WORKERS], env=env, capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 0, (p.stdout[-2000:], p.stderr[-4000:])
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT")][-1]
    err, compiles, launches = line.split()[1:]
    assert float(err) < 1e-4
    assert int(compiles) == 0 and int(launches) >= 1, line


def test_gpu_compiled_kernel_pickles(tmp_path):
    """A GPU CompiledKernel crosses processes as Inductor's workers send it:
    its __dict__ taken while the back half may still run, then `metadata`
    read; unpickled, the kernel is the same (no GPU needed: sm_90a PTX)."""
    import pickle  # noqa: PLC0415

    mods = surface.build()
    sjit = mods["triton"].jit

    @sjit
    def twice(x, y, n, B: tl.constexpr):
        o = tl.program_id(0) * B + tl.arange(0, B)
        tl.store(y + o, tl.load(x + o, mask=o < n) * 2, mask=o < n)

    src = mods["triton.compiler.compiler"].ASTSource(
        twice, {"x": "*fp32", "y": "*fp32", "n": "i32", "B": "constexpr"}, {"B": 128})
    target = mods["triton.backends.compiler"].GPUTarget("cuda", 90, 32)
    k = surface_kernels.compile(src, target=target, options={"num_warps": 4})
    state = {**k.__dict__, "metadata": k.metadata}
    twice.fn = twice.__globals__ = twice.repr = twice._hash_lock = None  # prepare_for_pickle
    back = pickle.loads(pickle.dumps(state))
    c = surface_kernels.CompiledKernel.__new__(surface_kernels.CompiledKernel)
    c.__dict__.update(back)
    assert c.gpu.asm["ptx"] == k.gpu.asm["ptx"] and c.gpu.asm.get("cubin") == k.gpu.asm.get("cubin")
    assert c.metadata.shared == k.metadata.shared and c.name == k.name
    assert c.gpu._kernel is None  # the driver's handle is made again in this process


def test_tile_kernel_pickles():
    """The CPU executor's TileKernel crosses processes as its IR text."""
    import pickle  # noqa: PLC0415

    from tritium.compile_api import build_specialization  # noqa: PLC0415
    from tritium.compiler.pipeline import compile_tile  # noqa: PLC0415

    @tritium.jit
    def inc(x, n, B: tl.constexpr):
        o = tl.program_id(0) * B + tl.arange(0, B)
        tl.store(x + o, tl.load(x + o, mask=o < n) + 1, mask=o < n)

    params, _ = build_specialization(inc, {"x": "*fp32", "n": "i32"}, {"B": 64})
    t = compile_tile(inc, params)
    u = pickle.loads(pickle.dumps(t))
    assert u.asm["tir"] == t.asm["tir"] and u.arg_names == t.arg_names
    assert tritium._C.print_module(u.module, False) == t.asm["tir"]
