"""User mistakes in kernels, and faults while they run.

A mistake raises `tritium.CompilationError` whose str() names the file, line and column, quotes
the source line with a caret under the column, and says what was expected. Each erroneous line
below ends with a marker comment `# ERR <name>`; the expected line number is found with inspect
and the expected column is where a given token starts on that line (Python's ast column of the
offending node, 1-based in e.col).

An out-of-bounds access at run time raises `tritium.ExecutionError` naming the kernel, the source
line, the offset and the program id. No input may crash the process.
"""

import inspect
import os
import re
import subprocess
import sys
import textwrap

os.environ["TRITIUM_CHECK_ROUNDTRIP"] = "1"

import numpy as np
import pytest

if os.environ.get("TRITIUM_TEST_AGAINST_TRITON") == "1":
    pytest.skip("tritium's error reporting has no Triton-interpreter counterpart", allow_module_level=True)

import tritium
import tritium as triton
import tritium.language as tl

THIS_FILE = os.path.abspath(__file__)


def where(marker, token):
    """(line, col0, text) of `token` on the line of this file that ends with `# ERR <marker>`."""
    lines, _ = inspect.getsourcelines(sys.modules[__name__])
    hits = [i for i, text in enumerate(lines) if re.search(rf"# ERR {re.escape(marker)}(\s|$)", text)]
    assert len(hits) == 1, f"marker {marker!r} found {len(hits)} times"
    text = lines[hits[0]].rstrip("\n")
    assert token in text, (token, text)
    return hits[0] + 1, text.index(token), text


def check_error(e, marker, token, *patterns):
    """e points at `token` on the marked line, quotes it with a caret, and matches every pattern."""
    line, col0, text = where(marker, token)
    msg = str(e)
    assert isinstance(e, tritium.CompilationError), type(e)
    assert e.file and os.path.abspath(e.file) == THIS_FILE, (e.file, msg)
    assert e.line == line, f"expected line {line}, got {e.line}:\n{msg}"
    assert e.col == col0 + 1, f"expected column {col0 + 1} (1-based), got {e.col}:\n{msg}"
    # the message names file, line and column
    assert os.path.basename(THIS_FILE) in msg, msg
    assert re.search(rf"\b{line}\b", msg), msg
    assert re.search(rf"\b{col0 + 1}\b", msg), msg
    # ... quotes the source line, with a caret under the column
    stripped = text.strip()
    out_lines = msg.splitlines()
    quoted = [i for i, ml in enumerate(out_lines) if stripped in ml]
    assert quoted, f"source line not quoted:\n{msg}"
    i = quoted[0]
    assert i + 1 < len(out_lines) and out_lines[i + 1].strip() == "^", f"no caret line under the source:\n{msg}"
    caret = out_lines[i + 1].index("^")
    start = out_lines[i].index(stripped)
    indent = len(text) - len(text.lstrip())
    assert caret - start == col0 - indent, f"caret under column {caret - start + indent}, expected {col0}:\n{msg}"
    # ... and says what was expected
    for pat in patterns:
        assert re.search(pat, msg, re.IGNORECASE), f"message does not match {pat!r}:\n{msg}"


def compile_error(kernel, grid, *args, **meta):
    with pytest.raises(tritium.CompilationError) as info:
        kernel[grid](*args, **meta)
    return info.value


X = np.zeros(256, np.float32)
Y = np.zeros(256, np.float32)

# ----------------------------------------------------------------------------------------------
# compile errors


@triton.jit
def _unknown_name_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = x + undefined_thing  # ERR unknown-name  # noqa: F821
    tl.store(x_ptr + offs, y)


def test_unknown_name():
    e = compile_error(_unknown_name_kernel, (1,), X, BLOCK=16)
    check_error(e, "unknown-name", "undefined_thing", r"undefined_thing", r"not defined|undefined|unknown")


@triton.jit
def _expand_dims_axis_kernel(x_ptr, AXIS: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, 16))
    y = tl.expand_dims(x, AXIS)  # ERR expand-dims
    tl.store(x_ptr + tl.arange(0, 16), tl.reshape(y, 16))


