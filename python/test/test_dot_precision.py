"""tl.dot on the CPU executor, bit for bit against numpy models of what the tensor cores compute
(lib/exec/dot.cpp states the rules): fp32 operands under input_precision tf32 / tf32x3 / ieee,
fp16, bf16 and fp8 (e4m3, e5m2, mixed) operands with fp32 accumulators, the fp16 accumulator's
one rounding per 16-wide k chunk, int8 with int32 wraparound, and the batched 3-D dot.

Each model sums k in the executor's order (ascending, rounding to fp32 after every add), so the
comparisons are exact. bf16 and fp8 operands travel as uint16 / uint8 bits and are bitcast in the
kernel, so no torch is needed.

The rules are tritium's reference semantics: Triton's interpreter and the GPU add in their own
order, so this module does not run against Triton (TRITIUM_TEST_AGAINST_TRITON).
"""

import os

import numpy as np
import pytest

if os.environ.get("TRITIUM_TEST_AGAINST_TRITON"):
    pytest.skip("bit-exact models of tritium's executor; Triton accumulates in its own order",
                allow_module_level=True)

from harness import triton, tl, poisoned, rand  # noqa: E402  (after the skip)

SHAPES = [(16, 16, 16), (32, 64, 32), (64, 32, 128)]  # (M, N, K)
SHAPE_IDS = ["x".join(map(str, s)) for s in SHAPES]


# ----------------------------------------------------------------------------------------------
# numpy models


