"""The runtime side of tritium: turning Python arguments into kernel
arguments and launching compiled kernels (the CPU executor for now)."""

from .launcher import GPU_LAUNCH_MESSAGE, PointerArg, int_dtype, pointer_arg  # noqa: F401
