"""CPU tests of the runtime: the disk cache (round trip, corruption,
atomicity, permissions, keys), the driver loader without a driver, launch
argument checks that need no GPU, ptxas, and tritium.compile."""

import importlib.util
import multiprocessing as mp
import os
import stat
import subprocess
import sys
import tempfile
import textwrap

import numpy as np
import pytest

import _ptx_samples as S
import tritium
from tritium.errors import load_C
from tritium.runtime import cache

C = load_C()
REPO_PYTHON = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
has_backend = pytest.mark.skipif(not hasattr(C, "compile_to_ptx"),
                                 reason="this _C has no NVIDIA backend (compile_to_ptx) yet")
has_ptxas = pytest.mark.skipif(C.ptxas_path() is None, reason="ptxas is not installed")


def run_python(code, **env):
    full = dict(os.environ)
    full.update(env)
    full["PYTHONPATH"] = REPO_PYTHON + os.pathsep + full.get("PYTHONPATH", "")
    # A file, not -c: @jit needs the kernel's source.
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "script.py")
        with open(path, "w") as f:
            f.write(textwrap.dedent(code))
        return subprocess.run([sys.executable, path], env=full, capture_output=True, text=True,
                              timeout=300)


# ----------------------------------------------------------------------------------------------
# entries


BLOBS = {"metadata.json": '{"name": "k", "shared": 0}', "asm/ptx": ".version 8.0\n" * 50,
         "asm/cubin": bytes(range(256)) * 7}


def _as_bytes(blobs):
    return {k: v.encode() if isinstance(v, str) else v for k, v in blobs.items()}


def test_entry_round_trip():
    raw = cache.encode_entry(BLOBS)
    assert raw[:8] == cache.MAGIC
    assert cache.decode_entry(raw) == _as_bytes(BLOBS)
    assert cache.decode_entry(cache.encode_entry({})) == {}


def test_entry_rejects_other_format_version():
    raw = bytearray(cache.encode_entry(BLOBS))
    raw[8] = cache.FORMAT_VERSION + 1  # the u32 format field follows the magic
    with pytest.raises(cache.CorruptEntry, match="format"):
        cache.decode_entry(bytes(raw))


@pytest.fixture
def store(tmp_path, monkeypatch):
    root = tmp_path / "cache-root"
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(root))
    monkeypatch.delenv("TRITIUM_CACHE_DISABLE", raising=False)
    return cache.KernelCache()


KEY = "ab" + "0123456789abcdef" * 3 + "0123456789abcd"


def test_cache_round_trip(store, tmp_path):
    assert store.root == str(tmp_path / "cache-root")
    assert store.get(KEY) is None
    path = store.put(KEY, BLOBS)
    assert path == store.path_for(KEY) and os.path.isfile(path)
    assert store.get(KEY) == _as_bytes(BLOBS)
    assert (store.hits, store.misses, store.corrupt) == (1, 1, 0)
    # replacing an entry
    store.put(KEY, {"x": b"new"})
    assert store.get(KEY) == {"x": b"new"}
    # no temporary files are left behind
    assert os.listdir(os.path.dirname(path)) == [os.path.basename(path)]


def test_cache_dirs_are_private(store):
    path = store.put(KEY, BLOBS)
    for d in (store.root, os.path.dirname(path)):
        assert stat.S_IMODE(os.stat(d).st_mode) == 0o700, d


def test_cache_dirs_private_despite_umask(store):
    old = os.umask(0)
    try:
        path = store.put(KEY, BLOBS)
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700


