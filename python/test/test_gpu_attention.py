"""Fused attention forward (the FlashAttention-2 style kernel of _attention_kernels.py) on the GPU
against torch's scaled_dot_product_attention: fp16 and bf16, head dims 64 and 128, causal and not,
sequence lengths that are and are not multiples of the blocks, the configs the benchmark sweeps.
Fresh random inputs; the output starts as NaN, so an unwritten element fails the check."""

import zlib

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu

import _attention_kernels as attn  # noqa: E402


@pytest.fixture(autouse=True)
def _seed(request):
    torch.manual_seed(zlib.crc32(request.node.nodeid.encode()))


def check(dtype, Z, H, N, D, causal, cfg, attention=attn.attention):
    bm, bn, warps, stages = cfg
    q, k, v = (torch.randn(Z, H, N, D, device="cuda", dtype=dtype) for _ in range(3))
    scale = D ** -0.5
    o = attention(q, k, v, causal, scale, BLOCK_M=bm, BLOCK_N=bn, num_warps=warps,
                  num_stages=stages)
    ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(),
                                                           is_causal=causal, scale=scale)
    assert not torch.isnan(o).any(), "unwritten (NaN) output elements"
    err = ((o.double() - ref.double()).norm() / ref.double().norm()).item()
    assert err < (1e-2 if dtype == torch.bfloat16 else 3e-3), err


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("D", [64, 128])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("N", [256, 1000])
def test_attention_forward(dtype, D, causal, N):
    cfg = (128, 64, 4, 2) if D == 64 else (128, 64, 8, 3)
    check(dtype, 2, 3, N, D, causal, cfg)


@pytest.mark.parametrize("cfg", [(128, 64, 4, 2), (128, 64, 4, 3), (128, 128, 8, 2), (128, 64, 8, 3),
                                 (128, 128, 8, 3), (64, 64, 4, 3), (64, 32, 4, 1), (32, 16, 4, 2)])
@pytest.mark.parametrize("causal", [False, True])
def test_attention_configs(cfg, causal):
    check(torch.float16, 1, 2, 700, 64, causal, cfg)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("D", [64, 128])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("cfg", [(128, 128, 8, 3), (64, 64, 4, 3), (128, 64, 8, 2)])
def test_attention_forward_descriptors(dtype, D, causal, cfg):
    # The tutorial's form (_attention_desc_kernels.py): Q, K, V and O through host tensor
    # descriptors, TMA copies and a TMA store on sm_90a; heads laid end to end, so that a block
    # of the wrong head or a box past the rows would show.
    import _attention_desc_kernels as desc  # noqa: PLC0415
    check(dtype, 2, 3, 512, D, causal, cfg, desc.attention_desc)