@pytest.mark.parametrize("axis,pattern", [
    (-3, r"invalid axis -3"),
    (2, r"invalid axis 2"),
    ((0, -3), r"repeated axis"),  # -3 is dimension 0 of the rank-3 result
    ((0, 3), r"invalid axis 3"),
    ((0, 0), r"repeated axis.*duplicate axes, normalized axes = \[0, 0\]"),
    ((2, -1), r"repeated axis"),  # -1 is dimension 2 of the rank-3 result
    ((0, -3, 1), r"repeated axis"),  # -3 is dimension 1 of the rank-4 result
    ((0, -4), r"invalid axis -4"),
])
def test_expand_dims_invalid_axes(axis, pattern):
    e = compile_error(_expand_dims_axis_kernel, (1,), X, AXIS=axis)
    check_error(e, "expand-dims", "tl.expand_dims", pattern, r"expand_dims")


@triton.jit
def _unknown_tl_function_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    y = tl.no_such_function(offs)  # ERR unknown-attr
    tl.store(x_ptr + offs, y)


def test_unknown_language_function():
    e = compile_error(_unknown_tl_function_kernel, (1,), X, BLOCK=16)
    check_error(e, "unknown-attr", "tl.no_such_function", r"no_such_function")


@triton.jit
def _two_args(a, b):
    return a + b


@triton.jit
def _arity_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = _two_args(x)  # ERR arity
    tl.store(x_ptr + offs, y)


def test_wrong_arity_of_jit_call():
    e = compile_error(_arity_kernel, (1,), X, BLOCK=16)
    check_error(e, "arity", "_two_args(x)", r"_two_args", r"argument")


@triton.jit
def _arity_too_many_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = _two_args(x, x, x)  # ERR arity-many
    tl.store(x_ptr + offs, y)


def test_too_many_arguments_of_jit_call():
    e = compile_error(_arity_too_many_kernel, (1,), X, BLOCK=16)
    check_error(e, "arity-many", "_two_args(x, x, x)", r"_two_args", r"argument")


@triton.jit
def _shape_mismatch_kernel(x_ptr):
    z = tl.arange(0, 64) + tl.arange(0, 128)  # ERR shape
    tl.store(x_ptr + tl.arange(0, 64), z)


def test_shape_mismatch_in_binary_op():
    e = compile_error(_shape_mismatch_kernel, (1,), X)
    check_error(e, "shape", "tl.arange(0, 64) +", r"\b64\b", r"\b128\b", r"shape|broadcast|incompatible")


@triton.jit
def _mask_shape_kernel(x_ptr, n):
    offs = tl.arange(0, 64)
    x = tl.load(x_ptr + offs, mask=tl.arange(0, 32) < n)  # ERR mask-shape
    tl.store(x_ptr + offs, x)


def test_mask_shape_mismatch_in_load():
    e = compile_error(_mask_shape_kernel, (1,), X, 10)
    check_error(e, "mask-shape", "tl.load(", r"\b64\b", r"\b32\b", r"shape|broadcast|incompatible|mask")


@triton.jit
def _arange_npot_kernel(x_ptr):
    r = tl.arange(0, 48)  # ERR npot
    tl.store(x_ptr + r, r.to(tl.float32))


def test_arange_not_power_of_two():
    e = compile_error(_arange_npot_kernel, (1,), X)
    check_error(e, "npot", "tl.arange(0, 48)", r"power of (2|two)", r"\b48\b")


@triton.jit
def _arange_runtime_kernel(x_ptr, n):
    r = tl.arange(0, n)  # ERR arange-runtime
    tl.store(x_ptr + r, r.to(tl.float32))


def test_arange_with_runtime_bound():
    e = compile_error(_arange_runtime_kernel, (1,), X, 64)
    check_error(e, "arange-runtime", "tl.arange(0, n)", r"constexpr")


@triton.jit
def _static_range_runtime_kernel(x_ptr, n):
    acc = 0.0
    for i in tl.static_range(n):  # ERR static-range-runtime
        acc += i
    tl.store(x_ptr, acc)


def test_static_range_with_runtime_bound():
    e = compile_error(_static_range_runtime_kernel, (1,), X, 4)
    check_error(e, "static-range-runtime", "tl.static_range(n)", r"constexpr")


@triton.jit
def _break_kernel(x_ptr, n):
    acc = 0.0
    for i in range(n):
        if i > 3:
            break  # ERR break
        acc += 1.0
    tl.store(x_ptr, acc)


