"""tl.dot with M, N or K below 16 (Triton's interpreter takes any size, its NVIDIA backend M and N
below 16; Triton's own test_dot and test_dot3d use 1x64x64, 64x2x64, 2x2x16, 64x64x4, batched
8x8x32 and 32x2x32). On the CPU executor against numpy, and compiled for sm_80 and sm_90a, where
a dot too small for the tensor cores' instruction shapes runs on FMAs (ptxas assembles it; the
GPU values are checked by test_gpu_dot.py's test_gpu_small_dot)."""

import os
import shutil
import subprocess

import numpy as np
import pytest

import tritium
from harness import triton, tl, dtype_id, launch, poisoned, rand

PTXAS = shutil.which("ptxas") or ("/usr/local/cuda/bin/ptxas"
                                  if os.path.exists("/usr/local/cuda/bin/ptxas") else None)


@triton.jit
def small_dot_kernel(a_ptr, b_ptr, c_ptr, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr,
                     K: tl.constexpr):
    rb = tl.arange(0, B)[:, None, None]
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    if B == 1:
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
        b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
        tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b, input_precision="ieee"))
    else:
        a = tl.load(a_ptr + rb * M * K + rm[None, :, None] * K + rk[None, None, :])
        b = tl.load(b_ptr + rb * K * N + rk[None, :, None] * N + rn[None, None, :])
        c = tl.dot(a, b, input_precision="ieee")
        tl.store(c_ptr + rb * M * N + rm[None, :, None] * N + rn[None, None, :], c)


SHAPES = [(1, 1, 64, 64), (1, 64, 2, 64), (1, 2, 2, 16), (1, 64, 64, 4), (1, 16, 16, 8),
          (2, 8, 8, 32), (2, 32, 2, 32)]


@pytest.mark.parametrize("B,M,N,K", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", [np.float16, np.float32], ids=dtype_id)
def test_small_dot_on_the_executor(dtype, B, M, N, K):
    rng = np.random.default_rng(M * 1000 + N * 10 + K)
    shape = (lambda *s: s) if B == 1 else (lambda *s: (B, *s))
    a = rand(rng, shape(M, K), dtype)
    b = rand(rng, shape(K, N), dtype)
    c = poisoned(shape(M, N), np.float32)
    launch(small_dot_kernel, (1,), a, b, c, B=B, M=M, N=N, K=K)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-5 * np.sqrt(K))


@pytest.mark.skipif(PTXAS is None, reason="ptxas not installed")
@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("B,M,N,K", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", ["fp16", "fp32"])
def test_small_dot_ptx_assembles(dtype, B, M, N, K, target, tmp_path):
    sig = {"a_ptr": f"*{dtype}", "b_ptr": f"*{dtype}", "c_ptr": "*fp32"}
    k = tritium.compile(small_dot_kernel, signature=sig, constexprs={"B": B, "M": M, "N": N, "K": K},
                        target=target, num_warps=4, use_cache=False)
    assert "tt.dot" in k.asm["gir"] and ("fma.rn.f32" in k.asm["ptx"] or "mma" in k.asm["ptx"])
    path = tmp_path / "k.ptx"
    path.write_text(k.asm["ptx"])
    r = subprocess.run([PTXAS, f"-arch={target}", str(path), "-o", str(tmp_path / "k.cubin")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
