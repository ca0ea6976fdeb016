"""The code generator: walks a @jit function's Python AST and builds tile IR
through `_C.Builder`, one builder call per node.

Values in the generator's scope are `tl.tensor` (an IR value), `tl.constexpr`
(a Python value known at compile time) or plain Python objects (modules,
functions, dtypes). Operations on constexprs fold in Python; everything
touching a tensor goes to the C++ builder, which types, promotes, broadcasts
and checks. Before each node the builder's location is set to the node's real
file/line/column, so every op and every error points at the user's source.

Control flow:
  - `if` on a constexpr folds (only the taken branch is generated); on a
    scalar tensor it becomes scf.if, each branch built into a detached block,
    yielding the names assigned in either branch that exist in both after it.
  - `for ... in tl.static_range(...)` is expanded here, its variable a
    constexpr in each copy of the body (as in Triton).
  - `for ... in range/tl.range` becomes scf.for and `while`
    becomes scf.while. Their loop-carried values are found by a dry run: the
    body is built once into a scratch block that is then discarded, and the
    names it rebinds that were defined before the loop are carried, with the
    types the dry run gave them.
"""

import ast
import builtins
from collections import namedtuple
import inspect
import linecache
import os
import operator
import re

from .. import language as tl
from ..errors import CompilationError, load_C, user_error_args
from ..language import core
from ..language.block import is_aggregate
from ..language.combine import generating
from ..language.core import _unwrap, _unwrap_deep, constexpr, tensor
from ..runtime.launcher import int_dtype

# ---------------------------------------------------------------------------
# Source of a @jit function
# ---------------------------------------------------------------------------


class FunctionSource:
    """A function's AST plus what maps its positions back to the real file:
    the dedented text's line 1 is the file's line `line_offset + 1`, and
    `col_offset` columns of indentation were removed."""

    def __init__(self, file, line_offset, col_offset, fdef, text=""):
        self.text = text  # the dedented source the AST was parsed from
        self.file = file
        self.line_offset = line_offset
        self.col_offset = col_offset
        self.fdef = fdef
        self.returns_value = any(isinstance(n, ast.Return) and n.value is not None
                                 for n in ast.walk(fdef))
        self._lowered = None

    def lowered_body(self):
        if self._lowered is None:
            self._lowered = lower_returns(list(self.fdef.body))[0]
        return self._lowered


# The scope entry holding the value of the `return` that ended the path.
RET = " return"


def _contains_return(node):
    return any(isinstance(n, ast.Return) for n in ast.walk(node))


def lower_returns(stmts):
    """Rewrites early returns into structured control flow: the statements
    after an `if` that returns on some path move into the branch(es) that do
    not return, so that every `return` (outside loops) ends its block.
    `if pid >= n: return` then `rest` becomes `if pid >= n: return` /
    `else: rest`. Returns (statements, whether every path returns)."""
    out = []
    for i, s in enumerate(stmts):
        if isinstance(s, ast.Return):
            s._tritium_tail = True
            out.append(s)
            return out, True  # what follows is unreachable
        if isinstance(s, ast.If) and _contains_return(s):
            rest = stmts[i + 1:]
            body, body_returns = lower_returns(s.body)
            orelse, else_returns = lower_returns(s.orelse)
            if not body_returns and rest:
                body, body_returns = lower_returns(s.body + rest)
            if not else_returns and rest:
                orelse, else_returns = lower_returns(s.orelse + rest)
            new = ast.copy_location(ast.If(test=s.test, body=body, orelse=orelse), s)
            if not new.body:
                new.body = [ast.copy_location(ast.Pass(), s)]
            out.append(new)
            return out, body_returns and else_returns
        out.append(s)
    return out, False


# file -> (its lines as linecache holds them, {first line: last line} of every def in it).
# inspect.getsourcelines finds a function's end by tokenizing from its first line in Python
# (and compiles tokenize's regular expressions on its first call): 5-15 ms of a cold compile,
# paid again for every Inductor kernel (one file each). ast.parse of the whole file is C,
# once per file, and its defs' end_lineno say where each ends.
_def_spans = {}


def _spans_of(file, lines):
    """{first line (a def's first decorator, else the def): last line} of `file`'s defs, at
    any depth; None when the lines do not parse (inspect's own reading then decides)."""
    cached = _def_spans.get(file)
    if cached is not None and cached[0] is lines:
        return cached[1]
    try:
        tree = ast.parse("".join(lines))
    except (SyntaxError, ValueError):
        return None
    spans = {}
    # Statements only (a def is one): ast.walk would visit every expression node too.
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
            spans[first] = node.end_lineno
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            sub = getattr(node, field, None)
            if isinstance(sub, list):
                stack.extend(sub)
    _def_spans[file] = (lines, spans)
    return spans


def read_source(fn):
    """(file, lines, first line) of a function's source, as inspect reads them."""
    code = getattr(fn, "__code__", None)
    if code is not None:
        file = inspect.getsourcefile(fn) or code.co_filename
        linecache.checkcache(file)
        lines = linecache.getlines(file, getattr(fn, "__globals__", None))
        spans = _spans_of(file, lines) if lines else None
        start = code.co_firstlineno
        end = spans.get(start) if spans else None
        if end is not None and end <= len(lines):
            return file, lines[start - 1:end], start
    try:
        lines, start = inspect.getsourcelines(fn)
    except (OSError, TypeError) as e:
        raise CompilationError(
            f"cannot read the source of @jit function {fn.__name__!r} ({e}); a kernel "
            "must be defined in a file") from None
    return inspect.getsourcefile(fn) or fn.__code__.co_filename, lines, start


def parse_function(fn, source=None):
    """The FunctionSource of `fn`; source: read_source(fn), when the caller has read it."""
    file, lines, start = source if source is not None else read_source(fn)
    first = lines[0]
    indent = first[: len(first) - len(first.lstrip())]
    # textwrap.dedent, except that lines of a multi-line string indented less
    # than the `def` are kept as they are instead of defeating the dedent.
    text = "".join(l[len(indent):] if l.startswith(indent) else l for l in lines)
    try:
        tree = ast.parse(text)
    except SyntaxError as e:
        raise CompilationError(f"cannot parse @jit function {fn.__name__!r}: {e.msg}",
                               file, (e.lineno or 1) + start - 1,
                               (e.offset or 0) + len(indent)) from None
    fdefs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if not fdefs or not isinstance(fdefs[0], ast.FunctionDef):
        raise CompilationError(f"@jit expects a plain Python function, got {fn!r}")
    return FunctionSource(file, start - 1, len(indent), fdefs[0], text)


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------

_BINOPS = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    ast.Pow: operator.pow, ast.LShift: operator.lshift, ast.RShift: operator.rshift,
    ast.BitOr: operator.or_, ast.BitXor: operator.xor, ast.BitAnd: operator.and_,
    ast.MatMult: operator.matmul,
}
_CMPOPS = {
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
    ast.Eq: operator.eq, ast.NotEq: operator.ne,
}
_UNSUPPORTED = {
    "Break": "break", "Continue": "continue", "Lambda": "lambda",
    "ListComp": "list comprehension", "SetComp": "set comprehension",
    "DictComp": "dict comprehension", "GeneratorExp": "generator expression",
    "With": "with", "AsyncWith": "async with", "Try": "try", "TryStar": "try",
    "Raise": "raise", "Global": "global", "Nonlocal": "nonlocal", "Delete": "del",
    "Import": "import", "ImportFrom": "import", "ClassDef": "class",
    "FunctionDef": "nested def", "AsyncFunctionDef": "async def", "Yield": "yield",
    "YieldFrom": "yield from", "Await": "await", "AsyncFor": "async for",
    "NamedExpr": ":=", "Dict": "dict literal", "Set": "set literal", "Match": "match",
    "Slice": "slice", "Starred": "*", "Return": "return",
}
# Exceptions that a user's kernel provokes in Python (bad types, failed
# static_assert, ...): reported as a CompilationError without the chained
# traceback from inside the compiler.
_USER_EXCEPTIONS = (TypeError, ValueError, AttributeError, IndexError, KeyError,
                    ZeroDivisionError, NotImplementedError, AssertionError, OverflowError,
                    RuntimeError)


