"""CPU tests of Triton's type promotion: the result type of every pair of tensor dtypes, of tensors
with Python literals and runtime scalars, and the implicit cast of tl.store, checked inside the
kernel with tl.static_assert and by the values stored.

`TRITIUM_TEST_AGAINST_TRITON=1|cuda` runs the same kernels under Triton's interpreter or on a GPU
under real Triton (see harness.py).
"""

import numpy as np
import pytest

from harness import (
    triton, tl, torch, AGAINST_TRITON, assert_ulp, dtype_id, interpreter_gap, launch, poisoned, rand,
)


# ----------------------------------------------------------------------------------------------
# type promotion (checked inside the kernel with static_assert, and by the stored values)


@triton.jit
def _promote_kernel(i8_ptr, i32_ptr, f16_ptr, u8_ptr, f32_ptr, s_float, s_int, out_f32_ptr, out_f16_ptr, out_i32_ptr,
                    BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a8 = tl.load(i8_ptr + offs)
    a32 = tl.load(i32_ptr + offs)
    h = tl.load(f16_ptr + offs)
    u = tl.load(u8_ptr + offs)
    f = tl.load(f32_ptr + offs)

    r0 = a32 + 1.5  # int32 tensor + python float -> fp32
    tl.static_assert(r0.dtype == tl.float32)
    r1 = h * 2.0  # python float does not widen fp16
    tl.static_assert(r1.dtype == tl.float16)
    r2 = a8 + a32  # int8 + int32 -> int32
    tl.static_assert(r2.dtype == tl.int32)
    r3 = a8 + 1  # python int does not widen int8
    tl.static_assert(r3.dtype == tl.int8)
    r4 = h + a32  # fp16 + int32 -> fp16
    tl.static_assert(r4.dtype == tl.float16)
    r5 = h + f  # fp16 + fp32 -> fp32
    tl.static_assert(r5.dtype == tl.float32)
    r6 = h / 2.0  # / of fp16 is computed in fp32
    tl.static_assert(r6.dtype == tl.float32)
    r7 = a32 / a32  # int / int -> fp32
    tl.static_assert(r7.dtype == tl.float32)
    r8 = u + a8  # uint8 + int8 -> uint8 (unsigned wins at equal width)
    tl.static_assert(r8.dtype == tl.uint8)
    r9 = h * s_float  # a runtime float argument is an fp32 scalar: it widens
    tl.static_assert(r9.dtype == tl.float32)
    r10 = a8 + s_int  # a runtime int argument is an int32 scalar: it widens
    tl.static_assert(r10.dtype == tl.int32)
    r11 = a32 < 2.5
    tl.static_assert(r11.dtype == tl.int1)

    tl.store(out_f32_ptr + 0 * BLOCK + offs, r0)
    tl.store(out_f32_ptr + 1 * BLOCK + offs, r5)
    tl.store(out_f32_ptr + 2 * BLOCK + offs, r6)
    tl.store(out_f32_ptr + 3 * BLOCK + offs, r7)
    tl.store(out_f32_ptr + 4 * BLOCK + offs, r9)
    tl.store(out_f16_ptr + 0 * BLOCK + offs, r1)
    tl.store(out_f16_ptr + 1 * BLOCK + offs, r4)
    tl.store(out_i32_ptr + 0 * BLOCK + offs, r2)
    tl.store(out_i32_ptr + 1 * BLOCK + offs, r3.to(tl.int32))
    tl.store(out_i32_ptr + 2 * BLOCK + offs, r8.to(tl.int32))
    tl.store(out_i32_ptr + 3 * BLOCK + offs, r10)
    tl.store(out_i32_ptr + 4 * BLOCK + offs, r11.to(tl.int32))


@interpreter_gap
def test_type_promotion():
    rng = np.random.default_rng(70)
    B = 32
    i8 = rand(rng, B, np.int8)
    i8[0] = 127  # 127 + 1 wraps in int8
    i32 = rand(rng, B, np.int32, 1, 3000)
    f16 = rand(rng, B, np.float16)
    u8 = rand(rng, B, np.uint8)
    f32 = rand(rng, B, np.float32)
    s_float, s_int = 0.3, 100000
    of32 = poisoned(5 * B, np.float32)
    of16 = poisoned(2 * B, np.float16)
    oi32 = poisoned(5 * B, np.int32)
    launch(_promote_kernel, (1,), i8, i32, f16, u8, f32, s_float, s_int, of32, of16, oi32, BLOCK=B)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(of32[0:B], i32.astype(np.float32) + np.float32(1.5))
        np.testing.assert_array_equal(of32[B:2 * B], f16.astype(np.float32) + f32)
        np.testing.assert_array_equal(of32[2 * B:3 * B], f16.astype(np.float32) / np.float32(2))
        assert_ulp(of32[3 * B:4 * B], np.ones(B, np.float32), 2)  # GPUs divide approximately
        np.testing.assert_allclose(of32[4 * B:], f16.astype(np.float32) * np.float32(s_float), rtol=1e-7)
        np.testing.assert_array_equal(of16[:B], f16 * np.float16(2))
        np.testing.assert_array_equal(of16[B:], f16 + i32.astype(np.float16))
        np.testing.assert_array_equal(oi32[:B], i8.astype(np.int32) + i32)
        np.testing.assert_array_equal(oi32[B:2 * B], (i8 + np.int8(1)).astype(np.int32))
        np.testing.assert_array_equal(oi32[2 * B:3 * B], (u8 + i8.view(np.uint8)).astype(np.int32))
        np.testing.assert_array_equal(oi32[3 * B:4 * B], i8.astype(np.int32) + s_int)
        np.testing.assert_array_equal(oi32[4 * B:], (i32 < 2.5).astype(np.int32))


@triton.jit
def _store_casts_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    # tl.store converts the value to the pointer's element type
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs, x * 1.0)


