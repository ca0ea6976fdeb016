"""`ptr: tl.const` (Triton's annotation for a read-only pointer argument) on the CPU executor:
loads through it run; a store or atomic through it, or through any pointer made from it (pointer
arithmetic, a helper's argument, a ternary of pointers, a pointer carried by a for or while
loop), is a
CompilationError at the write with Triton's wording, "Cannot store to a constant pointer", as the
error and as its __cause__."""

import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from tritium import CompilationError


@triton.jit
def _scale_kernel(x_ptr, w_ptr: tl.const, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    w = tl.load(w_ptr + offs, mask=m)
    tl.store(out_ptr + offs, x * w, mask=m)


def test_loads_through_a_const_pointer():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(100).astype(np.float32)
    w = rng.standard_normal(100).astype(np.float32)
    out = np.full(100, np.nan, np.float32)
    _scale_kernel[(1,)](x, w, out, 100, BLOCK=128)
    np.testing.assert_array_equal(out, x * w)


@triton.jit
def _write(p):
    tl.store(p, 1.0)


@triton.jit
def _bad_kernel(w_ptr: tl.const, o_ptr, n, MODE: tl.constexpr):
    if MODE == "direct":
        tl.store(w_ptr + 1, 1.0)
    elif MODE == "helper":
        _write(w_ptr + n)
    elif MODE == "ternary":
        p = w_ptr if MODE == "ternary" else o_ptr
        tl.store(p, 1.0)
    elif MODE == "where":
        offs = tl.arange(0, 16)
        p = tl.where(offs < n, w_ptr + offs, o_ptr + offs)
        tl.store(p, 1.0)
    elif MODE == "loop":
        p = o_ptr
        for i in range(n):
            p = w_ptr + i
        tl.store(p, 2.0)
    elif MODE == "while":
        p = o_ptr
        i = 0
        while i < n:
            p = w_ptr + i
            i += 1
        tl.store(p, 2.0)
    elif MODE == "atomic":
        tl.atomic_add(w_ptr, 1.0)
    else:
        tl.atomic_cas(w_ptr.to(tl.pointer_type(tl.int32)), 0, 1)


@pytest.mark.parametrize("mode", ["direct", "helper", "ternary", "where", "loop", "while", "atomic",
                                  "cas"])
def test_writes_through_a_const_pointer_are_errors(mode):
    w = np.zeros(16, np.float32)
    o = np.zeros(16, np.float32)
    with pytest.raises(CompilationError) as info:
        _bad_kernel[(1,)](w, o, 4, MODE=mode)
    err = info.value
    assert "Cannot store to a constant pointer" in str(err)
    assert "Cannot store to a constant pointer" in str(err.__cause__)
    # The location is the write's line (the helper's own store for "helper").
    assert "tl.store" in str(err) or "tl.atomic" in str(err), str(err)
    assert not w.any(), "nothing ran"


@triton.jit
def _string_annotation_kernel(w_ptr: "tl.const", o_ptr):
    tl.store(w_ptr, tl.load(o_ptr))


def test_postponed_annotation_is_recognised():
    # `from __future__ import annotations` makes every annotation a string.
    with pytest.raises(CompilationError, match="Cannot store to a constant pointer"):
        _string_annotation_kernel[(1,)](np.zeros(1, np.float32), np.ones(1, np.float32))


def test_const_is_an_annotation_not_a_value():
    with pytest.raises(TypeError, match="annotation"):
        tl.const()
