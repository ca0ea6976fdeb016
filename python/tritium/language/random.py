"""`tl.randint`, `tl.rand`, `tl.randn` and friends: Triton's counter-based
random streams (Philox 4x32-10), bit for bit. A 64-bit offset is the
counter's first two words (low, high), as in Triton 3.6: the numbers are
uint32 whatever the offset's width. `tl.philox` itself also runs Philox
4x64-10 on 64-bit counters.

Every value is a pure function of (seed, offset): a kernel that draws
`tl.rand(seed, offs)` gets, for each offset, the same number as Triton's
kernel with the same seed and offset. The functions are builtins written in
tl operations, so they run wherever those do (CPU executor and GPU); the
rounds unroll at compile time.
"""

from . import core
from .core import builtin

N_ROUNDS_DEFAULT = 10

# Philox 4x32 and 4x64 (Salmon et al., "Parallel random numbers: as easy as
# 1, 2, 3", SC'11): per-round key increments (Weyl constants) and the two
# multipliers.
_KEY_INC_32 = (0x9E3779B9, 0xBB67AE85)
_MULT_32 = (0xD2511F53, 0xCD9E8D57)
_KEY_INC_64 = (0x9E3779B97F4A7C15, 0xBB67AE8584CAA73B)
_MULT_64 = (0xD2E7470EE14C6C93, 0xCA5A826395121157)


def _tensor(x, what):
    """x as a tensor: a Python number becomes a scalar of its default type."""
    x = core.literal_value(x)
    if isinstance(x, core.tensor):
        return x
    if isinstance(x, (bool, int, float)):
        return core.tensor(core._builder().materialize(x))
    raise TypeError(f"{what} must be an integer scalar or tensor, got {x!r}")


def _rounds(n_rounds):
    n = core._constexpr_int(n_rounds, "n_rounds")
    if n < 0:
        raise ValueError(f"n_rounds must not be negative, got {n}")
    return n


@builtin
def philox_impl(c0, c1, c2, c3, k0, k1, n_rounds=N_ROUNDS_DEFAULT):
    """`n_rounds` Philox rounds on the counter (c0, c1, c2, c3) with the key
    (k0, k1); all uint32 (Philox 4x32) or all uint64 (Philox 4x64)."""
    c0, c1, c2, c3 = (_tensor(c, "philox_impl's counter") for c in (c0, c1, c2, c3))
    k0, k1 = _tensor(k0, "philox_impl's key"), _tensor(k1, "philox_impl's key")
    if c0.dtype == core.uint32:
        (inc_a, inc_b), (mul_a, mul_b) = _KEY_INC_32, _MULT_32
    elif c0.dtype == core.uint64:
        (inc_a, inc_b), (mul_a, mul_b) = _KEY_INC_64, _MULT_64
    else:
        raise TypeError(f"philox_impl: the counter must be uint32 or uint64, got {c0.dtype}")
    for _ in range(_rounds(n_rounds)):
        # The two multiplications give four words: the high halves, mixed with
        # the other counter words and the key, and the low halves.
        hi_b, lo_b = core.umulhi(mul_b, c2), c2 * mul_b
        hi_a, lo_a = core.umulhi(mul_a, c0), c0 * mul_a
        c0, c1, c2, c3 = hi_b ^ c1 ^ k0, lo_b, hi_a ^ c3 ^ k1, lo_a
        k0 = k0 + inc_a
        k1 = k1 + inc_b
    return c0, c1, c2, c3