def normalize(v):
    """Python values enter the scope as constexprs; tensors and objects stay."""
    if isinstance(v, (tensor, constexpr)):
        return v
    if v is None or isinstance(v, (bool, int, float, str)):
        return constexpr(v)
    if isinstance(v, tuple):
        return _same_sequence(v, [normalize(e) for e in v])
    if isinstance(v, list):
        return [normalize(e) for e in v]
    if type(v).__module__ == "numpy" and hasattr(v, "item") and getattr(v, "ndim", 1) == 0:
        return constexpr(v.item())
    return v


def _is_tensor(v):
    return isinstance(v, tensor)


def _is_literal(v):
    """A local assigned a compile-time number (core.literal_tensor)."""
    return isinstance(v, tensor) and v._literal is not None


def _as_local(v):
    """What a name assigned `v` holds. As Triton's code generator does, a
    compile-time number (a literal, a constexpr, arithmetic on them) becomes a
    scalar tensor of the number's default type; tensors, tuples, dtypes,
    functions, strings and None stay as they are. Integers beyond 64 bits stay
    constexprs (Triton rejects them; they only make sense at compile time)."""
    v = normalize(v)
    if isinstance(v, constexpr) and type(v.value) in (bool, int, float):
        if type(v.value) is int and not -(1 << 63) <= v.value < (1 << 64):
            return v
        return core.literal_tensor(v.value)
    return v


def _same_static(a, b):
    """True when two non-tensor values (or two literal tensors) are the same
    compile-time value."""
    if _is_literal(a) and _is_literal(b):
        # repr tells -0.0 from 0.0, which == does not
        return (a.handle.type == b.handle.type and type(a._literal) is type(b._literal)
                and repr(a._literal) == repr(b._literal))
    if _is_tensor(a) or _is_tensor(b):
        return False
    a, b = _unwrap(a), _unwrap(b)
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    try:
        return bool(a == b)
    except Exception:
        return False


def _hashable(v):
    """A hashable stand-in for a constexpr value in a specialisation key."""
    v = _unwrap(v)
    if isinstance(v, (list, tuple)):
        return (type(v).__name__, tuple(_hashable(e) for e in v))
    try:
        hash(v)
    except TypeError:
        return ("id", id(v))
    return (type(v).__name__, v)


def _mangle_part(part):
    return re.sub(r"[^A-Za-z0-9]", "", str(part))[:24]


def _same_sequence(like, items):
    """`items` as a sequence of `like`'s kind: a list, a tuple, or a namedtuple of the same
    type (which keeps its fields)."""
    if isinstance(like, list):
        return items
    return type(like)(*items) if hasattr(like, "_fields") else tuple(items)


def _holds_runtime_values(v):
    v = _unwrap(v)
    if _is_tensor(v) or is_aggregate(v):
        return True
    return isinstance(v, (tuple, list)) and any(_holds_runtime_values(e) for e in v)


class _TupleArg:
    """A tuple (or list, or namedtuple) holding tensors as it crosses a @jit call: its
    tensors (and those of block pointers or descriptors in it), in order, are the call's
    arguments or results; the rest (its shape, its constants) is static and keys the
    callee's specialisation. On the other side it is a plain tuple again."""

    _tritium_aggregate = True

    def __init__(self, value):
        self.value = value

    @staticmethod
    def _parts(v):
        v = _unwrap(v)
        if _is_tensor(v):
            return [v]
        if is_aggregate(v):
            return list(v._components())
        if isinstance(v, (tuple, list)):
            return [c for e in v for c in _TupleArg._parts(e)]
        return []

    def _components(self):
        return self._parts(self.value)

    def _with_components(self, comps):
        comps = iter(comps)

        def build(v):
            v = _unwrap(v)
            if _is_tensor(v):
                return next(comps)
            if is_aggregate(v):
                return v._with_components([next(comps) for _ in v._components()])
            if isinstance(v, (tuple, list)):
                return _same_sequence(v, [build(e) for e in v])
            return v

        return build(self.value)

    def _static_key(self):
        def key(v):
            v = _unwrap(v)
            if _is_tensor(v):
                return "tensor"
            if is_aggregate(v):
                return ("agg", v._static_key())
            if isinstance(v, (tuple, list)):
                return (type(v).__name__, tuple(key(e) for e in v))
            return ("const", _hashable(v))

        return key(self.value)


def _is_jit_function(fn):
    return getattr(fn, "__tritium_jit__", False)


# Loop-carried values live in "slots": a name, or (name, i) for component i of
# a block pointer or tensor descriptor held by the name (language/block.py), so
# that only the components a loop changes (a block pointer's offsets) are
# carried and the rest stay loop-invariant.
def _slot_get(scope, slot):
    if isinstance(slot, tuple):
        return scope[slot[0]]._components()[slot[1]]
    return scope[slot]


def _slot_set(scope, slot, value):
    if isinstance(slot, tuple):
        scope[slot[0]] = scope[slot[0]]._with_component(slot[1], value)
    else:
        scope[slot] = value


def _slot_label(scope, slot):
    if isinstance(slot, tuple):
        return f"{slot[0]}.{scope[slot[0]]._component_names()[slot[1]]}"
    return slot


# ---------------------------------------------------------------------------
# The generator
# ---------------------------------------------------------------------------


class ModuleContext:
    """What the generators of one module share: the builder and the
    specialisations of @jit callees already emitted as tt.funcs."""

    def __init__(self, C, module, builder):
        self.C = C
        self.module = module
        self.builder = builder
        self.callees = {}  # key -> (Function, return template)
        self.in_progress = set()
        self.names = set()

    def unique_name(self, base):
        name, i = base, 1
        while name in self.names:
            name = f"{base}_{i}"
            i += 1
        self.names.add(name)
        return name


