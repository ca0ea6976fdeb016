"""The special functions of libdevice that Inductor's kernels call for torch.special: the
Bessel functions j0, j1, y0, y1 and cyl_bessel_i0 / cyl_bessel_i1, the scaled complementary
error function erfcx, and ilogb (torch.frexp). Part of `tl.extra.libdevice`.

Each is computed in fp64 arithmetic on tritium's math ops (one meaning on the CPU executor and on
the GPU) and rounded once to the argument's type:
- below a crossover, the power series at 0 (for Y0 and Y1 the Neumann form, with ln(x/2));
- above it, the asymptotic (Hankel) expansions in 1/x, whose terms keep falling until their
  index passes 2x, so a fixed number of them is accurate for every x past the crossover.
The crossovers keep both sides accurate: the J/Y series lose digits to cancellation as x grows
(their largest term is near e^x / (2 pi x)), the expansions as x falls. fp32 results are within
a few ulps away from the functions' zeros (an absolute error near 1e-10 there); fp64 results
have an absolute error up to about 1e-10 near the crossover, far smaller elsewhere. sin and cos
of x are exact-reduced only below 2^48 (tl.cos's fp64 sequence): past that the oscillating
functions, whose size is then below 3e-8, lose their digits.
"""

import math as _pymath

from ... import core
from ...core import builtin
from . import common as _ld

_PI = _pymath.pi
_EULER = 0.57721566490153286  # Euler-Mascheroni
_INF = float("inf")
_NAN = float("nan")

# Past these, the Hankel expansions (J, Y) and the e^x expansion (I).
_JY_CROSSOVER = 17.0
_I_CROSSOVER = 30.0
# Series terms: at x = 17 the J/Y terms fall below 1e-22 of their largest by k = 40; at x = 30
# the I terms (all positive) by k = 50.
_JY_SERIES_TERMS = 40
_I_SERIES_TERMS = 50
# Expansion terms: 30, below the smallest term's index (2x >= 34) at every x past the crossover.
_HANKEL_TERMS = 30


def _hankel_coeffs(nu, count):
    """a_k(nu) = prod_{j=1..k} (4 nu^2 - (2j - 1)^2) / (k! 8^k), k = 0..count-1."""
    mu = 4.0 * nu * nu
    out, a = [], 1.0
    for k in range(count):
        out.append(a)
        a = a * (mu - (2 * k + 1) ** 2) / ((k + 1) * 8.0)
    return out


def _poly(u, coeffs):
    """sum coeffs[k] u^k (Horner), u an fp64 tensor."""
    return _ld._horner(u, coeffs)


def _fp64_arg(x, fn):
    """x as fp64, and the dtype the result rounds back to."""
    x = _ld._float_value(x, fn)
    return x.to(core.float64), x.dtype


def _safe_ln(v):
    """ln of a positive finite fp64 (an accurate series, normals and subnormals alike)."""
    tiny = v < 2.2250738585072014e-308
    scaled = core.where(tiny, v * 18446744073709551616.0, v)  # * 2^64
    return _ld._ln_fp64(scaled) - core.where(tiny, 64.0 * _ld._LN2, 0.0)


# ---- J0, J1, Y0, Y1 -----------------------------------------------------------------------


def _jy_series(a, order, with_y):
    """(J_order(a), the Neumann sum of Y_order(a)) for fp64 0 < a <= crossover: with q = a^2/4
    and t_k = (-q)^k / (k! (k + order)!),
      J0 = sum t_k,                J1 = (a/2) sum t_k,
      Y0 = (2/pi) ((ln(a/2) + gamma) J0 - sum H_k t_k),
      Y1 = -2/(pi a) + (2/pi)(ln(a/2) + gamma) J1 - (1/pi)(a/2) sum (H_k + H_{k+1}) t_k,
    H_k the harmonic numbers. Without with_y, Y is None and its sums are not built (j0 and j1
    need J alone)."""
    q = a * a * 0.25
    t = core.full([], 1.0, core.float64)
    j = t
    h_sum = core.full([], 0.0, core.float64) if order == 0 else t  # k = 0: H_0 + H_1 = 1
    h = 0.0
    for k in range(1, _JY_SERIES_TERMS):
        t = t * (-q) * (1.0 / (k * (k + order)))
        j = j + t
        h += 1.0 / k
        weight = h if order == 0 else h + (h + 1.0 / (k + 1))
        if with_y:
            h_sum = h_sum + t * weight
    if order == 1:
        j = a * 0.5 * j
    if not with_y:
        return j, None
    log_term = _safe_ln(a * 0.5) + _EULER
    if order == 0:
        return j, (2.0 / _PI) * (log_term * j - h_sum)
    y1 = (-2.0 / _PI) / a + (2.0 / _PI) * log_term * j - (1.0 / _PI) * (a * 0.5) * h_sum
    return j, y1


