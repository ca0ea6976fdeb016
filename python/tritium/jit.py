"""`@tritium.jit`: a kernel compiled on first launch for each specialisation
of its arguments, as Triton does.

The specialisation key of a launch has one entry per parameter:
  - a tensor: the pointee dtype, and whether its address is 16-byte aligned
    (then the pointer argument gets `tt.divisibility = 16`);
  - an int: i32 if in [-2^31, 2^31), i64 if it fits int64, u64 beyond; an
    int equal to 1 becomes the constant 1; an int divisible by 16 gets
    `tt.divisibility = 16`; `do_not_specialize` turns both off;
  - a float: fp32; a bool: i1; None: the constant None;
  - a tl.constexpr parameter: its value.
Compiled specialisations are kept in `JITFunction.cache`, keyed by it.
"""

import copy
import functools
import inspect
import itertools
import linecache
import sys
import weakref

from . import language as tl
from .compiler import codegen
from .compiler import compiler as _compiler
from .compiler.pipeline import compile_tile
from .errors import CompilationError, LaunchOptionError, load_C
from .language.block import DescriptorParam
from .language.core import const, constexpr
from .runtime import cuda as _cuda
from .runtime import debug as _debug
from .runtime import launcher
from .runtime.launcher import (GPU_LAUNCH_MESSAGE, check_devices, convert_runtime_args,
                               normalize_grid, python_scalar)

# Launch options Triton accepts; on the CPU they have no effect.
LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion",
                  "debug", "stream", "device", "launch_cooperative_grid", "waves_per_eu",
                  "matrix_instr_nonkdim", "kpack", "enable_warp_specialization",
                  "num_buffers_warp_spec", "num_consumer_groups", "reg_dec_producer",
                  "reg_inc_consumer", "sanitize_overflow", "launch_pdl")


def _is_constexpr_annotation(ann):
    if ann is constexpr:
        return True
    if isinstance(ann, str):
        return ann.split(".")[-1] == "constexpr"
    return False


def _is_const_annotation(ann):
    """`p: tl.const` (or the string "tl.const" under postponed annotations)."""
    if ann is const:
        return True
    return isinstance(ann, str) and ann.split(".")[-1] == "const"


class KernelParam:
    def __init__(self, index, param, do_not_specialize, do_not_specialize_on_alignment):
        self.index = index
        self.name = param.name
        self.is_constexpr = _is_constexpr_annotation(param.annotation)
        self.is_const = _is_const_annotation(param.annotation)
        self.do_not_specialize = do_not_specialize
        self.do_not_specialize_on_alignment = do_not_specialize_on_alignment
        self.default = param.default
        self.kind = param.kind
        self.what = None  # set by JITFunction: "argument 'x' of kernel"


def _names(items, arg_names, what):
    out = set()
    for item in items or ():
        if isinstance(item, int):
            if not 0 <= item < len(arg_names):
                raise ValueError(f"{what}: no parameter number {item}")
            out.add(arg_names[item])
        elif item in arg_names:
            out.add(item)
        else:
            raise ValueError(f"{what}: no parameter named {item!r}")
    return out


_updated_sources = itertools.count(1)  # names _unsafe_update_src's texts in linecache