def tf32(x):
    """cvt.rna.tf32.f32: round fp32 to 10 mantissa bits, to nearest with ties away from zero (add
    half of the 13 dropped bits' range to the magnitude, then clear them); NaN stays NaN."""
    x = np.asarray(x, np.float32)
    u = x.view(np.uint32)
    r = ((u + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)
    return np.where(np.isnan(x), x, r)


def seq_f32(a, b, acc):
    """acc + a @ b with k ascending, every product and every add rounded to fp32."""
    a = np.asarray(a, np.float32)
    b = np.asarray(b, np.float32)
    acc = np.array(acc, np.float32)
    for k in range(a.shape[1]):
        acc = acc + a[:, k:k + 1] * b[k:k + 1, :]
    return acc


def model_f32_acc(a, b, acc, precision):
    """The fp32 accumulator: a and b are float32 values (exactly the operands' values)."""
    if precision == "tf32":
        return seq_f32(tf32(a), tf32(b), acc)
    if precision == "tf32x3":
        a_hi, b_hi = tf32(a), tf32(b)
        a_lo, b_lo = tf32(a - a_hi), tf32(b - b_hi)
        acc = seq_f32(a_hi, b_lo, acc)
        acc = seq_f32(a_lo, b_hi, acc)
        return seq_f32(a_hi, b_hi, acc)
    assert precision == "ieee"
    return seq_f32(a, b, acc)


def model_f16_acc(a, b, acc):
    """The fp16 accumulator: per 16-wide k chunk, an fp32 sum of the exact products from 0, then one
    rounding of acc + sum to fp16 (numpy's float64 -> float16 rounds once, to nearest even)."""
    acc = np.asarray(acc, np.float16).astype(np.float64)
    K = a.shape[1]
    for k0 in range(0, K, 16):
        part = seq_f32(a[:, k0:k0 + 16], b[k0:k0 + 16, :], np.zeros(acc.shape, np.float32))
        acc = (acc + part.astype(np.float64)).astype(np.float16).astype(np.float64)
    return acc.astype(np.float16)


def decode_fp8(bits, kind):
    """The value of fp8 bits: e4m3 (OCP e4m3fn, bias 7) or e5m2 (bias 15)."""
    bits = np.asarray(bits, np.uint8).astype(np.int64)
    mbits, bias = (3, 7) if kind == "e4m3" else (2, 15)
    sign = np.where(bits & 0x80, -1.0, 1.0)
    e = (bits >> mbits) & ((1 << (7 - mbits)) - 1)
    m = (bits & ((1 << mbits) - 1)) / float(1 << mbits)
    mag = np.where(e == 0, m * 2.0 ** (1 - bias), (1 + m) * np.exp2(e - bias))
    return (sign * mag).astype(np.float32)


def rand_fp8(rng, shape, kind, max_exp=None):
    """Random fp8 bits, none of them NaN or inf; max_exp caps the biased exponent field."""
    bits = rng.integers(0, 256, size=shape, dtype=np.int64).astype(np.uint8)
    if kind == "e4m3":
        bad = (bits & 0x7F) == 0x7F
    else:
        bad = ((bits >> 2) & 0x1F) == 0x1F
    bits[bad] &= 0xB0  # a finite value of the same sign
    if max_exp is not None:
        mbits = 3 if kind == "e4m3" else 2
        e = (bits >> mbits) & ((1 << (7 - mbits)) - 1)
        bits = np.where(e > max_exp, (bits & ~np.uint8(((1 << (7 - mbits)) - 1) << mbits))
                        | np.uint8(max_exp << mbits), bits).astype(np.uint8)
    return bits


def rand_bf16(rng, shape):
    """Random bf16 values as their bits (uint16) and as float32."""
    f = rng.standard_normal(shape).astype(np.float32)
    bits = (f.view(np.uint32) >> 16).astype(np.uint16)
    return bits, (bits.astype(np.uint32) << 16).view(np.float32)


def assert_bits_equal(actual, desired):
    actual, desired = np.asarray(actual), np.asarray(desired, actual.dtype)
    assert not np.isnan(actual).any(), "output holds NaN (an unwritten lane?)"
    bad = actual.view(np.uint8).reshape(actual.shape + (-1,)) != desired.view(np.uint8).reshape(
        desired.shape + (-1,))
    bad = bad.any(axis=-1)
    assert not bad.any(), (f"{bad.sum()} of {bad.size} elements differ; first at "
                           f"{np.argwhere(bad)[0]}: {actual[bad][0]!r} != {desired[bad][0]!r}")


def test_tf32_model_rounds_to_nearest_ties_away():
    # the model itself, on hand-picked bits: 13 low bits dropped, ties away from zero, up to inf
    cases = {0x3F801000: 0x3F802000,  # tie: 1 + 2^-11 -> 1 + 2^-10 (even would give 1)
             0xBF801000: 0xBF802000,  # the negative tie rounds away from zero too
             0x3F800FFF: 0x3F800000,  # below half: down
             0x3F803000: 0x3F804000,  # tie with an odd kept bit: up
             0x3F805000: 0x3F806000,  # tie with an even kept bit: still up (not to even)
             0x7F7FFFFF: 0x7F800000,  # past the largest tf32: inf
             0x00000FFF: 0x00000000,  # subnormals round the same way
             0x00001000: 0x00002000,
             0x7F800000: 0x7F800000}  # inf stays inf
    x = np.array(list(cases), np.uint32).view(np.float32)
    np.testing.assert_array_equal(tf32(x).view(np.uint32), np.array(list(cases.values()), np.uint32))
    nan = np.array([0x7F800001, 0xFFC00000], np.uint32).view(np.float32)
    assert np.isnan(tf32(nan)).all()


# ----------------------------------------------------------------------------------------------
# kernels


@triton.jit
def _dot2d(a_ptr, b_ptr, c_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
           A_TY: tl.constexpr, B_TY: tl.constexpr, PRECISION: tl.constexpr, ALLOW_TF32: tl.constexpr,
           OUT_TY: tl.constexpr, HAS_ACC: tl.constexpr, IMPRECISE: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    if A_TY is not None:  # bf16 / fp8 operands arrive as their bits
        a = a.to(A_TY, bitcast=True)
    if B_TY is not None:
        b = b.to(B_TY, bitcast=True)
    if HAS_ACC:
        c = tl.load(c_ptr + rm[:, None] * N + rn[None, :])
        d = tl.dot(a, b, acc=c, input_precision=PRECISION, allow_tf32=ALLOW_TF32, out_dtype=OUT_TY,
                   max_num_imprecise_acc=IMPRECISE)
    else:
        d = tl.dot(a, b, input_precision=PRECISION, allow_tf32=ALLOW_TF32, out_dtype=OUT_TY,
                   max_num_imprecise_acc=IMPRECISE)
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], d)