_P0 = [c * (-1) ** i for i, c in enumerate(_hankel_coeffs(0.0, _HANKEL_TERMS)[0::2])]
_Q0 = [c * (-1) ** i for i, c in enumerate(_hankel_coeffs(0.0, _HANKEL_TERMS)[1::2])]
_P1 = [c * (-1) ** i for i, c in enumerate(_hankel_coeffs(1.0, _HANKEL_TERMS)[0::2])]
_Q1 = [c * (-1) ** i for i, c in enumerate(_hankel_coeffs(1.0, _HANKEL_TERMS)[1::2])]


def _jy_hankel(a, order, with_y):
    """(J_order(a), Y_order(a)) for fp64 a >= crossover: with u = 1/a, P and Q the expansions in
    u, and chi = a - (order/2 + 1/4) pi,
      J = sqrt(2/(pi a)) (P cos chi - Q sin chi),  Y = sqrt(2/(pi a)) (P sin chi + Q cos chi);
    cos chi and sin chi from cos a and sin a (exact angle sums), so no rounding of a - pi/4."""
    u = core.div_rn(1.0, a)
    u2 = u * u
    p = _poly(u2, _P0 if order == 0 else _P1)
    q = u * _poly(u2, _Q0 if order == 0 else _Q1)
    c = core.cos(a)
    s = core.sin(a)
    if order == 0:  # chi = a - pi/4: sqrt(2) cos chi = c + s, sqrt(2) sin chi = s - c
        cc, sc = c + s, s - c
    else:  # chi = a - 3 pi/4: sqrt(2) cos chi = s - c, sqrt(2) sin chi = -(s + c)
        cc, sc = s - c, -(s + c)
    scale = core.sqrt(core.div_rn(1.0, _PI * a))
    return scale * (p * cc - q * sc), scale * (p * sc + q * cc) if with_y else None


def _jy(a, order, with_y=True):
    """(J, Y) of order 0 or 1 at fp64 a >= 0 (finite), each side where it is accurate; Y is
    None without with_y."""
    small = a < _JY_CROSSOVER
    lo = core.where(small, a, 1.0)
    hi = core.where(small, _JY_CROSSOVER, a)
    js, ys = _jy_series(lo, order, with_y)
    jh, yh = _jy_hankel(hi, order, with_y)
    return core.where(small, js, jh), core.where(small, ys, yh) if with_y else None


@builtin
def j0(x):
    """The Bessel function of the first kind of order 0 (even; j0(+-inf) = 0)."""
    x, out = _fp64_arg(x, "j0")
    a = core.abs(x)
    j, _ = _jy(core.where(a == _INF, 1.0, a), 0, with_y=False)
    j = core.where(a == 0.0, 1.0, j)
    j = core.where(a == _INF, 0.0, j)
    return core.where(x != x, x, j).to(out)


@builtin
def j1(x):
    """The Bessel function of the first kind of order 1 (odd; j1(+-inf) = 0)."""
    x, out = _fp64_arg(x, "j1")
    a = core.abs(x)
    j, _ = _jy(core.where((a == _INF) | (a == 0.0), 1.0, a), 1, with_y=False)
    j = core.where((a == _INF) | (a == 0.0), 0.0, j)
    return core.where(x != x, x, core.where(x < 0, -j, j)).to(out)


def _y(x, order, fn):
    x, out = _fp64_arg(x, fn)
    ok = (x > 0.0) & (x < _INF)
    _, y = _jy(core.where(ok, x, 1.0), order)
    y = core.where(x == 0.0, -_INF, y)
    y = core.where(x == _INF, 0.0, y)
    y = core.where((x < 0.0) | (x != x), _NAN, y)
    return y.to(out)


@builtin
def y0(x):
    """The Bessel function of the second kind of order 0: -inf at 0, NaN below 0,
    y0(inf) = 0."""
    return _y(x, 0, "y0")


@builtin
def y1(x):
    """The Bessel function of the second kind of order 1: -inf at 0, NaN below 0,
    y1(inf) = 0."""
    return _y(x, 1, "y1")


# ---- I0, I1 -------------------------------------------------------------------------------


