"""GPU tests of the autotuner (marker gpu): the configs of a tuning are
compiled in one batch before any is timed; a config that fails to compile
(in the code generator or in the GPU back end) is skipped with a warning; a
second process with a warm disk cache runs the tuned kernel without any
timing run. Outputs are poisoned with NaN and checked against torch."""

import json
import os
import subprocess
import sys
import textwrap
import warnings

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu

import tritium  # noqa: E402
import tritium.language as tl  # noqa: E402
from tritium import autotuner  # noqa: E402
from tritium.compiler import compiler  # noqa: E402

REPO_PYTHON = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))

SOFTMAX_SCRIPT = textwrap.dedent("""
    import json, sys, time
    import torch
    import tritium, tritium.language as tl
    from tritium import autotuner
    from tritium.compiler import compiler

    @tritium.jit
    def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        x = tl.load(in_ptr + row * in_stride + cols, mask=cols < n_cols, other=-float("inf"))
        z = x - tl.max(x, axis=0)
        num = tl.exp(z)
        tl.store(out_ptr + row * out_stride + cols, num / tl.sum(num, axis=0),
                 mask=cols < n_cols)

    configs = [tritium.Config({"BLOCK": 1024}, num_warps=w) for w in (1, 2, 4, 8)]
    kernel = tritium.autotune(configs, key=["n_cols"], warmup=5, rep=20)(softmax_kernel)
    torch.manual_seed(int(sys.argv[1]))
    x = torch.randn(512, 1000, device="cuda")
    out = torch.full_like(x, float("nan"))
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    kernel[(512,)](out, x, x.stride(0), out.stride(0), 1000)
    torch.cuda.synchronize()
    ms = (time.perf_counter() - t0) * 1e3
    err = (out - torch.softmax(x, dim=1)).abs().max().item()
    print(json.dumps({"ms": ms, "err": err, "bench_calls": kernel.bench_calls,
                      "stats": autotuner.stats.as_dict(), "compile": compiler.compile_stats,
                      "best_warps": kernel.best_config.num_warps,
                      "source": kernel.last_source}))
""")


def run_softmax_process(tmp_path, seed):
    path = tmp_path / "autotuned_softmax.py"
    path.write_text(SOFTMAX_SCRIPT)
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO_PYTHON + os.pathsep + env.get("PYTHONPATH", "")
    env["TRITIUM_CACHE_DIR"] = str(tmp_path / "cache")
    env["TRITIUM_COMPILE_TIMES"] = "1"
    env.pop("TRITIUM_CACHE_DISABLE", None)
    r = subprocess.run([sys.executable, str(path), str(seed)], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1]), r.stderr


def test_second_process_does_no_timing_runs(tmp_path):
    first, _ = run_softmax_process(tmp_path, 1)
    assert first["err"] < 1e-5
    assert first["bench_calls"] == 4 and first["stats"]["tunings"] == 1
    assert first["stats"]["disk_writes"] == 1 and first["source"] == "tuned"
    # All four configs were compiled in one batch, and the launches took them.
    assert first["compile"]["batches"] == 1 and first["compile"]["batch_jobs"] == 4
    assert first["compile"]["precompiled_used"] == 4

    second, log = run_softmax_process(tmp_path, 2)
    assert second["err"] < 1e-5
    assert second["bench_calls"] == 0 and second["stats"]["bench_calls"] == 0
    assert second["stats"]["disk_hits"] == 1 and second["source"] == "disk"
    assert second["best_warps"] == first["best_warps"]
    # The chosen kernel came from the disk cache too: nothing was compiled.
    assert second["compile"]["batch_jobs"] == 0
    assert "(disk cache hit)" in log and "AST walk" not in log
    print(f"second process: first call {second['ms']:.1f} ms (tuning process "
          f"{first['ms']:.1f} ms)")


@tritium.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr, BIG: tl.constexpr):
    """y = x. BLOCK > 4096 fails in the code generator; BIG adds a 512 x 512
    transpose, which needs more shared memory than a GPU has (fails in the
    GPU back end)."""
    assert BLOCK <= 4096, "BLOCK too large"
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m), mask=m)
    if BIG:
        r = tl.arange(0, 512)
        t = tl.load(x_ptr + r[:, None] * 512 + r[None, :])
        tl.store(y_ptr + r[:, None] * 512 + r[None, :], tl.trans(t))


def test_batch_skips_configs_that_fail_to_compile(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path / "cache"))
    configs = [tritium.Config({"BLOCK": 256, "BIG": False}, num_warps=2),
               tritium.Config({"BLOCK": 8192, "BIG": False}, num_warps=4),
               tritium.Config({"BLOCK": 1024, "BIG": True}, num_warps=4),
               tritium.Config({"BLOCK": 1024, "BIG": False}, num_warps=4)]
    kernel = tritium.autotune(configs, key=["n"], warmup=2, rep=5)(copy_kernel)
    n = 100_000
    x = torch.randn(n, device="cuda")
    y = torch.full_like(x, float("nan"))
    before = dict(compiler.compile_stats)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        kernel[lambda m: (tritium.cdiv(m["n"], m["BLOCK"]),)](x, y, n)
    torch.cuda.synchronize()
    assert torch.equal(y, x)
    msgs = [str(w.message) for w in rec if "failed to compile" in str(w.message)]
    assert len(msgs) == 2
    assert any("BLOCK: 8192" in m and "BLOCK too large" in m for m in msgs)
    assert any("BIG: True" in m and "shared memory" in m for m in msgs)
    assert kernel.best_config in (configs[0], configs[3]) and kernel.bench_calls == 2
    # One batch: the three configs the code generator took; the launches took
    # the two that compiled.
    assert compiler.compile_stats["batches"] - before["batches"] == 1
    assert compiler.compile_stats["batch_jobs"] - before["batch_jobs"] == 3
    assert compiler.compile_stats["precompiled_used"] - before["precompiled_used"] == 2

    # A new key with the same specialisations: compiled already, no new batch.
    n2 = 100_032
    x2 = torch.randn(n2, device="cuda")
    y2 = torch.full_like(x2, float("nan"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kernel[lambda m: (tritium.cdiv(m["n"], m["BLOCK"]),)](x2, y2, n2)
    torch.cuda.synchronize()
    assert torch.equal(y2, x2)
    # Only the config that failed in the back end goes to a batch again.
    assert compiler.compile_stats["batch_jobs"] - before["batch_jobs"] == 3 + 1
    assert kernel.bench_calls == 4 and autotuner.stats.tunings >= 2
