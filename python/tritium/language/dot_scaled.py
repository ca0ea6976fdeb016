"""tl.dot_scaled: the product of two blocks in microscaling (MX) formats, as Triton computes it on
GPUs without native MX instructions (Hopper and older): each operand is upcast to the compute type
(fp16 when either operand is fp16, otherwise bf16), multiplied by its scales, and the two go
through an ordinary tl.dot accumulating in fp32.

Formats: "e2m1" (fp4, two to a uint8, the first element in the low nibble), "e4m3", "e5m2" (fp8,
as uint8 or the fp8 dtype), "bf16", "fp16" (as the float or a uint16). A scale is an e8m0 exponent
(uint8, 2^(s - 127), 255 is NaN) for each 32 consecutive elements along K: shape [M, K // 32] for
lhs [M, K], [N, K // 32] for rhs [K, N] (not transposed). Every step is exact except the final
dot's accumulation: fp4 and fp8 values are exact in bf16 and fp16 (e4m3 and e5m2 in bf16; in fp16
too except e4m3's smallest subnormals), and a power-of-two scale multiplies exactly unless the
product leaves the compute type's range (2^(s-127) with s = 0 is 0 in bf16 and fp16, as in
Triton's decomposition).

Built from ops the compiler already has (bit operations, where, reshape, permute, tl.dot), so it
runs on the CPU executor and on the GPU alike."""
from . import core
from .core import _unwrap, builtin, tensor
from .shape_ops import interleave

_FORMATS = ("e2m1", "e4m3", "e5m2", "bf16", "fp16")


def _format(f, what):
    f = _unwrap(f)
    if f not in _FORMATS:
        raise ValueError(f"tl.dot_scaled's {what} must be one of {', '.join(_FORMATS)}, got {f!r}")
    return f


def _as_format(v, fmt, what):
    """v as a tensor of fmt's element type (fp4 stays packed uint8)."""
    if fmt == "e2m1":
        if v.dtype != core.uint8:
            raise TypeError(f"tl.dot_scaled: {what} in e2m1 must be packed as uint8, got {v.dtype}")
        return v
    ty = {"e5m2": core.float8e5, "e4m3": core.float8e4nv, "bf16": core.bfloat16,
          "fp16": core.float16}[fmt]
    if v.dtype == ty:
        return v
    raw = core.uint8 if fmt in ("e4m3", "e5m2") else core.uint16
    if v.dtype != raw:
        raise TypeError(f"tl.dot_scaled: {what} in {fmt} must be {ty} or {raw}, got {v.dtype}")
    return v.to(ty, bitcast=True)


def _swap_last(v):
    rank = len(v.shape)
    return core.permute(v, list(range(rank - 2)) + [rank - 1, rank - 2])


def _fp4_to(x, comp):
    """Packed e2m1 pairs (uint8) -> comp, the low nibble first along the last dim."""
    m_bits = 7 if comp == core.bfloat16 else 10
    bias = 127 if comp == core.bfloat16 else 15
    half = 0x3F00 if comp == core.bfloat16 else 0x3800  # 0.5

    def nibble(em, sign, em_shift):
        # sign | exponent | mantissa moved under the target's top mantissa bit, then rebiased
        # (a normal value), mapped to 0.5 (the one subnormal, 0b001) or left as zero.
        v = (em.to(core.uint16) >> em_shift << (m_bits - 1)) | sign
        e = em >> em_shift
        v = core.where((e & 0x6) != 0, v + ((bias - 1) << m_bits), v)
        return core.where(e == 0x1, half | (v & 0x8000), v)

    lo = nibble(x & 0x7, (x & 0x8).to(core.uint16) << 12, 0)
    hi = nibble(x & 0x70, (x & 0x80).to(core.uint16) << 8, 4)
    return interleave(lo, hi).to(comp, bitcast=True)


def _scale_to(s, comp):
    """e8m0 exponents (uint8) -> 2^(s - 127) in comp, as Triton's decomposition forms them."""
    if comp == core.bfloat16:
        return (s.to(core.uint16) << 7).to(core.bfloat16, bitcast=True)
    return (s.to(core.uint32) << 23).to(core.float32, bitcast=True).to(core.float16)


