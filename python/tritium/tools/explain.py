"""What the compiler chose, per line of a kernel's source:

    python -m tritium.tools.explain kernel.py [--kernel add_kernel] \\
        --signature "*fp32:16, *fp32:16, *fp32:16, i32:16, 1024" \\
        [--constexpr BLOCK=1024 ...] [--target sm_90a] [--num-warps 4] [--num-stages 3]

compiles one specialisation for the target (no GPU needed) and prints each line of the kernel
with, under it:
  - layout: the GPU layout of every tensor (and shared-memory buffer) the line produces, by a
    short name (#blocked0, #wgmma0, ...) spelled out in the legend at the top;
  - load/store/copy: each global or shared access of the line as the PTX emitter lowered it: the
    instruction, the bytes and elements one instruction moves per thread, and how many
    instructions each thread runs;
  - shared: the shared-memory buffers the line owns (size and offset), and the kernel's total.

The signature is the AOT tool's (tritium.tools.compile): one entry per parameter, `*fp32` a
pointer (`:16` 16-byte aligned), `i32` a scalar (`:16` divisible by 16, `:1` equal to 1), a bare
number a constexpr. Parameters given with --constexpr are left out of it. `tritium.tools.layout`
draws any layout of the legend: which thread and register hold each element.
"""
import argparse
import ast
import importlib.util
import inspect
import linecache
import os
import re
import sys

from ..errors import CompilationError, load_C, user_error_args
from .compile import _parse_signature

_KINDS = (("#ttg.blocked<", "blocked"), ("#ttg.slice<", "slice"), ("#ttg.dot_op<", "dot_op"),
          ("#ttg.linear<", "linear"), ("#ttg.nvmma_shared<", "nvmma_shared"),
          ("#ttg.swizzled_shared<", "swizzled_shared"), ("#ttg.shared_linear<", "shared_linear"))

_NOTES = {"wgmma": "Hopper warpgroup MMA accumulator (wgmma)",
          "mma": "tensor-core accumulator of mma.sync",
          "dot_op": "a tensor-core operand in registers",
          "nvmma_shared": "shared memory that wgmma / TMA read",
          "swizzled_shared": "shared memory, swizzled against bank conflicts"}


_DOT_ENGINES = {"wgmma": "tensor cores, wgmma.mma_async (warpgroup MMA)",
                "mma": "tensor cores, mma.sync"}


def _layout_kind(text):
    if text.startswith("#ttg.nvidia_mma<"):
        m = re.search(r"versionMajor = (\d+)", text)
        return "wgmma" if m and m.group(1) == "3" else "mma"
    for prefix, kind in _KINDS:
        if text.startswith(prefix):
            return kind
    return "layout"


def _alias_order(item):
    m = re.fullmatch(r"#(\D+)(\d+)", item[0])
    return (m.group(1), int(m.group(2))) if m else (item[0], 0)


def _split_params(text):
    """The top-level comma-separated parts inside `name<...>`."""
    inner = text[text.index("<") + 1:text.rindex(">")]
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(inner):
        if ch in "<{[(":
            depth += 1
        elif ch in ">}])":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(inner[start:i].strip())
            start = i + 1
    parts.append(inner[start:].strip())
    return parts


def _value_facts(type_text):
    """(kind, shape-and-element text, layout text) of a tensor or memdesc type with a layout,
    else None."""
    for prefix, kind in (("tensor<", "tensor"), ("!ttg.memdesc<", "memdesc")):
        if type_text.startswith(prefix):
            parts = _split_params(type_text)
            if len(parts) >= 2 and parts[1].startswith("#"):
                return kind, parts[0], parts[1]
    return None


def _walk(block):
    for op in block.ops:
        yield op
        for i in range(op.num_regions):
            yield from _walk(op.body(i))


