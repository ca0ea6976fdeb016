#!/usr/bin/env python3
"""Mutation fuzzer of tritium's error paths: bad input must never crash, hang or escape.

From a seed, takes a valid input and mutates it a few times, then feeds it to one of three
targets, each input in a worker subprocess (a crash or a hang is caught there and the input kept):
  src  a @jit kernel's Python source (seeded from the random programs of kernel_fuzz.py and a few
       hand-written kernels), mutated by line and token operators; the module is imported, the
       kernel compiled on the CPU path (`kernel.warmup(...)` with numpy arrays) and launched on a
       one-program grid.
  ir   tile/GPU IR text (seeded from test/**/*.tir and from printed compiled kernels), mutated by
       byte, token, line, type, shape and attribute operators; parsed, verified, run through a
       random list of passes, printed, and checked to round-trip, all through `tritium._C`.
  opt  the same IR mutants, given to `build/tritium-opt` as a subprocess with random pass flags.

Every input must end in success or a user-facing error that carries a location:
  src  tritium.CompilationError located in the mutant's own file (line, column, the source line
       with a caret), not an "internal error", its message free of tritium's insides (pybind11's
       argument lists, KeyError, object addresses); or, while the kernel runs,
       tritium.ExecutionError;
  ir   _C.IRError / _C.UserError with a line;
  opt  exit status 0, or 1 with `file:line:col: error: ...` on stderr.
Anything else is a finding: another exception type escaping, a CompilationError without a location
or that reports an internal error, a crash (signal), a hang (timeout), or (ir) printed text that
does not round-trip. A finding prints the seed and a minimised input (greedy deletion of lines, then
of tokens, while the same finding persists) and writes both into --out (default fuzz-findings/).
Inputs the mutation made into invalid Python (a SyntaxError while importing the module, a launch
whose arguments no longer bind) are counted apart: they never reached the compiler.

With --ptx, each source is also compiled for sm_90a by tritium.compile (GPU passes and PTX, no
GPU needed); with --execute, IR that verifies is also run on the CPU executor (bounds-checked: a
failure must be an ExecutionError). A hang while the mutant's own module code or its kernel runs is
not counted as a finding (the mutant may loop), nor is tritium-opt's internal error under
--no-verify (the passes assume verified IR; only a crash there is a finding).

Usage: python3 tools/fuzz/mutate_fuzz.py [--kind src|ir|opt|all] [--seeds N] [--start S]
                                          [--seed S] [--ptx] [--execute] [--timeout SEC]
                                          [--out DIR] [--no-minimise] [-q]
(`make fuzz-mutate SEEDS=N` runs all three kinds with --ptx --execute). `--kind planted-index` /
`planted-abort` swap the compiler for a fake entry point with a planted bug (an IndexError, an
abort) to check that the fuzzer reports it.
"""

import argparse
import glob
import inspect
import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
PYDIR = os.path.join(ROOT, "python")
sys.path.insert(0, PYDIR)
sys.path.insert(0, HERE)

HEADER = "import tritium as triton\nimport tritium.language as tl\n\n"

# Findings (bugs) and the outcomes that are fine.
OK_KINDS = ("ok", "error", "invalid", "unverified")

# ---------------------------------------------------------------------------------------------
# Seeds: Python kernels
# ---------------------------------------------------------------------------------------------

# Hand-written kernels covering what the random generator does not: constexpr blocks, 2-D tiles,
# while loops, helpers returning tuples, static_range, atomics, dot, reshape/trans, casts.
HAND_KERNELS = [
    '''@triton.jit
def fuzz_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.load(y_ptr + offs, mask=mask)
    z = tl.where(x > y, x * 2.0, y - 1.0)
    tl.store(out_ptr + offs, tl.maximum(z, 0.5), mask=mask)
''',
    '''@triton.jit
def fuzz_kernel(out_ptr, in_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    valid = cols < n_cols
    x = tl.load(in_ptr + row * stride + cols, mask=valid, other=-float("inf"))
    shifted = x - tl.max(x, axis=0)
    num = tl.exp(shifted)
    den = tl.sum(num, axis=0)
    tl.store(out_ptr + row * stride + cols, num / den, mask=valid)
''',
    '''@triton.jit
def fuzz_kernel(a_ptr, b_ptr, c_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rm = tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    offs = rm[:, None] * BLOCK_N + rn[None, :]
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    a = tl.load(a_ptr + offs, mask=mask, other=0.0)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    acc += tl.dot(a, tl.trans(b))
    r = tl.reshape(acc, [BLOCK_N, BLOCK_M])
    tl.store(c_ptr + offs, tl.trans(r).to(tl.float16).to(tl.float32), mask=mask)
''',
    '''@triton.jit
def helper(a, b):
    return a + b, a * b


@triton.jit
def fuzz_kernel(x_ptr, out_ptr, n, k, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=1.0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    i = 0
    while i < k:
        s, p = helper(x, acc)
        acc = s - p * 0.5
        i += 1
    for j in tl.static_range(3):
        if j == 1:
            acc = acc + j
    for t in range(0, k, 2):
        acc = tl.where(offs % 2 == 0, acc, acc + t)
    tl.store(out_ptr + offs, acc, mask=offs < n)
''',
    '''@triton.jit
def fuzz_kernel(x_ptr, cnt_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    tl.atomic_add(cnt_ptr + offs % 4, x, mask=mask)
    m = tl.argmax(x, axis=0)
    if m > 3:
        tl.atomic_max(out_ptr, m)
    else:
        tl.store(out_ptr + offs, x.to(tl.int8).to(tl.int32) >> 1, mask=mask)
''',
    '''@triton.jit
def fuzz_kernel(x_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    y = tl.sqrt(tl.abs(x)) + tl.sigmoid(x) * scale
    y = tl.fma(y, x, 1.0)
    z = tl.cdiv(n, BLOCK)
    w = tl.minimum(y, z.to(tl.float32))
    tl.store(out_ptr + offs, tl.log(tl.exp2(w)).to(tl.bfloat16).to(tl.float32), mask=offs < n)
''',
]
HAND_DTYPES = ["float32", "float32", "float32", "float32", "int32", "float32"]

