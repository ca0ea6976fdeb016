"""Tests of the Python frontend: @jit, specialisation and caching, argument
conversion, the code generator (control flow, calls, errors) and a few whole
kernels on the CPU executor.

Tests that compile need the C++ extension tritium._C; they are skipped when it
is not built. Every compile here checks that the IR text round-trips and runs
the verifier after every pass (TRITIUM_CHECK_ROUNDTRIP=1)."""

import os
import re

import numpy as np
import pytest

import tritium
import tritium as triton
import tritium.language as tl
from tritium.errors import CompilationError, ExecutionError


def _has_C():
    try:
        from tritium import _C
    except ImportError:
        return False
    return hasattr(_C, "Builder") and hasattr(_C, "execute")


needs_C = pytest.mark.skipif(not _has_C(), reason="tritium._C is not built")

try:
    import torch
except ImportError:  # torch is optional
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")


@pytest.fixture(autouse=True)
def _check_roundtrip(monkeypatch):
    monkeypatch.setenv("TRITIUM_CHECK_ROUNDTRIP", "1")


THIS_FILE = os.path.abspath(__file__)


def line_of(marker):
    """The 1-based line of this file holding `marker` (a comment tag)."""
    with open(THIS_FILE) as f:
        for i, line in enumerate(f, 1):
            if marker in line and "line_of(" not in line:
                return i
    raise AssertionError(marker)


# ---------------------------------------------------------------------------
# Pure Python: the language objects
# ---------------------------------------------------------------------------


def test_dtypes():
    assert str(tl.float32) == "fp32" and repr(tl.float32) == "triton.language.float32"
    assert tl.float16.is_fp16() and not tl.float16.is_fp32()
    assert tl.float16.is_floating() and not tl.int32.is_floating()
    assert tl.int8.is_int_signed() and tl.uint8.is_int_unsigned() and tl.int1.is_bool()
    assert tl.bfloat16.primitive_bitwidth == 16 and tl.int64.int_bitwidth == 64
    assert tl.float32.ir_name == "f32" and tl.uint16.ir_name == "u16"
    p = tl.pointer_type(tl.float16)
    assert p.is_ptr() and p.element_ty == tl.float16 and p == tl.pointer_type(tl.float16)
    assert p != tl.pointer_type(tl.float32) and p != tl.float16
    assert len({tl.float32, tl.dtype("fp32"), tl.int32}) == 2
    assert tl.int8.get_int_max_value() == 127 and tl.uint8.get_int_min_value() == 0


