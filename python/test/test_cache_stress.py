"""The disk cache under stress (issue 5, item 4, CPU part).

8 processes started at once (multiprocessing, spawn) share one fresh
TRITIUM_CACHE_DIR and compile the same kernels (vector add and a softmax row
kernel, two specialisations each) through `tritium.compile` -> `compile_gpu`,
the path that reads and writes cache.py entries, for several rounds:

  - every process gets PTX (and cubin, with ptxas) identical to a reference
    compiled without the cache;
  - afterwards every entry on disk is complete and valid (its checksum
    verifies), there is exactly one per specialisation and no temporary file
    is left behind;
  - every directory the cache created (root, its missing parents and the
    key-prefix directories) has mode 0700, though the workers run with
    umask 0o022 / 0o000;
  - then entries are corrupted (a flipped payload byte, truncated to half,
    truncated to 0, a garbage header) and the processes run again: all still
    get correct code, every corrupt entry is detected (KernelCache.corrupt,
    per key), rebuilt (put) and replaced by a valid file, and the entries
    that were not touched are only ever hits.

Also: the CPU executor path (a @jit kernel launched on numpy arrays) writes
nothing to the disk cache, and launching a `tritium.compile`d kernel on numpy
arrays leaves its entry as it was.

Regression test for a race found here: a reader that found a corrupt entry
deleted whatever was at the path by then -- possibly the valid entry another
process had just written in its place (`test_corrupt_reader_keeps_fresh_entry`).
"""

import hashlib
import json
import multiprocessing as mp
import os
import stat

import numpy as np
import pytest

import tritium
import tritium.language as tl
from tritium.errors import load_C
from tritium.runtime import cache

C = load_C()
pytestmark = pytest.mark.skipif(not hasattr(C, "compile_to_ptx"),
                                reason="this _C has no NVIDIA backend (compile_to_ptx)")

N_PROCS = 8
TARGET = "sm_90a"


@tritium.jit
def _stress_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m),
             mask=m)


@tritium.jit
def _stress_softmax(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_stride + cols, mask=mask, other=-float("inf"))
    z = x - tl.max(x, axis=0)
    num = tl.exp(z)
    den = tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_stride + cols, num / den, mask=mask)


_ADD_SIG = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}
_SOFTMAX_SIG = {"out_ptr": "*fp32", "in_ptr": "*fp32", "in_stride": "i32", "out_stride": "i32",
                "n_cols": "i32"}

# name -> (kernel, signature, constexprs, num_warps)
SPECS = {
    "add-256": (_stress_add, _ADD_SIG, {"BLOCK": 256}, 4),
    "add-1024": (_stress_add, _ADD_SIG, {"BLOCK": 1024}, 4),
    "add-1024-w8": (_stress_add, _ADD_SIG, {"BLOCK": 1024}, 8),
    "softmax-128": (_stress_softmax, _SOFTMAX_SIG, {"BLOCK": 128}, 4),
    "softmax-1024": (_stress_softmax, _SOFTMAX_SIG, {"BLOCK": 1024}, 4),
    "softmax-1024-w8": (_stress_softmax, _SOFTMAX_SIG, {"BLOCK": 1024}, 8),
}


def _compile(name, use_cache=True):
    fn, sig, consts, nw = SPECS[name]
    return tritium.compile(fn, signature=sig, constexprs=consts, target=TARGET, num_warps=nw,
                           use_cache=use_cache)


def _digest(k):
    cubin = k.asm.get("cubin")
    return {"ptx": hashlib.sha256(k.asm["ptx"].encode()).hexdigest(),
            "cubin": hashlib.sha256(cubin).hexdigest() if cubin else None}


# ----------------------------------------------------------------------------------------------
# the worker (runs in a spawned process)


def _worker(root, umask, rounds, barrier, out_path):
    os.umask(umask)
    os.environ["TRITIUM_CACHE_DIR"] = root
    os.environ.pop("TRITIUM_CACHE_DISABLE", None)
    events = []  # (spec name, round, key, "hit" | "miss" | "corrupt" | "put")
    current = {}

    real_get, real_put = cache.KernelCache.get, cache.KernelCache.put

    def get(self, key):
        corrupt = self.corrupt
        blobs = real_get(self, key)
        what = "hit" if blobs is not None else ("corrupt" if self.corrupt > corrupt else "miss")
        events.append((current["name"], current["round"], key, what))
        return blobs

    def put(self, key, blobs):
        path = real_put(self, key, blobs)
        events.append((current["name"], current["round"], key, "put"))
        return path

    cache.KernelCache.get, cache.KernelCache.put = get, put
    cache.compiler_version()  # before the barrier: the races are about the cache, not startup
    results = []
    barrier.wait(timeout=120)
    for r in range(rounds):
        for name in SPECS:
            current.update(name=name, round=r)
            results.append((name, r, _digest(_compile(name))))
    with open(out_path, "w") as f:
        json.dump({"events": events, "results": results}, f)


