"""tl.extra.libdevice on the GPU: every test of test_libdevice_cpu.py again, with its kernels
launched on CUDA tensors instead of the CPU executor and the same numpy references and ulp bounds
(the exact functions to 0 ulp, the composed ones within their few ulps, erfc/erfinv/lgamma/ldexp/
nextafter as on the CPU). Run with `pytest -m gpu`."""

import numpy as np
import pytest

import test_libdevice_cpu as cpu

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.gpu


def _gpu_launch(kernel, grid, *args, **meta):
    """kernel[grid] on CUDA copies of the numpy arrays (strides kept); results copied back."""
    back = []

    def to_gpu(a):
        if not isinstance(a, np.ndarray):
            return a
        t = torch.from_numpy(a)
        g = torch.empty_strided(t.size(), t.stride(), dtype=t.dtype, device="cuda")
        g.copy_(t)
        back.append((a, g))
        return g

    kernel[grid](*[to_gpu(a) for a in args], **{k: to_gpu(v) for k, v in meta.items()})
    torch.cuda.synchronize()
    for a, g in back:
        a[...] = g.cpu().numpy()


@pytest.fixture(autouse=True)
def _on_the_gpu(monkeypatch):
    monkeypatch.setattr(cpu, "launch", _gpu_launch)


# The CPU module's tests, collected here under the gpu marker (their parametrisations kept).
for _name in dir(cpu):
    if _name.startswith("test_") and _name not in ("test_module_paths",
                                                   "test_inductors_names_compile_for_the_gpu",
                                                   "test_fp64_math_and_fmod_compile_for_the_gpu"):
        globals()[_name] = getattr(cpu, _name)
del _name