def test_default_location(monkeypatch, tmp_path):
    monkeypatch.delenv("TRITIUM_CACHE_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cache.default_cache_dir() == os.path.join(str(tmp_path), ".cache", "tritium")
    monkeypatch.setenv("TRITIUM_CACHE_DISABLE", "1")
    assert cache.default_cache() is None


def _entry_offsets():
    raw = cache.encode_entry(BLOBS)
    header = cache._HEADER.size
    return {"magic": 0, "format": 9, "length": 12, "checksum": 30, "index": header + 6,
            "blob-start": header + 80, "blob-end": len(raw) - 1}


@pytest.mark.parametrize("where", sorted(_entry_offsets()))
def test_flipped_byte_is_detected_deleted_and_replaced(store, where):
    path = store.put(KEY, BLOBS)
    raw = bytearray(open(path, "rb").read())
    raw[_entry_offsets()[where]] ^= 0x01
    open(path, "wb").write(bytes(raw))
    assert store.get(KEY) is None
    assert store.corrupt == 1
    assert not os.path.exists(path)  # deleted, never loaded
    store.put(KEY, BLOBS)  # what a recompilation does
    assert store.get(KEY) == _as_bytes(BLOBS)


@pytest.mark.parametrize("keep", [0, 5, 20, 52, 100, -1])
def test_truncated_entry_is_detected(store, keep):
    path = store.put(KEY, BLOBS)
    raw = open(path, "rb").read()
    open(path, "wb").write(raw[:keep] if keep >= 0 else raw[:-1])
    assert store.get(KEY) is None
    assert not os.path.exists(path)


def test_trailing_garbage_is_detected(store):
    path = store.put(KEY, BLOBS)
    with open(path, "ab") as f:
        f.write(b"\0")
    assert store.get(KEY) is None


def test_bad_keys_rejected(store):
    for bad in ("", "../etc", "ABC", "zz"):
        with pytest.raises(ValueError):
            store.path_for(bad)


def _writer(root, key, seed, rounds):
    store = cache.KernelCache(root)
    rng = np.random.default_rng(seed)
    for i in range(rounds):
        size = int(rng.integers(1, 400_000))
        payload = bytes([seed]) * size
        store.put(key, {"payload": payload, "who": f"{seed}:{i}"})


def test_concurrent_writers_never_corrupt(tmp_path):
    """Two processes write the same key over and over while this one reads:
    every read is a complete entry of one writer (never a mix, never corrupt)."""
    root = str(tmp_path / "c")
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(root, KEY, seed, 150)) for seed in (1, 2)]
    for p in procs:
        p.start()
    reader = cache.KernelCache(root)
    seen = set()
    while any(p.is_alive() for p in procs):
        blobs = reader.get(KEY)
        if blobs is not None:
            payload = blobs["payload"]
            assert payload and payload == payload[:1] * len(payload)
            who = blobs["who"].decode()
            assert who.startswith(f"{payload[0]}:")
            seen.add(payload[0])
    for p in procs:
        p.join()
        assert p.exitcode == 0
    assert reader.corrupt == 0
    final = reader.get(KEY)
    assert final is not None and final["payload"][0] in (1, 2)
    leftovers = [f for f in os.listdir(os.path.dirname(reader.path_for(KEY))) if f.startswith(".tmp")]
    assert leftovers == []


# ----------------------------------------------------------------------------------------------
# keys


def _load_module(tmp_path, name, source):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


KERNEL_SRC = """
import tritium as triton
import tritium.language as tl
SCALE = {scale}

@triton.jit
def helper(x):
    return x * {helper_factor}

@triton.jit
def kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(x_ptr + offs, helper(x) + SCALE{extra}, mask=offs < n)
"""

_counter = [0]


def _kernel(tmp_path, scale=1, helper_factor=2, extra=""):
    _counter[0] += 1
    mod = _load_module(tmp_path, f"_rt_kernel_{_counter[0]}",
                       KERNEL_SRC.format(scale=scale, helper_factor=helper_factor, extra=extra))
    return mod.kernel


SPEC = (("*fp32", True), ("int32", False), ("c", ("int", 1024)))
OPTS = {"num_warps": 4, "num_stages": 3, "target": "sm_90a"}


def test_key_is_stable(tmp_path):
    a, b = _kernel(tmp_path), _kernel(tmp_path)
    assert cache.make_key(a, SPEC, OPTS) == cache.make_key(a, SPEC, dict(OPTS))
    # same source in another module: same key
    assert cache.make_key(a, SPEC, OPTS) == cache.make_key(b, SPEC, OPTS)
    assert len(cache.make_key(a, SPEC, OPTS)) == 64


@pytest.mark.parametrize("change", ["kernel source", "helper source", "global constant",
                                    "specialisation", "constexpr", "num_warps", "num_stages",
                                    "target", "extra"])