NAMED_INTS = {"n": 100, "n_cols": 50, "stride": 64, "M": 12, "N": 12, "k": 3, "s": 3, "scale": 2}
NAMED_CONSTS = {"BLOCK": 64, "BLOCK_M": 16, "BLOCK_N": 16}


def src_seed(seed):
    """(source, dtype of the arrays, kernel_fuzz.Gen or None) for a seed."""
    rng = np.random.default_rng(seed)
    if rng.random() < 0.35:
        i = int(rng.integers(0, len(HAND_KERNELS)))
        return HEADER + HAND_KERNELS[i], HAND_DTYPES[i], None
    import kernel_fuzz  # noqa: PLC0415
    gen = kernel_fuzz.Gen(seed).program()
    return gen.source(), gen.dtype, gen


# ---------------------------------------------------------------------------------------------
# Seeds: IR text
# ---------------------------------------------------------------------------------------------

def ir_seeds_from_tests():
    """Chunks of test/**/*.tir (split at `// -----`), RUN and CHECK lines dropped."""
    out = []
    for path in sorted(glob.glob(os.path.join(ROOT, "test", "**", "*.tir"), recursive=True)):
        with open(path) as f:
            text = f.read()
        for chunk in re.split(r"^// -----\s*$", text, flags=re.M):
            lines = [ln for ln in chunk.splitlines()
                     if not re.match(r"\s*//\s*(RUN|CHECK)", ln)]
            if any("tt.func" in ln for ln in lines):
                out.append("\n".join(lines) + "\n")
    return out


def ir_seeds_from_kernels(count=24):
    """Printed IR of compiled random kernels: raw, after the pipeline, with and without locations."""
    import kernel_fuzz  # noqa: PLC0415
    from tritium import _C  # noqa: PLC0415
    out = []
    with tempfile.TemporaryDirectory() as tmpdir:
        for seed in range(count):
            gen = kernel_fuzz.Gen(10_000 + seed).program()
            try:
                text, _name = kernel_fuzz.raw_ir(gen, gen.source(), seed, tmpdir)
            except Exception:  # noqa: BLE001 - a program the frontend rejects: no seed
                continue
            m = _C.parse_module(text, "k.tir")
            with_locs = seed % 2 == 0
            out.append(_C.print_module(m, with_locs))
            _C.run_passes(m, _C.default_pipeline() + ["licm"], True)
            out.append(_C.print_module(m, with_locs))
            if seed % 3 == 0:  # GPU IR: layouts to mutate
                _C.run_passes(m, ["convert-to-gpu", "remove-layout-conversions"], True)
                out.append(_C.print_module(m, with_locs))
    return out


# ---------------------------------------------------------------------------------------------
# Mutation
# ---------------------------------------------------------------------------------------------

TOKEN_RE = re.compile(r"\d+\.\d*(?:[eE][+-]?\d+)?|\d+(?:[eE][+-]?\d+)?|[A-Za-z_][A-Za-z_0-9]*"
                      r"|%[A-Za-z_0-9#]+|@[A-Za-z_0-9]+|#[A-Za-z_0-9.]+|\*\*|//|<<|>>|[<>=!]=|->|\S")

PY_CONSTANTS = ["0", "1", "-1", "2", "3", "7", "100", "1024", "65536", "2**31", "2**31 - 1",
                "2**32", "2**63", "2**64", "-2**63", "2**100", "1e308", "-1e308", "1e-320", "0.5",
                "-0.0", "3.0", "float('nan')", "float('inf')", "-float('inf')", "True", "False",
                "None", "'abc'", "()", "(1, 2)", "[1, 2, 3]", "[]", "[0]", "[3, 5]", "[2**31]",
                "[64, 64, 64]", "[-4]"]
PY_DTYPES = ["tl.int1", "tl.int8", "tl.int16", "tl.int32", "tl.int64", "tl.uint8", "tl.uint16",
             "tl.uint32", "tl.uint64", "tl.float8e4nv", "tl.float8e5", "tl.float16",
             "tl.bfloat16", "tl.float32", "tl.float64", "tl.pointer_type(tl.float32)",
             "tl.void", "tl.constexpr"]
PY_OPERATORS = ["+", "-", "*", "/", "//", "%", "**", "<<", ">>", "&", "|", "^", "<", ">", "<=",
                ">=", "==", "!=", "and", "or", "not", "in", "is", "~", "@"]
PY_NAMES = ["tl.program_id", "tl.num_programs", "tl.arange", "tl.zeros", "tl.full", "tl.load",
            "tl.store", "tl.where", "tl.maximum", "tl.minimum", "tl.sum", "tl.max", "tl.min",
            "tl.argmax", "tl.argmin", "tl.exp", "tl.exp2", "tl.log", "tl.log2", "tl.sqrt",
            "tl.rsqrt", "tl.abs", "tl.sigmoid", "tl.sin", "tl.cos", "tl.erf", "tl.floor",
            "tl.ceil", "tl.fma", "tl.cdiv", "tl.dot", "tl.trans", "tl.reshape", "tl.atomic_add",
            "tl.atomic_max", "tl.atomic_cas", "tl.atomic_xchg", "tl.range", "tl.static_range",
            "tl.device_print", "tl.device_assert", "tl.static_assert", "tl.broadcast_to",
            "tl.expand_dims", "tl.view", "tl.cast", "tl.zeros_like", "tl.full_like", "tl.constexpr",
            "tl.tensor", "tl", "triton", "triton.jit", "range", "len", "min", "max", "print",
            "int", "float", "abs", "isinstance", "tuple", "list", "getattr", "type", "lambda",
            "self", "dtype", "to", "shape", "numel", "element_ty", "axis", "keep_dims", "mask",
            "other", "None", "__class__", "__dict__"]