def test_break_unsupported():
    e = compile_error(_break_kernel, (1,), X, 8)
    check_error(e, "break", "break", r"\bbreak\b", r"support")


@triton.jit
def _lambda_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    f = lambda v: v + 1  # ERR lambda  # noqa: E731
    tl.store(x_ptr + offs, f(offs).to(tl.float32))


def test_lambda_unsupported():
    e = compile_error(_lambda_kernel, (1,), X, BLOCK=16)
    check_error(e, "lambda", "lambda", r"lambda", r"support")


@triton.jit
def _setcomp_kernel(x_ptr):
    vals = {i * 2 for i in range(4)}  # ERR setcomp
    tl.store(x_ptr, 1.0)


def test_set_comprehension_unsupported():
    # List comprehensions and generators over compile-time sequences are supported
    # (test_tuple_values_cpu.py); set and dict comprehensions are not.
    e = compile_error(_setcomp_kernel, (1,), X)
    check_error(e, "setcomp", "{i * 2", r"comprehension", r"support")


@triton.jit
def _load_non_pointer_kernel(x_ptr, n):
    v = tl.load(n)  # ERR load-non-pointer
    tl.store(x_ptr, v)


def test_load_from_non_pointer():
    e = compile_error(_load_non_pointer_kernel, (1,), X, 5)
    check_error(e, "load-non-pointer", "tl.load(n)", r"pointer")


@triton.jit
def _store_non_pointer_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(offs, offs)  # ERR store-non-pointer


def test_store_to_non_pointer():
    e = compile_error(_store_non_pointer_kernel, (1,), X, BLOCK=16)
    check_error(e, "store-non-pointer", "tl.store(offs", r"pointer")


