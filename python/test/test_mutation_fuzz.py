"""The mutation fuzzer (tools/fuzz/mutate_fuzz.py) on a fixed budget, a check that it finds and
minimises a planted bug (so it cannot pass silently), and regression tests of the bugs it found."""

import os
import sys

import numpy as np
import pytest

_C = pytest.importorskip("tritium._C")

import tritium  # noqa: E402
import tritium.language as tl  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "fuzz"))

import mutate_fuzz  # noqa: E402

OPT = os.path.join(os.environ.get("TRITIUM_BUILD_DIR", os.path.join(ROOT, "build")),
                   "tritium-opt")


@pytest.fixture
def fuzzer(tmp_path):
    fz = mutate_fuzz.Fuzzer(timeout=30, out_dir=str(tmp_path / "findings"), quiet=True)
    yield fz
    fz.close()


def _run(fz, kind, seeds):
    for seed in seeds:
        fz.one(kind, seed)
    found = [f"{f['kind']} seed {f['seed']}: {f['outcome']}: {f['detail']}\n{f['minimised']}"
             for f in fz.findings]
    assert not found, "\n\n".join(found)
    counts = fz.counts[kind]
    assert sum(counts.values()) == len(seeds)
    return counts


def test_mutated_sources_fail_cleanly(fuzzer):
    fuzzer.ptx = True  # tritium.compile for sm_90a as well as the CPU path
    counts = _run(fuzzer, "src", range(150))
    # The budget must reach the compiler, not only Python's parser.
    assert counts.get("error", 0) >= 30 and counts.get("ok", 0) >= 10, counts


def test_mutated_ir_fails_cleanly(fuzzer):
    fuzzer.execute = True  # verified IR also runs on the CPU executor
    counts = _run(fuzzer, "ir", range(800))
    assert counts.get("ok", 0) >= 20, counts


@pytest.mark.skipif(not os.access(OPT, os.X_OK), reason="build/tritium-opt is not built")
def test_mutated_ir_fails_cleanly_in_tritium_opt(fuzzer):
    counts = _run(fuzzer, "opt", range(250))
    assert counts.get("error", 0) >= 100, counts


def _first_finding(fz, kind):
    for seed in range(40):
        if fz.one(kind, seed):
            return fz.findings[0]
    raise AssertionError(f"the planted bug ({kind}) was never found")


def test_planted_index_error_is_found_and_minimised(fuzzer, tmp_path):
    f = _first_finding(fuzzer, "planted-index")
    assert f["outcome"] == "exception" and f["detail"].startswith("IndexError"), f
    # The plant fires on a source using both tl.where and tl.maximum: the minimised input keeps
    # exactly what that needs.
    small = f["minimised"]
    body = small.split("\n")[mutate_fuzz.HEADER.count("\n"):]
    assert "tl.where" in small and "tl.maximum" in small
    assert len([ln for ln in body if ln.strip()]) <= 2, small
    assert len(small) < len(f["input"])
    base = tmp_path / "findings" / f"planted-index-{f['seed']}-exception"
    assert (base.parent / (base.name + ".min.py")).read_text() == small
    assert (base.parent / (base.name + ".json")).exists()


def test_planted_abort_is_a_crash(fuzzer):
    fuzzer.min_budget = 40  # each step restarts the crashed worker
    f = _first_finding(fuzzer, "planted-abort")
    assert f["outcome"] == "crash", f
    assert "tl.where" in f["minimised"] and "tl.maximum" in f["minimised"]
    # The worker is restarted after the crash: the next inputs still run.
    assert fuzzer.evaluate("planted-abort", "x = 1", None) == ("ok", "")


# -- regression tests of the bugs the fuzzer found ------------------------------------------------

def test_verifier_error_of_op_without_loc_points_at_its_text():
    text = "tt.func @k(%x: tensor<8xi64>) {\n  %y = arith.extsi %x : tensor<8xi32>\n  tt.return\n}\n"
    m = _C.parse_module(text, "v.tir")
    with pytest.raises(_C.IRError) as info:
        _C.verify(m)
    message, file, line, col = info.value.args
    assert (file, line, col) == ("v.tir", 2, 3)
    assert message.startswith("'arith.extsi' op must widen")
    # The position is for diagnostics only: the text still round-trips without loc(...).
    assert _C.print_module(m) == text


