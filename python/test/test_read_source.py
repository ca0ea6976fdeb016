"""codegen.read_source: a @jit function's source lines, found by parsing its file once (ast)
instead of tokenizing from its first line (inspect). The lines must be inspect's, up to the
comments and blank lines inspect keeps after the last statement."""

import inspect
import textwrap

import pytest

import tritium
import tritium.language as tl
from tritium.compiler import codegen
import _attention_bwd_kernels
import _attention_kernels


def _inspect_lines(fn):
    lines, start = inspect.getsourcelines(fn)
    while lines and (lines[-1].strip() == "" or lines[-1].lstrip().startswith("#")):
        lines = lines[:-1]
    return lines, start


def _jit_functions(module):
    return [v for v in vars(module).values() if getattr(v, "__tritium_jit__", False)]


@pytest.mark.parametrize("module", [_attention_kernels, _attention_bwd_kernels])
def test_the_lines_are_inspects(module):
    fns = _jit_functions(module)
    assert len(fns) >= 1
    for f in fns:
        file, lines, start = codegen.read_source(f.fn)
        assert file == inspect.getsourcefile(f.fn)
        assert (lines, start) == _inspect_lines(f.fn), f.__name__


def test_nested_and_decorated_definitions():
    @tritium.autotune(configs=[tritium.Config({"B": 16})], key=[])
    @tritium.jit
    def inner(x_ptr, B: tl.constexpr):
        v = tl.load(x_ptr + tl.arange(0, B))
        # a comment inside
        tl.store(x_ptr + tl.arange(0, B), v + 1)
        # a trailing comment

    fn = inner.fn.fn
    file, lines, start = codegen.read_source(fn)
    assert start == fn.__code__.co_firstlineno
    assert lines[0].lstrip().startswith("@tritium.autotune")
    assert lines[-1].strip() == "tl.store(x_ptr + tl.arange(0, B), v + 1)"
    assert (lines, start) == _inspect_lines(fn)
    assert inspect.getsourcelines(fn)[0][-1].strip() == "# a trailing comment"
    # the code generator reads the same text
    src = codegen.parse_function(fn)
    assert src.fdef.name == "inner"


def test_a_function_without_a_file_is_a_clear_error():
    ns = {}
    exec(textwrap.dedent("""
        def k(x):
            return x
    """), ns)
    with pytest.raises(tritium.CompilationError, match="must be defined in a file"):
        codegen.read_source(ns["k"])
