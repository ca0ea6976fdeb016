"""Smoke tests of the pybind11 module tritium._C (docs/bindings.md): build a
kernel directly through the Builder, run it on the CPU executor, and check
the exception contract."""

import gc

import numpy as np
import pytest

_C = pytest.importorskip("tritium._C")


def build_vector_add(block=128):
    """add_kernel(x_ptr, y_ptr, out_ptr, n): out = x + y, masked at n."""
    m = _C.Module()
    b = _C.Builder(m)
    f32p = _C.Type.pointer(_C.Type.scalar("f32"))
    i32 = _C.Type.scalar("i32")
    b.set_loc("vadd.py", 1, 1)
    fn = b.create_function("add_kernel", [f32p, f32p, f32p, i32], ["x_ptr", "y_ptr", "out_ptr", "n"])
    fn.set_attr("kernel", True)
    x_ptr, y_ptr, out_ptr, n = (fn.arg(i) for i in range(4))
    b.set_loc("vadd.py", 3, 5)
    pid = b.program_id(0)
    offs = b.binary("add", b.binary("mul", pid, block), b.arange(0, block))
    mask = b.binary("lt", offs, n)
    x = b.load(b.binary("add", x_ptr, offs), mask, 0.0)
    y = b.load(b.binary("add", y_ptr, offs), mask)
    b.store(b.binary("add", out_ptr, offs), b.binary("add", x, y), mask)
    b.ret([])
    return m


def test_vector_add_runs_on_executor():
    m = build_vector_add()
    _C.verify(m)
    text = _C.print_module(m)
    assert "tt.func @add_kernel" in text and "tt.make_range" in text
    n = 1000
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, dtype=np.float32)
    args = [_C.ExecPointer(a.ctypes.data, a.nbytes) for a in (x, y, out)] + [n]
    _C.execute(m, "add_kernel", ((n + 127) // 128, 1, 1), args)
    np.testing.assert_array_equal(out, x + y)


def test_module_outlives_python_references():
    # Drop the Module and Builder: values/functions still returned must keep
    # them alive (no use-after-free).
    m = _C.Module()
    b = _C.Builder(m)
    fn = b.create_function("k", [_C.Type.scalar("i32")], ["a"])
    v = b.binary("add", fn.arg(0), 1)
    del m, b, fn
    gc.collect()
    assert str(v.type) == "i32"
    assert v.defining_op.name == "arith.addi"


def test_user_error_carries_location():
    m = _C.Module()
    b = _C.Builder(m)
    b.set_loc("kern.py", 12, 7)
    b.create_function("k", [], [])
    with pytest.raises(_C.UserError) as info:
        b.arange(0, 100)
    message, file, line, col = info.value.args
    assert message == "arange's range must be a power of 2, got 100"
    assert (file, line, col) == ("kern.py", 12, 7)


def test_load_of_non_pointer_is_user_error():
    m = _C.Module()
    b = _C.Builder(m)
    b.set_loc("kern.py", 3, 9)
    b.create_function("k", [], [])
    x = b.full([128], 1.0, "f32")
    with pytest.raises(_C.UserError) as info:
        b.load(x)
    assert info.value.args == ("tl.load expects a pointer, got tensor<128xf32>", "kern.py", 3, 9)


def test_operand_conversion():
    m = _C.Module()
    b = _C.Builder(m)
    b.create_function("k", [], [])
    i8 = b.full([16], 1, "i8")
    assert str(b.binary("add", i8, True).type) == "tensor<16xi8>"  # bool, not int
    assert str(b.binary("add", i8, 3).type) == "tensor<16xi8>"
    assert str(b.binary("add", i8, 2.5).type) == "tensor<16xf32>"
    assert str(b.materialize(2**63).type) == "u64"
    assert str(b.materialize(2**31).type) == "u32"
    with pytest.raises(_C.UserError, match="does not fit in 64 bits"):
        b.materialize(2**64)
    with pytest.raises(_C.UserError, match="out of range for i8"):
        b.binary("add", i8, 300)
    with pytest.raises(TypeError):
        b.binary("add", i8, "x")


def test_types_are_interned_and_hashable():
    t = _C.Type.tensor(_C.Type.scalar("f16"), [4, 8])
    assert t == _C.Type.tensor(_C.Type.scalar("fp16"), [4, 8])
    assert hash(t) == hash(_C.Type.tensor(_C.Type.scalar("f16"), [4, 8]))
    assert t.shape == [4, 8] and t.element.dtype == "f16" and t.is_float_like
    p = _C.Type.pointer(_C.Type.scalar("i32"))
    assert p.is_pointer and p.pointee.dtype == "i32" and p.shape == [] and str(p) == "!tt.ptr<i32>"
    with pytest.raises(ValueError):
        _C.Type.scalar("float33")


def test_control_flow_and_passes():
    m = _C.Module()
    b = _C.Builder(m)
    i32 = _C.Type.scalar("i32")
    fn = b.create_function("sum_to", [i32], ["n"])
    acc0 = b.const_int(0, "i32")
    loop = b.create_for(0, fn.arg(0), 1, [acc0])
    ip = b.save_ip()
    body = loop.body(0)
    iv, acc = body.args
    b.set_insertion_point_to_end(body)
    b.yield_([b.binary("add", acc, iv)])
    b.restore_ip(ip)
    b.ret([loop.result(0)])
    _C.verify(m)
    assert [str(t) for t in fn.result_types] == ["i32"]
    assert "cse" in _C.all_passes()
    stats = _C.run_passes(m, _C.default_pipeline())
    assert isinstance(stats, dict)
    again = _C.parse_module(_C.print_module(m), "x.tir")
    assert _C.print_module(again) == _C.print_module(m)


def test_ir_error_and_internal_error_shapes():
    with pytest.raises(_C.IRError) as info:
        _C.parse_module("tt.func @k( {", "bad.tir")
    assert len(info.value.args) == 4
    assert info.value.args[1] == "bad.tir"


def test_internal_error_has_message_only():
    m = _C.Module()
    b = _C.Builder(m)
    fn = b.create_function("k", [], [])
    with pytest.raises(_C.InternalError) as info:
        b.discard_block(fn.body)  # not a detached block: a bug of the caller
    assert len(info.value.args) == 1 and "discardBlock" in info.value.args[0]


def test_execution_error_carries_location():
    m = _C.Module()
    b = _C.Builder(m)
    b.set_loc("oob.py", 1, 1)
    fn = b.create_function("k", [_C.Type.pointer(_C.Type.scalar("f32"))], ["p"])
    b.set_loc("oob.py", 5, 13)
    b.load(b.binary("add", fn.arg(0), b.arange(0, 128)))  # 128 floats from a 16-float array
    b.ret([])
    x = np.zeros(16, np.float32)
    with pytest.raises(_C.ExecutionError) as info:
        _C.execute(m, "k", (1, 1, 1), [_C.ExecPointer(x.ctypes.data, x.nbytes)])
    message, file, line, col = info.value.args
    assert (file, line, col) == ("oob.py", 5, 13) and message


def test_raw_ops_and_regions():
    m = _C.Module()
    b = _C.Builder(m)
    fn = b.create_function("k", [_C.Type.scalar("i32")], ["x"])
    op = b.create_op("tt.print", [fn.arg(0)], [], {"prefix": "x: "})
    assert op.name == "tt.print" and op.num_results == 0 and op.operands[0] == fn.arg(0)
    with pytest.raises(IndexError):
        op.body(0)
    with pytest.raises(ValueError):
        b.create_op("tt.nope", [], [])
    b.ret([])
    assert 'prefix = "x: "' in str(fn)
