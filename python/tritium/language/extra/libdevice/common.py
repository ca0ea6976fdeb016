"""`tl.extra.libdevice` (also `tl.extra.cuda.libdevice`): the names of CUDA's libdevice that
kernel libraries call, on tritium's own math ops.

Triton binds these names to NVIDIA's bitcode library; tritium maps each onto its math ops
(tritium.language.math), which have one meaning on the CPU executor and a PTX lowering on the
GPU. Functions that libdevice computes exactly (rounding, classification, sign manipulation,
fmod, fmax/fmin) are exact here too. exp, log, sin, cos, ... are the matching `tl.*` functions
(on fp32 the hardware approximations on the GPU, on fp64 full precision: see
lib/target/nvidia/emit_arith.cpp); the functions composed of them (sinh, expm1, log1p, tan, log10,
the inverse hyperbolics) compute fp32 and narrower arguments in fp64, so they keep their few-ulp
accuracy on the GPU as on the CPU executor. The classification functions (isnan, isinf, signbit,
...) return int32 0/1, as libdevice's do.
"""

import functools
import math as _pymath

from ... import core
from ...core import builtin

__all__ = [
    "abs", "acos", "asin", "atan", "atan2", "cbrt", "ceil", "copysign", "cos", "cosh", "div_rn",
    "erf", "exp", "exp2", "expm1", "fabs", "fast_cosf", "fast_dividef", "fast_exp2f",
    "fast_expf", "fast_log2f", "fast_logf", "fast_sinf", "fast_tanhf", "finitef", "floor",
    "fma", "fmax", "fmin", "fmod", "hypot", "isfinited", "isinf", "isnan", "llrint", "llround",
    "log", "log1p", "log2", "lrint", "lround", "nearbyint", "pow", "rcp_rn", "rint", "round",
    "rsqrt", "signbit", "sin", "sinh", "sqrt", "sqrt_rn", "tan", "tanh", "trunc",
]


def _float_value(x, fn):
    """x as a float tensor (ints compute in fp32, as libdevice's float entry points)."""
    v = core._value(x, f"libdevice.{fn}'s argument")
    t = core.tensor(v)
    if t.dtype.is_ptr():
        raise TypeError(f"libdevice.{fn} expects a number, got {t.type}")
    if not t.dtype.is_floating():
        t = t.to(core.float32)
    return t


_SAME_WIDTH_INT = {"fp8e4nv": core.int8, "fp8e5": core.int8, "fp16": core.int16,
                   "bf16": core.int16, "fp32": core.int32, "fp64": core.int64}


def _bits(x):
    """The bits of a float tensor as a signed integer of its width."""
    return x.to(_SAME_WIDTH_INT[x.dtype.name], bitcast=True)


def _as_int32(cond):
    return cond.to(core.int32)


# -- the same functions as tl.* ------------------------------------------------------------

abs = core.abs
fabs = core.abs
ceil = core.ceil
floor = core.floor
cos = core.cos
sin = core.sin
erf = core.erf
exp = core.exp
exp2 = core.exp2
log = core.log
log2 = core.log2
rsqrt = core.rsqrt
sqrt = core.sqrt
sqrt_rn = core.sqrt_rn
tanh = core.tanh
fma = core.fma
div_rn = core.div_rn

# libdevice's __nv_fast_* are its approximate forms: tritium's tl.* math already lowers to
# the hardware approximations (ex2/lg2/sin/cos.approx), so they are the same functions.
fast_expf = core.exp
fast_exp2f = core.exp2
fast_logf = core.log
fast_log2f = core.log2
fast_sinf = core.sin
fast_cosf = core.cos
fast_tanhf = core.tanh


@builtin
def fast_dividef(x, y):
    """x / y, approximate (tritium's `/` on fp32)."""
    return core.tensor(core._builder().binary("truediv", core._operand(x), core._operand(y)))


@builtin
def rcp_rn(x):
    """1 / x rounded to nearest."""
    return core.div_rn(1.0, _float_value(x, "rcp_rn"))


