"""Ahead of time on the GPU (marker gpu): examples/aot's CMake project compiles add_kernel.py with
`python -m tritium.tools.compile` at build time, builds a C++ program against the cubin and C
launcher it wrote and the CUDA driver, and its CTest runs the program, which launches the kernel
with no Python and checks every element against the host's sum (output poisoned with NaN)."""

import os
import shutil
import subprocess
import sys

import pytest

pytestmark = pytest.mark.gpu

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_aot_program_built_by_cmake_runs_under_ctest(tmp_path):
    from tritium.runtime import cuda

    if not cuda.is_available():
        pytest.skip("no CUDA GPU")
    if not shutil.which("cmake") or not shutil.which("ctest"):
        pytest.skip("no cmake/ctest")
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    build = tmp_path / "build"
    configure = ["cmake", "-S", os.path.join(ROOT, "examples", "aot"), "-B", str(build),
                 f"-DPython3_EXECUTABLE={sys.executable}",
                 f"-DTRITIUM_AOT_TARGET={cuda.default_target(0)}"]
    if shutil.which("ninja"):
        configure += ["-G", "Ninja"]
    for cmd in (configure, ["cmake", "--build", str(build)],
                ["ctest", "--test-dir", str(build), "--output-on-failure"]):
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
        assert r.returncode == 0, (cmd, r.stdout[-3000:], r.stderr[-3000:])
    assert "1 tests passed" in r.stdout or "100% tests passed" in r.stdout, r.stdout
    run = subprocess.run([str(build / "aot_add")], capture_output=True, text=True, env=env,
                         timeout=60)
    assert run.returncode == 0 and "100003 elements, 0 wrong" in run.stdout, (run.stdout,
                                                                              run.stderr)
