"""torch.compile on tritium: Inductor's generated Triton kernels compiled by
tritium, launched on an NVIDIA GPU through its launcher or run on its CPU
executor.

    import tritium.inductor; tritium.inductor.install()   # before torch._inductor
    import torch
    torch.compile(model)(x)                                # CUDA tensors: the GPU

    torch._inductor.config.cpu_backend = "triton"          # CPU tensors: the executor
    torch.compile(model)(x)

or set TRITIUM_INDUCTOR=1 and `import tritium` first. `install()` makes
`import triton` (and the submodules Inductor imports) resolve to tritium's
compatibility surface (surface.py): Inductor's own code is unchanged. The
surface implements the "cuda" and "cpu" targets; anything it lacks raises an
error that names it.

Inductor compiles kernels in worker processes when compile_threads > 1.
install() keeps TORCHINDUCTOR_COMPILE_THREADS=1 unless the caller chose a
value; with more, the workers (started with the parent's sys.path as their
PYTHONPATH) import tritium's surface too: install() puts worker_path/, whose
`triton` package hands the import to the surface, first on sys.path.
"""

import os
import sys

_installed = False


class InstallError(RuntimeError):
    """install() cannot put tritium under Inductor in this process."""


def install():
    """Makes `import triton` resolve to tritium's surface. Call it before
    `torch._inductor` is imported; calling it again does nothing."""
    if _installed:
        return
    existing = sys.modules.get("triton")
    if existing is not None and not getattr(existing, "__tritium_surface__", False):
        raise InstallError("tritium.inductor.install(): the real `triton` package is already "
                           f"imported ({getattr(existing, '__file__', existing)!r}); call "
                           "install() before anything imports triton")
    compat = sys.modules.get("torch._inductor.runtime.triton_compat")
    if compat is not None and not getattr(getattr(compat, "triton", None),
                                          "__tritium_surface__", False):
        raise InstallError("tritium.inductor.install(): torch._inductor was imported before "
                           "install(), so it has already decided which triton to use; call "
                           "install() (or set TRITIUM_INDUCTOR=1 before `import tritium`) "
                           "first")
    _put_surface()


def _install_for_import():
    """install() for worker_path/triton: `import triton` in a process whose
    parent installed. The import may come from torch._inductor's own
    triton_compat while it loads, which is the question being answered, so
    that check of install() does not apply."""
    if not _installed:
        _put_surface()


# Inductor's compile workers get the parent's sys.path as PYTHONPATH: this
# directory first makes their `import triton` tritium's (worker_path/triton).
WORKER_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker_path")


def _put_surface():
    global _installed
    from . import surface  # noqa: PLC0415

    sys.modules.update(surface.build())
    if WORKER_PATH not in sys.path:
        sys.path.insert(0, WORKER_PATH)
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
    os.environ["TORCHINDUCTOR_USE_STATIC_CUDA_LAUNCHER"] = "0"
    # torch caches "is triton installed?" answers; forget any taken before.
    utils = sys.modules.get("torch.utils._triton")
    if utils is not None:
        for name in ("has_triton_package", "has_triton", "get_triton_version"):
            f = getattr(utils, name, None)
            if hasattr(f, "cache_clear"):
                f.cache_clear()
    _installed = True


def installed():
    """Whether install() has put the surface in sys.modules."""
    return _installed


def stats():
    """{"compiles": kernels tritium compiled for Inductor, "launches":
    kernel launches, "kernels": their names, "seconds": the time Inductor's
    thread spent compiling them (in triton.compile, and waiting for a GPU
    compile's back half)} in this process."""
    from ..errors import load_C  # noqa: PLC0415
    from .kernels import _stats_lock, compile_stats  # noqa: PLC0415

    # Warm GPU launches that ran no Python (lib/bindings/inductor_launch.cpp) count there.
    c_launches = load_C().inductor_launches()
    with _stats_lock:
        return {"compiles": compile_stats["compiles"],
                "launches": compile_stats["launches"] + c_launches,
                "kernels": list(compile_stats["kernels"]), "seconds": compile_stats["seconds"]}
