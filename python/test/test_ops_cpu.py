"""CPU tests of the ops of tritium's language spine, against numpy (and torch for bf16).

Every kernel here is written exactly as one would for Triton and runs on the CPU executor on
numpy arrays: fresh random inputs from a seeded RNG, outputs poisoned before each launch.

`TRITIUM_TEST_AGAINST_TRITON=1|cuda` runs the same kernels under Triton's interpreter or on a GPU
under real Triton (see harness.py).
"""

import numpy as np
import pytest

from harness import (
    triton, tl, torch, AGAINST_TRITON, assert_ulp, dtype_id, interpreter_gap, launch, needs_torch, poisoned, rand,
)


INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8]
SIGNED_DTYPES = [np.int8, np.int16, np.int32, np.int64]
FLOAT_DTYPES = [np.float16, np.float32, np.float64]
ALL_DTYPES = INT_DTYPES + FLOAT_DTYPES
SIZES = [1, 17, 128, 300]  # 300 is no multiple of any block used below


# ----------------------------------------------------------------------------------------------
# program_id / num_programs


@triton.jit
def _grid_ids_kernel(out_ptr):
    pid0 = tl.program_id(0)
    pid1 = tl.program_id(axis=1)
    pid2 = tl.program_id(2)
    n0 = tl.num_programs(0)
    n1 = tl.num_programs(axis=1)
    n2 = tl.num_programs(2)
    base = out_ptr + ((pid2 * n1 + pid1) * n0 + pid0) * 6
    tl.store(base + 0, pid0)
    tl.store(base + 1, pid1)
    tl.store(base + 2, pid2)
    tl.store(base + 3, n0)
    tl.store(base + 4, n1)
    tl.store(base + 5, n2)


@pytest.mark.parametrize("grid", [(1,), (7,), (3, 5), (2, 3, 4), (4, 1, 2)], ids=str)
def test_program_id_num_programs(grid):
    full = tuple(grid) + (1,) * (3 - len(grid))
    n = full[0] * full[1] * full[2]
    out = poisoned((n, 6), np.int32)
    launch(_grid_ids_kernel, grid, out)
    ref = np.array(
        [[i, j, k, full[0], full[1], full[2]] for k in range(full[2]) for j in range(full[1]) for i in range(full[0])],
        dtype=np.int32,
    )
    np.testing.assert_array_equal(out, ref)


@triton.jit
def _copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, x, mask=mask)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("n", SIZES)
def test_copy_masked_tail(dtype, n):
    rng = np.random.default_rng(1)
    x = rand(rng, n, dtype)
    y = poisoned(n, dtype)
    launch(_copy_kernel, (triton.cdiv(n, 64),), x, y, n, BLOCK=64)
    np.testing.assert_array_equal(y, x)


def test_grid_as_callable_of_meta():
    rng = np.random.default_rng(2)
    n = 1000
    x = rand(rng, n, np.float32)
    y = poisoned(n, np.float32)
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)
    launch(_copy_kernel, grid, x, y, n, BLOCK=128)
    np.testing.assert_array_equal(y, x)


# ----------------------------------------------------------------------------------------------
# arange / zeros / full


@triton.jit
def _arange_kernel(out_ptr, START: tl.constexpr, END: tl.constexpr):
    r = tl.arange(START, END)
    tl.store(out_ptr + tl.arange(0, END - START), r)


@pytest.mark.parametrize("start,end", [(0, 1), (0, 2), (0, 16), (0, 1024), (16, 48), (5, 13)])
def test_arange(start, end):
    out = poisoned(end - start, np.int32)
    launch(_arange_kernel, (1,), out, START=start, END=end)
    np.testing.assert_array_equal(out, np.arange(start, end, dtype=np.int32))


@triton.jit
def _zeros_full_kernel(z_ptr, f_ptr, v, BLOCK: tl.constexpr, VALUE: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    z = tl.zeros([BLOCK], dtype=z_ptr.dtype.element_ty)
    f = tl.full([BLOCK], VALUE, dtype=f_ptr.dtype.element_ty)
    tl.store(z_ptr + offs, z)
    tl.store(f_ptr + offs, f)
    # tl.full with a runtime scalar value, stored to the second half
    g = tl.full([BLOCK], v, dtype=f_ptr.dtype.element_ty)
    tl.store(f_ptr + BLOCK + offs, g)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_zeros_full(dtype):
    value = 3.5 if np.dtype(dtype).kind == "f" else 7
    z = poisoned(32, dtype)
    f = poisoned(64, dtype)
    launch(_zeros_full_kernel, (1,), z, f, 11, BLOCK=32, VALUE=value)
    np.testing.assert_array_equal(z, np.zeros(32, dtype))
    np.testing.assert_array_equal(f[:32], np.full(32, value, dtype))
    np.testing.assert_array_equal(f[32:], np.full(32, 11, dtype))


@triton.jit
def _zeros_2d_kernel(out_ptr, M: tl.constexpr, N: tl.constexpr):
    acc = tl.zeros((M, N), dtype=tl.float32)
    acc += 1.5
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], acc)


def test_zeros_2d_tuple_shape():
    out = poisoned((8, 32), np.float32)
    launch(_zeros_2d_kernel, (1,), out, M=8, N=32)
    np.testing.assert_array_equal(out, np.full((8, 32), 1.5, np.float32))


# ----------------------------------------------------------------------------------------------
# load / store: mask, other, pointer arithmetic


@triton.jit
def _load_other_kernel(x_ptr, y_ptr, n, OTHER: tl.constexpr, BLOCK: tl.constexpr):
    # One program reads the whole buffer plus padding: masked lanes take `other`.
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=OTHER)
    tl.store(y_ptr + offs, x)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("n", [0, 1, 50, 64])
def test_load_other(dtype, n):
    rng = np.random.default_rng(3)
    other = -2.5 if np.dtype(dtype).kind == "f" else (9 if dtype == np.uint8 else -9)
    x = rand(rng, max(n, 1), dtype)
    y = poisoned(64, dtype)
    launch(_load_other_kernel, (1,), x, y, n, OTHER=other, BLOCK=64)
    ref = np.full(64, other, dtype)
    ref[:n] = x[:n]
    np.testing.assert_array_equal(y, ref)


@triton.jit
def _load_other_runtime_kernel(x_ptr, y_ptr, n, fill, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=fill)
    tl.store(y_ptr + offs, x)


def test_load_other_runtime_scalar():
    rng = np.random.default_rng(4)
    x = rand(rng, 20, np.float32)
    y = poisoned(32, np.float32)
    launch(_load_other_runtime_kernel, (1,), x, y, 20, -7.25, BLOCK=32)
    np.testing.assert_array_equal(y, np.concatenate([x, np.full(12, -7.25, np.float32)]))


@triton.jit
def _masked_store_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # store only the even elements; odd ones must keep their old value
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    tl.store(y_ptr + offs, x, mask=(offs < n) & (offs % 2 == 0))


@pytest.mark.parametrize("n", [1, 33, 200])
def test_masked_store_leaves_others(n):
    rng = np.random.default_rng(5)
    x = rand(rng, n, np.int32)
    y = np.full(n, -1, np.int32)
    launch(_masked_store_kernel, (triton.cdiv(n, 32),), x, y, n, BLOCK=32)
    ref = np.where(np.arange(n) % 2 == 0, x, -1).astype(np.int32)
    np.testing.assert_array_equal(y, ref)


