"""Fits the two polynomials of libdevice.erfinv's fp32 path (python/tritium/language/extra/
libdevice/common.py, _ERFINV_CENTRAL and _ERFINV_TAIL) and prints them with their relative error.

erfinv(x) / x is a smooth function of w = -ln(1 - x^2): a polynomial in u = (w - 2.5) / 2.5 for
w in [0, 5] (|x| up to 0.9966), and in u = (sqrt(w) - m) / h for w in [5, 16.5] (sqrt(w) =
m + u h), which reaches past fp32's largest x below 1 (w = 15.94). The fit is least squares in
relative error on Chebyshev nodes against mpmath's erfinv at 30 digits; degree 12 gives about
3e-11 (central) and 1e-10 (tail) relative error, far below fp32's 6e-8.

    python3 tools/fit_erfinv.py [--degree 12]
Needs numpy and mpmath.
"""

import argparse

import mpmath
import numpy as np

CENTRAL = (0.0, 5.0)
TAIL = (5.0, 16.5)


def _erfinv_over_x(w):
    x = mpmath.sqrt(1 - mpmath.exp(-w))
    return mpmath.sqrt(mpmath.pi) / 2 if x == 0 else mpmath.erfinv(x) / x


def w_central(u):
    lo, hi = CENTRAL
    return (lo + hi) / 2 + u * (hi - lo) / 2


def w_tail(u):
    lo, hi = np.sqrt(TAIL[0]), np.sqrt(TAIL[1])
    return ((lo + hi) / 2 + u * (hi - lo) / 2) ** 2


def fit(w_of_u, degree, nodes=400):
    """Coefficients c_0..c_degree of sum c_k u^k ~ erfinv(x)/x, and the largest relative
    error on a dense grid of u in [-1, 1]."""
    u = np.cos(np.pi * (np.arange(nodes) + 0.5) / nodes)
    f = np.array([float(_erfinv_over_x(mpmath.mpf(float(w_of_u(v))))) for v in u])
    vander = np.vander(u, degree + 1, increasing=True)
    c, *_ = np.linalg.lstsq(vander / f[:, None], np.ones_like(f), rcond=None)
    grid = np.linspace(-1, 1, 4001)
    exact = np.array([float(_erfinv_over_x(mpmath.mpf(float(w_of_u(v))))) for v in grid])
    return c, float(np.max(np.abs(np.polyval(c[::-1], grid) / exact - 1)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--degree", type=int, default=12)
    args = ap.parse_args()
    mpmath.mp.dps = 30
    for name, w_of_u in (("_ERFINV_CENTRAL", w_central), ("_ERFINV_TAIL", w_tail)):
        c, err = fit(w_of_u, args.degree)
        print(f"# relative error {err:.2e}")
        print(f"{name} = [" + ", ".join(repr(float(v)) for v in c) + "]")


if __name__ == "__main__":
    main()
