#!/usr/bin/env python3
"""Differential fuzzer of tritium's tile passes.

From a seed, builds a random valid tile program as a Python @jit kernel (written to a temp .py file
and imported, so inspect.getsource works), compiles it to raw tile IR (no passes), and runs on the
CPU executor, on the same fresh random inputs:
  (a) the raw IR,
  (b) the raw IR after each single pass of `_C.default_pipeline()` + `licm`, and after each prefix
      of the pipeline,
  (c) the whole pipeline (+ licm),
  (d) prefetch-loads alone, after the whole pipeline, and after the GPU layout passes (the GPU
      compile runs it on both levels), there also after the pipeliner (which stages a dot loop's
      vector loads through shared memory),
  (e) the GPU compile's passes in its order (but fuse-multiply-add), through shared-memory
      allocation and barrier insertion.
All outputs are compared bit for bit (ints and floats: the passes must not change a float result,
not even the sign of a zero or a NaN payload's presence). A mismatch (or a pass / the executor
failing only after a pass) prints the seed, the stage and a delta-minimised program.

Usage: python3 tools/fuzz/kernel_fuzz.py [--seeds N] [--start S] [--seed S] [-q]
(`make fuzz SEEDS=N`).
"""

import argparse
import importlib.util
import os
import re
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

from tritium import _C  # noqa: E402

INT_DTYPES = ["int32", "int64"]
FLOAT_DTYPES = ["float16", "float32", "float64"]
NP = {"int8": np.int8, "int32": np.int32, "int64": np.int64, "float16": np.float16,
      "float32": np.float32, "float64": np.float64}
UINT_VIEW = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}

HEADER = """import tritium as triton
import tritium.language as tl

"""


def pipelines():
    """(stage name, pass list) pairs, all starting from the raw IR."""
    pipe = list(_C.default_pipeline()) + ["licm"]
    stages = []
    for p in dict.fromkeys(pipe):
        stages.append((f"single pass {p}", [p]))
    for i in range(2, len(pipe)):
        stages.append((f"pipeline prefix {'+'.join(pipe[:i])}", pipe[:i]))
    stages.append(("whole pipeline + licm", pipe))
    # prefetch-loads (run by the GPU compile, not the tile pipeline): the loads of a reducing
    # loop one iteration ahead must not change a bit of the result.
    stages.append(("single pass prefetch-loads", ["prefetch-loads"]))
    stages.append(("whole pipeline + split-masked-loops",
                   pipe + ["split-masked-loops", "canonicalize", "cse", "dce"]))
    stages.append(("whole pipeline + prefetch-loads", pipe + ["prefetch-loads"]))
    # ...and on the GPU IR, where it takes loops with a dot (the executor runs laid-out IR).
    layouts = ["convert-to-gpu", "remove-layout-conversions", "accelerate-matmul",
               "propagate-layouts", "remove-layout-conversions"]
    stages.append(("GPU layouts + prefetch-loads", pipe + layouts + ["prefetch-loads"]))
    # The GPU compile's order: the pipeliner (a dot loop's operands and its other vector loads
    # into shared memory, stages ahead), then prefetch-loads on the loops it left.
    stages.append(("GPU layouts + pipeline + prefetch-loads",
                   pipe + layouts + ["pipeline", "prefetch-loads"]))
    # The GPU compile's whole order (lib/target/nvidia/pipeline.cpp) but fuse-multiply-add, which
    # rounds once where the program rounds twice: shared memory allocated, barriers inserted.
    # Tensor-descriptor blocks: sm_90a keeps those a pipelined dot loop reads (the pipeliner
    # copies them with TMA, which the executor runs) and its 2-D stores (TMA stores through
    # shared memory: lower-tma-stores); "descriptors expanded" is every target
    # without TMA (run_passes' target sm_80).
    expand = ["expand-descriptor-loads", "canonicalize", "cse", "licm-scalars", "dce"]
    stages.append(("descriptors expanded", pipe + expand, "sm_80"))
    gpu_order = (list(_C.default_pipeline()) + expand +
                 ["split-masked-loops", "canonicalize", "cse", "dce", "prefetch-loads"] + layouts +
                 ["pipeline", "prefetch-loads", "lower-tma-stores", "order-warpgroups",
                  "allocate-shared-memory", "insert-barriers"])
    stages.append(("GPU compile order", gpu_order))
    # The same with two warpgroups (8 warps): a dot loop of several wgmmas pipelined with 2
    # stages retires them in their iteration (sync-two-stage-dots), with 3 keeps them async.
    for n in (2, 3):
        stages.append((f"GPU compile order, 8 warps, {n} stages", gpu_order, "sm_90a",
                       {"num_warps": 8, "num_stages": n}))
    return stages