def test_parse_error_quoting_a_non_ascii_character_is_an_ir_error():
    # The message quoted the first byte of a UTF-8 sequence; turning it into a Python str raised
    # UnicodeDecodeError instead of the IRError.
    with pytest.raises(_C.IRError) as info:
        _C.parse_module("tt.func @k() {\n  \u00e9 = arith.constant\n}\n", "u.tir")
    message, file, line, col = info.value.args
    assert "'\u00e9'" in message and (file, line, col) == ("u.tir", 2, 3)
    with pytest.raises(_C.IRError) as info:
        _C.parse_module("tt.func @k() {\n  \x01\n}\n", "u.tir")
    assert "byte" in info.value.args[0] and info.value.args[2] == 2


@tritium.jit
def _arange_beyond_64_bits(out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(2**63, BLOCK)
    tl.store(out_ptr + offs, offs)


@tritium.jit
def _zeros_of_void(out_ptr, BLOCK: tl.constexpr):
    z = tl.zeros([BLOCK], dtype=tl.void)
    tl.store(out_ptr + tl.arange(0, BLOCK), z)


@tritium.jit
def _program_id_beyond_int(out_ptr):
    pid = tl.program_id(2**32)
    tl.store(out_ptr, pid)


def test_axis_beyond_int_is_a_clean_compilation_error():
    # program_id(2**32) fits 64 bits but not the builder's int axis: pybind11's "program_id():
    # incompatible function arguments ..." was the message (found by the fuzzer, seed 1000048).
    with pytest.raises(tritium.CompilationError) as info:
        _program_id_beyond_int.warmup(np.zeros(4, np.int32))
    e = info.value
    assert e.message == "program_id: axis 4294967296 is out of range"
    assert e.line == _program_id_beyond_int.fn.__code__.co_firstlineno + 2 and e.col == 11


def _plain_helper(a):
    return _undefined_in_helper + a  # noqa: F821 - the user's bug


@tritium.jit
def _calls_failing_plain_helper(out_ptr):
    x = _plain_helper(3)
    tl.store(out_ptr, x)


def test_plain_python_helper_that_raises_is_the_users_error():
    # A NameError inside a plain (non-@jit) Python function called at compile time was reported
    # as "internal error: NameError: ..." (fuzzer seeds 1100117, 1101568, 1102420).
    with pytest.raises(tritium.CompilationError) as info:
        _calls_failing_plain_helper.warmup(np.zeros(4, np.int32))
    e = info.value
    assert e.message == ("_plain_helper() raised NameError at compile time: name "
                         "'_undefined_in_helper' is not defined")
    assert e.line == _calls_failing_plain_helper.fn.__code__.co_firstlineno + 2 and e.col == 9


def test_constexpr_int_beyond_64_bits_is_a_clean_compilation_error():
    # pybind11's "arange(): incompatible function arguments ... <tritium._C.Builder object at
    # 0x...>" was the message.
    with pytest.raises(tritium.CompilationError) as info:
        _arange_beyond_64_bits.warmup(np.zeros(16, np.int32), BLOCK=16)
    e = info.value
    assert e.message == "tl.arange's start must fit in 64 bits, got 9223372036854775808"
    assert e.line == _arange_beyond_64_bits.fn.__code__.co_firstlineno + 2 and e.col == 12


def test_tensor_of_void_is_a_clean_compilation_error():
    # The message was "KeyError: 'void'".
    with pytest.raises(tritium.CompilationError) as info:
        _zeros_of_void.warmup(np.zeros(16, np.float32), BLOCK=16)
    assert info.value.message == "void is not the type of a value"
    assert info.value.line == _zeros_of_void.fn.__code__.co_firstlineno + 2


def test_tensor_type_whose_element_count_overflows_is_rejected():
    # tensor<2^62 x 2^62> was accepted; its element count wrapped to 0.
    with pytest.raises(ValueError, match="at most 2\\^31 elements"):
        _C.Type.tensor(_C.Type.scalar("f32"), [2**62, 2**62])
    with pytest.raises(_C.IRError) as info:
        _C.parse_module("tt.func @k(%x: tensor<65536x65536xf32>) {\n  tt.return\n}\n", "t.tir")
    assert info.value.args == ("a tensor has at most 2^31 elements", "t.tir", 1, 29)
    assert _C.Type.tensor(_C.Type.scalar("f32"), [2**16, 2**15]).shape == [2**16, 2**15]


def test_exec_pointer_with_a_null_base_and_bytes_is_rejected():
    # The executor trusted nbytes and a kernel loading through ExecPointer(0, 32) segfaulted.
    with pytest.raises(ValueError, match="null base"):
        _C.ExecPointer(0, 32)
    assert _C.ExecPointer(0, 0).nbytes == 0