def run2d(a, b, c, out_dtype, *, a_ty=None, b_ty=None, precision=None, allow_tf32=None, out_ty=tl.float32,
          imprecise=None):
    """out = tl.dot(a, b[, acc=c]) of the 2-D kernel; c=None omits the accumulator."""
    (M, K), N = a.shape, b.shape[1]
    out = poisoned((M, N), out_dtype)
    dummy = np.zeros(1, out_dtype)
    _dot2d[(1,)](a, b, dummy if c is None else c, out, M=M, N=N, K=K, A_TY=a_ty, B_TY=b_ty,
                 PRECISION=precision, ALLOW_TF32=allow_tf32, OUT_TY=out_ty, HAS_ACC=c is not None,
                 IMPRECISE=imprecise)
    return out


# ----------------------------------------------------------------------------------------------
# fp32 operands


@pytest.mark.parametrize("precision", ["tf32", "tf32x3", "ieee"])
@pytest.mark.parametrize("M,N,K", SHAPES, ids=SHAPE_IDS)
def test_fp32_precisions_bit_exact(precision, M, N, K):
    rng = np.random.default_rng([M, N, K, len(precision)])
    a = rand(rng, (M, K), np.float32)
    b = rand(rng, (K, N), np.float32)
    c = rand(rng, (M, N), np.float32)
    out = run2d(a, b, c, np.float32, precision=precision)
    assert_bits_equal(out, model_f32_acc(a, b, c, precision))


def test_fp32_precisions_order_of_accuracy():
    # tf32 keeps ~11 bits of each operand, tf32x3 ~22, ieee all 24: the errors against float64 must
    # rank that way (and by orders of magnitude), which fails if a precision were ignored
    rng = np.random.default_rng(5)
    M, N, K = 32, 32, 64
    a = rand(rng, (M, K), np.float32)
    b = rand(rng, (K, N), np.float32)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    err = {p: np.abs(run2d(a, b, None, np.float32, precision=p) - exact).max()
           for p in ("tf32", "tf32x3", "ieee")}
    assert err["tf32"] > 1e-4 and err["tf32"] > 20 * err["tf32x3"], err
    assert err["tf32x3"] < 1e-4 and err["ieee"] < 1e-4, err


def test_tf32_rounds_operands_where_ieee_does_not():
    # a = 1 + 2^-11 is a tie for tf32: cvt.rna rounds it away, to 1 + 2^-10; ieee keeps it. With
    # b = 1 and K = 16 every element is exact in both: 16 + 2^-6 (tf32) vs 16 + 2^-7 (ieee). A
    # skipped rounding, truncation, or ties-to-even (which gives 16) all fail here.
    M = N = K = 16
    a = np.full((M, K), 1 + 2.0 ** -11, np.float32)
    b = np.ones((K, N), np.float32)
    np.testing.assert_array_equal(run2d(a, b, None, np.float32, precision="tf32"), 16 + 2.0 ** -6)
    np.testing.assert_array_equal(run2d(a, b, None, np.float32, precision="ieee"), 16 + 2.0 ** -7)
    # tf32x3 recovers the low part: a_hi = 1 + 2^-10, a_lo = -2^-11, exact again
    np.testing.assert_array_equal(run2d(a, b, None, np.float32, precision="tf32x3"), 16 + 2.0 ** -7)
    # b rounds as well: b = 1 + 2^-12 (below the tie) becomes 1
    b2 = np.full((K, N), 1 + 2.0 ** -12, np.float32)
    np.testing.assert_array_equal(run2d(b2.T.copy(), np.ones((K, N), np.float32), None, np.float32,
                                        precision="tf32"), 16.0)


def test_tf32x3_sums_the_small_terms_first():
    # acc + a_hi*b_lo, then + a_lo*b_hi, then + a_hi*b_hi, each over all of k: the model's order
    # matches bit for bit, and the big-term-first order would not (a large accumulator makes the
    # order of the sums show in the last bits)
    rng = np.random.default_rng(9)
    M, N, K = 16, 32, 64
    a = (rand(rng, (M, K), np.float32) * 3).astype(np.float32)
    b = rand(rng, (K, N), np.float32)
    c = (rand(rng, (M, N), np.float32) * 1000).astype(np.float32)
    out = run2d(a, b, c, np.float32, precision="tf32x3")
    assert_bits_equal(out, model_f32_acc(a, b, c, "tf32x3"))
    a_hi, b_hi = tf32(a), tf32(b)
    a_lo, b_lo = tf32(a - a_hi), tf32(b - b_hi)
    big_first = seq_f32(a_lo, b_hi, seq_f32(a_hi, b_lo, seq_f32(a_hi, b_hi, c)))
    assert (big_first != out).any()