def _upcast(v, scale, fmt, comp, k_pack, fast_math):
    """v ([..., R, Kp], K last; fp4 packed along K if k_pack, else along R) in comp, times its
    scales ([..., R, K // 32]) if any."""
    if fmt == "e2m1":
        v = _fp4_to(v, comp) if k_pack else _swap_last(_fp4_to(_swap_last(v), comp))
    else:
        v = v.to(comp)
    if scale is None:
        return v
    shape = [int(_unwrap(d)) for d in v.shape]
    k = shape[-1]
    s = _scale_to(scale, comp)
    grouped = core.reshape(v, shape[:-1] + [k // 32, 32])
    scaled = grouped * core.expand_dims(s, len(shape))
    if not fast_math:
        nan = core.full(scaled.shape, float("nan"), comp)
        scaled = core.where(core.expand_dims(scale == 255, len(shape)), nan, scaled)
    return core.reshape(scaled, shape)


def _scale_arg(s, what):
    s = _unwrap(s)
    if s is None:
        return None
    if not isinstance(s, tensor):
        raise TypeError(f"tl.dot_scaled's {what} must be a uint8 tensor or None, got {s!r}")
    if s.dtype != core.uint8:
        raise TypeError(f"tl.dot_scaled's {what} must hold e8m0 exponents as uint8, got {s.dtype} "
                        "(fp8 scales are not supported)")
    return s


@builtin
def dot_scaled(lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, acc=None, fast_math=False,
               lhs_k_pack=True, rhs_k_pack=True, out_dtype=core.float32):
    """lhs @ rhs (+ acc) in fp32 with lhs, rhs in MX formats and their e8m0 scales (see the module
    docstring); 2-D or batched 3-D."""
    a, b = _unwrap(lhs), _unwrap(rhs)
    if not isinstance(a, tensor) or not isinstance(b, tensor):
        raise TypeError("tl.dot_scaled's lhs and rhs must be tensors")
    fa, fb = _format(lhs_format, "lhs_format"), _format(rhs_format, "rhs_format")
    sa, sb = _scale_arg(lhs_scale, "lhs_scale"), _scale_arg(rhs_scale, "rhs_scale")
    out = _unwrap(out_dtype)
    if out != core.float32:
        raise ValueError(f"tl.dot_scaled's out_dtype must be float32, got {out}")
    fast_math = bool(_unwrap(fast_math))
    ka, kb = bool(_unwrap(lhs_k_pack)), bool(_unwrap(rhs_k_pack))
    for packed, fmt, side in ((ka, fa, "lhs"), (kb, fb, "rhs")):
        if not packed and fmt != "e2m1":
            raise ValueError(f"tl.dot_scaled: only e2m1 can be packed along a dim other than K "
                             f"({side}_k_pack=False with {side}_format={fmt!r})")
    ra, rb = len(a.shape), len(b.shape)
    if not (ra == rb == 2 or ra == rb == 3):
        raise ValueError(f"tl.dot_scaled: lhs and rhs must both be 2-D or both 3-D, got shapes "
                         f"{list(a.shape)} and {list(b.shape)}")
    a, b = _as_format(a, fa, "lhs"), _as_format(b, fb, "rhs")
    sh_a = [int(_unwrap(d)) for d in a.shape]
    sh_b = [int(_unwrap(d)) for d in b.shape]
    m, k_a = sh_a[-2:]
    k_b, n = sh_b[-2:]
    if fa == "e2m1":
        if ka:
            k_a *= 2
        else:
            m *= 2
    if fb == "e2m1":
        if kb:
            k_b *= 2
        else:
            n *= 2
    if k_a != k_b:
        raise ValueError(f"tl.dot_scaled: lhs and rhs hold different K ({k_a} and {k_b}) for "
                         f"shapes {sh_a} ({fa}) and {sh_b} ({fb})")
    for s, rows, side in ((sa, m, "lhs"), (sb, n, "rhs")):
        if s is not None:
            want = sh_a[:-2] + [rows, k_a // 32] if len(s.shape) == ra else [rows, k_a // 32]
            got = [int(_unwrap(d)) for d in s.shape]
            if k_a % 32 or got != want:
                raise ValueError(f"tl.dot_scaled: {side}_scale must have shape {want} (one scale "
                                 f"for each 32 elements along K = {k_a}), got {got}")
    comp = core.float16 if "fp16" in (fa, fb) else core.bfloat16
    a_up = _upcast(a, sa, fa, comp, ka, fast_math)
    # rhs is [K, N]: upcast it as [N, K] (K last, as its scales are laid out), then back.
    b_up = _swap_last(_upcast(_swap_last(b), sb, fb, comp, kb, fast_math))
    return core.dot(a_up, b_up, acc, out_dtype=core.float32)