def test_key_changes(tmp_path, change):
    base = _kernel(tmp_path)
    k0 = cache.make_key(base, SPEC, OPTS)
    fn, spec, opts, extra = base, SPEC, dict(OPTS), ""
    if change == "kernel source":
        fn = _kernel(tmp_path, extra=" + 0.0")
    elif change == "helper source":
        fn = _kernel(tmp_path, helper_factor=3)
    elif change == "global constant":
        fn = _kernel(tmp_path, scale=5)
    elif change == "specialisation":
        spec = (("*fp32", False),) + SPEC[1:]
    elif change == "constexpr":
        spec = SPEC[:2] + (("c", ("int", 512)),)
    elif change == "num_warps":
        opts["num_warps"] = 8
    elif change == "num_stages":
        opts["num_stages"] = 2
    elif change == "target":
        opts["target"] = "sm_80"
    elif change == "extra":
        extra = "ptxas=other"
    assert cache.make_key(fn, spec, opts, extra) != k0


def test_key_follows_globals_rebound_between_compiles(tmp_path):
    """The key reads a kernel's sources once per function, but the globals they name at
    every call: a constant or a helper rebound in the kernel's module moves the key, and
    rebinding it back restores it."""
    fn = _kernel(tmp_path)
    mod = sys.modules[fn.fn.__module__]
    k0 = cache.make_key(fn, SPEC, OPTS)
    mod.SCALE = 5
    assert cache.make_key(fn, SPEC, OPTS) != k0
    mod.SCALE = 1
    assert cache.make_key(fn, SPEC, OPTS) == k0
    helper = mod.helper
    mod.helper = _kernel(tmp_path, helper_factor=3).fn.__globals__["helper"]
    assert cache.make_key(fn, SPEC, OPTS) != k0
    mod.helper = helper
    assert cache.make_key(fn, SPEC, OPTS) == k0


def test_compiler_version_follows_every_source_and_the_extension(monkeypatch):
    v = cache.compiler_version()
    assert len(v) == 64 and v == cache.compiler_version()
    # A rebuild of _C or an edit of any Python source (a new modification
    # time) moves the version; the old time brings it back.
    for path in (C.__file__, cache.__file__):
        st = os.stat(path)
        try:
            os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
            monkeypatch.setattr(cache, "_compiler_version", None)
            assert cache.compiler_version() != v, path
        finally:
            os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
        monkeypatch.setattr(cache, "_compiler_version", None)
        assert cache.compiler_version() == v


# ----------------------------------------------------------------------------------------------
# no driver


def test_no_driver_is_a_clear_error_and_the_cpu_executor_still_works():
    r = run_python("""
        import numpy as np
        import tritium as triton, tritium.language as tl
        from tritium.errors import load_C
        C = load_C()
        ok, why = C.cuda_available()
        assert not ok and "no CUDA driver found" in why, why
        k = C.GpuKernel("k", b"x", False, "sm_90a", 4, 0, [("i32", "n")])
        try:
            k.launch(1, 1, 1, 0, 0, [3])
        except C.CudaError as e:
            assert "no CUDA driver found" in str(e), e
            assert isinstance(e, RuntimeError)
        else:
            raise AssertionError("launch without a driver did not raise")

        @triton.jit
        def add(a, b, o, n, BLOCK: tl.constexpr):
            i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            m = i < n
            tl.store(o + i, tl.load(a + i, mask=m) + tl.load(b + i, mask=m), mask=m)
        a = np.arange(100, dtype=np.float32); o = np.full(100, np.nan, np.float32)
        add[(2,)](a, a, o, 100, BLOCK=64)
        assert (o == 2 * a).all()
        print("OK")
    """, TRITIUM_LIBCUDA="/nonexistent/libcuda.so.1")
    assert r.returncode == 0, r.stderr
    assert "OK" in r.stdout


# ----------------------------------------------------------------------------------------------
# launch checks that happen before the driver is needed


def _scalar_kernel(params):
    return C.GpuKernel("k", b"x", False, "sm_90a", 4, 0, params)


@pytest.mark.parametrize("kind,value", [("i32", 2 ** 31), ("i32", -(2 ** 31) - 1), ("u32", -1),
                                        ("u32", 2 ** 32), ("u64", -1)])
def test_out_of_range_scalars(kind, value):
    k = _scalar_kernel([(kind, "v")])
    with pytest.raises(C.CudaError, match="does not fit|negative"):
        k.launch(1, 1, 1, 0, 0, [value])