@builtin
def philox(seed, c0, c1, c2, c3, n_rounds=N_ROUNDS_DEFAULT):
    """Philox on a counter of 32-bit words (key: the seed's two halves) or of
    64-bit words (key: the seed and 0). Integers of either signedness are
    taken by their bits."""
    seed = _tensor(seed, "the seed")
    if not seed.dtype.is_int():
        raise TypeError(f"the seed must be an integer, got {seed.dtype} (Triton: "
                        "static_assert(seed.dtype.is_int()))")
    seed = seed.to(core.uint64)
    c0, c1, c2, c3 = (_tensor(c, "the counter") for c in (c0, c1, c2, c3))
    bits = c0.dtype.primitive_bitwidth
    if bits == 32:
        word = core.uint32
        k0 = (seed & 0xFFFFFFFF).to(core.uint32)
        k1 = ((seed >> 32) & 0xFFFFFFFF).to(core.uint32)
    elif bits == 64:
        word = core.uint64
        k0 = seed
        # A 1-element block, as Triton's: a scalar counter gives 1-element results.
        k1 = core.full((1,), 0, core.uint64)
    else:
        raise TypeError(f"philox: the counter must be 32- or 64-bit integers, got {c0.dtype}")
    c0, c1, c2, c3 = (c.to(word, bitcast=True) for c in (c0, c1, c2, c3))
    return philox_impl(c0, c1, c2, c3, k0, k1, n_rounds)


@builtin
def randint4x(seed, offset, n_rounds=N_ROUNDS_DEFAULT):
    """Four blocks of random uint32 for the counter (offset's low 32 bits,
    its high 32 bits or 0, 0, 0): the cheapest way to draw several numbers."""
    offset = _tensor(offset, "the offset")
    lo = offset.to(core.uint32)
    zero = lo * 0
    hi = (offset >> 32).to(core.uint32) if offset.dtype.primitive_bitwidth > 32 else zero
    return philox(seed, lo, hi, zero, zero, n_rounds)


@builtin
def randint(seed, offset, n_rounds=N_ROUNDS_DEFAULT):
    """A block of random uint32: the first word of randint4x."""
    return randint4x(seed, offset, n_rounds)[0]


@builtin
def uint_to_uniform_float(x):
    """A random 32- or 64-bit integer to a float32 uniform in [0, 1).

    The bits are read as signed and folded onto [0, 2^(n-1)) (x and -x-1 meet),
    then scaled by the largest factor that keeps the maximum below 1.0 after
    float32 rounding."""
    x = _tensor(x, "uint_to_uniform_float's input")
    if x.dtype in (core.int32, core.uint32):
        x = x.to(core.int32, bitcast=True)
        scale = 4.6566127342e-10
    elif x.dtype in (core.int64, core.uint64):
        x = x.to(core.int64, bitcast=True)
        scale = 1.0842020432385337e-19
    else:
        raise TypeError(f"uint_to_uniform_float expects 32- or 64-bit integers, got {x.dtype}")
    x = core.where(x < 0, -x - 1, x)
    return x * scale


@builtin
def rand(seed, offset, n_rounds=N_ROUNDS_DEFAULT):
    """A block of float32 uniform in [0, 1)."""
    return uint_to_uniform_float(randint(seed, offset, n_rounds))


@builtin
def rand4x(seed, offsets, n_rounds=N_ROUNDS_DEFAULT):
    """Four blocks of float32 uniform in [0, 1)."""
    return tuple(uint_to_uniform_float(i) for i in randint4x(seed, offsets, n_rounds))


@builtin
def pair_uniform_to_normal(u1, u2):
    """Box-Muller: two uniforms in [0, 1) to two independent standard normals
    (u1 is kept from 0 so that its log is finite)."""
    u1 = core.maximum(1.0e-7, u1)
    theta = 6.283185307179586 * u2
    r = core.sqrt(-2.0 * core.log(u1))
    return r * core.cos(theta), r * core.sin(theta)


@builtin
def randn(seed, offset, n_rounds=N_ROUNDS_DEFAULT):
    """A block of float32 standard normals (from the first two words)."""
    i1, i2, _, _ = randint4x(seed, offset, n_rounds)
    n1, _ = pair_uniform_to_normal(uint_to_uniform_float(i1), uint_to_uniform_float(i2))
    return n1


@builtin
def randn4x(seed, offset, n_rounds=N_ROUNDS_DEFAULT):
    """Four blocks of float32 standard normals."""
    u1, u2, u3, u4 = rand4x(seed, offset, n_rounds)
    n1, n2 = pair_uniform_to_normal(u1, u2)
    n3, n4 = pair_uniform_to_normal(u3, u4)
    return n1, n2, n3, n4
