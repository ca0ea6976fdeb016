"""The fp8 formats' reference (numpy, from each format's definition) and the
conversion kernels that test_fp8_formats_cpu.py runs on the CPU executor and
test_gpu_fp8_formats.py on a GPU. Every kernel takes and returns raw bits
(uint8 for fp8, int16/int32 for fp16/bf16/fp32) and bitcasts inside, so no
tensor needs a torch dtype the format lacks.

The formats (tritium/support/float_formats.h has the same table):
  fp8e4b15  bias 15, no inf, no NaN: all 256 encodings finite, max 1.875
  fp8e4b8   bias 8, "fnuz": 0x80 is the one NaN, no inf, no -0, max 240
  fp8e5b16  bias 16, "fnuz": as above, max 57344
  fp8e4nv   bias 7, OCP e4m3fn: NaN s.1111.111, no inf, max 448
  fp8e5     bias 15, OCP e5m2: IEEE inf/NaN, max 57344
Conversions into a format round to nearest even (or toward zero), saturate
finite overflow to +-max; inf saturates too, except in the fnuz formats where
it becomes NaN; NaN becomes the format's NaN (fp8e4b15: 0x7f); the fnuz
formats have no -0.
"""

import numpy as np

import tritium
import tritium.language as tl

#            exponent bits, mantissa bits, bias, specials
FORMATS = {
    "fp8e4b15": (4, 3, 15, "none"),
    "fp8e4b8": (4, 3, 8, "fnuz"),
    "fp8e5b16": (5, 2, 16, "fnuz"),
    "fp8e4nv": (4, 3, 7, "fn"),
    "fp8e5": (5, 2, 15, "ieee"),
}
NEW_FORMATS = ("fp8e4b15", "fp8e4b8", "fp8e5b16")
TL = {"fp8e4b15": tl.float8e4b15, "fp8e4b8": tl.float8e4b8, "fp8e5b16": tl.float8e5b16,
      "fp8e4nv": tl.float8e4nv, "fp8e5": tl.float8e5}
# The float types converted to and from, and the integer type of their bits.
WIDE = {"fp16": (tl.float16, tl.int16), "bf16": (tl.bfloat16, tl.int16),
        "fp32": (tl.float32, tl.int32)}


# ---- reference -------------------------------------------------------------------------

def decode_table(fmt):
    """float64[256]: the value of every encoding (NaN where it is not a number)."""
    ebits, mbits, bias, kind = FORMATS[fmt]
    out = np.empty(256)
    for code in range(256):
        sign = -1.0 if code & 0x80 else 1.0
        e = (code >> mbits) & ((1 << ebits) - 1)
        m = code & ((1 << mbits) - 1)
        if e == 0:
            v = m * 2.0 ** (1 - bias - mbits)
        else:
            v = (1 + m / 2.0 ** mbits) * 2.0 ** (e - bias)
        emax = (1 << ebits) - 1
        if kind == "ieee" and e == emax:
            v = np.inf if m == 0 else np.nan
        elif kind == "fn" and e == emax and m == (1 << mbits) - 1:
            v = np.nan
        elif kind == "fnuz" and code == 0x80:
            v = np.nan
        out[code] = sign * v
    return out


def _positive_codes(fmt):
    """The finite non-negative values (ascending) and their codes."""
    t = decode_table(fmt)
    codes = [c for c in range(128) if np.isfinite(t[c])]
    return t[codes], np.array(codes)


def max_finite(fmt):
    return _positive_codes(fmt)[0][-1]


def nan_code(fmt, negative):
    kind = FORMATS[fmt][3]
    if kind == "none":
        return 0x7F
    if kind == "fnuz":
        return 0x80
    return (0x80 if negative else 0) | (0x7E if kind == "ieee" else 0x7F)


