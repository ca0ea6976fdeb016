"""The harness shared by the CPU tests (test_ops_cpu.py, test_promotion_cpu.py, test_dot_cpu.py,
test_lang_cpu.py, test_fuzz_cpu.py): which compiler runs their kernels, how a kernel is launched on
numpy arrays, and the helpers that make inputs and check outputs.

The kernels in those files are written exactly as one would for Triton: they use the `triton` and
`tl` of this module. Inputs are fresh random values from a seeded RNG (`rand`); outputs are poisoned
(`poisoned`: NaN for floats, a sentinel for ints) before each launch, so a lane the kernel forgot to
write fails the comparison.

TRITIUM_TEST_AGAINST_TRITON picks what runs the kernels. Anything but tritium is a cross-check of
the tests themselves: it tells a wrong test from a tritium bug.

- unset or empty: tritium (`import tritium as triton`) on its CPU executor, on numpy arrays.
- `1`: Triton's interpreter (`import triton`, TRITON_INTERPRET=1 unless the environment already
  sets it; needs `triton` and torch). `launch` hands the arrays over as CPU torch tensors that share
  their memory. Tests marked `interpreter_gap` hit known gaps of the interpreter (bf16, float and
  bool scalar arguments, tensor-method math) and are skipped.
- `cuda`: real Triton on a GPU (needs `triton` and torch with CUDA). `launch` copies every array
  argument to the GPU, keeping its strides, and copies it back after the kernel ran.

Importing this module also forces TRITIUM_CHECK_ROUNDTRIP=1: every compile checks that the IR text
parses back to itself, before and after the pipeline, and verifies after every pass.
"""

import os

os.environ["TRITIUM_CHECK_ROUNDTRIP"] = "1"

__all__ = [
    "AGAINST_TRITON", "triton", "tl", "torch", "needs_torch", "interpreter_gap", "launch", "poisoned", "rand",
    "assert_ulp", "dtype_id",
]

import numpy as np
import pytest

AGAINST_TRITON = os.environ.get("TRITIUM_TEST_AGAINST_TRITON", "")
if AGAINST_TRITON:
    if AGAINST_TRITON == "1":
        os.environ.setdefault("TRITON_INTERPRET", "1")
    import torch  # the cross-checks hand torch tensors to Triton: torch is required there
    import triton
    import triton.language as tl
else:
    import tritium as triton
    import tritium.language as tl

    try:
        import torch
    except ImportError:  # torch is optional for tritium: only the bf16 and torch-tensor tests need it
        torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="bf16 tests need torch")
interpreter_gap = pytest.mark.skipif(AGAINST_TRITON == "1", reason="a known gap of Triton's interpreter")


def launch(kernel, grid, *args, **meta):
    """kernel[grid](*args, **meta) on numpy arrays (tritium); under the Triton cross-checks the
    arrays, positional or keyword, travel as torch tensors (on the GPU for "cuda") and results are
    copied back."""
    if not AGAINST_TRITON:
        kernel[grid](*args, **meta)
        return
    back = []

    def to_triton(a):
        if isinstance(a, np.ndarray):
            t = torch.from_numpy(a)
        elif isinstance(a, torch.Tensor):
            t = a
        else:
            return a
        if AGAINST_TRITON == "cuda":
            g = torch.empty_strided(t.size(), t.stride(), dtype=t.dtype, device="cuda")  # keeps strides
            g.copy_(t)
            t = g
            back.append((a, t))
        return t

    dev_args = [to_triton(a) for a in args]
    dev_meta = {k: to_triton(v) for k, v in meta.items()}
    kernel[grid](*dev_args, **dev_meta)
    for a, t in back:
        if isinstance(a, np.ndarray):
            a[...] = t.cpu().numpy()
        else:
            a.copy_(t.cpu())


def poisoned(shape, dtype):
    """An output buffer full of values no correct kernel writes."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return np.full(shape, np.nan, dtype=dtype)
    return np.full(shape, np.iinfo(dtype).max - 5, dtype=dtype)


def rand(rng, shape, dtype, lo=None, hi=None):
    """Random values of `dtype`: normals for floats, uniform ints in [lo, hi] for ints."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        x = rng.standard_normal(shape) * (1.0 if hi is None else hi)
        return x.astype(dtype)
    info = np.iinfo(dtype)
    lo = info.min if lo is None else lo
    hi = info.max if hi is None else hi
    wide = np.uint64 if dtype == np.uint64 else np.int64
    return rng.integers(lo, hi, size=shape, endpoint=True, dtype=wide).astype(dtype)


def assert_ulp(actual, desired, maxulp):
    """`actual` is within `maxulp` units in the last place of `desired` and holds no NaN."""
    actual = np.asarray(actual)
    desired = np.asarray(desired).astype(actual.dtype)
    assert not np.isnan(actual).any(), "output holds NaN (an unwritten lane?)"
    np.testing.assert_array_max_ulp(actual, desired, maxulp=maxulp)


def dtype_id(v):
    """A pytest id for a parameter: a numpy dtype by its name, anything else as str()."""
    return np.dtype(v).name if isinstance(v, type) else str(v)