@triton.jit
def _reverse_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # pointer arithmetic with a scalar pointer moved first, then negative offsets
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    last = x_ptr + (n - 1)
    x = tl.load(last - offs, mask=mask)
    tl.store(y_ptr + offs, x, mask=mask)


@pytest.mark.parametrize("n", [1, 100, 256])
def test_pointer_arithmetic_reverse(n):
    rng = np.random.default_rng(6)
    x = rand(rng, n, np.float32)
    y = poisoned(n, np.float32)
    launch(_reverse_kernel, (triton.cdiv(n, 64),), x, y, n, BLOCK=64)
    np.testing.assert_array_equal(y, x[::-1])


@triton.jit
def _strided_gather_kernel(x_ptr, y_ptr, n, stride, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    p = x_ptr + offs.to(tl.int64) * stride  # 64-bit offsets
    tl.store(y_ptr + offs, tl.load(p, mask=mask, other=0.0), mask=mask)


def test_pointer_arithmetic_int64_stride():
    rng = np.random.default_rng(7)
    x = rand(rng, 3 * 40, np.float64)
    y = poisoned(40, np.float64)
    launch(_strided_gather_kernel, (1,), x, y, 40, 3, BLOCK=64)
    np.testing.assert_array_equal(y, x[::3])


@triton.jit
def _pointer_increment_kernel(x_ptr, y_ptr, n_chunks, BLOCK: tl.constexpr):
    # the pointer itself is loop-carried
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.int32)
    p = x_ptr + offs
    for _ in range(n_chunks):
        acc += tl.load(p)
        p += BLOCK
    tl.store(y_ptr + offs, acc)


def test_pointer_loop_carried():
    rng = np.random.default_rng(8)
    x = rand(rng, (5, 16), np.int32, -1000, 1000)
    y = poisoned(16, np.int32)
    launch(_pointer_increment_kernel, (1,), x, y, 5, BLOCK=16)
    np.testing.assert_array_equal(y, x.sum(axis=0).astype(np.int32))


@triton.jit
def _scalar_load_store_kernel(x_ptr, y_ptr):
    # scalar (0-d) loads and stores
    pid = tl.program_id(0)
    v = tl.load(x_ptr + pid)
    tl.store(y_ptr + pid, v * 2 + 1)


def test_scalar_load_store():
    rng = np.random.default_rng(9)
    x = rand(rng, 13, np.int64, -10**12, 10**12)
    y = poisoned(13, np.int64)
    launch(_scalar_load_store_kernel, (13,), x, y)
    np.testing.assert_array_equal(y, x * 2 + 1)


# ----------------------------------------------------------------------------------------------
# 2-D tiles, broadcasting, [:, None] / [None, :]


@triton.jit
def _add_2d_kernel(x_ptr, b_ptr, y_ptr, M, N, stride_xm, stride_ym, BM: tl.constexpr, BN: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(x_ptr + rm[:, None] * stride_xm + rn[None, :], mask=mask)
    b = tl.load(b_ptr + rn, mask=rn < N)  # a row vector, broadcast over rows
    y = x + b[None, :] * 2 - rm[:, None]  # column vector of ints broadcast over columns
    tl.store(y_ptr + rm[:, None] * stride_ym + rn[None, :], y, mask=mask)


@pytest.mark.parametrize("M,N", [(1, 1), (16, 32), (37, 70), (64, 5)])
def test_2d_tile_broadcast(M, N):
    rng = np.random.default_rng(10)
    x = rand(rng, (M, N + 3), np.float32)  # padded rows: stride != N
    b = rand(rng, N, np.float32)
    y = poisoned((M, N), np.float32)
    launch(_add_2d_kernel, (triton.cdiv(M, 16), triton.cdiv(N, 32)), x, b, y, M, N, N + 3, N, BM=16, BN=32)
    ref = x[:, :N] + b[None, :] * np.float32(2) - np.arange(M, dtype=np.float32)[:, None]
    np.testing.assert_array_equal(y, ref)


@triton.jit
def _outer_kernel(a_ptr, b_ptr, y_ptr, M: tl.constexpr, N: tl.constexpr):
    a = tl.load(a_ptr + tl.arange(0, M))
    b = tl.load(b_ptr + tl.arange(0, N))
    prod = a[:, None] * b[None, :]
    tl.store(y_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], prod)
    # scalar-with-tile and column-with-row broadcasting in the other order too
    s = tl.load(a_ptr)
    t = s + (b[None, :] - a[:, None])
    tl.store(y_ptr + M * N + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], t)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float16, np.float32], ids=dtype_id)
def test_outer_product_broadcast(dtype):
    rng = np.random.default_rng(11)
    a = rand(rng, 16, dtype, -100, 100)
    b = rand(rng, 8, dtype, -100, 100)
    y = poisoned(2 * 16 * 8, dtype)
    launch(_outer_kernel, (1,), a, b, y, M=16, N=8)
    np.testing.assert_array_equal(y[:128].reshape(16, 8), a[:, None] * b[None, :])
    np.testing.assert_array_equal(y[128:].reshape(16, 8), a[0] + (b[None, :] - a[:, None]))


@triton.jit
def _transpose_kernel(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :], mask=mask)
    # write element (m, n) to (n, m): a column-major store of the tile
    tl.store(y_ptr + rn[None, :] * M + rm[:, None], x, mask=mask)


def test_transpose_via_pointers():
    rng = np.random.default_rng(12)
    x = rand(rng, (13, 29), np.int16)
    y = poisoned((29, 13), np.int16)
    launch(_transpose_kernel, (1,), x, y, 13, 29, BM=16, BN=32)
    np.testing.assert_array_equal(y, x.T)


# ----------------------------------------------------------------------------------------------
# elementwise arithmetic


@triton.jit
def _binary_kernel(x_ptr, y_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    if OP == "add":
        z = x + y
    elif OP == "sub":
        z = x - y
    elif OP == "mul":
        z = x * y
    elif OP == "floordiv":
        z = x // y
    elif OP == "mod":
        z = x % y
    elif OP == "truediv":
        z = x / y
    elif OP == "and":
        z = x & y
    elif OP == "or":
        z = x | y
    elif OP == "xor":
        z = x ^ y
    elif OP == "shl":
        z = x << y
    elif OP == "shr":
        z = x >> y
    elif OP == "max":
        z = tl.maximum(x, y)
    else:
        tl.static_assert(OP == "min")
        z = tl.minimum(x, y)
    tl.store(out_ptr + offs, z, mask=mask)


def _run_binary(op, x, y, out_dtype=None):
    n = x.size
    out = poisoned(n, out_dtype or x.dtype)
    launch(_binary_kernel, (triton.cdiv(n, 128),), x, y, out, n, OP=op, BLOCK=128)
    return out


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "max", "min"])
def test_arith_same_dtype(op, dtype):
    rng = np.random.default_rng(20)
    n = 300
    x = rand(rng, n, dtype)
    y = rand(rng, n, dtype)
    ref = {
        "add": lambda: x + y,
        "sub": lambda: x - y,
        "mul": lambda: x * y,
        "max": lambda: np.maximum(x, y),
        "min": lambda: np.minimum(x, y),
    }
    with np.errstate(over="ignore"):
        expected = ref[op]()  # ints wrap around, like the hardware
    np.testing.assert_array_equal(_run_binary(op, x, y), expected)


