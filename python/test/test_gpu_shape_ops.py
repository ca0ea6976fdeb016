"""tl.join, tl.split, tl.interleave, tl.cat, tl.histogram, tl.gather, tl.topk, tensor.item() on
the GPU against torch (the kernels of _shape_ops_kernels.py; outputs poisoned first)."""

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu

import _shape_ops_kernels as K  # noqa: E402

DEV = "cuda"


def poisoned(shape, dtype):
    if dtype.is_floating_point:
        return torch.full(shape, float("nan"), dtype=dtype, device=DEV)
    return torch.full(shape, -77, dtype=dtype, device=DEV)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int32])
@pytest.mark.parametrize("warps", [1, 4])
def test_join_split_interleave(dtype, warps):
    a = (torch.randn(8, 16, device=DEV) * 10).to(dtype)
    b = (torch.randn(8, 16, device=DEV) * 10).to(dtype)
    j, i = poisoned((8, 16, 2), dtype), poisoned((8, 32), dtype)
    sa, sb = poisoned((8, 16), dtype), poisoned((8, 16), dtype)
    K.join_split_kernel[(1,)](a, b, j, i, sa, sb, M=8, N=16, num_warps=warps)
    want = torch.stack([a, b], dim=-1)
    assert torch.equal(j, want) and torch.equal(i, want.reshape(8, 32))
    assert torch.equal(sa, a) and torch.equal(sb, b)


@pytest.mark.parametrize("shape", [(16,), (8, 4)])
def test_cat(shape):
    a, b = torch.randn(shape, device=DEV), torch.randn(shape, device=DEV)
    out = poisoned((2 * shape[0],) + shape[1:], torch.float32)
    K.cat_kernel[(1,)](a, b, out, N=shape[0], C=shape[1] if len(shape) > 1 else 1, RANK=len(shape))
    assert torch.equal(out, torch.cat([a, b], 0))


@pytest.mark.parametrize("masked", [False, True])
def test_histogram(masked):
    x = torch.randint(-3, 20, (64,), device=DEV, dtype=torch.int32)
    m = torch.rand(64, device=DEV) < 0.7
    out = poisoned((16,), torch.int32)
    K.histogram_kernel[(1,)](x, m.to(torch.int8), out, N=64, BINS=16, MASKED=masked)
    keep = (x >= 0) & (x < 16) & (m if masked else True)
    assert torch.equal(out, torch.bincount(x[keep].long(), minlength=16)[:16].int())


def test_item():
    x = torch.tensor([7.5], device=DEV)
    out = poisoned((4,), torch.float32)
    K.item_kernel[(1,)](x, out)
    assert torch.equal(out, torch.full((4,), 7.5, device=DEV))


@pytest.mark.parametrize("axis", [0, 1])
def test_gather(axis):
    S, I, C = 16, 8, 4
    src = torch.randn((S, C) if axis == 0 else (C, S), device=DEV)
    idx = torch.randint(0, S, (I, C) if axis == 0 else (C, I), device=DEV, dtype=torch.int32)
    out = poisoned(tuple(idx.shape), torch.float32)
    K.gather_kernel[(1,)](src, idx, out, S=S, I=I, C=C, AXIS=axis)
    assert torch.equal(out, torch.gather(src, axis, idx.long()))


@pytest.mark.parametrize("k", [1, 4, 16])
def test_topk(k):
    x = torch.randn(4, 16, device=DEV)
    out = poisoned((4, k), torch.float32)
    K.topk_kernel[(1,)](x, out, M=4, N=16, K=k)
    assert torch.equal(out, torch.topk(x, k, dim=1).values)


@pytest.mark.parametrize("k", [1, 4, 16])
def test_topk_ascending(k):
    x = torch.randn(4, 16, device=DEV)
    out = poisoned((4, k), torch.float32)
    K.topk_kernel[(1,)](x, out, M=4, N=16, K=k, DESCENDING=False)
    assert torch.equal(out, torch.topk(x, k, dim=1, largest=False).values)