PY_SNIPPETS = ["x = tl.arange(0, 3)", "return 1", "return", "pass", "break", "continue",
               "tl.static_assert(False)", "assert False", "x = undefined_name + 1",
               "for q in range(3): pass", "while True: pass", "q = tl.full([2**31], 0, tl.int8)",
               "q = tl.zeros([0], dtype=tl.float32)", "q = tl.arange(5, 3)",
               "q = tl.load(0)", "tl.store(5, 5)", "q = (1, 2)[5]", "q = {}['a']",
               "q = tl.sum(tl.arange(0, 8), axis=3)", "global q", "del q", "import os",
               "q = [i for i in range(3)]", "with x: pass", "q = lambda: 0",
               "q = tl.reshape(tl.arange(0, 8), [3, 3])", "q = tl.dot(1, 2)",
               "q = tl.arange(0, 16)[None, None, None, :, None]", "q = 1 // 0",
               "q = tl.arange(0, 16).to(tl.float8e4nv) + tl.arange(0, 16)",
               "try:\n    pass\nexcept Exception:\n    pass", "yield 1", "q = await x",
               "q = tl.program_id(7)", "q = tl.trans(tl.arange(0, 8), (2, 0, 1))"]

IR_TYPES = ["i1", "i8", "i16", "i32", "i64", "u8", "u32", "u64", "f8e4nv", "f8e5", "f16", "bf16",
            "f32", "f64", "!tt.ptr<f32>", "!tt.ptr<i8, 3>", "!tt.ptr<!tt.ptr<f32>>",
            "tensor<128xf32>", "tensor<3xf32>", "tensor<0xi32>", "tensor<1x1xf32>",
            "tensor<4x8xi32>", "tensor<2147483648xf32>", "tensor<65536x65536xf32>",
            "tensor<16x!tt.ptr<f32>>", "tensor<1x2x3x4x5x6xf16>", "tensor<-4xf32>",
            "tensor<xf32>", "tensor<4x4x!tt.ptr<i64>>", "void", "none", "index", "f33", "tensor<>",
            "!tt.ptr<>", "(i32) -> i32"]
IR_NUMBERS = ["0", "1", "-1", "2", "3", "7", "31", "32", "63", "64", "127", "128", "255",
              "2147483647", "2147483648", "4294967296", "-2147483649", "9223372036854775807",
              "9223372036854775808", "18446744073709551616", "99999999999999999999999999",
              "1.0e308", "1.0e309", "-0.0", "nan", "inf", "0x7FC00000", "0xFFFFFFFFFFFFFFFFFF",
              "1e-320", "3.5", "-3"]
IR_WORDS = ["tt.func", "tt.return", "tt.call", "tt.load", "tt.store", "tt.splat", "tt.broadcast",
            "tt.make_range", "tt.addptr", "tt.reduce", "tt.dot", "tt.trans", "tt.reshape",
            "tt.expand_dims", "tt.get_program_id", "tt.atomic_rmw", "tt.atomic_cas",
            "tt.print", "tt.assert", "scf.for", "scf.if", "scf.while", "scf.yield",
            "scf.condition", "arith.constant", "arith.addi", "arith.addf", "arith.muli",
            "arith.divsi", "arith.remui", "arith.cmpi", "arith.cmpf", "arith.select",
            "arith.extf", "arith.truncf", "arith.sitofp", "arith.bitcast", "arith.shli",
            "ttg.convert_layout", "math.exp", "math.fma", "else", "do", "to", "step", "iter_args",
            "loc", "axis", "start", "end", "slt", "olt", "eq", "une", "kernel", "noinline",
            "true", "false", "#blocked", "#ttg.blocked", "attributes", "->", ":", ",", "=", "(",
            ")", "{", "}", "[", "]", "<", ">", "x", "\"", "%", "@"]


def tokens_of(line):
    return [(m.start(), m.end()) for m in TOKEN_RE.finditer(line)]


def _choice(rng, seq):
    return seq[int(rng.integers(0, len(seq)))]


def mutate_lines(rng, lines, lo, snippets):
    """One line operator on lines[lo:] (the lines before lo are left alone)."""
    if len(lines) <= lo:
        return lines
    i = int(rng.integers(lo, len(lines)))
    j = int(rng.integers(lo, len(lines)))
    op = int(rng.integers(0, 6))
    lines = list(lines)
    if op == 0:
        del lines[i]
    elif op == 1:
        lines.insert(j, lines[i])
    elif op == 2:
        lines[i], lines[j] = lines[j], lines[i]
    elif op == 3:
        indent = re.match(r"\s*", lines[i]).group(0)
        for k, s in enumerate(_choice(rng, snippets).split("\n")):
            lines.insert(i + k, indent + s)
    elif op == 4:  # re-indent
        s = lines[i].lstrip()
        lines[i] = " " * int(_choice(rng, [0, 4, 8, 12, 3])) + s
    else:  # truncate the line
        if lines[i]:
            lines[i] = lines[i][:int(rng.integers(0, len(lines[i]) + 1))]
    return lines


