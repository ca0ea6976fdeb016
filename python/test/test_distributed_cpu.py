"""Issue 15's CPU variant: examples/distributed/ddp_step.py under `torchrun --nproc-per-node 2`
with the gloo backend, tritium's kernels (layer norm forward and backward, an autotuned
activation) on the CPU executor in each rank. The step's loss and gradients equal a
single-process run of the whole batch, and with one shared cache one rank times the
activation's configs while the other reads the result from disk."""

import json
import os
import subprocess
import sys
import warnings

import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
EXAMPLE = os.path.join(ROOT, "examples", "distributed", "ddp_step.py")

# The sanitizer job preloads ASan into every Python it starts; torch's distributed runtime
# (gloo's threads) is not instrumented and ends in LeakSanitizer reports of its own.
pytestmark = pytest.mark.skipif("asan" in os.environ.get("LD_PRELOAD", ""),
                                reason="torch.distributed under the ASan preload")


@pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(),
                    reason="torch without gloo")
def test_ddp_step_on_two_cpu_ranks(tmp_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(ROOT, "python") + os.pathsep + env.get("PYTHONPATH", "")
    env["TRITIUM_CACHE_DIR"] = str(tmp_path / "cache")  # shared by both ranks, empty
    env["CUDA_VISIBLE_DEVICES"] = ""  # the CPU variant even on a GPU machine
    env["OMP_NUM_THREADS"] = "1"
    def torchrun():
        return subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node",
                               "2", "--master-port", str(29500 + os.getpid() % 1000), EXAMPLE],
                              env=env, capture_output=True, text=True, timeout=600,
                              cwd=str(tmp_path))

    r = torchrun()
    if r.returncode != 0 and "Signal 6 (SIGABRT)" in r.stderr and r.stdout.count('"rank"') == 2:
        # Both ranks finished the step and printed their results, then one aborted on the way
        # out (seen twice in CI, never reproduced here: gloo's shutdown when the peer has already
        # closed its sockets). Keep the evidence, and run the step once more with a fresh cache.
        warnings.warn(f"ddp_step aborted after both ranks reported; retrying. stderr:\n"
                      f"{r.stderr[-4000:]}")
        env["TRITIUM_CACHE_DIR"] = str(tmp_path / "cache-retry")
        r = torchrun()
    if r.returncode != 0:
        pytest.fail(f"torchrun exited {r.returncode}\nstdout:\n{r.stdout[-3000:]}\n"
                    f"stderr:\n{r.stderr[-6000:]}")
    rows = {}
    decoder = json.JSONDecoder()
    for line in r.stdout.splitlines():
        # Two ranks' lines may still arrive glued together by the launcher: decode each object.
        pos = line.find("{")
        while pos >= 0:
            row, end = decoder.raw_decode(line, pos)
            rows[row["rank"]] = row
            pos = line.find("{", end)
    assert sorted(rows) == [0, 1], r.stdout
    assert rows[0]["ok"] and rows[0]["max_grad_err"] <= 1e-5
    assert rows[0]["loss"] == rows[1]["loss"] == pytest.approx(rows[0]["ref_loss"], rel=1e-5)
    for row in rows.values():
        assert row["device"] == "cpu" and row["tritium_devices"] == ["cpu"]
    # One rank tuned the activation (three configs timed once), the other read it from disk.
    tuned = [row for row in rows.values() if row["autotuner"]["tunings"] == 1]
    waited = [row for row in rows.values() if row["autotuner"]["disk_hits"] == 1]
    assert len(tuned) == 1 and tuned[0]["autotuner"]["bench_calls"] == 3
    assert len(waited) == 1 and waited[0]["autotuner"]["bench_calls"] == 0
