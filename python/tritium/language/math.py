"""`tl.math`: the elementwise math functions (the same builtins as `tl.*`)."""

from .core import (abs, ceil, cos, div_rn, erf, exp, exp2, fdiv, floor, fma, log, log2,
                   rsqrt, sigmoid, sin, sqrt, sqrt_rn, tanh)

__all__ = ["abs", "ceil", "cos", "div_rn", "erf", "exp", "exp2", "fdiv", "floor", "fma",
           "log", "log2", "rsqrt", "sigmoid", "sin", "sqrt", "sqrt_rn", "tanh"]
from .core import umulhi  # noqa: E402

__all__ += ["umulhi"]
