"""`triton.runtime.driver`: `driver.active` answers what Triton's tutorials and Inductor ask
the device (`get_active_torch_device()`, `get_current_target()`,
`utils.get_device_properties(i)`, the current device and stream, a benchmarker): the CUDA
driver when torch sees a GPU, else the CPU executor's. As in Triton, `tritium.runtime.driver`
is this module's `driver` object; `set_active` / `reset_active` switch it (Inductor's CPU path
does)."""

import collections
import os
import types


_benchmarker_fn = None  # tritium.testing.do_bench, which sits above the runtime, registers itself


def set_benchmarker(do_bench):
    """What `driver.active.get_benchmarker()` returns (tritium.testing sets its do_bench)."""
    global _benchmarker_fn
    _benchmarker_fn = do_bench


def _benchmarker():
    # `import tritium` imports tritium.testing, which registers its do_bench.
    if _benchmarker_fn is None:
        raise RuntimeError("no benchmarker: tritium.testing was not imported")
    return _benchmarker_fn


class GPUTarget(collections.namedtuple("GPUTarget", ["backend", "arch", "warp_size"])):
    """Triton's `triton.backends.compiler.GPUTarget(backend, arch, warp_size)`:
    backend "cpu" runs on tritium's CPU executor, "cuda" (arch: the compute
    capability as major*10+minor, warp_size 32) on an NVIDIA GPU."""

    __slots__ = ()


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
        return _benchmarker()

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
        from . import cuda as _cuda  # noqa: PLC0415

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
        return _benchmarker()

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