def test_constexpr_arithmetic():
    c = tl.constexpr(6)
    assert (c + 1).value == 7 and (1 + c).value == 7 and (c // 4).value == 1
    assert (c / 4).value == 1.5 and (-c).value == -6 and (c == 6).value is True
    assert tl.constexpr(tl.constexpr(3)).value == 3
    assert bool(tl.constexpr(0)) is False


def test_builtins_outside_kernel_raise():
    with pytest.raises(RuntimeError, match=r"tl.load can only be called inside a "
                                           r"@tritium.jit kernel"):
        tl.load(None)
    with pytest.raises(RuntimeError, match="tl.program_id"):
        tl.program_id(0)


def test_top_level_helpers():
    assert tritium.cdiv(10, 3) == 4 and tritium.cdiv(9, 3) == 3
    assert [tritium.next_power_of_2(n) for n in (0, 1, 2, 3, 64, 65)] == [1, 1, 2, 4, 64, 128]
    assert issubclass(tritium.ExecutionError, RuntimeError)
    assert tritium.language is tl


def test_compilation_error_format():
    e = CompilationError("shape mismatch: 128 vs 64", "/x/kern.py", 12, 17,
                         "        x = tl.load(x_ptr + offs, mask=mask)", "add_kernel")
    lines = str(e).splitlines()
    assert lines[0] == '  File "/x/kern.py", line 12, column 17, in add_kernel:'
    assert lines[1] == "    x = tl.load(x_ptr + offs, mask=mask)"
    # column 17 of the original line is column 9 of the stripped one
    assert lines[2] == "    " + " " * 8 + "^"
    assert lines[3] == "  shape mismatch: 128 vs 64"
    assert (e.file, e.line, e.col, e.message) == ("/x/kern.py", 12, 17,
                                                  "shape mismatch: 128 vs 64")


# ---------------------------------------------------------------------------
# Pure Python: @jit and specialisation
# ---------------------------------------------------------------------------


@triton.jit
def spec_kernel(x_ptr, n, f, flag, opt, BLOCK: tl.constexpr = 64):
    pass


def key_of(fn, *args, **kwargs):
    key, params, values = fn.specialize(fn._bind(args, kwargs))
    return key, dict(params), values


def test_jit_decorator_forms():
    @triton.jit
    def a(x):
        pass

    @triton.jit(do_not_specialize=["n"], noinline=True)
    def b(x, n):
        pass

    @triton.jit(do_not_specialize=[1])
    def c(x, n):
        pass

    assert isinstance(a, tritium.JITFunction) and a.__name__ == "a"
    assert b.noinline and b.do_not_specialize == ["n"] and c.do_not_specialize == ["n"]
    assert a.arg_names == ["x"]
    with pytest.raises(RuntimeError, match="cannot be called directly"):
        a(1)
    with pytest.raises(ValueError, match="no parameter named 'm'"):
        triton.jit(do_not_specialize=["m"])(lambda_free_function)


def lambda_free_function(x):
    pass


def test_specialisation_ints():
    x = np.zeros(16, np.float32)
    key, params, _ = key_of(spec_kernel, x, 32, 1.0, True, None)
    assert params["n"] == ("arg", tl.int32, True)  # divisible by 16
    assert params["f"] == ("arg", tl.float32, False)
    assert params["flag"] == ("arg", tl.int1, False)
    assert params["opt"] == ("const", None)
    assert params["BLOCK"] == ("const", 64)
    assert key_of(spec_kernel, x, 33, 1.0, True, None)[1]["n"] == ("arg", tl.int32, False)
    assert key_of(spec_kernel, x, 1, 1.0, True, None)[1]["n"] == ("const", 1)
    assert key_of(spec_kernel, x, -2**31, 1.0, True, None)[1]["n"][1] == tl.int32
    assert key_of(spec_kernel, x, 2**31, 1.0, True, None)[1]["n"][1] == tl.int64
    assert key_of(spec_kernel, x, -2**31 - 1, 1.0, True, None)[1]["n"][1] == tl.int64
    assert key_of(spec_kernel, x, 2**63, 1.0, True, None)[1]["n"][1] == tl.uint64
    with pytest.raises(TypeError, match="'n'"):
        key_of(spec_kernel, x, 2**64, 1.0, True, None)
    # numpy scalars behave as Python scalars
    assert key_of(spec_kernel, x, np.int64(48), np.float32(2), np.bool_(False), None)[1]["n"] \
        == ("arg", tl.int32, True)
    # constexprs are keyed by value (and type: True is not 1)
    k64 = key_of(spec_kernel, x, 3, 1.0, True, None)[0]
    k32 = key_of(spec_kernel, x, 3, 1.0, True, None, BLOCK=32)[0]
    kt = key_of(spec_kernel, x, 3, 1.0, True, None, BLOCK=True)[0]
    k1 = key_of(spec_kernel, x, 3, 1.0, True, None, BLOCK=1)[0]
    assert len({k64, k32, kt, k1}) == 4


def test_do_not_specialize():
    @triton.jit(do_not_specialize=["n"])
    def k(x_ptr, n):
        pass

    x = np.zeros(4, np.float32)
    assert key_of(k, x, 1)[1]["n"] == ("arg", tl.int32, False)
    assert key_of(k, x, 32)[1]["n"] == ("arg", tl.int32, False)
    assert key_of(k, x, 32)[0] == key_of(k, x, 7)[0]


def test_specialisation_pointers():
    base = np.zeros(64, np.float32)
    assert base.ctypes.data % 16 == 0  # numpy aligns its allocations
    key, params, values = key_of(spec_kernel, base, 3, 1.0, True, None)
    assert params["x_ptr"] == ("arg", tl.pointer_type(tl.float32), True)
    assert values[0].nbytes == 256
    # a view 4 bytes in is not 16-byte aligned, and sees the rest of the buffer
    key2, params2, values2 = key_of(spec_kernel, base[1:], 3, 1.0, True, None)
    assert params2["x_ptr"] == ("arg", tl.pointer_type(tl.float32), False)
    assert values2[0].nbytes == 252 and key2 != key
    # a strided view reaches the end of its base storage
    m = np.zeros((8, 8), np.float16)
    _, _, vals = key_of(spec_kernel, m[:, 2], 3, 1.0, True, None)
    assert vals[0].nbytes == 128 - 4
    for dt, want in [(np.float16, tl.float16), (np.float64, tl.float64), (np.int8, tl.int8),
                     (np.uint64, tl.uint64), (np.bool_, tl.int1), (np.int16, tl.int16)]:
        p = key_of(spec_kernel, np.zeros(4, dt), 3, 1.0, True, None)[1]["x_ptr"]
        assert p[1] == tl.pointer_type(want)


@needs_torch
def test_specialisation_torch():
    t = torch.zeros(32, dtype=torch.bfloat16)
    p = key_of(spec_kernel, t, 3, 1.0, True, None)[1]["x_ptr"]
    assert p == ("arg", tl.pointer_type(tl.bfloat16), True)
    v = key_of(spec_kernel, t[3:], 3, 1.0, True, None)[2][0]
    assert v.nbytes == (32 - 3) * 2 and v.device == "cpu"
    p = key_of(spec_kernel, torch.zeros(2, dtype=torch.bool), 3, 1.0, True, None)[1]["x_ptr"]
    assert p[1] == tl.pointer_type(tl.int1)


def test_wrong_arguments():
    x = np.zeros(4, np.float32)
    with pytest.raises(TypeError, match="missing a required argument: 'opt'"):
        spec_kernel[(1,)](x, 3, 1.0, True)
    with pytest.raises(TypeError, match="too many positional arguments"):
        spec_kernel[(1,)](x, 3, 1.0, True, None, 64, 5)
    with pytest.raises(TypeError, match=r"argument 'f' of spec_kernel has unsupported type str"):
        spec_kernel[(1,)](x, 3, "1.0", True, None)
    with pytest.raises(TypeError, match=r"argument 'x_ptr'.*list"):
        spec_kernel[(1,)]([1, 2], 3, 1.0, True, None)
    with pytest.raises(TypeError, match="'x_ptr'.*complex64"):
        spec_kernel[(1,)](np.zeros(2, np.complex64), 3, 1.0, True, None)
    with pytest.raises(TypeError, match="'BLOCK' .* tl.constexpr, but a tensor"):
        spec_kernel[(1,)](x, 3, 1.0, True, None, BLOCK=x)


# ---------------------------------------------------------------------------
# Kernels used below
# ---------------------------------------------------------------------------


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def add(x, y, block=128):
    out = np.empty_like(x) if isinstance(x, np.ndarray) else torch.empty_like(x)
    n = x.shape[0]
    add_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)](x, y, out, n,
                                                                   BLOCK_SIZE=block,
                                                                   num_warps=4)
    return out


@needs_C
def test_vector_add_numpy():
    rng = np.random.default_rng(0)
    for n in (1000, 4096, 1):
        x = rng.standard_normal(n).astype(np.float32)
        y = rng.standard_normal(n).astype(np.float32)
        np.testing.assert_array_equal(add(x, y), x + y)


@needs_C
@needs_torch
def test_vector_add_torch_and_views():
    x = torch.randn(3000)
    y = torch.randn(3000)
    torch.testing.assert_close(add(x, y), x + y)
    # a view at an offset into its storage
    big = torch.randn(4000)
    torch.testing.assert_close(add(big[7:3007], y), big[7:3007] + y)
    x16 = torch.randn(512, dtype=torch.float16)
    torch.testing.assert_close(add(x16, x16, 256), x16 + x16)


@needs_C
def test_cache_and_specialisation():
    @triton.jit
    def k(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, offs * n, mask=offs < BLOCK)

    x = np.zeros(64, np.int32)
    k[(1,)](x, 3, BLOCK=64)
    np.testing.assert_array_equal(x, np.arange(64) * 3)
    assert len(k.cache) == 1
    k[(1,)](x, 5, BLOCK=64)
    assert len(k.cache) == 1  # same key: reused
    np.testing.assert_array_equal(x, np.arange(64) * 5)
    k[(1,)](x, 32, BLOCK=64)  # divisible by 16: a new specialisation
    k[(1,)](x, 1, BLOCK=64)  # 1: a constant
    k[(1,)](x, 3, BLOCK=32)
    assert len(k.cache) == 4
    np.testing.assert_array_equal(x[:32], np.arange(32) * 3)
    kernels = {c.signature.get("n"): c for c in k.cache.values()}
    div16 = next(c for c in k.cache.values() if re.search(r"%n: i32 \{tt.divisibility = 16\}",
                                                          c.asm["tir-raw"]))
    assert div16 is not None
    one = next(c for c in k.cache.values() if "n" in c.constants)
    assert one.constants["n"] == 1 and "n" not in one.arg_names
    assert kernels