# -- rounding (exact) ---------------------------------------------------------------------


@builtin
def trunc(x):
    """Rounds toward zero."""
    return core.tensor(core._builder().math("trunc", core._operand(x)))


@builtin
def rint(x):
    """Rounds to the nearest integer, ties to even."""
    return core.tensor(core._builder().math("rint", core._operand(x)))


nearbyint = rint


@builtin
def round(x):
    """Rounds to the nearest integer, ties away from zero (C's round)."""
    x = _float_value(x, "round")
    t = trunc(x)
    # x - t is exact (|x - t| < 1 and both share x's exponent range); half or more rounds
    # away from zero.
    away = core.abs(x - t) >= 0.5
    return core.where(away, t + copysign(1.0, x).to(x.dtype), t)


@builtin
def llrint(x):
    """rint(x) as an int64."""
    return rint(_float_value(x, "llrint")).to(core.int64)


lrint = llrint


@builtin
def llround(x):
    """round(x) as an int64."""
    return round(x).to(core.int64)


lround = llround


# -- classification and sign (exact) -------------------------------------------------------


@builtin
def isnan(x):
    """1 where x is NaN, else 0 (int32)."""
    x = _float_value(x, "isnan")
    return _as_int32(x != x)


@builtin
def isinf(x):
    """1 where x is +-inf, else 0 (int32)."""
    x = _float_value(x, "isinf")
    return _as_int32(core.abs(x) == float("inf"))


@builtin
def finitef(x):
    """1 where x is neither NaN nor +-inf, else 0 (int32)."""
    x = _float_value(x, "finitef")
    return _as_int32(core.abs(x) < float("inf"))


isfinited = finitef


@builtin
def signbit(x):
    """1 where x's sign bit is set (also -0.0 and negative NaNs), else 0 (int32)."""
    x = _float_value(x, "signbit")
    return _as_int32(_bits(x) < 0)


@builtin
def copysign(x, y):
    """|x| with the sign of y (in x's type)."""
    x = _float_value(x, "copysign")
    y = _float_value(y, "copysign").to(x.dtype)
    it = _SAME_WIDTH_INT[x.dtype.name]
    sign = core.full([], -(1 << (it.primitive_bitwidth - 1)), it)
    bits = (_bits(x) & ~sign) | (_bits(y) & sign)
    return bits.to(x.dtype, bitcast=True)


# -- min, max, remainder (exact) -------------------------------------------------------------


@builtin
def fmax(x, y):
    """The larger of x and y; a NaN operand gives the other one (C's fmax)."""
    return core.maximum(x, y, propagate_nan=core.PropagateNan.NONE)


@builtin
def fmin(x, y):
    """The smaller of x and y; a NaN operand gives the other one (C's fmin)."""
    return core.minimum(x, y, propagate_nan=core.PropagateNan.NONE)


@builtin
def fmod(x, y):
    """C's fmod: x - trunc(x / y) * y, with the sign of x."""
    x = _float_value(x, "fmod")
    return x % _float_value(y, "fmod")


# -- transcendental functions composed of tl math ----------------------------------------------
# Each keeps its error within a few ulps of the exact result. Those built on tl.exp / tl.log /
# tl.sin / tl.cos compute in fp64 (`_in_fp64`): fp32 tl.exp etc. are the hardware approximations
# on the GPU (ex2/lg2/sin/cos.approx, a few ulps off), fp64 ones are accurate on the executor and
# the GPU alike, and the fp32 result then rounds once. Small arguments use series where the plain
# formula would cancel.


def _fp64(x):
    return x.dtype == core.float64


def _horner(x, coeffs):
    acc = coeffs[-1]
    for c in reversed(coeffs[:-1]):
        acc = acc * x + c
    return acc


_INF = float("inf")


def _computed_in(fn, wide_for):
    """fn on its arguments widened to wide_for(result dtype), the result rounded back once to
    the widest argument's dtype."""
    @functools.wraps(fn)
    def wrapper(*args):
        vals = [_float_value(a, fn.__name__) for a in args]
        out = vals[0].dtype
        for v in vals[1:]:
            if v.dtype.primitive_bitwidth > out.primitive_bitwidth:
                out = v.dtype
        wide = wide_for(out)
        return fn(*[v.to(wide) for v in vals]).to(out)

    return wrapper