def _i_series(a, order):
    """I_order(a) for fp64 0 <= a <= crossover: sum (a/2)^(2k + order) / (k! (k + order)!), all
    terms positive."""
    q = a * a * 0.25
    t = core.full([], 1.0, core.float64)
    s = t
    for k in range(1, _I_SERIES_TERMS):
        t = t * q * (1.0 / (k * (k + order)))
        s = s + t
    return s if order == 0 else s * (a * 0.5)


_IA0 = [c * (-1) ** k for k, c in enumerate(_hankel_coeffs(0.0, _HANKEL_TERMS))]
_IA1 = [c * (-1) ** k for k, c in enumerate(_hankel_coeffs(1.0, _HANKEL_TERMS))]


def _i_expansion(a, order):
    """I_order(a) for fp64 a >= crossover: e^a / sqrt(2 pi a) sum (-1)^k a_k / a^k, with e^a as
    e^(a/2) twice around the sum, so that the result overflows only where I does."""
    u = core.div_rn(1.0, a)
    s = _poly(u, _IA0 if order == 0 else _IA1)
    half = core.exp(a * 0.5)
    return half * (half * s * core.sqrt(core.div_rn(1.0, 2.0 * _PI * a)))


def _i(x, order, fn):
    x, out = _fp64_arg(x, fn)
    a = core.abs(x)
    small = a < _I_CROSSOVER
    r = core.where(small, _i_series(core.where(small, a, 0.0), order),
                   _i_expansion(core.where(small, _I_CROSSOVER, a), order))
    r = core.where(a == _INF, _INF, r)
    if order == 1:
        r = core.where(x < 0, -r, r)
    return core.where(x != x, x, r).to(out)


@builtin
def cyl_bessel_i0(x):
    """The modified Bessel function of the first kind of order 0 (even; +inf at +-inf)."""
    return _i(x, 0, "cyl_bessel_i0")


@builtin
def cyl_bessel_i1(x):
    """The modified Bessel function of the first kind of order 1 (odd; +-inf at +-inf)."""
    return _i(x, 1, "cyl_bessel_i1")


# ---- erfcx, ilogb -------------------------------------------------------------------------


def _exp_square_fp64(a):
    """exp(a^2) for fp64 a, with a^2 split into its rounded square and the square's error."""
    hi = a * a
    lo = core.fma(a, a, -hi)
    return core.exp(hi) * (1.0 + lo)


@builtin
def erfcx(x):
    """The scaled complementary error function e^(x^2) erfc(x): from 2 up, 1 / (sqrt(pi) F)
    with F erfc's continued fraction (no exponential, so no underflow: erfcx(x) ~ 1 /
    (x sqrt(pi)) for large x); below 2, e^(x^2) erfc(x), erfc from its series (and
    2 - erfc(-x) for x < 0), +inf where 2 e^(x^2) overflows."""
    x, out = _fp64_arg(x, "erfcx")
    terms = 50 if out == core.float64 else 30
    big = x >= 2.0
    hb = core.where(big, x, 2.0)
    f = hb
    for k in range(terms, 0, -1):
        f = hb + core.div_rn(0.5 * k, f)
    high = core.div_rn(1.0, _ld._SQRT_PI * f)
    a = core.abs(core.where(big, 0.0, x))
    erfc_a = _ld._erfc_fp64(a, terms)
    erfc_x = core.where(x < 0, 2.0 - erfc_a, erfc_a)
    low = _exp_square_fp64(a) * erfc_x
    r = core.where(big, high, low)
    r = core.where(x == _INF, 0.0, r)
    r = core.where(x == -_INF, _INF, r)
    return core.where(x != x, x, r).to(out)


_INT_MIN = -(1 << 31)
_INT_MAX = (1 << 31) - 1


@builtin
def ilogb(x):
    """The unbiased exponent of x as an int32 (floor(log2 |x|), subnormals included);
    INT_MIN for 0 and NaN, INT_MAX for +-inf, as libdevice's."""
    x, _ = _fp64_arg(x, "ilogb")
    a = core.abs(x)
    sub = a < 2.2250738585072014e-308
    scaled = core.where(sub, a * 18446744073709551616.0, a)  # * 2^64: subnormals normal
    e = ((scaled.to(core.int64, bitcast=True) >> 52) & 0x7FF) - 1023
    e = core.where(sub, e - 64, e).to(core.int32)
    e = core.where(a == 0.0, _INT_MIN, e)
    e = core.where(a == _INF, _INT_MAX, e)
    return core.where(x != x, _INT_MIN, e)


__all__ = ["cyl_bessel_i0", "cyl_bessel_i1", "erfcx", "ilogb", "j0", "j1", "y0", "y1"]