def encode(x, fmt, rounding="rtne"):
    """uint8 codes of float64 values `x`, by search over the format's values
    (not by bit tricks, so that it checks the implementations' tricks)."""
    mags, codes = _positive_codes(fmt)
    kind = FORMATS[fmt][3]
    out = np.empty(len(x), dtype=np.uint8)
    for i, v in enumerate(np.asarray(x, dtype=np.float64)):
        neg = bool(np.signbit(v))
        if np.isnan(v) or (np.isinf(v) and kind == "fnuz"):
            out[i] = nan_code(fmt, neg)
            continue
        a = abs(v)
        if a >= mags[-1]:
            code = codes[-1]
        else:
            j = int(np.searchsorted(mags, a, side="right")) - 1  # mags[j] <= a < mags[j+1]
            lo, hi = mags[j], mags[j + 1]
            if rounding == "rtz" or a - lo < hi - a:
                code = codes[j]
            elif a - lo > hi - a:
                code = codes[j + 1]
            else:
                code = codes[j] if codes[j] % 2 == 0 else codes[j + 1]
        if neg and not (kind == "fnuz" and code == 0):
            code |= 0x80
        out[i] = code
    return out


def same_bits_or_nan(got, want, fmt):
    """Codes equal, or both NaN encodings of `fmt` (the sign of an fp8e4nv /
    fp8e5 NaN is not checked)."""
    t = decode_table(fmt)
    return (got == want) | (np.isnan(t[got]) & np.isnan(t[want]))


def to_bits(values, wide):
    """float64 values (exactly representable) -> the integer bits of `wide`."""
    v = np.asarray(values, dtype=np.float64)
    if wide == "fp32":
        return v.astype(np.float32).view(np.int32)
    if wide == "fp16":
        with np.errstate(over="ignore"):
            return v.astype(np.float16).view(np.int16)
    f = v.astype(np.float32)
    bits = f.view(np.uint32)
    assert np.all(((bits & 0xFFFF) == 0) | np.isnan(f)), "not a bf16 value"
    return (bits >> 16).astype(np.uint16).view(np.int16)


def from_bits(bits, wide):
    if wide == "fp32":
        return np.asarray(bits, dtype=np.int32).view(np.float32).astype(np.float64)
    if wide == "fp16":
        return np.asarray(bits, dtype=np.int16).view(np.float16).astype(np.float64)
    u = np.asarray(bits, dtype=np.int16).view(np.uint16).astype(np.uint32) << 16
    return u.view(np.float32).astype(np.float64)


def representable(values, wide):
    """The values that `wide` holds exactly (inf and NaN included)."""
    v = np.asarray(values, dtype=np.float64)
    with np.errstate(over="ignore"):
        if wide == "fp16":
            back = v.astype(np.float16).astype(np.float64)
        else:
            f = v.astype(np.float32)
            if wide == "bf16":
                f = (f.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)
            back = f.astype(np.float64)
    same = (back == v) & (np.signbit(back) == np.signbit(v))
    return v[same | ~np.isfinite(v)]


def dot_operands(fmt, M=16, N=16, K=32, seed=7):
    """Random (M, K) and (K, N) uint8 encodings of finite `fmt` values of magnitude at most 8
    (a tl.dot's inputs), and their float64 product."""
    rng = np.random.default_rng(seed)
    table = decode_table(fmt)
    finite = [c for c in range(256) if np.isfinite(table[c]) and abs(table[c]) <= 8]
    a = rng.choice(finite, size=(M, K)).astype(np.uint8)
    b = rng.choice(finite, size=(K, N)).astype(np.uint8)
    return a, b, table[a].astype(np.float64) @ table[b].astype(np.float64)


def boundary_inputs(fmt):
    """Values at the rounding boundaries of `fmt`: every value, the midpoints
    between neighbours (ties), just above and below them (in fp32), beyond
    the maximum, tiny values, +-0, +-inf, NaN; both signs."""
    mags, _ = _positive_codes(fmt)
    mids = (mags[:-1] + mags[1:]) / 2
    f32 = lambda a: np.asarray(a, dtype=np.float32)  # noqa: E731
    around = np.concatenate([np.nextafter(f32(mids), f32(np.inf)),
                             np.nextafter(f32(mids), f32(0))]).astype(np.float64)
    top = mags[-1]
    step = top - mags[-2]
    extra = [top + step / 2, top + step, top * 1.5, top * 4, 65504.0, 1e30,
             mags[1] / 4, mags[1] / 2 * 0.999, 1e-30, 1e-45, 0.0]
    pos = np.concatenate([mags, mids, around, extra])
    return np.concatenate([pos, -pos, [np.inf, -np.inf, np.nan, -0.0]])


# ---- kernels ----------------------------------------------------------------------------