@pytest.mark.parametrize("kind,value", [("i32", 1.5), ("i64", "3"), ("fp32", "x"), ("ptr", 1.0)])
def test_wrong_argument_types(kind, value):
    k = _scalar_kernel([(kind, "v")])
    with pytest.raises(TypeError, match="argument 0 \\('v'\\)"):
        k.launch(1, 1, 1, 0, 0, [value])


def test_wrong_argument_count():
    k = _scalar_kernel([("i32", "a"), ("fp32", "b")])
    with pytest.raises(TypeError, match="takes 2 arguments, got 1"):
        k.launch(1, 1, 1, 0, 0, [1])


@pytest.mark.parametrize("grid", [(0, 1, 1), (1, -1, 1), (1, 1, 0)])
def test_empty_or_negative_grid(grid):
    k = _scalar_kernel([("i32", "a")])
    with pytest.raises(C.CudaError, match="empty or negative"):
        k.launch(*grid, 0, 0, [1])


def test_bad_kernel_descriptions():
    with pytest.raises(ValueError, match="unknown kernel parameter kind"):
        C.GpuKernel("k", b"x", False, "sm_90a", 4, 0, [("f16", "x")])
    with pytest.raises(C.CudaError, match="num_warps"):
        C.GpuKernel("k", b"x", False, "sm_90a", 0, 0, [])
    k = C.GpuKernel("k", b"x", False, "sm_90a", 4, 0,
                    [("ptr", "p"), ("i1", "b"), ("u64", "u"), ("fp64", "d")])
    assert k.params == [("ptr", "p"), ("i1", "b"), ("u64", "u"), ("fp64", "d")]
    assert (k.name, k.num_warps, k.shared_bytes) == ("k", 4, 0)


def test_pointer_arguments_by_data_ptr():
    """A pointer parameter takes an address, None, or anything with data_ptr() (what Inductor's
    launches pass); other objects are a TypeError naming the parameter, and an error raised by
    data_ptr() itself comes through unchanged."""
    class Fake:
        def __init__(self, address):
            self.address = address

        def data_ptr(self):
            return self.address

    class Broken:
        def data_ptr(self):
            raise ValueError("freed storage")

    k = C.GpuKernel("k", b"x", False, "sm_90a", 4, 0, [("ptr", "a"), ("ptr", "b"), ("i32", "n")])
    assert k.pack_args([Fake(1 << 40), None, 7]) == [1 << 40, 0, 7]
    assert k.pack_args([4096, Fake(8192), -1])[:2] == [4096, 8192]
    with pytest.raises(TypeError, match="'b'.* is a pointer: pass a GPU tensor"):
        k.pack_args([Fake(16), object(), 1])
    with pytest.raises(ValueError, match="freed storage"):
        k.pack_args([Broken(), None, 1])


# ----------------------------------------------------------------------------------------------
# ptxas


@has_ptxas
@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_ptxas_assembles(target):
    cubin, log = C.run_ptxas(S.ptx(S.AXPY, target), target, [])
    assert cubin[:4] == b"\x7fELF"
    assert "registers" in log
    assert "release" in C.ptxas_version()


@has_ptxas
def test_ptxas_error_is_reported():
    bad = S.ptx(S.AXPY.replace("fma.rn.f32", "fma.bogus.f32"))
    with pytest.raises(C.InternalError, match="ptxas .*rejected the generated PTX") as e:
        C.run_ptxas(bad, "sm_90a", [])
    assert "<ptx>" in str(e.value)  # the temp file's name is not leaked


def test_ptxas_can_be_disabled():
    r = run_python("from tritium.errors import load_C; print(load_C().ptxas_path())",
                   TRITIUM_PTXAS="0")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "None"


# ----------------------------------------------------------------------------------------------
# tritium.compile


from tritium.compile_api import build_specialization, parse_type  # noqa: E402
from tritium.compile_api import compile as tcompile  # noqa: E402

import tritium.language as tl  # noqa: E402


@tritium.jit
def _add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask),
             mask=mask)


@tritium.jit
def _scaled(x_ptr, out_ptr, alpha, flag, BLOCK: tl.constexpr = 64):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if flag:
        x = x * alpha
    tl.store(out_ptr + offs, x)