def _c_div(a, b):
    """C semantics: quotient truncated toward zero, remainder with the dividend's sign."""
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    q = np.abs(a64) // np.abs(b64) * np.sign(a64) * np.sign(b64)
    return q.astype(a.dtype), (a64 - q * b64).astype(a.dtype)


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("op", ["floordiv", "mod"])
def test_int_div_mod_truncates(op, dtype):
    rng = np.random.default_rng(21)
    n = 257
    if dtype == np.uint8:
        x = rand(rng, n, dtype)
        y = rand(rng, n, dtype, 1, 40)
    else:
        x = rand(rng, n, dtype, -100, 100)
        y = rand(rng, n, dtype, -13, 13)
        y[y == 0] = 7
        # make sure negative / positive mixes are present
        x[:4] = np.array([-7, 7, -7, 7], dtype)
        y[:4] = np.array([2, -2, -2, 2], dtype)
    q, r = _c_div(x, y)
    out = _run_binary(op, x, y)
    np.testing.assert_array_equal(out, q if op == "floordiv" else r)
    if dtype != np.uint8:
        if op == "floordiv":
            np.testing.assert_array_equal(out[:4], np.array([-3, -3, 3, 3], dtype))
        else:
            np.testing.assert_array_equal(out[:4], np.array([-1, 1, -1, 1], dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=dtype_id)
def test_float_mod_is_fmod(dtype):
    rng = np.random.default_rng(22)
    x = rand(rng, 200, dtype, hi=10.0)
    y = rand(rng, 200, dtype, hi=3.0)
    y[np.abs(y) < 0.1] = 0.5
    np.testing.assert_array_equal(_run_binary("mod", x, y), np.fmod(x, y))


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=dtype_id)
def test_float_truediv(dtype):
    rng = np.random.default_rng(23)
    x = rand(rng, 300, dtype)
    y = rand(rng, 300, dtype)
    y[np.abs(y) < 1e-3] = 1.0
    assert_ulp(_run_binary("truediv", x, y), x.astype(np.float64) / y, maxulp=2)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64], ids=dtype_id)
def test_int_truediv_gives_fp32(dtype):
    rng = np.random.default_rng(24)
    x = rand(rng, 100, dtype, -100, 100)
    y = rand(rng, 100, dtype, 1, 50)
    out = _run_binary("truediv", x, y, out_dtype=np.float32)
    assert_ulp(out, x.astype(np.float32).astype(np.float64) / y.astype(np.float32), maxulp=2)


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("op", ["and", "or", "xor"])
def test_bitwise(op, dtype):
    rng = np.random.default_rng(25)
    x = rand(rng, 300, dtype)
    y = rand(rng, 300, dtype)
    ref = {"and": x & y, "or": x | y, "xor": x ^ y}[op]
    np.testing.assert_array_equal(_run_binary(op, x, y), ref)


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("op", ["shl", "shr"])
def test_shifts(op, dtype):
    rng = np.random.default_rng(26)
    bits = np.dtype(dtype).itemsize * 8
    x = rand(rng, 300, dtype)
    y = rand(rng, 300, dtype, 0, bits - 1)
    # >> is arithmetic for signed types and logical for unsigned ones, as numpy does
    ref = np.left_shift(x, y) if op == "shl" else np.right_shift(x, y)
    np.testing.assert_array_equal(_run_binary(op, x, y), ref)


@triton.jit
def _unary_ops_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, -x, mask=mask)
    tl.store(out_ptr + n + offs, ~x, mask=mask)
    tl.store(out_ptr + 2 * n + offs, (x << 2) ^ (x >> 1), mask=mask)
    tl.store(out_ptr + 3 * n + offs, x * 3 - 7, mask=mask)
    tl.store(out_ptr + 4 * n + offs, 100 - x % 9 + x // 4, mask=mask)


@pytest.mark.parametrize("dtype", SIGNED_DTYPES, ids=dtype_id)
def test_int_unary_and_literal_operands(dtype):
    rng = np.random.default_rng(27)
    n = 70
    x = rand(rng, n, dtype, -120, 120)
    out = poisoned(5 * n, dtype)
    launch(_unary_ops_kernel, (1,), x, out, n, BLOCK=128)
    q4, _ = _c_div(x, np.full(n, 4, dtype))
    _, r9 = _c_div(x, np.full(n, 9, dtype))
    with np.errstate(over="ignore"):
        refs = [-x, ~x, (x << 2) ^ (x >> 1), x * dtype(3) - dtype(7), (dtype(100) - r9 + q4).astype(dtype)]
    for i, ref in enumerate(refs):
        np.testing.assert_array_equal(out[i * n:(i + 1) * n], ref, err_msg=f"expression {i}")


@triton.jit
def _compare_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + 0 * n + offs, (x < y).to(tl.int8), mask=mask)
    tl.store(out_ptr + 1 * n + offs, (x <= y).to(tl.int8), mask=mask)
    tl.store(out_ptr + 2 * n + offs, (x > y).to(tl.int8), mask=mask)
    tl.store(out_ptr + 3 * n + offs, (x >= y).to(tl.int8), mask=mask)
    tl.store(out_ptr + 4 * n + offs, (x == y).to(tl.int8), mask=mask)
    tl.store(out_ptr + 5 * n + offs, (x != y).to(tl.int8), mask=mask)
    # logical combinations of comparisons
    tl.store(out_ptr + 6 * n + offs, ((x < y) & (x != 0) | (y == 0)).to(tl.int8), mask=mask)
    tl.store(out_ptr + 7 * n + offs, tl.where((x > y) ^ (y > 0), 1, 0).to(tl.int8), mask=mask)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_comparisons(dtype):
    rng = np.random.default_rng(28)
    n = 100
    x = rand(rng, n, dtype, 0 if dtype == np.uint8 else -3, 3)
    y = rand(rng, n, dtype, 0 if dtype == np.uint8 else -3, 3)
    if np.dtype(dtype).kind == "f":
        x = np.round(x).astype(dtype)  # many equal pairs
        y = np.round(y).astype(dtype)
    # big values so that unsigned comparison differs from signed
    x[-1] = np.iinfo(dtype).max if np.dtype(dtype).kind in "iu" else 1e4
    y[-1] = 1
    out = poisoned(8 * n, np.int8)
    launch(_compare_kernel, (1,), x, y, out, n, BLOCK=128)
    refs = [x < y, x <= y, x > y, x >= y, x == y, x != y, ((x < y) & (x != 0)) | (y == 0), (x > y) ^ (y > 0)]
    for i, ref in enumerate(refs):
        np.testing.assert_array_equal(out[i * n:(i + 1) * n], ref.astype(np.int8), err_msg=f"comparison {i}")