def test_default_and_allow_tf32_spellings():
    rng = np.random.default_rng(6)
    M, N, K = 16, 32, 32
    a = rand(rng, (M, K), np.float32)
    b = rand(rng, (K, N), np.float32)
    tf = model_f32_acc(a, b, np.zeros((M, N), np.float32), "tf32")
    ieee = model_f32_acc(a, b, np.zeros((M, N), np.float32), "ieee")
    assert (tf != ieee).any()
    assert_bits_equal(run2d(a, b, None, np.float32), tf)  # Triton's default is tf32
    assert_bits_equal(run2d(a, b, None, np.float32, allow_tf32=True), tf)
    assert_bits_equal(run2d(a, b, None, np.float32, allow_tf32=False), ieee)
    assert_bits_equal(run2d(a, b, None, np.float32, precision="TF32x3"),
                      model_f32_acc(a, b, np.zeros((M, N), np.float32), "tf32x3"))


# ----------------------------------------------------------------------------------------------
# 16-bit operands


@pytest.mark.parametrize("M,N,K", SHAPES, ids=SHAPE_IDS)
@pytest.mark.parametrize("kind", ["fp16", "bf16"])
def test_16bit_operands_fp32_acc_bit_exact(kind, M, N, K):
    rng = np.random.default_rng([M, N, K, len(kind)])
    if kind == "fp16":
        a, b = rand(rng, (M, K), np.float16), rand(rng, (K, N), np.float16)
        af, bf, ty = a.astype(np.float32), b.astype(np.float32), None
    else:
        (a, af), (b, bf) = rand_bf16(rng, (M, K)), rand_bf16(rng, (K, N))
        ty = tl.bfloat16
    c = rand(rng, (M, N), np.float32)
    # input_precision changes nothing for 16-bit operands: their values are tf32 values
    for precision in ("tf32", "ieee"):
        out = run2d(a, b, c, np.float32, a_ty=ty, b_ty=ty, precision=precision)
        assert_bits_equal(out, seq_f32(af, bf, c))


@pytest.mark.parametrize("M,N,K", SHAPES, ids=SHAPE_IDS)
def test_fp16_accumulator_rounds_once_per_16_k(M, N, K):
    rng = np.random.default_rng([M, N, K, 16])
    a = rand(rng, (M, K), np.float16)
    b = rand(rng, (K, N), np.float16)
    c = rand(rng, (M, N), np.float16)
    af, bf = a.astype(np.float32), b.astype(np.float32)
    out = run2d(a, b, c, np.float16, out_ty=tl.float16)
    assert_bits_equal(out, model_f16_acc(af, bf, c))
    no_acc = run2d(a, b, None, np.float16, out_ty=tl.float16)
    assert_bits_equal(no_acc, model_f16_acc(af, bf, np.zeros((M, N), np.float16)))
    if K >= 64:
        # the chunking shows: one rounding at the end, or one per product, give other bits
        once = (c.astype(np.float64) + seq_f32(af, bf, np.zeros((M, N), np.float32))).astype(np.float16)
        every = c.copy()
        for k in range(K):
            every = (every.astype(np.float64) + (af[:, k:k + 1] * bf[k:k + 1, :]).astype(np.float64)
                     ).astype(np.float16)
        assert (once != out).any() and (every != out).any()


# ----------------------------------------------------------------------------------------------
# fp8 operands

FP8 = {"e4m3": tl.float8e4nv, "e5m2": tl.float8e5}


@pytest.mark.parametrize("M,N,K", SHAPES, ids=SHAPE_IDS)
@pytest.mark.parametrize("ka,kb", [("e4m3", "e4m3"), ("e5m2", "e5m2"), ("e4m3", "e5m2"), ("e5m2", "e4m3")],
                         ids=lambda k: k)
