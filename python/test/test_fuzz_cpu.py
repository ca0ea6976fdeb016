"""Random elementwise kernels, differential against a numpy model of Triton's integer semantics.

Each case builds a random expression tree over three int32 tensors, a runtime int scalar and
literals, using wrap-around arithmetic, C-like `//` and `%`, shifts, bit ops, min/max, where,
comparisons and round trips through narrower types; writes it into a kernel file; runs it on the
CPU executor; and compares bit for bit with numpy. Seeds are fixed, so a failure reproduces; the
failing kernel's source is in the assertion message.

`TRITIUM_TEST_AGAINST_TRITON=1` runs the same kernels under Triton's interpreter, `=cuda` under
real Triton on a GPU (checks of the numpy model itself; see harness.py).
"""

import importlib.util

import numpy as np
import pytest

from harness import AGAINST_TRITON, launch

MODULE = "triton" if AGAINST_TRITON else "tritium"

KERNEL_TEMPLATE = f"""
import {MODULE} as triton
import {MODULE}.language as tl


@triton.jit
def fuzz_kernel(a_ptr, b_ptr, c_ptr, out_ptr, s, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask, other=0)
    b = tl.load(b_ptr + offs, mask=mask, other=0)
    c = tl.load(c_ptr + offs, mask=mask, other=0)
    r = {{expr}}
    tl.store(out_ptr + offs, r, mask=mask)
"""

I32 = np.int32


def _c_divmod(x, y):
    x64, y64 = x.astype(np.int64), y.astype(np.int64)
    q = np.abs(x64) // np.abs(y64) * np.sign(x64) * np.sign(y64)
    return q.astype(I32), (x64 - q * y64).astype(I32)


class ExprGen:
    """Builds (source, numpy value, is_constant) triples of int32 expressions.

    Literals only ever meet a tensor or the runtime scalar: an operation between two literals
    would be folded with Python's semantics (unbounded ints, floor division), which is a
    different model, and a literal has no `.to()`.
    """

    def __init__(self, rng, env):
        self.rng = rng
        self.env = env  # name -> int32 array (or int for `s`)

    def var(self):
        k = self.rng.integers(0, 4)
        if k < 3:
            name = "abc"[k]
            return name, self.env[name], False
        return "s", np.full_like(self.env["a"], self.env["s"]), False

    def leaf(self):
        if self.rng.random() < 0.25:
            v = int(self.rng.integers(-50, 50))
            return f"({v})", np.full_like(self.env["a"], v), True
        return self.var()

    def expr(self, depth):
        if depth == 0 or self.rng.random() < 0.15:
            return self.leaf()
        op = self.rng.choice(["add", "sub", "mul", "div", "mod", "and", "or", "xor", "shl", "shr", "min", "max",
                              "where", "neg", "inv", "i8", "u8", "i16", "f32", "i64"])
        xs, xv, xc = self.expr(depth - 1)
        if op in ("neg", "inv"):
            return (f"(-{xs})", -xv, xc) if op == "neg" else (f"(~{xs})", ~xv, xc)
        if op in ("i8", "u8", "i16", "f32", "i64"):
            if xc:
                xs, xv, xc = self.var()
            if op == "i8":  # truncate to int8 and sign-extend back
                return f"{xs}.to(tl.int8).to(tl.int32)", xv.astype(np.int8).astype(I32), False
            if op == "u8":
                return f"{xs}.to(tl.uint8).to(tl.int32)", xv.astype(np.uint8).astype(I32), False
            if op == "i16":
                return f"{xs}.to(tl.int16).to(tl.int32)", xv.astype(np.int16).astype(I32), False
            if op == "f32":  # exact for |x| < 2**24: shift first
                return f"({xs} >> 8).to(tl.float32).to(tl.int32)", (xv >> 8).astype(np.float32).astype(I32), False
            # through int64 and back: no overflow at 64 bits, wrap-around on the way back
            return f"({xs}.to(tl.int64) * 3 // 2).to(tl.int32)", _trunc_div64(xv.astype(np.int64) * 3, 2).astype(I32), False
        ys, yv, yc = self.expr(depth - 1)
        if xc and yc:
            ys, yv, yc = self.var()
        if op == "add":
            return f"({xs} + {ys})", xv + yv, False
        if op == "sub":
            return f"({xs} - {ys})", xv - yv, False
        if op == "mul":
            return f"({xs} * {ys})", xv * yv, False
        if op in ("div", "mod"):
            # divisor in [1, 256]: no division by zero and no INT_MIN // -1
            if yc:
                ys, yv, yc = self.var()
            q, r = _c_divmod(xv, (yv & 255) + 1)
            sym = "//" if op == "div" else "%"
            return f"({xs} {sym} (({ys} & 255) + 1))", (q if op == "div" else r), False
        if op == "and":
            return f"({xs} & {ys})", xv & yv, False
        if op == "or":
            return f"({xs} | {ys})", xv | yv, False
        if op == "xor":
            return f"({xs} ^ {ys})", xv ^ yv, False
        if op == "shl":
            if yc:
                ys, yv, yc = self.var()
            return f"({xs} << ({ys} & 15))", np.left_shift(xv, yv & 15), False
        if op == "shr":
            if yc:
                ys, yv, yc = self.var()
            return f"({xs} >> ({ys} & 15))", np.right_shift(xv, yv & 15), False
        if op == "min":
            return f"tl.minimum({xs}, {ys})", np.minimum(xv, yv), False
        if op == "max":
            return f"tl.maximum({xs}, {ys})", np.maximum(xv, yv), False
        cs, cv, cc = self.expr(depth - 1)
        if xc and cc:
            cs, cv, cc = self.var()
        cmp = self.rng.choice(["<", "<=", ">", ">=", "==", "!="])
        cond = {"<": xv < cv, "<=": xv <= cv, ">": xv > cv, ">=": xv >= cv, "==": xv == cv, "!=": xv != cv}[cmp]
        return f"tl.where({xs} {cmp} {cs}, {xs}, {ys})", np.where(cond, xv, yv), False


def _trunc_div64(x, d):
    return np.abs(x) // d * np.sign(x)


def _load_kernel(tmp_path, index, expr):
    path = tmp_path / f"fuzz_kernel_{index}.py"
    path.write_text(KERNEL_TEMPLATE.format(expr=expr))
    spec = importlib.util.spec_from_file_location(f"fuzz_kernel_{index}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.fuzz_kernel, path.read_text()


@pytest.mark.parametrize("seed", range(40))
def test_random_int_expressions(seed, tmp_path):
    rng = np.random.default_rng(1000 + seed)
    n = int(rng.integers(1, 200))
    env = {
        "a": rng.integers(-2 ** 31, 2 ** 31, n, dtype=np.int64).astype(I32),
        "b": rng.integers(-1000, 1000, n).astype(I32),
        "c": rng.integers(-(2 ** 20), 2 ** 20, n).astype(I32),
        "s": int(rng.integers(-100, 100)),
    }
    if env["s"] in (1, 0):  # 1 would specialise to a constexpr; keep the runtime-scalar path
        env["s"] = 7
    with np.errstate(over="ignore"):
        expr, ref, _ = ExprGen(rng, env).expr(int(rng.integers(2, 6)))
    kernel, src = _load_kernel(tmp_path, seed, expr)
    out = np.full(n, 0x5A5A5A5A, I32)
    launch(kernel, ((n + 63) // 64,), env["a"], env["b"], env["c"], out, env["s"], n, BLOCK=64)
    np.testing.assert_array_equal(out, ref.astype(I32), err_msg=f"kernel:\n{src}\ns = {env['s']}")