@triton.jit
def _where_kernel(c_ptr, x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    c = tl.load(c_ptr + offs, mask=mask, other=0)
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.where(c > 0, x, y), mask=mask)
    tl.store(out_ptr + n + offs, tl.where(c > 0, x, 0), mask=mask)  # scalar "else"
    tl.store(out_ptr + 2 * n + offs, tl.where(c != 0, 1, y), mask=mask)  # scalar "then"


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_where(dtype):
    rng = np.random.default_rng(29)
    n = 77
    c = rand(rng, n, np.int32, -1, 1)
    x = rand(rng, n, dtype)
    y = rand(rng, n, dtype)
    out = poisoned(3 * n, dtype)
    launch(_where_kernel, (1,), c, x, y, out, n, BLOCK=128)
    np.testing.assert_array_equal(out[:n], np.where(c > 0, x, y))
    np.testing.assert_array_equal(out[n:2 * n], np.where(c > 0, x, dtype(0)))
    np.testing.assert_array_equal(out[2 * n:], np.where(c != 0, dtype(1), y))


@triton.jit
def _where_2d_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    # condition is a broadcast (M, 1) column against an (M, N) tile and a (1, N) row
    y = tl.where(rm[:, None] > 3, x, rn[None, :].to(tl.float32))
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], y)


def test_where_broadcasts():
    rng = np.random.default_rng(30)
    x = rand(rng, (8, 16), np.float32)
    out = poisoned((8, 16), np.float32)
    launch(_where_2d_kernel, (1,), x, out, M=8, N=16)
    ref = np.where(np.arange(8)[:, None] > 3, x, np.arange(16, dtype=np.float32)[None, :])
    np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("dtype", [np.float16, np.float32], ids=dtype_id)
def test_fp_arith_rounding_exact(dtype):
    # one fp16/fp32 add/sub/mul is correctly rounded: it must match numpy bit for bit
    rng = np.random.default_rng(31)
    x = rand(rng, 512, dtype, hi=100.0)
    y = rand(rng, 512, dtype, hi=0.01)
    for op, ref in (("add", x + y), ("sub", x - y), ("mul", x * y)):
        np.testing.assert_array_equal(_run_binary(op, x, y), ref, err_msg=op)


@needs_torch
@interpreter_gap
@pytest.mark.parametrize("op", ["add", "sub", "mul", "max", "min"])
def test_bf16_arith(op):
    g = torch.Generator().manual_seed(32)
    x = torch.randn(300, generator=g).to(torch.bfloat16)
    y = torch.randn(300, generator=g).to(torch.bfloat16)
    out = torch.full((300,), float("nan"), dtype=torch.bfloat16)
    launch(_binary_kernel, (3,), x, y, out, 300, OP=op, BLOCK=128)
    ref = {"add": x + y, "sub": x - y, "mul": x * y, "max": torch.maximum(x, y), "min": torch.minimum(x, y)}[op]
    assert torch.equal(out, ref), (out, ref)


# ----------------------------------------------------------------------------------------------
# math


@triton.jit
def _math_kernel(x_ptr, out_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1)
    if FN == "exp":
        y = tl.exp(x)
    elif FN == "exp2":
        y = tl.exp2(x)
    elif FN == "log":
        y = tl.log(x)
    elif FN == "log2":
        y = tl.log2(x)
    elif FN == "sqrt":
        y = tl.sqrt(x)
    elif FN == "rsqrt":
        y = tl.rsqrt(x)
    elif FN == "abs":
        y = tl.abs(x)
    elif FN == "sigmoid":
        y = tl.sigmoid(x)
    elif FN == "floor":
        y = tl.floor(x)
    elif FN == "ceil":
        y = tl.ceil(x)
    else:
        tl.static_assert(FN == "exp_method")
        y = x.exp()  # the tensor-method spelling
    tl.store(out_ptr + offs, y, mask=mask)


def _math_ref(fn, x64):
    return {
        "exp": np.exp,
        "exp_method": np.exp,
        "exp2": np.exp2,
        "log": np.log,
        "log2": np.log2,
        "sqrt": np.sqrt,
        "rsqrt": lambda v: 1.0 / np.sqrt(v),
        "abs": np.abs,
        "sigmoid": lambda v: 1.0 / (1.0 + np.exp(-v)),
        "floor": np.floor,
        "ceil": np.ceil,
    }[fn](x64)


# A CPU implementation is within a few ulps; GPUs use faster approximations (ex2.approx, ...),
# so the "cuda" cross-check allows more.
MATH_ULP = 16 if AGAINST_TRITON == "cuda" else 4
MATH_FNS = ["exp", "exp2", "log", "log2", "sqrt", "rsqrt", "abs", "sigmoid", "floor", "ceil"]


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=dtype_id)
@pytest.mark.parametrize("fn", MATH_FNS)
@pytest.mark.parametrize("n", [5, 300])
def test_math(fn, dtype, n):
    rng = np.random.default_rng(40)
    if fn in ("log", "log2", "sqrt", "rsqrt"):
        x = (rng.random(n) * 50 + 1e-3).astype(dtype)
    else:
        x = rand(rng, n, dtype, hi=4.0)
    out = poisoned(n, dtype)
    launch(_math_kernel, (triton.cdiv(n, 128),), x, out, n, FN=fn, BLOCK=128)
    # the reference is computed in float64 (or exactly) and rounded once: a good implementation
    # is within a couple of ulps of it
    maxulp = 0 if fn in ("abs", "floor", "ceil") else MATH_ULP
    assert_ulp(out, _math_ref(fn, x.astype(np.float64)), maxulp)


@interpreter_gap
def test_math_tensor_method():
    rng = np.random.default_rng(45)
    x = rand(rng, 100, np.float32, hi=4.0)
    out = poisoned(100, np.float32)
    launch(_math_kernel, (1,), x, out, 100, FN="exp_method", BLOCK=128)
    assert_ulp(out, np.exp(x.astype(np.float64)), MATH_ULP)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.float16], ids=dtype_id)
def test_abs_other_dtypes(dtype):
    rng = np.random.default_rng(41)
    x = rand(rng, 200, dtype, -127, 127)
    out = poisoned(200, dtype)
    launch(_math_kernel, (2,), x, out, 200, FN="abs", BLOCK=128)
    np.testing.assert_array_equal(out, np.abs(x))


@triton.jit
def _half_math_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # fp16/bf16 math the Triton way: compute in fp32, round back on the store's cast
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0).to(tl.float32)
    tl.store(out_ptr + offs, tl.exp(x).to(out_ptr.dtype.element_ty), mask=mask)
    tl.store(out_ptr + n + offs, tl.sigmoid(x).to(out_ptr.dtype.element_ty), mask=mask)
    tl.store(out_ptr + 2 * n + offs, tl.sqrt(tl.abs(x)), mask=mask)  # implicit cast on store


def test_fp16_math_through_fp32():
    rng = np.random.default_rng(42)
    n = 100
    x = rand(rng, n, np.float16, hi=3.0)
    out = poisoned(3 * n, np.float16)
    launch(_half_math_kernel, (1,), x, out, n, BLOCK=128)
    x64 = x.astype(np.float64)
    assert_ulp(out[:n], np.exp(x64).astype(np.float32), maxulp=1)
    assert_ulp(out[n:2 * n], (1 / (1 + np.exp(-x64))).astype(np.float32), maxulp=1)
    assert_ulp(out[2 * n:], np.sqrt(np.abs(x64)).astype(np.float32), maxulp=1)