@needs_C
def test_warmup_compiles_without_running():
    x = np.zeros(256, np.float32)
    out = np.full(256, 7.0, np.float32)
    compiled = add_kernel.warmup(x, x, out, 256, BLOCK_SIZE=128, grid=(2,))
    assert "tt.store" in compiled.asm["tir"] and "tt.func" in compiled.asm["tir-raw"]
    assert (out == 7.0).all()
    assert compiled is add_kernel.warmup(x, x, out, 256, BLOCK_SIZE=128, grid=(2,))


class FakeCudaArray:
    """Stands in for a GPU tensor (anything with __cuda_array_interface__)."""

    __cuda_array_interface__ = {"shape": (4,), "typestr": "<f4", "data": (1 << 20, False),
                                "version": 3}


@needs_C
def test_gpu_tensor_is_a_clear_error():
    x = np.zeros(4, np.float32)
    from tritium import _C
    if not hasattr(_C, "compile_to_ptx"):  # without the NVIDIA backend
        with pytest.raises(RuntimeError, match="GPU launch is not implemented yet; pass CPU "
                                               "tensors to run on the CPU executor"):
            add_kernel[(1,)](x, x, FakeCudaArray(), 4, BLOCK_SIZE=4)
        # compiling the tile IR for it is fine
        c = add_kernel.warmup(x, x, FakeCudaArray(), 4, BLOCK_SIZE=4, grid=(1,))
        assert c.signature["out_ptr"] == "pointer<fp32>"
    if torch is not None:
        t = torch.zeros(4)
        with pytest.raises(RuntimeError, match="device 'meta'"):
            add_kernel[(1,)](t, t, torch.zeros(4, device="meta"), 4, BLOCK_SIZE=4)


# ---------------------------------------------------------------------------
# Code generation of control flow
# ---------------------------------------------------------------------------


@triton.jit
def branchy(out_ptr, n, MODE: tl.constexpr):
    if MODE == 0:
        v = tl.full([16], 1.0, tl.float32)
    elif MODE == 1:
        v = tl.full([16], 2.0, tl.float32)
    else:
        v = tl.full([16], 3.0, tl.float32)
    if n > 4:  # runtime: scf.if
        v = v * 10.0
    else:
        v = v + 0.5
    tl.store(out_ptr + tl.arange(0, 16), v)


@needs_C
def test_if_on_constexpr_and_runtime():
    out = np.zeros(16, np.float32)
    c = branchy.warmup(out, 7, MODE=1)
    raw = c.asm["tir-raw"]
    assert raw.count("scf.if") == 1  # constexpr ifs fold
    assert "2.0" in raw and "3.0" not in raw and "1.0 " not in raw
    for mode, n, want in [(0, 7, 10.0), (1, 7, 20.0), (2, 3, 3.5), (0, 0, 1.5)]:
        branchy[(1,)](out, n, MODE=mode)
        assert (out == want).all(), (mode, n, out)


@needs_C
def test_if_yields_and_scalar_branches():
    @triton.jit
    def k(out_ptr, a, b):
        x = a
        y = 0
        if a > b:
            x = b
            z = 1  # only in one branch: not visible after
            y = 5
        m = min(x, b) if a > 0 else max(x, b)
        tl.store(out_ptr, x)
        tl.store(out_ptr + 1, y)
        tl.store(out_ptr + 2, m)

    out = np.zeros(3, np.int32)
    k[(1,)](out, 9, 4)
    assert list(out) == [4, 5, 4]
    k[(1,)](out, 2, 4)
    assert list(out) == [2, 0, 2]
    k[(1,)](out, -2, 4)
    assert list(out) == [-2, 0, 4]


@needs_C
def test_if_type_mismatch_is_an_error():
    @triton.jit
    def k(out_ptr, a):
        x = a
        if a > 0:
            x = a.to(tl.float32)  # MISMATCH
        tl.store(out_ptr, x)

    with pytest.raises(CompilationError, match=r"'x' has type f32 in the then-branch but i32 "
                                               r"in the else-branch") as ei:
        k[(1,)](np.zeros(1, np.float32), 3)
    assert ei.value.file == THIS_FILE


@needs_C
def test_for_loops_and_carried_values():
    @triton.jit
    def k(out_ptr, n, STEP: tl.constexpr):
        acc = 0
        prod = 1.0
        last = -1
        for i in range(0, n, STEP):
            acc += i
            prod = prod * 2.0
            last = i
        cnt = 0
        for j in tl.range(3, num_stages=2):
            cnt += 1
        tl.store(out_ptr, acc)
        tl.store(out_ptr + 1, prod.to(tl.int32))
        tl.store(out_ptr + 2, last)
        tl.store(out_ptr + 3, cnt)

    out = np.zeros(4, np.int32)
    k[(1,)](out, 10, STEP=3)
    assert list(out) == [0 + 3 + 6 + 9, 16, 9, 3]
    k[(1,)](out, 0, STEP=1)
    assert list(out) == [0, 1, -1, 3]
    raw = next(iter(k.cache.values())).asm["tir-raw"]
    assert raw.count("scf.for") == 2 and "num_stages = 2" in raw


@needs_C
def test_static_range_is_unrolled():
    @triton.jit
    def k(out_ptr):
        acc = tl.zeros([8], tl.int32)
        for i in tl.static_range(4):
            acc += i
        tl.store(out_ptr + tl.arange(0, 8), acc)

    out = np.zeros(8, np.int32)
    c = k[(1,)](out)
    assert (out == 6).all()
    # Expanded by the code generator, with `i` a constexpr in each copy.
    assert "scf.for" not in c.asm["tir-raw"]


@needs_C
def test_while_loop():
    @triton.jit
    def k(out_ptr, n):
        i = 0
        s = 0
        while i < n:
            s += i * i
            i += 1
        tl.store(out_ptr, s)
        tl.store(out_ptr + 1, i)

    out = np.zeros(2, np.int64)
    k[(1,)](out, 5)
    assert list(out) == [30, 5]
    assert "scf.while" in next(iter(k.cache.values())).asm["tir-raw"]


