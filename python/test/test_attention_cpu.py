"""The fused attention forward of _attention_kernels.py on the CPU executor against a torch (fp32)
reference at small sizes: causal and not, sequence lengths that are not multiples of the blocks,
two head dims. The GPU run of the same kernel is test_gpu_attention.py."""

import pytest

torch = pytest.importorskip("torch")

import _attention_kernels as attn  # noqa: E402


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("Z,H,N,D,BM,BN", [(1, 2, 100, 64, 32, 16), (2, 1, 64, 16, 32, 32),
                                          (1, 1, 33, 32, 16, 16)])
def test_attention_forward_cpu(causal, Z, H, N, D, BM, BN):
    torch.manual_seed(N * 7 + D)
    q, k, v = (torch.randn(Z, H, N, D, dtype=torch.float16) for _ in range(3))
    o = attn.attention(q, k, v, causal, 0.5, BLOCK_M=BM, BLOCK_N=BN)
    ref = attn.reference(q, k, v, causal, 0.5)
    assert not torch.isnan(o).any()
    assert torch.allclose(o.float(), ref, atol=2e-3, rtol=2e-3), (o.float() - ref).abs().max()
