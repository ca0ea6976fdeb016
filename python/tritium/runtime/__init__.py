"""The runtime side of tritium, which knows no compiler: turning Python
arguments into kernel arguments (launcher.py), the disk cache (cache.py),
CUDA devices and GPU kernels (cuda.py) and bounds-checked launches
(debug.py)."""

from .launcher import GPU_LAUNCH_MESSAGE, PointerArg, int_dtype, pointer_arg  # noqa: F401
# Triton's `triton.runtime.driver` (its tutorials ask it for the device): the object, as there.
from .driver import driver  # noqa: F401,E402
