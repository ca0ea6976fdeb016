"""GPU tests (marker gpu) of the language spine compiled to PTX and launched
on CUDA tensors, against torch. Fresh random inputs per test (seeded per
test id), outputs poisoned with NaN (or an integer sentinel) before each
launch, so a lane the kernel forgot to write fails the comparison.

The kernels are written exactly as for Triton."""

import zlib

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu

import tritium as triton  # noqa: E402
import tritium.language as tl  # noqa: E402

DEV = "cuda"


@pytest.fixture(autouse=True)
def _seed(request):
    torch.manual_seed(zlib.crc32(request.node.nodeid.encode()))


def poisoned(shape, dtype):
    if dtype.is_floating_point:
        return torch.full(shape, float("nan"), dtype=dtype, device=DEV)
    return torch.full(shape, torch.iinfo(dtype).max - 5, dtype=dtype, device=DEV)


def still_poisoned(t):
    if t.dtype.is_floating_point:
        return bool(torch.isnan(t).all())
    return bool((t == torch.iinfo(t.dtype).max - 5).all())


def rand(shape, dtype, lo=-100, hi=100):
    if dtype.is_floating_point:
        return torch.randn(shape, device=DEV).to(dtype)
    info = torch.iinfo(dtype)
    return torch.randint(max(lo, info.min), min(hi, info.max) + 1, shape, device=DEV,
                         dtype=torch.int64).to(dtype)


def rel_err(out, ref):
    out64, ref64 = out.double(), ref.double()
    assert not torch.isnan(out64).any(), "output holds NaN (an unwritten lane?)"
    return float((out64 - ref64).norm() / ref64.norm().clamp_min(1e-30))


# ----------------------------------------------------------------------------------------------
# memory: copies, masks, 2-D tiles, strides


@triton.jit
def _copy_kernel(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst + offs, tl.load(src + offs, mask=mask), mask=mask)


@pytest.mark.parametrize("dtype", [torch.int8, torch.int16, torch.int32, torch.int64,
                                   torch.float16, torch.bfloat16, torch.float32, torch.float64],
                         ids=str)
@pytest.mark.parametrize("n", [1, 17, 1024, 100_003])
def test_copy_masked_tail(dtype, n):
    x = rand((n,), dtype)
    y = poisoned((n + 64,), dtype)  # lanes past n must stay untouched
    _copy_kernel[(triton.cdiv(n, 256),)](x, y, n, BLOCK=256)
    torch.cuda.synchronize()
    assert torch.equal(y[:n], x)
    assert still_poisoned(y[n:])


@triton.jit
def _grid_ids_kernel(out_ptr):
    pid0 = tl.program_id(0)
    pid1 = tl.program_id(1)
    pid2 = tl.program_id(2)
    n0 = tl.num_programs(0)
    n1 = tl.num_programs(1)
    lin = (pid2 * n1 + pid1) * n0 + pid0
    tl.store(out_ptr + lin, lin * 1000 + pid2 * 100 + pid1 * 10 + pid0)


@pytest.mark.parametrize("grid", [(1,), (7,), (3, 5), (2, 3, 4), (70000,)], ids=str)
def test_program_id_num_programs(grid):
    g = tuple(grid) + (1,) * (3 - len(grid))
    total = g[0] * g[1] * g[2]
    out = poisoned((total,), torch.int32)
    _grid_ids_kernel[grid](out)
    idx = torch.arange(total, device=DEV, dtype=torch.int64)
    p0 = idx % g[0]
    p1 = (idx // g[0]) % g[1]
    p2 = idx // (g[0] * g[1])
    ref = (idx * 1000 + p2 * 100 + p1 * 10 + p0).to(torch.int32)
    assert torch.equal(out, ref)


@triton.jit
def _tile2d_kernel(x_ptr, y_ptr, M, N, sxm, sxn, sym, syn, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(x_ptr + rm[:, None] * sxm + rn[None, :] * sxn, mask=mask, other=0.0)
    tl.store(y_ptr + rm[:, None] * sym + rn[None, :] * syn, x * 2.0 + 1.0, mask=mask)


@pytest.mark.parametrize("M,N", [(1, 1), (37, 70), (128, 256), (1000, 33)])
@pytest.mark.parametrize("transposed", [False, True])
def test_2d_tile_strided(M, N, transposed):
    x = torch.randn((N, M) if transposed else (M, N), device=DEV)
    if transposed:
        x = x.t()
    y = poisoned((M, N), torch.float32)
    grid = (triton.cdiv(M, 32), triton.cdiv(N, 64))
    _tile2d_kernel[grid](x, y, M, N, x.stride(0), x.stride(1), y.stride(0), y.stride(1),
                         BM=32, BN=64)
    torch.testing.assert_close(y, x * 2.0 + 1.0)


# ----------------------------------------------------------------------------------------------
# arithmetic, math, where, casts


@triton.jit
def _binary_kernel(x_ptr, y_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    if OP == "add":
        r = x + y
    elif OP == "sub":
        r = x - y
    elif OP == "mul":
        r = x * y
    elif OP == "max":
        r = tl.maximum(x, y)
    else:
        r = tl.minimum(x, y)
    tl.store(out_ptr + offs, r, mask=mask)


_TORCH_BINARY = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "max": torch.maximum,
                 "min": torch.minimum}


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.float16, torch.bfloat16,
                                   torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "max", "min"])
