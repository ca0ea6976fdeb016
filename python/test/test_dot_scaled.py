"""tl.dot_scaled on the CPU executor against a numpy reference that decodes every format from its
bit fields (fp4 e2m1, fp8 e4m3/e5m2, bf16 and fp16 as raw bits) and applies the e8m0 scales
(2^(s - 127) for each 32 elements along K, 255 = NaN) in float64; the PTX of the kernel assembles
for sm_80 and sm_90a. The GPU values: test_gpu_dot.py's test_gpu_dot_scaled."""

import importlib.util
import os
import shutil
import subprocess

import numpy as np
import pytest

import tritium
from harness import triton, tl, launch, poisoned

PTXAS = shutil.which("ptxas") or ("/usr/local/cuda/bin/ptxas"
                                  if os.path.exists("/usr/local/cuda/bin/ptxas") else None)


@triton.jit
def dot_scaled_kernel(a_ptr, sa_ptr, b_ptr, sb_ptr, acc_ptr, c_ptr, M: tl.constexpr,
                      N: tl.constexpr, K: tl.constexpr, FA: tl.constexpr, FB: tl.constexpr,
                      A_ROWS: tl.constexpr, A_COLS: tl.constexpr, B_ROWS: tl.constexpr,
                      B_COLS: tl.constexpr, A_K_PACK: tl.constexpr, B_K_PACK: tl.constexpr,
                      HAS_ACC: tl.constexpr, FAST: tl.constexpr):
    ra = tl.arange(0, A_ROWS)[:, None]
    ca = tl.arange(0, A_COLS)[None, :]
    rb = tl.arange(0, B_ROWS)[:, None]
    cb = tl.arange(0, B_COLS)[None, :]
    a = tl.load(a_ptr + ra * A_COLS + ca)
    b = tl.load(b_ptr + rb * B_COLS + cb)
    ks = tl.arange(0, K // 32)[None, :]
    sa = None
    sb = None
    if sa_ptr is not None:
        sa = tl.load(sa_ptr + tl.arange(0, M)[:, None] * (K // 32) + ks)
    if sb_ptr is not None:
        sb = tl.load(sb_ptr + tl.arange(0, N)[:, None] * (K // 32) + ks)
    rm = tl.arange(0, M)[:, None]
    rn = tl.arange(0, N)[None, :]
    acc = None
    if HAS_ACC:
        acc = tl.load(acc_ptr + rm * N + rn)
    c = tl.dot_scaled(a, sa, FA, b, sb, FB, acc, fast_math=FAST, lhs_k_pack=A_K_PACK,
                      rhs_k_pack=B_K_PACK)
    tl.store(c_ptr + rm * N + rn, c)


@triton.jit
def dot_scaled_3d_kernel(a_ptr, sa_ptr, b_ptr, c_ptr, B: tl.constexpr, M: tl.constexpr,
                         N: tl.constexpr, K: tl.constexpr):
    # Batched: lhs e2m1 [B, M, K/2] with scales [B, M, K/32], rhs bf16 [B, K, N].
    bi = tl.arange(0, B)[:, None, None]
    a = tl.load(a_ptr + bi * (M * K // 2) + tl.arange(0, M)[None, :, None] * (K // 2)
                + tl.arange(0, K // 2)[None, None, :])
    sa = tl.load(sa_ptr + bi * (M * K // 32) + tl.arange(0, M)[None, :, None] * (K // 32)
                 + tl.arange(0, K // 32)[None, None, :])
    b = tl.load(b_ptr + bi * (K * N) + tl.arange(0, K)[None, :, None] * N
                + tl.arange(0, N)[None, None, :])
    c = tl.dot_scaled(a, sa, "e2m1", b, None, "bf16")
    tl.store(c_ptr + bi * (M * N) + tl.arange(0, M)[None, :, None] * N
             + tl.arange(0, N)[None, None, :], c)


# --- the reference: each format decoded from its bits ---------------------------------------

def _fp4(nib):
    mag = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])[nib & 7]
    return np.where(nib & 8, -mag, mag)


def _minifloat(bits, e_bits, m_bits, bias, ieee_inf):
    s = (bits >> (e_bits + m_bits)) & 1
    e = (bits >> m_bits) & ((1 << e_bits) - 1)
    m = bits & ((1 << m_bits) - 1)
    frac = m / float(1 << m_bits)
    v = np.where(e == 0, frac * 2.0 ** (1 - bias), (1 + frac) * 2.0 ** (e.astype(np.float64) - bias))
    top = (1 << e_bits) - 1
    if ieee_inf:
        v = np.where(e == top, np.where(m == 0, np.inf, np.nan), v)
    else:  # e4m3fn: only S.1111.111 is NaN
        v = np.where((e == top) & (m == (1 << m_bits) - 1), np.nan, v)
    return np.where(s == 1, -v, v)


def decode(raw, fmt):
    """Raw storage (uint8/uint16) of fmt -> float64, fp4 unpacked along the last dim."""
    if fmt == "e2m1":
        out = np.empty(raw.shape[:-1] + (raw.shape[-1] * 2,))
        out[..., 0::2] = _fp4(raw & 0xF)
        out[..., 1::2] = _fp4(raw >> 4)
        return out
    if fmt == "e4m3":
        return _minifloat(raw.astype(np.int64), 4, 3, 7, False)
    if fmt == "e5m2":
        return _minifloat(raw.astype(np.int64), 5, 2, 15, True)
    if fmt == "bf16":
        return (raw.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return raw.view(np.float16).astype(np.float64)


def scaled(v, s):
    """v [..., R, K] times 2^(s - 127) per 32 along K (s [..., R, K/32]); 255 is NaN."""
    f = np.where(s == 255, np.nan, 2.0 ** (s.astype(np.float64) - 127))
    return v * np.repeat(f, 32, axis=-1)


def raw_operand(rng, shape, fmt, comp="bf16"):
    """Finite random storage of fmt (NaN and inf encodings replaced), small enough that no
    scaled value leaves the compute type's range (e5m2 below 2 when fp16 computes)."""
    if fmt in ("bf16", "fp16"):
        x = rng.standard_normal(shape).astype(np.float32)
        if fmt == "fp16":
            return x.astype(np.float16).view(np.uint16)
        return (x.view(np.uint32) >> 16).astype(np.uint16)
    x = rng.integers(0, 256, shape, dtype=np.uint8)
    if fmt == "e4m3":
        x = np.where((x & 0x7F) == 0x7F, x & 0xF0, x).astype(np.uint8)
    if fmt == "e5m2":
        x = np.where((x & 0x7C) == 0x7C, x & 0x83, x).astype(np.uint8)  # exponent 31 -> 0
        if comp == "fp16":
            x &= 0xBF  # exponent <= 15
    return x


def operand_shapes(fa, fb, ka, kb, M, N, K):
    """The stored shapes of lhs [M, K] and rhs [K, N] (fp4 two to a byte along K, or along M / N
    when not k_pack)."""
    a = (M, K // 2) if fa == "e2m1" and ka else (M // 2, K) if fa == "e2m1" else (M, K)
    b = (K // 2, N) if fb == "e2m1" and kb else (K, N // 2) if fb == "e2m1" else (K, N)
    return a, b


def reference(a, sa, fa, ka, b, sb, fb, kb):
    """(lhs @ rhs in float64, |lhs| @ |rhs| for the tolerance) from the stored operands."""
    av = decode(a, fa) if ka or fa != "e2m1" else decode(a.T, fa).T
    bv = decode(b.T, fb).T if kb or fb != "e2m1" else decode(b, fb)
    if sa is not None:
        av = scaled(av, sa)
    if sb is not None:
        bv = scaled(bv.T, sb).T
    return av @ bv, np.abs(av) @ np.abs(bv)


CASES = [  # (lhs format, rhs format, lhs scaled, rhs scaled, lhs k_pack, rhs k_pack)
    ("e2m1", "bf16", True, False, True, True),
    ("e4m3", "bf16", True, False, True, True),
    ("e5m2", "bf16", True, False, True, True),
    ("e2m1", "fp16", True, False, True, True),
    ("e4m3", "fp16", True, False, True, True),
    ("bf16", "e2m1", False, True, True, True),
    ("fp16", "e5m2", False, True, True, True),
    ("e4m3", "e5m2", True, True, True, True),
    ("e2m1", "e2m1", True, True, True, True),
    ("e2m1", "e2m1", True, True, False, False),
    ("e4m3", "e4m3", False, False, True, True),
]


def _run(fa, fb, sa_on, sb_on, ka, kb, M=32, N=32, K=64, has_acc=False, fast=False,
         scale_range=(117, 138), nan_scale=False, seed=0):
    rng = np.random.default_rng(seed)
    a_shape, b_shape = operand_shapes(fa, fb, ka, kb, M, N, K)
    comp = "fp16" if "fp16" in (fa, fb) else "bf16"
    a = raw_operand(rng, a_shape, fa, comp)
    b = raw_operand(rng, b_shape, fb, comp)
    lo, hi = scale_range if "fp16" not in (fa, fb) else (124, 131)
    sa = rng.integers(lo, hi, (M, K // 32), dtype=np.uint8) if sa_on else None
    sb = rng.integers(lo, hi, (N, K // 32), dtype=np.uint8) if sb_on else None
    if nan_scale:
        sa[3, 1] = 255
    acc = rng.standard_normal((M, N)).astype(np.float32) if has_acc else None
    c = poisoned((M, N), np.float32)
    launch(dot_scaled_kernel, (1,), a, sa, b, sb, acc, c, M=M, N=N, K=K, FA=fa, FB=fb,
           A_ROWS=a_shape[0], A_COLS=a_shape[1], B_ROWS=b_shape[0], B_COLS=b_shape[1],
           A_K_PACK=ka, B_K_PACK=kb, HAS_ACC=has_acc, FAST=fast)
    ref, mag = reference(a, sa, fa, ka, b, sb, fb, kb)
    return c, ref + (acc if has_acc else 0), mag


@pytest.mark.parametrize("fa,fb,sa,sb,ka,kb", CASES, ids=lambda v: str(v))
def test_dot_scaled_on_the_executor(fa, fb, sa, sb, ka, kb):
    c, ref, mag = _run(fa, fb, sa, sb, ka, kb)
    assert np.isfinite(ref).all()
    # Every operand is exact in the compute type; only the fp32 accumulation rounds.
    np.testing.assert_allclose(c, ref, rtol=0, atol=1e-5 * mag.max() + 1e-30)


def test_dot_scaled_accumulates_into_acc():
    c, ref, mag = _run("e2m1", "bf16", True, False, True, True, has_acc=True)
    np.testing.assert_allclose(c, ref, rtol=0, atol=1e-5 * (mag.max() + 4))


def test_dot_scaled_nan_scale():
    # Scale 255 (e8m0's NaN) turns its 32 elements NaN: row 3 of the product is NaN, the others
    # are not.
    c, ref, _ = _run("e4m3", "bf16", True, False, True, True, nan_scale=True)
    assert np.isnan(c[3]).all() and np.isfinite(np.delete(c, 3, axis=0)).all()


def test_dot_scaled_fast_math_agrees_on_finite_scales():
    # fast_math only drops the NaN-scale check.
    c, _, _ = _run("e2m1", "e4m3", True, True, True, True)
    c_fast, _, _ = _run("e2m1", "e4m3", True, True, True, True, fast=True)
    np.testing.assert_array_equal(c_fast, c)


def test_dot_scaled_batched():
    rng = np.random.default_rng(5)
    B, M, N, K = 2, 16, 16, 64
    a = rng.integers(0, 256, (B, M, K // 2), dtype=np.uint8)
    sa = rng.integers(120, 135, (B, M, K // 32), dtype=np.uint8)
    b = raw_operand(rng, (B, K, N), "bf16")
    c = poisoned((B, M, N), np.float32)
    launch(dot_scaled_3d_kernel, (1,), a, sa, b, c, B=B, M=M, N=N, K=K)
    av = scaled(decode(a, "e2m1"), sa)
    bv = decode(b, "bf16")
    ref = av @ bv
    mag = np.abs(av) @ np.abs(bv)
    np.testing.assert_allclose(c, ref, rtol=0, atol=1e-5 * mag.max())


@pytest.mark.parametrize("call,message", [
    ('tl.dot_scaled(a, None, "e3m2", b, None, "bf16")', "lhs_format must be one of"),
    ('tl.dot_scaled(a, None, "bf16", b, None, "bf16", out_dtype=tl.float16)', "out_dtype must be float32"),
    ('tl.dot_scaled(a, None, "bf16", b, None, "bf16", lhs_k_pack=False)', "only e2m1 can be packed"),
    ('tl.dot_scaled(a, s, "bf16", b, None, "bf16")', "lhs_scale must have shape [32, 2]"),
    ('tl.dot_scaled(a.to(tl.float32), None, "bf16", b, None, "bf16")', "lhs in bf16 must be"),
    ('tl.dot_scaled(a, s.to(tl.float8e4nv, bitcast=True), "bf16", b, None, "bf16")', "e8m0 exponents as uint8"),
])
def test_dot_scaled_errors(call, message, tmp_path):
    src = f'''import tritium as triton
import tritium.language as tl


@triton.jit
def bad(a_ptr, s_ptr, b_ptr):
    a = tl.load(a_ptr + tl.arange(0, 32)[:, None] * 64 + tl.arange(0, 64)[None, :]).to(tl.bfloat16)
    b = tl.load(b_ptr + tl.arange(0, 64)[:, None] * 32 + tl.arange(0, 32)[None, :]).to(tl.bfloat16)
    s = tl.load(s_ptr + tl.arange(0, 32)[:, None] * 4 + tl.arange(0, 4)[None, :])
    c = {call}
'''
    path = tmp_path / "dot_scaled_bad.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("dot_scaled_bad", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with pytest.raises(tritium.CompilationError, match=message.replace("[", r"\[")):
        tritium.compile(mod.bad, signature={"a_ptr": "*fp32", "s_ptr": "*u8", "b_ptr": "*fp32"})


@pytest.mark.skipif(PTXAS is None, reason="ptxas not installed")
@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("fa,fb,sa,sb,ka,kb", [CASES[0], CASES[7], CASES[9]], ids=lambda v: str(v))
def test_dot_scaled_ptx_assembles(fa, fb, sa, sb, ka, kb, target, tmp_path):
    if target == "sm_80" and ("e4m3" in (fa, fb) or "e5m2" in (fa, fb)):
        pytest.skip("fp8 conversions need sm_89 or newer (tritium and Triton alike)")
    M = N = 32
    K = 64
    a_shape, b_shape = operand_shapes(fa, fb, ka, kb, M, N, K)
    raw = {"e2m1": "*u8", "e4m3": "*u8", "e5m2": "*u8", "bf16": "*u16", "fp16": "*u16"}
    sig = {"a_ptr": raw[fa], "sa_ptr": "*u8" if sa else "constexpr", "b_ptr": raw[fb],
           "sb_ptr": "*u8" if sb else "constexpr", "acc_ptr": "constexpr", "c_ptr": "*fp32"}
    consts = dict(M=M, N=N, K=K, FA=fa, FB=fb, A_ROWS=a_shape[0], A_COLS=a_shape[1],
                  B_ROWS=b_shape[0], B_COLS=b_shape[1], A_K_PACK=ka, B_K_PACK=kb, HAS_ACC=False,
                  FAST=False, acc_ptr=None)
    if not sa:
        consts["sa_ptr"] = None
    if not sb:
        consts["sb_ptr"] = None
    sig = {k: v for k, v in sig.items() if v != "constexpr"}
    ck = tritium.compile(dot_scaled_kernel, signature=sig, constexprs=consts, target=target,
                         num_warps=4, use_cache=False)
    ptx = tmp_path / "k.ptx"
    ptx.write_text(ck.asm["ptx"])
    subprocess.run([PTXAS, f"-arch={target}", str(ptx), "-o", str(tmp_path / "k.o")], check=True)