class JITFunction:
    """A @jit function: launch it with `kernel[grid](*args, **kwargs)`, or
    call it from another @jit function."""

    __tritium_jit__ = True

    def __init__(self, fn, version=None, do_not_specialize=None,
                 do_not_specialize_on_alignment=None, debug=None, noinline=None, repr=None,
                 launch_metadata=None):
        if not inspect.isfunction(fn):
            raise TypeError(f"@jit expects a Python function, got {fn!r}")
        self.fn = fn
        self.module = fn.__module__
        self.version = version
        self.debug = debug
        self.noinline = bool(noinline)
        if repr is not None and not callable(repr):
            raise TypeError(f"@jit(repr=...) of {fn.__name__!r} must be callable, got {repr!r}")
        self._repr = repr  # specialization -> kernel name (codegen._repr_name)
        self.signature = inspect.signature(fn)
        self.arg_names = list(self.signature.parameters)
        dns = _names(do_not_specialize, self.arg_names, "do_not_specialize")
        dnsa = _names(do_not_specialize_on_alignment, self.arg_names,
                      "do_not_specialize_on_alignment")
        self.params = [KernelParam(i, p, p.name in dns, p.name in dnsa or p.name in dns)
                       for i, p in enumerate(self.signature.parameters.values())]
        for p in self.signature.parameters.values():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise TypeError(f"@jit function {fn.__name__!r}: *args and **kwargs "
                                "parameters are not supported")
        for p in self.params:
            p.what = f"argument {p.name!r} of {fn.__name__}"
        self._simple_params = all(p.kind == inspect.Parameter.POSITIONAL_OR_KEYWORD
                                  for p in self.params)
        self.constexpr_names = {p.name for p in self.params if p.is_constexpr}
        self.do_not_specialize = sorted(dns)
        self.cache = {}
        self._source = None
        self._launch_options = [o for o in LAUNCH_OPTIONS if o not in self.arg_names]
        self._fast = None  # _C.fast_launcher_new's capsule, made on the first launch
        functools.update_wrapper(self, fn)

    def __repr__(self):
        return f"JITFunction({self.module}:{self.fn.__qualname__})"

    @property
    def constexprs(self):
        """Indices of the tl.constexpr parameters (as in Triton)."""
        return [p.index for p in self.params if p.is_constexpr]

    @property
    def src(self):
        override = self.__dict__.get("_src_override")
        return override[1] if override is not None else inspect.getsource(self.fn)

    def _unsafe_update_src(self, new_src):
        """Triton's hook for compiling other text in place of the function's own source (its
        tests' patch_kernel: `k = triton.JITFunction(template.fn)`, then
        `k._unsafe_update_src(k.src.replace(...))`). The text must define a function of the
        same signature; it runs in the function's globals. Everything compiled from the old
        text is dropped, and the disk cache keys on the new text. Errors point into the new
        text, which linecache holds under a name of its own."""
        lines = new_src.splitlines(keepends=True) or [""]
        # Not a file: linecache keeps the text (no mtime, so never checked against a disk).
        name = f"<updated source of {self.fn.__qualname__}, #{next(_updated_sources)}>"
        linecache.cache[name] = (len(new_src), None, lines, name)
        self._src_override = ((name, lines, 1), new_src)
        self._source = None
        self.cache = {}
        self.__dict__.pop("gpu_cache", None)
        self._fast = None  # its entries name kernels of the old text

    def parse(self):
        """The function's AST and source location (codegen.FunctionSource)."""
        if self._source is None:
            override = self.__dict__.get("_src_override")
            read = override[0] if override is not None else self._read_source()
            self._source = codegen.parse_function(self.fn, read)
        return self._source

    def _read_source(self):
        """codegen.read_source(self.fn) where a subclass has kept it; else None (parse()
        reads it)."""
        return None

    def __call__(self, *args, **kwargs):
        raise RuntimeError(
            f"@jit function {self.fn.__name__!r} cannot be called directly: launch it "
            f"with {self.fn.__name__}[grid](...) or call it from another @jit function")

    def __getitem__(self, grid):
        # The launch goes straight to C++ (lib/bindings/fast_launch.cpp): a
        # specialisation already compiled and launched once is launched there;
        # anything else comes back to self.run.
        fast = self._fast
        if fast is None:
            fast = self._make_fast_launcher()
        if fast is False:  # more parameters than the C++ path takes
            return lambda *args, **kwargs: self.run(*args, grid=grid, warmup=False, **kwargs)
        launch = _partial(_FAST_LAUNCH or _fast_launch(), fast, grid)
        # The launcher names this function weakly (no cycle through the capsule); the launch
        # keeps it alive, for `jit(f)[grid](...)` on a function nothing else holds.
        launch.kernel = self
        return launch

    def _make_fast_launcher(self):
        params = [(p.name, p.is_constexpr, p.do_not_specialize, p.do_not_specialize_on_alignment,
                   p.default is not inspect.Parameter.empty,
                   None if p.default is inspect.Parameter.empty else p.default)
                  for p in self.params]
        try:
            self._fast = load_C().fast_launcher_new(weakref.ref(self), params,
                                                    self._launch_options, constexpr,
                                                    TensorDescriptor)
        except ValueError:  # over 64 parameters: every launch takes the Python path
            self._fast = False
        return self._fast

    def _register_fast(self, args, kwargs, options, spec, kernel):
        """Lets the C++ fast path launch `kernel` for calls like this one."""
        if not self._fast or kernel.metadata.get("bounds_check"):
            return
        if any(entry[1] == "group" and type(entry[2]) is not DescriptorParam for entry in spec):
            return  # a tuple argument: the Python path
        if any(entry[1] == "ptr" and len(entry) > 4 for entry in spec):
            return  # a tensor of 2^31+ elements: 64-bit offsets, the Python path
        hooks = _fast_torch_hooks()
        if hooks is None:
            return
        kw = dict(kwargs)
        kw.update(options)
        load_C().fast_register(self._fast, tuple(args), kw, kernel, kernel.gpu_kernel(),
                               _runtime_parts(self.params, spec), *hooks)

    def warmup(self, *args, grid=None, **kwargs):
        """Compiles the specialisation these arguments select, without running."""
        return self.run(*args, grid=grid, warmup=True, **kwargs)

    # -- specialisation --------------------------------------------------------
    def _bind(self, args, kwargs):
        """The values of all parameters, in order (defaults applied)."""
        if self._simple_params and len(args) <= len(self.params):
            values = list(args)
            missing = False
            used = 0
            for p in self.params[len(args):]:
                if p.name in kwargs:
                    values.append(kwargs[p.name])
                    used += 1
                elif p.default is not inspect.Parameter.empty:
                    values.append(p.default)
                else:
                    missing = True
                    break
            if not missing and used == len(kwargs):
                return values
        # Slow path, also for the exact error message.
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.fn.__name__}(): {e}") from None
        bound.apply_defaults()
        return list(bound.arguments.values())

    def specialize(self, values):
        """(key, params, runtime values) of a launch with these parameter
        values (see the module doc and codegen.build_kernel for params)."""
        key, spec, runtime = self._key(values)
        return key, _params(spec), runtime

    def _key(self, values):
        key, spec, runtime = [], [], []
        for p, v in zip(self.params, values):
            self._key_one(p, v, key, spec, runtime)
        return tuple(key), spec, runtime

    def _key_one(self, p, v, key, spec, runtime):
        """Appends the key, spec and runtime values of parameter p's value v."""
        explicit_constexpr = isinstance(v, constexpr)
        if explicit_constexpr:
            v = v.value
        if p.is_constexpr or explicit_constexpr:
            if not isinstance(v, _STATIC_TYPES) and launcher.pointer_arg(v, p.what):
                raise TypeError(f"{p.what} is tl.constexpr, but a tensor was passed")
            key.append(("c", _key_of(v, p.what)))
            spec.append((p.name, "const", v))
            return
        if v is None:
            key.append(("c", None))
            spec.append((p.name, "const", None))
            return
        if type(v) is tuple or (isinstance(v, tuple) and not hasattr(v, "_fields")):
            # A tuple subclass without fields (torch.Size) is passed as its tuple.
            _key_tuple(self, p, tuple(v), key, spec, runtime)
            return
        if isinstance(v, tuple):  # a NamedTuple: its fields, rebuilt as it in the kernel
            _key_tuple(self, p, v, key, spec, runtime)
            return
        t = type(v)
        if t is not bool and t is not int and t is not float:
            v = python_scalar(v)
            t = type(v)
        if t is bool:
            key.append(("i1",))
            spec.append((p.name, "arg", tl.int1, False))
            runtime.append(v)
        elif t is int or isinstance(v, int):
            if v == 1 and not p.do_not_specialize:
                key.append(("c1",))
                spec.append((p.name, "const", 1))
                return
            try:
                d = launcher.int_dtype(v)
            except launcher.IntArgumentOverflow as e:
                raise launcher.IntArgumentOverflow(f"{p.what}: {e}") from None
            div16 = not p.do_not_specialize and v % 16 == 0
            key.append((d.name, div16))
            spec.append((p.name, "arg", d, div16))
            runtime.append(v)
        elif t is float or isinstance(v, float):
            key.append(("fp32",))
            spec.append((p.name, "arg", tl.float32, False))
            runtime.append(v)
        elif t is TensorDescriptor:  # before pointer_arg, which would only say "not a tensor"
            _key_descriptor(p, v, key, spec, runtime)
        else:
            ptr = launcher.pointer_arg(v, p.what)
            if ptr is None and getattr(v, "__tritium_jit__", False):
                # A @jit function passed as an argument is a compile-time value (as in Triton).
                key.append(("c", _key_of(v, p.what)))
                spec.append((p.name, "const", v))
                return
            if ptr is None:
                raise TypeError(f"{p.what} has unsupported type {type(v).__name__} (expected "
                                "a tensor, an int, a float, a bool or None)")
            aligned = ptr.aligned16 and not p.do_not_specialize_on_alignment
            if launcher.needs_int64_offsets(ptr):
                # A tensor of 2^31+ elements: its offsets are computed in
                # 64 bits (the widen-offsets pass), a specialisation of its own.
                key.append(("*" + ptr.dtype.name, aligned, "i64"))
                spec.append((p.name, "ptr", ptr.dtype, aligned, True))
            else:
                key.append(("*" + ptr.dtype.name, aligned))
                spec.append((p.name, "ptr", ptr.dtype, aligned))
            runtime.append(ptr)

    def run(self, *args, grid=None, warmup=False, **kwargs):
        options = {}
        if kwargs:
            for o in self._launch_options:
                if o in kwargs:
                    options[o] = kwargs.pop(o)
        nw = options.get("num_warps")
        if nw is not None and (type(nw) is not int or not 1 <= nw <= 32 or nw & (nw - 1)):
            raise LaunchOptionError(f"{self.fn.__name__}: num_warps must be a power of 2 from 1 "
                                    f"to 32, got {nw!r}")
        values = self._bind(args, kwargs)
        key, spec, runtime = self._key(values)
        if _uses_device(runtime):
            check_devices(runtime, allow_cuda=True)
            if _gpu_backend():
                bound = inspect.BoundArguments(self.signature,
                                               dict(zip(self.arg_names, values)))
                kernel = _run_gpu(self, bound, key, _params(spec), runtime, grid, options,
                                  warmup)
                self._register_fast(args, kwargs, options, spec, kernel)
                return kernel
            if not warmup:
                raise RuntimeError(GPU_LAUNCH_MESSAGE)
        kernel = self.cache.get(key)
        if kernel is None:
            try:
                kernel = compile_tile(self, _params(spec))
            except CompilationError as e:
                # The frames inside the compiler say nothing about the user's
                # mistake; the error names the kernel's own line.
                raise e.with_traceback(None) from e.__cause__
            self.cache[key] = kernel
        if warmup:
            return kernel
        if grid is None:
            raise TypeError(f"{self.fn.__name__}: no grid given; launch with "
                            f"{self.fn.__name__}[grid](...)")
        if callable(grid):
            meta = {p.name: tl.core._unwrap(v) for p, v in zip(self.params, values)}
            meta.update(options)
            grid = grid(meta)
        g = normalize_grid(grid, None)
        exec_args = convert_runtime_args(kernel, runtime)
        if g[0] > 0 and g[1] > 0 and g[2] > 0:
            kernel.run(g, exec_args)
        return kernel


