"""Atomics on the CPU executor: every kind returns the old values, tl.atomic_cas and
tl.atomic_xchg, and the `sem` / `scope` arguments (accepted values pass, others are located
errors). Also the small language additions of issue 12: tl.umulhi, tensor.cast, tl.assume and
the tl.dtype constants."""

import numpy as np
import pytest

from harness import triton, tl, launch, poisoned, rand

SEMS = [None, "acquire", "release", "acq_rel", "relaxed"]
SCOPES = [None, "gpu", "cta", "sys"]


@triton.jit
def _rmw_old_kernel(x_ptr, v_ptr, old_ptr, KIND: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    v = tl.load(v_ptr + i)
    mask = i % 3 != 2
    if KIND == "add":
        old = tl.atomic_add(x_ptr + i, v, mask=mask, sem="relaxed", scope="gpu")
    elif KIND == "max":
        old = tl.atomic_max(x_ptr + i, v, mask=mask, sem="acquire")
    elif KIND == "min":
        old = tl.atomic_min(x_ptr + i, v, mask=mask, sem="release", scope="cta")
    elif KIND == "and":
        old = tl.atomic_and(x_ptr + i, v, mask=mask, scope="sys")
    elif KIND == "or":
        old = tl.atomic_or(x_ptr + i, v, mask=mask, sem="acq_rel")
    elif KIND == "xor":
        old = tl.atomic_xor(x_ptr + i, v, mask=mask)
    else:
        old = tl.atomic_xchg(x_ptr + i, v, mask=mask, sem="relaxed", scope="cta")
    tl.store(old_ptr + i, old, mask=mask)


_NP_COMBINE = {
    "add": np.add, "max": np.maximum, "min": np.minimum, "and": np.bitwise_and,
    "or": np.bitwise_or, "xor": np.bitwise_xor, "xchg": lambda a, b: b,
}


@pytest.mark.parametrize("kind", list(_NP_COMBINE))
@pytest.mark.parametrize("dt", [np.int32, np.uint32, np.int64, np.float32], ids=lambda d: np.dtype(d).name)
def test_atomic_rmw_returns_old_values(kind, dt):
    if kind in ("and", "or", "xor") and np.dtype(dt).kind == "f":
        pytest.skip("bitwise atomics take integers")
    rng = np.random.default_rng(11)
    n = 32
    lo, hi = (-1000, 1000) if np.dtype(dt).kind != "u" else (0, 2000)
    x = rand(rng, n, dt, lo, hi) if np.dtype(dt).kind != "f" else rand(rng, n, dt)
    v = rand(rng, n, dt, lo, hi) if np.dtype(dt).kind != "f" else rand(rng, n, dt)
    x0 = x.copy()
    old = poisoned(n, dt)
    launch(_rmw_old_kernel, (1,), x, v, old, KIND=kind, BLOCK=n)
    mask = np.arange(n) % 3 != 2
    np.testing.assert_array_equal(old[mask], x0[mask])
    expect = x0.copy()
    expect[mask] = _NP_COMBINE[kind](x0[mask], v[mask]).astype(dt)
    np.testing.assert_array_equal(x, expect)
    assert (old[~mask] == poisoned(1, dt)[0]).all() or np.isnan(old[~mask]).all()


@triton.jit
def _cas_kernel(x_ptr, cmp_ptr, val_ptr, old_ptr, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    old = tl.atomic_cas(x_ptr + i, tl.load(cmp_ptr + i), tl.load(val_ptr + i), sem="acq_rel", scope="gpu")
    tl.store(old_ptr + i, old)


@pytest.mark.parametrize("dt", [np.int32, np.uint32, np.int64, np.uint64, np.float32, np.float64, np.float16],
                         ids=lambda d: np.dtype(d).name)
def test_atomic_cas_swaps_where_equal(dt):
    n = 16
    x = np.arange(n).astype(dt)
    cmp = np.where(np.arange(n) % 2 == 0, np.arange(n), np.arange(n) + 1).astype(dt)
    val = (np.arange(n) * 10 + 3).astype(dt)
    x0 = x.copy()
    old = poisoned(n, dt)
    launch(_cas_kernel, (1,), x, cmp, val, old, BLOCK=n)
    np.testing.assert_array_equal(old, x0)
    np.testing.assert_array_equal(x, np.where(x0 == cmp, val, x0))


@triton.jit
def _spin_lock_kernel(lock_ptr, count_ptr, slots_ptr):
    # Every program takes a lock with atomic_cas, bumps a counter non-atomically inside it and
    # writes the value it saw to its slot, then releases the lock with atomic_xchg.
    pid = tl.program_id(0)
    while tl.atomic_cas(lock_ptr, 0, 1, sem="acquire") == 1:
        pass
    c = tl.load(count_ptr)
    tl.store(slots_ptr + pid, c)
    tl.store(count_ptr, c + 1)
    tl.atomic_xchg(lock_ptr, 0, sem="release")


def test_lock_with_cas_and_xchg():
    lock = np.zeros(1, np.int32)
    count = np.zeros(1, np.int32)
    slots = poisoned(8, np.int32)
    launch(_spin_lock_kernel, (8,), lock, count, slots)
    assert count[0] == 8 and lock[0] == 0
    assert sorted(slots.tolist()) == list(range(8))


@triton.jit
def _scalar_cas_kernel(x_ptr, out_ptr):
    old = tl.atomic_cas(x_ptr, 7, 9)
    tl.store(out_ptr, old)
    tl.store(out_ptr + 1, tl.atomic_add(x_ptr + 1, 5))


def test_scalar_atomics_return_old_value():
    x = np.array([7, 100], np.int32)
    out = poisoned(2, np.int32)
    launch(_scalar_cas_kernel, (1,), x, out)
    assert out.tolist() == [7, 100] and x.tolist() == [9, 105]


@triton.jit
def _bad_sem_kernel(x_ptr, SEM: tl.constexpr, SCOPE: tl.constexpr, CAS: tl.constexpr):
    if CAS:
        tl.atomic_cas(x_ptr, 0, 1, sem=SEM, scope=SCOPE)
    else:
        tl.atomic_add(x_ptr, 1, sem=SEM, scope=SCOPE)


@pytest.mark.parametrize("cas", [False, True])
@pytest.mark.parametrize("sem,scope,message", [
    ("weird", None, "Memory semantic weird not supported"),
    ("ACQUIRE", "gpu", "Memory semantic ACQUIRE not supported"),
    (None, "device", "Memory scope device not supported"),
    ("relaxed", "block", "Memory scope block not supported"),
])
def test_bad_sem_or_scope_is_a_located_error(cas, sem, scope, message):
    with pytest.raises(triton.CompilationError, match=message) as info:
        launch(_bad_sem_kernel, (1,), np.zeros(1, np.int32), SEM=sem, SCOPE=scope, CAS=cas)
    assert "test_atomics_cpu.py" in str(info.value)


@triton.jit
def _cas_bad_type_kernel(x_ptr):
    tl.atomic_cas(x_ptr, 0, 1)


def test_atomic_cas_rejects_8_bit_elements():
    with pytest.raises(triton.CompilationError, match=r"width \{16, 32, 64\}"):
        launch(_cas_bad_type_kernel, (1,), np.zeros(1, np.int8))


# ----------------------------------------------------------------------------------------------
# tl.umulhi, tensor.cast, tl.assume, tl.dtype constants


@triton.jit
def _umulhi_kernel(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    tl.store(out_ptr + i, tl.umulhi(tl.load(x_ptr + i), tl.load(y_ptr + i)))


@pytest.mark.parametrize("dt", [np.int32, np.uint32, np.int64, np.uint64], ids=lambda d: np.dtype(d).name)
def test_umulhi(dt):
    rng = np.random.default_rng(5)
    n = 64
    x, y = rand(rng, n, dt), rand(rng, n, dt)
    x[:4] = [0, 1, -1 if np.dtype(dt).kind == "i" else np.iinfo(dt).max, np.iinfo(dt).max]
    y[:4] = np.iinfo(dt).max
    out = poisoned(n, dt)
    launch(_umulhi_kernel, (1,), x, y, out, BLOCK=n)
    bits = np.dtype(dt).itemsize * 8
    mask = (1 << bits) - 1
    ref = [((int(a) & mask) * (int(b) & mask)) >> bits for a, b in zip(x, y)]
    np.testing.assert_array_equal(out.view(np.uint32 if bits == 32 else np.uint64),
                                  np.array(ref, dtype=np.uint32 if bits == 32 else np.uint64))


@triton.jit
def _umulhi_float_kernel(x_ptr):
    x = tl.load(x_ptr)
    tl.store(x_ptr, tl.umulhi(x, x))


def test_umulhi_rejects_floats():
    with pytest.raises(triton.CompilationError, match="umulhi expects int32, int64, uint32 or uint64"):
        launch(_umulhi_float_kernel, (1,), np.zeros(1, np.float32))


@triton.jit
def _cast_method_kernel(x_ptr, f_ptr, b_ptr, h_ptr, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + i)
    tl.assume(BLOCK > 0)
    tl.assume(i >= 0)
    tl.store(f_ptr + i, x.cast(tl.int32))
    tl.store(b_ptr + i, x.cast(tl.uint32, bitcast=True))
    tl.store(h_ptr + i, x.cast(tl.float16, fp_downcast_rounding="rtne"))


def test_tensor_cast_method_and_assume():
    x = np.array([1.5, -2.75, 3.0e4, 0.1, -0.0, 7.0, 65519.0, 1e-3], np.float32)
    f, b, h = poisoned(8, np.int32), poisoned(8, np.uint32), poisoned(8, np.float16)
    launch(_cast_method_kernel, (1,), x, f, b, h, BLOCK=8)
    np.testing.assert_array_equal(f, x.astype(np.int32))
    np.testing.assert_array_equal(b, x.view(np.uint32))
    np.testing.assert_array_equal(h, x.astype(np.float16))


def test_dtype_constants():
    d = tl.dtype
    assert d.SINT_TYPES == ["int8", "int16", "int32", "int64"]
    assert d.UINT_TYPES == ["int1", "uint8", "uint16", "uint32", "uint64"]
    assert d.STANDARD_FP_TYPES == ["fp16", "bf16", "fp32", "fp64"]
    assert d.OTHER_TYPES == ["void"]
    assert set(d.STANDARD_FP_TYPES) <= set(d.FP_TYPES)
    # Lists, as Triton's: tests concatenate them.
    every = d.SINT_TYPES + d.UINT_TYPES + d.FP_TYPES + d.OTHER_TYPES
    assert all(tl.dtype(name).name == name for name in every)
    assert [tl.float16.exponent_bias, tl.bfloat16.exponent_bias, tl.float32.exponent_bias,
            tl.float64.exponent_bias, tl.float8e5.exponent_bias, tl.float8e4nv.exponent_bias] == \
        [15, 127, 127, 1023, 15, 7]
    with pytest.raises(AttributeError):
        tl.int32.exponent_bias