@triton.jit
def _if_else_types_kernel(x_ptr, flag, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if flag > 0:  # ERR if-else-types
        v = x
    else:
        v = offs
    tl.store(x_ptr + offs, v)


def test_mismatched_types_across_if_else():
    e = compile_error(_if_else_types_kernel, (1,), X, 5, BLOCK=16)  # 1 would specialise to a constexpr
    check_error(e, "if-else-types", "if flag", r"\bv\b", r"f(p)?32|float32", r"i(nt)?32")


@triton.jit
def _loop_type_change_kernel(x_ptr, n):
    acc = 0
    for i in range(n):  # ERR loop-type
        acc = acc + 1.5
    tl.store(x_ptr, acc)


def test_loop_carried_type_change():
    # Triton rejects this (acc starts as int32 and becomes fp32 in the loop). tritium may accept it
    # by widening the initial value, as Python would; then the value must be right. Either way:
    # no other kind of error, and an error points at the loop and names the variable.
    x = np.full(4, np.nan, np.float32)
    try:
        _loop_type_change_kernel[(1,)](x, 4)
    except tritium.CompilationError as e:
        check_error(e, "loop-type", "for i", r"\bacc\b", r"f(p)?32|float32", r"i(nt)?32")
    else:
        assert x[0] == 6.0, x


@triton.jit
def _dot_shapes_kernel(a_ptr, b_ptr, c_ptr):
    rm = tl.arange(0, 16)
    rk = tl.arange(0, 32)
    a = tl.load(a_ptr + rm[:, None] * 32 + rk[None, :])  # 16 x 32
    b = tl.load(b_ptr + rm[:, None] * 16 + rm[None, :])  # 16 x 16
    c = tl.dot(a, b)  # ERR dot-shapes
    tl.store(c_ptr + rm[:, None] * 16 + rm[None, :], c)


def test_dot_with_bad_shapes():
    e = compile_error(_dot_shapes_kernel, (1,), X, Y, np.zeros(256, np.float32))
    check_error(e, "dot-shapes", "tl.dot(a, b)", r"\bdot\b", r"\b32\b", r"\b16\b")


@triton.jit
def _dot_1d_kernel(a_ptr, c_ptr):
    r = tl.arange(0, 16)
    a = tl.load(a_ptr + r)
    c = tl.dot(a, a)  # ERR dot-1d
    tl.store(c_ptr + r, c)


def test_dot_of_1d_tensors():
    e = compile_error(_dot_1d_kernel, (1,), X, Y)
    check_error(e, "dot-1d", "tl.dot(a, a)", r"\bdot\b", r"2-?D|two-dimensional|rank|dimension|shape")


@triton.jit
def _dot_errors_kernel(x_ptr, CASE: tl.constexpr, P: tl.constexpr):
    a = tl.zeros((32, 16), tl.float32)
    b = tl.zeros((16, 32), tl.float32)
    h = tl.zeros((32, 16), tl.float16)
    g = tl.zeros((16, 32), tl.float16)
    a3 = tl.zeros((2, 32, 16), tl.float32)
    if CASE == 0:
        c = tl.dot(a, b, input_precision=P)  # ERR dot-precision
    elif CASE == 1:
        c = tl.dot(a, b, input_precision="ieee", allow_tf32=False)  # ERR dot-both
    elif CASE == 2:
        c = tl.dot(a3, tl.zeros((4, 16, 32), tl.float32))  # ERR dot-batch
    elif CASE == 3:
        c = tl.dot(a3, b)  # ERR dot-rank-mix
    elif CASE == 4:
        c = tl.dot(a3, tl.zeros((2, 32, 32), tl.float32))  # ERR dot-batched-k
    elif CASE == 6:
        c = tl.dot(h, g, acc=tl.zeros((32, 32), tl.float16))  # ERR dot-acc16
    elif CASE == 7:
        c = tl.dot(h, g, out_dtype=tl.bfloat16)  # ERR dot-bf16
    elif CASE == 8:
        c = tl.dot(a, b, max_num_imprecise_acc=-1)  # ERR dot-imprecise
    else:
        c = tl.dot(a, tl.zeros((16, 32), tl.float16))  # ERR dot-mixed
    tl.store(x_ptr + tl.arange(0, 16), tl.sum(tl.reshape(c, (c.numel,)), 0) + tl.zeros((16,), tl.float32))


@pytest.mark.parametrize("case,marker,patterns", [
    (0, "dot-precision", [r"input_precision", r"'bf16x9'", r"tf32x3"]),
    (1, "dot-both", [r"input_precision", r"allow_tf32", r"not both"]),
    (2, "dot-batch", [r"batch", r"tensor<2x32x16xf32>", r"tensor<4x16x32xf32>"]),
    (3, "dot-rank-mix", [r"2-D", r"3-D", r"tensor<2x32x16xf32>", r"tensor<16x32xf32>"]),
    (4, "dot-batched-k", [r"third dimension \(16\)", r"second \(32\)", r"tensor<2x32x32xf32>"]),
    (6, "dot-acc16", [r"accumulator must be tensor<32x32xf32>", r"out_dtype=tl.float16"]),
    (7, "dot-bf16", [r"out_dtype=bf16"]),
    (8, "dot-imprecise", [r"max_num_imprecise_acc", r"-1"]),
    (9, "dot-mixed", [r"same dtype", r"tensor<32x16xf32>", r"tensor<16x32xf16>"]),
], ids=lambda v: v if isinstance(v, str) else None)
def test_dot_errors(case, marker, patterns):
    e = compile_error(_dot_errors_kernel, (1,), X, CASE=case, P="bf16x9")
    check_error(e, marker, "tl.dot(", *patterns)


@triton.jit
def _bad_arange_helper(x):
    return x + tl.arange(0, 24)  # ERR in-helper


@triton.jit
def _calls_bad_helper_kernel(x_ptr):
    offs = tl.arange(0, 32)
    tl.store(x_ptr + offs, _bad_arange_helper(offs).to(tl.float32))  # ERR call-site


def test_error_inside_called_function_points_into_it():
    """As in Triton, the error names the call and its __cause__ is the error inside the callee,
    which keeps its own line and caret (Python prints both)."""
    e = compile_error(_calls_bad_helper_kernel, (1,), X)
    check_error(e, "call-site", "_bad_arange_helper(offs)", r"in the call of _bad_arange_helper",
                r"power of (2|two)")
    assert isinstance(e.__cause__, tritium.CompilationError)
    check_error(e.__cause__, "in-helper", "tl.arange(0, 24)", r"power of (2|two)")


@triton.jit
def _bad_program_id_kernel(x_ptr):
    pid = tl.program_id(20)  # ERR bad-pid
    tl.store(x_ptr, pid.to(tl.float32))


def _raises_value_error(n):
    raise ValueError(f"no good: {n}")


@triton.jit
def _python_helper_raises_kernel(x_ptr, N: tl.constexpr):
    tl.store(x_ptr, _raises_value_error(N))  # ERR py-helper


def test_the_original_error_is_the_cause():
    # Triton's tests and code read a compile error's message from __cause__ (its CodeGenerator
    # raises `from e`): the located CompilationError keeps the original exception there.
    e = compile_error(_bad_program_id_kernel, (1,), X)
    check_error(e, "bad-pid", "tl.program_id(20)", r"program_id axis must be 0, 1, or 2 but got 20")
    assert e.__cause__ is not None
    assert re.search(r"program_id axis must be 0, 1, or 2 but got 20", str(e.__cause__))
    e = compile_error(_python_helper_raises_kernel, (1,), X, N=3)
    check_error(e, "py-helper", "_raises_value_error(N)", r"ValueError", r"no good: 3")
    assert isinstance(e.__cause__, ValueError) and str(e.__cause__) == "no good: 3"


@triton.jit
def _static_assert_kernel(x_ptr, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK >= 64, "BLOCK must be at least 64")  # ERR static-assert
    tl.store(x_ptr + tl.arange(0, BLOCK), tl.zeros([BLOCK], dtype=tl.float32))


def test_static_assert_fails_at_compile_time():
    e = compile_error(_static_assert_kernel, (1,), X, BLOCK=32)
    check_error(e, "static-assert", "tl.static_assert(", r"BLOCK must be at least 64")
    # and passes when the condition holds
    out = np.full(64, np.nan, np.float32)
    _static_assert_kernel[(1,)](out, BLOCK=64)
    np.testing.assert_array_equal(out, np.zeros(64, np.float32))


@triton.jit
def _float_floordiv_bitwise_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = x & 1  # ERR float-bitwise
    tl.store(x_ptr + offs, y)


def test_bitwise_op_on_float():
    e = compile_error(_float_floordiv_bitwise_kernel, (1,), X, BLOCK=16)
    check_error(e, "float-bitwise", "x & 1", r"f(p)?32|float")


@triton.jit
def _chained_compare_kernel(x_ptr, n):
    offs = tl.arange(0, 16)
    m = 0 < offs < n  # ERR chained-compare
    tl.store(x_ptr + offs, 1.0, mask=m)


def test_chained_comparison():
    # Triton rejects `a < b < c`; tritium may accept it with Python's meaning, elementwise.
    x = np.zeros(16, np.float32)
    try:
        _chained_compare_kernel[(1,)](x, 10)
    except tritium.CompilationError as e:
        check_error(e, "chained-compare", "0 < offs", r"comparison|compare", r"support")
    else:
        np.testing.assert_array_equal(x, ((0 < np.arange(16)) & (np.arange(16) < 10)).astype(np.float32))


@triton.jit
def _defined_in_one_branch_kernel(x_ptr, n):
    if n > 3:
        w = 1.0
    tl.store(x_ptr, w)  # ERR one-branch


def test_variable_defined_in_one_branch_only():
    e = compile_error(_defined_in_one_branch_kernel, (1,), X, 5)
    check_error(e, "one-branch", "w)", r"\bw\b", r"defined|undefined|branch")


@triton.jit
def _kernel_returns_value_kernel(x_ptr, n):
    tl.store(x_ptr, 1.0)
    return n  # ERR kernel-return


def test_kernel_cannot_return_a_value():
    e = compile_error(_kernel_returns_value_kernel, (1,), X, 5)
    check_error(e, "kernel-return", "return n", r"return")


@triton.jit
def _mixed_signedness_div_kernel(x_ptr, y_ptr):
    r = tl.arange(0, 16)
    x = tl.load(x_ptr + r)
    y = tl.load(y_ptr + r)
    tl.store(x_ptr + r, x // y)  # ERR mixed-sign


def test_division_with_mixed_signedness():
    e = compile_error(_mixed_signedness_div_kernel, (1,), np.ones(16, np.uint8), np.ones(16, np.int8))
    check_error(e, "mixed-sign", "x // y", r"signed")


@triton.jit
def _unsigned_negative_literal_kernel(x_ptr):
    r = tl.arange(0, 16)
    x = tl.load(x_ptr + r)
    tl.store(x_ptr + r, x + -1)  # ERR unsigned-negative


def test_unsigned_plus_negative_literal():
    e = compile_error(_unsigned_negative_literal_kernel, (1,), np.ones(16, np.uint8))
    check_error(e, "unsigned-negative", "x + -1", r"unsigned", r"negative|-1")


@triton.jit
def _literal_out_of_range_kernel(x_ptr):
    r = tl.arange(0, 16)
    x = tl.load(x_ptr + r)
    tl.store(x_ptr + r, x + 1000)  # ERR literal-range


def test_int_literal_out_of_range():
    e = compile_error(_literal_out_of_range_kernel, (1,), np.ones(16, np.int8))
    check_error(e, "literal-range", "x + 1000", r"\b1000\b", r"range", r"i(nt)?8")


@triton.jit
def _other_without_mask_kernel(x_ptr):
    r = tl.arange(0, 16)
    tl.store(x_ptr + r, tl.load(x_ptr + r, other=0))  # ERR other-no-mask


def test_load_other_without_mask():
    e = compile_error(_other_without_mask_kernel, (1,), np.ones(16, np.int8))
    check_error(e, "other-no-mask", "tl.load(x_ptr + r, other", r"other", r"mask")


def test_error_is_raised_again_on_second_call():
    # a failed compile is not cached as a success
    for _ in range(2):
        e = compile_error(_arange_npot_kernel, (1,), X)
        check_error(e, "npot", "tl.arange(0, 48)", r"power of (2|two)")


# ----------------------------------------------------------------------------------------------
# nothing crashes the process

NONSENSE = r'''
import os, sys
os.environ["TRITIUM_CHECK_ROUNDTRIP"] = "1"
import numpy as np
import tritium
import tritium as triton
import tritium.language as tl

X = np.zeros(64, np.float32)


@triton.jit
def k_arange_empty(x_ptr):
    tl.store(x_ptr + tl.arange(0, 0), 1.0)


@triton.jit
def k_arange_reversed(x_ptr):
    tl.store(x_ptr + tl.arange(16, 0), 1.0)


@triton.jit
def k_arange_huge(x_ptr):
    tl.store(x_ptr + tl.arange(0, 1 << 40), 1.0)


@triton.jit
def k_too_many_elements(x_ptr):
    z = tl.zeros([4096, 4096], dtype=tl.float32)
    tl.store(x_ptr, tl.sum(tl.sum(z, axis=1), axis=0))


@triton.jit
def k_negative_shape(x_ptr):
    z = tl.full([-4], 1.0, tl.float32)
    tl.store(x_ptr + tl.arange(0, 4), z)


@triton.jit
def k_program_id_axis(x_ptr):
    tl.store(x_ptr, tl.program_id(7).to(tl.float32))


@triton.jit
def k_reduce_axis(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 16))
    tl.store(x_ptr, tl.sum(x, axis=3))


@triton.jit
def k_bad_reshape(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 16))
    tl.store(x_ptr + tl.arange(0, 16), tl.reshape(x, [3, 5]))


@triton.jit
def k_index_tensor(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 16))
    tl.store(x_ptr, x[3])


@triton.jit
def k_bad_cast(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 16))
    tl.store(x_ptr + tl.arange(0, 16), x.to("not a dtype"))


@triton.jit
def k_bitcast_width(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 16))
    tl.store(x_ptr + tl.arange(0, 16), x.to(tl.int8, bitcast=True))


@triton.jit
def k_pointer_times_pointer(x_ptr):
    tl.store(x_ptr, (x_ptr * x_ptr).to(tl.float32))


@triton.jit
def k_string_arith(x_ptr):
    tl.store(x_ptr, "abc" + 1)


@triton.jit
def k_float_arange(x_ptr):
    tl.store(x_ptr + tl.arange(0.5, 16), 1.0)


@triton.jit
def k_bad_attribute(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 16))
    tl.store(x_ptr + tl.arange(0, 16), x.no_such_attr)


@triton.jit
def k_expand_dims_axis(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 16))
    tl.store(x_ptr + tl.arange(0, 16), x[:, None, None, None][5])


@triton.jit
def k_while_else(x_ptr, n):
    i = 0
    while i < n:
        i += 1
    else:
        i = 5
    tl.store(x_ptr, i.to(tl.float32))


@triton.jit
def k_try(x_ptr):
    try:
        tl.store(x_ptr, 1.0)
    except Exception:
        pass


@triton.jit
def k_nested_def(x_ptr):
    def inner(v):
        return v
    tl.store(x_ptr, inner(1.0))


@triton.jit
def k_global_nonconstexpr(x_ptr):
    tl.store(x_ptr + tl.arange(0, 64), X)


CASES = [
    ("k_arange_empty", k_arange_empty, ()),
    ("k_arange_reversed", k_arange_reversed, ()),
    ("k_arange_huge", k_arange_huge, ()),
    ("k_too_many_elements", k_too_many_elements, ()),
    ("k_negative_shape", k_negative_shape, ()),
    ("k_program_id_axis", k_program_id_axis, ()),
    ("k_reduce_axis", k_reduce_axis, ()),
    ("k_bad_reshape", k_bad_reshape, ()),
    ("k_index_tensor", k_index_tensor, ()),
    ("k_bad_cast", k_bad_cast, ()),
    ("k_bitcast_width", k_bitcast_width, ()),
    ("k_pointer_times_pointer", k_pointer_times_pointer, ()),
    ("k_string_arith", k_string_arith, ()),
    ("k_float_arange", k_float_arange, ()),
    ("k_bad_attribute", k_bad_attribute, ()),
    ("k_expand_dims_axis", k_expand_dims_axis, ()),
    ("k_while_else", k_while_else, (3,)),
    ("k_try", k_try, ()),
    ("k_nested_def", k_nested_def, ()),
    ("k_global_nonconstexpr", k_global_nonconstexpr, ()),
]

for name, kernel, extra in CASES:
    try:
        kernel[(1,)](X, *extra)
    except tritium.CompilationError as e:
        ok = e.line > 0 and e.file is not None and os.path.abspath(e.file) == os.path.abspath(__file__)
        print(f"RESULT {name} CompilationError {'located' if ok else 'unlocated'}", flush=True)
    except Exception as e:
        print(f"RESULT {name} {type(e).__module__}.{type(e).__name__}: {str(e)[:200]!r}", flush=True)
    else:
        print(f"RESULT {name} no-error", flush=True)
print("DONE", flush=True)
'''


def test_nonsense_kernels_do_not_crash(tmp_path):
    script = tmp_path / "nonsense_kernels.py"
    script.write_text(textwrap.dedent(NONSENSE))
    env = dict(os.environ)
    python_dir = os.path.dirname(os.path.dirname(os.path.abspath(tritium.__file__)))
    env["PYTHONPATH"] = python_dir + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=env)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"process died with {proc.returncode}:\n{out[-4000:]}"
    assert "DONE" in proc.stdout, out[-4000:]
    results = dict(line.split(" ", 2)[1:] for line in proc.stdout.splitlines() if line.startswith("RESULT "))
    assert len(results) == 20, results
    bad = {k: v for k, v in results.items() if v != "CompilationError located"}
    assert not bad, "kernels that did not raise a located CompilationError:\n" + "\n".join(
        f"  {k}: {v}" for k, v in bad.items())


# ----------------------------------------------------------------------------------------------
# run-time faults


@triton.jit
def _oob_load_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)  # ERR oob-load
    tl.store(y_ptr + offs, x)