def _run_gpu(jit_fn, bound, key, params, values, grid, options, warmup):
    """JITFunction.run for a launch whose tensors are on the GPU: compile
    (per specialisation, options and device; memory and disk cached) and
    launch on torch's current stream. Returns the GPUKernel.

    bound: the launch's inspect.BoundArguments (for a callable grid's meta);
    key, params, values: JITFunction's specialisation key, the code
    generator's params and the runtime values (PointerArg for tensors);
    grid: as given to kernel[grid]; options: the launch options
    (num_warps, num_stages, stream, ...)."""
    device, args = _cuda.launch_device(jit_fn, params, values)
    num_warps = options.get("num_warps") or _compiler.DEFAULT_NUM_WARPS
    num_stages = options.get("num_stages") or _compiler.DEFAULT_NUM_STAGES
    try:
        gpu_cache = jit_fn.gpu_cache
    except AttributeError:
        gpu_cache = jit_fn.gpu_cache = {}
    debug = _debug.debug_enabled(jit_fn, options)
    # The target too: $TRITIUM_TARGET may change between launches (and so may
    # $TRITIUM_DISABLE_PASSES).
    target = _cuda.default_target(device)
    ck = (key, num_warps, num_stages, device, target, debug, _compiler.disabled_passes())
    kernel = gpu_cache.get(ck)
    if kernel is None:
        try:
            kernel = _compiler.compile_gpu(jit_fn, params, key, num_warps=num_warps,
                                           num_stages=num_stages, target=target,
                                           bounds_check=debug)
        except CompilationError as e:
            raise e.with_traceback(None) from e.__cause__
        gpu_cache[ck] = kernel
    if warmup:
        return kernel
    if grid is None:
        raise TypeError(f"{jit_fn.__name__}: no grid given; launch with "
                        f"{jit_fn.__name__}[grid](...)")
    if callable(grid):
        meta = {k: tl.core._unwrap(v) for k, v in bound.arguments.items()}
        meta.update(options)
        grid = grid(meta)
    if type(grid) is tuple and 1 <= len(grid) <= 3 and all(type(x) is int and x >= 0
                                                           for x in grid):
        g = grid + (1,) * (3 - len(grid))  # the common case, checked inline
    else:
        g = normalize_grid(grid, None)
    if g[0] == 0 or g[1] == 0 or g[2] == 0:
        return kernel
    stream = options.get("stream")
    if stream is None:
        stream = _cuda.current_stream(device)
    if debug:
        _debug.launch_debug(kernel, g, args, values, stream, device, False)
        return kernel
    # Pointers were checked above (torch says they are CUDA tensors).
    kernel.gpu_kernel().launch(g[0], g[1], g[2], stream, device, args, False)
    return kernel


