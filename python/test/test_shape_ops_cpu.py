"""tl.join, tl.split, tl.interleave, tl.cat, tl.histogram, tl.gather, tl.topk and tensor.item()
on the CPU executor
against numpy; each kernel also compiles to PTX for sm_90a that ptxas accepts (the GPU runs of
the same kernels are test_gpu_shape_ops.py)."""

import numpy as np
import pytest

import tritium
from harness import launch, poisoned, triton, tl
import _shape_ops_kernels as K


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.int8])
def test_join_split_interleave(dtype):
    rng = np.random.default_rng(1)
    a = (rng.standard_normal((8, 16)) * 10).astype(dtype)
    b = (rng.standard_normal((8, 16)) * 10).astype(dtype)
    if dtype == np.float32:
        a[0, 0], b[0, 1] = -0.0, np.nan  # selected, never computed: kept bit for bit
    joined, inter = poisoned((8, 16, 2), dtype), poisoned((8, 32), dtype)
    sa, sb = poisoned((8, 16), dtype), poisoned((8, 16), dtype)
    launch(K.join_split_kernel, (1,), a, b, joined, inter, sa, sb, M=8, N=16)
    want = np.stack([a, b], axis=-1)
    assert np.array_equal(joined.view(np.uint8), want.view(np.uint8))
    assert np.array_equal(inter.view(np.uint8), want.reshape(8, 32).view(np.uint8))
    assert np.array_equal(sa.view(np.uint8), a.view(np.uint8))
    assert np.array_equal(sb.view(np.uint8), b.view(np.uint8))


def test_join_of_scalars_and_split_to_scalars():
    out = poisoned((4,), np.float32)
    launch(K.scalar_join_kernel, (1,), out)
    np.testing.assert_array_equal(out, [3.0, 5.0, 5.0, 3.0])


@pytest.mark.parametrize("shape", [(16,), (8, 4)])
def test_cat(shape):
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal(shape).astype(np.float32), rng.standard_normal(shape).astype(np.float32)
    out = poisoned((2 * shape[0],) + shape[1:], np.float32)
    launch(K.cat_kernel, (1,), a, b, out, N=shape[0], C=shape[1] if len(shape) > 1 else 1,
           RANK=len(shape))
    np.testing.assert_array_equal(out, np.concatenate([a, b], axis=0))


@pytest.mark.parametrize("masked", [False, True])
def test_histogram(masked):
    rng = np.random.default_rng(3)
    x = rng.integers(-3, 20, 64).astype(np.int32)  # some outside [0, 16)
    m = rng.random(64) < 0.7
    out = poisoned((16,), np.int32)
    launch(K.histogram_kernel, (1,), x, m.astype(np.int8), out, N=64, BINS=16, MASKED=masked)
    keep = (x >= 0) & (x < 16) & (m if masked else True)
    np.testing.assert_array_equal(out, np.bincount(x[keep], minlength=16)[:16])


def test_item():
    x = np.array([7.5], np.float32)
    out = poisoned((4,), np.float32)
    launch(K.item_kernel, (1,), x, out)
    np.testing.assert_array_equal(out, [7.5] * 4)


def test_errors():
    with pytest.raises(tritium.CompilationError, match="last dim of size 2"):
        launch(K.bad_split_kernel, (1,), poisoned((4,), np.float32))
    with pytest.raises(tritium.CompilationError, match="one dtype"):
        launch(K.bad_join_kernel, (1,), poisoned((4,), np.float32))
    with pytest.raises(tritium.CompilationError, match="one element"):
        launch(K.bad_item_kernel, (1,), poisoned((4,), np.float32))


@pytest.mark.parametrize("target", ["sm_90a", "sm_80"])
def test_kernels_assemble(target):
    sig2 = {"a_ptr": "*fp32", "b_ptr": "*fp32", "j_ptr": "*fp32", "i_ptr": "*fp32", "sa_ptr": "*fp32",
            "sb_ptr": "*fp32"}
    cases = [(K.join_split_kernel, sig2, {"M": 8, "N": 16}),
             (K.cat_kernel, {"a_ptr": "*fp32", "b_ptr": "*fp32", "out_ptr": "*fp32"},
              {"N": 8, "C": 4, "RANK": 2}),
             (K.histogram_kernel, {"x_ptr": "*i32", "m_ptr": "*i8", "out_ptr": "*i32"},
              {"N": 64, "BINS": 16, "MASKED": True}),
             (K.item_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32"}, {}),
             (K.gather_kernel, {"src_ptr": "*fp32", "idx_ptr": "*i32", "out_ptr": "*fp32"},
              {"S": 16, "I": 8, "C": 4, "AXIS": 1}),
             (K.topk_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32"}, {"M": 4, "N": 16, "K": 4})]
    for kern, sig, consts in cases:
        k = tritium.compile(kern, signature=sig, constexprs=consts, target=target, num_warps=4,
                            use_cache=False)
        assert ".entry" in k.asm["ptx"]
        if "cubin" in k.asm:
            assert len(k.asm["cubin"]) > 0


@pytest.mark.parametrize("axis", [0, 1])
def test_gather(axis):
    rng = np.random.default_rng(4)
    S, I, C = 16, 8, 4
    src = rng.standard_normal((S, C) if axis == 0 else (C, S)).astype(np.float32)
    idx = rng.integers(0, S, (I, C) if axis == 0 else (C, I)).astype(np.int32)
    out = poisoned(idx.shape, np.float32)
    launch(K.gather_kernel, (1,), src, idx, out, S=S, I=I, C=C, AXIS=axis)
    np.testing.assert_array_equal(out, np.take_along_axis(src, idx, axis=axis))


@pytest.mark.parametrize("k", [1, 4, 16])
def test_topk(k):
    x = np.random.default_rng(5).standard_normal((4, 16)).astype(np.float32)
    out = poisoned((4, k), np.float32)
    launch(K.topk_kernel, (1,), x, out, M=4, N=16, K=k)
    np.testing.assert_array_equal(out, -np.sort(-x, axis=1)[:, :k])


@pytest.mark.parametrize("k", [1, 4, 16])
def test_topk_ascending(k):
    """`descending=False`: the k smallest, smallest first."""
    x = np.random.default_rng(6).standard_normal((4, 16)).astype(np.float32)
    out = poisoned((4, k), np.float32)
    launch(K.topk_kernel, (1,), x, out, M=4, N=16, K=k, DESCENDING=False)
    np.testing.assert_array_equal(out, np.sort(x, axis=1)[:, :k])