def _check_exec_error(e, marker, kernel_name, offset, pid):
    line, _, _ = where(marker, "tl.")
    msg = str(e)
    assert isinstance(e, tritium.ExecutionError)
    assert kernel_name in msg, msg
    assert re.search(rf"\b{line}\b", msg), f"line {line} not named:\n{msg}"
    assert e.line == line, (e.line, msg)
    assert re.search(rf"(?<![\w.]){offset}(?!\d)", msg), f"offset {offset} not named:\n{msg}"
    assert re.search(rf"program[^\n]*\b{pid}\b", msg, re.IGNORECASE), f"program id {pid} not named:\n{msg}"


def test_out_of_bounds_load():
    x = np.arange(160, dtype=np.float32)  # programs 0, 1 are in bounds; program 2 reads 128..191
    y = np.full(192, np.nan, np.float32)
    with pytest.raises(tritium.ExecutionError) as info:
        _oob_load_kernel[(3,)](x, y, BLOCK=64)
    _check_exec_error(info.value, "oob-load", "_oob_load_kernel", 160, 2)


@triton.jit
def _oob_store_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(y_ptr + offs, x)  # ERR oob-store


def test_out_of_bounds_store():
    x = np.arange(100, dtype=np.float32)
    y = np.full(100, np.nan, np.float32)  # program 1 writes 64..127 without a mask
    with pytest.raises(tritium.ExecutionError) as info:
        _oob_store_kernel[(2,)](x, y, 100, BLOCK=64)
    _check_exec_error(info.value, "oob-store", "_oob_store_kernel", 100, 1)