def mutate_tokens(rng, lines, lo, pools):
    """One token operator: replace / delete / duplicate / swap tokens of one line."""
    cand = [k for k in range(lo, len(lines)) if tokens_of(lines[k])]
    if not cand:
        return lines
    i = _choice(rng, cand)
    line = lines[i]
    toks = tokens_of(line)
    a, b = toks[int(rng.integers(0, len(toks)))]
    tok = line[a:b]
    op = int(rng.integers(0, 5))
    if op == 0:  # replace, from the pool of tokens of the same kind when possible
        if re.match(r"\d", tok):
            new = _choice(rng, pools["number"])
        elif re.match(r"[A-Za-z_]", tok) and a > 0 and line[a - 1] == "." and "attr" in pools:
            new = _choice(rng, pools["attr"])  # tl.<attr>, x.<attr>
        elif re.match(r"[A-Za-z_]", tok):
            new = _choice(rng, pools["name"] if rng.random() < 0.7 else pools["type"])
        else:
            new = _choice(rng, pools["op"])
    elif op == 1:
        new = ""
    elif op == 2:
        new = tok + " " + tok if re.match(r"\w", tok) else tok + tok
    elif op == 3:  # swap with another token of the line
        c, d = toks[int(rng.integers(0, len(toks)))]
        if (c, d) == (a, b):
            return lines
        (a, b), (c, d) = sorted([(a, b), (c, d)])
        lines = list(lines)
        lines[i] = line[:a] + line[c:d] + line[b:c] + line[a:b] + line[d:]
        return lines
    else:  # a type, a dtype or a constant in place of any token
        new = _choice(rng, pools["type"] + pools["number"])
    lines = list(lines)
    lines[i] = line[:a] + new + line[b:]
    return lines


def mutate_bytes(rng, text):
    """Byte-level operators of IR text: flips, truncation, a deleted or an extra brace."""
    if not text:
        return text
    op = int(rng.integers(0, 5))
    i = int(rng.integers(0, len(text)))
    if op == 0:
        ch = chr(ord(text[i]) ^ (1 << int(rng.integers(0, 7))))
        return text[:i] + ch + text[i + 1:]
    if op == 1:
        return text[:i]
    if op == 2:
        braces = [k for k, c in enumerate(text) if c in "}{)(><"]
        if braces:
            k = _choice(rng, braces)
            return text[:k] + text[k + 1:]
        return text
    if op == 3:
        return text[:i] + _choice(rng, ["}", "{", "(", ")", "<", ">", "\"", "\0", "\xff", "\n",
                                        "%", ":", ",", "x", "-"]) + text[i:]
    # shapes: rewrite one NxM dimension list
    shapes = list(re.finditer(r"(?<=tensor<)[0-9x]+(?=x)", text))
    if shapes:
        m = _choice(rng, shapes)
        dims = m.group(0).split("x")
        k = int(rng.integers(0, len(dims)))
        dims[k] = _choice(rng, ["0", "1", "3", "5", "6", "100", "2147483648", "4294967296"])
        if rng.random() < 0.3:
            dims.append("2") if rng.random() < 0.5 else dims.pop()
        return text[:m.start()] + "x".join(d for d in dims if d) + text[m.end():]
    return text


def ir_vocabulary(seeds):
    with open(os.path.join(ROOT, "include", "tritium", "ir", "ops.def")) as f:
        names = sorted(set(re.findall(r'"([a-z]+\.[a-z_0-9]+)"', f.read())) - {"f.py"})
    attrs = sorted({w for t in seeds for w in re.findall(r"\b[a-z_]+(?= = )", t)})
    return names, attrs


SCALAR_RE = re.compile(r"\b(?:i1|i8|i16|i32|i64|u8|u16|u32|u64|f8e4nv|f8e5|f16|bf16|f32|f64)\b")
SCALARS = ["i1", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f8e4nv", "f8e5", "f16",
           "bf16", "f32", "f64"]


def _replace_match(rng, text, regex, make):
    found = list(regex.finditer(text))
    if not found:
        return text
    m = _choice(rng, found)
    return text[:m.start()] + make(m) + text[m.end():]


def mutate_ir_semantic(rng, text, names):
    """Operators that mostly keep the text parseable, to get past the parser into the verifier
    and the passes: another dtype, another value, another op, another number, an attribute less."""
    op = int(rng.integers(0, 8))
    if op >= 6:  # one dtype or one dimension size changed everywhere: the text stays consistent
        if op == 6:
            found = sorted(set(SCALAR_RE.findall(text)))
            if not found:
                return text
            old, new = _choice(rng, found), _choice(rng, SCALARS)
            return re.sub(r"\b%s\b" % old, new, text)
        dims = sorted(set(re.findall(r"(?<=[<x])(\d+)(?=x)", text)))
        if not dims:
            return text
        old, new = _choice(rng, dims), _choice(rng, ["1", "2", "4", "8", "32", "64", "256", "3"])
        text = re.sub(r"(?<=[<x])%s(?=x)" % old, new, text)
        return re.sub(r"\b(end|value) = %s\b" % old, r"\1 = " + new, text)
    if op == 0:
        return _replace_match(rng, text, SCALAR_RE, lambda m: _choice(rng, SCALARS))
    if op == 1:
        values = sorted(set(re.findall(r"%[A-Za-z_0-9]+(?:#\d+)?", text)))
        if not values:
            return text
        return _replace_match(rng, text, re.compile(r"(?<=[ (,\[])%[A-Za-z_0-9]+(?:#\d+)?(?=[ ,)\]\n])"),
                              lambda m: _choice(rng, values))
    if op == 2:
        return _replace_match(rng, text, re.compile(r"\b[a-z]+\.[a-z_0-9]+\b"),
                              lambda m: _choice(rng, names))
    if op == 3:
        return _replace_match(rng, text, re.compile(r"(?<![A-Za-z_%#])-?\d+(?:\.\d+)?(?:e[+-]?\d+)?"),
                              lambda m: _choice(rng, IR_NUMBERS))
    if op == 4:  # one attribute entry, or a whole attribute dictionary, goes
        if rng.random() < 0.5:
            return _replace_match(rng, text, re.compile(r"\{[^{}\n]*\}(?=\s*:)"), lambda m: "")
        return _replace_match(rng, text, re.compile(r"[a-z_]+ = [^,}]+,? ?"), lambda m: "")
    return mutate_bytes(rng, text)  # a shape, most often