def _in_fp32(fn):
    """fp16/bf16/fp8 arguments compute in fp32 and the result rounds back once (the constants
    and intermediate steps would lose their accuracy in a 16-bit type); ints compute in fp32."""
    return _computed_in(fn, lambda out: core.float64 if out == core.float64 else core.float32)


def _in_fp64(fn):
    """Every argument computes in fp64 and the result rounds back once: for the functions built
    on tl.exp / tl.log / tl.sin / tl.cos, whose fp32 forms are approximations on the GPU."""
    return _computed_in(fn, lambda out: core.float64)


@builtin
@_in_fp32
def hypot(x, y):
    """sqrt(x^2 + y^2) without overflow or underflow in between; inf if either is inf."""
    ax, ay = core.abs(_float_value(x, "hypot")), core.abs(_float_value(y, "hypot"))
    big = core.maximum(ax, ay, propagate_nan=core.PropagateNan.ALL)
    small = core.minimum(ax, ay, propagate_nan=core.PropagateNan.ALL)
    q = core.div_rn(small, core.where(big == 0, 1.0, big).to(big.dtype))
    r = big * core.sqrt_rn(q * q + 1.0)
    r = core.where(big == 0, 0.0, r).to(big.dtype)
    return core.where((ax == _INF) | (ay == _INF), _INF, r).to(big.dtype)


@builtin
@_in_fp32
def cbrt(x):
    """The real cube root: an exp2/log2 estimate and one Newton step."""
    x = _float_value(x, "cbrt")
    a = core.abs(x)
    y = core.exp2(core.log2(a) * (1.0 / 3.0))
    # Newton steps (one from fp32's start, two for fp64), each residual y^3 - a in one
    # rounding (fma), or the step would add an ulp of its own.
    for _ in range(2 if _fp64(x) else 1):
        y2 = y * y
        y = y - core.div_rn(core.fma(y2, y, -a), 3.0 * y2)
    y = core.where((a == 0) | (a == _INF) | (a != a), a, y)
    return copysign(y, x)


@builtin
@_in_fp64
def sinh(x):
    x = _float_value(x, "sinh")
    a = core.abs(x)
    x2 = x * x
    terms = 9
    series = x * _horner(x2, [1.0 / _pymath.factorial(2 * k + 1) for k in range(terms)])
    e = core.exp(a)
    big = copysign(0.5 * (e - core.div_rn(1.0, e)), x)
    return core.where(a < 0.5, series, big)


@builtin
@_in_fp64
def cosh(x):
    x = _float_value(x, "cosh")
    e = core.exp(core.abs(x))
    return 0.5 * (e + core.div_rn(1.0, e))


@builtin
@_in_fp64
def expm1(x):
    """exp(x) - 1, accurate near 0 (a Taylor series below |x| = 0.5)."""
    x = _float_value(x, "expm1")
    terms = 17
    series = x * _horner(x, [1.0 / _pymath.factorial(k + 1) for k in range(terms)])
    return core.where(core.abs(x) < 0.5, series, core.exp(x) - 1.0)


@builtin
@_in_fp64
def log1p(x):
    """log(1 + x), accurate near 0: 2 atanh(x / (2 + x)) as a series below |x| = 0.5, else
    log(u) * x / (u - 1) with u = 1 + x (which cancels the rounding of u)."""
    x = _float_value(x, "log1p")
    s = core.div_rn(x, x + 2.0)
    s2 = s * s
    terms = 18
    series = 2.0 * s * _horner(s2, [1.0 / (2 * k + 1) for k in range(terms)])
    u = x + 1.0
    big = core.log(u) * core.div_rn(x, core.where(u == 1.0, 1.0, u - 1.0).to(u.dtype))
    big = core.where(x == _INF, _INF, big).to(x.dtype)
    return core.where(core.abs(x) < 0.5, series, big)