@needs_C
def test_loop_carried_type_change_is_an_error():
    @triton.jit
    def k(out_ptr, n):
        x = tl.zeros([16], tl.float16)
        for i in range(n):
            x = x + 1.5 * tl.full([16], 1.0, tl.float32)
        tl.store(out_ptr + tl.arange(0, 16), x)

    with pytest.raises(CompilationError, match="loop-carried variable 'x' has type"):
        k[(1,)](np.zeros(16, np.float16), 3)


# ---------------------------------------------------------------------------
# Expressions
# ---------------------------------------------------------------------------

GLOBAL_SCALE = tl.constexpr(3)
GLOBAL_INT = 5


@triton.jit
def exprs_kernel(out_ptr, a, b, F: tl.constexpr):
    i = tl.arange(0, 4)
    x = tl.where(i < 2, a, b)  # [a, a, b, b]
    lo = min(a, b)
    hi = max(a, b, 0)
    inside = 0
    if lo < F < hi:  # chained comparison on runtime values
        inside = 1
    flag = (a > 0) and (b < 0) or not (a < b) and (b > 100)
    neg = -x
    t = x.to(tl.float32) * GLOBAL_SCALE + GLOBAL_INT
    inf: tl.constexpr = float("inf")  # annotated: a plain `inf = ...` is an fp32 tensor
    col = i[:, None] + i[None, :] * 0  # [4, 4]
    sh = col.shape[0] * col.shape[1]
    tl.store(out_ptr + i, neg)
    tl.store(out_ptr + 4, inside)
    tl.store(out_ptr + 5, flag.to(tl.int32))
    tl.store(out_ptr + 6, t.to(tl.int32).max(0) if F > 0 else 0)
    tl.store(out_ptr + 7, 1 if inf > 1e30 and isinstance(inf, float) else 0)
    tl.store(out_ptr + 8, tl.sum(tl.sum(col, 1), 0))
    tl.store(out_ptr + 9, sh)
    tl.store(out_ptr + 10, lo * 100 + hi)


@needs_C
def test_expressions():
    out = np.zeros(11, np.int32)
    exprs_kernel[(1,)](out, 2, 7, F=5)
    assert list(out[:4]) == [-2, -2, -7, -7]
    assert out[4] == 1 and out[5] == 0
    assert out[6] == 7 * 3 + 5 and out[7] == 1
    assert out[8] == 4 * (0 + 1 + 2 + 3) and out[9] == 16 and out[10] == 2 * 100 + 7
    exprs_kernel[(1,)](out, 7, -2, F=10)
    assert out[4] == 0 and out[5] == 1 and out[10] == -2 * 100 + 7


@triton.jit
def _scale(x, factor: tl.constexpr):
    """A helper: scaled x and its sum."""
    y = x * factor
    return y, tl.sum(y, 0)


@triton.jit
def _twice(x):
    return x + x


@triton.jit(noinline=True)
def _inc(x):
    return x + 1


@needs_C
def test_jit_calls():
    @triton.jit
    def k(out_ptr):
        x = tl.arange(0, 8)
        a, s = _scale(x, 2)
        b, t = _scale(x, 3)
        c = _twice(x)
        d = _twice(_inc(s))
        e = _twice(x + 1)
        tl.store(out_ptr + x, a + b + c + e)
        tl.store(out_ptr + 8, s + t + d)

    out = np.zeros(9, np.int32)
    comp = k[(1,)](out)
    ar = np.arange(8)
    np.testing.assert_array_equal(out[:8], 2 * ar + 3 * ar + 2 * ar + 2 * (ar + 1))
    assert out[8] == 56 + 84 + 2 * 57
    raw = comp.asm["tir-raw"]
    assert raw.count("tt.call") == 6
    assert len(re.findall(r"tt\.func (?:\w+ )?@_scale", raw)) == 2  # one per constexpr
    assert len(re.findall(r"tt\.func (?:\w+ )?@_twice", raw)) == 2  # one per type
    assert "noinline = true" in raw


# ---------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------


def compile_error(kernel, *args, **kwargs):
    with pytest.raises(CompilationError) as ei:
        kernel.warmup(*args, grid=(1,), **kwargs)
    return ei.value


@needs_C
def test_error_unknown_name():
    @triton.jit
    def k(x_ptr):
        tl.store(x_ptr, foo)  # ERR-UNKNOWN

    e = compile_error(k, np.zeros(1, np.float32))
    assert e.message == "name 'foo' is not defined"
    assert e.file == THIS_FILE and e.line == line_of("# ERR-UNKNOWN")
    assert e.source_line.strip().startswith("tl.store(x_ptr, foo)")
    assert e.col == e.source_line.index("foo") + 1
    assert e.function == "k"
    text = str(e)
    assert f'line {e.line}, column {e.col}, in k:' in text and "^" in text


@needs_C
def test_error_arange_not_constexpr():
    @triton.jit
    def k(x_ptr, n):
        offs = tl.arange(0, n)  # ERR-ARANGE
        tl.store(x_ptr + offs, offs)

    e = compile_error(k, np.zeros(1, np.float32), 16)
    assert e.message == "tl.arange's arguments must be constexpr"
    assert e.line == line_of("# ERR-ARANGE")


@needs_C
def test_error_unsupported_constructs():
    @triton.jit
    def k_break(x_ptr, n):
        for i in range(n):
            break  # ERR-BREAK

    @triton.jit
    def k_lambda(x_ptr):
        f = lambda v: v  # noqa: E731

    @triton.jit
    def k_dictcomp(x_ptr):
        xs = {i: i for i in range(3)}  # comprehensions of lists and tuples are supported

    @triton.jit
    def k_with(x_ptr):
        with open("x"):
            pass

    @triton.jit
    def k_return_in_loop(x_ptr, n):
        for i in range(n):
            if i > 2:
                return  # ERR-LOOP-RETURN
        tl.store(x_ptr, 1.0)

    x = np.zeros(1, np.float32)
    e = compile_error(k_break, x, 3)
    assert e.message == "unsupported Python construct: 'break'"
    assert e.line == line_of("# ERR-BREAK")
    assert compile_error(k_lambda, x).message == "unsupported Python construct: 'lambda'"
    assert "comprehension" in compile_error(k_dictcomp, x).message
    assert compile_error(k_with, x).message == "unsupported Python construct: 'with'"
    e = compile_error(k_return_in_loop, x, 3)
    assert e.message == "unsupported Python construct: 'return inside a loop'"
    assert e.line == line_of("# ERR-LOOP-RETURN")


