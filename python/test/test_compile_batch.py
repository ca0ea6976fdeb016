"""CPU tests of the batch compile (issue 4): `_C.compile_batch` runs the back
half of many GPU compiles (GPU passes, PTX, ptxas) on a C++ thread pool;
`compiler.compiler.compile_gpu_batch` runs the front halves first; the autotuner
plans one batch for the configs of a tuning. No GPU needed: the target is
sm_90a, and cubins are made when ptxas is installed."""

import pytest

import tritium
import tritium.language as tl
from tritium import autotuner
from tritium.compile_api import build_specialization
from tritium.compiler import compiler
from tritium.compiler.pipeline import compile_tile
from tritium.errors import CompilationError, load_C
from tritium.runtime import cuda

C = load_C()
pytestmark = pytest.mark.skipif(not hasattr(C, "compile_batch"),
                                reason="this _C has no compile_batch")
HAS_PTXAS = C.ptxas_path() is not None


@tritium.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask),
             mask=mask)


@tritium.jit
def softmax_kernel(out_ptr, in_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(in_ptr + row * stride + cols, mask=cols < n_cols, other=-float("inf"))
    z = x - tl.max(x, axis=0)
    num = tl.exp(z)
    tl.store(out_ptr + row * stride + cols, num / tl.sum(num, axis=0), mask=cols < n_cols)


@tritium.jit
def transpose_kernel(x_ptr, out_ptr, B: tl.constexpr):
    """Needs B*B*4 bytes of shared memory: too many for B = 512."""
    r = tl.arange(0, B)
    a = tl.load(x_ptr + r[:, None] * B + r[None, :])
    tl.store(out_ptr + r[:, None] * B + r[None, :], tl.trans(a))


ADD_SIG = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}
SOFTMAX_SIG = {"out_ptr": "*fp32", "in_ptr": "*fp32", "stride": "i32", "n_cols": "i32"}
T_SIG = {"x_ptr": "*fp32", "out_ptr": "*fp32"}


def tile(fn, sig, consts):
    params, _ = build_specialization(fn, sig, consts, divisible_by_16=list(sig))
    return compile_tile(fn, params)


def good_jobs():
    """(tile kernel, num_warps) of several different kernels."""
    out = []
    for block, nw in ((256, 1), (1024, 4), (4096, 8)):
        out.append((tile(add_kernel, ADD_SIG, {"BLOCK": block}), nw))
    for block, nw in ((128, 1), (1024, 4), (2048, 8)):
        out.append((tile(softmax_kernel, SOFTMAX_SIG, {"BLOCK": block}), nw))
    out.append((tile(transpose_kernel, T_SIG, {"B": 32}), 4))
    return out


def test_batch_gives_the_ptx_of_one_by_one_compiles():
    jobs = good_jobs()
    results = C.compile_batch([(t.module, t.name, "sm_90a", nw, 3) for t, nw in jobs], None, 4)
    assert len(results) == len(jobs)
    for (t, nw), r in zip(jobs, results):
        assert r["error"] is None, r["error"]
        # Both through ptxas where it is installed: the PTX kept is the one ptxas assembled
        # (with `.maxnreg` where register_cap.cpp keeps that), so it must be the same text.
        one = C.compile_to_ptx(t.module, t.name, "sm_90a", nw, 3, ptxas=HAS_PTXAS)
        assert r["ptx"] == one["ptx"] and r["gir"] == one["gir"]
        assert r["name"] == one["name"] and r["num_warps"] == one["num_warps"] == nw
        assert r["shared_bytes"] == one["shared_bytes"] and r["target"] == "sm_90a"
        assert [tuple(p) for p in r["params"]] == [tuple(p) for p in one["params"]]
        assert r["ptx_ms"] >= 0.0
        if HAS_PTXAS:
            assert r["cubin"][:4] == b"\x7fELF" and r["ptxas_ms"] > 0.0
            assert "registers" in r["ptxas_log"] or r["ptxas_log"] == ""
        else:
            assert r["cubin"] is None


def test_batch_without_ptxas_and_on_one_thread():
    jobs = good_jobs()[:3]
    results = C.compile_batch([(t.module, t.name, "sm_90a", nw, 3) for t, nw in jobs], False, 1)
    assert [r["cubin"] for r in results] == [None] * 3
    assert all(r["error"] is None for r in results)
    assert C.compile_batch([], None, 0) == []


