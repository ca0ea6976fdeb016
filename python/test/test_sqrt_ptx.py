"""tl.sqrt and tl.sqrt_rn on the GPU, without one: tl.sqrt (and libdevice.sqrt) is Triton's
fast root, sqrt.approx.ftz.f32, and tl.sqrt_rn the correctly rounded sqrt.rn.f32, as in Triton
3.6's PTX; the CPU executor computes both exactly. pytest -m gpu runs them on the H200
(test_gpu_ops.py test_math_fp32[sqrt], test_gpu_random_atomics.py for sqrt_rn)."""

import re

import numpy as np

import tritium
import tritium.language as tl
from tritium.language.extra import libdevice


@tritium.jit
def _roots(x_ptr, y_ptr, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + i)
    tl.store(y_ptr + i, tl.sqrt(x))
    tl.store(y_ptr + BLOCK + i, tl.sqrt_rn(x))
    tl.store(y_ptr + 2 * BLOCK + i, libdevice.sqrt(x * 4.0))
    tl.store(y_ptr + 3 * BLOCK + i, libdevice.sqrt_rn(x.to(tl.float16)).to(tl.float32))


def _ptx(target):
    ck = tritium.compile(_roots, signature={"x_ptr": "*fp32", "y_ptr": "*fp32"},
                         constexprs={"BLOCK": 128}, num_warps=4, target=target, use_cache=False)
    return ck.asm["ptx"]


def test_sqrt_is_approximate_and_sqrt_rn_rounded_on_the_gpu():
    for target in ("sm_90a", "sm_80"):
        roots = re.findall(r"\bsqrt\.\S+", _ptx(target))
        # tl.sqrt and libdevice.sqrt: fast; sqrt_rn in fp32, and of an fp16 value: rounded.
        assert sorted(roots) == ["sqrt.approx.ftz.f32"] * 2 + ["sqrt.rn.f32"] * 2, roots


def test_both_roots_are_exact_on_the_executor():
    x = np.random.default_rng(3).uniform(0, 100, 128).astype(np.float32)
    x[:3] = [0.0, 2.0, 1e-40]
    y = np.full(4 * 128, np.nan, np.float32)
    _roots[(1,)](x, y, BLOCK=128)
    for k, want in enumerate([np.sqrt(x), np.sqrt(x), np.sqrt(x * np.float32(4))]):
        np.testing.assert_array_equal(y[k * 128:(k + 1) * 128], want)
    np.testing.assert_array_equal(y[384:], np.sqrt(x.astype(np.float16)).astype(np.float32))