@needs_C
def test_error_from_the_builder_points_at_the_line():
    @triton.jit
    def k(x_ptr):
        a = tl.arange(0, 128)
        b = tl.arange(0, 64)
        c = a + b  # ERR-SHAPE
        tl.store(x_ptr + a, c)

    e = compile_error(k, np.zeros(128, np.int32))
    assert e.line == line_of("# ERR-SHAPE") and e.file == THIS_FILE
    assert "128" in e.message and "64" in e.message
    assert e.source_line.strip().startswith("c = a + b")
    assert e.col == e.source_line.index("a + b") + 1


@needs_C
def test_error_jit_call_arity_and_constexpr():
    @triton.jit
    def k(x_ptr):
        y = _twice(1, 2)  # ERR-ARITY

    @triton.jit
    def k2(x_ptr, n):
        y, s = _scale(tl.arange(0, 4), n)  # ERR-CONSTEXPR

    e = compile_error(k, np.zeros(1, np.float32))
    assert "_twice()" in e.message and "too many positional arguments" in e.message
    assert e.line == line_of("# ERR-ARITY")
    e = compile_error(k2, np.zeros(1, np.float32), 3)
    assert "'factor'" in e.message and "constexpr" in e.message
    assert e.line == line_of("# ERR-CONSTEXPR")


@needs_C
def test_error_static_assert_and_bad_index():
    @triton.jit
    def k(x_ptr, B: tl.constexpr):
        tl.static_assert(B % 16 == 0, "B must be a multiple of 16")

    @triton.jit
    def k2(x_ptr):
        a = tl.arange(0, 16)
        b = a[3]

    e = compile_error(k, np.zeros(1, np.float32), B=8)
    assert "static_assert failed: B must be a multiple of 16" in e.message
    k.warmup(np.zeros(1, np.float32), B=32, grid=(1,))
    assert "indexed with ':' and None" in compile_error(k2, np.zeros(1, np.float32)).message


@needs_C
def test_error_in_callee_points_into_callee():
    # The error names the call (as Triton's does); its __cause__ points into the callee.
    e = compile_error(_bad_caller, np.zeros(4, np.float32))
    assert e.function == "_bad_caller" and e.line == line_of("# ERR-SITE")
    inner = e.__cause__
    assert inner.function == "_bad_callee" and inner.line == line_of("# ERR-CALLEE")
    assert "undefined_thing" in inner.message and "undefined_thing" in e.message


@triton.jit
def _bad_callee(x):
    return x + undefined_thing  # ERR-CALLEE  # noqa: F821


@triton.jit
def _bad_caller(x_ptr):
    _bad_callee(tl.arange(0, 4))  # ERR-SITE


@needs_C
def test_execution_error():
    @triton.jit
    def k(x_ptr):
        offs = tl.arange(0, 64)
        tl.store(x_ptr + offs, offs.to(tl.float32))  # no mask: out of bounds

    with pytest.raises(ExecutionError):
        k[(1,)](np.zeros(16, np.float32))


# ---------------------------------------------------------------------------
# Whole kernels
# ---------------------------------------------------------------------------


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols,
                   BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    row_start_ptr = in_ptr + row * in_row_stride
    col_offsets = tl.arange(0, BLOCK_SIZE)
    input_ptrs = row_start_ptr + col_offsets
    row_vals = tl.load(input_ptrs, mask=col_offsets < n_cols, other=-float("inf"))
    row_minus_max = row_vals - tl.max(row_vals, axis=0)
    numerator = tl.exp(row_minus_max)
    denominator = tl.sum(numerator, axis=0)
    softmax_output = numerator / denominator
    out_row_start_ptr = out_ptr + row * out_row_stride
    tl.store(out_row_start_ptr + col_offsets, softmax_output, mask=col_offsets < n_cols)


@needs_C
def test_softmax():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((37, 100)).astype(np.float32)
    out = np.zeros_like(x)
    softmax_kernel[(x.shape[0],)](out, x, x.strides[0] // 4, out.strides[0] // 4, x.shape[1],
                                  BLOCK_SIZE=triton.next_power_of_2(x.shape[1]))
    e = np.exp(x - x.max(1, keepdims=True))
    tritium.testing.assert_close(out, e / e.sum(1, keepdims=True), atol=1e-6, rtol=1e-5)


@triton.jit
def layer_norm_fwd(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    mean = 0
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        _mean += a
    mean = tl.sum(_mean, axis=0) / N
    _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in tl.range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.)
        _var += x * x
    var = tl.sum(_var, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, tl.rsqrt(var + eps))
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
        x_hat = (x - mean) * rstd
        y = x_hat * w + b
        tl.store(Y + cols, y, mask=mask)


@needs_C
def test_layer_norm():
    rng = np.random.default_rng(2)
    M, N = 9, 300
    x = rng.standard_normal((M, N)).astype(np.float32)
    w = rng.standard_normal(N).astype(np.float32)
    b = rng.standard_normal(N).astype(np.float32)
    y = np.empty_like(x)
    mean = np.empty(M, np.float32)
    rstd = np.empty(M, np.float32)
    layer_norm_fwd[(M,)](x, y, w, b, mean, rstd, x.strides[0] // 4, N, 1e-5, BLOCK_SIZE=128)
    mu = x.mean(1, keepdims=True)
    var = ((x - mu) ** 2).mean(1, keepdims=True)
    ref = (x - mu) / np.sqrt(var + 1e-5) * w + b
    tritium.testing.assert_close(y, ref, atol=1e-4, rtol=1e-4)
    tritium.testing.assert_close(mean, mu[:, 0], atol=1e-5)
    tritium.testing.assert_close(rstd, 1 / np.sqrt(var[:, 0] + 1e-5), atol=1e-4, rtol=1e-4)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c = accumulator.to(tl.float16)
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


@needs_C
def test_matmul():
    rng = np.random.default_rng(3)
    M, N, K = 70, 50, 90
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float16)
    BM, BN, BK = 32, 32, 32

    def grid(meta):
        return (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)

    matmul_kernel[grid](a, b, c, M, N, K, a.strides[0] // 2, a.strides[1] // 2,
                        b.strides[0] // 2, b.strides[1] // 2, c.strides[0] // 2,
                        c.strides[1] // 2, BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, GROUP_M=4,
                        num_warps=4, num_stages=3)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    tritium.testing.assert_close(c, ref, atol=2e-2, rtol=1e-2)


