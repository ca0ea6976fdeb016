"""`triton.jit` and `triton.runtime.jit.JITFunction` as Inductor uses them:
tritium's JITFunction with the attributes Triton's has and Inductor reads
(`src`, `arg_names`, `constexprs`, `params[i].is_constexpr`, `cache_key`,
`repr`, `used_global_vals`, `__globals__`, `_hash_lock`)."""

import hashlib
import threading

from ..compiler import codegen
from ..errors import CompilationError
from ..jit import JITFunction as _TritiumJITFunction


class JITFunction(_TritiumJITFunction):
    """A @triton.jit function on the Inductor surface: a tritium @jit function
    (compiled by tritium's code generator, callable from other kernels) with
    Triton's extra attributes. Inductor drops and restores `fn`,
    `__globals__`, `used_global_vals`, `repr` and `_hash_lock` around
    pickling (CachingAutotuner.prepare_for_pickle)."""

    def __init__(self, fn, version=None, do_not_specialize=None,
                 do_not_specialize_on_alignment=None, debug=None, noinline=None, repr=None,
                 launch_metadata=None):
        super().__init__(fn, version=version, do_not_specialize=do_not_specialize,
                         do_not_specialize_on_alignment=do_not_specialize_on_alignment,
                         debug=debug, noinline=noinline, repr=repr,
                         launch_metadata=launch_metadata)
        for p in self.params:
            p.num = p.index  # Triton's name for a parameter's position
        self.__globals__ = fn.__globals__
        self.used_global_vals = {}
        self.repr = repr if repr is not None else (lambda _: fn.__name__)
        self.launch_metadata = launch_metadata
        self._hash_lock = threading.RLock()
        # The source is read (and tokenized) once, here: `src` (Inductor reads it) and the code
        # generator's parse() both take it from these lines.
        try:
            self._source_read = codegen.read_source(fn)
        except CompilationError:
            self._source_read = None
        self._src_text = "".join(self._source_read[1]) if self._source_read else self.src
        self.hash = None

    def __getstate__(self):
        # Inductor's compile workers pickle the kernel back to the parent
        # after CachingAutotuner.prepare_for_pickle has set `fn` and
        # `__globals__` to None; functools.update_wrapper's __wrapped__ (the
        # function again), the compiled specialisations and the launcher
        # capsule do not pickle either, and the parent rebuilds them.
        state = dict(self.__dict__, cache={}, _fast=None, _source=None)
        if state.get("fn") is None:
            state.pop("__wrapped__", None)
        return state

    def _read_source(self):
        return self.__dict__.get("_source_read")

    @property
    def src(self):
        # Inductor's kernels live in generated files that stay on disk; the
        # text is also kept, so that it survives `fn = None` (pickling).
        text = getattr(self, "_src_text", None)
        if text is not None:
            return text
        return super().src

    def _unsafe_update_src(self, new_src):
        super()._unsafe_update_src(new_src)
        self._src_text = new_src
        self.hash = None  # cache_key follows the text; the compile cache keys on it too

    @property
    def cache_key(self):
        """A hash of the kernel's source (Triton's includes its callees; the
        compile cache of this surface keys on the function object)."""
        if self.hash is None:
            self.hash = hashlib.sha256(self.src.encode()).hexdigest()
        return self.hash


def jit(fn=None, *, version=None, repr=None, launch_metadata=None, do_not_specialize=None,
        do_not_specialize_on_alignment=None, debug=None, noinline=None):
    """`@triton.jit` / `@triton.jit(...)` on the Inductor surface."""

    def decorator(f):
        return JITFunction(f, version=version, do_not_specialize=do_not_specialize,
                           do_not_specialize_on_alignment=do_not_specialize_on_alignment,
                           debug=debug, noinline=noinline, repr=repr,
                           launch_metadata=launch_metadata)

    if fn is not None:
        return decorator(fn)
    return decorator
