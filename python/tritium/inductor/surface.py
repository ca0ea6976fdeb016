"""The `triton` package Inductor imports, built from tritium: one module
object per name Inductor imports (`triton`, `triton.language`,
`triton.compiler.compiler`, `triton.runtime.jit`, ...), each a thin view of
tritium's own modules plus the pieces of this package.

`build()` returns {module name: module}; `tritium.inductor.install()` puts
them in sys.modules. Reading a name the surface lacks raises AttributeError
(so Inductor's `hasattr` probes and `try: from triton... import X` fallbacks
keep working) whose message says that tritium does not implement it.
"""

import hashlib
import importlib.machinery
import os
import types

from .. import autotuner as _autotuner
from .. import language as _tl
from .. import testing as _testing
from ..errors import CompilationError
from ..language import core as _core
from . import driver as _driver
from . import jit as _jit
from . import kernels as _kernels

TRITON_VERSION = "3.5.0"  # the Triton whose surface this imitates (Inductor reads it)


class _Surface(types.ModuleType):
    """A module of the surface: attributes set on it, then (optionally) the
    ones of a tritium module it views; anything else is a clear
    AttributeError."""

    def __init__(self, name, doc, base=None):
        super().__init__(name, doc)
        self.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=True)
        self.__path__ = []
        self.__dict__["_tritium_base"] = base

    def __getattr__(self, attr):
        base = self.__dict__.get("_tritium_base")
        if base is not None and not attr.startswith("__"):
            try:
                return getattr(base, attr)
            except AttributeError:
                pass
        raise AttributeError(f"{self.__name__}.{attr} is not implemented by tritium (the "
                             "`triton` module here is tritium's compatibility surface for "
                             "torch.compile, installed by tritium.inductor.install())")


class _Libdevice(_Surface):
    """`triton.language.extra.libdevice`: tritium's own libdevice module where
    this build has one, else the functions of tl.math under the same names;
    any other name is an AttributeError naming it."""

    def __getattr__(self, attr):
        if not attr.startswith("__"):
            for owner in (_own_libdevice(), _tl.math):
                if owner is not None and hasattr(owner, attr):
                    return getattr(owner, attr)
        raise AttributeError(f"libdevice.{attr} is not implemented by tritium's language yet "
                             "(triton.language.extra.libdevice on the torch.compile surface)")


def _own_libdevice():
    """tritium.language.extra.libdevice when this build of tritium has it."""
    try:
        from ..language.extra import libdevice  # noqa: PLC0415
    except ImportError:
        return None
    return libdevice


class OutOfResources(Exception):
    """Triton's `triton.runtime.autotuner.OutOfResources` (never raised by
    the CPU executor; Inductor catches it while compiling configs)."""

    def __init__(self, required=0, limit=0, name="resource"):
        self.required, self.limit, self.name = required, limit, name
        super().__init__(f"out of resource: {name}, required: {required}, limit: {limit}")


class PTXASError(Exception):
    """Triton's `triton.runtime.autotuner.PTXASError`."""


def _log2(i):
    """`triton.language.standard._log2` for a constexpr power of two (Inductor
    calls it on block sizes inside kernels): its integer log2."""
    n = _core._unwrap(i)
    if not isinstance(n, int) or n <= 0:
        raise ValueError(f"_log2 expects a positive int constexpr, got {n!r}")
    return _core.constexpr(n.bit_length() - 1)


def cdiv(x, y):
    """`triton.cdiv` on the host: (x + y - 1) // y."""
    return (x + y - 1) // y