# ---------------------------------------------------------------------------
# More of the surface
# ---------------------------------------------------------------------------


@triton.jit
def surface_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, HAS_EXTRA: tl.constexpr,
                   extra=None):
    """Docstrings are fine."""
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    SCALE: tl.constexpr = 2
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=float("nan"), cache_modifier=".cg",
                eviction_policy="evict_last")
    tl.static_assert(x.dtype == x_ptr.dtype.element_ty)
    blocks = triton.cdiv(n, BLOCK)  # a Python helper on a runtime value
    y = tl.where(x != x, 0.0, x) * SCALE  # NaN (masked lanes) -> 0
    y = y if HAS_EXTRA is False else y + 1.0
    if extra is not None:
        y += 100.0
    big = tl.math.exp(y) < 0.0  # never
    z = tl.zeros_like(y) + tl.sum(tl.where(not HAS_EXTRA, y, -y), axis=0)
    v, i = tl.max(y, 0, return_indices=True)
    w = tl.cast(y, tl.float16).to(tl.float32)
    t = tl.reshape(y, (BLOCK // 2, 2))
    t = tl.trans(t)
    u = tl.sum(tl.sum(t, axis=1), axis=0)
    tl.store(out_ptr + offs, y + w * 0, mask=mask & ~big)
    tl.store(out_ptr + BLOCK, z.max(0))
    tl.store(out_ptr + BLOCK + 1, v)
    tl.store(out_ptr + BLOCK + 2, i.to(tl.float32))
    tl.store(out_ptr + BLOCK + 3, blocks.to(tl.float32) + pid + nprog * 10 + u * 0)
    tl.store(out_ptr + BLOCK + 4, u)


@needs_C
def test_surface():
    x = np.arange(16, dtype=np.float32)
    out = np.zeros(16 + 5, np.float32)
    surface_kernel[(1,)](x, out, 10, BLOCK=16, HAS_EXTRA=False)
    y = np.where(np.arange(16) < 10, x * 2, 0)
    np.testing.assert_array_equal(out[:10], y[:10])
    assert out[16] == y.sum() and out[17] == 18 and out[18] == 9
    assert out[19] == 1 + 0 + 10 and out[20] == y.sum()
    surface_kernel[(1,)](x, out, 10, BLOCK=16, HAS_EXTRA=True, extra=3)
    y = np.where(np.arange(16) < 10, x * 2, 0) + 101
    np.testing.assert_array_equal(out[:10], y[:10])
    assert out[16] == -y.sum() and out[17] == 18 + 101 and out[18] == 9


@needs_C
def test_atomics_and_grid_dims():
    @triton.jit
    def k(counter_ptr, ids_ptr):
        pid = tl.program_id(0) + tl.program_id(1) * tl.num_programs(0)
        tl.atomic_add(counter_ptr, 1)
        tl.atomic_max(counter_ptr + 1, pid)
        tl.store(ids_ptr + pid, pid + tl.program_id(2) * 1000)

    counter = np.zeros(2, np.int32)
    ids = np.full(6, -1, np.int32)
    k[(3, 2)](counter, ids)
    assert list(counter) == [6, 5] and list(ids) == list(range(6))
    k[lambda meta: (0,)](counter, ids)  # an empty grid runs nothing
    assert list(counter) == [6, 5]


@needs_C
def test_compiled_kernel_launch_and_asm():
    x = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    c = add_kernel.warmup(x, x, out, 64, BLOCK_SIZE=32, grid=(2,))
    assert c.arg_names == ["x_ptr", "y_ptr", "out_ptr", "n_elements"]
    assert c.constants == {"BLOCK_SIZE": 32}
    c[(2,)](x, x, out, 64)
    np.testing.assert_array_equal(out, 2 * x)
    # the asm is the printed IR; it re-parses
    from tritium import _C
    for stage in ("tir-raw", "tir"):
        assert _C.print_module(_C.parse_module(c.asm[stage]), False) == c.asm[stage]


@needs_C
def test_bool_and_int64_and_float_args():
    @triton.jit
    def k(out_ptr, flag, big, f):
        if flag:
            tl.store(out_ptr, big + 1)
        else:
            tl.store(out_ptr, (f * 2).to(tl.int64))

    out = np.zeros(1, np.int64)
    k[(1,)](out, True, 2**40, 1.5)
    assert out[0] == 2**40 + 1
    k[(1,)](out, False, 2**40, 1.5)
    assert out[0] == 3
    sigs = sorted(str(c.signature) for c in k.cache.values())
    assert sigs == ["{'out_ptr': 'pointer<int64>', 'flag': 'int1', 'big': 'int64', "
                    "'f': 'fp32'}"]


@needs_C
def test_kernel_with_closure_and_nested_loops():
    WIDTH = 4

    @triton.jit
    def k(out_ptr, n, m):
        acc = tl.zeros([WIDTH], tl.int32)
        for i in range(n):
            for j in range(m):
                if (i + j) % 2 == 0:
                    acc += 1
                else:
                    acc -= 0
            acc = acc * 1
        tl.store(out_ptr + tl.arange(0, WIDTH), acc)

    out = np.zeros(4, np.int32)
    k[(1,)](out, 3, 5)
    assert (out == sum((i + j) % 2 == 0 for i in range(3) for j in range(5))).all()


@triton.jit
def _classify(x, LIMIT: tl.constexpr):
    if x > LIMIT:
        return x - LIMIT, 1
    elif x < -LIMIT:
        return x + LIMIT, -1
    return x * 0, 0


@triton.jit
def _pick(x, FIRST: tl.constexpr):
    if FIRST:
        return x
    return -x


@needs_C
def test_early_returns():
    @triton.jit
    def k(out_ptr, vals_ptr, n):
        pid = tl.program_id(0)
        if pid >= n:
            return
        v = tl.load(vals_ptr + pid)
        r, sign = _classify(v, 10)
        if sign == 0:
            tl.store(out_ptr + pid, _pick(v, True) * 1000)
            return
        tl.store(out_ptr + pid, r * sign + _pick(v, False) * 0)

    vals = np.array([5, 25, -13, 0, 11, 99], np.int32)
    out = np.full(6, -7, np.int32)
    k[(6,)](out, vals, 5)
    assert list(out) == [5000, 15, 3, 0, 1, -7]
    raw = next(iter(k.cache.values())).asm["tir-raw"]
    # the returned tuple (runtime value, then a constant per path) is merged by scf.if
    assert "scf.if" in raw and raw.count("tt.func") == 4


@needs_C
def test_inconsistent_returns_are_errors():
    @triton.jit
    def half(x):
        if x > 0:
            return x

    @triton.jit
    def k(out_ptr, a):
        tl.store(out_ptr, half(a))

    @triton.jit
    def k2(out_ptr, a):
        tl.store(out_ptr, a)
        return a  # ERR-KERNEL-RETURN

    e = compile_error(k, np.zeros(1, np.int32), 3)
    assert "returns a value on some paths but not on others" in e.message
    e = compile_error(k2, np.zeros(1, np.int32), 3)
    assert e.message == "a kernel cannot return a value"
    assert e.line == line_of("# ERR-KERNEL-RETURN")


@needs_C
def test_negative_constant_step():
    @triton.jit
    def k(out_ptr, n):
        acc = 0
        for i in range(n, 0, -1):
            acc = acc * 2 + i
        for j in tl.range(10, 2, -3):
            acc = acc * 100 + j
        tl.store(out_ptr, acc)

    out = np.zeros(1, np.int64)
    for n in (0, 1, 4):
        k[(1,)](out, n)
        acc = 0
        for i in range(n, 0, -1):
            acc = acc * 2 + i
        for j in range(10, 2, -3):
            acc = acc * 100 + j
        assert out[0] == acc % 2**32 - (2**32 if acc % 2**32 >= 2**31 else 0)


@needs_C
def test_device_print_and_assert(capfd):
    @triton.jit
    def k(x_ptr, n):
        offs = tl.arange(0, 2)
        x = tl.load(x_ptr + offs)
        print("x =", x)
        tl.device_print("n", n, hex=True)
        assert n < 10, "n too big"
        assert tl.sum(x, 0) > 0  # ERR-ASSERT

    x = np.array([5, 6], np.int32)
    k[(1,)](x, 11 - 8)
    printed = capfd.readouterr().out
    assert "x = 5" in printed and "x = 6" in printed and "n 0x3" in printed
    with pytest.raises(ExecutionError, match="n too big"):
        k[(1,)](x, 30)
    with pytest.raises(ExecutionError, match=r"tl.sum\(x, 0\) > 0") as ei:
        k[(1,)](x * 0, 3)
    assert f":{line_of('# ERR-ASSERT')}:" in str(ei.value)


# ---------------------------------------------------------------------------
# JITFunction._unsafe_update_src (Triton's hook: its tests' patch_kernel)
# ---------------------------------------------------------------------------


@tritium.jit
def _template(Z, X, Y, SIZE: tl.constexpr):
    off = tl.arange(0, SIZE)
    x = tl.load(X + off)
    y = tl.load(Y + off)
    z = GENERATE_TEST_HERE  # noqa: F821 -- replaced before every compile
    tl.store(Z + off, z)


def _patched(expr):
    k = tritium.JITFunction(_template.fn)
    k._unsafe_update_src(k.src.replace("GENERATE_TEST_HERE", expr))
    return k


@needs_C
def test_unsafe_update_src_compiles_the_new_text(tmp_path, monkeypatch):
    """Kernels made from one function with different texts each compute their own text,
    in one process and from a disk cache shared with another (the key is the text, not the
    function); a JITFunction updated twice drops what it compiled before."""
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    rng = np.random.default_rng(0)
    x = rng.random(64, dtype=np.float32)
    y = rng.random(64, dtype=np.float32) + 1
    cases = {"x + y": x + y, "x * y": x * y, "x - y": x - y, "tl.maximum(x, y)": np.maximum(x, y)}
    for expr, ref in cases.items():
        z = np.full(64, np.nan, dtype=np.float32)
        _patched(expr)[(1,)](z, x, y, SIZE=64)
        np.testing.assert_allclose(z, ref, rtol=1e-6, err_msg=expr)
    k = _patched("x + y")
    z = np.full(64, np.nan, dtype=np.float32)
    k[(1,)](z, x, y, SIZE=64)
    k._unsafe_update_src(k.src.replace("x + y", "x / y"))
    assert "x / y" in k.src
    k[(1,)](z, x, y, SIZE=64)
    np.testing.assert_allclose(z, x / y, rtol=1e-6)
    # PTX through the disk cache: two texts of one function, two kernels.
    sig = {"Z": "*fp32", "X": "*fp32", "Y": "*fp32"}
    ptx = [tritium.compile(_patched(e), signature=sig, constexprs={"SIZE": 64},
                           target="sm_90a").asm["ptx"] for e in ("x + y", "x * y", "x + y")]
    assert ptx[0] != ptx[1] and ptx[0] == ptx[2]
    assert "add.f32" in ptx[0] and "mul.f32" in ptx[1]


@needs_C
def test_unsafe_update_src_errors_point_into_the_new_text():
    k = _patched("x + undefined_name")
    with pytest.raises(CompilationError) as e:
        k[(1,)](np.zeros(8, np.float32), np.zeros(8, np.float32), np.zeros(8, np.float32),
                SIZE=8)
    msg = str(e.value)
    assert "z = x + undefined_name" in msg and "undefined_name' is not defined" in msg
    assert "<updated source of _template" in msg


def _iota(X, N: tl.constexpr):
    tl.store(X + tl.arange(0, N), tl.arange(0, N))


@needs_C
def test_launch_of_a_jit_function_nothing_else_holds():
    """`triton.jit(f)[grid](...)` on a temporary JITFunction: the launch keeps it alive (the
    fast launcher names it weakly), as Triton's does."""
    import gc

    for n in (8, 16):
        x = np.full(n, -1, np.int32)
        launch = tritium.jit(_iota)[(1,)]
        gc.collect()
        launch(x, N=n)
        np.testing.assert_array_equal(x, np.arange(n))


# ---------------------------------------------------------------------------
# The host side of Triton's tutorials: triton.runtime.driver, warmup's kernel
# ---------------------------------------------------------------------------


@tritium.jit
def _rowsum(out_ptr, in_ptr, stride, n_rows, n_cols, BLOCK: tl.constexpr, STAGES: tl.constexpr):
    for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0), num_stages=STAGES):
        cols = tl.arange(0, BLOCK)
        x = tl.load(in_ptr + row * stride + cols, mask=cols < n_cols, other=0.0)
        tl.store(out_ptr + row, tl.sum(x, axis=0))