class CodeGenerator:
    def __init__(self, ctx, jit_fn):
        self.ctx = ctx
        self.C = ctx.C
        self.builder = ctx.builder
        self.jit_fn = jit_fn
        self.src = jit_fn.parse()
        self.function_name = jit_fn.__name__
        fn = jit_fn.fn
        self.globals = fn.__globals__
        self.closure = {}
        if fn.__closure__:
            for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
                try:
                    self.closure[name] = cell.cell_contents
                except ValueError:  # empty cell
                    pass
        self.scope = {}
        self.cur_node = None
        self.is_kernel = False

    # -- locations and errors ---------------------------------------------------
    def _loc_of(self, node):
        line = getattr(node, "lineno", None)
        if line is None:
            return None
        return (self.src.file, line + self.src.line_offset,
                node.col_offset + self.src.col_offset + 1)

    def _set_loc(self, node):
        loc = self._loc_of(node) if node is not None else None
        if loc is not None:
            self.builder.set_loc(*loc)

    def error(self, message, node=None):
        node = node if node is not None else self.cur_node
        loc = self._loc_of(node) if node is not None else None
        if loc is None:
            return CompilationError(message, function=self.function_name)
        return CompilationError(message, *loc, function=self.function_name)

    def unsupported(self, node, what=None):
        what = what or _UNSUPPORTED.get(type(node).__name__, type(node).__name__)
        return self.error(f"unsupported Python construct: '{what}'", node)

    def _translate(self, e, node):
        """The CompilationError for an exception raised while visiting node."""
        if isinstance(e, self.C.UserError):
            message, file, line, col = user_error_args(e)
            if line <= 0:
                return self.error(message, node)
            return CompilationError(message, file, line, col, function=self.function_name)
        if isinstance(e, core.StaticAssertionError):
            return self.error(str(e), node)
        text = str(e) if str(e) else type(e).__name__
        if isinstance(e, KeyError):
            text = f"KeyError: {text}"
        return self.error(text, node)

    # -- visiting ------------------------------------------------------------------
    def visit(self, node):
        prev = self.cur_node
        self.cur_node = node
        self._set_loc(node)
        try:
            method = getattr(self, "visit_" + type(node).__name__, None)
            if method is None:
                raise self.unsupported(node)
            return method(node)
        except (CompilationError, self.C.InternalError):
            raise
        # The original exception stays the CompilationError's __cause__, as in
        # Triton (code and tests written against Triton read the message
        # there).
        except self.C.UserError as e:
            raise self._translate(e, node) from e
        except _USER_EXCEPTIONS as e:
            raise self._translate(e, node) from e
        except Exception as e:  # a bug in tritium: keep the cause chained
            raise self.error(f"internal error: {type(e).__name__}: {e}", node) from e
        finally:
            self.cur_node = prev
            if prev is not None:
                self._set_loc(prev)

    def visit_stmts(self, stmts):
        for stmt in stmts:
            self.visit(stmt)

    def lookup(self, name):
        if name in self.scope:
            return self.scope[name]
        if name in self.closure:
            return normalize(self.closure[name])
        if name in self.globals:
            return normalize(self.globals[name])
        if hasattr(builtins, name):
            return getattr(builtins, name)
        raise self.error(f"name {name!r} is not defined")

    # -- functions -------------------------------------------------------------------
    def build_function(self, name, params, is_kernel, noinline=False):
        """Emits this function as `tt.func @name`.

        params: per Python parameter, ("arg", tl type, divisible_by_16) for a
        runtime argument or ("const", value) for a specialised one. Returns
        (Function, return template); the template says how the values of
        tt.return map back to what the Python `return` gave (see _ret)."""
        b = self.builder
        fdef = self.src.fdef
        self.is_kernel = is_kernel
        self.cur_node = fdef
        self._set_loc(fdef)
        arg_types, arg_names, arg_index = [], [], []
        for pname, p in params:
            if p[0] == "arg":
                arg_index.append(pname)
                t = p[1]
                arg_types.append(t.to_ir() if isinstance(t, tl.dtype) else t)
                arg_names.append(pname)
            elif p[0] == "agg":  # a block pointer or descriptor, one argument per component
                arg_types.extend(p[2])
                arg_names.extend(f"{pname}_{j}" for j in range(len(p[2])))
        try:
            fn = b.create_function(name, arg_types, arg_names)
            if is_kernel:
                fn.set_attr("kernel", True)
            if noinline:
                fn.set_attr("noinline", True)
        except self.C.UserError as e:
            raise self._translate(e, fdef) from None
        i = 0
        # Parameters annotated `tl.const`: check-const-pointers rejects writes through them.
        const_params = {p.name for p in getattr(self.jit_fn, "params", ())
                        if getattr(p, "is_const", False)}
        for pname, p in params:
            if p[0] == "arg":
                if p[2]:
                    fn.set_arg_attr(i, "tt.divisibility", 16)
                if pname in const_params:
                    fn.set_arg_attr(i, "tt.const", True)
                if len(p) > 3 and p[3]:  # a tensor of 2^31+ elements (jit._key_one)
                    fn.set_arg_attr(i, "tt.int64_offsets", True)
                self.scope[pname] = tensor(fn.arg(i))
                i += 1
            elif p[0] == "agg":
                n = len(p[2])
                self.scope[pname] = p[1]._with_components(
                    [tensor(fn.arg(i + j)) for j in range(n)])
                i += n
            elif p[0] == "group":  # a host TensorDescriptor: its parts came before it
                self.scope[pname] = p[1].build([self.scope[n] for n in p[1].parts])
            else:
                self.scope[pname] = normalize(p[1])
        body = self.src.lowered_body()
        self.visit_stmts(body)
        if RET in self.scope:
            value = self.scope[RET]
        elif self.src.returns_value:
            raise self.error(f"@jit function {self.function_name!r} returns a value on some "
                             "paths but not on others", fdef)
        else:
            value = None
        template = self._ret(value, is_kernel)
        return fn, template

    def _ret(self, value, is_kernel):
        """Emits tt.return. Runtime values are returned; constexprs are handed
        back to the caller at compile time. The template is ("none",),
        ("one", item) or ("tuple", [item...]) with item ("value", i) or
        ("const", constexpr)."""
        b = self.builder
        loc_node = self.src.fdef
        self.cur_node = loc_node
        self._set_loc(loc_node)
        if is_kernel and value is not None and not (
                isinstance(value, constexpr) and value.value is None):
            raise self.error("a kernel cannot return a value", loc_node)
        values = []

        def item(v):
            if _is_tensor(v):
                values.append(v.handle)
                return ("value", len(values) - 1)
            if is_aggregate(v):
                values.extend(c.handle for c in v._components())
                return ("agg", v, list(range(len(values) - len(v._components()), len(values))))
            if isinstance(v, (tuple, list)) and _holds_runtime_values(v):
                return item(_TupleArg(v))
            return ("const", normalize(v))

        if value is None or (isinstance(value, constexpr) and value.value is None):
            template = ("none",)
        elif isinstance(value, (tuple, list)) and not hasattr(value, "_fields"):
            template = ("tuple", [item(v) for v in value])
        else:
            template = ("one", item(value))
        try:
            b.ret(values)
        except self.C.UserError as e:
            raise self._translate(e, loc_node) from None
        return template

    def call_jit(self, jfn, args, kwargs):
        """A call of another @jit function: a tt.func per specialisation
        (constexpr arguments specialise it), called with tt.call."""
        b = self.builder
        try:
            bound = jfn.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise self.error(f"{jfn.__name__}(): {e}") from None
        bound.apply_defaults()
        params, key, runtime_args = [], [], []
        for pname, v in bound.arguments.items():
            if pname in jfn.constexpr_names:
                if _is_literal(v):
                    v = constexpr(v._literal)
                if _is_tensor(v):
                    raise self.error(f"argument {pname!r} of {jfn.__name__} is tl.constexpr, "
                                     "but the value passed is only known at run time")
                params.append((pname, ("const", v)))
                key.append(("const", _hashable(v)))
            elif _is_tensor(v):
                params.append((pname, ("arg", v.handle.type, False)))
                key.append(("arg", str(v.handle.type)))
                runtime_args.append(v.handle)
            elif is_aggregate(v):
                comps = v._components()
                params.append((pname, ("agg", v, [c.handle.type for c in comps])))
                key.append(("agg", (v._static_key(),
                                    tuple(str(c.handle.type) for c in comps))))
                runtime_args.extend(c.handle for c in comps)
            elif isinstance(_unwrap(v), (tuple, list)) and _holds_runtime_values(v):
                agg = _TupleArg(_unwrap(v))
                comps = agg._components()
                params.append((pname, ("agg", agg, [c.handle.type for c in comps])))
                key.append(("agg", (agg._static_key(),
                                    tuple(str(c.handle.type) for c in comps))))
                runtime_args.extend(c.handle for c in comps)
            else:
                params.append((pname, ("const", v)))
                key.append(("const", _hashable(v)))
        cache_key = (id(jfn), jfn, tuple(key))
        entry = self.ctx.callees.get(cache_key)
        if entry is None:
            if cache_key in self.ctx.in_progress:
                raise self.error(f"recursive call of @jit function {jfn.__name__!r} is not "
                                 "supported")
            parts = [_mangle_part(k[1] if k[0] == "arg" else k[1][1]) for k in key]
            name = self.ctx.unique_name("__".join([jfn.__name__] + parts)[:80])
            self.ctx.in_progress.add(cache_key)
            ip = b.save_ip()
            try:
                gen = CodeGenerator(self.ctx, jfn)
                entry = gen.build_function(name, params, is_kernel=False,
                                           noinline=jfn.noinline)
            except CompilationError as inner:
                # As in Triton: the error names the call, and its __cause__ is the
                # error inside the callee (which keeps its own line and caret).
                if inner.function == jfn.__name__ and inner.line > 0:
                    where = f"{os.path.basename(inner.file)}:{inner.line}" if inner.file else ""
                    raise self.error(f"in the call of {jfn.__name__}"
                                     f"{' (' + where + ')' if where else ''}: "
                                     f"{inner.message}") from inner
                raise
            finally:
                b.restore_ip(ip)
                self.ctx.in_progress.discard(cache_key)
                self._set_loc(self.cur_node)
            self.ctx.callees[cache_key] = entry
        fn, template = entry
        results = [tensor(r) for r in b.call(fn, runtime_args)]

        def item(t):
            if t[0] == "agg":
                return t[1]._with_components([results[j] for j in t[2]])
            return results[t[1]] if t[0] == "value" else t[1]

        if template[0] == "none":
            return constexpr(None)
        if template[0] == "one":
            return item(template[1])
        return tuple(item(t) for t in template[1])

    # -- statements ------------------------------------------------------------------
    def visit_Expr(self, node):
        self.visit(node.value)

    def visit_Pass(self, node):
        pass

    def visit_Return(self, node):
        # After lower_returns, every `return` outside a loop ends its path of
        # the function: it only records the returned value; scf.if merges the
        # values of the paths like any other variable.
        if not getattr(node, "_tritium_tail", False):
            raise self.unsupported(node, "return inside a loop")
        value = self.visit(node.value) if node.value is not None else constexpr(None)
        if self.is_kernel and not (isinstance(value, constexpr) and value.value is None):
            raise self.error("a kernel cannot return a value", node)
        self.scope[RET] = value

    def visit_Assign(self, node):
        value = self.visit(node.value)
        for target in node.targets:
            self._assign(target, value)

    def _assign(self, target, value, constexpr_local=False):
        if isinstance(target, ast.Name):
            self.scope[target.id] = normalize(value) if constexpr_local else _as_local(value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            if _is_tensor(value):
                raise self.error("cannot unpack a tensor", target)
            values = _unwrap(value)
            if not isinstance(values, (tuple, list)):
                raise self.error(f"cannot unpack a non-tuple value ({values!r})", target)
            if any(isinstance(t, ast.Starred) for t in target.elts):
                raise self.unsupported(target, "starred assignment")
            if len(values) != len(target.elts):
                raise self.error(f"cannot unpack {len(values)} values into "
                                 f"{len(target.elts)} names", target)
            for t, v in zip(target.elts, values):
                self._assign(t, v, constexpr_local)
        elif isinstance(target, ast.Subscript):
            raise self.unsupported(target, "assignment to a subscript")
        elif isinstance(target, ast.Attribute):
            raise self.unsupported(target, "assignment to an attribute")
        else:
            raise self.unsupported(target)

    def visit_AnnAssign(self, node):
        annotation = _unwrap(self.visit(node.annotation))
        if node.value is None:
            return
        value = self.visit(node.value)
        if annotation is constexpr:
            if _is_tensor(value):
                raise self.error("a value annotated tl.constexpr must be known at compile "
                                 "time", node.value)
            value = constexpr(_unwrap(value))
        self._assign(node.target, value, constexpr_local=annotation is constexpr)

    def visit_AugAssign(self, node):
        if not isinstance(node.target, ast.Name):
            raise self.unsupported(node.target, "augmented assignment to a subscript or "
                                   "attribute")
        current = self.lookup(node.target.id)
        rhs = self.visit(node.value)
        # `x += 1` is `x = x + 1`: a compile-time result becomes a tensor too.
        self.scope[node.target.id] = _as_local(self._binop(node.op, current, rhs))

    def visit_Assert(self, node):
        test = self.visit(node.test)
        if _is_tensor(test):  # as in Triton: device_assert
            msg = _unwrap(self.visit(node.msg)) if node.msg is not None else ""
            text = ast.get_source_segment(self.src.text, node.test) or "assertion"
            tl.device_assert(test, str(msg or text))
            return
        if not _unwrap(test):
            msg = _unwrap(self.visit(node.msg)) if node.msg is not None else ""
            raise self.error(f"assertion failed{': ' + str(msg) if msg else ''}", node)

    # -- if -------------------------------------------------------------------------
    def visit_If(self, node):
        cond = core.literal_value(self.visit(node.test))  # `flag = True; if flag:` folds
        if not _is_tensor(cond):
            self.visit_stmts(node.body if _unwrap(cond) else node.orelse)
            return
        cond = self._scalar_condition(cond, "if", node.test)
        self._build_if(cond, lambda: self.visit_stmts(node.body),
                       lambda: self.visit_stmts(node.orelse), bool(node.orelse))

    def _scalar_condition(self, cond, what, node):
        if cond.type.is_block() and cond.numel == 1:  # a one-element tensor, as in Triton
            cond = cond.item()
        if cond.type.is_block():
            raise self.error(f"the condition of `{what}` must be a scalar, but it is a tensor "
                             f"of shape {list(cond.type.shape)} (use tl.where to choose "
                             "elementwise)", node)
        if cond.dtype.is_ptr():
            raise self.error(f"the condition of `{what}` cannot be a pointer", node)
        if not cond.dtype.is_bool():
            cond = tensor(self.builder.binary("ne", cond.handle, 0))
        return cond

    def _in_block(self, block, fn):
        b = self.builder
        ip = b.save_ip()
        b.set_insertion_point_to_end(block)
        try:
            return fn()
        finally:
            b.restore_ip(ip)

    def _build_if(self, cond, then_fn, else_fn, has_else):
        b = self.builder
        before = self.scope
        ip = b.save_ip()
        try:
            then_blk = b.new_block()
            b.set_insertion_point_to_end(then_blk)
            self.scope = dict(before)
            then_fn()
            then_scope = self.scope
            else_blk = b.new_block()
            b.set_insertion_point_to_end(else_blk)
            self.scope = dict(before)
            else_fn()
            else_scope = self.scope
        finally:
            b.restore_ip(ip)
            self.scope = before
            self._set_loc(self.cur_node)
        # slots: (name, None) for a value, (name, i) for element i of a tuple
        merged, slots, then_vals, else_vals = {}, [], [], []
        aggregates = {}  # name -> a block pointer / descriptor merged componentwise

        def merge(label, slot, tv, ev):
            if tv is ev:
                return tv
            if _same_static(tv, ev):
                # Equal literal tensors made in the branches live there: the
                # same number made before the if serves after it.
                return core.literal_tensor(tv._literal) if _is_literal(tv) else tv
            tval, eval_ = self._unify(label, tv, then_blk, ev, else_blk,
                                      "in the then-branch", "in the else-branch")
            slots.append(slot)
            then_vals.append(tval)
            else_vals.append(eval_)
            return None

        for name in list(then_scope) + [n for n in else_scope if n not in then_scope]:
            if name not in then_scope or name not in else_scope:
                continue  # defined in one branch only: not visible after the if
            tv, ev = then_scope[name], else_scope[name]
            label = "the returned value" if name == RET else name
            tt_, et = _unwrap(tv), _unwrap(ev)
            if (is_aggregate(tt_) and is_aggregate(et) and tv is not ev
                    and tt_._static_key() == et._static_key()):
                aggregates[name] = tt_
                merged[name] = [merge(f"{label}.{n}", (name, i), a, c) for i, (n, a, c) in
                                enumerate(zip(tt_._component_names(), tt_._components(),
                                              et._components()))]
            elif (isinstance(tt_, tuple) and isinstance(et, tuple) and len(tt_) == len(et)
                    and tv is not ev):
                merged[name] = [merge(f"{label}[{i}]", (name, i), a, c)
                                for i, (a, c) in enumerate(zip(tt_, et))]
            else:
                merged[name] = merge(label, (name, None), tv, ev)
        self._in_block(then_blk, lambda: b.yield_(then_vals))
        if slots or has_else:
            self._in_block(else_blk, lambda: b.yield_(else_vals))
        else:
            b.discard_block(else_blk)
            else_blk = None
        op = b.create_if(cond.handle, then_blk, else_blk)
        for i, (name, index) in enumerate(slots):
            if index is None:
                merged[name] = tensor(op.result(i))
            else:
                merged[name][index] = tensor(op.result(i))
        self.scope = dict(before)
        for name, v in merged.items():
            if name in aggregates:
                self.scope[name] = aggregates[name]._with_components(v)
            else:
                self.scope[name] = tuple(v) if isinstance(v, list) else v
        return op

    def _materialize_as(self, value, ir_type):
        """A literal as an IR value of `ir_type` (a scalar or tensor type), or
        None when the literal's kind does not fit (a float as an int, ...)."""
        v = _unwrap(value)
        b = self.builder
        if not isinstance(v, (bool, int, float)):
            return None
        scalar = ir_type.scalar_type
        if scalar.is_pointer:
            return None
        d = scalar.dtype
        if d == "i1":
            if not isinstance(v, bool):
                return None
        elif scalar.is_float_like:
            v = float(v)
        elif isinstance(v, float):
            return None
        else:
            v = int(v)
        if ir_type.is_tensor:
            return b.full(list(ir_type.shape), v, d)
        if d == "i1":
            return b.const_bool(v)
        if isinstance(v, float):
            return b.const_float(v, d)
        return b.const_int(v, d)

    def _unify(self, name, a, a_blk, c, c_blk, a_where, c_where):
        """IR values of one type for `name` in two blocks (materialising
        literals in their block), or a CompilationError."""
        b = self.builder
        if _is_tensor(a) and _is_tensor(c) and a.handle.type != c.handle.type:
            # A number assigned to a local in one path takes the other path's
            # type, as it did when it was a constexpr (Triton rejects this).
            if _is_literal(a) and not _is_literal(c):
                a = constexpr(a._literal)
            elif _is_literal(c) and not _is_literal(a):
                c = constexpr(c._literal)
        for v in (a, c):
            if not _is_tensor(v) and not isinstance(_unwrap(v), (bool, int, float)):
                raise self.error(f"{name!r} is {_describe(a)} {a_where} but {_describe(c)} "
                                 f"{c_where}; only tensors and numbers can differ between "
                                 "the paths of a runtime `if` or loop")
        if _is_tensor(a) and _is_tensor(c):
            va, vc = a.handle, c.handle
        elif _is_tensor(a):
            va = a.handle
            vc = self._in_block(c_blk, lambda: self._materialize_as(c, va.type))
        elif _is_tensor(c):
            vc = c.handle
            va = self._in_block(a_blk, lambda: self._materialize_as(a, vc.type))
        else:
            va = self._in_block(a_blk, lambda: b.materialize(_unwrap(a)))
            vc = self._in_block(c_blk, lambda: b.materialize(_unwrap(c)))
        if va is None or vc is None or va.type != vc.type:
            raise self.error(f"{name!r} has type {_describe(a)} {a_where} but "
                             f"{_describe(c)} {c_where}; the types must match (cast with "
                             ".to(...))")
        return va, vc

    def visit_IfExp(self, node):
        cond = core.literal_value(self.visit(node.test))
        if not _is_tensor(cond):
            return self.visit(node.body if _unwrap(cond) else node.orelse)
        if cond.type.is_block():
            return tensor(self.builder.where(cond.handle, core._operand(self.visit(node.body)),
                                             core._operand(self.visit(node.orelse))))
        cond = self._scalar_condition(cond, "if", node.test)
        key = " ifexp"

        def branch(expr):
            return lambda: self.scope.__setitem__(key, self.visit(expr))

        self._build_if(cond, branch(node.body), branch(node.orelse), True)
        result = self.scope.pop(key)
        return result

    # -- loops -----------------------------------------------------------------------
    def visit_For(self, node):
        if node.orelse:
            raise self.unsupported(node, "for ... else")
        it = node.iter
        fn = self.visit(it.func) if isinstance(it, ast.Call) else None
        fn = _unwrap(fn)
        if not any(fn is r for r in (builtins.range, tl.range, tl.static_range)):
            raise self.error("only `for ... in range(...)`, `tl.range(...)` and "
                             "`tl.static_range(...)` loops are supported", it)
        if not isinstance(node.target, ast.Name):
            raise self.unsupported(node.target, "loop target other than a name")
        args = [self.visit(a) for a in it.args]
        kwargs = {k.arg: self.visit(k.value) for k in it.keywords}
        self._set_loc(node)
        fname = {builtins.range: "range", tl.range: "tl.range",
                 tl.static_range: "tl.static_range"}[fn]
        if fn is builtins.range:
            if kwargs or not 1 <= len(args) <= 3:
                raise self.error("range() takes 1 to 3 positional arguments", it)
            spec = tl.range(*args)
        else:
            try:
                spec = fn(*args, **kwargs)
            except TypeError as e:
                raise self.error(f"{fname}(): {e}", it) from None
        bounds = []
        for v in (spec.start, spec.end, spec.step):
            v = core.literal_value(v)  # `n = 4; range(n)`: bounds known now
            if _is_tensor(v):
                if fn is tl.static_range:
                    raise self.error("tl.static_range's arguments must be constexpr", it)
                if not v.dtype.is_int() or v.type.is_block():
                    raise self.error(f"{fname}'s arguments must be integer scalars, got {v}",
                                     it)
                bounds.append(v.handle)
            else:
                u = _unwrap(v)
                if isinstance(u, bool) or not isinstance(u, int):
                    raise self.error(f"{fname}'s arguments must be integers, got {u!r}", it)
                bounds.append(u)
        if isinstance(bounds[2], int) and bounds[2] == 0:
            raise self.error(f"{fname}'s step must not be zero", it)
        if fn is tl.static_range:
            return self._unroll_static_range(node, it, bounds)
        reverse = isinstance(bounds[2], int) and bounds[2] < 0
        if reverse:
            # scf.for counts up: run iv' over [ub, lb) with step -step and
            # give the body iv = lb + ub - iv' (Triton does the same).
            bounds = [bounds[1], bounds[0], -bounds[2]]
        attrs = {}
        if fn is tl.range and _unwrap(spec.num_stages) is not None:
            attrs["num_stages"] = int(_unwrap(spec.num_stages))
        self._build_for(node, node.target.id, bounds, attrs, reverse)

    # Triton's tl.static_range binds its induction variable as a constexpr in
    # each copy of the body (so `weights[i]`, `tl.static_assert(i < N)` and
    # `if i % 2 == 0:` are compile-time), which only expansion in the code
    # generator can give. The unroll pass handles `scf.for {unroll = "full"}`
    # written in IR.
    MAX_STATIC_UNROLL = 4096

    def _unroll_static_range(self, node, it, bounds):
        trips = range(*bounds)
        if len(trips) > self.MAX_STATIC_UNROLL:
            raise self.error(f"tl.static_range would unroll {len(trips)} iterations; "
                             f"at most {self.MAX_STATIC_UNROLL} are allowed", it)
        for i in trips:
            self.scope[node.target.id] = tl.constexpr(i)
            self.visit_stmts(node.body)

    def _dry_run(self, build, exclude, seed):
        """Runs `build` with the insertion point in a scratch block that is
        discarded afterwards, the names in `seed` bound to placeholder values
        of their types. Returns (what build returned, changes): changes maps
        each name defined before that the run rebound to ("type", the _C.Type
        of its new value) or ("static", its new compile-time value). The
        run's IR values die with the scratch block; only types survive."""
        b = self.builder
        before = self.scope
        ip = b.save_ip()
        scratch = b.new_block()
        try:
            b.set_insertion_point_to_end(scratch)
            self.scope = dict(before)
            for name, t in seed.items():
                _slot_set(self.scope, name, tensor(scratch.add_argument(t)))
            start = dict(self.scope)
            result = build()
            changes = {}
            for name, new in self.scope.items():
                if name in exclude or name not in start:
                    continue
                old = start[name]
                if new is old:
                    continue
                if (is_aggregate(new) and is_aggregate(old)
                        and new._static_key() == old._static_key()):
                    for i, (n, o) in enumerate(zip(new._components(), old._components())):
                        if n is not o:
                            changes[(name, i)] = ("type", n.handle.type)
                    continue
                if _same_static(new, old):
                    continue
                changes[name] = ("type", new.handle.type) if _is_tensor(new) else ("static", new)
            return result, changes
        finally:
            b.restore_ip(ip)
            b.discard_block(scratch)
            self.scope = before
            self._set_loc(self.cur_node)

    def _carried_type(self, name, old, change):
        """The type of a loop-carried name: the type it had before the loop
        if it was a tensor, else the type the loop body gives it, else the
        default type of the number it was. A number assigned to a local is a
        tensor of its default type (`acc = 0`), but, as before it was one, the
        loop body may settle its type (`acc += x` with x fp32): tritium
        accepts what Triton rejects here."""
        if _is_tensor(old) and not _is_literal(old):
            return old.handle.type
        if change is not None and change[0] == "type":
            return change[1]
        if _is_literal(old):
            return old.handle.type
        if is_aggregate(old):
            new = change[1] if change is not None else None
            raise self.error(f"{name!r} is {old!r} before the loop but {new!r} after its body; "
                             "a loop-carried block pointer or tensor descriptor must keep its "
                             "block shape, order and padding")
        u = _unwrap(old)
        if isinstance(u, bool):
            return self.C.Type.scalar("i1")
        if isinstance(u, int):
            return self.C.Type.scalar(int_dtype(u).ir_name)
        if isinstance(u, float):
            return self.C.Type.scalar("f32")
        raise self.error(f"{name!r} ({_describe(old)}) is changed by the loop; only tensors "
                         "and numbers can be loop-carried")

    def _find_carried(self, build, exclude=()):
        """Dry-runs a loop body until the set of loop-carried names and their
        types stop changing: a name that becomes carried (e.g. `i` in
        `i += 1`) is a runtime value in the next run, which can make more
        names change (`s += i * i`). Returns (build's result, {name: type})
        in the order of first change."""
        before = self.scope
        seed = {}
        slots = sum(len(v._components()) if is_aggregate(v) else 1 for v in before.values())
        for _ in range(slots + 4):
            result, changes = self._dry_run(build, exclude, seed)
            types = dict(seed)
            for name, change in changes.items():
                types[name] = self._carried_type(_slot_label(before, name),
                                                 _slot_get(before, name), change)
            if types == seed:
                return result, seed
            seed = types
        raise self.error("internal error: the loop-carried values do not settle")

    def _loop_inits(self, types, before):
        inits = []
        for name, t in types.items():
            old = _slot_get(before, name)
            label = _slot_label(before, name)
            if _is_tensor(old) and (old.handle.type == t or not _is_literal(old)):
                if old.handle.type != t:
                    raise self._carried_type_error(label, old.handle.type, t)
                inits.append(old.handle)
            else:
                v = self._materialize_as(core.literal_value(old), t)
                if v is None:
                    raise self._carried_type_error(label, _describe(old), t)
                inits.append(v)
        return inits

    def _carried_type_error(self, name, before_t, after_t):
        return self.error(
            f"loop-carried variable {name!r} has type {before_t} before the loop but "
            f"{after_t} at the end of the loop body; its type must stay the same (cast "
            "with .to(...), or initialise it with the right type, e.g. tl.zeros(...))")

    def _loop_yields(self, names, block_args):
        """The values to yield for the carried names at the end of the body."""
        values = []
        for name, arg in zip(names, block_args):
            v = _slot_get(self.scope, name)
            label = _slot_label(self.scope, name)
            if _is_tensor(v) and (v.handle.type == arg.type or not _is_literal(v)):
                if v.handle.type != arg.type:
                    raise self._carried_type_error(label, arg.type, v.handle.type)
                values.append(v.handle)
            else:
                m = self._materialize_as(core.literal_value(v), arg.type)
                if m is None:
                    raise self._carried_type_error(label, arg.type, _describe(v))
                values.append(m)
        return values

    def _build_for(self, node, target, bounds, attrs, reverse=False):
        b = self.builder
        before = self.scope

        def induction_var(iv):
            if not reverse:
                return tensor(iv)
            return tensor(b.binary("add", b.binary("sub", bounds[1], iv), bounds[0]))

        def dry():
            op = b.create_for(bounds[0], bounds[1], bounds[2], [])
            body = op.body(0)
            b.set_insertion_point_to_end(body)
            self.scope[target] = induction_var(body.arg(0))
            self.visit_stmts(node.body)

        _, types = self._find_carried(dry, exclude=(target,))
        names = list(types)
        inits = self._loop_inits(types, before)
        op = b.create_for(bounds[0], bounds[1], bounds[2], inits)
        for k, v in attrs.items():
            op.set_attr(k, v)
        body = op.body(0)
        ip = b.save_ip()
        try:
            b.set_insertion_point_to_end(body)
            self.scope = dict(before)
            self.scope[target] = induction_var(body.arg(0))
            args = [body.arg(i + 1) for i in range(len(names))]
            for name, arg in zip(names, args):
                _slot_set(self.scope, name, tensor(arg))
            self.visit_stmts(node.body)
            self._set_loc(node)
            b.yield_(self._loop_yields(names, args))
        finally:
            b.restore_ip(ip)
            self.scope = before
        self.scope = dict(before)
        for i, name in enumerate(names):
            _slot_set(self.scope, name, tensor(op.result(i)))

    def visit_While(self, node):
        if node.orelse:
            raise self.unsupported(node, "while ... else")
        b = self.builder
        before = self.scope

        def dry():
            cond = self.visit(node.test)
            static_false = not _is_tensor(cond) and not _unwrap(cond)
            self.visit_stmts(node.body)
            return static_false

        static_false, types = self._find_carried(dry)
        names = list(types)
        if not names and static_false:
            return  # `while False:` with nothing that could change that
        inits = self._loop_inits(types, before)
        types = [v.type for v in inits]
        ip = b.save_ip()
        try:
            before_blk = b.new_block()
            args = [before_blk.add_argument(t) for t in types]
            b.set_insertion_point_to_end(before_blk)
            self.scope = dict(before)
            for n, a in zip(names, args):
                _slot_set(self.scope, n, tensor(a))
            cond = self.visit(node.test)
            if not _is_tensor(cond):
                cond = tensor(b.const_bool(bool(_unwrap(cond))))
            cond = self._scalar_condition(cond, "while", node.test)
            self._set_loc(node)
            b.condition(cond.handle, args)
            after_blk = b.new_block()
            args = [after_blk.add_argument(t) for t in types]
            b.set_insertion_point_to_end(after_blk)
            self.scope = dict(before)
            for n, a in zip(names, args):
                _slot_set(self.scope, n, tensor(a))
            self.visit_stmts(node.body)
            self._set_loc(node)
            b.yield_(self._loop_yields(names, args))
        finally:
            b.restore_ip(ip)
            self.scope = before
        op = b.create_while(inits, before_blk, after_blk)
        self.scope = dict(before)
        for i, name in enumerate(names):
            _slot_set(self.scope, name, tensor(op.result(i)))

    # -- expressions -----------------------------------------------------------------
    def visit_Constant(self, node):
        return constexpr(node.value)

    def visit_Name(self, node):
        return self.lookup(node.id)

    def visit_Tuple(self, node):
        return tuple(self._elements(node.elts))

    def visit_List(self, node):
        return list(self._elements(node.elts))

    def visit_ListComp(self, node):
        return list(self._comprehension(node))

    def visit_GeneratorExp(self, node):
        # `tl.tuple(f(v) for v in values)`: evaluated here, like a list comprehension.
        return tuple(self._comprehension(node))

    def _comprehension(self, node):
        """A comprehension over sequences known at compile time (tuples, lists, ranges,
        tl.static_range), unrolled: each element is generated code, as in Triton."""
        out = []
        saved = dict(self.scope)

        def walk(i):
            if i == len(node.generators):
                out.append(self.visit(node.elt))
                return
            gen = node.generators[i]
            if gen.is_async:
                raise self.unsupported(gen, "async comprehension")
            seq = _unwrap(self.visit(gen.iter))
            if _is_tensor(seq):
                raise self.error("a comprehension in a kernel iterates over a tuple, a list or "
                                 "a range known at compile time, not a tensor", gen.iter)
            if isinstance(seq, (tl.range, tl.static_range)):
                bounds = [_unwrap(x) for x in (seq.start, seq.end, seq.step)]
                if not all(isinstance(x, int) for x in bounds):
                    raise self.error("a comprehension's range must be known at compile time",
                                     gen.iter)
                seq = range(*bounds)
            try:
                items = list(seq)
            except TypeError:
                raise self.error(f"a comprehension in a kernel iterates over a tuple, a list "
                                 f"or a range known at compile time, not {seq!r}",
                                 gen.iter) from None
            for v in items:
                self._assign(gen.target, v, constexpr_local=not _holds_runtime_values(v))
                keep = True
                for cond in gen.ifs:
                    c = self.visit(cond)
                    if _is_tensor(c):
                        raise self.error("a comprehension's condition must be known at "
                                         "compile time", cond)
                    keep = keep and bool(_unwrap(c))
                if keep:
                    walk(i + 1)

        try:
            walk(0)
        finally:
            self.scope = saved  # the comprehension's names do not leak
        return out

    def _elements(self, elts):
        out = []
        for e in elts:
            if isinstance(e, ast.Starred):
                v = _unwrap(self.visit(e.value))
                if not isinstance(v, (tuple, list)):
                    raise self.error(f"cannot unpack {_describe(v)} with '*'", e)
                out.extend(normalize(x) for x in v)
            else:
                out.append(self.visit(e))
        return out

    def visit_JoinedStr(self, node):
        parts = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                parts.append(str(v.value))
                continue
            val = core.literal_value(self.visit(v.value))
            if _is_tensor(val):
                raise self.error("an f-string can only format compile-time values", v)
            val = _unwrap(val)
            if v.conversion == ord("r"):
                val = repr(val)
            elif v.conversion == ord("s"):
                val = str(val)
            elif v.conversion == ord("a"):
                val = ascii(val)
            spec = _unwrap(self.visit(v.format_spec)) if v.format_spec is not None else ""
            parts.append(format(val, spec))
        return constexpr("".join(parts))

    def visit_BinOp(self, node):
        lhs = self.visit(node.left)
        rhs = self.visit(node.right)
        return self._binop(node.op, lhs, rhs)

    def _binop(self, op, lhs, rhs):
        fn = _BINOPS.get(type(op))
        if fn is None:
            raise self.unsupported(op)
        return normalize(fn(lhs, rhs))

    def visit_UnaryOp(self, node):
        v = self.visit(node.operand)
        if isinstance(node.op, ast.Not):
            if _is_tensor(v):
                return tensor(self.builder.unary("not", v.handle))
            return constexpr(not _unwrap(v))
        if isinstance(node.op, ast.USub):
            return normalize(-v)
        if isinstance(node.op, ast.UAdd):
            return normalize(+v)
        if isinstance(node.op, ast.Invert):
            return normalize(~v)
        raise self.unsupported(node)

    def visit_BoolOp(self, node):
        is_and = isinstance(node.op, ast.And)
        result = self.visit(node.values[0])
        for expr in node.values[1:]:
            if not _is_tensor(result):
                truth = bool(_unwrap(result))
                if truth != is_and:  # `False and ...`, `True or ...`: Python's short cut
                    return result
                result = self.visit(expr)
            else:
                rhs = self.visit(expr)
                result = self._logical(is_and, result, rhs)
        return result

    def _logical(self, is_and, a, c):
        return tensor(self.builder.binary("logical_and" if is_and else "logical_or",
                                          core._operand(a), core._operand(c)))

    def visit_Compare(self, node):
        left = self.visit(node.left)
        result = None
        for op, comp in zip(node.ops, node.comparators):
            if result is not None and not _is_tensor(result) and not _unwrap(result):
                return result  # a chained comparison stops at the first False
            right = self.visit(comp)
            r = self._compare(op, left, right)
            if result is None or (not _is_tensor(result)):
                result = r
            else:
                result = self._logical(True, result, r)
            left = right
        return result

    def _compare(self, op, lhs, rhs):
        if isinstance(op, (ast.Is, ast.IsNot)):
            same = _unwrap(lhs) is _unwrap(rhs)
            return constexpr(same if isinstance(op, ast.Is) else not same)
        if isinstance(op, (ast.In, ast.NotIn)):
            if _is_tensor(lhs) or _is_tensor(rhs):
                raise self.error("'in' is not supported on tensors")
            found = _unwrap(lhs) in _unwrap_deep(rhs)
            return constexpr(found if isinstance(op, ast.In) else not found)
        if isinstance(op, (ast.Eq, ast.NotEq)) and not _is_tensor(lhs) and not _is_tensor(rhs):
            a, c = _unwrap(lhs), _unwrap(rhs)
            if isinstance(a, (tuple, list)) and isinstance(c, (tuple, list)):
                # As in Triton, where list and tuple displays both build a
                # tl.tuple: `x.shape == [M, N]` and `x.shape == (M, N)` compare
                # the elements, whichever brackets each side has.
                same = _sequence_items(a) == _sequence_items(c)
                return constexpr(same if isinstance(op, ast.Eq) else not same)
        return normalize(_CMPOPS[type(op)](lhs, rhs))

    def visit_Attribute(self, node):
        obj = self.visit(node.value)
        if not _is_tensor(obj):
            obj = _unwrap(obj)
        try:
            return normalize(getattr(obj, node.attr))
        except AttributeError:
            what = "tensor" if _is_tensor(obj) else _describe(obj)
            raise self.error(f"{what} has no attribute {node.attr!r}") from None

    def visit_Subscript(self, node):
        base = self.visit(node.value)
        index = self._index(node.slice)
        if _is_tensor(base):
            return base[index]
        return normalize(_unwrap(base)[_unwrap_deep(index)])

    def _index(self, node):
        if isinstance(node, ast.Slice):
            parts = [None if p is None else core.literal_value(self.visit(p))
                     for p in (node.lower, node.upper, node.step)]
            if any(_is_tensor(p) for p in parts):
                raise self.error("slice bounds must be constexpr", node)
            return slice(*parts)
        if isinstance(node, ast.Tuple):
            return tuple(self._index(e) for e in node.elts)
        if _is_ast_index(node):
            return self._index(node.value)
        v = core.literal_value(self.visit(node))
        if _is_tensor(v):
            raise self.error("indexing with a tensor is not supported", node)
        return _unwrap(v)

    def visit_Call(self, node):
        fn = self.visit(node.func)
        args = self._elements(node.args)
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None:
                raise self.unsupported(kw.value, "**kwargs")
            kwargs[kw.arg] = self.visit(kw.value)
        self._set_loc(node)
        return self.call(fn, args, kwargs)

    def call(self, fn, args, kwargs):
        fn = _unwrap(fn)
        if _is_jit_function(fn):
            return self.call_jit(fn, args, kwargs)
        if fn is builtins.min or fn is builtins.max:
            return self._minmax(fn, args, kwargs)
        if fn is builtins.print:  # as in Triton: device_print
            if kwargs:
                raise self.error("print() in a kernel takes no keyword arguments")
            first = _unwrap(args[0]) if args else ""
            if isinstance(first, str):
                return normalize(tl.device_print(first, *args[1:]))
            return normalize(tl.device_print("", *args))
        if fn is tl.range or fn is tl.static_range:
            raise self.error(f"{fn.__name__} can only be the iterable of a `for` loop")
        if core.is_builtin(fn):
            with generating(self):  # tl.reduce / tl.associative_scan call @jit combines
                return normalize(fn(*args, **kwargs))
        if not callable(fn):
            raise self.error(f"{_describe(fn)} is not callable")
        # Any other Python callable (a helper such as triton.cdiv, float, a
        # tensor's method): constexprs are passed as their Python values.
        try:
            with generating(self):  # a tensor method such as x.reduce(0, combine)
                result = fn(*[_unwrap_deep(a) for a in args],
                            **{k: _unwrap_deep(v) for k, v in kwargs.items()})
        except (CompilationError, self.C.UserError, self.C.InternalError):
            raise
        except Exception as e:
            if _is_tritium_code(fn):
                raise
            # The user's own Python code failed (a NameError in a plain helper
            # function, say): their mistake, at the call, not an internal error.
            name = getattr(fn, "__qualname__", None) or _describe(fn)
            raise self.error(f"{name}() raised {type(e).__name__} at compile time: {e}") from e
        return normalize(result)

    def _minmax(self, fn, args, kwargs):
        if kwargs:
            raise self.error(f"{fn.__name__}() with keyword arguments is not supported")
        if len(args) == 1 and isinstance(_unwrap(args[0]), (tuple, list)):
            args = list(_unwrap(args[0]))
        if not args:
            raise self.error(f"{fn.__name__}() expects at least one argument")
        if not any(_is_tensor(a) for a in args):
            return normalize(fn(*[_unwrap(a) for a in args]))
        combine = tl.minimum if fn is builtins.min else tl.maximum
        result = args[0]
        for a in args[1:]:
            result = combine(result, a)
        return result


def _is_tritium_code(fn):
    """Whether a callable is tritium's own (a tensor's method, a tl helper): its failures are
    ours to report, where the user's plain Python helpers' are theirs."""
    owner = getattr(fn, "__self__", None)
    module = getattr(fn, "__module__", None) or getattr(type(owner), "__module__", None) or ""
    return module == "tritium" or module.startswith("tritium.")


def _sequence_items(v):
    """A list or tuple as a list of its Python values, nested ones alike (for
    comparisons that ignore which kind of brackets built them)."""
    v = _unwrap(v)
    if isinstance(v, (tuple, list)):
        return [_sequence_items(e) for e in v]
    return v


def _is_ast_index(node):
    """Python 3.8's ast.Index wrapper (gone in 3.9+)."""
    return type(node).__name__ == "Index"


def _describe(v):
    if _is_tensor(v):
        return str(v.handle.type)
    u = _unwrap(v)
    if isinstance(u, (bool, int, float)):
        return f"the constant {u!r}"
    if u is None:
        return "None"
    if inspect.ismodule(u):
        return f"module {u.__name__!r}"
    return f"{type(u).__name__} {u!r}"


# ---------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------


def _type_string(t):
    """A tl type as Triton spells it in a signature: "i32", "u64", "fp32", "*fp16" (ints by
    their IR names, floats by their dtype names)."""
    if isinstance(t, tl.pointer_type):
        return "*" + _type_string(t.element_ty)
    return t.ir_name if t.is_int() else t.name


def _repr_name(jit_fn, params):
    """The kernel's name from @jit(repr=fn), as Triton calls it: fn(specialization) with
    .constants (parameter -> value: constexprs and ints specialised to 1) and .signature
    (parameter -> type string, "constexpr" for those)."""
    constants, signature = {}, {}
    for pname, how in params:
        if how[0] == "const":
            constants[pname] = how[1]
            signature[pname] = "constexpr"
        elif how[0] == "arg":
            signature[pname] = _type_string(how[1])
    proxy = namedtuple("SpecializationProxy", ["constants", "signature"])(constants, signature)
    name = jit_fn._repr(proxy)
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_$][A-Za-z0-9_$]*", name):
        code = jit_fn.fn.__code__
        raise CompilationError(f"@jit(repr=...) of {jit_fn.__name__!r} returned {name!r}, not a "
                               "kernel name (letters, digits, '_' and '$', not starting with a "
                               "digit)", code.co_filename, code.co_firstlineno, 1,
                               function=jit_fn.__name__)
    return name


def build_kernel(jit_fn, params, name=None):
    """Builds the tile IR module of one specialisation of a kernel.

    params: per Python parameter of the kernel, in order, (name, ("arg", tl
    type, divisible_by_16)) or (name, ("const", value)). Returns the module."""
    C = load_C()
    module = C.Module()
    builder = C.Builder(module)
    ctx = ModuleContext(C, module, builder)
    if name is None and getattr(jit_fn, "_repr", None) is not None:
        name = _repr_name(jit_fn, params)
    kernel_name = ctx.unique_name(name or jit_fn.__name__)
    with core._building(builder):
        gen = CodeGenerator(ctx, jit_fn)
        gen.build_function(kernel_name, params, is_kernel=True)
    return module, kernel_name
