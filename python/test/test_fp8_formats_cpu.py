"""fp8e4b15, fp8e4b8 and fp8e5b16 (and, for rounding toward zero, fp8e4nv and
fp8e5) on the CPU executor, against the numpy reference of _fp8_formats.py:
the dtype objects and their facts, every encoding decoded to fp16/bf16/fp32,
conversions into each format at its rounding boundaries (ties, overflow,
subnormals, NaN, inf, -0) with fp_downcast_rounding "rtne" and "rtz", fp8 ->
fp8, arithmetic in the format, typed pointers (tritium.reinterpret, torch's
fnuz dtypes), and the errors. test_gpu_fp8_formats.py runs the same kernels
on a GPU; test_fp8_formats_ptx.py assembles them for sm_80 and sm_90a."""

import numpy as np
import pytest

import tritium
import tritium.language as tl
from tritium.errors import CompilationError

import _fp8_formats as F
from harness import needs_torch


def put(a):
    return np.ascontiguousarray(a)


def get(a):
    return np.asarray(a)


# ---- the dtypes ----------------------------------------------------------------------------

@pytest.mark.parametrize("name, bias, mant, ir", [
    ("fp8e4b15", 15, 3, "f8e4b15"), ("fp8e4b8", 8, 3, "f8e4b8"), ("fp8e5b16", 16, 2, "f8e5b16"),
    ("fp8e4nv", 7, 3, "f8e4nv"), ("fp8e5", 15, 2, "f8e5"), ("fp16", 15, 10, "f16"),
    ("bf16", 127, 7, "bf16"), ("fp32", 127, 23, "f32"), ("fp64", 1023, 52, "f64")])
def test_float_dtype_facts(name, bias, mant, ir):
    d = tl.dtype(name)
    assert d.exponent_bias == bias
    assert d.fp_mantissa_width == mant
    assert d.ir_name == ir
    assert tl.core.dtype_from_name(ir) is tl.core.dtype_from_name(name)
    assert d.is_floating() and name in tl.dtype.FP_TYPES
    assert d.is_fp8() == name.startswith("fp8")
    assert getattr(d, f"is_{name}")()


def test_new_fp8_dtype_objects():
    assert tl.float8e4b15 == tl.dtype("fp8e4b15") and str(tl.float8e4b15) == "fp8e4b15"
    assert repr(tl.float8e4b8) == "triton.language.float8e4b8"
    assert tl.float8e5b16.primitive_bitwidth == 8
    assert tl.float8e4b15.is_fp8e4b15() and not tl.float8e4b15.is_fp8e4nv()
    assert tl.float8e5b16.is_fp8e5b16() and not tl.float8e5b16.is_fp8e5()
    assert not tl.float8e4b8.is_standard_floating()
    assert tl.dtype.FP_TYPES[:5] == ["fp8e4b15", "fp8e4nv", "fp8e4b8", "fp8e5", "fp8e5b16"]
    with pytest.raises(AttributeError):
        tl.int8.exponent_bias  # noqa: B018


def test_signature_strings():
    from tritium.compile_api import parse_type
    for name in F.NEW_FORMATS:
        assert parse_type(name) == tl.dtype(name)
        assert parse_type("*" + name) == tl.pointer_type(tl.dtype(name))


def test_reference_tables():
    """The reference's own facts: maxima, NaN counts."""
    assert F.max_finite("fp8e4b15") == 1.875
    assert F.max_finite("fp8e4b8") == 240.0
    assert F.max_finite("fp8e5b16") == 57344.0
    assert F.max_finite("fp8e4nv") == 448.0
    assert F.max_finite("fp8e5") == 57344.0
    assert np.isnan(F.decode_table("fp8e4b15")).sum() == 0
    for fmt in ("fp8e4b8", "fp8e5b16"):
        t = F.decode_table(fmt)
        assert np.isnan(t).sum() == 1 and np.isnan(t[0x80]) and not np.isinf(t).any()
    assert F.decode_table("fp8e4b8")[1] == 2.0 ** -10
    assert F.decode_table("fp8e5b16")[1] == 2.0 ** -17


# ---- every encoding, both ways ------------------------------------------------------------