def _run_workers(tmp_path, root, rounds, tag):
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(N_PROCS)
    umasks = [0o022, 0o000]
    outs = [str(tmp_path / f"{tag}-{i}.json") for i in range(N_PROCS)]
    procs = [ctx.Process(target=_worker, args=(root, umasks[i % 2], rounds, barrier, outs[i]))
             for i in range(N_PROCS)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=180)
    for p in procs:
        if p.is_alive():
            p.kill()
            p.join()
        assert p.exitcode == 0, f"worker exited with {p.exitcode}"
    reports = []
    for o in outs:
        with open(o) as f:
            reports.append(json.load(f))
    return reports


# ----------------------------------------------------------------------------------------------
# checks of the directory


def _entries(root):
    """{path: bytes} of every regular file under root; asserts there is no
    temporary or stray file."""
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            assert f.endswith(".tkc") and not f.startswith(".tmp"), f"stray file {p}"
            with open(p, "rb") as fh:
                out[p] = fh.read()
    return out


def _check_dirs_private(base, root):
    """Every directory from base (exclusive; it existed) down to and under
    root was created by the cache: all must be 0700."""
    dirs = []
    p = root
    while p != base:
        dirs.append(p)
        p = os.path.dirname(p)
    for d, subdirs, _ in os.walk(root):
        dirs.extend(os.path.join(d, s) for s in subdirs)
    assert len(dirs) >= 4  # parents, root, at least one key-prefix directory
    for d in dirs:
        mode = stat.S_IMODE(os.stat(d).st_mode)
        assert mode == 0o700, f"{d}: mode {oct(mode)}"


def _check_entries(root, keys, reference):
    """Exactly one valid entry per key, each holding the reference code."""
    entries = _entries(root)
    by_key = {os.path.basename(p)[:-len(".tkc")]: (p, raw) for p, raw in entries.items()}
    assert set(by_key) == set(keys.values())
    for name, key in keys.items():
        path, raw = by_key[key]
        assert path == cache.KernelCache(root).path_for(key)
        blobs = cache.decode_entry(raw)  # raises CorruptEntry when the checksum fails
        k = tritium.runtime.cuda.GPUKernel.from_blobs(blobs)
        assert _digest(k) == reference[name], name
        mode = stat.S_IMODE(os.stat(path).st_mode)
        assert mode & 0o077 == 0, f"{path}: mode {oct(mode)}"
    return {k: raw for k, (_, raw) in by_key.items()}