def test_binary(op, dtype):
    n = 3000
    x, y = rand((n,), dtype), rand((n,), dtype)
    out = poisoned((n,), dtype)
    _binary_kernel[(triton.cdiv(n, 512),)](x, y, out, n, OP=op, BLOCK=512)
    ref = _TORCH_BINARY[op](x, y)
    if dtype.is_floating_point:
        torch.testing.assert_close(out, ref, rtol=0, atol=0)
    else:
        assert torch.equal(out, ref)


@triton.jit
def _int_ops_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1)
    y = tl.load(y_ptr + offs, mask=mask, other=1)
    r = (x // y) * 7 + (x % y) - (x & 0x5F) + (x | y) - (x ^ y) + (x >> 2) + (y << 1)
    tl.store(out_ptr + offs, r, mask=mask)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64], ids=str)
def test_int_ops_c_semantics(dtype):
    n = 5000
    x = rand((n,), dtype, -10_000, 10_000)
    y = rand((n,), dtype, -50, 50)
    y[y == 0] = 3
    out = poisoned((n,), dtype)
    _int_ops_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    # Triton's // and % truncate toward zero (C semantics)
    q = torch.div(x, y, rounding_mode="trunc")
    r = x - q * y
    ref = q * 7 + r - (x & 0x5F) + (x | y) - (x ^ y) + (x >> 2) + (y << 1)
    assert torch.equal(out, ref)