from .tools.tensor_descriptor import TensorDescriptor  # noqa: E402

_STATIC_TYPES = (int, float, bool, str, type(None), tl.dtype, tuple)


_partial = functools.partial
_FAST_LAUNCH = None


def _fast_launch():
    global _FAST_LAUNCH
    _FAST_LAUNCH = load_C().fast_launch
    return _FAST_LAUNCH


def _fast_torch_hooks():
    """What the fast path takes from torch (None when it is not imported): the tensor type, and
    the function that gives the stream to launch on, torch's current stream, so that a launch
    inside torch.cuda.graph capture is captured (stream 0 would break the capture)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    current = getattr(torch._C, "_cuda_getCurrentRawStream", None) or _cuda.current_stream
    return torch.Tensor, current


def _runtime_parts(params, spec):
    """Where each kernel argument of a specialisation comes from, for the fast path:
    (parameter index, part), part 0 being the parameter's value or a TensorDescriptor's base,
    parts 1.. its shape then its strides (constants included). A descriptor's entries in
    `spec` are its parts, then the "group" entry under the parameter's own name."""
    out = []
    i = part = 0
    for entry in spec:
        if entry[0] == params[i].name:  # the parameter's own entry (or its group): the last
            if entry[1] not in ("const", "group"):
                out.append((i, 0))
            i, part = i + 1, 0
        else:  # a part of a descriptor
            if entry[1] != "const":
                out.append((i, part))
            part += 1
    return out