@pytest.mark.parametrize("wide", ["fp16", "bf16", "fp32"])
@pytest.mark.parametrize("fmt", F.NEW_FORMATS)
def test_decode_all_256(fmt, wide):
    got = F.run_decode(fmt, wide, put, get)
    want = F.decode_table(fmt)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_array_equal(got[ok], want[ok])
    np.testing.assert_array_equal(np.signbit(got[ok]), np.signbit(want[ok]))


@pytest.mark.parametrize("wide", ["fp16", "bf16", "fp32"])
@pytest.mark.parametrize("fmt", F.NEW_FORMATS)
def test_round_trip_all_256(fmt, wide):
    """Every value goes back to its own code (the NaN to the NaN)."""
    values = F.decode_table(fmt)
    got = F.run_encode(fmt, wide, values, None, put, get)
    want = np.arange(256, dtype=np.uint8)
    if fmt in ("fp8e4b8", "fp8e5b16"):
        want = want.copy()
    assert np.all(F.same_bits_or_nan(got, want, fmt)), np.nonzero(got != want)


@pytest.mark.parametrize("rounding", [None, "rtne", "rtz"])
@pytest.mark.parametrize("wide", ["fp16", "bf16", "fp32"])
@pytest.mark.parametrize("fmt", F.NEW_FORMATS + ("fp8e4nv", "fp8e5"))
def test_encode_boundaries(fmt, wide, rounding):
    if rounding != "rtz" and fmt in ("fp8e4nv", "fp8e5"):
        pytest.skip("covered by the native formats' own tests")
    values = F.representable(F.boundary_inputs(fmt), wide)
    got = F.run_encode(fmt, wide, values, rounding, put, get)
    want = F.encode(values, fmt, rounding or "rtne")
    bad = ~F.same_bits_or_nan(got, want, fmt)
    assert not bad.any(), [(v, hex(g), hex(w)) for v, g, w in
                           zip(values[bad], got[bad], want[bad])][:10]


def test_encode_specials():
    """The rules of float_formats.h, spelled out."""
    v = np.array([np.nan, np.inf, -np.inf, -0.0, 1e9, -1e9, -1e-30])
    enc = {fmt: F.run_encode(fmt, "fp32", v, None, put, get) for fmt in F.NEW_FORMATS}
    assert list(enc["fp8e4b15"]) == [0x7F, 0x7F, 0xFF, 0x80, 0x7F, 0xFF, 0x80]
    for fmt in ("fp8e4b8", "fp8e5b16"):
        assert list(enc[fmt]) == [0x80, 0x80, 0x80, 0x00, 0x7F, 0xFF, 0x00]


@pytest.mark.parametrize("src, dst", [("fp8e5b16", "fp8e4b8"), ("fp8e4b8", "fp8e4b15"),
                                      ("fp8e4b15", "fp8e5b16"), ("fp8e4nv", "fp8e4b8"),
                                      ("fp8e5b16", "fp8e5")])
def test_fp8_to_fp8(src, dst):
    got = F.run_recode(src, dst, put, get)
    with np.errstate(invalid="ignore"):
        want = F.encode(F.decode_table(src), dst)
    assert np.all(F.same_bits_or_nan(got, want, dst))


@pytest.mark.parametrize("fmt", F.NEW_FORMATS)
def test_multiply_in_format(fmt):
    a, b, got = F.run_multiply(fmt, put, get)
    want = F.expected_product(fmt, a, b)
    bad = ~F.same_bits_or_nan(got, want, fmt)
    assert not bad.any(), list(zip(a[bad][:5], b[bad][:5], got[bad][:5], want[bad][:5]))


# ---- typed pointers -------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", F.NEW_FORMATS)
def test_reinterpret_uint8(fmt):
    codes = np.arange(256, dtype=np.uint8)
    out = np.zeros(256, dtype=np.float32)
    F.typed_copy_kernel[F.grid(256)](tritium.reinterpret(codes, F.TL[fmt]), out, 256,
                                     BLOCK=F.BLOCK)
    want = F.decode_table(fmt)
    np.testing.assert_array_equal(out, want.astype(np.float32))


@pytest.mark.parametrize("torch_name, fmt", [("float8_e4m3fnuz", "fp8e4b8"),
                                             ("float8_e5m2fnuz", "fp8e5b16")])