@triton.jit
def _negative_offset_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs - 3)  # ERR oob-negative
    tl.store(y_ptr + offs, x)


def test_out_of_bounds_negative_offset():
    x = np.arange(64, dtype=np.float32)
    y = np.full(64, np.nan, np.float32)
    with pytest.raises(tritium.ExecutionError) as info:
        _negative_offset_kernel[(1,)](x, y, BLOCK=64)
    _check_exec_error(info.value, "oob-negative", "_negative_offset_kernel", -3, 0)


@triton.jit
def _masked_far_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    # masked-off lanes point far outside the buffer: they must not fault
    x = tl.load(x_ptr + offs * 100000, mask=offs < 1, other=-1.0)
    tl.store(y_ptr + offs * 100000 - 5, x, mask=offs > 100000)
    tl.store(y_ptr + offs, x, mask=offs < 8)


def test_masked_lanes_never_fault_and_process_survives_a_fault():
    x = np.arange(4, dtype=np.float32) + 1
    y = np.full(8, np.nan, np.float32)
    with pytest.raises(tritium.ExecutionError):
        _oob_load_kernel[(3,)](np.arange(160, dtype=np.float32), np.zeros(192, np.float32), BLOCK=64)
    _masked_far_kernel[(1,)](x, y, BLOCK=16)
    np.testing.assert_array_equal(y, [1, -1, -1, -1, -1, -1, -1, -1])


