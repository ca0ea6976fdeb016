"""The PTX of the scans and combine reductions (the kernels of test_gpu_scan.py), compiled for
sm_80 and sm_90a without a GPU and assembled with ptxas: every axis of 1-D, 2-D and 3-D blocks,
with 1, 4 and 8 warps (so that registers, lanes and warps split the axis in different orders),
one and two inputs, reverse. The GPU tests check the values."""

import os
import shutil
import subprocess

import numpy as np
import pytest

import tritium

from _scan_kernels import (
    SHAPES, argmax_reduce_kernel, linear_recurrence_kernel, out_dims, reduce_kernel, scan_kernel,
)

PTXAS = shutil.which("ptxas") or ("/usr/local/cuda/bin/ptxas"
                                  if os.path.exists("/usr/local/cuda/bin/ptxas") else None)
pytestmark = pytest.mark.skipif(PTXAS is None, reason="ptxas not installed")


def _dims(shape):
    s = list(shape) + [1] * (3 - len(shape))
    return {"A": s[0], "B": s[1], "C": s[2], "RANK": len(shape)}


def _assemble(kernel, sig, constexprs, num_warps, tmp_path):
    for target in ("sm_80", "sm_90a"):
        k = tritium.compile(kernel, signature=sig, constexprs=constexprs, target=target,
                            num_warps=num_warps, use_cache=False)
        ptx = k.asm["ptx"]
        path = tmp_path / f"k_{target}.ptx"
        path.write_text(ptx)
        r = subprocess.run([PTXAS, f"-arch={target}", str(path), "-o", str(tmp_path / "k.cubin")],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr + "\n" + ptx
    return k


def scan_cases():
    for shape in SHAPES:
        for axis in range(len(shape)):
            for op, dtype in (("cumsum", "fp32"), ("assoc_max", "i32"), ("cumprod", "fp16"),
                              ("assoc_add", "i8"), ("cumsum", "i64")):
                yield shape, axis, op, dtype


@pytest.mark.parametrize("num_warps", [1, 4, 8])
@pytest.mark.parametrize("shape,axis,op,dtype", list(scan_cases()), ids=str)
def test_scan_ptx_assembles(shape, axis, op, dtype, num_warps, tmp_path):
    out = {"i8": "i32", "fp16": "fp16"}.get(dtype, dtype) if op == "cumsum" else dtype
    k = _assemble(scan_kernel, {"x_ptr": "*" + dtype, "y_ptr": "*" + out},
                  dict(_dims(shape), AXIS=axis, OP=op, REVERSE=axis % 2 == 0), num_warps,
                  tmp_path)
    assert "tt.scan" in k.asm["gir"]
    if shape[axis] >= 32 * num_warps and num_warps > 1:
        assert "bar.sync" in k.asm["ptx"]


@pytest.mark.parametrize("num_warps", [1, 4, 8])
@pytest.mark.parametrize("shape,axis", [(s, a) for s in SHAPES for a in range(len(s))], ids=str)
def test_recurrence_ptx_assembles(shape, axis, num_warps, tmp_path):
    sig = {n: "*fp32" for n in ("a_ptr", "b_ptr", "oa_ptr", "ob_ptr")}
    _assemble(linear_recurrence_kernel, sig, dict(_dims(shape), AXIS=axis, REVERSE=axis == 0),
              num_warps, tmp_path)


@pytest.mark.parametrize("num_warps", [1, 4, 8])
@pytest.mark.parametrize("shape,axis", [(s, a) for s in SHAPES for a in list(range(len(s))) + [None]],
                         ids=str)
def test_reduce_ptx_assembles(shape, axis, num_warps, tmp_path):
    ref = np.zeros(shape).sum(axis=axis)
    k = _assemble(reduce_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32"},
                  dict(_dims(shape), AXIS=axis, **out_dims(np.shape(ref))), num_warps, tmp_path)
    assert "tt.reduce_combine" in k.asm["gir"]
    if axis is not None:
        stride = int(np.prod(shape[axis + 1:]))
        _assemble(argmax_reduce_kernel, {"x_ptr": "*fp32", "v_ptr": "*fp32", "i_ptr": "*i32"},
                  dict(_dims(shape), AXIS=axis, STRIDE=stride, SIZE=shape[axis],
                       **out_dims(np.shape(ref))), num_warps, tmp_path)


SORT_CASES = [((128,), "sort", 0), ((16, 32), "sort", 1), ((4, 8, 16), "sort", 2),
              ((128,), "flip", 0), ((16, 32), "flip", 0), ((16, 32), "flip", 1),
              ((4, 8, 16), "flip", 1)]


@pytest.mark.parametrize("num_warps", [1, 4])
@pytest.mark.parametrize("shape,op,dim", SORT_CASES, ids=str)
@pytest.mark.parametrize("dtype", ["fp32", "i8"])
def test_sort_flip_ptx_assembles(shape, op, dim, dtype, num_warps, tmp_path):
    from _scan_kernels import sort_flip_kernel
    _assemble(sort_flip_kernel, {"x_ptr": "*" + dtype, "y_ptr": "*" + dtype},
              dict(_dims(shape), OP=op, DIM=dim, DESCENDING=dim == 0), num_warps, tmp_path)


@pytest.mark.parametrize("axis", [0, 1, None])
def test_reduce_keep_dims_ptx_assembles(axis, tmp_path):
    from _scan_kernels import reduce_keep_dims_kernel
    _assemble(reduce_keep_dims_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32"},
              dict(A=32, B=64, AXIS=axis), 4, tmp_path)


@tritium.jit
def _cumsum_row_kernel(x_ptr, y_ptr, N: tritium.language.constexpr):
    tl = tritium.language
    offs = tl.arange(0, N)
    tl.store(y_ptr + offs, tl.cumsum(tl.load(x_ptr + offs), 0))


def test_scan_updates_each_element_once(tmp_path):
    """A 1024-element cumsum on 4 warps (8 elements a thread: 2 runs of 4 registers, then lane,
    warp and register bits): the lane and warp bits combine one total and one prefix per run,
    and each element takes its run's prefix once at the end. Adds in the PTX: the runs'
    sequential scans 2 x 3, lane bits 5 x 2 totals + 4 x 2 prefixes (the first prefix is the
    partner's total), warp bits 2 x 2 x 2, the register bit 2, the final prefix 8: 42 (the
    per-element update at every bit took 120); the warp bits store one total per run, not per
    element (4 stores, 16 before)."""
    for target in ("sm_80", "sm_90a"):
        # 16-byte aligned rows: loads of 4 elements, and the scan keeps their layout.
        k = tritium.compile(_cumsum_row_kernel, signature={"x_ptr": "*fp32", "y_ptr": "*fp32"},
                            constexprs={"N": 1024}, target=target, num_warps=4,
                            divisible_by_16=["x_ptr", "y_ptr"], use_cache=False)
        assert "sizePerThread = [4]" in k.asm["gir"]
        ptx = k.asm["ptx"]
        path = tmp_path / "k.ptx"
        path.write_text(ptx)
        r = subprocess.run([PTXAS, f"-arch={target}", str(path), "-o", str(tmp_path / "k.cubin")],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        adds = ptx.count("add.f32") + ptx.count("add.rn.f32")
        assert adds == 42, adds
        assert ptx.count("st.shared.f32") == 4, ptx.count("st.shared.f32")


@tritium.jit
def _count_kernel(x_ptr, out_ptr, N: tritium.language.constexpr):
    tl = tritium.language
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr, tl.sum((x > 0).to(tl.int32), 0))
    tl.store(out_ptr + 1, tl.sum(x, 0).to(tl.int32))


def test_int32_sum_across_a_warp_is_one_redux(tmp_path):
    """An int32 sum whose 32 lanes all run along the axis is one redux.sync.add (sm_80 and
    sm_90a); the float sum beside it keeps its butterfly shuffles."""
    k = _assemble(_count_kernel, {"x_ptr": "*fp32", "out_ptr": "*i32"}, {"N": 1024}, 4, tmp_path)
    ptx = k.asm["ptx"]
    assert ptx.count("redux.sync.add.s32") == 1, ptx
    assert ptx.count("shfl.sync.bfly") >= 5
