"""CPU tests of the language around the ops: loops, branches, @jit calls, tuples, constexprs,
builtins and dtype attributes. Kernels are written as for Triton and checked against numpy.

`TRITIUM_TEST_AGAINST_TRITON=1|cuda` runs the same kernels under Triton's interpreter or on a GPU
under real Triton (see harness.py).
"""

import numpy as np
import pytest

from harness import triton, tl, interpreter_gap, launch, poisoned


def _c_div(a, b):
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


# ----------------------------------------------------------------------------------------------
# loops


@triton.jit
def _range_loops_kernel(out_ptr, n, start, step):
    # scalar loop-carried values through every loop spelling
    s0 = 0
    for i in range(n):
        s0 += i * i
    s1 = 0
    for i in range(start, n):
        s1 += i
    s2 = 0
    for i in range(start, n, step):
        s2 += i
    s3 = 0
    for i in tl.range(start, n, step):
        s3 = s3 * 3 + i  # order matters
    s4 = 0.0
    for i in tl.range(0, n, 1, num_stages=2):
        s4 += 0.5
    tl.store(out_ptr + 0, s0)
    tl.store(out_ptr + 1, s1)
    tl.store(out_ptr + 2, s2)
    tl.store(out_ptr + 3, s3)
    tl.store(out_ptr + 4, s4.to(tl.int32))


def _ref_loops(n, start, step):
    s3 = 0
    for i in range(start, n, step):
        s3 = (s3 * 3 + i) & 0xFFFFFFFF
    s3 = s3 - (1 << 32) if s3 >= (1 << 31) else s3
    return [sum(i * i for i in range(n)), sum(range(start, n)), sum(range(start, n, step)), s3, int(0.5 * max(n, 0))]


@pytest.mark.parametrize("n,start,step", [(0, 0, 1), (1, 0, 1), (10, 3, 2), (37, -5, 4), (5, 9, 3), (20, 19, 7)])
def test_range_loops(n, start, step):
    out = poisoned(5, np.int32)
    launch(_range_loops_kernel, (1,), out, n, start, step)
    np.testing.assert_array_equal(out, _ref_loops(n, start, step))