@needs_C
def test_tutorial_host_code():
    """What Triton's fused-softmax tutorial does on the host: the device and its properties
    from `triton.runtime.driver.active`, `kernel.warmup(..., grid=(1,))`, `_init_handles()`,
    `n_regs`, `metadata.shared` (attribute access), then `compiled[grid](*every_parameter)`,
    constexprs included (they are ignored, as in Triton)."""
    from tritium.runtime import driver

    assert driver is triton.runtime.driver
    active = triton.runtime.driver.active
    device = active.get_active_torch_device()
    props = active.utils.get_device_properties(device.index or 0)
    assert {"multiprocessor_count", "max_num_regs", "max_shared_mem", "warpSize"} <= set(props)
    target = active.get_current_target()
    assert target.backend in ("cpu", "cuda")
    if target.backend != "cpu":
        pytest.skip("the CPU executor's half; the GPU's is in test_gpu_ops")
    x = np.random.default_rng(1).random((37, 50), dtype=np.float32)
    y = np.full(37, np.nan, dtype=np.float32)
    k = _rowsum.warmup(y, x, x.shape[1], 37, 50, BLOCK=64, STAGES=2, num_warps=4, grid=(1,))
    k._init_handles()
    assert k.n_regs == 0 and k.n_spills == 0 and k.metadata.shared == 0
    assert k.metadata["name"] == k.metadata.name == "_rowsum"
    with pytest.raises(AttributeError, match="no 'nonexistent'"):
        k.metadata.nonexistent
    k[(4, 1, 1)](y, x, x.shape[1], 37, 50, 64, 2)  # every parameter, as the tutorial passes
    np.testing.assert_allclose(y, x.sum(axis=1), rtol=1e-5)
    y[:] = np.nan
    k[(4,)](y, x, x.shape[1], 37, 50)  # or the runtime arguments alone
    np.testing.assert_allclose(y, x.sum(axis=1), rtol=1e-5)
    with pytest.raises(TypeError, match=r"expected 5 runtime arguments .* \(or all 7 parameters\)"):
        k[(1,)](y, x)