_PI = 3.141592653589793
_TAN_PI_12 = 0.2679491924311227
_SQRT3 = 1.7320508075688772


def _atan_reduced(a):
    """atan(a) for a in [0, 1]: a > tan(pi/12) moves to pi/6 + atan((a sqrt3 - 1) / (a + sqrt3));
    then the odd series to t^15 (|t| <= tan(pi/12))."""
    shifted = a > _TAN_PI_12
    t = core.where(shifted, core.div_rn(a * _SQRT3 - 1.0, a + _SQRT3), a)
    t2 = t * t
    terms = 15 if _fp64(a) else 8
    s = t * _horner(t2, [(-1.0) ** k / (2 * k + 1) for k in range(terms)])
    return core.where(shifted, s + _PI / 6, s)


@builtin
@_in_fp32
def atan(x):
    x = _float_value(x, "atan")
    a = core.abs(x)
    inv = a > 1.0
    r = _atan_reduced(core.where(inv, core.div_rn(1.0, a), a))
    r = core.where(inv, _PI / 2 - r, r)
    return copysign(r, x)


@builtin
@_in_fp32
def atan2(y, x):
    """The angle of (x, y) in [-pi, pi], with C's answers for zeros and infinities."""
    y = _float_value(y, "atan2")
    x = _float_value(x, "atan2").to(y.dtype)
    ax, ay = core.abs(x), core.abs(y)
    # The first-quadrant angle of (|x|, |y|) from the smaller ratio (both infinite: pi/4).
    swap = ay > ax
    num = core.where(swap, ax, ay)
    den = core.where(swap, ay, ax)
    ratio = core.div_rn(num, core.where(den == 0, 1.0, den).to(den.dtype))
    ratio = core.where((ax == _INF) & (ay == _INF), 1.0, ratio).to(y.dtype)
    theta = _atan_reduced(ratio)
    theta = core.where(swap, _PI / 2 - theta, theta)
    # x < 0 (also -0.0) reflects the angle to pi - theta.
    theta = core.where(signbit(x) != 0, _PI - theta, theta)
    theta = core.where((x != x) | (y != y), x + y, theta)
    return copysign(theta, y)


@builtin
@_in_fp32
def asin(x):
    x = _float_value(x, "asin")
    return atan2(x, core.sqrt_rn((1.0 - x) * (1.0 + x)))


@builtin
@_in_fp32
def acos(x):
    x = _float_value(x, "acos")
    return atan2(core.sqrt_rn((1.0 - x) * (1.0 + x)), x)


@builtin
@_in_fp64
def tan(x):
    x = _float_value(x, "tan")
    return core.div_rn(core.sin(x), core.cos(x))


_LOG2E = 1.4426950408889634
_LN2 = 0.6931471805599453
_SQRT2 = 1.4142135623730951


def _pow2_fp64(k):
    """2^k as fp64 for int64 k in [-1022, 1023], exactly (built from its exponent bits)."""
    return ((k + 1023) << 52).to(core.float64, bitcast=True)


def _exp2_fp64(t, terms):
    """2^t for fp64 t: 2^n (n = rint(t)) times exp(f ln 2) (|f| <= 1/2) as a Taylor series.
    2^n is two factors built from exponent bits (|n| up to 2046 covers fp64's range, overflow
    to inf and underflow through the subnormals)."""
    t = core.minimum(core.maximum(t, -2046.0), 2046.0)
    n = rint(t)
    f = (t - n) * _LN2
    p = _horner(f, [1.0 / _pymath.factorial(k) for k in range(terms)])
    n = n.to(core.int64)
    half = n >> 1
    return p * _pow2_fp64(half) * _pow2_fp64(n - half)


