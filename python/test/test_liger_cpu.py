"""Liger-Kernel 0.8.5 (a real library whose kernels `import triton`) under tritium on the CPU
executor: every op of benchmarks/bench_liger.py that has Triton kernels and needs neither tl.dot
nor TMA, forward and backward in fp32 and bf16 at small shapes, against plain torch.

Needs the wheel (not committed; CI has none, so this skips there):
    pip download --no-deps liger-kernel==0.8.5 -d benchmarks/wheels/
The cases run in one subprocess, since `tritium.inductor.install()` replaces `triton` in
sys.modules."""

import json
import os
import subprocess
import sys

import pytest

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(os.path.dirname(_HERE))
_BENCH = os.path.join(_ROOT, "benchmarks", "bench_liger.py")
_WHEEL = os.path.join(_ROOT, "benchmarks", "wheels", "liger_kernel-0.8.5-py3-none-any.whl")


def _has_torch():
    try:
        import torch  # noqa: F401,PLC0415
    except ImportError:
        return False
    return True


@pytest.mark.skipif(not os.path.exists(_WHEEL), reason="no Liger-Kernel 0.8.5 wheel in "
                    "benchmarks/wheels/ (pip download --no-deps liger-kernel==0.8.5)")
@pytest.mark.skipif(not _has_torch(), reason="needs torch")
def test_liger_ops_on_cpu_executor():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(_ROOT, "python") + os.pathsep + env.get("PYTHONPATH", "")
    p = subprocess.run([sys.executable, _BENCH, "--impl", "tritium", "--device", "cpu"],
                       capture_output=True, text=True, timeout=600, env=env, check=False)
    recs = [json.loads(ln) for ln in p.stdout.splitlines() if ln.startswith("{")]
    assert p.returncode == 0, p.stderr[-3000:]
    names = {r["op"] for r in recs}
    assert len(recs) == 2 * len(names) and len(names) >= 30, sorted(names)
    bad = [f"{r['op']}/{r['dtype']}: {r['error']}" for r in recs if not r["ok"]]
    assert not bad, "\n".join(bad)


def test_rounds_keep_each_cases_best_and_any_failure():
    """bench_liger --rounds: per case, the smallest ms and GPU ms of the rounds that timed it,
    and a case that failed in any round stays failed, with that round's error."""
    import importlib.util  # noqa: PLC0415

    spec = importlib.util.spec_from_file_location("bench_liger_rounds", _BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    k1, k2, k3 = ("dyt", "fp32"), ("dyt", "bf16"), ("tvd", "fp32")
    rounds = [
        {k1: {"ok": True, "ms": 0.86, "gpu_ms": 0.21, "error": None},
         k2: {"ok": True, "ms": 0.50, "gpu_ms": None, "error": None},
         k3: {"ok": True, "ms": 0.80, "gpu_ms": 0.30, "error": None}},
        {k1: {"ok": True, "ms": 0.45, "gpu_ms": 0.22, "error": None},
         k2: {"ok": True, "ms": 0.60, "gpu_ms": 0.17, "error": None},
         k3: {"ok": False, "ms": None, "gpu_ms": None, "error": "RuntimeError: boom"}},
    ]
    best = bench.best_of(rounds)
    assert (best[k1]["ms"], best[k1]["gpu_ms"], best[k1]["ok"]) == (0.45, 0.21, True)
    assert (best[k2]["ms"], best[k2]["gpu_ms"]) == (0.50, 0.17)
    assert best[k3]["ok"] is False and best[k3]["error"] == "RuntimeError: boom"
    assert best[k3]["ms"] == 0.80 and best[k1]["rounds"] == 2
    # The input records are not changed.
    assert rounds[0][k1]["ms"] == 0.86


def test_kernels_side_by_side():
    """bench_liger --kernels: each round's per-kernel times reduce to their minimum, and a slow
    case lists Liger's kernels (same names under both compilers) first, slowest first, then
    torch's, with a kernel only one side launched shown with a gap."""
    import importlib.util  # noqa: PLC0415

    spec = importlib.util.spec_from_file_location("bench_liger_kernels", _BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    key = ("poly_norm", "fp32")
    tm = bench.best_of([
        {key: {"ok": True, "ms": 0.33, "gpu_ms": 0.26, "error": None,
               "gpu_kernels": {"_fwd": 70.0, "_bwd": 190.0, "Memset (Device)": 1.0}}},
        {key: {"ok": True, "ms": 0.34, "gpu_ms": 0.255, "error": None,
               "gpu_kernels": {"_fwd": 66.0, "_bwd": 191.0, "Memset (Device)": 1.0}}}])
    assert tm[key]["gpu_kernels"] == {"_fwd": 66.0, "_bwd": 190.0, "Memset (Device)": 1.0}
    tr = {key: {"ok": True, "ms": 0.5, "gpu_ms": 0.246, "error": None,
                "gpu_kernels": {"_fwd": 60.0, "_bwd": 185.0, "void at::reduce_kernel": 2.0}}}
    rows, _ = bench.summarize(tr, tm)
    got = bench.kernel_rows(rows[0])
    assert [g[0] for g in got] == ["_bwd", "_fwd", "void at::reduce_kernel", "Memset (Device)"]
    assert got[1][1:3] == (66.0, 60.0) and abs(got[1][3] - 1.1) < 1e-9
    assert got[2][1] is None and got[3][2] is None and got[3][3] is None
