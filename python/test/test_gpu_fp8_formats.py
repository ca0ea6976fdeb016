"""fp8e4b15, fp8e4b8 and fp8e5b16 on the GPU: the kernels and the numpy
reference of _fp8_formats.py, as test_fp8_formats_cpu.py runs them on the
CPU executor, with torch CUDA tensors (fp8 bits as uint8; the fnuz formats
also as torch's float8_e4m3fnuz / float8_e5m2fnuz tensors). Outputs are
poisoned before each run. Run with `pytest -m gpu`."""

import numpy as np
import pytest

import tritium
import tritium.language as tl

import _fp8_formats as F

pytestmark = pytest.mark.gpu


def put(a):
    import torch
    return torch.from_numpy(np.ascontiguousarray(a)).cuda()


def put_poisoned(a):
    """Output buffers start as 0xA5 bytes, never as the expected values."""
    t = put(a)
    t.view(__import__("torch").uint8).fill_(0xA5)
    return t


def get(t):
    import torch
    torch.cuda.synchronize()
    return t.cpu().numpy()


class _Poison:
    """put() for inputs, put_poisoned() for the zero-filled output buffers."""

    def __call__(self, a):
        a = np.asarray(a)
        if a.size and not a.any():
            return put_poisoned(a)
        return put(a)


PUT = _Poison()


@pytest.mark.parametrize("wide", ["fp16", "bf16", "fp32"])
@pytest.mark.parametrize("fmt", F.NEW_FORMATS)
def test_decode_all_256(fmt, wide):
    got = F.run_decode(fmt, wide, PUT, get)
    want = F.decode_table(fmt)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_array_equal(got[ok], want[ok])
    np.testing.assert_array_equal(np.signbit(got[ok]), np.signbit(want[ok]))


@pytest.mark.parametrize("wide", ["fp16", "bf16", "fp32"])
@pytest.mark.parametrize("fmt", F.NEW_FORMATS)
def test_round_trip_all_256(fmt, wide):
    got = F.run_encode(fmt, wide, F.decode_table(fmt), None, PUT, get)
    want = np.arange(256, dtype=np.uint8)
    assert np.all(F.same_bits_or_nan(got, want, fmt)), np.nonzero(got != want)


@pytest.mark.parametrize("rounding", [None, "rtne", "rtz"])
@pytest.mark.parametrize("wide", ["fp16", "bf16", "fp32"])
@pytest.mark.parametrize("fmt", F.NEW_FORMATS + ("fp8e4nv", "fp8e5"))
def test_encode_boundaries(fmt, wide, rounding):
    if rounding != "rtz" and fmt in ("fp8e4nv", "fp8e5"):
        pytest.skip("covered by the native formats' own tests")
    values = F.representable(F.boundary_inputs(fmt), wide)
    got = F.run_encode(fmt, wide, values, rounding, PUT, get)
    want = F.encode(values, fmt, rounding or "rtne")
    bad = ~F.same_bits_or_nan(got, want, fmt)
    assert not bad.any(), [(v, hex(g), hex(w)) for v, g, w in
                           zip(values[bad], got[bad], want[bad])][:10]


@pytest.mark.parametrize("rounding", ["rtne", "rtz"])
@pytest.mark.parametrize("fmt", F.NEW_FORMATS)
def test_encode_random_fp32(fmt, rounding):
    """Fresh random fp32 values across the format's range and beyond."""
    rng = np.random.default_rng()
    top = np.log2(F.max_finite(fmt)) + 2
    mags = 2.0 ** rng.uniform(np.log2(F.decode_table(fmt)[1]) - 3, top, 20000)
    values = (mags * rng.choice([-1.0, 1.0], mags.size)).astype(np.float32).astype(np.float64)
    got = F.run_encode(fmt, "fp32", values, rounding, PUT, get)
    want = F.encode(values, fmt, rounding)
    assert np.all(F.same_bits_or_nan(got, want, fmt))


@pytest.mark.parametrize("src, dst", [("fp8e5b16", "fp8e4b8"), ("fp8e4b8", "fp8e4b15"),
                                      ("fp8e4b15", "fp8e5b16"), ("fp8e4nv", "fp8e4b8"),
                                      ("fp8e5b16", "fp8e5")])