def _log2_fp64(ax, terms):
    """log2 of a positive, finite, normal fp64: exponent e and mantissa m in [sqrt(1/2), sqrt(2)),
    log(m) = 2 atanh((m - 1) / (m + 1)) as a series."""
    bits = ax.to(core.int64, bitcast=True)
    e = (bits >> 52) - 1023
    m = ((bits & 0x000FFFFFFFFFFFFF) | 0x3FF0000000000000).to(core.float64, bitcast=True)
    big = m > _SQRT2
    m = core.where(big, m * 0.5, m)
    e = core.where(big, e + 1, e)
    s = core.div_rn(m - 1.0, m + 1.0)
    ln_m = 2.0 * s * _horner(s * s, [1.0 / (2 * k + 1) for k in range(terms)])
    return e.to(core.float64) + ln_m * _LOG2E


@builtin
def pow(x, y):
    """x ** y with C's special cases. fp32 (and narrower) arguments compute in fp64 arithmetic
    (exact rounding on the executor and the GPU alike), so the fp32 result is within an ulp;
    fp64 arguments get the same algorithm in fp64 (relative error about 1e-13)."""
    x = _float_value(x, "pow")
    y = _float_value(y, "pow")
    out = x.dtype if x.dtype.primitive_bitwidth >= y.dtype.primitive_bitwidth else y.dtype
    wide64 = out == core.float64
    x, y = x.to(core.float64), y.to(core.float64)
    ax = core.abs(x)
    r = _exp2_fp64(y * _log2_fp64(ax, 14 if wide64 else 8), 18 if wide64 else 12)
    # |x| = 0 or inf: 0 or inf by the sign of y (a finite log would mislead for tiny y).
    r = core.where(ax == 0, core.where(y > 0, 0.0, _INF), r)
    r = core.where(ax == _INF, core.where(y > 0, _INF, 0.0), r)
    y_int = trunc(y) == y
    y_odd = y_int & (core.abs(y) < 9007199254740992.0) & (y % 2.0 != 0)
    r = core.where((signbit(x) != 0) & y_odd, -r, r)
    r = core.where((x < 0) & (ax != _INF) & ~y_int, float("nan"), r)
    r = core.where((x != x) | (y != y), float("nan"), r)
    # pow(+-1, +-inf) = 1, pow(1, y) = 1 and pow(x, +-0) = 1, NaN or not.
    r = core.where((ax == 1) & (core.abs(y) == _INF), 1.0, r)
    r = core.where((x == 1) | (y == 0), 1.0, r)
    return r.to(out)


# -- logarithms, inverse hyperbolics, erfc, erfinv, ldexp, nextafter ------------------------------
# The names Inductor's generated kernels call beyond the ones above. log10 and the inverse
# hyperbolic functions compose log / log1p / sqrt in fp64; erfc and erfinv compute in fp64 add/mul/div only (exact IEEE on the GPU too), so an
# fp32 result is within about an ulp everywhere; ldexp and nextafter are exact.

_LOG10_2 = 0.30102999566398120
_SQRT_PI = 1.7724538509055160
_TWO_28 = 268435456.0


@builtin
@_in_fp64
def log10(x):
    x = _float_value(x, "log10")
    return core.log2(x) * _LOG10_2


@builtin
@_in_fp64
def asinh(x):
    """log1p(a + a^2 / (1 + sqrt(1 + a^2))) for a = |x| (no cancellation near 0); log(a) + ln 2
    above 2^28, where a^2 + 1 rounds to a^2 (and would overflow further up)."""
    x = _float_value(x, "asinh")
    a = core.abs(x)
    small = core.minimum(a, _TWO_28)
    s = core.sqrt_rn(small * small + 1.0)
    r = log1p(small + core.div_rn(small * small, s + 1.0))
    r = core.where(a > _TWO_28, core.log(a) + _LN2, r)
    return core.where(x != x, x, copysign(r, x))


@builtin
@_in_fp64
def acosh(x):
    """log1p(t + sqrt(2t + t^2)) for t = x - 1 (exact for x in [1, 2]); log(x) + ln 2 above
    2^28; NaN below 1."""
    x = _float_value(x, "acosh")
    small = core.minimum(x, _TWO_28)
    t = small - 1.0
    r = log1p(t + core.sqrt_rn(t * (t + 2.0)))
    r = core.where(x > _TWO_28, core.log(x) + _LN2, r)
    return core.where(x != x, x, r)


