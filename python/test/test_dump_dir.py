"""TRITIUM_DUMP_DIR: every compile writes its stages (tile IR as generated and after the tile
passes; for the GPU also GPU IR, PTX, cubin and metadata) to a folder of its own; and the
registers and spills ptxas reports in compiled.metadata."""

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = os.path.join(HERE, "..")

SCRIPT = r'''
import numpy as np, tritium, tritium as triton, tritium.language as tl

@triton.jit
def add(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) + 1, mask=m)

x = np.arange(16, dtype=np.float32); y = np.zeros(16, np.float32)
add[(1,)](x, y, 16, BLOCK=16)                     # the CPU executor: tile IR
assert (y == x + 1).all()
tritium.compile(add, signature={"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"},
                constexprs={"BLOCK": 16}, target="sm_90a", use_cache=False)  # the GPU stages
'''


def test_dump_dir_gets_every_stage(tmp_path):
    env = dict(os.environ, TRITIUM_DUMP_DIR=str(tmp_path / "dump"),
               TRITIUM_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=PYTHON + os.pathsep + os.environ.get("PYTHONPATH", ""))
    script = tmp_path / "kern.py"  # a kernel's source must be in a file
    script.write_text(SCRIPT)
    r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    folders = sorted(os.listdir(tmp_path / "dump"))
    assert len(folders) == 2 and all(f.startswith("add-") for f in folders), folders
    files = [set(os.listdir(tmp_path / "dump" / f)) for f in folders]
    cpu = next(f for f in files if "gir.tir" not in f)
    gpu = next(f for f in files if "gir.tir" in f)
    assert cpu == {"tir-raw.tir", "tir.tir"}
    assert {"tir-raw.tir", "tir.tir", "gir.tir", "kernel.ptx", "metadata.json"} <= gpu
    folder = tmp_path / "dump" / folders[[("gir.tir" in f) for f in files].index(True)]
    assert "tt.func @add" in (folder / "tir.tir").read_text()
    assert "#ttg.blocked" in (folder / "gir.tir").read_text()
    assert ".entry add" in (folder / "kernel.ptx").read_text()
    meta = json.loads((folder / "metadata.json").read_text())
    assert meta["target"] == "sm_90a" and meta["num_warps"] == 4


def test_metadata_has_registers_and_spills():
    import shutil  # noqa: PLC0415
    import tritium  # noqa: PLC0415
    if not (shutil.which("ptxas") or os.path.exists("/usr/local/cuda/bin/ptxas")):
        import pytest  # noqa: PLC0415
        pytest.skip("no ptxas")
    from _dot_kernels import persistent_matmul_kernel as k  # noqa: PLC0415
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
           "stride_am": "i32", "stride_ak": "i32", "stride_bk": "i32", "stride_bn": "i32",
           "stride_cm": "i32", "stride_cn": "i32"}
    c = tritium.compile(k, signature=sig, target="sm_90a", use_cache=False,
                        constexprs={"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "NUM_SMS": 4,
                                    "WS": False})
    assert 16 < c.metadata["n_regs"] <= 255 and c.metadata["n_spills"] == 0
