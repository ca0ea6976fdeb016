"""Kernel arguments that are neither numpy arrays nor torch tensors but speak DLPack
(`__dlpack__`, as jax, cupy, mlx and others do): their memory is used in place, on the CPU
executor here (test_gpu_cuda_graph.py passes CUDA ones). The objects below wrap a numpy array
and expose only the protocol, so nothing else can be taken for it."""

import numpy as np
import pytest

import tritium as triton
import tritium.language as tl


class DLPackOnly:
    def __init__(self, array):
        self._array = array

    def __dlpack__(self, *args, **kwargs):
        return self._array.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


@triton.jit
def _axpy_kernel(x_ptr, y_ptr, out_ptr, a, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, a * tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m),
             mask=m)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32])
def test_dlpack_inputs_and_output_share_memory(dtype):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(300) * 10).astype(dtype)
    y = (rng.standard_normal(300) * 10).astype(dtype)
    out = np.full(300, -1, dtype=dtype)
    _axpy_kernel[(triton.cdiv(300, 128),)](DLPackOnly(x), DLPackOnly(y), DLPackOnly(out), 3, 300,
                                           BLOCK=128)
    want = x * dtype(3) + y  # rounded to dtype after each operation, as in the kernel
    np.testing.assert_allclose(out, want, rtol=1e-6)


def test_dlpack_dtype_is_part_of_the_specialisation():
    x32 = np.arange(16, dtype=np.float32)
    k1 = _axpy_kernel.warmup(DLPackOnly(x32), DLPackOnly(x32), DLPackOnly(x32), 1, 16, BLOCK=16,
                             grid=(1,))
    x64 = np.arange(16, dtype=np.float64)
    k2 = _axpy_kernel.warmup(DLPackOnly(x64), DLPackOnly(x64), DLPackOnly(x64), 1, 16, BLOCK=16,
                             grid=(1,))
    assert k1 is not k2
    assert "f64" in k2.asm["tir"] and "f64" not in k1.asm["tir"]


def test_not_a_tensor_is_still_refused():
    with pytest.raises(TypeError, match="unsupported type"):
        _axpy_kernel[(1,)](object(), np.zeros(4, np.float32), np.zeros(4, np.float32), 1, 4,
                           BLOCK=16)