def _corrupt(path, how):
    raw = bytearray(open(path, "rb").read())
    if how == "flip":
        raw[cache._HEADER.size + (len(raw) - cache._HEADER.size) // 2] ^= 0x40
    elif how == "half":
        raw = raw[:len(raw) // 2]
    elif how == "empty":
        raw = b""
    elif how == "header":
        raw[:cache._HEADER.size] = os.urandom(cache._HEADER.size)
    elif how == "format":
        raw[8] = cache.FORMAT_VERSION + 1
    with open(path, "wb") as f:
        f.write(bytes(raw))
    return bytes(raw)


# ----------------------------------------------------------------------------------------------
# the stress test


def test_cache_stress_concurrent_and_corrupt(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITIUM_CACHE_DISABLE", "1")  # the reference: no cache at all
    reference = {name: _digest(_compile(name, use_cache=False)) for name in SPECS}
    monkeypatch.delenv("TRITIUM_CACHE_DISABLE")
    base = str(tmp_path / "home")
    os.mkdir(base)
    root = os.path.join(base, "a", "b", "cache")  # a, b and cache are created by the cache

    # -- phase 1: 8 processes, a fresh directory, 3 rounds ---------------------------------
    reports = _run_workers(tmp_path, root, 3, "p1")
    keys = {}
    for rep in reports:
        for name, r, digest in rep["results"]:
            assert digest == reference[name], (name, r)
        assert len(rep["results"]) == 3 * len(SPECS)
        for name, r, key, what in rep["events"]:
            assert keys.setdefault(name, key) == key  # one key per specialisation
            assert what != "corrupt", (name, r)
            if r > 0:
                assert what == "hit", (name, r, what)  # never deleted, never half-written
    assert len(set(keys.values())) == len(SPECS)
    # the first round: at least one process compiled and stored each kernel
    for name in SPECS:
        assert any(e[0] == name and e[3] == "put" for rep in reports for e in rep["events"])
    good = _check_entries(root, keys, reference)
    _check_dirs_private(base, root)

    # -- phase 2: corrupt entries, run again --------------------------------------------
    modes = ["flip", "half", "empty", "header", "format"]
    corrupted = {}
    store = cache.KernelCache(root)
    for name, how in zip(SPECS, modes):
        corrupted[keys[name]] = _corrupt(store.path_for(keys[name]), how)
    untouched = set(keys.values()) - set(corrupted)
    assert len(corrupted) == 5 and len(untouched) == 1

    reports = _run_workers(tmp_path, root, 2, "p2")
    detected = dict.fromkeys(corrupted, 0)
    rebuilt = dict.fromkeys(corrupted, 0)
    for rep in reports:
        for name, r, digest in rep["results"]:
            assert digest == reference[name], (name, r)  # a corrupt entry is never loaded
        for name, r, key, what in rep["events"]:
            if key in untouched:
                assert what == "hit", (name, r, what)
            elif what == "corrupt":
                detected[key] += 1
            elif what == "put":
                rebuilt[key] += 1
    for key in corrupted:
        assert detected[key] >= 1, f"corrupt entry {key} never detected"
        assert rebuilt[key] >= 1, f"corrupt entry {key} never rebuilt"
    after = _check_entries(root, keys, reference)
    for key, bad in corrupted.items():
        assert after[key] != bad
        # rebuilt entries hold the same code (compilation is deterministic; the
        # metadata's ptxas_log holds ptxas's compile time, so it may differ)
        new, old = cache.decode_entry(after[key]), cache.decode_entry(good[key])
        assert {k: v for k, v in new.items() if k.startswith("asm/")} == \
            {k: v for k, v in old.items() if k.startswith("asm/")}
    for key in untouched:
        assert after[key] == good[key]
    _check_dirs_private(base, root)


# ----------------------------------------------------------------------------------------------
# modes, one umask at a time (in the stress test, which process creates a directory is luck)


def _one_compile(root, umask, out_path):
    os.umask(umask)
    os.environ["TRITIUM_CACHE_DIR"] = root
    os.environ.pop("TRITIUM_CACHE_DISABLE", None)
    k = _compile("add-256")
    with open(out_path, "w") as f:
        json.dump(_digest(k), f)


@pytest.mark.parametrize("umask", [0o022, 0o000])
def test_cache_dirs_0700_with_permissive_umask(tmp_path, umask):
    base = str(tmp_path)
    root = os.path.join(base, "x", "y", "cache")
    ctx = mp.get_context("spawn")
    p = ctx.Process(target=_one_compile, args=(root, umask, str(tmp_path / "out.json")))
    p.start()
    p.join(timeout=120)
    assert p.exitcode == 0
    _check_dirs_private(base, root)
    (path, raw), = _entries(root).items()
    cache.decode_entry(raw)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


# ----------------------------------------------------------------------------------------------
# the CPU executor


def test_cpu_executor_writes_no_cache(tmp_path, monkeypatch):
    root = tmp_path / "cpu-cache"
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(root))
    monkeypatch.delenv("TRITIUM_CACHE_DISABLE", raising=False)
    rng = np.random.default_rng(0)
    # a @jit kernel launched on numpy arrays: the CPU executor, memory cache only
    x = rng.standard_normal(3000).astype(np.float32)
    y = rng.standard_normal(3000).astype(np.float32)
    out = np.full_like(x, np.nan)
    _stress_add[(3,)](x, y, out, 3000, BLOCK=1024)
    assert np.array_equal(out, x + y)
    a = rng.standard_normal((5, 100)).astype(np.float32)
    sm = np.full_like(a, np.nan)
    _stress_softmax[(5,)](sm, a, 100, 100, 100, BLOCK=128)
    e = np.exp(a - a.max(axis=1, keepdims=True))
    np.testing.assert_allclose(sm, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)
    assert not root.exists(), "the CPU executor wrote to the disk cache"
    # tritium.compile writes its entry; launching the result on numpy arrays changes nothing
    k = _compile("add-1024")
    before = _entries(str(root))
    assert len(before) == 1
    out = np.full_like(x, np.nan)
    k[(3,)](x, y, out, 3000)
    assert np.array_equal(out, x + y)
    assert _entries(str(root)) == before


# ----------------------------------------------------------------------------------------------
# regression: a reader that finds a corrupt entry must not delete a valid one that replaced it


def test_corrupt_reader_keeps_fresh_entry(tmp_path, monkeypatch):
    """Process A reads a corrupt entry; before A deletes it, process B (which
    also found it corrupt) has recompiled and os.replace'd a valid entry in its
    place. A must not delete B's valid entry."""
    store = cache.KernelCache(str(tmp_path / "c"))
    key = "ab" * 32
    good = {"asm/ptx": "fresh"}
    path = store.put(key, {"asm/ptx": "old"})
    with open(path, "r+b") as f:
        f.truncate(10)
    real_decode = cache.decode_entry

    def decode_then_replaced(raw):
        try:
            return real_decode(raw)
        finally:
            # another process writes the rebuilt entry while this one decodes
            cache.KernelCache(store.root).put(key, good)

    monkeypatch.setattr(cache, "decode_entry", decode_then_replaced)
    assert store.get(key) is None
    assert store.corrupt == 1
    monkeypatch.setattr(cache, "decode_entry", real_decode)
    assert os.path.exists(path), "the valid entry written meanwhile was deleted"
    assert store.get(key) == {"asm/ptx": b"fresh"}