class Gen:
    """Random program: a list of statements (each a list of source lines, removable as a unit)."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        r = self.rng
        self.dtype = str(r.choice(INT_DTYPES + FLOAT_DTYPES))
        self.is_int = self.dtype in INT_DTYPES
        self.two_d = bool(r.random() < 0.5)
        if self.two_d:
            self.bm = int(r.choice([1, 2, 4, 8, 16, 32, 64]))
            self.bn = int(r.choice([1, 2, 4, 8, 16, 32, 64]))
            if r.random() < 0.3:
                self.bm = self.bn = 16
        else:
            self.bm, self.bn = int(r.choice([1, 2, 4, 8, 16, 32, 64, 128, 256])), 1
        self.grid = int(r.choice([1, 2]))
        if self.grid * self.bm * self.bn < 2:
            self.grid = 2  # an int argument equal to 1 would be specialised away
        self.nvars = 0
        self.in_helper = False
        self.stmts = []
        self.helpers = []
        self.k = int(r.choice([0, 2, 3, 4]))       # loop trip / if condition (never 1: specialised)
        self.s = int(r.choice([-7, -2, 0, 2, 3, 5, 31, 64]))

    # -- expressions -------------------------------------------------------------------------
    def D(self):
        return f"tl.{self.dtype}"

    def var(self):
        return f"v{int(self.rng.integers(0, self.nvars))}"

    def lit(self):
        r = self.rng
        if self.is_int:
            return str(int(r.choice([0, 1, 2, 3, -1, -5, 7, 31, 32, 63, 255, -128, 1000])))
        return str(float(r.choice([0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 3.25, -1.5, 1e30])))

    def leaf(self):
        """(source, is_tensor)."""
        r = self.rng.random()
        if r < 0.2:
            return f"({self.lit()})", False
        if r < 0.3:
            return f"s.to({self.D()})", False
        if r < 0.42:
            # constant tiles: folds of the canonicalizer see constant operands
            shape = f"[{self.bm}, {self.bn}]" if self.two_d else f"[{self.bm}]"
            return f"tl.full({shape}, {self.lit()}, {self.D()})", True
        if r < 0.48 and not self.in_helper:
            return f"offs.to({self.D()})", True
        return self.var(), True

    def expr(self, depth):
        """(source, is_tensor); never an operation between two non-tensors (it would fold in
        Python, or a literal has no .to())."""
        r = self.rng
        if depth == 0 or r.random() < 0.2:
            return self.leaf()
        (a, at), (b, bt) = self.expr(depth - 1), self.expr(depth - 1)
        if not at and not bt:
            b, bt = self.var(), True
        ops = ["+", "-", "*", "max", "min", "where", "cmp", "cast", "neg"]
        if self.is_int:
            ops += ["//", "%", "&", "|", "^", "<<", ">>", "~", "unsigned"]
        else:
            ops += ["/"]
        op = str(r.choice(ops))
        if op == "/":
            return f"({a} / {b}).to({self.D()})", True
        if op == "unsigned":  # divui, remui, shrui, maxui, cmp unsigned
            u = "tl.uint32" if self.dtype == "int32" else "tl.uint64"
            uop = str(r.choice(["//", "%", ">>", "max", "<"]))
            x, y = f"{self.var()}.to({u})", f"{b if bt else self.var()}.to({u})"
            if uop == "max":
                return f"tl.maximum({x}, {y}).to({self.D()})", True
            return f"({x} {uop} {y}).to({self.D()})", True
        if op in ("+", "-", "*", "//", "%", "&", "|", "^", "<<", ">>"):
            return f"({a} {op} {b})", True
        if op == "neg":
            return (f"(-{a})", True) if at else (f"(-{self.var()})", True)
        if op == "~":
            return f"(~{self.var()})", True
        if op in ("max", "min"):
            return f"tl.{'maximum' if op == 'max' else 'minimum'}({self.var()}, {b}).to({self.D()})", True
        if op == "cmp":
            c = str(r.choice(["<", "<=", ">", ">=", "==", "!="]))
            return f"({self.var()} {c} {b}).to({self.D()})", True
        if op == "where":
            c = str(r.choice(["<", ">", "==", "!="]))
            return f"tl.where({self.var()} {c} {b}, {a}, {self.var()})", True
        # cast through another dtype and back
        t = str(r.choice(["int8", "int16", "int32", "int64", "uint8", "uint32", "float16",
                          "float32", "float64"]))
        return f"{self.var()}.to(tl.{t}).to({self.D()})", True

    def texpr(self, depth):
        """A tensor expression."""
        e, t = self.expr(depth)
        return e if t else f"({e} + {self.var()})"

    def assign(self, e):
        name = f"v{self.nvars}"
        self.nvars += 1
        return name, [f"{name} = {e}"]

    # -- statements --------------------------------------------------------------------------
    def statement(self):
        r = self.rng
        kind = str(r.choice(["expr"] * 6 + ["reduce", "loop", "if", "static", "call", "dot",
                                            "stream"]))
        if kind == "reduce":
            f = str(r.choice(["sum", "max", "min", "argmax", "argmin"]))
            src = self.var()
            if self.two_d:
                axis = int(r.integers(0, 2))
                idx = "[:, None]" if axis == 1 else "[None, :]"
                return self.assign(f"{self.var()} + tl.{f}({src}, axis={axis}).to({self.D()}){idx}")
            return self.assign(f"{self.var()} + tl.{f}({src}, axis=0).to({self.D()})")
        if kind == "loop":
            acc = self.var()
            name = f"v{self.nvars}"
            self.nvars += 1
            body = self.texpr(2)
            lo = int(r.choice([0, 1]))
            return name, [f"{name} = {acc}",
                          f"for i in range({lo}, k):",
                          f"    {name} = ({name} {'+-*'[int(r.integers(0, 3))]} {body}) + i.to({self.D()})"]
        if kind == "stream":
            # A loop that loads a tile an iteration (a row loop's shape: prefetch-loads moves
            # such loads an iteration ahead), reduces it or feeds it to a dot, and broadcasts a
            # vector loaded in the same iteration onto the dot's result.
            init = self.var()
            name = f"v{self.nvars}"
            self.nvars += 1
            p = str(r.choice(["x", "y", "z"]))
            c = int(r.choice([1, 3, self.bm]))
            lo = int(r.choice([0, 1]))
            D = self.D()
            lines = [f"{name} = {init}", f"for i in range({lo}, k):",
                     f"    w = tl.load({p}_ptr + offs + i * {c}, mask=offs + i * {c} < n, "
                     f"other=0).to({D})"]
            dot_loop = self.two_d and self.bm == self.bn and self.bm >= 16 and r.random() < 0.5
            if dot_loop and self.dtype == "float16" and r.random() < 0.5:
                # The tile as a tensor descriptor's block (the whole input as a
                # [grid * BM, BN] matrix, rows past it read as zero): on sm_90a a TMA copy.
                rows_all = self.grid * self.bm
                lines[-1] = (f"    w = tl.make_tensor_descriptor({p}_ptr, [{rows_all}, {self.bn}], "
                             f"[{self.bn}, 1], [{self.bm}, {self.bn}]).load("
                             f"[pid * {self.bm} + i * {c}, 0])")
            if dot_loop:
                # fp16 data: the loaded tile is the dot's operand as it is, so the GPU
                # pipeliner takes the loop and stages the vector u through shared memory.
                t = "int8" if self.is_int else ("float16" if self.dtype == "float16"
                                                else "float32")
                lines.append(f"    u = tl.load({p}_ptr + rows + i, mask=rows + i < n, "
                             f"other=0).to({D})")
                # The tile as the dot's A, transposed as its B (the pipeliner copies it as
                # loaded and reads it through a transposed view), or both from one load.
                x = self.var()
                form = str(r.choice(["a", "b_t", "both"]))
                dots = []
                if form in ("a", "both"):
                    dots.append(f"tl.dot(w.to(tl.{t}), {x}.to(tl.{t}))")
                if form in ("b_t", "both"):
                    dots.append(f"tl.dot({x}.to(tl.{t}), tl.trans(w.to(tl.{t})))")
                # (a difference: accelerate-matmul folds `x + dot` into the dot's accumulator,
                # which reassociates a float sum by design)
                upd = f"({' - '.join(dots)})"
                if r.random() < 0.5:
                    # Attention's masks: the key columns i + cols against a bound, and
                    # (causal) against the rows: true on a prefix of the iterations, which
                    # --split-masked-loops runs as a loop without them.
                    keep = str(r.choice([f"(i + cols)[None, :] < s",
                                         f"rows[:, None] >= (i + cols)[None, :]",
                                         f"((i + cols)[None, :] < n) & "
                                         f"(rows[:, None] >= (i + cols)[None, :])"]))
                    upd = f"tl.where({keep}, {upd}, 0)"
                upd = f"{upd}.to({D}) * u[:, None]"
            elif self.two_d:
                axis = int(r.integers(0, 2))
                idx = "[:, None]" if axis == 1 else "[None, :]"
                upd = f"tl.sum(w * {self.var()}, axis={axis}).to({D}){idx}"
            else:
                upd = f"tl.sum(w * {self.var()}, axis=0).to({D})"
            lines.append(f"    {name} = {name} + {upd}")
            return name, lines
        if kind == "if":
            name = f"v{self.nvars}"
            e1, e2 = self.texpr(2), self.texpr(2)
            self.nvars += 1
            c = str(r.choice(["k > 2", "k == 0", "s < 3"]))
            return name, [f"if {c}:", f"    {name} = {e1}", "else:", f"    {name} = {e2}"]
        if kind == "static":
            name = f"v{self.nvars}"
            start = self.var()
            body = self.texpr(1)
            self.nvars += 1
            return name, [f"{name} = {start}",
                          f"for j in tl.static_range({int(r.integers(1, 4))}):",
                          f"    {name} = {name} + {body} * j"]
        if kind == "call" and self.helpers:
            h = str(r.choice(self.helpers))
            return self.assign(f"{h}({self.var()}, {self.var()})")
        if kind == "dot" and self.two_d and self.bm == self.bn and self.bm >= 16:
            t = "float32" if r.random() < 0.5 else "int8"
            return self.assign(f"tl.dot({self.var()}.to(tl.{t}), {self.var()}.to(tl.{t})).to({self.D()})")
        return self.assign(self.texpr(int(r.integers(1, 4))))

    def program(self):
        r = self.rng
        # Helpers: a @jit function of two tiles, its body a random chain over a and b.
        hsrc = []
        for h in range(int(r.integers(0, 3))):
            saved = self.nvars
            self.nvars = 2
            self.in_helper = True
            e1 = self.texpr(2).replace("v0", "a").replace("v1", "b")
            e2 = self.texpr(2).replace("v0", "a").replace("v1", "b")
            self.nvars = saved
            self.in_helper = False
            name = f"helper{h}"
            hsrc += ["@triton.jit", f"def {name}(a, b, s):", f"    t = {e1}",
                     f"    return t + {e2.replace('(a', '(t', 1)}", "", ""]
            self.helpers.append(name)
        hsrc = "\n".join(hsrc).replace("s.to(", "s.to(")
        self.hsrc = hsrc
        self.nvars = 3  # v0, v1, v2: the loads
        n_stmts = int(r.integers(2, 9))
        stmts = []
        for _ in range(n_stmts):
            _, lines = self.statement()
            stmts.append(lines)
        stmts = [[ln.replace("helper0(", "helper0(").replace(")", ")") for ln in st] for st in stmts]
        # helpers take s as third arg
        stmts = [[re.sub(r"(helper\d)\(([^()]*(?:\([^()]*\))?[^()]*)\)", r"\1(\2, s)", ln) for ln in st]
                 for st in stmts]
        outs = sorted(set([f"v{self.nvars - 1}"] + [self.var() for _ in range(2)]),
                      key=lambda v: int(v[1:]))
        eb = np.dtype(NP[self.dtype]).itemsize
        for i, v in enumerate(outs[:3]):
            if self.two_d and self.bn * eb % 16 == 0 and r.random() < 0.3:
                # The tile through a tensor descriptor of the whole output ([grid * BM, BN],
                # every row written): on sm_90a a TMA store through shared memory.
                stmts.append([f"tl.make_tensor_descriptor(out{i}_ptr, [{self.grid * self.bm}, "
                              f"{self.bn}], [{self.bn}, 1], [{self.bm}, {self.bn}]).store("
                              f"[pid * {self.bm}, 0], {v}.to({self.D()}))"])
            else:
                stmts.append([f"tl.store(out{i}_ptr + offs, {v}, mask=mask)"])
        self.stmts = stmts
        return self

    def prologue(self):
        r = self.rng
        D = self.D()
        if self.two_d:
            lines = ["pid = tl.program_id(0)",
                     f"rows = pid * {self.bm} + tl.arange(0, {self.bm})",
                     f"cols = tl.arange(0, {self.bn})",
                     f"offs = rows[:, None] * {self.bn} + cols[None, :]",
                     "mask = offs < n"]
        else:
            lines = ["pid = tl.program_id(0)",
                     f"offs = pid * {self.bm} + tl.arange(0, {self.bm})",
                     "mask = offs < n"]
        for i, p in enumerate("xyz"):
            other = self.lit() if r.random() < 0.7 else None
            if other is None:
                lines.append(f"v{i} = tl.load({p}_ptr + offs, mask=mask)")
            else:
                lines.append(f"v{i} = tl.load({p}_ptr + offs, mask=mask, other={other}).to({D})")
        return lines

    def source(self, stmts=None):
        stmts = self.stmts if stmts is None else stmts
        body = self.prologue() + [ln for st in stmts for ln in st]
        return (HEADER + self.hsrc + "\n@triton.jit\n"
                "def fuzz_kernel(x_ptr, y_ptr, z_ptr, out0_ptr, out1_ptr, out2_ptr, s, k, n):\n"
                + "\n".join("    " + ln for ln in body) + "\n")

    def size(self):
        return self.grid * self.bm * self.bn

    def inputs(self, seed):
        r = np.random.default_rng(seed + 1_000_003)
        n = self.size()
        dt = NP[self.dtype]
        arrs = []
        for _ in range(3):
            if self.is_int:
                a = r.integers(-20, 20, size=n).astype(dt)
                info = np.iinfo(dt)
                sp = r.random(n)
                a[sp < 0.1] = info.max
                a[(sp >= 0.1) & (sp < 0.2)] = info.min
                a[(sp >= 0.2) & (sp < 0.25)] = 0
            else:
                a = (r.standard_normal(n) * 4).round(1).astype(dt)
                sp = r.random(n)
                a[sp < 0.05] = -0.0
                a[(sp >= 0.05) & (sp < 0.08)] = np.inf
                a[(sp >= 0.08) & (sp < 0.1)] = np.nan
            arrs.append(a)
        nvalid = int(r.integers(n // 2, n + 1))
        if nvalid == 1:
            nvalid = n
        return arrs, nvalid


# -- compile and run ---------------------------------------------------------------------------
_mod_counter = [0]


def load_kernel(src, tmpdir):
    _mod_counter[0] += 1
    name = f"_tritium_fuzz_{os.getpid()}_{_mod_counter[0]}"
    path = os.path.join(tmpdir, name + ".py")
    with open(path, "w") as f:
        f.write(src)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.fuzz_kernel


def raw_ir(gen, src, seed, tmpdir):
    """The kernel's raw tile IR text (code generation only) and its name."""
    from tritium.compiler import codegen  # noqa: PLC0415
    jitmod = sys.modules["tritium.jit"]
    k = load_kernel(src, tmpdir)
    arrs, nvalid = gen.inputs(seed)
    outs = [np.zeros(gen.size(), NP[gen.dtype]) for _ in range(3)]
    values = k._bind(tuple(arrs + outs + [gen.s, gen.k, nvalid]), {})
    _key, spec, _rt = k._key(values)
    module, name = codegen.build_kernel(k, jitmod._params(spec), None)
    return _C.print_module(module, False), name