def mutate_ir(rng, text, vocab):
    names, attrs = vocab
    pools = {"number": IR_NUMBERS, "name": names + IR_WORDS + attrs, "type": IR_TYPES,
             "op": IR_WORDS}
    for _ in range(int(_choice(rng, [1, 1, 1, 1, 1, 2, 2, 2, 3, 4]))):
        r = rng.random()
        if r < 0.5:
            text = mutate_ir_semantic(rng, text, names)
        elif r < 0.62:
            text = mutate_bytes(rng, text)
        elif r < 0.8:
            lines = text.split("\n")
            snippets = [ln.strip() for ln in lines if ln.strip()] + [
                "}", "{", "tt.return", "scf.yield", "%0 = arith.constant 0 : i32",
                "%z = tt.splat %0 : tensor<3xi32>", "tt.func @k() {", "} else {"]
            text = "\n".join(mutate_lines(rng, lines, 0, snippets))
        else:
            text = "\n".join(mutate_tokens(rng, text.split("\n"), 0, pools))
    return text


TENSOR_ATTRS = ["to", "dtype", "shape", "numel", "element_ty", "T", "handle", "type", "value",
                "reshape", "trans", "sum", "max", "__add__", "__getitem__", "is_floating",
                "primitive_bitwidth", "__class__", "nonexistent"]


def py_pools(src):
    # Names the source binds, weighted up: undefined names only test one error message.
    local = sorted(set(re.findall(r"\b([A-Za-z_][A-Za-z_0-9]*)\s*(?:=|,|\)|:)", src)))
    import tritium.language as tl  # noqa: PLC0415
    tl_attrs = [n for n in dir(tl) if not n.startswith("_")]
    return {"number": PY_CONSTANTS, "name": PY_NAMES + local * 3, "type": PY_DTYPES,
            "attr": tl_attrs + TENSOR_ATTRS,
            "op": PY_OPERATORS + ["(", ")", "[", "]", ",", ":", "=", ".", "None"]}


def mutate_src(rng, src):
    """1-3 line or token operators on the source after its import header. Mutants that are not
    valid Python never reach tritium, so most of them are mutated again from the start (a few
    are kept: the frontend must cope with what Python rejects as well)."""
    lo = HEADER.count("\n")
    pools = py_pools(src)
    for attempt in range(20):
        lines = src.split("\n")
        for _ in range(int(rng.integers(1, 4))):
            if rng.random() < 0.35:
                lines = mutate_lines(rng, lines, lo, PY_SNIPPETS)
            else:
                lines = mutate_tokens(rng, lines, lo, pools)
        text = "\n".join(lines)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                compile(text, "<mutant>", "exec")
            return text
        except (SyntaxError, ValueError):
            if rng.random() < 0.05:
                return text
    return text


# ---------------------------------------------------------------------------------------------
# The worker (runs the targets; one input per request, JSON lines over a private pipe)
# ---------------------------------------------------------------------------------------------

# A user's error message that shows tritium's insides instead of saying what is wrong.
LEAKED = re.compile(r"incompatible function arguments|^KeyError|tritium\._C\.|pybind|Traceback|"
                    r"object at 0x")


def _located(file, line):
    return bool(file) and int(line or 0) > 0


def _exc(e):
    return f"{type(e).__name__}: {str(e)[:400]}"


def make_args(kernel, dtype):
    """Launch arguments for the kernel's (possibly mutated) signature."""
    args, kwargs = [], {}
    rng = np.random.default_rng(0)
    for p in kernel.params:
        name = p.name
        if p.is_constexpr:
            if p.default is inspect.Parameter.empty:
                kwargs[name] = NAMED_CONSTS.get(name, 16)
            continue
        if p.default is not inspect.Parameter.empty:
            continue
        if "ptr" in name:
            a = (rng.standard_normal(4096) * 4).astype(dtype)
            args.append(a)
        else:
            args.append(NAMED_INTS.get(name, 5))
    return args, kwargs


