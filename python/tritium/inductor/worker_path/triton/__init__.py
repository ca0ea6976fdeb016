"""`import triton` in a process started by one that called
tritium.inductor.install(): tritium's surface, as in the parent.

Inductor compiles kernels in worker processes when compile_threads > 1
(TORCHINDUCTOR_COMPILE_THREADS). They start with the parent's sys.path as
their PYTHONPATH, and install() puts this directory first on it, so the
workers' `import triton` (from torch._inductor.runtime.triton_compat, or a
generated kernel's module) finds this file instead of the real package.
It hands the import over to the surface: it leaves sys.modules, installs,
and the import statement then returns sys.modules["triton"], the surface.
"""

import sys

del sys.modules[__name__]

from tritium.inductor import _install_for_import  # noqa: E402

_install_for_import()
