"""The attention backward of _attention_bwd_kernels.py on the GPU against torch autograd of
scaled_dot_product_attention computed in fp32: fp16 and bf16, head dims 64 and 128, causal and not,
sequence lengths that are and are not multiples of the blocks, the configs the benchmark sweeps.
Fresh random inputs; every result starts as NaN (attention_backward allocates them so), so an
unwritten element fails the check. The forward's M is checked against torch's logsumexp, and the
autograd wrapper end to end. The CPU run of the same kernels is test_attention_bwd_cpu.py."""

import zlib

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu

import _attention_bwd_kernels as bwd  # noqa: E402
import _attention_kernels as fwd  # noqa: E402
from tritium.errors import CompilationError  # noqa: E402

# ||out - ref|| / ||ref||: P and dS are rounded to the input dtype before each tl.dot (see
# test_attention_bwd_cpu.py); longer rows than on the CPU add a little.
TOL = {torch.float16: 5e-3, torch.bfloat16: 3e-2}


@pytest.fixture(autouse=True)
def _seed(request):
    torch.manual_seed(zlib.crc32(request.node.nodeid.encode()))


def rel_err(out, ref):
    return ((out.double() - ref.double()).norm() / ref.double().norm()).item()


def sdpa_grads(q, k, v, do, causal, scale):
    q32, k32, v32 = (t.float().requires_grad_() for t in (q, k, v))
    torch.nn.functional.scaled_dot_product_attention(q32, k32, v32, is_causal=causal,
                                                     scale=scale).backward(do.float())
    return q32.grad, k32.grad, v32.grad


def check(dtype, Z, H, N, D, causal, config, transpose_loaded=False):
    q, k, v, do = (torch.randn(Z, H, N, D, device="cuda", dtype=dtype) for _ in range(4))
    scale = D ** -0.5
    o, m = fwd.attention(q, k, v, causal, scale, BLOCK_M=128, BLOCK_N=64,
                         num_warps=4 if D == 64 else 8, num_stages=2, return_m=True)
    grads = bwd.attention_backward(q, k, v, o, do, m, causal, scale, config,
                                   transpose_loaded=transpose_loaded)
    torch.cuda.synchronize()
    for name, g, r in zip(("dq", "dk", "dv"), grads, sdpa_grads(q, k, v, do, causal, scale)):
        assert not torch.isnan(g).any(), f"{name}: unwritten (NaN) elements"
        err = rel_err(g, r)
        assert err < TOL[dtype], (name, err)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("D", [64, 128])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("N", [256, 1000, 1024])
def test_attention_backward(dtype, D, causal, N):
    check(dtype, 2, 3, N, D, causal, bwd.DEFAULT_CONFIG if D == 64 else bwd.CONFIG_D128)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("D", [64, 128])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("N", [256, 1000])
def test_attention_backward_transposed_loads(dtype, D, causal, N):
    """The tutorial's form: Q^T, dO and K^T loaded once, tl.trans'd for the other dot."""
    check(dtype, 2, 3, N, D, causal, bwd.DEFAULT_CONFIG if D == 64 else bwd.CONFIG_D128,
          transpose_loaded=True)


# The configs benchmarks/bench_attention_bwd.py sweeps (both head dims) and a small-block one.
CONFIGS = [(64, 128, 128, 64, 8, 2), (32, 128, 128, 32, 8, 2), (64, 64, 64, 64, 4, 2),
           (32, 64, 64, 32, 4, 3), (64, 128, 128, 64, 8, 3), (32, 128, 128, 32, 4, 2),
           (64, 64, 128, 32, 8, 2), (32, 64, 128, 32, 8, 2), (32, 64, 64, 32, 4, 2),
           (16, 32, 32, 16, 4, 1)]


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("D", [64, 128])
def test_attention_backward_configs(config, causal, D):
    if D == 128 and config == (64, 128, 128, 64, 8, 3):
        # Three stages of 128x128 tiles at d128 need 294912 bytes: a located
        # error, not a launch failure (measured on the H200).
        with pytest.raises(CompilationError, match="bytes of shared memory"):
            check(torch.float16, 1, 2, 700, D, causal, config)
        return
    check(torch.float16, 1, 2, 700, D, causal, config)


@pytest.mark.parametrize("causal", [False, True])
def test_forward_log_sum_exp(causal):
    Z, H, N, D = 2, 3, 1000, 64
    q, k, v = (torch.randn(Z, H, N, D, device="cuda", dtype=torch.float16) for _ in range(3))
    o, m = fwd.attention(q, k, v, causal, 0.125, return_m=True)
    s = (q.float() @ k.float().transpose(-1, -2)) * 0.125
    if causal:
        s = s.masked_fill(torch.triu(torch.ones(N, N, dtype=torch.bool, device="cuda"), 1),
                          float("-inf"))
    ref = torch.logsumexp(s, -1).reshape(Z * H, N) * 1.4426950408889634
    assert not torch.isnan(m).any()
    assert torch.allclose(m, ref, atol=1e-3, rtol=1e-5), (m - ref).abs().max()
    assert torch.equal(o, fwd.attention(q, k, v, causal, 0.125))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_autograd_function(dtype):
    q, k, v, do = (torch.randn(2, 4, 777, 128, device="cuda", dtype=dtype) for _ in range(4))
    q, k, v = (t.requires_grad_() for t in (q, k, v))
    bwd.attention(q, k, v, True, 128 ** -0.5, fwd_config=(128, 64, 8, 2),
                  bwd_config=bwd.CONFIG_D128).backward(do)
    refs = sdpa_grads(q.detach(), k.detach(), v.detach(), do, True, 128 ** -0.5)
    for g, r in zip((q.grad, k.grad, v.grad), refs):
        assert not torch.isnan(g).any()
        assert rel_err(g, r) < TOL[dtype]


@pytest.mark.parametrize("passes", ["prefetch-loads", "pipeline", "remove-layout-conversions",
                                    "propagate-layouts", "fuse-multiply-add"])
def test_attention_backward_without_an_optimization(passes, monkeypatch):
    # TRITIUM_DISABLE_PASSES: the kernels compiled without the pass compute the same gradients
    # (a ragged N, so the masks of the prefetched and pipelined loads matter).
    monkeypatch.setenv("TRITIUM_DISABLE_PASSES", passes)
    check(torch.float16, 1, 2, 1000, 64, True, bwd.DEFAULT_CONFIG)