def test_public_compile_is_exported():
    import tritium.compile_api
    assert tritium.compile is tritium.compile_api.compile


def test_compiled_kernel_names(tmp_path, monkeypatch):
    """Triton's CompiledKernel (what triton.compile and launches return)
    covers both of tritium's kinds: TileKernel (the CPU executor) and
    GPUKernel (a GPU target)."""
    import numpy as np
    import tritium.compiler
    import tritium.compiler.compiler
    from tritium.compiler.pipeline import TileKernel
    from tritium.runtime.cuda import GPUKernel

    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    base = tritium.CompiledKernel
    assert tritium.compiler.CompiledKernel is base
    assert tritium.compiler.compiler.CompiledKernel is base
    assert TileKernel is not GPUKernel and issubclass(TileKernel, base)
    assert issubclass(GPUKernel, base)
    x = np.ones(64, np.float32)
    cpu = _add.warmup(x, x, x, 64, BLOCK=64)
    assert type(cpu) is TileKernel and repr(cpu).startswith("TileKernel(_add,")
    gpu = tcompile(_add, signature={"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32",
                                    "n": "i32"}, constexprs={"BLOCK": 64}, target="sm_80")
    assert type(gpu) is GPUKernel and gpu.tile is not None and type(gpu.tile) is TileKernel
    with pytest.raises(TypeError, match=r"_add: expected 4 runtime arguments \(x_ptr, y_ptr, "
                                        r"out_ptr, n\) \(or all 5 parameters\), got 2"):
        gpu[(1,)](x, x)
    with pytest.raises(TypeError, match="expected 4 runtime arguments"):
        cpu[(1,)](x)


def test_parse_type():
    assert parse_type("*fp32") == tl.pointer_type(tl.float32)
    assert parse_type("*bf16") == tl.pointer_type(tl.bfloat16)
    assert parse_type("*kfp16") == tl.pointer_type(tl.float16)
    assert parse_type("i64") == tl.int64
    assert parse_type("u1") == tl.int1
    with pytest.raises(ValueError, match="unknown type"):
        parse_type("float")


def test_build_specialization():
    params, key = build_specialization(
        _add, {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"},
        {"BLOCK": 1024}, attrs={(0,): [["tt.divisibility", 16]]}, divisible_by_16=["n"])
    assert [n for n, _ in params] == ["x_ptr", "y_ptr", "out_ptr", "n", "BLOCK"]
    assert params[0][1] == ("arg", tl.pointer_type(tl.float32), True)
    assert params[1][1] == ("arg", tl.pointer_type(tl.float32), False)
    assert params[3][1] == ("arg", tl.int32, True)
    assert params[4][1] == ("const", 1024)
    assert key[0] == ("*fp32", True)
    # a constexpr default, and Triton's "constexpr" signature entries
    params, _ = build_specialization(_scaled, {"x_ptr": "*fp16", "out_ptr": "*fp16",
                                               "alpha": "fp32", "flag": "i1",
                                               "BLOCK": "constexpr"}, {})
    assert params[-1][1] == ("const", 64)
    with pytest.raises(TypeError, match="missing from the signature"):
        build_specialization(_add, {"x_ptr": "*fp32"}, {"BLOCK": 4})
    with pytest.raises(TypeError, match="not parameters"):
        build_specialization(_add, {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32",
                                    "n": "i32", "bogus": "i32"}, {"BLOCK": 4})


@has_backend
@pytest.mark.parametrize("target", ["sm_90a", "sm_80"])
def test_compile_without_gpu(tmp_path, monkeypatch, target):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path / "c"))
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}
    k = tcompile(_add, signature=sig, constexprs={"BLOCK": 1024}, target=target,
                        num_warps=4)
    for stage in ("tir", "gir", "ptx"):
        assert k.asm[stage], stage
    assert f".target {target}" in k.asm["ptx"]
    assert f".entry {k.name}" in k.asm["ptx"]
    assert [p[0] for p in k.metadata["params"]] == ["ptr", "ptr", "ptr", "i32"]
    assert k.metadata["num_warps"] == 4 and k.metadata["target"] == target
    if C.ptxas_path():
        assert k.asm["cubin"][:4] == b"\x7fELF"
    # a second compile comes from the disk cache, identical
    store = cache.default_cache()
    hits = store.hits
    k2 = tcompile(_add, signature=sig, constexprs={"BLOCK": 1024}, target=target,
                         num_warps=4)
    assert store.hits == hits + 1
    assert k2.asm["ptx"] == k.asm["ptx"] and k2.asm.get("cubin") == k.asm.get("cubin")
    assert k2.metadata == k.metadata
    # CPU arrays run on the CPU executor, from a fresh compile and from the cache
    for kern in (k, k2):
        x = np.random.default_rng(0).standard_normal(3000).astype(np.float32)
        out = np.full_like(x, np.nan)
        kern[(3,)](x, x, out, 3000)
        assert np.array_equal(out, 2 * x)