@pytest.mark.parametrize("dst", [np.float16, np.float64, np.int32, np.int8], ids=dtype_id)
def test_store_converts_to_element_type(dst):
    rng = np.random.default_rng(71)
    x = rand(rng, 64, np.float32, hi=50.0)
    y = poisoned(64, dst)
    launch(_store_casts_kernel, (1,), x, y, BLOCK=64)
    np.testing.assert_array_equal(y, x.astype(dst))


# ----------------------------------------------------------------------------------------------
# the promotion table: every pair of tensor dtypes, and tensors with literals


def _is_float(name):
    return name in ("float16", "bfloat16", "float32", "float64")


def _promoted(a, b, div_or_mod=False):
    """Triton's documented rules for the type of `a op b` (two tensors)."""
    if "float64" in (a, b):
        return "float64"
    if "float32" in (a, b):
        return "float32"
    if "float16" in (a, b):
        return "float32" if div_or_mod else "float16"
    if a == b == "bfloat16":
        return "float32" if div_or_mod else "bfloat16"
    if "bfloat16" in (a, b):
        return "float32"
    # two ints: the wider wins; at equal width the unsigned one wins
    wa, wb = np.dtype(a).itemsize, np.dtype(b).itemsize
    ua, ub = a.startswith("u"), b.startswith("u")
    if ua == ub:
        return a if wa >= wb else b
    if ua:
        return a if wa >= wb else b
    return b if wb >= wa else a


PROMO_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "float16", "bfloat16", "float32", "float64"]


@triton.jit
def _promo_kernel(x_ptr, y_ptr, out_ptr, OP: tl.constexpr, EXPECTED: tl.constexpr, B: tl.constexpr):
    r = tl.arange(0, B)
    x = tl.load(x_ptr + r)
    y = tl.load(y_ptr + r)
    if OP == "add":
        z = x + y
    elif OP == "mul":
        z = y * x
    elif OP == "floordiv":
        z = x // y
    elif OP == "mod":
        z = x % y
    elif OP == "int_literal":
        z = x + 3
    else:
        tl.static_assert(OP == "float_literal")
        z = 0.5 * x
    tl.static_assert(z.dtype == EXPECTED)
    tl.store(out_ptr + r, z)