@builtin
@_in_fp64
def atanh(x):
    """copysign(log1p(2a / (1 - a)) / 2, x) for a = |x| (1 - a is exact for a >= 1/2)."""
    x = _float_value(x, "atanh")
    a = core.abs(x)
    return copysign(0.5 * log1p(core.div_rn(a + a, 1.0 - a)), x)


def _exp_neg_square_fp64(a):
    """exp(-a^2) for fp64 a >= 0, with a^2 split into a rounded square and its error (fma), so
    that large a do not lose the square's last bits. fp64 tl.exp is accurate on the executor and
    the GPU alike (about 0.6 ulp); exp2(-a^2 log2 e) would add the rounding of the product, up to
    3 ulps, which took fp64 erfinv past its 100-ulp bound on the GPU (104)."""
    hi = a * a
    lo = core.fma(a, a, -hi)
    return core.exp(-hi) * (1.0 - lo)


def _erf_series_fp64(a):
    """erf(a) for fp64 0 <= a < 2: 2/sqrt(pi) exp(-a^2) sum 2^n a^(2n+1) / (2n+1)!!, whose terms
    are all positive (30 terms reach fp64's precision below 2)."""
    t = a
    s = a
    a2 = a * a
    for n in range(30):
        t = t * a2 * (2.0 / (2 * n + 3))
        s = s + t
    return (2.0 / _SQRT_PI) * _exp_neg_square_fp64(a) * s


def _erfc_fraction_fp64(a, terms):
    """erfc(a) for fp64 a >= 2: exp(-a^2) / sqrt(pi) over the continued fraction
    a + (1/2) / (a + 1 / (a + (3/2) / (a + ...))), evaluated from `terms` levels up."""
    f = a
    for k in range(terms, 0, -1):
        f = a + core.div_rn(0.5 * k, f)
    return core.div_rn(_exp_neg_square_fp64(a), _SQRT_PI * f)


def _erfc_fp64(a, terms):
    """erfc(a) for fp64 a >= 0 (a below 2 as 1 - erf(a): erfc(2) is 4.7e-3, so the subtraction
    keeps a relative error near 2e-14)."""
    low = 1.0 - _erf_series_fp64(core.minimum(a, 2.0))
    high = _erfc_fraction_fp64(core.maximum(a, 2.0), terms)
    return core.where(a < 2.0, low, high)


@builtin
def erfc(x):
    """1 - erf(x) without the cancellation: computed in fp64 arithmetic (a series below 2, a
    continued fraction above), so fp32 results are within an ulp; fp64 results have a relative
    error up to about 2e-13 (between 0.5 and 2, where 1 - erf cancels)."""
    x = _float_value(x, "erfc")
    out = x.dtype
    x = x.to(core.float64)
    a = core.abs(x)
    r = _erfc_fp64(a, 50 if out == core.float64 else 30)
    r = core.where(x < 0, 2.0 - r, r)
    r = core.where(a == _INF, core.where(x > 0, 0.0, 2.0), r)
    return core.where(x != x, x, r).to(out)


# erfinv(x) / x as polynomials in u, w = -ln(1 - x^2): u = w / 2.5 - 1 for w < 5, u = (sqrt(w)
# - m) / h above (tools/fit_erfinv.py fits them against mpmath; relative error 3e-11 and 1e-10).
_ERFINV_CENTRAL = [1.501409351138809, 0.6166006919766583, -0.02610823832086118,
    -0.01957356407010309, 0.008525439331702014, -0.0004878775967721982, -0.0008343559709357647,
    0.0002921383417352508, 2.108272589245827e-05, -4.140299645577323e-05,
    7.771602676117918e-06, 2.9320675489883476e-06, -1.2073583519614348e-06]
_ERFINV_TAIL = [2.9824571528365933, 0.9166719056126742, 0.005566550606185851,
    -0.0037672255933329213, 0.002433301492564641, -0.0014847164850841066,
    0.0006969969433778103, -0.0001844935017202548, -2.9176623073094983e-05,
    5.918126445862885e-05, -2.3935604063002886e-05, -2.828001927255763e-06,
    3.694339106455303e-06]