def _params(spec):
    """codegen.build_kernel's params from the specialisation of _key."""
    out = []
    for entry in spec:
        if entry[1] == "const":
            out.append((entry[0], ("const", entry[2])))
        elif entry[1] == "ptr":
            arg = ("arg", tl.pointer_type(entry[2]), entry[3])
            out.append((entry[0], arg + (True,) if len(entry) > 4 and entry[4] else arg))
        elif entry[1] == "group":
            out.append((entry[0], ("group", entry[2])))
        else:
            out.append((entry[0], ("arg", entry[2], entry[3])))
    return out


def _key_descriptor(p, desc, key, spec, runtime):
    """A TensorDescriptor argument, flattened into its base pointer, shape and
    strides (each specialised as a pointer or int argument of its own, named
    `<param>__base`, `<param>__shape<i>`, `<param>__stride<i>`), then a
    "group" entry that gathers them back into a descriptor in the kernel."""
    ptr = launcher.pointer_arg(desc.base, p.what)
    if ptr is None:
        raise TypeError(f"{p.what}: a TensorDescriptor's base must be a tensor, got "
                        f"{type(desc.base).__name__}")
    aligned = ptr.aligned16 and not p.do_not_specialize_on_alignment
    parts = [f"{p.name}__base"]
    keys = [("*" + ptr.dtype.name, aligned)]
    spec.append((parts[0], "ptr", ptr.dtype, aligned))
    runtime.append(ptr)
    for label, values in (("shape", desc.shape), ("stride", desc.strides)):
        for i, n in enumerate(values):
            name = f"{p.name}__{label}{i}"
            parts.append(name)
            if n == 1 and not p.do_not_specialize:
                keys.append(("c1",))
                spec.append((name, "const", 1))
                continue
            d = launcher.int_dtype(n)
            div16 = not p.do_not_specialize and n % 16 == 0
            keys.append((d.name, div16))
            spec.append((name, "arg", d, div16))
            runtime.append(n)
    key.append(("desc", tuple(keys), tuple(desc.block_shape), desc.padding))
    spec.append((p.name, "group", DescriptorParam(parts, desc.block_shape, desc.padding)))


