"""No wgmma of the attention forward (pointer and descriptor forms) or backward is serialized by
ptxas (sm_90a; needs ptxas, no GPU). ptxas serializes every wgmma.mma_async of a function when it
cannot prove that no other instruction reads an accumulator between a wgmma and its wait (its
info C7514, "Potential Performance Loss"): the whole kernel then loses its asynchronous wgmmas.
A schedule that waited for an older group with `wgmma.wait_group 1` after a join (a loop's back
edge) did that: the attention forward with its loop rotated ran at 422 against 492 TFLOP/s on an
H100 (benchmarks/RESULTS.md, twenty-eighth session)."""

import pytest
import torch

import tritium
import _attention_bwd_kernels as bwd
import _attention_desc_kernels as desc
import _attention_kernels as fwd
from test_attention_bwd_ptx import compile_kernel

pytestmark = pytest.mark.skipif(tritium.errors.load_C().ptxas_path() is None,
                                reason="needs ptxas")


def _serialized(kernel):
    log = kernel.metadata.get("ptxas_log", "")
    assert "Used" in log, log  # assembled here, so the log is ptxas's
    return "C7514" in log or "wgmma.mma_async instructions are serialized" in log


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("D,cfg", [(64, (128, 128, 8, 3)), (128, (128, 128, 8, 3)),
                                   (128, (128, 64, 4, 2)), (128, (64, 64, 4, 3))])
def test_attention_forward_pointer_form(causal, D, cfg):
    bm, bn, w, s = cfg
    sig = {"Q": "*fp16", "K": "*fp16", "V": "*fp16", "Out": "*fp16", "sm_scale": "fp32"}
    for p in fwd.attn_fwd.params:
        if p.name not in sig and not p.is_constexpr:
            sig[p.name] = "i32"
    cx = dict(HEAD_DIM=D, BLOCK_M=bm, BLOCK_N=bn, CAUSAL=causal)
    k = tritium.compile(fwd.attn_fwd, signature=sig, constexprs=cx, target="sm_90a", num_warps=w,
                        num_stages=s, use_cache=False, divisible_by_16=["Q", "K", "V", "Out"])
    assert "wgmma.mma_async" in k.asm["ptx"]
    assert not _serialized(k)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("cfg", [(128, 128, 8, 3), (128, 64, 4, 2)])
def test_attention_forward_descriptor_form(causal, cfg):
    from tritium.compiler import compiler as _compiler  # noqa: PLC0415
    bm, bn, w, s = cfg
    q = torch.zeros(1, 2, 4096, 128, dtype=torch.float16)
    kern = desc.attn_fwd_desc
    args = desc.descriptors(q, q, q, q, bm, bn) + (0.088, 4096)
    key, params, _ = kern.specialize(kern._bind(args, dict(HEAD_DIM=128, BLOCK_M=bm, BLOCK_N=bn,
                                                           CAUSAL=causal)))
    k = _compiler.compile_gpu(kern, params, key, num_warps=w, num_stages=s, target="sm_90a",
                              use_cache=False, bounds_check=False)
    assert not _serialized(k)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("D", [64, 128])
def test_attention_backward(causal, D):
    bm1, bn1, bm2, bn2, warps, stages = bwd.DEFAULT_CONFIG if D == 64 else bwd.CONFIG_D128
    tl_ = dict(CAUSAL=causal, TRANSPOSE_LOADED=True)
    dkdv = compile_kernel(bwd.attn_bwd_dkdv, "fp16", "sm_90a",
                          dict(HEAD_DIM=D, BLOCK_M=bm1, BLOCK_N=bn1, **tl_), warps, stages)
    dq = compile_kernel(bwd.attn_bwd_dq, "fp16", "sm_90a",
                        dict(HEAD_DIM=D, BLOCK_M=bm2, BLOCK_N=bn2, **tl_), warps, stages)
    assert not _serialized(dkdv) and not _serialized(dq)
