"""Functions of `tl` built from the core builtins (Triton's standard.py)."""

from . import core
from .core import builtin, cdiv, sigmoid, zeros, zeros_like  # noqa: F401


@builtin
def softmax(x, ieee_rounding=False):
    z = x - core.max(x, 0)
    num = core.exp(z)
    den = core.sum(num, 0)
    return num / den


@builtin
def swizzle2d(i, j, size_i, size_j, size_g):
    # "Grouped ordering" of program ids, as in Triton's matmul tutorial.
    ij = i * size_j + j
    size_gj = size_g * size_j
    group_id = ij // size_gj
    off_i = group_id * size_g
    size_g = core.minimum(size_i - off_i, size_g)
    ij = ij % size_gj
    new_i = off_i + ij % size_g
    new_j = ij // size_g
    return new_i, new_j
