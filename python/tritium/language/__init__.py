"""`tritium.language` (`import tritium.language as tl`): the kernel language,
source-compatible with `triton.language`."""

from . import math  # noqa: F401
from .core import (PropagateNan, abs, arange, argmax, argmin, atomic_add, atomic_and,
                   atomic_max, atomic_min, atomic_or, atomic_xchg, atomic_xor, bfloat16,
                   block_type, broadcast, broadcast_to, cast, cdiv, ceil, clamp, constexpr,
                   cos, debug_barrier, device_assert, device_print, div_rn, dot, dtype, erf,
                   exp, exp2, expand_dims, fdiv, float8e4b8, float8e4b15, float8e4nv, float8e5,
                   float8e5b16, float16, float32,
                   float64, floor, fma, full, full_like, inline_asm_elementwise, int1, int8,
                   int16, int32, int64,
                   load, log, log2, max, max_constancy, max_contiguous, maximum, min,
                   minimum, multiple_of, num_programs, permute, pi32_t, pointer_type,
                   program_id, range, ravel, reshape, rsqrt, sigmoid, sin, sqrt, sqrt_rn,
                   static_assert, static_print, static_range, store, sum, tanh, tensor,
                   trans, uint8, uint16, uint32, uint64, view, void, where, xor_sum, zeros,
                   zeros_like)
from .standard import softmax, swizzle2d
from .block import (advance, block_pointer, load_tensor_descriptor, make_block_ptr,
                    make_tensor_descriptor, store_tensor_descriptor, tensor_descriptor)
from . import extra, random  # noqa: F401,E402
from .core import assume, atomic_cas, const, umulhi  # noqa: E402
from .random import (pair_uniform_to_normal, philox, philox_impl, rand, rand4x,  # noqa: E402
                     randint, randint4x, randn, randn4x, uint_to_uniform_float)
from .combine import associative_scan, cumprod, cumsum, flip, reduce, sort
from .shape_ops import cat, gather, histogram, interleave, join, split, topk
from .dot_scaled import dot_scaled  # noqa: E402

__all__ = [
    "PropagateNan", "abs", "arange", "associative_scan", "cumprod", "cumsum", "flip", "reduce", "sort",
    "cat", "gather", "histogram", "interleave", "join", "split", "topk", "argmax", "argmin", "atomic_add", "atomic_and",
    "atomic_max", "atomic_min", "atomic_or", "atomic_xchg", "atomic_xor", "bfloat16",
    "block_type", "broadcast", "broadcast_to", "cast", "cdiv", "ceil", "clamp", "constexpr",
    "cos", "debug_barrier", "device_assert", "device_print", "div_rn", "dot", "dot_scaled", "dtype", "erf",
    "exp", "exp2", "expand_dims", "fdiv", "float8e4b8", "float8e4b15", "float8e4nv", "float8e5",
    "float8e5b16", "float16", "float32",
    "float64", "floor", "fma", "full", "full_like", "inline_asm_elementwise", "int1", "int8",
    "int16", "int32", "int64",
    "load", "log", "log2", "math", "max", "max_constancy", "max_contiguous", "maximum", "min",
    "minimum", "multiple_of", "num_programs", "permute", "pi32_t", "pointer_type",
    "program_id", "range", "ravel", "reshape", "rsqrt", "sigmoid", "sin", "softmax", "sqrt",
    "sqrt_rn", "static_assert", "static_print", "static_range", "store", "sum", "swizzle2d",
    "tanh", "tensor", "trans", "uint8", "uint16", "uint32", "uint64", "view", "void", "where",
    "xor_sum", "zeros", "zeros_like",
    # block pointers and tensor descriptors (block.py)
    "advance", "block_pointer", "load_tensor_descriptor", "make_block_ptr",
    "make_tensor_descriptor", "store_tensor_descriptor", "tensor_descriptor",
]
__all__ += [
    "assume", "atomic_cas", "extra", "pair_uniform_to_normal", "philox", "philox_impl", "rand",
    "rand4x", "randint", "randint4x", "randn", "randn4x", "random", "uint_to_uniform_float",
    "umulhi",
]


import builtins as _builtins  # noqa: E402

from .core import _unwrap as _core_unwrap  # noqa: E402
from .core import builtin as _builtin  # noqa: E402


@_builtin
def tuple(values=(), type=None):  # noqa: A001 -- Triton's name
    """`tl.tuple(values)`: a tuple in a kernel. At compile time it is a Python tuple whose
    tensors stay separate values; it crosses @jit calls as arguments and results."""
    return _builtins.tuple(_core_unwrap(values))


__all__ += ["tuple"]