@has_backend
def test_compile_corrupt_cache_entry_is_recompiled(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path / "c"))
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}
    k = tcompile(_add, signature=sig, constexprs={"BLOCK": 256})
    files = [os.path.join(d, f) for d, _, fs in os.walk(tmp_path / "c") for f in fs]
    assert len(files) == 1
    raw = bytearray(open(files[0], "rb").read())
    raw[len(raw) // 2] ^= 0xFF
    open(files[0], "wb").write(bytes(raw))
    k2 = tcompile(_add, signature=sig, constexprs={"BLOCK": 256})
    assert cache.default_cache().corrupt >= 1
    assert k2.asm["ptx"] == k.asm["ptx"]
    assert cache.decode_entry(open(files[0], "rb").read())  # replaced by a good entry


@has_backend
def test_compile_options_change_the_output(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITIUM_CACHE_DISABLE", "1")
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}
    k4 = tcompile(_add, signature=sig, constexprs={"BLOCK": 1024}, num_warps=4)
    k8 = tcompile(_add, signature=sig, constexprs={"BLOCK": 1024}, num_warps=8)
    assert k4.metadata["num_warps"] == 4 and k8.metadata["num_warps"] == 8
    assert k4.asm["gir"] != k8.asm["gir"]


def test_put_on_a_full_disk_warns_and_keeps_going(tmp_path, monkeypatch):
    """A write that fails (ENOSPC) leaves no entry and no temp file behind, and
    put() returns None with a warning instead of failing the compile."""
    import errno

    store = cache.KernelCache(str(tmp_path / "c"))
    real_fdopen = os.fdopen

    class FullDisk:
        def __init__(self, fd, mode):
            self.f = real_fdopen(fd, mode)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def write(self, data):
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fdopen", FullDisk)
    with pytest.warns(UserWarning, match="could not write cache entry"):
        assert store.put(KEY, {"payload": b"x" * 1000}) is None
    monkeypatch.setattr(os, "fdopen", real_fdopen)
    assert store.get(KEY) is None
    leftovers = [f for _, _, files in os.walk(tmp_path) for f in files]
    assert leftovers == []
    assert store.put(KEY, {"payload": b"y"}) is not None
    assert store.get(KEY)["payload"] == b"y"


def test_tensors_of_two_gpus_in_one_launch_name_the_arguments():
    """A launch takes the tensors of one GPU: the slow path (which the fast path falls back to
    when it sees two devices) names the two arguments and their devices."""
    from types import SimpleNamespace

    from tritium.errors import ExecutionError
    from tritium.runtime import cuda
    from tritium.runtime.launcher import PointerArg

    def on(index):
        return SimpleNamespace(device=SimpleNamespace(type="cuda", index=index))

    x = PointerArg(tl.float32, 0x1000, 64, "cuda", on(0))
    y = PointerArg(tl.float32, 0x2000, 64, "cuda", on(1))
    params = [("x_ptr", ("arg",)), ("y_ptr", ("arg",)), ("n", ("arg",))]
    fn = SimpleNamespace(__name__="add")
    with pytest.raises(ExecutionError, match=r"add: argument 'x_ptr' is on cuda:0 and "
                                             r"argument 'y_ptr' on cuda:1"):
        cuda.launch_device(fn, params, [x, y, 16])
    # One device: its index, and the arguments as the launcher takes them.
    z = PointerArg(tl.float32, 0x3000, 64, "cuda", on(1))
    assert cuda.launch_device(fn, params, [y, z, 16]) == (1, [0x2000, 0x3000, 16])
