"""The mutation fuzzer (tools/fuzz/mutate_fuzz.py) on a fixed budget, a check that it finds and
minimises a planted bug (so it cannot pass silently), and regression tests of the bugs it found."""

import os
import sys

import pytest

_C = pytest.importorskip("tritium._C")

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
    counts = _run(fuzzer, "src", range(120))
    # The budget must reach the compiler, not only Python's parser.
    assert counts.get("error", 0) >= 30 and counts.get("ok", 0) >= 10, counts


def test_mutated_ir_fails_cleanly(fuzzer):
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