@needs_C
def test_compiled_gpu_kernel_takes_every_parameter_too():
    """A GPU compile's kernel maps `compiled[grid](*every_parameter)` to its runtime arguments
    the same way (checked without launching), and its metadata reads as attributes; both
    survive the disk cache."""
    sig = {"out_ptr": "*fp32", "in_ptr": "*fp32", "stride": "i32", "n_rows": "i32",
           "n_cols": "i32"}
    k = tritium.compile(_rowsum, signature=sig, constexprs={"BLOCK": 64, "STAGES": 2},
                        target="sm_90a")
    assert k.metadata.constexpr_positions == [5, 6] and k.metadata.num_warps == 4
    assert isinstance(k.metadata.shared, int)
    assert k._runtime_args(("o", "i", 1, 2, 3, 64, 2)) == ("o", "i", 1, 2, 3)
    from tritium.runtime.cuda import GPUKernel

    again = GPUKernel.from_blobs({n: v if isinstance(v, bytes) else v.encode()
                                  for n, v in k.to_blobs().items()})
    assert again.metadata.constexpr_positions == [5, 6]
    assert again._runtime_args(("o", "i", 1, 2, 3)) == ("o", "i", 1, 2, 3)


def _name_by_types(specialization):
    ty = specialization.signature["value1"]
    ones = "_".join(k for k, v in specialization.constants.items() if v == 1)
    return f"kernel_{ty}_{ones}"


@triton.jit(repr=_name_by_types)
def _named_by_repr(value1, is_one, X):
    tl.store(X, value1.to(tl.float32))


def test_jit_repr_names_each_specialisation():
    # @jit(repr=fn): the kernel's name comes from fn(specialization), with .signature (Triton's
    # type strings) and .constants (constexprs and ints specialised to 1), as in Triton.
    x = np.zeros(1, np.float32)
    names = [_named_by_repr[(1,)](v, 1, x).name for v in (-1, 2**31, 2**63, 7)]
    assert names == ["kernel_i32_is_one", "kernel_i64_is_one", "kernel_u64_is_one",
                     "kernel_i32_is_one"]
    assert x[0] == 7.0
    ck = tritium.compile(_named_by_repr, signature={"value1": "i64", "X": "*fp32"},
                         constexprs={"is_one": 1}, target="sm_90a", use_cache=False)
    assert ".entry kernel_i64_is_one(" in ck.asm["ptx"]


def test_jit_repr_must_give_a_name():
    @triton.jit(repr=lambda spec: "not a name")
    def bad_repr(X):
        tl.store(X, 1.0)

    with pytest.raises(CompilationError, match=r"returned 'not a name', not a kernel name"):
        bad_repr[(1,)](np.zeros(1, np.float32))
    with pytest.raises(TypeError, match="must be callable"):
        triton.jit(repr="kernel")(_name_by_types)


@triton.jit
def _store_value(VALUE, X):
    tl.store(X, VALUE.to(tl.float32))


@pytest.mark.parametrize("value,fits", [(2**64 - 1, True), (2**64, False), (-2**63, True),
                                        (-2**63 - 1, False)])
def test_int_argument_range(value, fits):
    # ints in int64 or uint64 pass (u64 for 2^63..2^64-1, as Triton); beyond, an OverflowError
    # as Triton raises, which is also a TypeError (a wrong argument).
    x = np.zeros(1, np.float32)
    if fits:
        _store_value[(1,)](value, x)
        assert x[0] == np.float32(value)
        return
    with pytest.raises(OverflowError, match="argument 'VALUE' of _store_value: .* does not fit"):
        _store_value[(1,)](value, x)
    with pytest.raises(TypeError):
        _store_value[(1,)](value, x)


def test_asm_reads_under_triton_names():
    # asm["ttir"] / asm["ttgir"] read the tile and GPU IR (Triton's names for its stages), and
    # are not stored twice.
    x = np.zeros(1, np.float32)
    h = _store_value[(1,)](5, x)
    assert h.asm["ttir"] is h.asm["tir"] and "ttir" in h.asm and "ttir" not in list(h.asm)
    assert "tt.store" in h.asm.get("ttir") and h.asm.get("ttgir") is None
    with pytest.raises(KeyError):
        h.asm["ttgir"]
    ck = tritium.compile(_store_value, signature={"VALUE": "i32", "X": "*fp32"}, target="sm_90a",
                         use_cache=False)
    assert ck.asm["ttgir"] is ck.asm["gir"] and "num_warps = 4" in ck.asm["ttgir"]