def execute(text, name, gen, arrs, nvalid, passes, target="sm_90a", options=None):
    """Outputs (bit views) of running `text` after `passes` (compiled for `target`, with the
    pipeline `options`: num_warps, num_stages), or ('error', message)."""
    m = _C.parse_module(text, "<fuzz>")
    if passes:
        _C.run_passes(m, passes, True, target=target, **(options or {}))
    ins = [a.copy() for a in arrs]
    dt = NP[gen.dtype]
    outs = [np.full(gen.size(), 7, dt) for _ in range(3)]
    args = [_C.ExecPointer(a.ctypes.data, a.nbytes) for a in ins + outs] + [gen.s, gen.k, nvalid]
    _C.execute(m, name, (gen.grid, 1, 1), args, 1)
    u = UINT_VIEW[np.dtype(dt).itemsize]
    return [o.view(u).copy() for o in outs], _C.print_module(m, False)


OP_RE = re.compile(r"\b([a-z_]+\.[a-z_0-9]+)\b")


def ops_of(text):
    ops = set()
    for line in text.splitlines():
        line = line.split("loc(")[0]
        m = re.search(r"(?:=\s*|^\s*)\"?([a-z_]+\.[a-z_0-9.]+)\"?", line)
        if m:
            ops.add(m.group(1))
    return ops


