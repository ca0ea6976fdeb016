"""The attention backward kernels of _attention_bwd_kernels.py compiled for sm_90a and sm_80 (no GPU
needed) at the configs the tests and the benchmark use first: every tl.dot a tensor-core
instruction (wgmma on sm_90a, mma.sync on sm_80), the loop loads pipelined with cp.async (each has
one dot user: Q, dO and K are loaded as rows and transposed rather than through tl.trans of one
load, which left them unpipelined and copied to shared memory twice), and, where ptxas is installed,
no spill in any of them (the dQ kernel at head dim 128 spilled 16-44 bytes on sm_90a, and sm_80's
causal dK/dV 20, until the kernels' two loops read one shared copy of their tiles)."""

import re

import pytest

import tritium
import _attention_bwd_kernels as bwd

HAS_PTXAS = tritium.errors.load_C().ptxas_path() is not None


def compile_kernel(kern, dtype, target, constexprs, warps, stages, use_cache=False):
    sig = {}
    for p in kern.params:
        if p.name in constexprs or p.is_constexpr:  # constexprs not given take their defaults
            continue
        if p.name in ("M", "Delta"):
            sig[p.name] = "*fp32"
        elif p.name == "sm_scale":
            sig[p.name] = "fp32"
        elif p.name[0].isupper() and p.name not in ("H", "N_CTX"):
            sig[p.name] = "*" + dtype
        else:
            sig[p.name] = "i32"
    return tritium.compile(kern, signature=sig, constexprs=constexprs, target=target,
                           num_warps=warps, num_stages=stages, use_cache=use_cache,
                           divisible_by_16=[n for n in sig if n not in ("sm_scale", "H")])


def spills(k):
    return [int(s) for s in re.findall(r"(\d+) bytes spill", k.metadata.get("ptxas_log", ""))]


@pytest.mark.parametrize("target,dtype,D", [("sm_90a", "fp16", 64), ("sm_90a", "bf16", 64),
                                            ("sm_90a", "fp16", 128), ("sm_80", "fp16", 64)])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("transpose_loaded", [False, True])
def test_backward_kernels_compile(target, dtype, D, causal, transpose_loaded):
    bm1, bn1, bm2, bn2, warps, stages = bwd.DEFAULT_CONFIG if D == 64 else bwd.CONFIG_D128
    tl_ = dict(CAUSAL=causal, TRANSPOSE_LOADED=transpose_loaded)
    dkdv = compile_kernel(bwd.attn_bwd_dkdv, dtype, target,
                          dict(HEAD_DIM=D, BLOCK_M=bm1, BLOCK_N=bn1, **tl_), warps, stages)
    dq = compile_kernel(bwd.attn_bwd_dq, dtype, target,
                        dict(HEAD_DIM=D, BLOCK_M=bm2, BLOCK_N=bn2, **tl_), warps, stages)
    pre = compile_kernel(bwd.attn_bwd_preprocess, dtype, target, dict(HEAD_DIM=D, BLOCK_M=64), 4, 3)
    for k in (dkdv, dq):
        ptx = k.asm["ptx"]
        if target == "sm_90a":
            assert "wgmma.mma_async" in ptx and "mma.sync" not in ptx
        else:
            assert "mma.sync.aligned.m16n8k16" in ptx and "wgmma" not in ptx
        assert "cp.async.cg.shared.global" in ptx
        # Every tile load of the loops is a pipelined copy (the tutorial's form too: a tile
        # read as loaded and transposed fills one buffer), none a load into registers.
        gir = k.asm["gir"]
        assert ("ttg.memdesc_trans" in gir) == transpose_loaded
    if HAS_PTXAS:
        for k in (dkdv, dq, pre):
            assert k.asm["cubin"][:4] == b"\x7fELF"
        assert not any(spills(pre)), spills(pre)
        # No spill anywhere: the causal kernels' two loops read one shared copy of K and V
        # (dQ: q and dO), so their registers do not live across the first loop (sm_80's causal
        # dK/dV spilled 20 bytes before, sm_90a's dQ at 128 16-44).
        assert not any(spills(dkdv)), spills(dkdv)
        assert not any(spills(dq)), spills(dq)