class TupleParam:
    """A tuple argument: each element is a parameter of its own (`<param>__<i>`, specialised like
    any argument, tuples nested), gathered back into a tuple in the kernel (into its NamedTuple
    type for one)."""

    def __init__(self, parts, named=None):
        self.parts = parts
        self.named = named

    def build(self, values):
        return tuple(values) if self.named is None else self.named(*values)


def _key_tuple(fn, p, value, key, spec, runtime):
    """A tuple's elements; a NamedTuple's fields annotated `tl.constexpr` are constexprs."""
    named = type(value) if hasattr(value, "_fields") else None
    notes = getattr(named, "__annotations__", {}) if named is not None else {}
    parts, keys = [], []
    for i, v in enumerate(value):
        q = copy.copy(p)
        q.name, q.what = f"{p.name}__{i}", f"{p.what}[{i}]"
        if named is not None:
            field = named._fields[i]
            q.what = f"{p.what}.{field}"
            if _is_constexpr_annotation(notes.get(field)):
                q.is_constexpr = True
        fn._key_one(q, v, keys, spec, runtime)
        parts.append(q.name)
    key.append(("tuple", named, tuple(keys)))
    spec.append((p.name, "group", TupleParam(parts, named)))


def _uses_device(values):
    """Whether some tensor argument is not in host memory."""
    for v in values:
        if type(v) is launcher.PointerArg and v.device != "cpu":
            return True
    return False


def _gpu_backend():
    """Whether this build of _C can compile for NVIDIA GPUs."""
    return hasattr(load_C(), "compile_to_ptx")


def _key_of(v, what):
    if isinstance(v, list):
        v = tuple(v)
    try:
        hash(v)
    except TypeError:
        raise TypeError(f"{what} is tl.constexpr, so its value must be hashable; got "
                        f"{type(v).__name__}") from None
    return (type(v).__name__, v)


def jit(fn=None, *, version=None, repr=None, launch_metadata=None, do_not_specialize=None,
        do_not_specialize_on_alignment=None, debug=None, noinline=None):
    """Decorator: `@jit` or `@jit(do_not_specialize=[...], noinline=True, ...)`."""

    def decorator(f):
        return JITFunction(f, version=version, do_not_specialize=do_not_specialize,
                           do_not_specialize_on_alignment=do_not_specialize_on_alignment,
                           debug=debug, noinline=noinline, repr=repr,
                           launch_metadata=launch_metadata)

    if fn is not None:
        return decorator(fn)
    return decorator
