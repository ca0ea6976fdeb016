"""Tuples as values inside kernels, as Triton's `tl.tuple` allows: tuples of tensors (nested, with
constants, namedtuples) passed to and returned from @jit functions, comprehensions over
compile-time sequences, `tl.tuple(...)`; on the CPU executor against numpy, and through ptxas."""

import os
import shutil
import subprocess
from collections import namedtuple

import numpy as np
import pytest

import tritium as triton
import tritium.language as tl

Pair = namedtuple("Pair", ["lo", "hi"])


@triton.jit
def _increment(values):
    return tl.tuple([v + 1 for v in values])


@triton.jit
def _scaled(t):
    # t = (x, (y, k)): a nested tuple holding a constant; the result is nested too.
    x, (y, k) = t
    return (x * k, (y * k, x + y))


@triton.jit
def _swap(p):
    return Pair(p.hi, p.lo)


@triton.jit
def _tuple_kernel(X, Y, OUT, K: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(X + offs)
    y = tl.load(Y + offs)
    a, b = _increment((x, y))                       # a tuple of tensors into a callee
    s, (t, u) = _scaled((a, (b, K)))                # nested, with a constant inside
    p = _swap(Pair(s, t))                           # a namedtuple keeps its fields
    squares = tl.tuple(v * v for v in (p.lo, p.hi, u))   # a generator into tl.tuple
    total = squares[0]
    for i in tl.static_range(1, len(squares)):
        total += squares[i]
    evens = [offs * j for j in range(6) if j % 2 == 0]   # a comprehension with a condition
    tl.store(OUT + offs, total + evens[0] + evens[1] + evens[2])


def _reference(x, y, k, n):
    a, b = x + 1, y + 1
    s, t, u = a * k, b * k, a + b
    offs = np.arange(n, dtype=np.float32)
    return t * t + s * s + u * u + offs * (0 + 2 + 4)


@pytest.mark.parametrize("k", [2, 3])
def test_tuples_cross_jit_calls(k):
    rng = np.random.default_rng(k)
    x = rng.standard_normal(16).astype(np.float32)
    y = rng.standard_normal(16).astype(np.float32)
    out = np.full(16, np.nan, np.float32)
    _tuple_kernel[(1,)](x, y, out, K=k, N=16)
    np.testing.assert_allclose(out, _reference(x, y, k, 16), rtol=1e-5, atol=1e-5)


@triton.jit
def _first(t):
    return t[0]


@triton.jit
def _structures_kernel(X, OUT, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(X + offs)
    # One callee, three tuple shapes: each call is its own specialisation.
    a = _first((x, 5))
    b = _first((x * 2, x, x))
    c = _first(((x + 1, 1), 2))[0]
    tl.store(OUT + offs, a + b + c)


def test_each_tuple_structure_specialises_the_callee():
    x = np.arange(8, dtype=np.float32)
    out = np.zeros(8, np.float32)
    _structures_kernel[(1,)](x, out, N=8)
    np.testing.assert_array_equal(out, x + 2 * x + x + 1)


@triton.jit
def _comprehension_over_tensor(X, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(X + offs)
    y = [v for v in x]  # noqa: F841


def test_a_comprehension_over_a_tensor_is_a_located_error():
    x = np.zeros(8, np.float32)
    with pytest.raises(triton.CompilationError) as info:
        _comprehension_over_tensor[(1,)](x, N=8)
    assert "comprehension" in str(info.value) and info.value.line > 0


def test_the_tuple_kernel_assembles_for_both_targets(tmp_path):
    ptxas = shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
    sig = {"X": "*fp32", "Y": "*fp32", "OUT": "*fp32"}
    for target in ("sm_80", "sm_90a"):
        ck = triton.compile(_tuple_kernel, signature=sig, constexprs={"K": 3, "N": 128},
                            target=target, use_cache=False)
        ptx = ck.asm["ptx"]
        assert ".entry" in ptx
        if not os.path.exists(ptxas):
            continue
        f = tmp_path / f"t_{target}.ptx"
        f.write_text(ptx)
        r = subprocess.run([ptxas, f"-arch={target}", str(f), "-o", os.devnull],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