_ERFINV_TAIL_MID = (5.0 ** 0.5 + 16.5 ** 0.5) / 2
_ERFINV_TAIL_HALF = (16.5 ** 0.5 - 5.0 ** 0.5) / 2


def _erfinv_fp32(a):
    """erfinv of fp64 a in [0, 1) holding an fp32 (or narrower) value: w and the polynomials in
    fp64 arithmetic, about 1e-10 relative, so the fp32 result rounds once from there (within an
    ulp). About 60 fp64 operations, where the Halley steps of the fp64 path are over a thousand
    (ptxas took seconds over an Inductor kernel holding them)."""
    w = -core.log((1.0 - a) * (1.0 + a))
    central = _horner(w * 0.4 - 1.0, _ERFINV_CENTRAL)
    tail = _horner((core.sqrt(w) - _ERFINV_TAIL_MID) * (1.0 / _ERFINV_TAIL_HALF), _ERFINV_TAIL)
    return core.where(w < 5.0, central, tail) * a


@builtin
def erfinv(x):
    """The inverse of erf on [-1, 1] (+-inf at +-1, NaN outside). fp32 and narrower arguments:
    a polynomial in -ln(1 - x^2) (_erfinv_fp32), within an ulp. fp64: a closed-form estimate
    (Winitzki's, relative error about 2e-3) refined by four Halley steps in fp64, whose residual
    is erf(y) - a below 1.5 and (1 - a) - erfc(y) above (no cancellation near a = 1), within
    about 100 ulps (erfc's error below 2)."""
    x = _float_value(x, "erfinv")
    out = x.dtype
    x = x.to(core.float64)
    a = core.abs(x)
    inside = a < 1.0
    aa = core.where(inside, a, 0.5)
    if out != core.float64:
        y = core.where(aa == 0.0, 0.0, _erfinv_fp32(aa))
        r = core.where(inside, y, core.where(a == 1.0, _INF, float("nan")))
        r = core.where(x != x, x, r)
        return copysign(r, x).to(out)
    ln = core.log((1.0 - aa) * (1.0 + aa))
    k = 0.147
    c = 2.0 / (_PI * k) + 0.5 * ln
    y = core.sqrt(core.sqrt(c * c - ln / k) - c)
    one_minus = 1.0 - aa
    for _ in range(4):
        # erf's series near 1 is a few ulps of 1 off, which erf's slope turns into up to 90
        # ulps of y at y = 1.9 (115 on the GPU, whose fma contractions round differently); the
        # continued fraction (100 levels: 1e-16 relative from 1.5 up) has no such error.
        low = core.minimum(y, 1.5)
        high = core.maximum(y, 1.5)
        f = core.where(y < 1.5, _erf_series_fp64(low) - aa,
                       one_minus - _erfc_fraction_fp64(high, 100))
        d = (2.0 / _SQRT_PI) * _exp_neg_square_fp64(y)
        # Halley: f'' = -2 y f', so y -= f / (f' (1 + y f / f')).
        q = core.div_rn(f, d)
        y = y - core.div_rn(q, 1.0 + y * q)
    y = core.where(aa == 0.0, 0.0, y)
    r = core.where(inside, y, core.where(a == 1.0, _INF, float("nan")))
    r = core.where(x != x, x, r)
    return copysign(r, x).to(out)


@builtin
def ldexp(x, n):
    """x * 2^n in x's type; n an integer. fp32 and narrower scale in fp64 and round once, so they
    are exact (one rounding, at underflow or overflow); fp64 multiplies by three exact powers of
    two (each within fp64's exponent range), exact unless the result is subnormal, where it may
    round twice."""
    x = _float_value(x, "ldexp")
    n = core.tensor(core._value(n, "libdevice.ldexp's exponent"))
    if not n.dtype.is_int():
        raise TypeError(f"libdevice.ldexp expects an integer exponent, got {n.dtype}")
    out = x.dtype
    n = core.minimum(core.maximum(n.to(core.int64), -2200), 2200)
    a = n // 3
    b = (n - a) // 2
    c = n - a - b
    r = x.to(core.float64)
    for k in (a, b, c):
        r = r * _pow2_fp64(k)
    return r.to(out)