def test_fp8_to_fp8(src, dst):
    got = F.run_recode(src, dst, PUT, get)
    with np.errstate(invalid="ignore"):
        want = F.encode(F.decode_table(src), dst)
    assert np.all(F.same_bits_or_nan(got, want, dst))


@pytest.mark.parametrize("fmt", F.NEW_FORMATS)
def test_multiply_in_format(fmt):
    a, b, got = F.run_multiply(fmt, PUT, get)
    want = F.expected_product(fmt, a, b)
    assert np.all(F.same_bits_or_nan(got, want, fmt))


@pytest.mark.parametrize("fmt", F.NEW_FORMATS)
def test_reinterpret_uint8(fmt):
    import torch
    codes = put(np.arange(256, dtype=np.uint8))
    out = torch.full((256,), 12345.0, device="cuda")
    F.typed_copy_kernel[F.grid(256)](tritium.reinterpret(codes, F.TL[fmt]), out, 256,
                                     BLOCK=F.BLOCK)
    np.testing.assert_array_equal(get(out), F.decode_table(fmt).astype(np.float32))


@pytest.mark.parametrize("torch_name, fmt", [("float8_e4m3fnuz", "fp8e4b8"),
                                             ("float8_e5m2fnuz", "fp8e5b16")])
def test_torch_fnuz_tensors(torch_name, fmt):
    import torch
    tdt = getattr(torch, torch_name, None)
    if tdt is None:
        pytest.skip(f"this torch has no {torch_name}")
    x = put(np.arange(256, dtype=np.uint8)).view(tdt)
    out = torch.full((256,), 12345.0, device="cuda")
    F.typed_copy_kernel[F.grid(256)](x, out, 256, BLOCK=F.BLOCK)
    np.testing.assert_array_equal(get(out), F.decode_table(fmt).astype(np.float32))


@tritium.jit
def _downcast(src, dst, n, TO: tl.constexpr, ROUNDING: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst + offs, tl.load(src + offs, mask=mask).to(TO, fp_downcast_rounding=ROUNDING),
             mask=mask)


@pytest.mark.parametrize("to", ["float16", "bfloat16"])
def test_rtz_fp32_downcast_matches_torch_truncation(to):
    """rtz = the fp32 bits truncated (bf16), or torch's value stepped toward 0."""
    import torch
    rng = np.random.default_rng()
    x = (rng.standard_normal(4096) * 10.0 ** rng.uniform(-6, 4, 4096)).astype(np.float32)
    xd = put(x)
    out = torch.empty(x.size, dtype=getattr(torch, to), device="cuda")
    _downcast[(tritium.cdiv(x.size, 256),)](xd, out, x.size, TO=getattr(tl, to),
                                            ROUNDING="rtz", BLOCK=256)
    got = out.float().cpu().numpy().astype(np.float64)
    assert np.all(np.abs(got) <= np.abs(x.astype(np.float64)))
    near = torch.from_numpy(x).to(getattr(torch, to)).float().numpy().astype(np.float64)
    # Within one step of the nearest value, never beyond x.
    assert np.all((got == near) | (np.abs(got) < np.abs(near)))


@pytest.mark.parametrize("fmt", F.NEW_FORMATS)
def test_gpu_dot_of_non_tensor_core_fp8(fmt):
    # As test_fp8_formats_cpu.py's: the operands upcast to fp16, then the tensor cores.
    import torch  # noqa: PLC0415
    from test_fp8_formats_cpu import _fp8_dot_kernel  # noqa: PLC0415

    a_bits, b_bits, ref = F.dot_operands(fmt)
    c = torch.full((16, 16), float("nan"), device="cuda")
    a = tritium.reinterpret(torch.from_numpy(a_bits).cuda(), F.TL[fmt])
    b = tritium.reinterpret(torch.from_numpy(b_bits).cuda(), F.TL[fmt])
    _fp8_dot_kernel[(1,)](a, b, c, M=16, N=16, K=32)
    np.testing.assert_allclose(c.cpu().numpy(), ref, rtol=1e-3, atol=1e-3)