@tritium.jit
def decode_kernel(src, dst, n, FP8: tl.constexpr, WIDE_T: tl.constexpr,
                  BITS_T: tl.constexpr, BLOCK: tl.constexpr):
    """dst = bits of (fp8 bits src, reinterpreted as FP8).to(WIDE_T)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(src + offs, mask=mask).to(FP8, bitcast=True)
    tl.store(dst + offs, x.to(WIDE_T).to(BITS_T, bitcast=True), mask=mask)


@tritium.jit
def encode_kernel(src, dst, n, FP8: tl.constexpr, WIDE_T: tl.constexpr,
                  ROUNDING: tl.constexpr, BLOCK: tl.constexpr):
    """dst = fp8 bits of (wide bits src, reinterpreted as WIDE_T).to(FP8)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(src + offs, mask=mask).to(WIDE_T, bitcast=True)
    y = x.to(FP8, fp_downcast_rounding=ROUNDING)
    tl.store(dst + offs, y.to(tl.uint8, bitcast=True), mask=mask)


@tritium.jit
def recode_kernel(src, dst, n, FROM: tl.constexpr, TO: tl.constexpr, BLOCK: tl.constexpr):
    """fp8 -> another fp8 format (through fp16)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(src + offs, mask=mask).to(FROM, bitcast=True)
    tl.store(dst + offs, x.to(TO).to(tl.uint8, bitcast=True), mask=mask)


@tritium.jit
def multiply_kernel(a, b, dst, n, FP8: tl.constexpr, BLOCK: tl.constexpr):
    """Arithmetic in an fp8 type: the product, rounded once into FP8."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(a + offs, mask=mask).to(FP8, bitcast=True)
    y = tl.load(b + offs, mask=mask).to(FP8, bitcast=True)
    tl.store(dst + offs, (x * y).to(tl.uint8, bitcast=True), mask=mask)


@tritium.jit
def typed_copy_kernel(src, dst, n, BLOCK: tl.constexpr):
    """fp8 pointer in (a reinterpreted or a torch fp8 tensor), fp32 out."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst + offs, tl.load(src + offs, mask=mask).to(tl.float32), mask=mask)


BLOCK = 256


def grid(n):
    return (tritium.cdiv(n, BLOCK),)


# ---- running them (numpy arrays on the CPU, torch tensors on a GPU) ----------------------

def run_decode(fmt, wide, put, get):
    """Decodes all 256 codes to `wide`; float64 results."""
    src = put(np.arange(256, dtype=np.uint8))
    bits_t = WIDE[wide][1]
    dst = put(np.zeros(256, dtype=np.int32 if wide == "fp32" else np.int16))
    decode_kernel[grid(256)](src, dst, 256, FP8=TL[fmt], WIDE_T=WIDE[wide][0], BITS_T=bits_t,
                             BLOCK=BLOCK)
    return from_bits(get(dst), wide)


def run_encode(fmt, wide, values, rounding, put, get):
    bits = to_bits(values, wide)
    n = len(bits)
    src = put(bits)
    dst = put(np.zeros(n, dtype=np.uint8))
    encode_kernel[grid(n)](src, dst, n, FP8=TL[fmt], WIDE_T=WIDE[wide][0], ROUNDING=rounding,
                           BLOCK=BLOCK)
    return get(dst)


def run_recode(src_fmt, dst_fmt, put, get):
    src = put(np.arange(256, dtype=np.uint8))
    dst = put(np.zeros(256, dtype=np.uint8))
    recode_kernel[grid(256)](src, dst, 256, FROM=TL[src_fmt], TO=TL[dst_fmt], BLOCK=BLOCK)
    return get(dst)


def run_multiply(fmt, put, get):
    """Every pair of codes (65536 products); returns (a, b, codes)."""
    a = np.repeat(np.arange(256, dtype=np.uint8), 256)
    b = np.tile(np.arange(256, dtype=np.uint8), 256)
    n = len(a)
    dst = put(np.zeros(n, dtype=np.uint8))
    multiply_kernel[grid(n)](put(a), put(b), dst, n, FP8=TL[fmt], BLOCK=BLOCK)
    return a, b, get(dst)


def expected_product(fmt, a, b):
    t = decode_table(fmt)
    with np.errstate(invalid="ignore", over="ignore"):
        return encode(t[a] * t[b], fmt)
