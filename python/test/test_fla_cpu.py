"""flash-linear-attention (fla-core 0.6.0, a library of chunked linear-attention kernels whose
modules `import triton`) under tritium on the CPU executor: the ops of benchmarks/bench_fla.py,
forward and backward in fp32 and bf16 at small shapes, against fla's own torch references.

Needs the wheels (not committed; CI has none, so this skips there):
    pip download --no-deps fla-core==0.6.0 einops -d benchmarks/wheels/
The cases run in a subprocess, since `tritium.inductor.install()` replaces `triton` in
sys.modules."""

import glob
import json
import os
import subprocess
import sys

import pytest

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(os.path.dirname(_HERE))
_BENCH = os.path.join(_ROOT, "benchmarks", "bench_fla.py")
_WHEELS = os.path.join(_ROOT, "benchmarks", "wheels")
_WHEEL = os.path.join(_WHEELS, "fla_core-0.6.0-py3-none-any.whl")


def _has(module):
    try:
        __import__(module)
    except ImportError:
        return False
    return True


@pytest.mark.skipif(not os.path.exists(_WHEEL), reason="no fla-core 0.6.0 wheel in "
                    "benchmarks/wheels/ (pip download --no-deps fla-core==0.6.0 einops)")
@pytest.mark.skipif(not (_has("einops") or glob.glob(os.path.join(_WHEELS, "einops-*.whl"))),
                    reason="fla needs einops (installed, or its wheel in benchmarks/wheels/)")
@pytest.mark.skipif(not _has("torch"), reason="needs torch")
def test_fla_ops_on_cpu_executor():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(_ROOT, "python") + os.pathsep + env.get("PYTHONPATH", "")
    p = subprocess.run([sys.executable, _BENCH, "--impl", "tritium", "--device", "cpu"],
                       capture_output=True, text=True, timeout=1800, env=env, check=False)
    recs = [json.loads(ln) for ln in p.stdout.splitlines() if ln.startswith("{")]
    assert p.returncode == 0, p.stderr[-3000:]
    run = [r for r in recs if not r.get("not_applicable")]
    names = {r["op"] for r in run}
    # Every op in fp32 and bf16, but chunk_delta_rule, which fla takes in bf16 only.
    assert len(names) >= 20 and len(run) == 2 * len(names) - 1, sorted(names)
    bad = [f"{r['op']}/{r['dtype']}: {r['error']}" for r in run if not r["ok"]]
    assert not bad, "\n".join(bad)
