"""64-bit division of extended 32-bit values (the narrow-division pass does them in 32 bits):
the same quotients and remainders as numpy's int64 arithmetic, on the CPU executor, and the
sm_90a PTX divides in 32 bits (no GPU needed)."""

import numpy as np

import tritium as triton
import tritium.language as tl


@triton.jit
def _pid_div_rem(q_ptr, r_ptr, n):
    pid = tl.program_id(0).to(tl.int64)
    tl.store(q_ptr + pid, pid // n)
    tl.store(r_ptr + pid, pid % n)


@triton.jit
def _signed_div_rem(a_ptr, q_ptr, r_ptr, d, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs).to(tl.int64)
    tl.store(q_ptr + offs, a // d.to(tl.int64))
    tl.store(r_ptr + offs, a % 7)


def _c_div(a, b):
    """C's truncating division and remainder (Triton's semantics), in int64."""
    q = np.abs(a) // np.abs(b) * np.sign(a) * np.sign(b)
    return q, a - q * b


def test_program_id_div_rem():
    grid, n = 1000, 37
    q = np.zeros(grid, np.int64)
    r = np.zeros(grid, np.int64)
    _pid_div_rem[(grid,)](q, r, n)
    pid = np.arange(grid, dtype=np.int64)
    assert np.array_equal(q, pid // n)
    assert np.array_equal(r, pid % n)


def test_signed_values_and_extremes():
    a = np.array([0, 1, -1, 7, -7, 100, -100, 2**31 - 1, -(2**31), -(2**31) + 1, 12345, -54321,
                  6, -6, 13, -13], np.int32)
    for d in (3, -3, -1, 2**31 - 1):  # 1 would be a constexpr
        q = np.zeros(16, np.int64)
        r = np.zeros(16, np.int64)
        _signed_div_rem[(1,)](a, q, r, d, BLOCK=16)
        wq, _ = _c_div(a.astype(np.int64), np.int64(d))
        _, wr = _c_div(a.astype(np.int64), np.int64(7))
        assert np.array_equal(q, wq), (d, q, wq)  # INT32_MIN / -1 = 2^31: kept in 64 bits
        assert np.array_equal(r, wr)


def test_ptx_divides_in_32_bits():
    k = triton.compile(_pid_div_rem, signature={"q_ptr": "*i64", "r_ptr": "*i64", "n": "i32"},
                       target="sm_90a")
    ptx = k.asm["ptx"]
    assert "div.s32" in ptx and "rem.s32" in ptx
    assert "div.s64" not in ptx and "rem.s64" not in ptx
    k = triton.compile(_signed_div_rem, signature={"a_ptr": "*i32", "q_ptr": "*i64",
                                                   "r_ptr": "*i64", "d": "i32"},
                       constexprs={"BLOCK": 16}, target="sm_90a")
    # a // d: a of either sign over any d (INT32_MIN / -1) stays 64-bit; a % 7 narrows to 32
    # bits, and its constant divisor makes it a multiply-high (support/divide.h), no rem at all
    ptx = k.asm["ptx"]
    assert "div.s64" in ptx and "mul.hi.s32" in ptx
    assert "rem.s64" not in ptx and "rem.s32" not in ptx