@triton.jit
def _static_range_kernel(x_ptr, out_ptr, N: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in tl.static_range(N):
        # i is a compile-time constant here
        acc += tl.load(x_ptr + i * BLOCK + offs) * (i + 1)
    for j in tl.static_range(1, N, 2):
        acc -= j
    tl.store(out_ptr + offs, acc)


@pytest.mark.parametrize("N", [1, 3, 4])
def test_static_range(N):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((N, 16)).astype(np.float32)
    out = poisoned(16, np.float32)
    launch(_static_range_kernel, (1,), x, out, N=N, BLOCK=16)
    ref = np.zeros(16, np.float32)
    for i in range(N):
        ref += x[i] * np.float32(i + 1)
    for j in range(1, N, 2):
        ref -= np.float32(j)
    np.testing.assert_allclose(out, ref, rtol=1e-6, atol=1e-6)


@triton.jit
def _tensor_loop_carried_kernel(x_ptr, out_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    # running max and sum of rows: two tensors and a scalar carried through one loop
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    m = tl.full([BLOCK], float("-inf"), dtype=tl.float32)
    s = tl.zeros([BLOCK], dtype=tl.float32)
    count = 0
    for r in range(0, n_rows):
        x = tl.load(x_ptr + r * n_cols + offs, mask=mask, other=0.0)
        m = tl.maximum(m, x)
        s = s + x
        count += 1
    tl.store(out_ptr + offs, m, mask=mask)
    tl.store(out_ptr + n_cols + offs, s / count, mask=mask)


@pytest.mark.parametrize("n_rows,n_cols", [(1, 1), (4, 30), (9, 64)])
def test_tensor_loop_carried(n_rows, n_cols):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((n_rows, n_cols)).astype(np.float32)
    out = poisoned(2 * n_cols, np.float32)
    launch(_tensor_loop_carried_kernel, (1,), x, out, n_rows, n_cols, BLOCK=64)
    np.testing.assert_array_equal(out[:n_cols], x.max(axis=0))
    np.testing.assert_allclose(out[n_cols:], x.sum(axis=0) / n_rows, rtol=1e-6, atol=1e-6)


@triton.jit
def _nested_loops_kernel(out_ptr, n, m):
    acc = 0
    for i in range(n):
        for j in range(i, m):
            if (i + j) % 3 == 0:
                acc += i * j
            else:
                acc -= 1
    tl.store(out_ptr, acc)


@pytest.mark.parametrize("n,m", [(0, 5), (4, 4), (7, 11)])
def test_nested_loops_with_branch(n, m):
    out = poisoned(1, np.int32)
    launch(_nested_loops_kernel, (1,), out, n, m)
    ref = sum((i * j if (i + j) % 3 == 0 else -1) for i in range(n) for j in range(i, m))
    assert out[0] == ref


@triton.jit
def _while_kernel(x_ptr, out_ptr, limit):
    # collatz steps of a runtime value, and a while over a tensor condition reduced to a scalar
    pid = tl.program_id(0)
    v = tl.load(x_ptr + pid)
    steps = 0
    while v != 1:
        if v % 2 == 0:
            v = v // 2
        else:
            v = 3 * v + 1
        steps += 1
    total = 0
    i = 0
    while i < limit and total < 1000:
        total += i
        i += 1
    tl.store(out_ptr + pid * 2, steps)
    tl.store(out_ptr + pid * 2 + 1, total)


def _collatz(v):
    s = 0
    while v != 1:
        v = v // 2 if v % 2 == 0 else 3 * v + 1
        s += 1
    return s


@pytest.mark.parametrize("limit", [0, 10, 100])
def test_while_loops(limit):
    x = np.array([1, 2, 3, 7, 27, 97], dtype=np.int32)
    out = poisoned(2 * len(x), np.int32)
    launch(_while_kernel, (len(x),), x, out, limit)
    total, i = 0, 0
    while i < limit and total < 1000:
        total += i
        i += 1
    ref = np.array([[_collatz(int(v)), total] for v in x], dtype=np.int32).ravel()
    np.testing.assert_array_equal(out, ref)


@triton.jit
def _while_tensor_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    # halve every element until all are below 1: the loop runs while any element is >= 1
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    n = 0
    while tl.max(x, axis=0) >= 1.0:
        x = tl.where(x >= 1.0, x * 0.5, x)
        n += 1
    tl.store(out_ptr + offs, x)
    tl.store(out_ptr + BLOCK, n.to(tl.float32))


def test_while_tensor_state():
    rng = np.random.default_rng(3)
    x = (rng.random(32) * 100).astype(np.float32)
    out = poisoned(33, np.float32)
    launch(_while_tensor_kernel, (1,), x, out, BLOCK=32)
    ref = x.copy()
    n = 0
    while ref.max() >= 1.0:
        ref = np.where(ref >= 1.0, ref * np.float32(0.5), ref)
        n += 1
    np.testing.assert_array_equal(out[:32], ref)
    assert out[32] == n


# ----------------------------------------------------------------------------------------------
# if / else


@triton.jit
def _if_runtime_kernel(x_ptr, out_ptr, threshold):
    pid = tl.program_id(0)
    v = tl.load(x_ptr + pid)
    if v > threshold:
        r = v * 2
        flag = 1
    elif v == threshold:
        r = v
        flag = 0
    else:
        r = -v
        flag = -1
    if pid % 2 == 0:  # an if with no else that changes a value
        r += 1000
    tl.store(out_ptr + pid * 2, r)
    tl.store(out_ptr + pid * 2 + 1, flag)


def test_if_elif_else_runtime():
    x = np.array([-5, 0, 3, 10, 3, 7, -1], dtype=np.int64)
    out = poisoned(2 * len(x), np.int64)
    launch(_if_runtime_kernel, (len(x),), x, out, 3)
    ref = []
    for pid, v in enumerate(x):
        r, f = (v * 2, 1) if v > 3 else ((v, 0) if v == 3 else (-v, -1))
        if pid % 2 == 0:
            r += 1000
        ref += [r, f]
    np.testing.assert_array_equal(out, ref)


@triton.jit
def _if_constexpr_kernel(x_ptr, out_ptr, n, MODE: tl.constexpr, FLAG: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    if MODE == "square":
        y = x * x
    elif MODE == "neg":
        y = -x
    else:
        # only this branch is compiled for MODE == "exp": the others are never built
        y = tl.exp(x)
    if FLAG:
        y = y + 1.0
    if not FLAG:
        y = y - 1.0
    tl.store(out_ptr + offs, y, mask=mask)


@pytest.mark.parametrize("mode", ["square", "neg", "exp"])
@pytest.mark.parametrize("flag", [True, False])
def test_if_constexpr(mode, flag):
    rng = np.random.default_rng(4)
    x = rng.standard_normal(20).astype(np.float32)
    out = poisoned(20, np.float32)
    launch(_if_constexpr_kernel, (1,), x, out, 20, MODE=mode, FLAG=flag, BLOCK=32)
    ref = {"square": x * x, "neg": -x, "exp": np.exp(x.astype(np.float64)).astype(np.float32)}[mode]
    ref = ref + np.float32(1) if flag else ref - np.float32(1)
    np.testing.assert_allclose(out, ref, rtol=1e-6, atol=1e-6)


@triton.jit
def _if_tensor_values_kernel(x_ptr, out_ptr, use_max, BLOCK: tl.constexpr):
    # branches that yield tensors, chosen by a runtime scalar argument
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if use_max:
        y = tl.maximum(x, 0.0)
        s = tl.max(x, axis=0)
    else:
        y = tl.minimum(x, 0.0)
        s = tl.min(x, axis=0)
    tl.store(out_ptr + offs, y + s)


@pytest.mark.parametrize("use_max", [0, 3])
def test_if_yields_tensors(use_max):
    rng = np.random.default_rng(5)
    x = rng.standard_normal(16).astype(np.float32)
    out = poisoned(16, np.float32)
    launch(_if_tensor_values_kernel, (1,), x, out, use_max, BLOCK=16)
    ref = np.maximum(x, 0) + x.max() if use_max else np.minimum(x, 0) + x.min()
    np.testing.assert_array_equal(out, ref.astype(np.float32))


@triton.jit
def _early_return_kernel(x_ptr, out_ptr, n):
    pid = tl.program_id(0)
    if pid >= n:
        return
    tl.store(out_ptr + pid, tl.load(x_ptr + pid) + 1)


def test_early_return():
    x = np.arange(8, dtype=np.int32)
    out = np.full(8, -1, np.int32)
    launch(_early_return_kernel, (8,), x, out, 5)
    np.testing.assert_array_equal(out, [1, 2, 3, 4, 5, -1, -1, -1])


# ----------------------------------------------------------------------------------------------
# @jit calls, constexpr arguments, tuples


@triton.jit
def _scale_add(x, y, ALPHA: tl.constexpr):
    return x * ALPHA + y


@triton.jit
def _min_max(x):
    return tl.min(x, axis=0), tl.max(x, axis=0)


@triton.jit
def _load_block(ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    return tl.load(ptr + offs, mask=offs < n, other=0.0), offs < n


@triton.jit
def _nested_helper(x, BLOCK: tl.constexpr):
    lo, hi = _min_max(x)
    return _scale_add(x - lo, hi - lo, 2.0), BLOCK * 2


@triton.jit
def _no_return_store(ptr, v):
    tl.store(ptr, v)


@triton.jit
def _calls_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    x, mask = _load_block(x_ptr, n, BLOCK)
    y, _ = _load_block(y_ptr, n, BLOCK=BLOCK)
    z = _scale_add(x, y, 3.0)
    w = _scale_add(x, y, ALPHA=-1.0)  # same helper, another specialisation
    t = _min_max(tl.where(mask, x, 0.0))
    lo = t[0]
    hi = t[1]
    u, B2 = _nested_helper(x, BLOCK)
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, z, mask=mask)
    tl.store(out_ptr + n + offs, w, mask=mask)
    tl.store(out_ptr + 2 * n + offs, u, mask=mask)
    _no_return_store(out_ptr + 3 * n, lo)
    _no_return_store(out_ptr + 3 * n + 1, hi)
    _no_return_store(out_ptr + 3 * n + 2, B2)  # a constexpr returned from a call becomes a value


def test_jit_calls_constexpr_and_tuples():
    rng = np.random.default_rng(6)
    n = 24
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    out = poisoned(3 * n + 3, np.float32)
    launch(_calls_kernel, (1,), x, y, out, n, BLOCK=32)
    xz = np.concatenate([x, np.zeros(8, np.float32)])  # masked lanes are 0 in the helper's view
    # a * b + c may be contracted to one fma: within an ulp or so of the unfused result
    np.testing.assert_allclose(out[:n], x * np.float32(3) + y, rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(out[n:2 * n], x * np.float32(-1) + y)
    lo, hi = xz.min(), xz.max()
    np.testing.assert_allclose(out[2 * n:3 * n], (x - lo) * np.float32(2) + (hi - lo), rtol=1e-6)
    np.testing.assert_array_equal(out[3 * n:], [lo, hi, 64])


@triton.jit
def _tuple_kernel(out_ptr, a, b):
    t = (a, b, a + b)
    p, q, r = t
    swapped = (t[1], t[0])
    tl.store(out_ptr + 0, p * 100 + q)
    tl.store(out_ptr + 1, swapped[0] * 100 + swapped[1])
    tl.store(out_ptr + 2, r)
    tl.store(out_ptr + 3, len(t))
    x, y = b, a  # tuple assignment swaps
    tl.store(out_ptr + 4, x - y)


def test_tuples():
    out = poisoned(5, np.int32)
    launch(_tuple_kernel, (1,), out, 7, 3)
    np.testing.assert_array_equal(out, [703, 307, 10, 3, -4])


@triton.jit
def _recursive_constexpr_helper(x, DEPTH: tl.constexpr):
    if DEPTH == 0:
        return x
    else:
        return _recursive_constexpr_helper(x * 2, DEPTH - 1) + 1


@triton.jit
def _recursion_kernel(out_ptr, v, DEPTH: tl.constexpr):
    tl.store(out_ptr, _recursive_constexpr_helper(v, DEPTH))


@pytest.mark.parametrize("depth", [0, 1, 4])
def test_constexpr_recursion(depth):
    out = poisoned(1, np.int32)
    launch(_recursion_kernel, (1,), out, 5, DEPTH=depth)
    ref = 5
    for _ in range(depth):
        ref = ref * 2
    assert out[0] == ref + depth


# ----------------------------------------------------------------------------------------------
# builtins, constants, dtype attributes, cdiv


@triton.jit
def _builtins_kernel(out_ptr, a, b, BLOCK: tl.constexpr):
    lo = min(a, b)
    hi = max(a, b)
    three = max(1, 2, 3)  # constexpr folding
    C: tl.constexpr = min(BLOCK, 16)
    tl.store(out_ptr + 0, lo)
    tl.store(out_ptr + 1, hi)
    tl.store(out_ptr + 2, three)
    tl.store(out_ptr + 3, C)
    tl.store(out_ptr + 4, tl.cdiv(a, 4))
    tl.store(out_ptr + 5, tl.cdiv(BLOCK, 3))
    tl.store(out_ptr + 6, a // 4 * 4 + a % 4)
    tl.store(out_ptr + 7, -a // 4)  # C-like: truncates toward zero
    tl.store(out_ptr + 8, -a % 4)


@pytest.mark.parametrize("a,b,block", [(7, -2, 8), (33, 100, 64), (4, 4, 16)])
def test_builtins_min_max_cdiv(a, b, block):
    out = poisoned(9, np.int32)
    launch(_builtins_kernel, (1,), out, a, b, BLOCK=block)
    ref = [min(a, b), max(a, b), 3, min(block, 16), (a + 3) // 4, (block + 2) // 3, a, _c_div(-a, 4),
           -a - _c_div(-a, 4) * 4]
    np.testing.assert_array_equal(out, ref)


@triton.jit
def _inf_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=float("-inf"))
    m = tl.max(x, axis=0)
    tl.store(out_ptr + 0, m)
    y = tl.load(x_ptr + offs, mask=mask, other=float("inf"))
    tl.store(out_ptr + 1, tl.min(y, axis=0))
    big = float("inf")
    tl.store(out_ptr + 2, tl.minimum(m, big))
    tl.store(out_ptr + 3, tl.where(m > 0, -big, big))
    tl.store(out_ptr + 4, float("-inf"))
    tl.store(out_ptr + 5, 1e30 * 1e30)  # a Python float beyond fp32's range: stored as inf


def test_float_inf_constants():
    rng = np.random.default_rng(7)
    x = rng.standard_normal(10).astype(np.float32)
    out = poisoned(6, np.float32)
    launch(_inf_kernel, (1,), x, out, 10, BLOCK=16)
    m = x.max()
    np.testing.assert_array_equal(out, [m, x.min(), m, -np.inf if m > 0 else np.inf, -np.inf, np.inf])


@triton.jit
def _dtype_attr_kernel(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.static_assert(x.dtype == x_ptr.dtype.element_ty)
    acc = tl.zeros([BLOCK], dtype=x.dtype)
    tl.static_assert(acc.dtype == x.dtype)
    acc += x
    acc += x
    y = acc.to(y_ptr.dtype.element_ty)
    tl.static_assert(y.dtype == y_ptr.dtype.element_ty)
    tl.store(y_ptr + offs, y)
    if x.dtype == tl.float16:
        code = 16
    elif x.dtype == tl.float32:
        code = 32
    elif x.dtype.is_int():
        code = 1
    else:
        code = 0
    tl.store(out_ptr, code)
    tl.store(out_ptr + 1, x.dtype.primitive_bitwidth)


@pytest.mark.parametrize("src,dst,code", [(np.float16, np.float32, 16), (np.float32, np.float64, 32),
                                          (np.int16, np.int64, 1), (np.float64, np.float16, 0)], ids=str)
def test_dtype_attributes(src, dst, code):
    rng = np.random.default_rng(8)
    x = (rng.standard_normal(16) * 10).astype(src)
    y = poisoned(16, dst)
    out = poisoned(2, np.int32)
    launch(_dtype_attr_kernel, (1,), x, y, out, BLOCK=16)
    np.testing.assert_array_equal(y, (x + x).astype(dst))
    np.testing.assert_array_equal(out, [code, np.dtype(src).itemsize * 8])


@triton.jit
def _int_dtype_bits_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    # Inductor's sort helpers bitcast a float of any width to the signed integer of that width.
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    idtype = tl.core.get_int_dtype(bitwidth=x.dtype.primitive_bitwidth, signed=True)
    udtype: tl.constexpr = tl.core.get_int_dtype(x.dtype.primitive_bitwidth, False)
    tl.static_assert(udtype.is_int_unsigned())
    tl.store(out_ptr + offs, x.to(idtype, bitcast=True).to(tl.int64))


@pytest.mark.parametrize("dt", [np.float16, np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_get_int_dtype_bitcasts_floats(dt):
    x = np.array([1.0, -2.5, 0.0, -0.0, np.inf, 3e-5, 7.0, -1e4], dtype=dt)
    out = poisoned(8, np.int64)
    launch(_int_dtype_bits_kernel, (1,), x, out, BLOCK=8)
    np.testing.assert_array_equal(out, x.view({2: np.int16, 4: np.int32, 8: np.int64}[x.itemsize]))
    assert tl.core.get_int_dtype(1, True) == tl.int1
    with pytest.raises(ValueError, match="Unsupported bitwidth 12"):
        tl.core.get_int_dtype(12, True)


@triton.jit
def _constexpr_default_kernel(out_ptr, FLIP: tl.constexpr = tl.core.CONSTEXPR_0):
    # Kernel libraries (flash-linear-attention's sort helpers) default a flag to Triton's
    # module constant tl.core.CONSTEXPR_0.
    if FLIP:
        tl.store(out_ptr, 1)
    else:
        tl.store(out_ptr, 2)


def test_core_constexpr_0_as_a_default():
    out = poisoned(1, np.int32)
    launch(_constexpr_default_kernel, (1,), out)
    assert out[0] == 2
    launch(_constexpr_default_kernel, (1,), out, FLIP=True)
    assert out[0] == 1


GLOBAL_BLOCK = tl.constexpr(32)


@triton.jit
def _global_constexpr_kernel(x_ptr, out_ptr):
    offs = tl.arange(0, GLOBAL_BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) * GLOBAL_BLOCK)


def test_global_constexpr():
    x = np.arange(32, dtype=np.int32)
    out = poisoned(32, np.int32)
    launch(_global_constexpr_kernel, (1,), x, out)
    np.testing.assert_array_equal(out, x * 32)


@triton.jit
def _specialization_kernel(x_ptr, out_ptr, n, s):
    # n == 1 and n % 16 == 0 specialise in Triton; results must not depend on it
    pid = tl.program_id(0)
    tl.store(out_ptr + pid, tl.load(x_ptr + pid) * n + s)


@pytest.mark.parametrize("n", [1, 16, 17, 32, -1])
def test_int_argument_specialisation(n):
    x = np.arange(4, dtype=np.int64)
    out = poisoned(4, np.int64)
    launch(_specialization_kernel, (4,), x, out, n, 5)
    np.testing.assert_array_equal(out, x * n + 5)


def test_same_kernel_many_specialisations():
    # one kernel object called with alternating dtypes and constexprs: every call must get the
    # compiled variant of its own key, never a stale one
    x = np.arange(10, dtype=np.float32)
    for mode, flag, ref in (("square", True, x * x + 1), ("neg", True, -x + 1), ("square", False, x * x - 1),
                            ("square", True, x * x + 1)):
        out = poisoned(10, np.float32)
        launch(_if_constexpr_kernel, (1,), x, out, 10, MODE=mode, FLAG=flag, BLOCK=16)
        np.testing.assert_array_equal(out, ref)
    for dtype in (np.int32, np.float64, np.int8, np.int32):
        xi = np.arange(32).astype(dtype)
        out = poisoned(32, dtype)
        launch(_global_constexpr_kernel, (1,), xi, out)
        np.testing.assert_array_equal(out, (xi * 32).astype(dtype))


@triton.jit
def _bool_arg_kernel(out_ptr, flag, v):
    if flag:
        r = v + 1
    else:
        r = v - 1
    tl.store(out_ptr, r)


@interpreter_gap
@pytest.mark.parametrize("flag", [True, False])
def test_bool_argument(flag):
    out = poisoned(1, np.int32)
    launch(_bool_arg_kernel, (1,), out, flag, 10)
    assert out[0] == (11 if flag else 9)


@triton.jit
def _float_arg_kernel(x_ptr, out_ptr, alpha, beta, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) * alpha + beta)


def test_float_arguments_are_fp32():
    x = np.linspace(-2, 2, 16).astype(np.float32)
    out = poisoned(16, np.float32)
    launch(_float_arg_kernel, (1,), x, out, 0.1, -3.3, BLOCK=16)
    np.testing.assert_allclose(out, x * np.float32(0.1) + np.float32(-3.3), rtol=1e-6, atol=1e-7)


# ----------------------------------------------------------------------------------------------
# more loop shapes and launch conventions


@triton.jit
def _negative_step_kernel(out_ptr, n):
    acc = 0
    for i in range(n, 0, -1):
        acc = acc * 2 + i
    for j in tl.range(10, 2, -3):
        acc += j * 1000
    tl.store(out_ptr, acc)


@pytest.mark.parametrize("n", [0, 1, 5])
def test_negative_step_range(n):
    out = poisoned(1, np.int64)
    launch(_negative_step_kernel, (1,), out, n)
    acc = 0
    for i in range(n, 0, -1):
        acc = acc * 2 + i
    for j in range(10, 2, -3):
        acc += j * 1000
    assert out[0] == acc


@triton.jit
def _grid_stride_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # a persistent kernel: each program walks the blocks pid, pid + nprog, ...
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    n_blocks = tl.cdiv(n, BLOCK)
    for blk in range(pid, n_blocks, nprog):
        offs = blk * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2 + pid, mask=mask)


@pytest.mark.parametrize("n,programs", [(1, 4), (100, 3), (1000, 7)])
def test_grid_stride_loop(n, programs):
    x = np.arange(n, dtype=np.int32)
    y = poisoned(n, np.int32)
    launch(_grid_stride_kernel, (programs,), x, y, n, BLOCK=16)
    np.testing.assert_array_equal(y, x * 2 + (np.arange(n) // 16) % programs)


@triton.jit
def _optional_bias_kernel(x_ptr, bias_ptr, out_ptr, n, SCALE: tl.constexpr = 2, BLOCK: tl.constexpr = 32):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    y = tl.load(x_ptr + offs, mask=mask) * SCALE
    if bias_ptr is not None:
        y += tl.load(bias_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, y, mask=mask)


def test_none_argument_and_constexpr_defaults():
    x = np.arange(20, dtype=np.float32)
    b = np.full(20, 0.5, np.float32)
    out = poisoned(20, np.float32)
    launch(_optional_bias_kernel, (1,), x, None, out, 20)
    np.testing.assert_array_equal(out, x * 2)
    out = poisoned(20, np.float32)
    launch(_optional_bias_kernel, (1,), x, b, out, 20, SCALE=3)
    np.testing.assert_array_equal(out, x * 3 + 0.5)


def test_keyword_arguments_and_launch_options():
    x = np.arange(20, dtype=np.float32)
    b = np.full(20, 0.25, np.float32)
    out = poisoned(20, np.float32)
    # every argument by keyword, in another order, plus the usual GPU launch options
    launch(_optional_bias_kernel, (1,), out_ptr=out, n=20, bias_ptr=b, x_ptr=x, BLOCK=32, num_warps=4, num_stages=2)
    np.testing.assert_array_equal(out, x * 2 + 0.25)


@triton.jit
def _big_int_kernel(x_ptr, out_ptr, big, neg):
    v = tl.load(x_ptr)
    tl.store(out_ptr + 0, big * 2)  # big >= 2**31 is an int64 argument
    tl.store(out_ptr + 1, v + big)
    tl.store(out_ptr + 2, neg * 3)
    tl.store(out_ptr + 3, (v + neg).to(tl.int64))


def test_large_and_negative_int_arguments():
    x = np.array([7], dtype=np.int32)
    out = poisoned(4, np.int64)
    big = 2 ** 40 + 3
    launch(_big_int_kernel, (1,), x, out, big, -5)
    np.testing.assert_array_equal(out, [big * 2, 7 + big, -15, 2])


@triton.jit
def _inc(x):
    x += 1  # rebinding a parameter does not touch the caller's variable
    return x


@triton.jit
def _pass_by_value_kernel(out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = offs
    b = _inc(a)
    tl.store(out_ptr + offs, a)
    tl.store(out_ptr + BLOCK + offs, b)


def test_call_arguments_are_values():
    out = poisoned(32, np.int32)
    launch(_pass_by_value_kernel, (1,), out, BLOCK=16)
    np.testing.assert_array_equal(out, np.concatenate([np.arange(16), np.arange(16) + 1]))


@triton.jit
def _loop_with_if_tensor_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    best = tl.full([BLOCK], -1, dtype=tl.int32)
    for i in range(n):
        x = tl.load(x_ptr + i * BLOCK + offs)
        if i % 2 == 0:
            acc += x
        else:
            acc -= x
        best = tl.where(x > 0.5, i, best)
    tl.store(out_ptr + offs, acc)
    tl.store(out_ptr + BLOCK + offs, best.to(tl.float32))


def test_loop_with_branch_on_induction_variable():
    rng = np.random.default_rng(9)
    n, B = 6, 16
    x = rng.standard_normal((n, B)).astype(np.float32)
    out = poisoned(2 * B, np.float32)
    launch(_loop_with_if_tensor_kernel, (1,), x, out, n, BLOCK=B)
    acc = np.zeros(B, np.float32)
    best = np.full(B, -1)
    for i in range(n):
        acc = acc + x[i] if i % 2 == 0 else acc - x[i]
        best = np.where(x[i] > 0.5, i, best)
    np.testing.assert_allclose(out[:B], acc, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(out[B:], best.astype(np.float32))


# ----------------------------------------------------------------------------------------------
# memory effects that optimisations (CSE, LICM, DCE) must respect


@triton.jit
def _load_store_order_kernel(p_ptr, out_ptr, n):
    # the same address is read and written in every iteration: no load may move across a store
    for i in range(n):
        v = tl.load(p_ptr)
        tl.store(p_ptr, v + 1)
    a = tl.load(p_ptr + 1)
    tl.store(p_ptr + 1, a * 10)
    b = tl.load(p_ptr + 1)  # must see the store above, not reuse `a`
    tl.store(out_ptr, a)
    tl.store(out_ptr + 1, b)
    c = tl.load(p_ptr + 2)
    tl.store(p_ptr + 2, 0)
    tl.store(p_ptr + 2, c + 5)  # only the last store survives


@pytest.mark.parametrize("n", [0, 1, 7])
def test_loads_and_stores_keep_their_order(n):
    p = np.array([100, 3, 40], dtype=np.int32)
    out = poisoned(2, np.int32)
    launch(_load_store_order_kernel, (1,), p, out, n)
    np.testing.assert_array_equal(p, [100 + n, 30, 45])
    np.testing.assert_array_equal(out, [3, 30])


@triton.jit
def _pow2_div_mod_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # division and remainder by powers of two are not shifts and masks for negative values
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x // 8, mask=mask)
    tl.store(out_ptr + n + offs, x % 8, mask=mask)
    tl.store(out_ptr + 2 * n + offs, x // 1, mask=mask)
    tl.store(out_ptr + 3 * n + offs, x % -4, mask=mask)
    tl.store(out_ptr + 4 * n + offs, x * 16 // 16, mask=mask)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64], ids=lambda d: np.dtype(d).name)
def test_pow2_div_mod_of_negatives(dtype):
    x = np.arange(-20, 20).astype(dtype)
    n = x.size
    out = poisoned(5 * n, dtype)
    launch(_pow2_div_mod_kernel, (1,), x, out, n, BLOCK=64)
    x64 = x.astype(np.int64)
    q8 = np.trunc(x64 / 8).astype(np.int64)
    qm4 = np.trunc(x64 / -4).astype(np.int64)
    with np.errstate(over="ignore"):
        x16 = (x * dtype(16)).astype(np.int64)  # wraps around in int8
    refs = [q8, x64 - q8 * 8, x64, x64 - qm4 * -4, np.trunc(x16 / 16).astype(np.int64)]
    for i, ref in enumerate(refs):
        np.testing.assert_array_equal(out[i * n:(i + 1) * n], ref.astype(dtype), err_msg=f"expression {i}")


@triton.jit
def _wide_literals_kernel(out_ptr):
    tl.store(out_ptr + 0, 2 ** 40)  # an int literal beyond int32 is an int64 constant
    tl.store(out_ptr + 1, -(2 ** 33) + 1)
    tl.store(out_ptr + 2, 2 ** 31 + 2 ** 31)  # folded as Python ints


def test_wide_int_literals():
    out = poisoned(3, np.int64)
    launch(_wide_literals_kernel, (1,), out)
    np.testing.assert_array_equal(out, [2 ** 40, -(2 ** 33) + 1, 2 ** 32])


@triton.jit
def _defaults_helper(x, y=2, SCALE: tl.constexpr = 3):
    return x * y + SCALE


@triton.jit
def _expressions_kernel(x_ptr, out_ptr, flag, B: tl.constexpr):
    r = tl.arange(0, B)
    x = tl.load(x_ptr + r)
    v = 1 if flag == 0 else 2  # conditional expressions on runtime conditions
    w = x if flag != 0 else -x
    tl.store(out_ptr + r, _defaults_helper(x) + v)
    tl.store(out_ptr + B + r, w + x)
    m = tl.reshape(x, (4, B // 4))
    tl.store(out_ptr + 2 * B + tl.arange(0, B // 4)[:, None] * 4 + tl.arange(0, 4)[None, :], m.T)


@pytest.mark.parametrize("flag", [0, 3])
def test_conditional_expressions_defaults_and_T(flag):
    x = np.linspace(-2, 2, 16).astype(np.float32)
    out = poisoned(48, np.float32)
    launch(_expressions_kernel, (1,), x, out, flag, B=16)
    np.testing.assert_array_equal(out[:16], x * 2 + 3 + (2 if flag else 1))
    np.testing.assert_array_equal(out[16:32], (x if flag else -x) + x)
    np.testing.assert_array_equal(out[32:], x.reshape(4, 4).T.ravel())


@triton.jit
def _static_range_constexpr_kernel(out_ptr, N: tl.constexpr):
    # the induction variable of tl.static_range is a compile-time constant: it can index a
    # tuple, feed tl.static_assert and pick a constexpr branch
    weights = (10, 20, 30, 40, 50)
    acc = 0
    for i in tl.static_range(N):
        tl.static_assert(i < N)
        if i % 2 == 0:
            acc += weights[i]
        else:
            acc -= weights[i]
    tl.store(out_ptr, acc)


@pytest.mark.parametrize("N", [1, 4, 5])
def test_static_range_induction_variable_is_constexpr(N):
    out = poisoned(1, np.int32)
    launch(_static_range_constexpr_kernel, (1,), out, N=N)
    assert out[0] == sum((10 * (i + 1)) * (1 if i % 2 == 0 else -1) for i in range(N))


# ----------------------------------------------------------------------------------------------
# issue 12: shapes are lists, expand_dims' axes, numbers assigned to locals are scalar tensors


@triton.jit
def _shape_list_kernel(x_ptr, out_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    tl.static_assert(x.shape == [N])
    m = tl.reshape(x, (4, N // 4))
    tl.static_assert(m.shape == [4, N // 4])
    tl.static_assert(m.shape == (4, N // 4))  # tuples and lists compare by their elements
    tl.static_assert(m.shape != [4, N])
    tl.static_assert(len(m.shape) == 2)
    tl.static_assert(m.shape[0] * m.shape[1] == N)
    same = tl.reshape(m.T, m.shape)  # a shape feeds the builtins that take one
    tl.static_assert(same.shape == [4, N // 4])
    z = tl.zeros(m.shape, tl.float32) + same
    tl.store(out_ptr + tl.arange(0, 4)[:, None] * (N // 4) + tl.arange(0, N // 4)[None, :], z)


def test_shape_is_a_list_of_constexprs():
    x = np.arange(16, dtype=np.float32)
    out = poisoned(16, np.float32)
    launch(_shape_list_kernel, (1,), x, out, N=16)
    # reshape of the transpose reads the transposed elements in row-major order
    np.testing.assert_array_equal(out, x.reshape(4, 4).T.ravel())


@triton.jit
def _expand_dims_kernel(x_ptr, out_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    a = tl.expand_dims(x, 0)
    tl.static_assert(a.shape == [1, N])
    b = tl.expand_dims(x, 1)
    tl.static_assert(b.shape == [N, 1])
    c = tl.expand_dims(x, -1)
    tl.static_assert(c.shape == [N, 1])
    d = tl.expand_dims(x, -2)
    tl.static_assert(d.shape == [1, N])
    e = tl.expand_dims(x, (0, 1))
    tl.static_assert(e.shape == [1, 1, N])
    f = tl.expand_dims(x, (0, 2))
    tl.static_assert(f.shape == [1, N, 1])
    g = tl.expand_dims(x, (-1, 0))  # -1 names the last dimension of the rank-3 result
    tl.static_assert(g.shape == [1, N, 1])
    h = x.expand_dims((1, 2))
    tl.static_assert(h.shape == [N, 1, 1])
    # each one still holds x: summing over the new unit dimensions gives it back
    r = tl.arange(0, N)
    tl.store(out_ptr + r, tl.sum(a, 0) + tl.sum(b, 1) * 10)
    tl.store(out_ptr + N + r, tl.sum(tl.sum(e, 0), 0) + tl.sum(tl.sum(f, 2), 0) * 10)
    tl.store(out_ptr + 2 * N + r, tl.sum(tl.sum(g, 2), 0) + tl.sum(tl.sum(h, 2), 1) * 10)
    tl.store(out_ptr + 3 * N + r, tl.sum(c, 1) + tl.sum(d, 0) * 10)


def test_expand_dims_axes():
    x = np.arange(8, dtype=np.float32) - 3
    out = poisoned(32, np.float32)
    launch(_expand_dims_kernel, (1,), x, out, N=8)
    np.testing.assert_array_equal(out, np.tile(x * 11, 4))


@triton.jit
def _literal_locals_kernel(x_ptr, out_ptr, N: tl.constexpr, SCALE: tl.constexpr):
    i = 1
    tl.static_assert(i.dtype == tl.int32)
    big = 2 ** 40
    tl.static_assert(big.dtype == tl.int64)
    v = 2.5
    tl.static_assert(v.dtype == tl.float32)
    flag = True
    tl.static_assert(flag.dtype == tl.int1)
    s = SCALE  # a constexpr assigned to a name is a tensor too
    tl.static_assert(s.dtype == tl.float32)
    k: tl.constexpr = 3  # ... unless the name is annotated tl.constexpr
    tl.static_assert(k == 3)
    a, b = 4, 0.5  # unpacking assigns each name
    tl.static_assert(a.dtype == tl.int32)
    tl.static_assert(b.dtype == tl.float32)
    x = tl.load(x_ptr + tl.arange(0, N))
    # a scalar tensor takes part in promotion; a literal adapts to the tensor
    tl.static_assert((x * v).dtype == tl.float32)
    tl.static_assert((x * 2.5).dtype == tl.float16)
    tl.store(out_ptr + tl.arange(0, N), (x * v + i + a * b + s).to(tl.float32))
    acc = 0
    for j in range(a):
        acc += j * i
    tl.store(out_ptr + N, acc.to(tl.float32))
    tl.store(out_ptr + N + 1, tl.where(flag, big // 2 ** 38, 0).to(tl.float32))


def test_numbers_assigned_to_locals_are_scalar_tensors():
    x = (np.arange(8) - 2).astype(np.float16)
    out = poisoned(10, np.float32)
    launch(_literal_locals_kernel, (1,), x, out, N=8, SCALE=0.25)
    np.testing.assert_array_equal(out[:8], x.astype(np.float32) * 2.5 + 1 + 2 + 0.25)
    assert out[8] == 0 + 1 + 2 + 3 and out[9] == 4


@triton.jit
def _literal_locals_as_constexprs_kernel(out_ptr):
    # tritium (not Triton) also takes such a local where a constexpr is required
    n = 8
    r = tl.arange(0, n)
    z = tl.zeros([n], tl.int32) + tl.expand_dims(r, 0).reshape(n)
    total = 0
    for i in tl.static_range(n):
        total += i
    w = (1, 2, 3)
    two = 2
    up = True
    if up:
        z += w[two]
    R, C = tl.reshape(z, (2, 4)).shape  # unpacked, each name is an int32 scalar tensor
    z += tl.reshape(tl.zeros([R, C], tl.int32) + R * C, n)
    tl.store(out_ptr + r, z + total)


def test_literal_locals_where_constexprs_are_required():
    if triton.__name__ != "tritium":
        pytest.skip("Triton requires tl.constexpr on these locals")
    out = poisoned(8, np.int32)
    launch(_literal_locals_as_constexprs_kernel, (1,), out)
    np.testing.assert_array_equal(out, np.arange(8) + 3 + 8 + 28)