class Worker:
    """The target side: imports tritium once and compiles what it is given."""

    def __init__(self, out):
        self.out = out
        self.tmpdir = tempfile.mkdtemp(prefix="tritium-mutate-")
        self.counter = 0

    def phase(self, name):
        self.out.write(json.dumps({"phase": name}) + "\n")
        self.out.flush()

    def run_src(self, src, dtype, ptx=False):
        import importlib.util  # noqa: PLC0415

        import tritium  # noqa: PLC0415
        self.counter += 1
        modname = f"_tritium_mut_{os.getpid()}_{self.counter}"
        path = os.path.join(self.tmpdir, modname + ".py")
        with open(path, "w") as f:
            f.write(src)
        try:
            spec = importlib.util.spec_from_file_location(modname, path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            kernel = getattr(mod, "fuzz_kernel")
            if not getattr(kernel, "__tritium_jit__", False):
                return "invalid", "fuzz_kernel is not a @jit function"
            args, kwargs = make_args(kernel, np.dtype(dtype))
        except BaseException as e:  # noqa: BLE001 - not valid Python: tritium never saw it
            return "invalid", _exc(e)
        try:
            values = kernel._bind(tuple(args), dict(kwargs))
            kernel._key(values)
        except (TypeError, ValueError) as e:  # the launch's arguments do not fit the signature
            return "invalid", _exc(e)
        except BaseException as e:  # noqa: BLE001
            return "exception", "binding the launch: " + _exc(e)
        self.phase("compile")
        try:
            kernel.warmup(*args, **kwargs)
        except tritium.CompilationError as e:
            if not _located(e.file, e.line) or e.col <= 0:
                return "no-location", f"CompilationError without a location: {e.message}"
            if os.path.realpath(e.file) != os.path.realpath(path):
                return "no-location", f"CompilationError located in {e.file}: {e.message}"
            if e.message.startswith("internal error"):
                return "internal", f"{e.message} (at line {e.line})"
            if not e.source_line or "^" not in str(e):
                return "no-location", f"CompilationError without the source line: {e.message}"
            if LEAKED.search(e.message):
                return "bad-message", e.message[:300]
            return "error", e.message
        except BaseException as e:  # noqa: BLE001 - the finding
            return "exception", _exc(e)
        if ptx:
            res = self.run_ptx(tritium, kernel, args, kwargs)
            if res is not None:
                return res
        self.phase("run")
        try:
            kernel[(1,)](*args, **kwargs)
        except tritium.ExecutionError as e:
            return "error", "ExecutionError: " + str(e)[:200]
        except BaseException as e:  # noqa: BLE001
            return "exception", "at launch: " + _exc(e)
        return "ok", ""

    def run_ptx(self, tritium, kernel, args, kwargs):
        """tritium.compile for sm_90a (GPU passes and PTX; no GPU needed): None when it compiles
        or fails with a located CompilationError, else the finding."""
        names = {np.dtype(np.float32): "*fp32", np.dtype(np.float16): "*fp16",
                 np.dtype(np.float64): "*fp64", np.dtype(np.int32): "*i32",
                 np.dtype(np.int64): "*i64"}
        signature, constexprs, it = {}, dict(kwargs), iter(args)
        for p in kernel.params:
            if p.is_constexpr or (p.default is not inspect.Parameter.empty and p.name not in kwargs
                                  and not isinstance(p.default, bool)):
                if p.name not in constexprs and p.default is not inspect.Parameter.empty:
                    constexprs[p.name] = p.default
                continue
            a = next(it)
            signature[p.name] = names[a.dtype] if isinstance(a, np.ndarray) else "i32"
        try:
            tritium.compile(kernel, signature=signature, constexprs=constexprs, target="sm_90a",
                            use_cache=False)
        except tritium.CompilationError as e:
            if not _located(e.file, e.line):
                return "no-location", f"tritium.compile: CompilationError without a location: {e}"
            if e.message.startswith("internal error"):
                return "internal", f"tritium.compile: {e.message} (at line {e.line})"
        except BaseException as e:  # noqa: BLE001
            return "exception", "tritium.compile: " + _exc(e)
        return None

    def run_ir(self, text, passes, execute=False):
        from tritium import _C  # noqa: PLC0415
        expected = (_C.IRError, _C.UserError)
        try:
            m = _C.parse_module(text, "fuzz.tir")
            _C.verify(m)
            _C.run_passes(m, passes, True)
            printed = _C.print_module(m, True)
        except expected as e:
            message, file, line = e.args[0], e.args[1], e.args[2]
            if not _located(file, line):
                return "no-location", f"{type(e).__name__} without a location: {message}"
            return "error", str(message)
        except BaseException as e:  # noqa: BLE001
            return "exception", _exc(e)
        try:
            again = _C.print_module(_C.parse_module(printed, "printed.tir"), True)
        except BaseException as e:  # noqa: BLE001
            return "roundtrip", "printed IR does not parse: " + _exc(e)
        if again != printed:
            return "roundtrip", "printed IR does not round-trip"
        if execute:
            return self.execute_ir(_C, m, printed)
        return "ok", ""

    def execute_ir(self, _C, m, printed):
        """Runs each function of verified IR on the CPU executor (bounds-checked: a failure must
        be an ExecutionError). Skipped for huge tiles, which would only exhaust memory."""
        for shape in re.findall(r"tensor<((?:\d+x)+)", printed):
            if int(np.prod([int(d) for d in shape.rstrip("x").split("x")], dtype=object)) > 1 << 16:
                return "ok", "not run: a huge tile"
        self.phase("run")
        bufs = []
        for fn in m.functions:
            args = []
            for i in range(fn.num_args):
                t = fn.arg(i).type
                if t.is_pointer:
                    bufs.append(np.zeros(1 << 14, np.uint8))
                    args.append(_C.ExecPointer(bufs[-1].ctypes.data, bufs[-1].nbytes))
                elif t.is_float_like:
                    args.append(1.5)
                elif t.dtype == "i1":
                    args.append(True)
                else:
                    args.append(3)
            try:
                _C.execute(m, fn.name, (2, 1, 1), args, 1)
            except (_C.ExecutionError, _C.UserError, _C.IRError):
                pass
            except BaseException as e:  # noqa: BLE001
                return "exception", f"executing @{fn.name}: " + _exc(e)
        return "ok", ""

    def run_planted(self, text, plant):
        """A fake compiler with a planted bug, for the fuzzer's own test."""
        if "tl.where" in text and "tl.maximum" in text:
            if plant == "planted-abort":
                os.abort()
            [][1]  # noqa: B018 - the planted IndexError
        return "ok", ""

    def serve(self, inp):
        for line in inp:
            req = json.loads(line)
            try:
                if req["kind"] == "src":
                    res = self.run_src(req["input"], req["dtype"], req.get("ptx", False))
                elif req["kind"] == "ir":
                    res = self.run_ir(req["input"], req["passes"], req.get("execute", False))
                else:
                    res = self.run_planted(req["input"], req["kind"])
            except BaseException as e:  # noqa: BLE001 - escaped the target: a finding
                res = ("exception", _exc(e))
            self.out.write(json.dumps({"result": list(res)}) + "\n")
            self.out.flush()


def worker_main():
    try:  # a crash is expected here, and its core file would only cost time and disk
        import resource  # noqa: PLC0415
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except (ImportError, ValueError, OSError):
        pass
    proto = os.fdopen(os.dup(1), "w")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # kernels' prints must not corrupt the protocol
    sys.setrecursionlimit(3000)
    Worker(proto).serve(sys.stdin)


class WorkerProcess:
    """A worker subprocess; restarted after a crash or a hang."""

    def __init__(self):
        self.proc = None

    def start(self):
        env = dict(os.environ)
        env["PYTHONPATH"] = PYDIR + os.pathsep + env.get("PYTHONPATH", "")
        env.setdefault("TRITIUM_CACHE_DIR", tempfile.mkdtemp(prefix="tritium-mutate-cache-"))
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env, text=True, bufsize=1)
        self.buf = b""

    def stop(self):
        self.buf = b""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def request(self, req, timeout, phase="compile"):
        """(outcome, detail). Crashes and hangs restart the worker. `phase`: what the worker does
        until it reports another phase."""
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        try:
            self.proc.stdin.write(json.dumps(req) + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            return self._died()
        deadline = time.time() + timeout
        fd = self.proc.stdout.fileno()
        while True:
            while b"\n" not in self.buf:
                left = deadline - time.time()
                if left <= 0:
                    self.stop()
                    if phase == "run":  # a mutated kernel may loop for long: no compiler bug
                        return "invalid", "the launch ran past the timeout"
                    if phase == "import":  # the module's own code loops (`while True: pass`)
                        return "invalid", "importing the mutated module ran past the timeout"
                    return "hang", f"no answer within {timeout:.0f}s ({phase})"
                ready, _, _ = select.select([fd], [], [], left)
                if not ready:
                    continue
                chunk = os.read(fd, 65536)
                if not chunk:
                    return self._died()
                self.buf += chunk
            line, self.buf = self.buf.split(b"\n", 1)
            msg = json.loads(line)
            if "phase" in msg:
                phase = msg["phase"]
                if phase == "run":
                    deadline = max(deadline, time.time() + 2.0)
                continue
            return tuple(msg["result"])

    def _died(self):
        self.buf = b""
        rc = self.proc.wait()
        self.proc = None
        return "crash", f"worker died (exit status {rc})"


# ---------------------------------------------------------------------------------------------
# tritium-opt
# ---------------------------------------------------------------------------------------------

OPT_DIAG = re.compile(r"^\S.*:\d+:\d+: error: ", re.M)


def opt_binary(tmpdir):
    """A private copy of tritium-opt (TRITIUM_OPT, else $TRITIUM_BUILD_DIR or build/), so that a
    rebuild in the same tree while the fuzzer runs does not pull the binary from under it."""
    build = os.environ.get("TRITIUM_BUILD_DIR") or os.path.join(ROOT, "build")
    src = os.environ.get("TRITIUM_OPT") or os.path.join(build, "tritium-opt")
    dst = os.path.join(tmpdir, "tritium-opt")
    for _ in range(60):
        try:
            shutil.copy2(src, dst)
            return dst
        except OSError:  # being relinked: wait for it
            time.sleep(1)
    raise RuntimeError(f"cannot copy {src}")


def run_opt(text, flags, timeout, tmpdir, binary):
    path = os.path.join(tmpdir, "input.tir")
    with open(path, "w", errors="surrogateescape") as f:
        f.write(text)
    try:
        p = subprocess.run([binary, path] + flags, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "hang", f"tritium-opt ran past {timeout:.0f}s"
    err = p.stderr.decode(errors="replace")
    if p.returncode < 0 or p.returncode > 1:
        return "crash", f"exit status {p.returncode}: {err[-300:]}"
    if p.returncode == 0:
        return "ok", ""
    first = next((ln for ln in err.splitlines() if "error:" in ln), err.strip()[:300])
    first = first.replace(path, "input.tir")
    if "internal error" in err:
        if "--no-verify" in flags:  # passes assume verified IR; an error (not a crash) is fair
            return "unverified", first
        return "internal", first
    if not OPT_DIAG.search(err):
        return "no-location", first
    return "error", first[:200]


# ---------------------------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------------------------

def pick_passes(rng, all_passes, default):
    r = rng.random()
    if r < 0.3:
        return list(default)
    if r < 0.4:
        return []
    return [_choice(rng, all_passes) for _ in range(int(rng.integers(1, 5)))]


class Fuzzer:
    def __init__(self, timeout, out_dir, quiet, ptx=False, execute=False):
        self.ptx = ptx
        self.execute = execute
        self.min_budget = None  # evaluations a minimisation may spend (default by kind)
        self.timeout = timeout
        self.out_dir = out_dir
        self.quiet = quiet
        self.worker = WorkerProcess()
        self.tmpdir = tempfile.mkdtemp(prefix="tritium-mutate-opt-")
        self.ir_seeds = None
        self.vocab = None
        self.opt = None
        self.counts = {}
        self.findings = []
        from tritium import _C  # noqa: PLC0415
        self.all_passes = list(_C.all_passes())
        self.default = list(_C.default_pipeline())

    def load_ir_seeds(self):
        if self.ir_seeds is None:
            self.ir_seeds = ir_seeds_from_tests() + ir_seeds_from_kernels()
            self.vocab = ir_vocabulary(self.ir_seeds)

    def evaluate(self, kind, text, extra):
        if kind == "src":
            return self.worker.request({"kind": "src", "input": text, "dtype": extra,
                                        "ptx": self.ptx}, self.timeout, "import")
        if kind == "ir":
            return self.worker.request({"kind": "ir", "input": text, "passes": extra,
                                        "execute": self.execute}, self.timeout)
        if kind == "opt":
            if self.opt is None:
                self.opt = opt_binary(self.tmpdir)
            return run_opt(text, extra, self.timeout, self.tmpdir, self.opt)
        return self.worker.request({"kind": kind, "input": text}, self.timeout)

    def make_input(self, kind, seed):
        rng = np.random.default_rng([seed, 7])
        if kind in ("src", "planted-index", "planted-abort"):
            src, dtype, _gen = src_seed(seed)
            return mutate_src(rng, src), dtype
        self.load_ir_seeds()
        text = mutate_ir(rng, _choice(rng, self.ir_seeds), self.vocab)
        passes = pick_passes(rng, self.all_passes, self.default)
        if kind == "ir":
            return text, passes
        flags = ["--" + p for p in passes]
        if rng.random() < 0.2:
            flags.append(_choice(rng, ["--no-verify", "--split-input-file", "--no-locations",
                                       "--stats", "--print-after=all"]))
        return text, flags

    @staticmethod
    def signature(outcome):
        """What must stay the same while minimising: the outcome and the exception's type."""
        kind, detail = outcome
        head = ""
        if kind in ("exception", "roundtrip", "internal"):
            head = re.sub(r"\d+", "N", detail)[:70]
        return kind, head

    def minimise(self, kind, text, extra, outcome):
        want = self.signature(outcome)
        budget = [self.min_budget or (400 if kind == "src" else 1500)]

        def still_fails(candidate):
            if budget[0] <= 0:
                return False
            budget[0] -= 1
            return self.signature(self.evaluate(kind, candidate, extra)) == want

        lines = text.split("\n")
        lo = HEADER.count("\n") if kind == "src" else 0
        head, lines = lines[:lo], lines[lo:]

        def delete_chunks(units, join):
            """Deletes runs of units, halving the run length down to one, while it still fails."""
            n = max(1, len(units) // 2)
            while True:
                i = len(units) - n
                while i >= 0 and budget[0] > 0:
                    trial = units[:i] + units[i + n:]
                    if trial != units and still_fails(join(trial)):
                        units = trial
                    i -= n
                if n == 1 or budget[0] <= 0:
                    return units
                n //= 2

        def join_lines(ls):
            return "\n".join(head + ls)

        for _ in range(2):
            lines = delete_chunks(lines, join_lines)
        for i in range(len(lines) - 1, -1, -1):
            # Units: each token with the blanks before it; deleting one keeps the rest's spacing.
            spans = tokens_of(lines[i])
            units = [lines[i][(spans[k - 1][1] if k else 0):b] for k, (_a, b) in enumerate(spans)]
            tail = lines[i][spans[-1][1]:] if spans else ""

            def join_units(us, i=i, tail=tail):
                return join_lines(lines[:i] + ["".join(us) + tail] + lines[i + 1:])

            if len(units) > 1:
                units = delete_chunks(units, join_units)
                lines = lines[:i] + ["".join(units) + tail] + lines[i + 1:]
        return join_lines(lines)

    def one(self, kind, seed, minimise=True):
        text, extra = self.make_input(kind, seed)
        outcome = self.evaluate(kind, text, extra)
        self.counts.setdefault(kind, {})
        self.counts[kind][outcome[0]] = self.counts[kind].get(outcome[0], 0) + 1
        if outcome[0] in OK_KINDS:
            return None
        small = self.minimise(kind, text, extra, outcome) if minimise else text
        finding = {"kind": kind, "seed": seed, "outcome": outcome[0], "detail": outcome[1],
                   "extra": extra, "input": text, "minimised": small}
        self.findings.append(finding)
        self.save(finding)
        print(f"FINDING {kind} seed {seed}: {outcome[0]}: {outcome[1]}\n"
              f"  flags/passes: {extra}\nminimised input:\n{small}\n", flush=True)
        return finding

    def save(self, f):
        os.makedirs(self.out_dir, exist_ok=True)
        ext = "py" if f["kind"] in ("src", "planted-index", "planted-abort") else "tir"
        base = os.path.join(self.out_dir, f"{f['kind']}-{f['seed']}-{f['outcome']}")
        with open(f"{base}.min.{ext}", "w", errors="surrogateescape") as fh:
            fh.write(f["minimised"])
        with open(f"{base}.{ext}", "w", errors="surrogateescape") as fh:
            fh.write(f["input"])
        with open(f"{base}.json", "w") as fh:
            json.dump({k: f[k] for k in ("kind", "seed", "outcome", "detail", "extra")}, fh,
                      indent=1)

    def close(self):
        self.worker.stop()


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--kind", default="all",
                    choices=["all", "src", "ir", "opt", "planted-index", "planted-abort"])
    ap.add_argument("--seeds", type=int, default=100, help="inputs per kind")
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--seed", type=int, default=None, help="one seed; prints its input")
    ap.add_argument("--timeout", type=float, default=20.0)
    ap.add_argument("--out", default=os.path.join(os.getcwd(), "fuzz-findings"))
    ap.add_argument("--no-minimise", action="store_true")
    ap.add_argument("--execute", action="store_true",
                    help="ir: also run verified IR on the CPU executor")
    ap.add_argument("--ptx", action="store_true",
                    help="src: also tritium.compile each kernel for sm_90a (GPU passes, PTX)")
    ap.add_argument("-q", "--quiet", action="store_true")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        worker_main()
        return 0
    kinds = ["src", "ir", "opt"] if args.kind == "all" else [args.kind]
    seeds = [args.seed] if args.seed is not None else range(args.start, args.start + args.seeds)
    fz = Fuzzer(args.timeout, args.out, args.quiet, args.ptx, args.execute)
    t0 = time.time()
    try:
        for kind in kinds:
            tk = time.time()
            for seed in seeds:
                if args.seed is not None:
                    print(fz.make_input(kind, seed)[0])
                fz.one(kind, seed, not args.no_minimise)
            c = fz.counts.get(kind, {})
            print(f"{kind}: {sum(c.values())} inputs mutated, "
                  + ", ".join(f"{k} {v}" for k, v in sorted(c.items()))
                  + f" ({time.time() - tk:.1f}s)", flush=True)
    finally:
        fz.close()
    print(f"findings: {len(fz.findings)}, {time.time() - t0:.1f}s"
          + (f" (written to {args.out})" if fz.findings else ""))
    return 1 if fz.findings else 0


if __name__ == "__main__":
    sys.exit(main())
