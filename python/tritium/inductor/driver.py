"""`triton.runtime.driver`, `triton.backends` and `triton.knobs` as Inductor
reads them, for tritium's CPU executor.

Inductor's CPU path calls `triton_helpers.set_driver_to_cpu()`, which looks
up `triton.backends.backends["cpu"]` and makes an instance of its `driver`
class `triton.runtime.driver.active`; benchmarking and device queries go
through the active driver.
"""

import os
import types

from .kernels import GPUTarget


class CPUDriver:
    """The active driver while Inductor's CPU kernels compile and run: the
    target is GPUTarget("cpu", 0, 0); there are no streams (0) and one
    device (0)."""

    def __init__(self):
        self._target = GPUTarget("cpu", 0, 0)
        self.utils = types.SimpleNamespace(get_device_properties=self._device_properties)

    @staticmethod
    def is_active():
        return True

    def get_current_target(self):
        return self._target

    def get_current_device(self):
        return 0

    def set_current_device(self, device):
        if device not in (0, None):
            raise ValueError(f"tritium's CPU driver has one device (0), not {device!r}")

    def get_current_stream(self, device=None):
        return 0

    def get_active_torch_device(self):
        import torch  # noqa: PLC0415

        return torch.device("cpu")

    def get_device_interface(self):
        import torch  # noqa: PLC0415

        return torch.cpu

    def _device_properties(self, device=0):
        return {"multiprocessor_count": os.cpu_count() or 1, "max_shared_mem": 0,
                "max_num_regs": 0, "warpSize": 1}

    def get_benchmarker(self):
        from ..testing import do_bench  # noqa: PLC0415

        return do_bench

    def get_empty_cache_for_benchmark(self):
        import torch  # noqa: PLC0415

        return torch.empty(0, dtype=torch.int8)

    def clear_cache(self, cache):
        cache.zero_()


class DriverConfig:
    """`triton.runtime.driver`: `.active` (the CPU driver until
    set_active), `set_active`, `reset_active`."""

    def __init__(self):
        self._default = None
        self._active = None

    @property
    def default(self):
        if self._default is None:
            self._default = CPUDriver()
        return self._default

    @property
    def active(self):
        if self._active is None:
            self._active = self.default
        return self._active

    def set_active(self, driver):
        self._active = driver

    def reset_active(self):
        self._active = self.default


driver = DriverConfig()


class CPUBackend:
    """`triton.backends.compiler.BaseBackend` for the "cpu" target: options
    parsing as `triton.compiler.compiler.make_backend(target)` returns it."""

    def __init__(self, target):
        if target.backend != "cpu":
            raise NotImplementedError(
                f"tritium's Inductor surface has no {target.backend!r} backend (only 'cpu')")
        self.target = target

    @staticmethod
    def supports_target(target):
        return target.backend == "cpu"

    def parse_options(self, options):
        defaults = {"num_warps": 4, "num_stages": 3, "num_ctas": 1, "debug": False,
                    "enable_fp_fusion": True, "sanitize_overflow": False}
        defaults.update(options or {})
        return types.SimpleNamespace(**defaults)

    def hash(self):
        return "tritium-cpu"


def make_backend(target):
    return CPUBackend(target)


# `triton.backends.backends`: name -> Backend(compiler, driver).
Backend = types.SimpleNamespace
backends = {"cpu": Backend(compiler=CPUBackend, driver=CPUDriver)}


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
