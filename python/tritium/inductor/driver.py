"""`triton.runtime.driver`, `triton.backends` and `triton.knobs` as Inductor
reads them, for tritium's CPU executor and NVIDIA GPUs.

Inductor's CPU path calls `triton_helpers.set_driver_to_cpu()`, which looks
up `triton.backends.backends["cpu"]` and makes an instance of its `driver`
class `triton.runtime.driver.active`; its GPU path calls
`set_driver_to_gpu()`, which takes the first other backend whose driver
`is_active()` ("nvidia", as in Triton, when a CUDA GPU is present).
Benchmarking and device queries go through the active driver.
"""

import os
import types

from ..runtime.driver import CPUDriver, CUDADriver, DriverConfig, GPUTarget, driver  # noqa: F401


class CPUBackend:
    """`triton.backends.compiler.BaseBackend` for the "cpu" target (and, as
    CUDABackend, "cuda"): options parsing as
    `triton.compiler.compiler.make_backend(target)` returns it."""

    BACKEND = "cpu"

    def __init__(self, target):
        if target.backend != self.BACKEND:
            raise NotImplementedError(
                f"tritium's Inductor surface has no {target.backend!r} backend (only 'cpu' "
                "and 'cuda')")
        self.target = target

    @classmethod
    def supports_target(cls, target):
        return target.backend == cls.BACKEND

    def parse_options(self, options):
        defaults = {"num_warps": 4, "num_stages": 3, "num_ctas": 1, "debug": False,
                    "enable_fp_fusion": True, "sanitize_overflow": False}
        defaults.update(options or {})
        return types.SimpleNamespace(**defaults)

    def hash(self):
        return f"tritium-{self.BACKEND}-{self.target.arch}"


class CUDABackend(CPUBackend):
    """The "cuda" target: tritium's PTX compiler (sm_80/sm_90/sm_90a)."""

    BACKEND = "cuda"


def make_backend(target):
    backend = getattr(target, "backend", None)
    return CUDABackend(target) if backend == "cuda" else CPUBackend(target)


# `triton.backends.backends`: name -> Backend(compiler, driver); "nvidia" is
# Triton's name for the CUDA backend.
Backend = types.SimpleNamespace
backends = {"cpu": Backend(compiler=CPUBackend, driver=CPUDriver),
            "nvidia": Backend(compiler=CUDABackend, driver=CUDADriver)}


def _make_knobs():
    """`triton.knobs` with the settings Inductor reads: the runtime hooks
    (launch enter/exit, jit post-compile), the cache directory and the
    compilation flags."""
    runtime = types.SimpleNamespace(launch_enter_hook=None, launch_exit_hook=None,
                                    jit_post_compile_hook=None, jit_cache_hook=None,
                                    add_stages_inspection_hook=None, debug=False,
                                    interpret=False, override_arch=None)
    cache = types.SimpleNamespace(
        dir=os.environ.get("TRITON_CACHE_DIR",
                           os.path.join(os.path.expanduser("~"), ".triton", "cache")),
        dump_dir=None, override_dir=None, home_dir=os.path.expanduser("~"),
        manager_class=None, remote_manager_class=None)
    compilation = types.SimpleNamespace(override=False, dump_ir=False, store_binary_only=False,
                                        always_compile=False, use_ir_loc=None,
                                        enable_asan=False, disable_line_info=False,
                                        front_end_debugging=False, allow_non_constexpr_globals=True,
                                        instrumentation_mode="")
    return types.SimpleNamespace(runtime=runtime, cache=cache, compilation=compilation,
                                 autotuning=types.SimpleNamespace(cache=False, print=False),
                                 nvidia=types.SimpleNamespace(), amd=types.SimpleNamespace(),
                                 intel=types.SimpleNamespace(),
                                 language=types.SimpleNamespace(fp32_default=None,
                                                                default_fp_fusion=True))