@needs_torch
def test_bf16_math_through_fp32():
    g = torch.Generator().manual_seed(43)
    n = 100
    x = (torch.randn(n, generator=g) * 3).to(torch.bfloat16)
    out = torch.full((3 * n,), float("nan"), dtype=torch.bfloat16)
    launch(_half_math_kernel, (1,), x, out, n, BLOCK=128)
    xf = x.double()
    refs = [torch.exp(xf), torch.sigmoid(xf), torch.sqrt(xf.abs())]
    for i, ref in enumerate(refs):
        got = out[i * n:(i + 1) * n].double()
        ref = ref.float().to(torch.bfloat16).double()
        # within one bf16 ulp (2^-7 relative)
        assert torch.allclose(got, ref, rtol=2 ** -7, atol=0), (i, got, ref)


@triton.jit
def _max_min_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x, 0.5), mask=mask)  # with a literal
    tl.store(out_ptr + n + offs, tl.minimum(tl.maximum(x, -1.0), y), mask=mask)
    tl.store(out_ptr + 2 * n + offs, tl.minimum(x, y) + tl.maximum(x, y), mask=mask)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_maximum_minimum_literals(dtype):
    rng = np.random.default_rng(44)
    n = 90
    x = rand(rng, n, dtype)
    y = rand(rng, n, dtype)
    out = poisoned(3 * n, dtype)
    launch(_max_min_kernel, (1,), x, y, out, n, BLOCK=128)
    np.testing.assert_array_equal(out[:n], np.maximum(x, dtype(0.5)))
    np.testing.assert_array_equal(out[n:2 * n], np.minimum(np.maximum(x, dtype(-1.0)), y))
    np.testing.assert_array_equal(out[2 * n:], np.minimum(x, y) + np.maximum(x, y))


# ----------------------------------------------------------------------------------------------
# reductions


@triton.jit
def _reduce_2d_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, OP: tl.constexpr, AXIS: tl.constexpr,
                      KEEP: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    if OP == "sum":
        r = tl.sum(x, axis=AXIS, keep_dims=KEEP)
    elif OP == "max":
        r = tl.max(x, axis=AXIS, keep_dims=KEEP)
    elif OP == "min":
        r = tl.min(x, axis=AXIS, keep_dims=KEEP)
    elif OP == "argmax":
        r = tl.argmax(x, axis=AXIS, keep_dims=KEEP)
    else:
        tl.static_assert(OP == "argmin")
        r = tl.argmin(x, axis=AXIS, keep_dims=KEEP)
    # the result's shape decides how it is stored
    if AXIS is None:
        if KEEP:
            tl.static_assert(len(r.shape) == 2)
            tl.store(out_ptr + tl.arange(0, 1)[:, None] + tl.arange(0, 1)[None, :], r)
        else:
            tl.store(out_ptr, r)
    elif AXIS == 0:
        if KEEP:
            tl.static_assert(r.shape[0] == 1)
            tl.store(out_ptr + tl.arange(0, 1)[:, None] + rn[None, :], r)
        else:
            tl.store(out_ptr + rn, r)
    else:
        if KEEP:
            tl.static_assert(r.shape[1] == 1)
            tl.store(out_ptr + rm[:, None] + tl.arange(0, 1)[None, :], r)
        else:
            tl.store(out_ptr + rm, r)


REDUCE_DTYPES = [np.int8, np.int32, np.int64, np.uint8, np.float16, np.float32, np.float64]


def _reduce_ref(op, x, axis, keep):
    if op == "sum":
        wide = np.int64 if x.dtype.kind in "iu" else np.float64
        r = x.astype(wide).sum(axis=axis, keepdims=keep)
    else:
        fn = {"max": np.max, "min": np.min, "argmax": np.argmax, "argmin": np.argmin}[op]
        if op.startswith("arg"):
            r = fn(x, axis=axis, keepdims=keep)  # numpy also picks the first of equal values
        else:
            r = fn(x, axis=axis, keepdims=keep)
    return np.asarray(r)


