"""examples/: every example passes its checks on the CPU executor (examples/run_all.py, what
`make demo` runs), the kernels the examples add for the GPU (layer-norm backward, grouped GEMM)
compile and assemble for sm_80 and sm_90a at their benchmark configurations, and the shared
benchmark helpers (examples/_bench.py) work without a GPU, Triton or matplotlib."""

import os
import re
import subprocess
import sys

import numpy as np
import pytest

import tritium

EXAMPLES = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
if EXAMPLES not in sys.path:
    sys.path.append(EXAMPLES)

import _bench  # noqa: E402
import grouped_gemm  # noqa: E402
import layer_norm  # noqa: E402


def test_run_all_passes():
    # the CPU checks only, also on a GPU machine (the GPU runs are the examples' own business)
    env = dict(os.environ, PYTHONPATH=os.path.join(EXAMPLES, "..", "python"),
               TRITIUM_EXAMPLES_CPU_ONLY="1")
    r = subprocess.run([sys.executable, os.path.join(EXAMPLES, "run_all.py")], env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    names = [n for n in os.listdir(EXAMPLES) if n.endswith(".py") and not n.startswith("_")
             and n != "run_all.py"]
    for name in names:  # every example file is run
        assert f"== {name[:-3]}: PASS" in r.stdout
    assert "FAIL" not in r.stdout


_PTRS = ["a_ptrs", "b_ptrs", "c_ptrs", "sizes_ptr", "lds_ptr"]


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_grouped_gemm_compiles_for_gpus(target):
    k = tritium.compile(grouped_gemm.grouped_matmul_kernel,
                        signature={"a_ptrs": "*i64", "b_ptrs": "*i64", "c_ptrs": "*i64",
                                   "sizes_ptr": "*i32", "lds_ptr": "*i32", "group_count": "i32"},
                        constexprs={"NUM_PROGRAMS": 132, "BLOCK_M": 128, "BLOCK_N": 128,
                                    "BLOCK_K": 64},
                        target=target, num_warps=8, num_stages=3, divisible_by_16=_PTRS)
    ptx = k.asm["ptx"]
    assert ("wgmma" if target == "sm_90a" else "mma.sync") in ptx
    if tritium.errors.load_C().ptxas_path():
        assert k.asm.get("cubin")


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("block", [1024, 8192])
def test_layer_norm_backward_compiles_for_gpus(target, block):
    k = tritium.compile(layer_norm.layer_norm_bwd_dx_kernel,
                        signature=dict(x_ptr="*fp16", dy_ptr="*fp16", dx_ptr="*fp16",
                                       w_ptr="*fp16", mean_ptr="*fp32", rstd_ptr="*fp32",
                                       part_dw_ptr="*fp32", part_db_ptr="*fp32",
                                       row_stride="i32", n_rows="i32", n_cols="i32"),
                        constexprs={"BLOCK_SIZE": block}, target=target, num_warps=8)
    assert k.asm["ptx"]
    # spills would make the example's GPU timing meaningless
    assert not re.search(r"[1-9]\d* bytes spill", k.metadata.get("ptxas_log", ""))
    k = tritium.compile(layer_norm.layer_norm_bwd_dwdb_kernel,
                        signature=dict(part_dw_ptr="*fp32", part_db_ptr="*fp32", dw_ptr="*fp16",
                                       db_ptr="*fp16", n_parts="i32", n_cols="i32"),
                        constexprs={"BLOCK_M": 32, "BLOCK_N": 128}, target=target, num_warps=4)
    if tritium.errors.load_C().ptxas_path():
        assert k.asm.get("cubin")


def test_layer_norm_backward_with_a_single_program():
    """All rows in one program's partial sums: dw and db are the column sums."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((9, 70)).astype(np.float32)
    w, b = rng.standard_normal(70).astype(np.float32), rng.standard_normal(70).astype(np.float32)
    dy = rng.standard_normal((9, 70)).astype(np.float32)
    _, mean, rstd = layer_norm.layer_norm(x, w, b, 1e-5)
    got = layer_norm.layer_norm_backward(dy, x, w, mean, rstd, n_programs=1)
    for g, want in zip(got, layer_norm.reference_backward(dy, x, w, 1e-5)):
        np.testing.assert_allclose(g, want, rtol=1e-4, atol=1e-5)


def test_twin_source_swaps_the_imports_only():
    with open(os.path.join(EXAMPLES, "block_ptr_matmul.py")) as f:
        source = f.read()
    twin = _bench.twin_source(source)
    assert "import triton\n" in twin and "import triton.language as tl\n" in twin
    assert "from triton.tools.tensor_descriptor import TensorDescriptor" in twin
    assert "import tritium" not in twin and "from tritium" not in twin
    assert twin.count("\n") == source.count("\n")
    with pytest.raises(ValueError, match="expected the line"):
        _bench.twin_source("import numpy\n")


def test_no_triton_twin_when_disabled(monkeypatch):
    monkeypatch.setenv("TRITIUM_BENCH_NO_TRITON", "1")
    assert _bench.triton_twin(os.path.join(EXAMPLES, "vector_add.py")) is None


def test_nan_like_and_strides():
    a = np.zeros((4, 6), np.float16)[:, ::2]
    out = _bench.nan_like(a, (3,), np.float32)
    assert out.shape == (3,) and out.dtype == np.float32 and np.isnan(out).all()
    assert _bench.strides(a) == (6, 2)
    torch = pytest.importorskip("torch")
    t = torch.zeros(4, 6, dtype=torch.int32).t()
    o = _bench.nan_like(t)
    assert o.shape == (6, 4) and o.dtype == torch.int32 and (o == -1).all()
    assert _bench.strides(t) == (1, 6)


def test_benchmark_table_and_plot(tmp_path, monkeypatch, capsys):
    """The table on the CPU clock (the GPU uses CUDA events): a failing implementation is
    reported and does not stop the others; the plot is written or cleanly skipped."""
    monkeypatch.setattr(_bench, "PLOT_DIR", str(tmp_path))
    cases = [("small", 1), ("big", 4)]
    impls = {"ok": lambda label: (lambda: sum(range(100))),
             "broken": lambda label: (lambda: 1 / 0),
             "partial": lambda label: None if label == "big" else (lambda: None)}
    rows = _bench.benchmark("demo", cases, impls, lambda label, ms: 1 / ms, "runs/ms", "size")
    out = capsys.readouterr().out
    assert "demo: median ms (runs/ms) per case" in out
    assert "broken on small: ZeroDivisionError" in out
    ok = [r for r in rows if r["impl"] == "ok"]
    assert len(ok) == 2 and all(r["ms"] > 0 for r in ok)
    assert not any(r["impl"] == "partial" and r["case"] == "big" for r in rows)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "matplotlib is not installed; no plot" in out
    else:
        assert (tmp_path / "demo.png").stat().st_size > 0
