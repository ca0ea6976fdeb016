"""The fp8 conversion kernels of _fp8_formats.py compiled for sm_80 and
sm_90a and assembled by ptxas: fp8e4b15 / fp8e4b8 / fp8e5b16 <-> fp16, bf16,
fp32 (both roundings), fp8 -> fp8, arithmetic in the formats, and the native
formats' rtz path (integer code, so sm_80 takes it too). The PTX converts
with integer code: no cvt names the new formats."""

import pytest

import tritium
import tritium.language as tl

import _fp8_formats as F
from test_debug_ops_ptx import TARGETS, _ptxas, needs_ptxas
BITS = {"fp16": "*i16", "bf16": "*i16", "fp32": "*i32"}


def _assemble(kernel, sig, constexprs, tmp_path):
    ptxs = []
    for target in TARGETS:
        k = tritium.compile(kernel, signature=sig, constexprs=constexprs, target=target,
                            use_cache=False)
        ptx = k.asm["ptx"]
        _ptxas(ptx, target, tmp_path)
        ptxs.append(ptx)
    return ptxs


@needs_ptxas
@pytest.mark.parametrize("wide", ["fp16", "bf16", "fp32"])
@pytest.mark.parametrize("fmt", F.NEW_FORMATS)
def test_decode_assembles(fmt, wide, tmp_path):
    wt, bt = F.WIDE[wide]
    for ptx in _assemble(F.decode_kernel, {"src": "*u8", "dst": BITS[wide], "n": "i32"},
                         {"FP8": F.TL[fmt], "WIDE_T": wt, "BITS_T": bt, "BLOCK": F.BLOCK},
                         tmp_path):
        assert "e4m3" not in ptx and "e5m2" not in ptx


@needs_ptxas
@pytest.mark.parametrize("rounding", ["rtne", "rtz"])
@pytest.mark.parametrize("wide", ["fp16", "bf16", "fp32"])
@pytest.mark.parametrize("fmt", F.NEW_FORMATS + ("fp8e4nv", "fp8e5"))
def test_encode_assembles(fmt, wide, rounding, tmp_path):
    if fmt in ("fp8e4nv", "fp8e5") and rounding == "rtne":
        pytest.skip("the native formats' cvt path needs sm_89; tested elsewhere")
    for ptx in _assemble(F.encode_kernel, {"src": BITS[wide], "dst": "*u8", "n": "i32"},
                         {"FP8": F.TL[fmt], "WIDE_T": F.WIDE[wide][0], "ROUNDING": rounding,
                          "BLOCK": F.BLOCK}, tmp_path):
        assert ("cvt.rzi.u32.f32" in ptx) == (rounding == "rtz")
        assert "e4m3" not in ptx and "e5m2" not in ptx


@needs_ptxas
@pytest.mark.parametrize("src, dst", [("fp8e5b16", "fp8e4b8"), ("fp8e4b8", "fp8e4b15"),
                                      ("fp8e4b15", "fp8e5b16")])
def test_recode_assembles(src, dst, tmp_path):
    _assemble(F.recode_kernel, {"src": "*u8", "dst": "*u8", "n": "i32"},
              {"FROM": F.TL[src], "TO": F.TL[dst], "BLOCK": F.BLOCK}, tmp_path)


@needs_ptxas
@pytest.mark.parametrize("fmt", F.NEW_FORMATS)
def test_multiply_assembles(fmt, tmp_path):
    _assemble(F.multiply_kernel, {"a": "*u8", "b": "*u8", "dst": "*u8", "n": "i32"},
              {"FP8": F.TL[fmt], "BLOCK": F.BLOCK}, tmp_path)


@needs_ptxas
@pytest.mark.parametrize("fmt", F.NEW_FORMATS)
def test_typed_pointer_assembles(fmt, tmp_path):
    _assemble(F.typed_copy_kernel, {"src": "*" + fmt, "dst": "*fp32", "n": "i32"},
              {"BLOCK": F.BLOCK}, tmp_path)


@tritium.jit
def _downcast(src, dst, n, TO: tl.constexpr, ROUNDING: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(src + offs, mask=mask)
    tl.store(dst + offs, x.to(TO, fp_downcast_rounding=ROUNDING), mask=mask)


@needs_ptxas
@pytest.mark.parametrize("src, to, instr", [("fp32", "fp16", "cvt.rz.f16.f32"),
                                            ("fp32", "bf16", "cvt.rz.bf16.f32"),
                                            ("fp64", "fp32", "cvt.rz.f32.f64"),
                                            ("fp64", "fp16", "cvt.rz.f16.f64")])
def test_rtz_downcast_assembles(src, to, instr, tmp_path):
    for ptx in _assemble(_downcast, {"src": "*" + src, "dst": "*" + to, "n": "i32"},
                         {"TO": tl.dtype(to), "ROUNDING": "rtz", "BLOCK": F.BLOCK}, tmp_path):
        assert instr in ptx and "cvt.rn." not in ptx
