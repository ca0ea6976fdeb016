"""The default pipeline's --licm-scalars (lib/transforms/licm.cpp): a row loop's invariant
scalars (here `3.0 / n`, as in Liger's PolyNorm backward) are computed once before the loop, as
Triton's pipeline does; ptxas had left each division's reciprocal and its range fix-ups in the
loop. Tensor invariants stay in the loop. Checked on the PTX (no ptxas or GPU needed) and on the
executor against numpy."""

import re

import numpy as np

import tritium
import tritium.language as tl


@tritium.jit
def _rows(x_ptr, y_ptr, rows, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    for r in range(0, rows):
        x = tl.load(x_ptr + r * n + offs, mask=m, other=0.0)
        s = tl.sum(x * x, axis=0)
        y = (3.0 / n) * x * s + (1.0 / n) * x
        tl.store(y_ptr + r * n + offs, y, mask=m)


def _ptx(target):
    ck = tritium.compile(_rows, signature={"x_ptr": "*fp32", "y_ptr": "*fp32", "rows": "i32",
                                           "n": "i32"},
                         constexprs={"BLOCK": 256}, num_warps=4, target=target, use_cache=False)
    return ck.asm["ptx"], ck.asm["tir"]


def test_invariant_divisions_leave_the_loop():
    for target in ("sm_90a", "sm_80"):
        ptx, tir = _ptx(target)
        body = ptx.index("$L_for_body")
        divs = [m.start() for m in re.finditer(r"\bdiv\.\S+\.f32", ptx)]
        assert len(divs) == 2, re.findall(r"\bdiv\.\S+", ptx)
        assert all(d < body for d in divs), "a division of loop-invariant scalars stayed in the loop"
        # The tile IR: both divf before the scf.for, the splats of their results inside it.
        loop = tir.index("scf.for")
        assert [m.start() < loop for m in re.finditer(r"arith\.divf", tir)] == [True, True]
        assert re.search(r"tt\.splat", tir[loop:]), tir


def test_the_loop_computes_the_same_on_the_executor():
    rows, n = 5, 200
    x = np.random.default_rng(7).standard_normal((rows, n)).astype(np.float32)
    y = np.full_like(x, np.nan)
    _rows[(1,)](x, y, rows, n, BLOCK=256)
    s = (x.astype(np.float64) ** 2).sum(axis=1, keepdims=True)
    ref = (3.0 / n) * x * s + (1.0 / n) * x
    np.testing.assert_allclose(y, ref, rtol=2e-5, atol=1e-5)
