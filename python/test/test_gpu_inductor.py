"""torch.compile on tritium, on the GPU (marker gpu): the models of _inductor_models.py with CUDA
tensors, Inductor's GPU kernels compiled by tritium and launched through its launcher, against
eager torch (Inductor's tolerances), with no real Triton module loaded. The subprocess keeps
tritium.inductor.install()'s sys.modules surgery out of this process."""

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.gpu

_HERE = os.path.dirname(os.path.abspath(__file__))
_PYTHON_DIR = os.path.dirname(_HERE)

MODELS = ["mlp", "reductions", "elementwise", "conv_bn", "dynamic", "training", "softmax",
          "cumsum", "dropout", "transformer", "special", "sort"]


@pytest.fixture(scope="module")
def gpu_results(tmp_path_factory):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    tmp = tmp_path_factory.mktemp("inductor-gpu")
    env = dict(os.environ)
    env["PYTHONPATH"] = _PYTHON_DIR + os.pathsep + env.get("PYTHONPATH", "")
    env["TORCHINDUCTOR_CACHE_DIR"] = str(tmp / "inductor-cache")
    env["TRITIUM_CACHE_DIR"] = str(tmp / "tritium-cache")
    env["TRITIUM_INDUCTOR_DEVICE"] = "cuda"
    env.pop("TRITIUM_INDUCTOR_STOCK", None)
    proc = subprocess.run([sys.executable, os.path.join(_HERE, "_inductor_models.py")],
                          env=env, capture_output=True, text=True, timeout=1800)
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert proc.returncode == 0 and lines, (proc.stdout[-3000:], proc.stderr[-5000:])
    results = {r["model"]: r for r in lines if "model" in r}
    results["_summary"] = lines[-1]
    return results


@pytest.mark.parametrize("model", MODELS)
def test_gpu_model_matches_eager(gpu_results, model):
    r = gpu_results[model]
    assert r["ok"], r["error"]
    assert r["compiles"] >= 1 and r["launches"] >= 1, r
    assert all(k.startswith("triton_") for k in r["kernels"]), r["kernels"]


def test_gpu_no_real_triton(gpu_results):
    summary = gpu_results["_summary"]
    assert summary["surface"] is True
    assert summary["foreign_triton_modules"] == []