@builtin
def nextafter(x, y):
    """The representable neighbour of x in the direction of y (y itself when equal; NaN when
    either is NaN), in x's type."""
    x = _float_value(x, "nextafter")
    y = _float_value(y, "nextafter").to(x.dtype)
    bits = _bits(x)
    it = bits.dtype
    up = (y > x) == (x > 0)  # away from zero
    moved = core.where(up, bits + 1, bits - 1).to(x.dtype, bitcast=True)
    tiny = copysign(core.full([], 1, it).to(x.dtype, bitcast=True), y)
    r = core.where(x == 0, tiny, moved)
    r = core.where(x == y, y, r)
    return core.where((x != x) | (y != y), x + y, r)


# Lanczos's approximation with g = 7 and nine terms (relative error near 1e-15 for Gamma).
_LANCZOS_G = 7.0
_LANCZOS = [0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012,
            9.9843695780195716e-6, 1.5056327351493116e-7]
_HALF_LOG_2PI = 0.91893853320467274


def _ln_fp64(v):
    """log of a positive, finite, normal fp64 in fp64 arithmetic (pow's log2 series)."""
    return _log2_fp64(v, 14) * _LN2


def _lgamma_lanczos_fp64(z):
    """lgamma(z) for fp64 z >= 0.5."""
    w = z - 1.0
    acc = core.full([], _LANCZOS[0], core.float64)
    for i in range(1, len(_LANCZOS)):
        acc = acc + core.div_rn(_LANCZOS[i], w + float(i))
    t = w + (_LANCZOS_G + 0.5)
    return _HALF_LOG_2PI + (w + 0.5) * _ln_fp64(t) - t + _ln_fp64(acc)


def _sin_pi_abs_fp64(x):
    """|sin(pi x)| for fp64 x, by exact reduction to s in [0, 1/2] and a Taylor series of
    sin(pi s)."""
    r = x - 2.0 * rint(x * 0.5)  # in [-1, 1], exact
    a = core.abs(r)
    s = core.minimum(a, 1.0 - a)
    u = s * _PI
    u2 = u * u
    return u * _horner(u2, [(-1.0) ** k / _pymath.factorial(2 * k + 1) for k in range(12)])


@builtin
def lgamma(x):
    """log |Gamma(x)|: Lanczos's approximation for x >= 1/2, the reflection
    log(pi / |sin(pi x)|) - lgamma(1 - x) below; +inf at the poles (0, -1, -2, ...) and at
    +-inf. Computed in fp64 arithmetic: fp32 results within a few ulps (absolute error near
    1e-15 around the zeros at 1 and 2)."""
    x = _float_value(x, "lgamma")
    out = x.dtype
    x = x.to(core.float64)
    big = core.maximum(x, 0.5)
    right = _lgamma_lanczos_fp64(big)
    mirror = core.maximum(1.0 - x, 0.5)
    sin_abs = _sin_pi_abs_fp64(core.minimum(x, 0.5))
    left = _ln_fp64(core.div_rn(_PI, core.where(sin_abs == 0, 1.0, sin_abs))) - \
        _lgamma_lanczos_fp64(mirror)
    r = core.where(x >= 0.5, right, left)
    pole = (x <= 0) & (trunc(x) == x)
    r = core.where(pole | (core.abs(x) == _INF), _INF, r)
    # lgamma(1) = lgamma(2) = 0 exactly; the sums above cancel to within an ulp of 1e-16 there,
    # and whether to 0 depends on which products the GPU fuses.
    r = core.where((x == 1.0) | (x == 2.0), 0.0, r)
    return core.where(x != x, x, r).to(out)


__all__ += ["acosh", "asinh", "atanh", "erfc", "erfinv", "ldexp", "lgamma", "log10",
            "nextafter"]