def test_fp8_operands_bit_exact(ka, kb, M, N, K):
    rng = np.random.default_rng([M, N, K, len(ka + kb), ord(ka[1])])
    a, b = rand_fp8(rng, (M, K), ka), rand_fp8(rng, (K, N), kb)
    af, bf = decode_fp8(a, ka), decode_fp8(b, kb)
    c = rand(rng, (M, N), np.float32)
    out = run2d(a, b, c, np.float32, a_ty=FP8[ka], b_ty=FP8[kb])
    assert_bits_equal(out, seq_f32(af, bf, c))
    # max_num_imprecise_acc is accepted and changes nothing
    assert_bits_equal(run2d(a, b, c, np.float32, a_ty=FP8[ka], b_ty=FP8[kb], imprecise=32), out)


def test_fp8_with_fp16_accumulator():
    rng = np.random.default_rng(12)
    M, N, K = 32, 16, 64
    # magnitudes below 16 and 8: the sums stay inside fp16's range
    a, b = rand_fp8(rng, (M, K), "e4m3", max_exp=10), rand_fp8(rng, (K, N), "e5m2", max_exp=17)
    assert np.abs(decode_fp8(a, "e4m3")).max() < 16 and np.abs(decode_fp8(b, "e5m2")).max() < 8
    out = run2d(a, b, None, np.float16, a_ty=tl.float8e4nv, b_ty=tl.float8e5, out_ty=tl.float16)
    assert_bits_equal(out, model_f16_acc(decode_fp8(a, "e4m3"), decode_fp8(b, "e5m2"),
                                         np.zeros((M, N), np.float16)))


@triton.jit
def _fp8_decode(x_ptr, out_ptr, TY: tl.constexpr):
    r = tl.arange(0, 256)
    tl.store(out_ptr + r, tl.load(x_ptr + r).to(TY, bitcast=True).to(tl.float32))


@pytest.mark.parametrize("kind", ["e4m3", "e5m2"])
def test_fp8_decoder_model_matches_executor(kind):
    # the model's decoder agrees with the executor's on every finite bit pattern
    bits = np.arange(256, dtype=np.uint8)
    out = poisoned(256, np.float32)
    _fp8_decode[(1,)](bits, out, TY=FP8[kind])
    want = decode_fp8(bits, kind)
    finite = np.isfinite(out)
    assert finite.sum() == (254 if kind == "e4m3" else 248)
    np.testing.assert_array_equal(out[finite], want[finite])


# ----------------------------------------------------------------------------------------------
# int8


def test_int8_wraps_at_32_bits():
    rng = np.random.default_rng(13)
    M, N, K = 16, 32, 64
    a = rand(rng, (M, K), np.int8)
    b = rand(rng, (K, N), np.int8)
    # accumulators next to both ends of int32, so sums wrap both ways
    c = rng.integers(-2 ** 20, 2 ** 20, size=(M, N)).astype(np.int64)
    c = np.where(rng.integers(0, 2, size=(M, N)) == 1, 2 ** 31 - 1 - c, -2 ** 31 + c).astype(np.int32)
    out = run2d(a, b, c, np.int32, out_ty=tl.int32)
    exact = c.astype(np.int64) + a.astype(np.int64) @ b.astype(np.int64)
    want = ((exact + 2 ** 31) % 2 ** 32 - 2 ** 31).astype(np.int32)
    assert (exact != want).any()  # some did wrap
    np.testing.assert_array_equal(out, want)
    # the extreme sums, 127 * 127 * K and -128 * -128 * K, added to INT32_MAX
    for v in (127, -128):
        a1 = np.full((M, K), v, np.int8)
        b1 = np.full((K, N), v, np.int8)
        c1 = np.full((M, N), 2 ** 31 - 1, np.int32)
        out = run2d(a1, b1, c1, np.int32, out_ty=tl.int32)
        np.testing.assert_array_equal(out, np.int32(-2 ** 31 + v * v * K - 1))


# ----------------------------------------------------------------------------------------------
# batched 3-D dot


@triton.jit
def _dot3d(a_ptr, b_ptr, c_ptr, out_ptr, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr,
           K: tl.constexpr, PRECISION: tl.constexpr, OUT_TY: tl.constexpr, HAS_ACC: tl.constexpr):
    rb = tl.arange(0, B)[:, None, None]
    rm = tl.arange(0, M)[None, :, None]
    rn = tl.arange(0, N)[None, None, :]
    rk_col = tl.arange(0, K)[None, None, :]
    rk_row = tl.arange(0, K)[None, :, None]
    a = tl.load(a_ptr + rb * M * K + rm * K + rk_col)
    b = tl.load(b_ptr + rb * K * N + rk_row * N + rn)
    if HAS_ACC:
        c = tl.load(c_ptr + rb * M * N + rm * N + rn)
        d = tl.dot(a, b, c, input_precision=PRECISION, out_dtype=OUT_TY)
    else:
        d = tl.dot(a, b, input_precision=PRECISION, out_dtype=OUT_TY)
    tl.static_assert(len(d.shape) == 3)
    tl.store(out_ptr + rb * M * N + rm * N + rn, d)