class Report:
    """The facts of one compiled specialisation, keyed by source position.

    lines: {(file, line): {"layouts": {alias: [value text]}, "accesses": [...],
    "shared": [...]}}; legend: {alias: layout text}; shared_bytes: the kernel's total;
    kernel, target, num_warps, num_stages; file, first_line, last_line: the kernel's source."""

    def __init__(self, fn, res, target, num_warps, num_stages):
        self.kernel = res["name"]
        self.target, self.num_warps, self.num_stages = target, num_warps, num_stages
        self.shared_bytes = int(res["shared_bytes"])
        self.file = inspect.getsourcefile(fn.fn) if hasattr(fn, "fn") else None
        try:
            src, self.first_line = inspect.getsourcelines(fn.fn)
            self.last_line = self.first_line + len(src) - 1
        except (OSError, TypeError, AttributeError):
            self.first_line = self.last_line = 0
        self.lines, self.legend = {}, {}
        aliases, counts = {}, {}
        module = load_C().parse_module(res["gir"])
        for op in _walk(module.functions[0].body):
            loc = op.loc
            if loc is None:
                continue
            if op.name in ("tt.dot", "ttng.warp_group_dot") and op.num_results:
                facts = _value_facts(str(op.results[0].type))
                kind = _layout_kind(facts[2]) if facts else "layout"
                self._line(loc)["dots"].append(
                    f"{op.name}: " + _DOT_ENGINES.get(kind, "FMAs (no tensor cores)"))
            for value in op.results:
                facts = _value_facts(str(value.type))
                if facts is None:
                    continue
                kind, what, layout = facts
                alias = aliases.get(layout)
                if alias is None:
                    k = _layout_kind(layout)
                    alias = f"#{k}{counts.get(k, 0)}"
                    counts[k] = counts.get(k, 0) + 1
                    aliases[layout] = alias
                    self.legend[alias] = layout
                text = what if kind == "tensor" else f"memdesc {what}"
                seen = self._line(loc)["layouts"].setdefault(alias, [])
                if text not in seen:
                    seen.append(text)
        for op, instr, eb, elems, count, file, line, _col in res["accesses"]:
            entry = (op, instr, int(eb), int(elems), int(count))
            acc = self._line((file, line))["accesses"]
            for a in acc:
                if a["key"] == entry:
                    a["ops"] += 1
                    break
            else:
                acc.append({"key": entry, "op": op, "instruction": instr, "elem_bytes": int(eb),
                            "elems": int(elems), "bytes": int(eb) * int(elems),
                            "count": int(count), "ops": 1})
        for op, scratch, offset, nbytes, file, line, _col in res["shared_allocations"]:
            self._line((file, line))["shared"].append(
                {"op": op, "scratch": bool(scratch), "offset": int(offset), "bytes": int(nbytes)})

    def _line(self, loc):
        return self.lines.setdefault((loc[0], int(loc[1])),
                                     {"layouts": {}, "accesses": [], "shared": [], "dots": []})

    def facts(self, line, file=None):
        """The facts of `line` of the kernel's file (or of `file`)."""
        return self.lines.get((file or self.file, line),
                              {"layouts": {}, "accesses": [], "shared": [], "dots": []})

    def format(self):
        out = [f"kernel {self.kernel}: target {self.target}, num_warps={self.num_warps}, "
               f"num_stages={self.num_stages}, shared memory {self.shared_bytes} bytes"]
        if self.legend:
            out.append("")
            out.append("layouts:")
            for alias, text in sorted(self.legend.items(), key=_alias_order):
                note = _NOTES.get(re.sub(r"\d+$", "", alias[1:]))
                out.append(f"  {alias} = {text}" + (f"  ({note})" if note else ""))
        keys = []
        if self.file and self.first_line:
            keys = [(self.file, n) for n in range(self.first_line, self.last_line + 1)]
        keys += sorted(k for k in self.lines if k not in set(keys))
        file = None
        for key in keys:
            if key[0] != file:
                file = key[0]
                out.append("")
                out.append(f"{file}:")
            out.append(f"{key[1]:5d} | {linecache.getline(key[0], key[1]).rstrip()}")
            out.extend(self._format_facts(self.lines.get(key)))
        out.append("")
        total = sum(b["bytes"] for f in self.lines.values() for b in f["shared"])
        out.append(f"shared memory: {self.shared_bytes} bytes for the kernel"
                   + (f" (buffers add up to {total}; those never live at the same time share "
                      "bytes)" if total != self.shared_bytes else ""))
        return "\n".join(out) + "\n"

    @staticmethod
    def _format_facts(facts):
        if not facts:
            return []
        pad = "      | "
        out = []
        for alias, values in facts["layouts"].items():
            out.append(f"{pad}layout  {alias}: {', '.join(values)}")
        for d in facts["dots"]:
            out.append(f"{pad}dot     {d}")
        for a in facts["accesses"]:
            times = f" ({a['ops']} such ops, e.g. a pipeline's prologue and loop)" \
                if a["ops"] > 1 else ""
            vec = (f"{a['bytes']} bytes ({a['elems']} x {a['elem_bytes']}-byte elements)"
                   if a["elems"] > 1 else f"{a['bytes']} bytes (1 element)")
            out.append(f"{pad}access  {a['op']}: {a['instruction']}, {vec} per instruction, "
                       f"{a['count']} per thread{times}")
        for b in facts["shared"]:
            what = "scratch of " + b["op"] if b["scratch"] else b["op"]
            out.append(f"{pad}shared  {what}: {b['bytes']} bytes at offset {b['offset']}")
        return out


