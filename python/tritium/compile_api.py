"""`tritium.compile(fn, signature=..., constexprs=..., target=..., num_warps=...)`:
ahead-of-time compilation of one specialisation, as Triton's
`triton.compile(ASTSource(fn, signature, constexprs))` does. Works on a
machine without a GPU: the target is a value.

    k = tritium.compile(add_kernel, signature={"x_ptr": "*fp32", "y_ptr": "*fp32",
                                               "out_ptr": "*fp32", "n": "i32"},
                        constexprs={"BLOCK": 1024}, target="sm_90a", num_warps=4)
    k.asm["ptx"]; k.asm["cubin"]      # (cubin when ptxas is installed)
    k[(grid,)](x, y, out, n)          # GPU tensors: launched; CPU tensors: the CPU executor

Type strings are Triton's: "*fp32", "*fp16", "*bf16", "*i8".."*i64", "*u8".., "i1"/"u1",
"i8".."i64", "u8".."u64", "fp16", "bf16", "fp32", "fp64", and "constexpr" (value in
`constexprs`). Pointer and integer parameters named in `divisible_by_16` (or given Triton's
`attrs={(i,): [["tt.divisibility", 16]]}`) are assumed 16-aligned / divisible by 16.
"""

import inspect

from . import language as tl
from .compiler import compiler as _compiler
from .runtime import cuda as _cuda

_SCALARS = {
    "i1": tl.int1, "u1": tl.int1, "i8": tl.int8, "i16": tl.int16, "i32": tl.int32,
    "i64": tl.int64, "u8": tl.uint8, "u16": tl.uint16, "u32": tl.uint32, "u64": tl.uint64,
    "fp8e4nv": tl.float8e4nv, "fp8e5": tl.float8e5, "fp8e4b15": tl.float8e4b15,
    "fp8e4b8": tl.float8e4b8, "fp8e5b16": tl.float8e5b16, "fp16": tl.float16, "bf16": tl.bfloat16,
    "fp32": tl.float32, "f32": tl.float32, "fp64": tl.float64, "f64": tl.float64,
    "int1": tl.int1, "int8": tl.int8, "int16": tl.int16, "int32": tl.int32, "int64": tl.int64,
    "uint8": tl.uint8, "uint16": tl.uint16, "uint32": tl.uint32, "uint64": tl.uint64,
}


def parse_type(s, what="signature"):
    """A Triton type string -> tl dtype (pointer_type for "*T")."""
    if isinstance(s, tl.dtype):
        return s
    s = str(s).strip()
    if s.startswith("*k"):  # Triton's "*k" (const pointer) spelling
        s = "*" + s[2:]
    if s.startswith("*"):
        return tl.pointer_type(parse_type(s[1:], what))
    d = _SCALARS.get(s)
    if d is None:
        raise ValueError(f"{what}: unknown type {s!r} (expected e.g. '*fp32', 'i32', 'fp16', "
                         "'constexpr')")
    return d


def _lookup(mapping, name, index):
    """A value keyed by name, by index, or by Triton's (index,) tuple."""
    if not mapping:
        return False, None
    for k in (name, index, (index,)):
        if k in mapping:
            return True, mapping[k]
    return False, None


def _divisible(attrs, divisible_by_16, name, index):
    if divisible_by_16 and (name in divisible_by_16 or index in divisible_by_16):
        return True
    found, spec = _lookup(attrs, name, index)
    if found:
        for item in spec:
            if tuple(item[:1]) == ("tt.divisibility",) and int(item[1]) % 16 == 0:
                return True
    return False


def build_specialization(fn, signature, constexprs=None, attrs=None, divisible_by_16=None):
    """(params, key) for the code generator, as JITFunction.specialize makes them."""
    signature = dict(signature or {})
    constexprs = dict(constexprs or {})
    params, key = [], []
    used = set()
    for i, p in enumerate(fn.params):
        name = p.name
        has_c, cval = _lookup(constexprs, name, i)
        has_s, sval = _lookup(signature, name, i)
        if has_s:
            used.add(name if name in signature else (i if i in signature else (i,)))
        if has_c or (has_s and str(sval) == "constexpr") or (p.is_constexpr and not has_s):
            if not has_c:
                if p.default is not inspect.Parameter.empty:
                    cval = p.default
                else:
                    raise TypeError(f"{fn.__name__}: constexpr parameter {name!r} needs a value "
                                    "in constexprs")
            cval = tl.core._unwrap(cval)
            params.append((name, ("const", cval)))
            key.append(("c", (type(cval).__name__, cval)))
            continue
        if not has_s:
            raise TypeError(f"{fn.__name__}: parameter {name!r} is missing from the signature")
        t = parse_type(sval, f"{fn.__name__}: signature of {name!r}")
        div = _divisible(attrs, divisible_by_16, name, i)
        if isinstance(t, tl.pointer_type):
            params.append((name, ("arg", t, div)))
            key.append(("*" + t.element_ty.name, div))
        elif t == tl.int1:
            params.append((name, ("arg", t, False)))
            key.append(("i1",))
        elif t.is_floating():
            params.append((name, ("arg", t, False)))
            key.append((t.name,))
        else:
            params.append((name, ("arg", t, div)))
            key.append((t.name, div))
    extra = [k for k in signature if k not in used]
    if extra:
        raise TypeError(f"{fn.__name__}: the signature names {extra!r}, which are not parameters")
    return params, tuple(key)


def compile(fn, signature=None, constexprs=None, target=None, num_warps=4, num_stages=3,
            attrs=None, divisible_by_16=None, name=None, use_cache=True,
            debug=False):  # noqa: A001
    """Compiles one specialisation of the @jit function `fn` for `target`
    ("sm_90a", "sm_80", ...; default: the GPU's, else sm_90a). Returns a
    GPUKernel: .asm["tir"], ["gir"], ["ptx"] (and ["cubin"] with ptxas),
    .metadata, and kernel[grid](*runtime_args) to launch. debug=True: the
    bounds-checked build of TRITIUM_DEBUG=1 (device asserts checked; see
    docs/gpu-debug.md)."""
    if not getattr(fn, "__tritium_jit__", False):
        raise TypeError(f"tritium.compile expects a @tritium.jit function, got {fn!r}")
    if target is None:
        try:
            target = _cuda.default_target(0) if _cuda.is_available() else "sm_90a"
        except Exception:  # no driver, no device: the default target
            target = "sm_90a"
    params, key = build_specialization(fn, signature, constexprs, attrs, divisible_by_16)
    return _compiler.compile_gpu(fn, params, key, num_warps=num_warps, num_stages=num_stages,
                                 target=str(target), name=name, use_cache=use_cache,
                                 bounds_check=bool(debug))