def next_power_of_2(n):
    """`triton.next_power_of_2` on the host: the smallest power of two >= n."""
    n = int(n)
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def triton_key():
    """What Inductor's caches key on for "the Triton in use": the sizes and
    times of tritium's files (a rebuilt or edited tritium misses)."""
    h = hashlib.sha256(b"tritium")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for f in sorted(filenames):
            if f.endswith((".py", ".so")):
                st = os.stat(os.path.join(dirpath, f))
                h.update(f"{f}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()


def _base32(key):
    import base64  # noqa: PLC0415

    return base64.b32encode(bytes.fromhex(key)).decode().rstrip("=")


def build():
    """{module name: module} of the surface."""
    mods = {}

    def module(name, doc, base=None, **attrs):
        m = mods.get(name)
        if m is None:
            m = mods[name] = _Surface(name, doc, base)
        for k, v in attrs.items():
            setattr(m, k, v)
        parent, _, child = name.rpartition(".")
        if parent:
            setattr(mods[parent], child, m)
        return m

    module("triton", "tritium's torch.compile surface for `import triton`", None,
           __version__=TRITON_VERSION, jit=_jit.jit, JITFunction=_jit.JITFunction,
           compile=_kernels.compile, Config=_autotuner.Config, autotune=_autotuner.autotune,
           heuristics=_autotuner.heuristics, CompilationError=CompilationError,
           OutOfResources=OutOfResources, cdiv=cdiv,
           next_power_of_2=next_power_of_2, knobs=_driver._make_knobs(),
           __tritium_surface__=True)
    mods["triton"].knobs.__name__ = "triton.knobs"
    sys_knobs = mods["triton"].knobs

    lang = module("triton.language", "triton.language: tritium.language", _tl)
    module("triton.language.core", "triton.language.core", _core)
    module("triton.language.math", "triton.language.math", _tl.math)
    module("triton.language.standard", "triton.language.standard", _tl.standard,
           _log2=_log2)
    module("triton.language.extra", "triton.language.extra")
    mods["triton.language.extra.libdevice"] = lib = _Libdevice(
        "triton.language.extra.libdevice", "libdevice names on tritium's language")
    mods["triton.language.extra"].libdevice = lib
    lang.extra = mods["triton.language.extra"]

    module("triton.compiler", "triton.compiler", None, CompiledKernel=_kernels.CompiledKernel,
           ASTSource=_kernels.ASTSource, compile=_kernels.compile,
           CompilationError=CompilationError)
    module("triton.compiler.compiler", "triton.compiler.compiler", None,
           ASTSource=_kernels.ASTSource, CompiledKernel=_kernels.CompiledKernel,
           compile=_kernels.compile, make_backend=_driver.make_backend,
           triton_key=triton_key)
    module("triton.compiler.errors", "triton.compiler.errors", None,
           CompilationError=CompilationError)
    module("triton.backends", "triton.backends", None, backends=_driver.backends)
    module("triton.backends.compiler", "triton.backends.compiler", None,
           GPUTarget=_kernels.GPUTarget, BaseBackend=_driver.CPUBackend)
    module("triton.runtime", "triton.runtime", None, driver=_driver.driver,
           JITFunction=_jit.JITFunction, KernelInterface=_autotuner.KernelInterface,
           Autotuner=_autotuner.Autotuner, Heuristics=_autotuner.Heuristics,
           Config=_autotuner.Config, OutOfResources=OutOfResources)
    module("triton.runtime.jit", "triton.runtime.jit", None, JITFunction=_jit.JITFunction,
           KernelInterface=_autotuner.KernelInterface, jit=_jit.jit)
    module("triton.runtime.autotuner", "triton.runtime.autotuner", None,
           Autotuner=_autotuner.Autotuner, Heuristics=_autotuner.Heuristics,
           Config=_autotuner.Config, autotune=_autotuner.autotune,
           heuristics=_autotuner.heuristics, OutOfResources=OutOfResources,
           PTXASError=PTXASError)
    module("triton.runtime.driver", "triton.runtime.driver", None, driver=_driver.driver)
    # As in Triton, `triton.runtime.driver` is the DriverConfig object, which
    # shadows the submodule of the same name.
    mods["triton.runtime"].driver = _driver.driver
    module("triton.runtime.cache", "triton.runtime.cache", None, triton_key=triton_key,
           _base32=_base32, knobs=sys_knobs)
    module("triton.runtime.errors", "triton.runtime.errors", None, OutOfResources=OutOfResources,
           PTXASError=PTXASError)
    module("triton.testing", "triton.testing: tritium.testing", _testing)
    mods["triton.knobs"] = sys_knobs
    return mods