def test_torch_fnuz_tensors(torch_name, fmt):
    torch = pytest.importorskip("torch")
    tdt = getattr(torch, torch_name, None)
    if tdt is None:
        pytest.skip(f"this torch has no {torch_name}")
    x = torch.arange(256, dtype=torch.uint8).view(tdt)
    out = torch.zeros(256, dtype=torch.float32)
    F.typed_copy_kernel[F.grid(256)](x, out, 256, BLOCK=F.BLOCK)
    want = F.decode_table(fmt).astype(np.float32)
    np.testing.assert_array_equal(out.numpy(), want)
    # torch agrees with the reference on every code.
    np.testing.assert_array_equal(x.float().numpy(), want)


def test_reinterpret_checks_width():
    with pytest.raises(TypeError, match="bits"):
        tritium.reinterpret(np.zeros(4, dtype=np.int16), tl.float8e4b15)


# ---- errors --------------------------------------------------------------------------------

@tritium.jit
def _cast_kernel(src, dst, TO: tl.constexpr, ROUNDING: tl.constexpr):
    tl.store(dst, tl.load(src).to(TO, fp_downcast_rounding=ROUNDING))


def test_rounding_only_on_downcasts():
    x = np.ones(1, dtype=np.float16)
    with pytest.raises(CompilationError, match="only for truncating fp conversions"):
        _cast_kernel[(1,)](x, np.zeros(1, dtype=np.float32), TO=tl.float32, ROUNDING="rtz")
    with pytest.raises(CompilationError, match="must be \"rtne\" or \"rtz\""):
        _cast_kernel[(1,)](x, np.zeros(1, dtype=np.uint8), TO=tl.float8e4b8, ROUNDING="up")


def test_rtz_fp32_to_fp16():
    """fp_downcast_rounding applies to every narrowing float cast."""
    x = np.array([1 + 2.0 ** -11 + 2.0 ** -20, -(1 + 2.0 ** -11 + 2.0 ** -20), 70000.0],
                 dtype=np.float32)
    out = np.zeros(3, dtype=np.float16)
    for rounding, want in (("rtz", [1.0, -1.0, 65504.0]),
                           ("rtne", [1 + 2.0 ** -10, -(1 + 2.0 ** -10), np.inf])):
        for i in range(3):
            _cast_kernel[(1,)](x[i:], out[i:], TO=tl.float16, ROUNDING=rounding)
        np.testing.assert_array_equal(out, np.array(want, dtype=np.float16))


@needs_torch
def test_reinterpret_wrapper_host_methods():
    # Triton's TensorWrapper methods, which its tests use on uint tensors: new_empty, clone, to,
    # cpu and copy_ act on the base and keep the dtype; `data` is the base's.
    import torch  # noqa: PLC0415

    base = torch.arange(12, dtype=torch.uint8).reshape(3, 4)
    w = tritium.reinterpret(base, tl.float8e4b15)
    out = w.new_empty((2, 2))
    assert isinstance(out, type(w)) and out.dtype == tl.float8e4b15 and tuple(out.shape) == (2, 2)
    c = w.clone()
    assert c.base.data_ptr() != base.data_ptr() and torch.equal(c.base, base)
    assert w.to("cpu").dtype == tl.float8e4b15 and w.cpu().dtype == tl.float8e4b15
    z = tritium.reinterpret(torch.zeros_like(base), tl.float8e4b15)
    z.copy_(w)
    assert torch.equal(z.base, base)
    assert torch.equal(w.data, base)


@tritium.jit
def _fp8_dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b))


@pytest.mark.parametrize("fmt", F.NEW_FORMATS)
def test_dot_of_non_tensor_core_fp8(fmt):
    # fp8e4b15, fp8e4b8 and fp8e5b16 hold only values fp16 represents exactly: tl.dot upcasts
    # the operands to fp16 (Triton does too) instead of refusing them.
    a_bits, b_bits, ref = F.dot_operands(fmt)
    c = np.full((16, 16), np.nan, np.float32)
    _fp8_dot_kernel[(1,)](tritium.reinterpret(a_bits, F.TL[fmt]), tritium.reinterpret(b_bits, F.TL[fmt]),
                          c, M=16, N=16, K=32)
    np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-5)