def check_text(gen, src, seed, tmpdir, ops=None):
    """None if every stage agrees with the raw IR, else (stage, description).
    Raises if the program itself does not compile or run raw (not a pass bug)."""
    text, name = raw_ir(gen, src, seed, tmpdir)
    arrs, nvalid = gen.inputs(seed)
    ref, _ = execute(text, name, gen, arrs, nvalid, [])
    if ops is not None:
        ops |= ops_of(text)
    seen = {}
    for stage, passes, *target in pipelines():
        try:
            got, out_text = execute(text, name, gen, arrs, nvalid, passes, *target)
        except Exception as e:  # noqa: BLE001 - any failure after a pass is a finding
            return stage, f"{type(e).__name__}: {e}"
        if ops is not None:
            ops |= ops_of(out_text)
        if out_text in seen:
            continue
        seen[out_text] = True
        for i, (a, b) in enumerate(zip(ref, got)):
            if not np.array_equal(a, b):
                bad = np.nonzero(a != b)[0][:4]
                dt = NP[gen.dtype]
                return stage, (f"out{i} differs at {bad.tolist()}: raw "
                               f"{a[bad].view(dt).tolist()} vs {b[bad].view(dt).tolist()}")
    return None


def minimise_program(gen, still_fails):
    """gen's program with statements deleted greedily while still_fails(source)
    holds (a smaller program that does not compile counts as not failing)."""
    stmts = list(gen.stmts)
    changed = True
    while changed:
        changed = False
        for i in range(len(stmts) - 1, -1, -1):
            trial = stmts[:i] + stmts[i + 1:]
            try:
                fails = still_fails(gen.source(trial))
            except Exception:  # noqa: BLE001 - the reduced program does not compile: keep it
                continue
            if fails:
                stmts = trial
                changed = True
    return gen.source(stmts)


