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


class CUDADriver:
    """The active driver for Inductor's GPU kernels: torch's current CUDA
    device and stream, its device's target GPUTarget("cuda", major*10+minor,
    32), device properties as Triton's driver reports them."""

    def __init__(self):
        self.utils = types.SimpleNamespace(get_device_properties=self._device_properties)

    @staticmethod
    def is_active():
        try:
            import torch  # noqa: PLC0415

            return bool(torch.cuda.is_available())
        except Exception:  # noqa: BLE001 -- no torch, no driver: not active
            return False

    def get_current_target(self):
        import torch  # noqa: PLC0415

        major, minor = torch.cuda.get_device_capability(self.get_current_device())
        return GPUTarget("cuda", major * 10 + minor, 32)

    def get_current_device(self):
        import torch  # noqa: PLC0415

        return torch.cuda.current_device()

    def set_current_device(self, device):
        import torch  # noqa: PLC0415

        torch.cuda.set_device(device)

    def get_current_stream(self, device=None):
        from ..runtime import cuda as _cuda  # noqa: PLC0415

        return _cuda.current_stream(self.get_current_device() if device is None else device)

    def get_active_torch_device(self):
        import torch  # noqa: PLC0415

        return torch.device("cuda", self.get_current_device())

    def get_device_interface(self):
        import torch  # noqa: PLC0415

        return torch.cuda

    def _device_properties(self, device=0):
        import torch  # noqa: PLC0415

        p = torch.cuda.get_device_properties(device)
        return {"multiprocessor_count": p.multi_processor_count,
                "max_shared_mem": getattr(p, "shared_memory_per_block_optin", 0),
                "max_num_regs": getattr(p, "regs_per_multiprocessor", 65536),
                "warpSize": getattr(p, "warp_size", 32),
                "sm_clock_rate": getattr(p, "clock_rate", 0),
                "mem_clock_rate": getattr(p, "memory_clock_rate", 0),
                "mem_bus_width": getattr(p, "memory_bus_width", 0)}

    def get_benchmarker(self):
        from ..testing import do_bench  # noqa: PLC0415

        return do_bench

    def get_empty_cache_for_benchmark(self):
        import torch  # noqa: PLC0415

        # As Triton: a 256 MB buffer whose zeroing flushes the L2 between runs.
        return torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int, device="cuda")

    def clear_cache(self, cache):
        cache.zero_()


class DriverConfig:
    """`triton.runtime.driver`: `.active` (as in Triton, the CUDA driver when
    a GPU is present, else the CPU driver, until set_active), `set_active`,
    `reset_active`."""

    def __init__(self):
        self._default = None
        self._active = None

    @property
    def default(self):
        if self._default is None:
            self._default = CUDADriver() if CUDADriver.is_active() else CPUDriver()
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
