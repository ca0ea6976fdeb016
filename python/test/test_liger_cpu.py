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