def test_one_bad_job_reports_its_error_and_the_others_succeed():
    jobs = good_jobs()
    bad = tile(transpose_kernel, T_SIG, {"B": 512})
    spec = [(t.module, t.name, "sm_90a", nw, 3) for t, nw in jobs]
    spec.insert(2, (bad.module, bad.name, "sm_90a", 4, 3))
    spec.append((jobs[0][0].module, "no_such_kernel", "sm_90a", 4, 3))
    spec.append((jobs[0][0].module, jobs[0][0].name, "sm_70", 4, 3))
    results = C.compile_batch(spec, None, 0)
    assert len(results) == len(spec)
    err = results[2]["error"]
    assert isinstance(err, C.UserError) and results[2]["phase"] == "ptx"
    message, file, line, col = err.args
    assert "shared memory" in message and file == __file__ and line > 0 and col > 0
    assert isinstance(results[-2]["error"], C.UserError)
    assert "no_such_kernel" in results[-2]["error"].args[0]
    assert "sm_70" in results[-1]["error"].args[0]
    good = [r for i, r in enumerate(results) if i not in (2, len(spec) - 2, len(spec) - 1)]
    assert len(good) == len(jobs) and all(r["error"] is None and r["ptx"] for r in good)


def test_batch_compiles_bounds_checked_jobs_like_compile_to_ptx():
    jobs = good_jobs()[:2]
    spec = [(t.module, t.name, "sm_90a", nw, 3, True) for t, nw in jobs]
    spec.append((jobs[0][0].module, jobs[0][0].name, "sm_90a", jobs[0][1], 3, False))
    results = C.compile_batch(spec, False, 2)
    for (t, nw), r in zip(jobs, results):
        assert r["error"] is None, r["error"]
        one = C.compile_to_ptx(t.module, t.name, "sm_90a", nw, 3, bounds_check=True)
        assert r["ptx"] == one["ptx"] and r["bounds_check"] == one["bounds_check"]
        bc = r["bounds_check"]
        # An extent per parameter, then the record.
        assert len(bc["hidden_params"]) == len(r["params"]) + 1
        assert bc["sites"] and bc["record_bytes"] == 32
        assert "_bounds_record" in r["ptx"]
    unchecked = results[-1]
    assert unchecked["error"] is None and "bounds_check" not in unchecked
    assert "_bounds_record" not in unchecked["ptx"]
    assert unchecked["ptx"] != results[0]["ptx"]


def test_compile_to_ptx_runs_the_whole_compile():
    """From the IR the code generator builds: the tile passes, the GPU passes,
    PTX and (with ptxas) the cubin, in one call; the same PTX as the tile
    passes run apart."""
    from tritium.compiler import codegen  # noqa: PLC0415
    params, _ = build_specialization(softmax_kernel, SOFTMAX_SIG, {"BLOCK": 1024},
                                     divisible_by_16=list(SOFTMAX_SIG))
    raw, name = codegen.build_kernel(softmax_kernel, params, None)
    raw_text = C.print_module(raw, False)
    r = C.compile_to_ptx(raw, name, "sm_90a", 4, 3, tile_passes=True, ptxas=HAS_PTXAS,
                         verify_each=True)
    assert C.print_module(raw, False) == raw_text  # the caller's module is left alone
    optimised = tile(softmax_kernel, SOFTMAX_SIG, {"BLOCK": 1024})
    assert r["tir"] == C.print_module(optimised.module, True)
    assert r["ptx"] == C.compile_to_ptx(optimised.module, name, "sm_90a", 4, 3,
                                        ptxas=HAS_PTXAS)["ptx"]
    tile_stats = C.run_passes(raw, C.default_pipeline())
    assert {k: v for k, v in r["stats"].items()
            if not k.startswith(("gpu.", "ptxas.", "prefetch-loads."))} == tile_stats
    assert r["stats"]["gpu.layouts-assigned"] > 0
    assert list(r["timings"]) == ["options", "tile", "gpu", "shared-memory", "ptx"] + (
        ["ptxas"] if HAS_PTXAS else [])
    assert r["ptx_ms"] == pytest.approx(sum(v for k, v in r["timings"].items() if k != "ptxas"))
    if HAS_PTXAS:
        assert r["cubin"][:4] == b"\x7fELF" and r["ptxas_ms"] > 0
    else:
        assert r["cubin"] is None
    # Without tile_passes the input is taken as optimised already.
    assert "tir" not in C.compile_to_ptx(optimised.module, name, "sm_90a", 4, 3)


def test_bad_job_tuples_are_rejected_before_any_work():
    t = good_jobs()[0][0]
    with pytest.raises(ValueError):
        C.compile_batch([(t.module, t.name, "sm_90a", 4)])
    with pytest.raises(TypeError):
        C.compile_batch([("not a module", t.name, "sm_90a", 4, 3)])