@pytest.mark.parametrize("B,M,N,K", [(2, 16, 16, 16), (4, 32, 16, 64), (2, 16, 64, 32)], ids=str)
@pytest.mark.parametrize("kind", ["fp32-ieee", "fp32-tf32", "fp32-tf32x3", "fp16", "fp16-acc16", "int8"])
def test_batched_dot(kind, B, M, N, K):
    rng = np.random.default_rng([B, M, N, K, len(kind)])
    dt = {"fp32": np.float32, "fp16": np.float16, "int8": np.int8}[kind.split("-")[0]]
    a = rand(rng, (B, M, K), dt)
    b = rand(rng, (B, K, N), dt)
    out_np, out_ty = {"int8": (np.int32, tl.int32), "fp16-acc16": (np.float16, tl.float16)}.get(
        kind, (np.float32, tl.float32))
    c = rand(rng, (B, M, N), out_np) if out_np != np.int32 else rand(rng, (B, M, N), np.int32, -1000, 1000)
    precision = kind.split("-")[1] if kind.startswith("fp32") else "ieee"
    out = poisoned((B, M, N), out_np)
    _dot3d[(1,)](a, b, c, out, B=B, M=M, N=N, K=K, PRECISION=precision, OUT_TY=out_ty, HAS_ACC=True)
    for i in range(B):
        if dt == np.int8:
            want = c[i] + a[i].astype(np.int32) @ b[i].astype(np.int32)
            np.testing.assert_array_equal(out[i], want)
        elif out_np == np.float16:
            assert_bits_equal(out[i], model_f16_acc(a[i].astype(np.float32), b[i].astype(np.float32), c[i]))
        else:
            assert_bits_equal(out[i], model_f32_acc(a[i].astype(np.float32), b[i].astype(np.float32), c[i],
                                                    precision))
    # without an accumulator: zeros of the batched shape
    out2 = poisoned((B, M, N), out_np)
    _dot3d[(1,)](a, b, c, out2, B=B, M=M, N=N, K=K, PRECISION=precision, OUT_TY=out_ty, HAS_ACC=False)
    if dt == np.int8:
        np.testing.assert_array_equal(out2, np.matmul(a.astype(np.int32), b.astype(np.int32)))
    else:
        for i in range(B):
            af, bf = a[i].astype(np.float32), b[i].astype(np.float32)
            zero = np.zeros((M, N), out_np)
            assert_bits_equal(out2[i], model_f16_acc(af, bf, zero) if out_np == np.float16
                              else model_f32_acc(af, bf, zero, precision))


# ----------------------------------------------------------------------------------------------
# the IR: attributes as the builder wrote them


def test_ir_attributes():
    M = N = K = 16
    a8 = np.zeros((M, K), np.uint8)
    out = np.zeros((M, N), np.float32)
    k = _dot2d.warmup(a8, a8, out, out, M=M, N=N, K=K, A_TY=tl.float8e5, B_TY=tl.float8e4nv,
                      PRECISION=None, ALLOW_TF32=None, OUT_TY=tl.float32, HAS_ACC=False, IMPRECISE=64,
                      grid=(1,))
    assert 'input_precision = "tf32", max_num_imprecise_acc = 64' in k.asm["tir"], k.asm["tir"]
    # for other dtypes the value means nothing and is stored as 0
    f = np.zeros((M, K), np.float32)
    k = _dot2d.warmup(f, f, out, out, M=M, N=N, K=K, A_TY=None, B_TY=None, PRECISION="tf32x3",
                      ALLOW_TF32=None, OUT_TY=tl.float32, HAS_ACC=False, IMPRECISE=64, grid=(1,))
    assert 'input_precision = "tf32x3", max_num_imprecise_acc = 0' in k.asm["tir"], k.asm["tir"]