@triton.jit
def _triton_wording_kernel(x_ptr, CASE: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, 4))
    i = tl.arange(0, 4)
    if CASE == 0:
        y = x & x  # ERR wording-bitwise
    elif CASE == 1:
        y = i % i.to(tl.uint32)  # ERR wording-signedness
    elif CASE == 2:
        y = i[1:3]  # ERR wording-slice
    else:
        y = x | i  # ERR wording-mixed


@pytest.mark.parametrize("case,marker,snippet,pattern", [
    (0, "wording-bitwise", "x & x", r"invalid operands of type triton\.language\.fp32 and "
                                    r"triton\.language\.fp32"),
    (1, "wording-signedness", "i % i.to", r"Cannot use /, #, or % with triton\.language\.int32 "
                                          r"and triton\.language\.uint32"),
    (2, "wording-slice", "i[1:3]", r"unsupported tensor index"),
    # The operands' own types, not the ones promotion would give (f32 | i32 is not f32 | f32).
    (3, "wording-mixed", "x | i", r"invalid operands of type triton\.language\.fp32 and "
                                  r"triton\.language\.int32"),
])
def test_errors_carry_tritons_wording(case, marker, snippet, pattern):
    """Code and tests written against Triton's messages keep matching; the location, caret and
    tritium's own explanation stay."""
    e = compile_error(_triton_wording_kernel, (1,), X, CASE=case)
    check_error(e, marker, snippet, pattern)


@triton.jit
def _literal_out_of_range():
    huge: tl.constexpr = 0xFFFFFFFFFFFFFF
    x = tl.full((), 32, dtype=tl.int32)
    y = x + huge  # ERR huge-literal  # noqa: F841


def test_compilation_errors_are_triton_errors():
    """Code written for Triton catches compile errors as `triton.TritonError` (their base
    class there); a literal too wide for the other operand's type is one."""
    assert issubclass(tritium.CompilationError, triton.TritonError)
    with pytest.raises(triton.TritonError, match="out of range") as e:
        _literal_out_of_range[(1,)]()
    check_error(e.value, "huge-literal", "x + huge", r"out of range for i32")