# ----------------------------------------------------------------------------------------------
# compiler.compiler: compile_gpu's two halves, compile_gpu_batch


def request(fn, sig, consts, num_warps=4):
    params, key = build_specialization(fn, sig, consts, divisible_by_16=list(sig))
    return compiler.CompileRequest(fn, params, key, num_warps=num_warps, target="sm_90a",
                                   use_cache=False)


def test_compile_gpu_batch_matches_compile_gpu(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    reqs = [request(add_kernel, ADD_SIG, {"BLOCK": b}, nw) for b, nw in ((128, 1), (1024, 4))]
    reqs += [request(softmax_kernel, SOFTMAX_SIG, {"BLOCK": 1024}, 4)]
    reqs += [reqs[1]]  # a duplicate: compiled once
    before = dict(compiler.compile_stats)
    out = compiler.compile_gpu_batch(reqs)
    assert compiler.compile_stats["batch_jobs"] - before["batch_jobs"] == 3
    assert out[3] is out[1]
    for r, k in zip(reqs, out):
        assert isinstance(k, cuda.GPUKernel)
        one = compiler.compile_gpu(r.jit_fn, r.params, r.spec_key, num_warps=r.num_warps,
                                   target="sm_90a", use_cache=False)
        assert k.asm["ptx"] == one.asm["ptx"] and k.asm.get("cubin") == one.asm.get("cubin")
        drop = ("ptxas_log",)  # it reports ptxas's own compile time
        assert ({m: v for m, v in k.metadata.items() if m not in drop}
                == {m: v for m, v in one.metadata.items() if m not in drop})
        assert ("cubin" in k.asm) == HAS_PTXAS


def test_compile_gpu_batch_reports_each_failure_with_its_location(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))

    @tritium.jit
    def broken(x_ptr, B: tl.constexpr):
        tl.store(x_ptr + tl.arange(0, B), 1.0)

    reqs = [request(add_kernel, ADD_SIG, {"BLOCK": 256}),
            request(broken, {"x_ptr": "*fp32"}, {"B": 100}),       # front half: arange of 100
            request(transpose_kernel, T_SIG, {"B": 512}),         # back half: shared memory
            request(add_kernel, ADD_SIG, {"BLOCK": 512})]
    out = compiler.compile_gpu_batch(reqs)
    assert isinstance(out[0], cuda.GPUKernel) and isinstance(out[3], cuda.GPUKernel)
    assert isinstance(out[1], CompilationError) and "power of 2" in out[1].message
    assert isinstance(out[2], CompilationError) and "shared memory" in out[2].message
    assert out[2].file == __file__ and out[2].line > 0 and out[2].function == "transpose_kernel"
    # The single compile raises the same error.
    r = reqs[2]
    with pytest.raises(CompilationError) as info:
        compiler.compile_gpu(r.jit_fn, r.params, r.spec_key, target="sm_90a", use_cache=False)
    assert info.value.line == out[2].line and "shared memory" in str(info.value)


def test_batch_results_go_to_the_disk_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    reqs = [request(add_kernel, ADD_SIG, {"BLOCK": b}) for b in (64, 128)]
    for r in reqs:
        r.use_cache = True
    first = compiler.compile_gpu_batch(reqs)
    before = dict(compiler.compile_stats)
    again = compiler.compile_gpu_batch(reqs)  # every one from the disk: no batch
    assert compiler.compile_stats["batches"] == before["batches"]
    assert [k.asm["ptx"] for k in again] == [k.asm["ptx"] for k in first]