@triton.jit
def _divide_constant_kernel(x_ptr, q_ptr, r_ptr, i_ptr, n, D: tl.constexpr, UNSIGNED: tl.constexpr,
                            INDEX: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    if UNSIGNED:
        ut = tl.uint32 if x.dtype == tl.int32 else tl.uint64
        u = x.to(ut, bitcast=True)
        tl.store(q_ptr + offs, (u // D).to(x.dtype, bitcast=True), mask=mask)
        tl.store(r_ptr + offs, (u % D).to(x.dtype, bitcast=True), mask=mask)
    else:
        tl.store(q_ptr + offs, x // D, mask=mask)
        tl.store(r_ptr + offs, x % D, mask=mask)
    if INDEX:
        # A dividend known to be >= 0 (program id and arange) divides as unsigned.
        tl.store(i_ptr + offs, offs // D + offs % D, mask=mask)


def _divide_reference(x, d, unsigned, bits):
    """Quotient and remainder, truncating toward zero (C and Triton), in Python integers."""
    mod = 1 << bits
    qs, rs = [], []
    for v in x.tolist():
        if unsigned:
            v, dd = v % mod, d % mod
            q = v // dd
        else:
            dd = d
            q = abs(v) // abs(dd) * (1 if (v < 0) == (dd < 0) else -1)
        r = v - q * dd
        # Back to the signed range of the storage dtype.
        qs.append((q + mod // 2) % mod - mod // 2)
        rs.append((r + mod // 2) % mod - mod // 2)
    return qs, rs


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64], ids=str)
@pytest.mark.parametrize("unsigned", [False, True], ids=["signed", "unsigned"])
@pytest.mark.parametrize("d", [1, 2, 3, 7, 10, 64, 255, 256, 641, 1000003, -3, -8, -1000, 2**31 - 1,
                               2**40 + 15, -(2**33)])
def test_divide_by_constant(dtype, unsigned, d):
    """Division and remainder by a constexpr divisor (shifts and multiply-highs in the PTX, see
    support/divide.h) against Python's integers: random values over the whole range, the
    extremes, and multiples of the divisor and their neighbours."""
    bits = torch.iinfo(dtype).bits
    if not unsigned and not (-(2 ** (bits - 1)) < d < 2 ** (bits - 1)):
        pytest.skip("divisor out of the dtype's range")
    if unsigned and (d < 0 or d >= 2 ** bits):
        pytest.skip("an unsigned divisor is positive")
    info = torch.iinfo(dtype)
    n = 4096
    x = torch.randint(info.min, info.max, (n,), dtype=dtype, device=DEV)
    x[: n // 4] = torch.randint(-100_000, 100_000, (n // 4,), dtype=dtype, device=DEV)
    k = torch.randint(-1000, 1000, (256,), device=DEV, dtype=torch.int64)
    mult = (k * d + torch.randint(-1, 2, (256,), device=DEV, dtype=torch.int64))
    mult = ((mult - info.min) % (1 << bits) + info.min) if bits < 64 else mult
    x[n // 4:n // 4 + 256] = mult.to(dtype)
    x[-6:] = torch.tensor([info.min, info.min + 1, info.max, info.max - 1, -1, 0], dtype=dtype)
    q = poisoned((n,), dtype)
    r = poisoned((n,), dtype)
    idx = poisoned((n,), torch.int32)
    index = 0 < d < 2**31
    _divide_constant_kernel[(triton.cdiv(n, 512),)](x, q, r, idx, n, D=d, UNSIGNED=unsigned,
                                                    INDEX=index, BLOCK=512)
    qs, rs = _divide_reference(x.cpu(), d, unsigned, bits)
    assert q.cpu().tolist() == qs
    assert r.cpu().tolist() == rs
    if index:
        offs = torch.arange(n, dtype=torch.int64)
        assert torch.equal(idx.cpu(), (offs // d + offs % d).to(torch.int32))


@triton.jit
def _const_scale_kernel(x_ptr, w_ptr: tl.const, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * tl.load(w_ptr + offs, mask=m),
             mask=m)


def test_loads_through_a_const_pointer():
    """`w_ptr: tl.const` (read-only argument) on the GPU: the loads run as any other."""
    n = 5000
    x, w = rand((n,), torch.float32), rand((n,), torch.float32)
    out = poisoned((n,), torch.float32)
    _const_scale_kernel[(triton.cdiv(n, 1024),)](x, w, out, n, BLOCK=1024)
    assert torch.equal(out, x * w)


@triton.jit
def _math_kernel(x_ptr, out_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1.0)
    if FN == "exp":
        r = tl.exp(x)
    elif FN == "log":
        r = tl.log(tl.abs(x) + 0.5)
    elif FN == "sqrt":
        r = tl.sqrt(tl.abs(x))
    elif FN == "rsqrt":
        r = tl.rsqrt(tl.abs(x) + 0.1)
    elif FN == "sin":
        r = tl.sin(x)
    elif FN == "cos":
        r = tl.cos(x)
    elif FN == "exp2":
        r = tl.exp2(x)
    elif FN == "sigmoid":
        r = tl.sigmoid(x)
    else:
        r = x / (tl.abs(x) + 1.0)
    tl.store(out_ptr + offs, r, mask=mask)


_TORCH_MATH = {
    "exp": torch.exp, "log": lambda x: torch.log(x.abs() + 0.5), "sqrt": lambda x: x.abs().sqrt(),
    "rsqrt": lambda x: torch.rsqrt(x.abs() + 0.1), "sin": torch.sin, "cos": torch.cos,
    "exp2": torch.exp2, "sigmoid": torch.sigmoid, "div": lambda x: x / (x.abs() + 1.0),
}


@pytest.mark.parametrize("fn", sorted(_TORCH_MATH))
def test_math_fp32(fn):
    n = 10_000
    x = torch.randn(n, device=DEV) * 3
    out = poisoned((n,), torch.float32)
    _math_kernel[(triton.cdiv(n, 1024),)](x, out, n, FN=fn, BLOCK=1024)
    ref = _TORCH_MATH[fn](x.double())
    # GPU math may use the fast approximations Triton uses (ex2.approx, ...).
    assert rel_err(out, ref) < 1e-5


@triton.jit
def _where_cast_kernel(x_ptr, out16_ptr, outi_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.where(x > 0, x, -2.0 * x)
    tl.store(out16_ptr + offs, y.to(tl.float16), mask=mask)
    tl.store(outi_ptr + offs, (y * 10.0).to(tl.int32), mask=mask)


def test_where_and_casts():
    n = 7777
    x = torch.randn(n, device=DEV) * 4
    o16 = poisoned((n,), torch.float16)
    oi = poisoned((n,), torch.int32)
    _where_cast_kernel[(triton.cdiv(n, 256),)](x, o16, oi, n, BLOCK=256)
    y = torch.where(x > 0, x, -2.0 * x)
    assert torch.equal(o16, y.half())
    assert torch.equal(oi, (y * 10.0).to(torch.int32))


# ----------------------------------------------------------------------------------------------
# reductions


@triton.jit
def _reduce_rows_kernel(x_ptr, out_ptr, M, N, stride, OP: tl.constexpr, BN: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BN)
    mask = cols < N
    if OP == "sum":
        x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
        r = tl.sum(x, axis=0)
    elif OP == "max":
        x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf"))
        r = tl.max(x, axis=0)
    else:
        x = tl.load(x_ptr + row * stride + cols, mask=mask, other=float("inf"))
        r = tl.min(x, axis=0)
    tl.store(out_ptr + row, r)


@pytest.mark.parametrize("op", ["sum", "max", "min"])
@pytest.mark.parametrize("N", [1, 7, 128, 1000, 4096])
def test_reduce_rows(op, N):
    M = 257
    x = torch.randn(M, N, device=DEV)
    out = poisoned((M,), torch.float32)
    _reduce_rows_kernel[(M,)](x, out, M, N, x.stride(0), OP=op, BN=triton.next_power_of_2(N))
    ref = {"sum": x.double().sum(1), "max": x.amax(1).double(), "min": x.amin(1).double()}[op]
    if op == "sum":
        assert rel_err(out, ref) < 1e-6
    else:
        assert torch.equal(out.double(), ref)


@triton.jit
def _int_reduce_rows_kernel(x_ptr, out_ptr, N, stride, OP: tl.constexpr, BN: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BN)
    mask = cols < N
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0)
    if OP == "sum":
        r = tl.sum(x.to(tl.int32), axis=0)
    elif OP == "count":  # sparsemax's support size: a mask's int32 sum
        r = tl.sum(((x > 0) & mask).to(tl.int32), axis=0)
    elif OP == "max":
        r = tl.max(tl.where(mask, x, -128), axis=0)
    elif OP == "min":
        r = tl.min(tl.where(mask, x, 127), axis=0)
    else:
        r = tl.xor_sum(x, axis=0)
    tl.store(out_ptr + row, r)


@pytest.mark.parametrize("op", ["sum", "count", "max", "min", "xor"])
@pytest.mark.parametrize("dtype", [torch.int8, torch.int16, torch.int32], ids=str)
@pytest.mark.parametrize("N,num_warps", [(32, 1), (100, 4), (1024, 4), (4096, 8)])
def test_int_reduce_rows(op, dtype, N, num_warps):
    """Integer row reductions, where a warp's 32 lanes reduce one row (redux.sync on the GPU)
    and where they do not."""
    M = 65
    x = rand((M, N), dtype)
    out_t = torch.int32 if op in ("sum", "count") else dtype
    out = poisoned((M,), out_t)
    _int_reduce_rows_kernel[(M,)](x, out, N, x.stride(0), OP=op, BN=triton.next_power_of_2(N),
                                  num_warps=num_warps)
    x64 = x.long().cpu()
    if op == "sum":
        ref = x64.sum(1)
    elif op == "count":
        ref = (x64 > 0).sum(1)
    elif op == "max":
        ref = x64.amax(1)
    elif op == "min":
        ref = x64.amin(1)
    else:
        ref = torch.zeros(M, dtype=torch.int64)
        for j in range(N):
            ref ^= x64[:, j]
    assert torch.equal(out.cpu(), ref.to(out_t)), (out, ref)


@triton.jit
def _reduce_2d_kernel(x_ptr, out_ptr, BM: tl.constexpr, BN: tl.constexpr, AXIS: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    x = tl.load(x_ptr + rm[:, None] * BN + rn[None, :])
    r = tl.sum(x, axis=AXIS)
    if AXIS == 0:
        tl.store(out_ptr + rn, r)
    else:
        tl.store(out_ptr + rm, r)


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("BM,BN", [(16, 16), (64, 128), (128, 32)])
def test_reduce_2d_axis(axis, BM, BN):
    x = torch.randn(BM, BN, device=DEV)
    out = poisoned((BN if axis == 0 else BM,), torch.float32)
    _reduce_2d_kernel[(1,)](x, out, BM=BM, BN=BN, AXIS=axis)
    assert rel_err(out, x.double().sum(axis)) < 1e-6


# ----------------------------------------------------------------------------------------------
# loops and scalars


@triton.jit
def _loop_sum_kernel(x_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0) * scale)


@pytest.mark.parametrize("n", [1, 1000, 65_536, 100_001])
def test_loop_accumulate_and_scalar_args(n):
    x = torch.randn(n, device=DEV)
    out = poisoned((1,), torch.float32)
    _loop_sum_kernel[(1,)](x, out, n, 0.5, BLOCK=1024)
    assert rel_err(out, x.double().sum().reshape(1) * 0.5) < 1e-5


# ----------------------------------------------------------------------------------------------
# the tutorial kernels (also benchmarked in benchmarks/)


@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask),
             mask=mask)


@pytest.mark.parametrize("n", [1, 98_432, 1 << 20, (1 << 22) + 1])
@pytest.mark.parametrize("num_warps", [1, 4, 8])
def test_vector_add(n, num_warps):
    x, y = torch.randn(n, device=DEV), torch.randn(n, device=DEV)
    out = poisoned((n,), torch.float32)
    _add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024, num_warps=num_warps)
    assert torch.equal(out, x + y)


@triton.jit
def _softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_stride + cols, mask=mask, other=-float("inf"))
    z = x - tl.max(x, axis=0)
    num = tl.exp(z)
    den = tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_stride + cols, num / den, mask=mask)


@pytest.mark.parametrize("M,N", [(1, 1), (17, 33), (128, 1000), (64, 4096), (8, 16384)])
def test_softmax(M, N):
    x = torch.randn(M, N, device=DEV) * 3
    out = poisoned((M, N), torch.float32)
    block = triton.next_power_of_2(N)
    nw = 16 if block >= 8192 else (8 if block >= 2048 else 4)
    _softmax_kernel[(M,)](out, x, x.stride(0), out.stride(0), N, BLOCK=block, num_warps=nw)
    assert rel_err(out, torch.softmax(x.double(), 1)) < 1e-5


@triton.jit
def _layer_norm_kernel(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        _mean += a
    mean = tl.sum(_mean, axis=0) / N
    _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.)
        _var += x * x
    var = tl.sum(_var, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
        x_hat = (x - mean) * rstd
        y = x_hat * w + b
        tl.store(Y + cols, y, mask=mask)


@pytest.mark.parametrize("M,N", [(1, 1), (31, 1000), (256, 4096), (16, 16384)])
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32], ids=str)
def test_layer_norm(M, N, dtype):
    x = (torch.randn(M, N, device=DEV) * 2 + 0.5).to(dtype)
    w = torch.randn(N, device=DEV).to(dtype)
    b = torch.randn(N, device=DEV).to(dtype)
    y = poisoned((M, N), dtype)
    mean = poisoned((M,), torch.float32)
    rstd = poisoned((M,), torch.float32)
    block = min(65536 // x.element_size(), triton.next_power_of_2(N))
    nw = min(max(block // 256, 1), 8)
    _layer_norm_kernel[(M,)](x, y, w, b, mean, rstd, x.stride(0), N, 1e-5, BLOCK_SIZE=block,
                             num_warps=nw)
    ref = torch.nn.functional.layer_norm(x.double(), (N,), w.double(), b.double(), 1e-5)
    tol = 2e-3 if dtype == torch.float16 else 1e-5
    assert rel_err(y, ref) < tol
    torch.testing.assert_close(mean.double(), x.double().mean(1), rtol=1e-5, atol=1e-5)


# ----------------------------------------------------------------------------------------------
# the runtime around the launch


def test_mixed_cpu_gpu_tensors_rejected():
    x = torch.randn(100, device=DEV)
    y = torch.randn(100)
    with pytest.raises(Exception, match="CPU tensor"):
        _add_kernel[(1,)](x, y, x, 100, BLOCK=128)


def test_empty_grid_is_a_no_op():
    x = torch.randn(16, device=DEV)
    out = poisoned((16,), torch.float32)
    _add_kernel[(0,)](x, x, out, 16, BLOCK=16)
    torch.cuda.synchronize()
    assert still_poisoned(out)


def test_runs_on_torch_current_stream():
    n = 1 << 22
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        x, y = torch.randn(n, device=DEV), torch.randn(n, device=DEV)
        out = poisoned((n,), torch.float32)
        _add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
        res = out.clone()  # ordered after the kernel on s
    s.synchronize()
    assert torch.equal(res, x + y)


def test_compile_api_then_launch():
    from tritium.compile_api import compile as tcompile
    k = tcompile(_add_kernel, signature={"x_ptr": "*fp32", "y_ptr": "*fp32",
                                         "out_ptr": "*fp32", "n": "i32"},
                 constexprs={"BLOCK": 1024}, num_warps=4)
    assert ".entry" in k.asm["ptx"]
    n = 5000
    x, y = torch.randn(n, device=DEV), torch.randn(n, device=DEV)
    out = poisoned((n,), torch.float32)
    k[(triton.cdiv(n, 1024),)](x, y, out, n)
    torch.cuda.synchronize()
    assert torch.equal(out, x + y)


def test_disk_cache_reused_across_processes(tmp_path):
    import os
    import subprocess
    import sys
    import textwrap
    script = textwrap.dedent("""
        import torch, tritium as triton, tritium.language as tl
        from tritium.runtime import cache
        @triton.jit
        def k(x_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, offs.to(tl.float32), mask=offs < n)
        x = torch.full((1000,), float("nan"), device="cuda")
        k[(4,)](x, 1000, BLOCK=256)
        assert torch.equal(x, torch.arange(1000, device="cuda", dtype=torch.float32))
        c = cache.default_cache()
        print("HITS", c.hits, "MISSES", c.misses)
    """)
    path = tmp_path / "k.py"
    path.write_text(script)
    env = dict(os.environ, TRITIUM_CACHE_DIR=str(tmp_path / "cache"))
    env["PYTHONPATH"] = os.path.join(os.path.dirname(__file__), "..") + os.pathsep + env.get(
        "PYTHONPATH", "")
    outs = [subprocess.run([sys.executable, str(path)], env=env, capture_output=True, text=True)
            for _ in range(2)]
    for o in outs:
        assert o.returncode == 0, o.stderr
    assert "HITS 0 MISSES 1" in outs[0].stdout
    assert "HITS 1 MISSES 0" in outs[1].stdout


@triton.jit
def _tutorial_softmax(out_ptr, in_ptr, in_stride, out_stride, n_rows, n_cols,
                      BLOCK_SIZE: tl.constexpr, num_stages: tl.constexpr):
    for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0), num_stages=num_stages):
        cols = tl.arange(0, BLOCK_SIZE)
        x = tl.load(in_ptr + row * in_stride + cols, mask=cols < n_cols, other=-float("inf"))
        e = tl.exp(x - tl.max(x, axis=0))
        tl.store(out_ptr + row * out_stride + cols, e / tl.sum(e, axis=0), mask=cols < n_cols)


def test_fused_softmax_tutorial_host_code():
    """Triton's fused-softmax tutorial's host side, unchanged: the device from
    triton.runtime.driver, warmup + _init_handles, occupancy from n_regs and metadata.shared,
    then compiled[grid](*every_parameter)."""
    driver = triton.runtime.driver
    device = driver.active.get_active_torch_device()
    assert device.type == "cuda" and driver.active.get_current_target().backend == "cuda"
    props = driver.active.utils.get_device_properties(device.index)
    num_sm, num_regs = props["multiprocessor_count"], props["max_num_regs"]
    size_smem, warp_size = props["max_shared_mem"], props["warpSize"]
    x = torch.randn(1823, 781, device=device)
    y = poisoned(x.shape, x.dtype)
    block, num_warps, num_stages = triton.next_power_of_2(x.shape[1]), 8, 2
    kernel = _tutorial_softmax.warmup(y, x, x.stride(0), y.stride(0), *x.shape,
                                      BLOCK_SIZE=block, num_stages=num_stages,
                                      num_warps=num_warps, grid=(1,))
    kernel._init_handles()
    assert kernel.n_regs > 0 and isinstance(kernel.metadata.shared, int)
    occupancy = num_regs // (kernel.n_regs * warp_size * num_warps)
    if kernel.metadata.shared:
        occupancy = min(occupancy, size_smem // kernel.metadata.shared)
    programs = min(num_sm * max(occupancy, 1), x.shape[0])
    kernel[(programs, 1, 1)](y, x, x.stride(0), y.stride(0), *x.shape, block, num_stages)
    torch.testing.assert_close(y, torch.softmax(x, dim=1))