def minimise(gen, seed, tmpdir, stage):
    def still_fails(src):
        res = check_text(gen, src, seed, tmpdir)
        return res is not None and res[0] == stage
    return minimise_program(gen, still_fails)


def fuzz_one(seed, tmpdir, ops=None, do_minimise=True):
    """None when the seed passes (or its program is invalid), else a report string."""
    gen = Gen(seed).program()
    src = gen.source()
    try:
        res = check_text(gen, src, seed, tmpdir, ops)
    except Exception as e:  # noqa: BLE001
        # The generator produced a program the frontend or executor rejects: count it.
        return ("invalid", f"{type(e).__name__}: {str(e)[:300]}", src)
    if res is None:
        return None
    stage, what = res
    small = minimise(gen, seed, tmpdir, stage) if do_minimise else src
    return ("mismatch", f"seed {seed}: {stage}: {what}", small)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--seed", type=int, default=None, help="run one seed, print its program")
    ap.add_argument("-q", "--quiet", action="store_true")
    args = ap.parse_args(argv)
    seeds = [args.seed] if args.seed is not None else range(args.start, args.start + args.seeds)
    ops = set()
    ran = invalid = bad = 0
    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmpdir:
        for seed in seeds:
            if args.seed is not None:
                print(Gen(seed).program().source())
            r = fuzz_one(seed, tmpdir, ops)
            if r is None:
                ran += 1
                continue
            kind, what, src = r
            if kind == "invalid":
                invalid += 1
                if not args.quiet:
                    print(f"seed {seed}: generated program rejected: {what}")
                continue
            ran += 1
            bad += 1
            print(f"MISMATCH {what}\nminimised program:\n{src}")
    print(f"programs run: {ran} (+{invalid} rejected by the frontend), mismatches: {bad}, "
          f"ops covered: {len(ops)} ({', '.join(sorted(ops))}), {time.time() - t0:.1f}s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