def _promo_operand(rng, name, positive=False):
    if name == "bfloat16":
        return torch.from_numpy(rng.standard_normal(32).astype(np.float32)).to(torch.bfloat16)
    if _is_float(name):
        return rand(rng, 32, name, hi=4.0)
    lo = 1 if positive else (0 if name.startswith("u") else -60)
    return rand(rng, 32, name, lo, 60)


def _promo_run(op, a_name, b_name, res_name, rng):
    uses_bf16 = "bfloat16" in (a_name, b_name, res_name)
    if uses_bf16 and torch is None:
        pytest.skip("bf16 needs torch")
    if res_name == "bfloat16" and AGAINST_TRITON == "1":
        pytest.skip("a known gap of Triton's interpreter (bf16 arithmetic)")
    x = _promo_operand(rng, a_name)
    y = _promo_operand(rng, b_name, positive=op in ("floordiv", "mod"))
    res_tl = getattr(tl, res_name)
    if uses_bf16:
        tres = getattr(torch, res_name)
        out = torch.full((32,), float("nan"), dtype=tres) if tres.is_floating_point else torch.zeros(32, dtype=tres)
        tx = x if isinstance(x, torch.Tensor) else torch.from_numpy(x)
        ty = y if isinstance(y, torch.Tensor) else torch.from_numpy(y)
        launch(_promo_kernel, (1,), x, y, out, OP=op, EXPECTED=res_tl, B=32)
        ref = {"add": lambda: tx.to(tres) + ty.to(tres), "mul": lambda: ty.to(tres) * tx.to(tres),
               "int_literal": lambda: tx.to(tres) + 3, "float_literal": lambda: 0.5 * tx.to(tres)}[op]()
        assert torch.equal(out, ref.to(tres)), (out, ref)
        return
    out = poisoned(32, res_name)
    launch(_promo_kernel, (1,), x, y, out, OP=op, EXPECTED=res_tl, B=32)
    xr, yr = x.astype(res_name), y.astype(res_name)
    with np.errstate(over="ignore"):
        if op == "add":
            ref = xr + yr
        elif op == "mul":
            ref = yr * xr
        elif op == "int_literal":
            ref = xr + np.array(3, res_name)
        elif op == "float_literal":
            ref = np.array(0.5, res_name) * xr
        else:
            q = np.trunc(xr.astype(np.float64) / yr.astype(np.float64)).astype(np.int64)
            ref = q if op == "floordiv" else xr.astype(np.int64) - q * yr.astype(np.int64)
    np.testing.assert_array_equal(out, np.asarray(ref).astype(res_name))


@pytest.mark.parametrize("b", PROMO_DTYPES)
@pytest.mark.parametrize("a", PROMO_DTYPES)
def test_promotion_table_add(a, b):
    rng = np.random.default_rng(100)
    _promo_run("add" if a <= b else "mul", a, b, _promoted(a, b), rng)


INT_PROMO = ["int8", "int16", "int32", "int64", "uint8"]


# mixed signedness is an error for // and % (see test_errors.py)
SAME_SIGN_PAIRS = [(a, b) for a in INT_PROMO for b in INT_PROMO if a.startswith("u") == b.startswith("u")]


@pytest.mark.parametrize("a,b", SAME_SIGN_PAIRS, ids=str)
@pytest.mark.parametrize("op", ["floordiv", "mod"])
def test_promotion_table_div_mod(op, a, b):
    _promo_run(op, a, b, _promoted(a, b, div_or_mod=True), np.random.default_rng(101))


@pytest.mark.parametrize("a", PROMO_DTYPES)
@pytest.mark.parametrize("op", ["int_literal", "float_literal"])
def test_promotion_with_literals(op, a):
    # a literal adapts to the tensor unless it is of a higher kind (float literal, int tensor)
    res = "float32" if (op == "float_literal" and not _is_float(a)) else a
    _promo_run(op, a, "int32", res, np.random.default_rng(102))
