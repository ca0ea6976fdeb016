"""The attention backward of _attention_bwd_kernels.py (and the forward's M output it needs) on the CPU
executor against torch autograd of the fp32 reference at small sizes: fp16 and bf16, head dims 16,
32 and 64, causal and not, sequence lengths that are and are not multiples of the blocks, blocks
of different shapes in the dK/dV and dQ kernels. The GPU run is test_gpu_attention_bwd.py.

Every output starts as NaN (attention_backward and attention allocate them so), so an element no
program writes fails the check. Tolerances are on ||out - ref|| / ||ref||: the kernels round P and
dS to the input dtype before their tl.dot (unit roundoff u = 2^-11 for fp16, 2^-8 for bf16) and
the results once more at the store; with random signs these add up to a few u of the norm, and
dS = P (dP - Delta) loses a little more where dP and Delta nearly cancel. The largest errors
measured over these cases are 0.7u for both dtypes (fp16 3.5e-4, bf16 2.8e-3); the bounds are 4u
(fp16 2e-3, bf16 1.6e-2), while a 5% error in Delta alone gives 1.2e-2 to 1.6e-2 in fp16."""

import pytest

torch = pytest.importorskip("torch")

import _attention_bwd_kernels as bwd  # noqa: E402
import _attention_kernels as fwd  # noqa: E402

TOL = {torch.float16: 2e-3, torch.bfloat16: 1.6e-2}


def rel_err(out, ref):
    return ((out.double() - ref.double()).norm() / ref.double().norm()).item()


def inputs(Z, H, N, D, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(Z, H, N, D, generator=g).to(dtype) for _ in range(4)]


def reference_grads(q, k, v, do, causal, scale):
    q32, k32, v32 = (t.float().requires_grad_() for t in (q, k, v))
    fwd.reference(q32, k32, v32, causal, scale).backward(do.float())
    return q32.grad, k32.grad, v32.grad


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("N,D,BM,BN", [(100, 32, 32, 16), (64, 16, 32, 32), (33, 64, 16, 16)])
def test_forward_log_sum_exp(causal, N, D, BM, BN):
    """M is each row's log2(sum(exp2(S * scale * log2 e))), and the output is unchanged."""
    q, k, v, _ = inputs(1, 2, N, D, torch.float16, N + D)
    o, m = fwd.attention(q, k, v, causal, 0.3, BLOCK_M=BM, BLOCK_N=BN, return_m=True)
    s = (q.float() @ k.float().transpose(-1, -2)) * 0.3
    if causal:
        s = s.masked_fill(torch.triu(torch.ones(N, N, dtype=torch.bool), 1), float("-inf"))
    ref_m = torch.logsumexp(s, -1).reshape(2, N) * 1.4426950408889634
    assert not torch.isnan(m).any() and not torch.isnan(o).any()
    assert torch.allclose(m, ref_m, atol=1e-4, rtol=1e-5), (m - ref_m).abs().max()
    assert torch.equal(o, fwd.attention(q, k, v, causal, 0.3, BLOCK_M=BM, BLOCK_N=BN))


# (Z, H, N, D, config): config = (BLOCK_M1, BLOCK_N1, BLOCK_M2, BLOCK_N2, num_warps, num_stages)
CASES = [(1, 2, 128, 64, (32, 64, 64, 32, 4, 2)),   # N a multiple of every block
         (2, 1, 100, 32, (16, 32, 32, 16, 4, 2)),   # ragged, BLOCK_N1 > BLOCK_M1, BLOCK_M2 > BLOCK_N2
         (1, 1, 40, 16, (32, 16, 16, 32, 4, 2)),    # ragged, the block shapes the other way round
         (1, 1, 77, 64, (16, 16, 16, 16, 4, 1))]


@pytest.mark.parametrize("transpose_loaded", [False, True])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("Z,H,N,D,config", CASES)
def test_attention_backward_cpu(dtype, causal, Z, H, N, D, config, transpose_loaded):
    q, k, v, do = inputs(Z, H, N, D, dtype, N * 3 + D + causal)
    scale = D ** -0.5
    o, m = fwd.attention(q, k, v, causal, scale, BLOCK_M=16, BLOCK_N=16, return_m=True)
    grads = bwd.attention_backward(q, k, v, o, do, m, causal, scale, config,
                                   transpose_loaded=transpose_loaded)
    refs = reference_grads(q, k, v, do, causal, scale)
    for name, g, r in zip(("dq", "dk", "dv"), grads, refs):
        assert g.dtype == dtype and g.shape == q.shape
        assert not torch.isnan(g).any(), f"{name}: unwritten (NaN) elements"
        err = rel_err(g, r)
        assert err < TOL[dtype], (name, err)


def test_autograd_function_cpu():
    """The torch.autograd.Function wrapper: loss.backward() reaches the three kernels."""
    q, k, v, do = inputs(1, 2, 48, 32, torch.float16, 5)
    q, k, v = (t.requires_grad_() for t in (q, k, v))
    o = bwd.attention(q, k, v, True, 0.2, fwd_config=(16, 16, 4, 1),
                      bwd_config=(16, 32, 32, 16, 4, 2))
    o.backward(do)
    refs = reference_grads(q.detach(), k.detach(), v.detach(), do, True, 0.2)
    for g, r in zip((q.grad, k.grad, v.grad), refs):
        assert rel_err(g, r) < TOL[torch.float16]


def test_backward_catches_a_wrong_delta():
    """The check can fail: with Delta off by 5% the dK and dQ errors exceed the fp16 bound."""
    q, k, v, do = inputs(1, 1, 64, 32, torch.float16, 9)
    o, m = fwd.attention(q, k, v, False, 0.2, BLOCK_M=16, BLOCK_N=16, return_m=True)
    dq, dk, _ = bwd.attention_backward(q, k, v, o * 1.05, do, m, False, 0.2,
                                       (16, 32, 32, 16, 4, 2))
    refs = reference_grads(q, k, v, do, False, 0.2)
    assert rel_err(dq, refs[0]) > TOL[torch.float16]
    assert rel_err(dk, refs[1]) > TOL[torch.float16]
