"""tritium: a compiler for GPU kernels written in Python, source-compatible
with Triton (`import tritium as triton; import tritium.language as tl`)."""

__version__ = "0.1.0"

from . import language  # noqa: E402
from .errors import CompilationError, ExecutionError, LaunchOptionError, TritonError  # noqa: E402
from .jit import JITFunction, jit  # noqa: E402
from . import testing  # noqa: E402,F401
from .compiler import CompiledKernel  # noqa: E402,F401


def cdiv(x, y):
    """Ceiling division: (x + y - 1) // y."""
    return (x + y - 1) // y


def next_power_of_2(n):
    """The smallest power of two >= n (1 for n <= 1)."""
    n = int(n)
    if n <= 1:
        return 1
    return 1 << (n - 1).bit_length()


_allocator = None


def set_allocator(allocator):
    """Triton's `triton.set_allocator`: the function that gives on-device
    tensor descriptors (tl.make_tensor_descriptor) their global scratch. It is
    recorded and not called: tritium expands descriptors into plain masked
    loads and stores, which need no scratch."""
    global _allocator
    _allocator = allocator


from .compile_api import compile  # noqa: E402,A001
from .autotuner import Config, autotune, heuristics  # noqa: E402
from .torch_op import torch_op  # noqa: E402
from .runtime.launcher import executor_memory  # noqa: E402
from .runtime.reinterpret import TensorWrapper, reinterpret  # noqa: E402

# TRITIUM_INDUCTOR=1: put tritium under torch.compile (tritium.inductor.install),
# for programs that cannot call install() before torch._inductor is imported.
import os as _os  # noqa: E402

if _os.environ.get("TRITIUM_INDUCTOR", "") not in ("", "0"):
    from . import inductor as _inductor  # noqa: E402

    _inductor.install()

__all__ = ["CompilationError", "Config", "ExecutionError", "JITFunction", "LaunchOptionError", "TritonError",
           "autotune", "cdiv", "compile", "executor_memory", "heuristics", "jit", "language",
           "next_power_of_2", "reinterpret", "set_allocator", "testing", "torch_op",
           "TensorWrapper"]