def test_compile_times(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TRITIUM_COMPILE_TIMES", "1")
    params, key = build_specialization(add_kernel, ADD_SIG, {"BLOCK": 1024})
    k = compiler.compile_gpu(add_kernel, params, key, target="sm_90a")
    phases = {"lookup", "ast", "tile", "ptx", "store", "total"} | ({"ptxas"} if HAS_PTXAS
                                                                   else set())
    assert phases <= set(k.compile_times) and all(v >= 0 for v in k.compile_times.values())
    err = capsys.readouterr().err
    assert "tritium compile add_kernel [sm_90a, num_warps=4]: cache lookup" in err
    assert "AST walk" in err and "GPU passes+PTX" in err
    k2 = compiler.compile_gpu(add_kernel, params, key, target="sm_90a")
    assert k2.compile_times["lookup"] > 0 and "ast" not in k2.compile_times
    assert "(disk cache hit)" in capsys.readouterr().err


# ----------------------------------------------------------------------------------------------
# the autotuner's batch (GPU launches only; planned here with the GPU checks stubbed out)


CONFIGS = [tritium.Config({"BLOCK": b}, num_warps=w) for b, w in ((64, 1), (256, 2), (1024, 4))]


class FakeTensor:
    """Enough of a CUDA tensor for the autotuner's check."""

    class device:  # noqa: N801
        type = "cuda"


def test_autotuner_plans_one_batch_that_the_launches_pick_up(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    import numpy as np
    monkeypatch.setattr(cuda, "uses_gpu", lambda values: True)
    monkeypatch.setattr(cuda, "launch_device", lambda jit_fn, params, values: (0, []))
    monkeypatch.setattr(cuda, "default_target", lambda device=0: "sm_90a")
    monkeypatch.setattr(autotuner, "_on_gpu", lambda args, kwargs: True)
    kernel = tritium.autotune(CONFIGS, key=["n"])(add_kernel)
    x = np.zeros(4096, np.float32)
    args = (x, x, x, 4096)
    before = dict(compiler.compile_stats)
    kernel.nargs = dict(zip(kernel.arg_names, args))
    tokens = kernel._precompile(args, {}, CONFIGS)
    assert len(tokens) == 3
    assert compiler.compile_stats["batch_jobs"] - before["batch_jobs"] == 3
    # The keys agree with JITFunction's: compile_gpu hands out the batch's kernels.
    for config in CONFIGS:
        values = list(args) + [config.kwargs["BLOCK"]]
        key, params, _ = add_kernel.specialize(values)
        k = compiler.compile_gpu(add_kernel, params, key, num_warps=config.num_warps,
                                 num_stages=config.num_stages, target="sm_90a")
        assert k.tile.constants["BLOCK"] == config.kwargs["BLOCK"]
        assert k.num_warps == config.num_warps
    assert compiler.compile_stats["precompiled_used"] - before["precompiled_used"] == 3
    assert compiler.discard_precompiled(tokens) == tokens  # every one was taken
    kernel._batched.update(tokens)
    assert kernel._precompile(args, {}, CONFIGS) == []  # compiled already: no new batch


def test_autotuner_does_not_batch_on_the_cpu(monkeypatch):
    import numpy as np
    called = []
    monkeypatch.setattr(compiler, "precompile", lambda *a, **k: called.append(a) or ([], {}))
    kernel = tritium.autotune(CONFIGS, key=["n"],
                              do_bench=lambda fn, quantiles: (fn(), [1.0, 1.0, 1.0])[1])(
                                  add_kernel)
    x = np.ones(300, np.float32)
    out = np.zeros_like(x)
    kernel[lambda m: (tritium.cdiv(m["n"], m["BLOCK"]),)](x, x, out, 300)
    assert called == [] and np.array_equal(out, 2 * x)


def test_autotuner_warmup_batches_too_and_forgets_what_nobody_took(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    import numpy as np
    monkeypatch.setattr(cuda, "uses_gpu", lambda values: True)
    monkeypatch.setattr(cuda, "launch_device", lambda jit_fn, params, values: (0, []))
    monkeypatch.setattr(cuda, "default_target", lambda device=0: "sm_90a")
    monkeypatch.setattr(autotuner, "_on_gpu", lambda args, kwargs: True)
    kernel = tritium.autotune(CONFIGS, key=["n"])(add_kernel)
    x = np.zeros(4096, np.float32)
    before = dict(compiler.compile_stats)
    compiled = kernel.warmup(x, x, x, 4096)  # numpy arrays: the CPU executor compiles
    assert len(compiled) == 3
    assert compiler.compile_stats["batch_jobs"] - before["batch_jobs"] == 3
    assert compiler.compile_stats["precompiled_used"] == before["precompiled_used"]
    assert kernel._batched == set() and compiler._precompiled == {}


def test_a_changed_target_compiles_again(tmp_path, monkeypatch):
    """$TRITIUM_TARGET read at each slow-path launch: the in-memory cache keys on the target,
    so a process that changes it gets a kernel for the new one (the fast path falls back to
    the slow path for it too: test_fast_launch.py)."""
    import importlib
    jit_module = importlib.import_module("tritium.jit")
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cuda, "launch_device", lambda jit_fn, params, values: (0, []))
    import numpy as np
    x = np.zeros(4096, np.float32)
    key, params, runtime = add_kernel.specialize([x, x, x, 4096, 256])
    targets = []
    for target in ("sm_90a", "sm_80", "sm_90a"):
        monkeypatch.setenv("TRITIUM_TARGET", target)
        k = jit_module._run_gpu(add_kernel, None, key, params, runtime, None, {}, True)
        targets.append(k.metadata["target"])
    assert targets == ["sm_90a", "sm_80", "sm_90a"]