@pytest.mark.parametrize("keep", [False, True])
@pytest.mark.parametrize("axis", [0, 1, None], ids=str)
@pytest.mark.parametrize("dtype", REDUCE_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("op", ["sum", "max", "min"])
def test_reduce_2d(op, dtype, axis, keep):
    rng = np.random.default_rng(50)
    M, N = 8, 32
    if np.dtype(dtype).kind == "f":
        x = rand(rng, (M, N), dtype)
    else:
        lo = 0 if dtype == np.uint8 else -100
        x = rand(rng, (M, N), dtype, lo, 100)
    ref = _reduce_ref(op, x, axis, keep)
    # sum of ints narrower than 32 bits widens to (u)int32: store to an int32 buffer to see it
    if op == "sum" and np.dtype(dtype).kind in "iu":
        out_dtype = np.int64 if dtype == np.int64 else np.int32
    else:
        out_dtype = dtype
    out = poisoned(ref.shape if ref.shape else (1,), out_dtype)
    launch(_reduce_2d_kernel, (1,), x, out, M=M, N=N, OP=op, AXIS=axis, KEEP=keep)
    got = out.reshape(ref.shape)
    if op == "sum" and dtype == np.float16:
        np.testing.assert_allclose(got.astype(np.float64), ref, rtol=2e-3, atol=2e-2)
    elif op == "sum" and np.dtype(dtype).kind == "f":
        np.testing.assert_allclose(got, ref, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-5)
    else:
        np.testing.assert_array_equal(got, ref.astype(out_dtype))


@pytest.mark.parametrize("keep", [False, True])
@pytest.mark.parametrize("axis", [0, 1], ids=str)
@pytest.mark.parametrize("dtype", REDUCE_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_arg_reduce_2d(op, dtype, axis, keep):
    rng = np.random.default_rng(51)
    M, N = 16, 16
    # few distinct values: many ties, and the first (smallest) index must win
    x = rand(rng, (M, N), np.int64, 0, 5).astype(dtype)
    ref = _reduce_ref(op, x, axis, keep).astype(np.int32)
    out = poisoned(ref.shape, np.int32)
    launch(_reduce_2d_kernel, (1,), x, out, M=M, N=N, OP=op, AXIS=axis, KEEP=keep)
    np.testing.assert_array_equal(out, ref)


@triton.jit
def _row_reduce_kernel(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    # one row per program, masked tail: sum/max/min/argmax of a row of any length <= BLOCK
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * stride + offs, mask=mask, other=0.0)
    xm = tl.load(x_ptr + row * stride + offs, mask=mask, other=float("-inf"))
    xn = tl.load(x_ptr + row * stride + offs, mask=mask, other=float("inf"))
    tl.store(out_ptr + row * 4 + 0, tl.sum(x, axis=0))
    tl.store(out_ptr + row * 4 + 1, tl.max(xm, axis=0))
    tl.store(out_ptr + row * 4 + 2, tl.min(xn, axis=0))
    tl.store(out_ptr + row * 4 + 3, tl.argmax(xm, axis=0).to(tl.float32))


@pytest.mark.parametrize("n_cols", [1, 7, 64, 100])
def test_reduce_rows_masked(n_cols):
    rng = np.random.default_rng(52)
    rows = 5
    x = rand(rng, (rows, n_cols), np.float32)
    out = poisoned((rows, 4), np.float32)
    launch(_row_reduce_kernel, (rows,), x, out, n_cols, n_cols, BLOCK=triton.next_power_of_2(n_cols))
    np.testing.assert_allclose(out[:, 0], x.sum(axis=1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(out[:, 1], x.max(axis=1))
    np.testing.assert_array_equal(out[:, 2], x.min(axis=1))
    np.testing.assert_array_equal(out[:, 3], x.argmax(axis=1).astype(np.float32))


@triton.jit
def _reduce_1d_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.store(out_ptr + 0, tl.sum(x))  # axis=None on a 1-D tensor
    tl.store(out_ptr + 1, x.sum(axis=0))  # method spelling
    tl.store(out_ptr + 2, tl.max(x, 0))
    tl.store(out_ptr + 3, x.min())
    tl.store(out_ptr + 4, tl.argmin(x, 0).to(tl.int64))
    s = tl.sum(x, axis=0, keep_dims=True)
    tl.static_assert(s.shape[0] == 1)
    tl.store(out_ptr + 5 + tl.arange(0, 1), s)


def test_reduce_1d_spellings():
    rng = np.random.default_rng(53)
    x = rand(rng, 256, np.int64, -10**9, 10**9)
    out = poisoned(6, np.int64)
    launch(_reduce_1d_kernel, (1,), x, out, BLOCK=256)
    np.testing.assert_array_equal(out, [x.sum(), x.sum(), x.max(), x.min(), x.argmin(), x.sum()])


# ----------------------------------------------------------------------------------------------
# casts


@triton.jit
def _cast_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = x.to(y_ptr.dtype.element_ty)
    tl.static_assert(y.dtype == y_ptr.dtype.element_ty)
    tl.store(y_ptr + offs, y, mask=mask)


def _cast_input(rng, src, dst, n):
    src, dst = np.dtype(src), np.dtype(dst)
    if src.kind == "f":
        if dst.kind in "iu":
            info = np.iinfo(dst)
            lo, hi = max(info.min, -60000), min(info.max, 60000)  # fp16 holds up to 65504
            x = rng.uniform(lo, hi, n)
            x[:6] = [-3.7, -0.5, 0.5, 2.99, 0.0, 1.0]  # truncation toward zero
            if dst.kind == "u":
                x[:2] = [3.7, 0.25]
            with np.errstate(over="ignore"):
                x = x.astype(src)
            # rounding to src may leave the range of dst (32767 -> 32768.0 in fp16): out-of-range
            # float -> int conversions are undefined, so such values are replaced
            x[(x.astype(np.float64) < lo) | (x.astype(np.float64) > hi)] = 0
            return x
        # float -> float: a wide range, including fp16 overflow, subnormals and halfway cases
        x = rng.standard_normal(n) * np.exp2(rng.integers(-30, 30, n))
        with np.errstate(over="ignore"):
            x = x.astype(src)  # may overflow to inf in fp16: that is part of the test
        if src == np.float64:
            # rounding straight to fp16 differs from rounding through fp32 here
            x[:2] = [1 + 2.0 ** -11 + 2.0 ** -40, -(1 + 2.0 ** -11 + 2.0 ** -40)]
        if src == np.float32:
            x[:2] = [np.float32(1 + 2.0 ** -11), np.float32(1 + 3 * 2.0 ** -11)]  # fp16 ties to even
        return x
    # int sources: the full range (ints wrap and rounding to float is visible)
    x = rand(rng, n, src)
    if dst.kind == "f" and dst.itemsize == 2:
        x = rand(rng, n, src, max(np.iinfo(src).min, -60000), min(np.iinfo(src).max, 60000))
    return x


@pytest.mark.parametrize("dst", ALL_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("src", ALL_DTYPES, ids=dtype_id)
def test_cast(src, dst):
    rng = np.random.default_rng(60)
    n = 200
    x = _cast_input(rng, src, dst, n)
    y = poisoned(n, dst)
    launch(_cast_kernel, (2,), x, y, n, BLOCK=128)
    with np.errstate(over="ignore", invalid="ignore"):
        ref = x.astype(dst)
    np.testing.assert_array_equal(y, ref)


BF16_PARTNERS = ["int8", "int16", "int32", "int64", "uint8", "float16", "float32", "float64"]


@needs_torch
@interpreter_gap
@pytest.mark.parametrize("other", BF16_PARTNERS)
@pytest.mark.parametrize("direction", ["to_bf16", "from_bf16"])
def test_cast_bf16(other, direction):
    rng = np.random.default_rng(61)
    n = 200
    tdt = getattr(torch, other)
    if direction == "to_bf16":
        x = torch.from_numpy(_cast_input(rng, np.dtype(other), np.float16, n)).to(tdt)
        if tdt in (torch.float32, torch.float64):
            x = x.to(torch.float64) * 1e3  # beyond fp16's range; bf16 keeps fp32's exponent
            x = x.to(tdt)
        y = torch.full((n,), float("nan"), dtype=torch.bfloat16)
        ref = x.to(torch.bfloat16)
    else:
        x = (torch.from_numpy(rng.standard_normal(n)) * 100).to(torch.bfloat16)
        if not tdt.is_floating_point:
            lo, hi = (0, 250) if tdt == torch.uint8 else (-120, 120)
            x = x.clamp(lo, hi)
        y = torch.full((n,), 123, dtype=tdt) if not tdt.is_floating_point else torch.full((n,), float("nan"), dtype=tdt)
        ref = x.to(tdt)
    launch(_cast_kernel, (2,), x, y, n, BLOCK=128)
    assert torch.equal(y, ref), (x, y, ref)


@triton.jit
def _bitcast_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, x.to(y_ptr.dtype.element_ty, bitcast=True), mask=mask)


@pytest.mark.parametrize("src,dst", [(np.float32, np.int32), (np.int32, np.float32), (np.float16, np.int16),
                                     (np.float64, np.int64), (np.int8, np.uint8)], ids=str)
def test_bitcast(src, dst):
    rng = np.random.default_rng(62)
    x = rand(rng, 100, src, -100, 100) if np.dtype(src).kind in "iu" else rand(rng, 100, src)
    y = poisoned(100, dst)
    launch(_bitcast_kernel, (1,), x, y, 100, BLOCK=128)
    np.testing.assert_array_equal(y.view(np.uint8), x.view(np.uint8))


# ----------------------------------------------------------------------------------------------
# host helpers


def test_host_cdiv_next_power_of_2():
    assert triton.cdiv(0, 4) == 0
    assert triton.cdiv(1, 4) == 1
    assert triton.cdiv(8, 4) == 2
    assert triton.cdiv(9, 4) == 3
    assert [triton.next_power_of_2(v) for v in (1, 2, 3, 5, 64, 65, 1000)] == [1, 2, 4, 8, 64, 128, 1024]


# ----------------------------------------------------------------------------------------------
# shape ops, 3-D tiles, negative axes


@triton.jit
def _shape_ops_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])  # (M, N)
    t = tl.trans(x)  # (N, M)
    tl.store(out_ptr + rn[:, None] * M + rm[None, :], t)
    flat = tl.reshape(x, (M * N,))
    tl.store(out_ptr + M * N + tl.arange(0, M * N), flat * 2)
    col = tl.expand_dims(rm, 1)  # (M, 1)
    b = tl.broadcast_to(col, (M, N))
    tl.store(out_ptr + 2 * M * N + rm[:, None] * N + rn[None, :], b.to(x.dtype))
    z = tl.zeros_like(x) + 3
    tl.store(out_ptr + 3 * M * N + rm[:, None] * N + rn[None, :], z)
    r = tl.sum(x, axis=-1)  # negative axis: the last one
    tl.store(out_ptr + 4 * M * N + rm, r)


def test_shape_ops():
    rng = np.random.default_rng(90)
    M, N = 8, 16
    x = rand(rng, (M, N), np.int32, -1000, 1000)
    out = poisoned(4 * M * N + M, np.int32)
    launch(_shape_ops_kernel, (1,), x, out, M=M, N=N)
    np.testing.assert_array_equal(out[:M * N].reshape(N, M), x.T)
    np.testing.assert_array_equal(out[M * N:2 * M * N], x.ravel() * 2)
    np.testing.assert_array_equal(out[2 * M * N:3 * M * N].reshape(M, N), np.repeat(np.arange(M)[:, None], N, 1))
    np.testing.assert_array_equal(out[3 * M * N:4 * M * N], np.full(M * N, 3))
    np.testing.assert_array_equal(out[4 * M * N:], x.sum(axis=1))


@triton.jit
def _tile_3d_kernel(x_ptr, out_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr):
    ra = tl.arange(0, A)
    rb = tl.arange(0, B)
    rc = tl.arange(0, C)
    offs = ra[:, None, None] * (B * C) + rb[None, :, None] * C + rc[None, None, :]
    x = tl.load(x_ptr + offs)  # (A, B, C)
    y = x * rc[None, None, :] + ra[:, None, None]
    tl.store(out_ptr + offs, y)
    s2 = tl.sum(y, axis=2)  # (A, B)
    tl.store(out_ptr + A * B * C + ra[:, None] * B + rb[None, :], s2)
    m0 = tl.max(y, axis=0)  # (B, C)
    tl.store(out_ptr + A * B * C + A * B + rb[:, None] * C + rc[None, :], m0)
    s1 = tl.sum(y, axis=1, keep_dims=True)  # (A, 1, C)
    tl.store(out_ptr + A * B * C + A * B + B * C + ra[:, None, None] * C + tl.arange(0, 1)[None, :, None]
             + rc[None, None, :], s1)


def test_3d_tiles():
    rng = np.random.default_rng(91)
    A, B, C = 2, 4, 8
    x = rand(rng, (A, B, C), np.int32, -50, 50)
    out = poisoned(A * B * C + A * B + B * C + A * C, np.int32)
    launch(_tile_3d_kernel, (1,), x, out, A=A, B=B, C=C)
    y = x * np.arange(C)[None, None, :] + np.arange(A)[:, None, None]
    n = A * B * C
    np.testing.assert_array_equal(out[:n].reshape(A, B, C), y)
    np.testing.assert_array_equal(out[n:n + A * B].reshape(A, B), y.sum(axis=2))
    np.testing.assert_array_equal(out[n + A * B:n + A * B + B * C].reshape(B, C), y.max(axis=0))
    np.testing.assert_array_equal(out[n + A * B + B * C:].reshape(A, C), y.sum(axis=1))


@triton.jit
def _sum_dtype_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    s = tl.sum(x, axis=0, dtype=tl.float32)  # accumulate fp16 in fp32
    tl.static_assert(s.dtype == tl.float32)
    tl.store(out_ptr, s)


def test_sum_with_dtype():
    rng = np.random.default_rng(92)
    x = rand(rng, 1024, np.float16)
    out = poisoned(1, np.float32)
    launch(_sum_dtype_kernel, (1,), x, out, BLOCK=1024)
    np.testing.assert_allclose(out[0], x.astype(np.float64).sum(), rtol=1e-5, atol=1e-4)


@triton.jit
def _narrow_sum_kernel(out_ptr, IN: tl.constexpr, OUT: tl.constexpr):
    x = tl.full((32, 32), 1, dtype=IN)
    s = tl.sum(x, dtype=OUT)
    if OUT is not None:
        tl.static_assert(s.dtype == OUT)
    tl.store(out_ptr, s.to(tl.int32))


@pytest.mark.parametrize("in_dtype,out_dtype,want", [
    ("int1", None, 1024), ("int1", "int1", 0), ("int8", "int8", 0), ("int8", None, 1024),
    ("int16", "int16", 1024), ("int32", "int8", 0), ("uint8", "uint8", 0)])
def test_sum_in_an_explicit_narrow_integer_wraps(in_dtype, out_dtype, want):
    # Triton's tl.sum with dtype= accumulates in that dtype: 1024 ones wrap to 0 in int8 and
    # in int1 (modulo 2); without dtype, small integers sum in int32.
    out = np.full(1, -7, np.int32)
    launch(_narrow_sum_kernel, (1,), out, IN=getattr(tl, in_dtype),
           OUT=getattr(tl, out_dtype) if out_dtype else None)
    assert out[0] == want


# ----------------------------------------------------------------------------------------------
# more integer dtypes


@pytest.mark.parametrize("dtype", [np.uint16, np.uint32, np.uint64], ids=dtype_id)
def test_wide_unsigned(dtype):
    rng = np.random.default_rng(93)
    n = 150
    x = rand(rng, n, dtype)
    y = rand(rng, n, dtype, 1, 1000)
    out = poisoned(n, dtype)
    launch(_copy_kernel, (3,), x, out, n, BLOCK=64)
    np.testing.assert_array_equal(out, x)
    np.testing.assert_array_equal(_run_binary("add", x, y), x + y)
    np.testing.assert_array_equal(_run_binary("floordiv", x, y), x // y)
    np.testing.assert_array_equal(_run_binary("mod", x, y), x % y)
    np.testing.assert_array_equal(_run_binary("shr", x, (y % 8).astype(dtype)), x >> (y % 8))
    np.testing.assert_array_equal(_run_binary("max", x, y), np.maximum(x, y))


# ----------------------------------------------------------------------------------------------
# torch CPU tensors as arguments


@needs_torch
def test_torch_cpu_tensors():
    g = torch.Generator().manual_seed(97)
    x = torch.randn(40, 50, generator=g)
    b = torch.randn(30, generator=g)
    xv = x[5:21, 10:40]  # a strided view: its strides are passed explicitly
    y = torch.full((16, 30), float("nan"))
    launch(_add_2d_kernel, (1, 1), xv, b, y, 16, 30, xv.stride(0), y.stride(0), BM=16, BN=32)
    ref = xv + b[None, :] * 2 - torch.arange(16, dtype=torch.float32)[:, None]
    assert torch.equal(y, ref), (y - ref).abs().max()


# ----------------------------------------------------------------------------------------------
# NaN semantics of maximum / minimum / max


@triton.jit
def _nan_kernel(x_ptr, y_ptr, out_ptr, B: tl.constexpr):
    r = tl.arange(0, B)
    x = tl.load(x_ptr + r)
    y = tl.load(y_ptr + r)
    tl.store(out_ptr + r, tl.maximum(x, y))  # default: the non-NaN operand wins
    tl.store(out_ptr + B + r, tl.minimum(x, y))
    tl.store(out_ptr + 2 * B + r, tl.maximum(x, y, propagate_nan=tl.PropagateNan.ALL))
    tl.store(out_ptr + 3 * B + r, tl.minimum(x, y, propagate_nan=tl.PropagateNan.ALL))


@interpreter_gap
def test_maximum_minimum_nan():
    x = np.array([1, np.nan, 3, np.nan], np.float32)
    y = np.array([np.nan, 2, 1, np.nan], np.float32)
    out = np.full(16, -7, np.float32)
    launch(_nan_kernel, (1,), x, y, out, B=4)
    np.testing.assert_array_equal(out[0:4], np.fmax(x, y))
    np.testing.assert_array_equal(out[4:8], np.fmin(x, y))
    np.testing.assert_array_equal(out[8:12], np.maximum(x, y))
    np.testing.assert_array_equal(out[12:16], np.minimum(x, y))


# ----------------------------------------------------------------------------------------------
# scalar operands of memory ops, pointer select, empty grid


@triton.jit
def _scalar_operands_kernel(x_ptr, y_ptr, out_ptr, n, B: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, B)
    tl.store(out_ptr + offs, 0.5, mask=offs < n)  # a scalar value stored to a block of pointers
    v = tl.load(x_ptr + offs, mask=pid < 1, other=-1.0)  # a scalar mask
    tl.store(out_ptr + B + offs, v)
    p = tl.where(offs % 2 == 0, x_ptr + offs, y_ptr + offs)  # select between pointers
    tl.store(out_ptr + 2 * B + offs, tl.load(p))
    tl.store(out_ptr + 3 * B + offs, tl.load(x_ptr + offs, mask=offs < n, other=7.0), mask=pid == 0)


def test_scalar_mask_value_and_pointer_select():
    x = np.arange(8, dtype=np.float32)
    y = -np.arange(8, dtype=np.float32)
    out = poisoned(32, np.float32)
    out[5:8] = 9.0
    launch(_scalar_operands_kernel, (1,), x, y, out, 5, B=8)
    np.testing.assert_array_equal(out[:8], [0.5] * 5 + [9.0] * 3)
    np.testing.assert_array_equal(out[8:16], x)
    np.testing.assert_array_equal(out[16:24], np.where(np.arange(8) % 2 == 0, x, y))
    np.testing.assert_array_equal(out[24:], [0, 1, 2, 3, 4, 7, 7, 7])


def test_empty_grid_runs_nothing():
    x = np.arange(8, dtype=np.float32)
    out = poisoned(32, np.float32)
    launch(_scalar_operands_kernel, (0,), x, x, out, 5, B=8)
    assert np.isnan(out).all()


@triton.jit
def _more_math_kernel(x_ptr, out_ptr, B: tl.constexpr):
    r = tl.arange(0, B)
    x = tl.load(x_ptr + r)
    tl.store(out_ptr + 0 * B + r, tl.math.exp(x))  # the tl.math spelling
    tl.store(out_ptr + 1 * B + r, tl.fma(x, x, 1.0))
    tl.store(out_ptr + 2 * B + r, tl.clamp(x, -0.5, 0.5))
    tl.store(out_ptr + 3 * B + r, tl.sqrt_rn(tl.abs(x)))
    tl.store(out_ptr + 4 * B + r, tl.div_rn(x, 3.0))
    tl.store(out_ptr + 5 * B + r, tl.sin(x))
    tl.store(out_ptr + 6 * B + r, tl.cos(x))
    tl.store(out_ptr + 7 * B + r, tl.erf(x))
    tl.store(out_ptr + 8 * B + r, tl.cast(x, tl.int32).to(tl.float32))


def test_more_math():
    import math
    x = np.linspace(-2, 2, 32).astype(np.float32)
    out = poisoned(9 * 32, np.float32)
    launch(_more_math_kernel, (1,), x, out, B=32)
    x64 = x.astype(np.float64)
    o = out.reshape(9, 32)
    assert_ulp(o[0], np.exp(x64), MATH_ULP)
    assert_ulp(o[1], x64 * x64 + 1, 1)  # fused: one rounding
    np.testing.assert_array_equal(o[2], np.clip(x, -0.5, 0.5))
    assert_ulp(o[3], np.sqrt(np.abs(x64)), 0)  # correctly rounded
    assert_ulp(o[4], x64 / 3, 0)  # correctly rounded
    np.testing.assert_allclose(o[5], np.sin(x64), rtol=0, atol=2e-6)
    np.testing.assert_allclose(o[6], np.cos(x64), rtol=0, atol=2e-6)
    np.testing.assert_allclose(o[7], [math.erf(v) for v in x64], rtol=0, atol=2e-6)
    np.testing.assert_array_equal(o[8], np.trunc(x))


# ----------------------------------------------------------------------------------------------
# IEEE special values: no algebraic "simplification" may change them


@triton.jit
def _ieee_kernel(x_ptr, out_ptr, B: tl.constexpr):
    r = tl.arange(0, B)
    x = tl.load(x_ptr + r)
    tl.store(out_ptr + 0 * B + r, x * 0.0)  # not 0 for inf/nan, -0 for negative x
    tl.store(out_ptr + 1 * B + r, x + 0.0)  # -0 + 0 = +0
    tl.store(out_ptr + 2 * B + r, x - x)  # nan for inf
    tl.store(out_ptr + 3 * B + r, x / x)
    tl.store(out_ptr + 4 * B + r, (x == x).to(tl.float32))  # false for nan
    tl.store(out_ptr + 5 * B + r, (x != x).to(tl.float32))
    tl.store(out_ptr + 6 * B + r, x * 1.0 - 0.0)  # identity, keeps -0
    tl.store(out_ptr + 7 * B + r, -(0.0 - x))  # Triton's -y is 0 - y: never -0
    tl.store(out_ptr + 8 * B + r, (x < 1.0).to(tl.float32) + (x >= 1.0).to(tl.float32))  # 0 for nan


def test_ieee_special_values():
    vals = [0.0, -0.0, 1.0, -1.5, np.inf, -np.inf, np.nan, 1e-45, -3e38, 2.5]
    B = 16
    x = np.array(vals + [7.0] * (B - len(vals)), np.float32)
    out = np.full(9 * B, 12345.0, np.float32)
    launch(_ieee_kernel, (1,), x, out, B=B)
    o = out.reshape(9, B)
    with np.errstate(all="ignore"):
        refs = [x * np.float32(0), x + np.float32(0), x - x, x / x, (x == x).astype(np.float32),
                (x != x).astype(np.float32), x * np.float32(1) - np.float32(0), np.float32(0) - (np.float32(0) - x),
                ((x < 1) + (x >= 1)).astype(np.float32)]
    for i, ref in enumerate(refs):
        np.testing.assert_array_equal(o[i], ref, err_msg=f"expression {i}")
        zero = ref == 0
        np.testing.assert_array_equal(np.signbit(o[i][zero]), np.signbit(ref[zero]), err_msg=f"sign of zero, expr {i}")