def explain(fn, signature, constexprs=None, divisible_by_16=(), target="sm_90a", num_warps=4,
            num_stages=3):
    """The Report of one specialisation of the @jit function `fn` (tritium.compile's
    signature / constexprs / divisible_by_16). Raises CompilationError for a kernel the
    target cannot run."""
    from ..compile_api import build_specialization  # noqa: PLC0415
    from ..compiler.pipeline import compile_tile  # noqa: PLC0415

    C = load_C()
    params, _ = build_specialization(fn, signature, constexprs,
                                     divisible_by_16=list(divisible_by_16))
    tile = compile_tile(fn, params, None, None, dump=False)
    try:
        res = C.compile_to_ptx(tile.module, tile.name, target, int(num_warps), int(num_stages))
    except C.UserError as e:
        message, file, line, col = user_error_args(e)
        raise CompilationError(message, file, line, col, function=tile.name) from None
    return Report(fn, res, res["target"], int(num_warps), int(num_stages))


def _constexpr_value(text):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _load_kernel(path, name):
    if not os.path.isfile(path):
        raise SystemExit(f"explain: no such file: {path}")
    spec = importlib.util.spec_from_file_location("tritium_explain_kernel", path)
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    spec.loader.exec_module(mod)
    kernels = {k: v for k, v in vars(mod).items() if getattr(v, "__tritium_jit__", False)
               and getattr(getattr(v, "fn", None), "__module__", None) == mod.__name__}
    if name is not None:
        kernel = getattr(mod, name, None)
        if kernel is None or not getattr(kernel, "__tritium_jit__", False):
            raise SystemExit(f"explain: {path} has no @jit function {name!r}"
                             + (f" (it has {', '.join(sorted(kernels))})" if kernels else ""))
        return kernel
    if len(kernels) != 1:
        raise SystemExit(f"explain: {path} defines "
                         + (f"{len(kernels)} @jit functions ({', '.join(sorted(kernels))}): "
                            "name one with --kernel" if kernels else "no @jit function"))
    return next(iter(kernels.values()))


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m tritium.tools.explain",
                                 description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 2)[2])
    ap.add_argument("path", help="the Python file that defines the kernel")
    ap.add_argument("--kernel", "-n", default=None,
                    help="the @jit function (default: the file's only one)")
    ap.add_argument("--signature", "-s", default="",
                    help='e.g. "*fp32:16, *fp32:16, i32, 1024" (AOT tool syntax)')
    ap.add_argument("--constexpr", "-c", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--target", "-t", default="sm_90a")
    ap.add_argument("--num-warps", "-w", type=int, default=4)
    ap.add_argument("--num-stages", "-ns", type=int, default=3)
    a = ap.parse_args(argv)

    kernel = _load_kernel(a.path, a.kernel)
    names = [p.name for p in kernel.params]
    given = {}
    for item in a.constexpr:
        key, eq, value = item.partition("=")
        if not eq or key.strip() not in names:
            raise SystemExit(f"explain: --constexpr {item!r}: expected NAME=VALUE with NAME one "
                             f"of the parameters ({', '.join(names)})")
        given[key.strip()] = _constexpr_value(value.strip())
    rest = [n for n in names if n not in given]
    if rest and not a.signature.strip():
        raise SystemExit(f"explain: --signature is needed: one entry for each of "
                         f"{', '.join(rest)}")
    entries = [s for s in a.signature.split(",") if s.strip()]
    if len(entries) != len(rest):
        # Constexpr parameters with defaults may be left out at the end.
        defaults = [p.name for p in kernel.params if p.name in rest and p.is_constexpr
                    and p.default is not inspect.Parameter.empty]
        trimmed = [n for n in rest if n not in defaults]
        if len(entries) == len(trimmed):
            rest = trimmed
    signature, constexprs, div16 = _parse_signature(a.signature, rest)
    constexprs.update(given)
    try:
        report = explain(kernel, signature, constexprs, div16, a.target, a.num_warps,
                         a.num_stages)
    except CompilationError as e:
        raise SystemExit(f"explain: the kernel does not compile for {a.target}:\n{e}") from None
    except (TypeError, ValueError) as e:
        raise SystemExit(f"explain: {e}") from None
    sys.stdout.write(report.format())
    return 0


if __name__ == "__main__":
    sys.exit(main())
