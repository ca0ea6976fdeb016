"""Step 0 of --pipeline (lib/gpu/pipeline_loops.cpp): in a loop whose dot operands are
pipelined, the vectors its other ops read (the attention backward's row statistics) are staged
through shared memory too, num_stages - 1 iterations ahead, as Triton's pipeliner stages them.
The laid-out IR runs on the CPU executor beside the tile IR as written; the GPU compile's IR
and PTX are checked (no GPU needed)."""

import copy
import re

import numpy as np
import pytest

import tritium
import tritium.language as tl
from tritium.errors import load_C
# The attention backward's dK/dV loop in small: M indexed by the induction variable (other = inf,
# so the staged copy's zeros are replaced after the read), D by an offset the loop advances (an
# iter arg: copied in the layout its users read).
from test_prefetch_loads import _GPU_LAYOUT_PASSES as _LAYOUT_PASSES, _dot_rows, _tile_kernel

C = load_C()

def _inputs(n, B, seed):
    rng = np.random.default_rng(seed)
    K = (rng.standard_normal((B, B)) * 0.1).astype(np.float16)
    Q = (rng.standard_normal((max(n, 1), B)) * 0.1).astype(np.float16)
    M = rng.standard_normal(max(n, 1)).astype(np.float32)
    D = rng.standard_normal(max(n, 1)).astype(np.float32)
    return K, Q, M, D


def _pipelined(tk, num_warps, num_stages, target="sm_90a"):
    text = re.sub(r"num_warps = \d+", f"num_warps = {num_warps}", tk.asm["tir"])
    module = C.parse_module(text, "<staging>")
    C.run_passes(module, _LAYOUT_PASSES, True, target=target, num_warps=num_warps)
    stats = C.run_passes(module, ["pipeline"], True, target=target, num_warps=num_warps,
                         num_stages=num_stages)
    out = copy.copy(tk)
    out.module = module
    return out, stats, C.print_module(module, False)


@pytest.mark.parametrize("num_stages", [2, 3, 4])
@pytest.mark.parametrize("n", [0, 64, 100, 192, 320])
def test_staged_vectors_match_the_loop_as_written(n, num_stages):
    B = 64
    K, Q, M, D = _inputs(n, B, 5 + n)
    want = np.full((B, B), np.nan, np.float32)
    tk = _tile_kernel(_dot_rows, (1,), (K, Q, M, D, want, n), BLOCK=B)
    pk, stats, text = _pipelined(tk, 4, num_stages)
    assert stats["gpu.loops-pipelined"] == 1
    assert stats["gpu.loads-staged"] == 2
    # Q^T, M and D: three copies a stage.
    assert stats["gpu.loads-pipelined"] == 3
    # M's copy in a compact blocked layout (16-byte pieces), D's in the one its users read.
    assert re.search(r"tensor<64x!tt\.ptr<f32>, #ttg\.blocked<\{sizePerThread = \[4\], "
                     r"threadsPerWarp = \[32\], warpsPerCTA = \[4\], order = \[0\]\}>>", text)
    vec = (r"!ttg\.memdesc<%dx64xf32, #ttg\.swizzled_shared<\{vec = 1, perPhase = 1, "
           r"maxPhase = 1, order = \[0\]\}>, mutable>" % num_stages)
    assert len(re.findall(r"ttg\.local_alloc [^\n]*" + vec, text)) == 2
    # M's other (inf) replaces the copy's zeros after the read; D's other is 0.
    assert len(re.findall(r"arith\.select [^\n]*tensor<64xf32", text)) == 1
    got = np.full((B, B), np.nan, np.float32)
    pk[(1,)](K, Q, M, D, got, n)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("num_warps", [4, 8])
def test_eight_warps(num_warps):
    B, n = 64, 200
    K, Q, M, D = _inputs(n, B, 3)
    want = np.full((B, B), np.nan, np.float32)
    tk = _tile_kernel(_dot_rows, (1,), (K, Q, M, D, want, n), BLOCK=B)
    pk, stats, _ = _pipelined(tk, num_warps, 3)
    assert stats["gpu.loads-staged"] == 2
    got = np.full((B, B), np.nan, np.float32)
    pk[(1,)](K, Q, M, D, got, n)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("target", ["sm_90a", "sm_80"])
def test_the_gpu_compile_stages_the_vectors(target):
    sig = {"K": "*fp16", "Q": "*fp16", "M": "*fp32", "D": "*fp32", "Out": "*fp32", "n": "i32"}
    ck = tritium.compile(_dot_rows, signature=sig, constexprs={"BLOCK": 64}, num_warps=4,
                         num_stages=3, target=target, use_cache=False,
                         divisible_by_16=["K", "Q", "M", "D", "Out"])
    gir = ck.asm["gir"]
    assert "prefetched" not in gir
    assert len(re.findall(r"ttg\.local_alloc [^\n]*memdesc<3x64xf32", gir)) == 2
    ptx = ck.asm["ptx"]
    # M: one 16-byte copy from each of 16 lanes; D (its offset an iter arg, so of unknown
    # alignment): 4-byte copies from the threads that own its elements.
    copies = re.findall(r"(@%p\d+ )?cp\.async\.(cg|ca)\.shared\.global \[[^]]*\], \[[^]]*\], (\d+)", ptx)
    assert ("16" in {c[2] for c in copies if c[1] == "cg"}), copies
    assert "4" in {c[2] for c in copies if c[1] == "ca"}, copies
    if "cubin" in ck.asm:
        assert ck.asm["cubin"]


@tritium.jit
def _wide_rows(A, B, V, W, Out, n, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # A dot loop whose operand buffers fill most of shared memory, with two 4 KB vectors.
    om = tl.arange(0, BM)
    on = tl.arange(0, BN)
    ok = tl.arange(0, BK)
    acc = tl.zeros([BM, BN], tl.float32)
    for start in range(0, n, BK):
        a = tl.load(A + om[:, None] * n + start + ok[None, :])
        b = tl.load(B + (start + ok[:, None]) * BN + on[None, :])
        v = tl.load(V + start * 0 + tl.arange(0, 1024))
        w = tl.load(W + start * 0 + tl.arange(0, 1024))
        acc = tl.dot(a, b, acc) + (tl.sum(v) + tl.sum(w))
    tl.store(Out + om[:, None] * BN + on[None, :], acc)


def test_vectors_stay_where_shared_memory_has_no_room():
    sig = {"A": "*fp16", "B": "*fp16", "V": "*fp32", "W": "*fp32", "Out": "*fp32", "n": "i32"}
    consts = {"BM": 128, "BN": 128, "BK": 64}
    fits = tritium.compile(_wide_rows, signature=sig, constexprs=consts, num_warps=8,
                           num_stages=2, target="sm_80", use_cache=False)
    assert len(re.findall(r"ttg\.local_alloc [^\n]*memdesc<2x1024xf32", fits.asm["gir"])) == 2
    # Five stages of the operands take 160 KB of sm_80's 163; the vectors' five 4 KB buffers
    # each would not fit: they are loaded in the loop as written.
    full = tritium.compile(_wide_rows, signature=sig, constexprs=consts, num_warps=8,
                           num_stages=5, target="sm_80", use_cache=False)
    assert len(re.findall(r"ttg\.local_alloc [^\n]*memdesc<5x", full.asm["gir"])) == 2
    assert "x1024xf32" not in full.asm["gir"]
    assert full.metadata["shared"] <= 166912


@pytest.mark.parametrize("target", ["sm_90a", "sm_80"])
@pytest.mark.parametrize("causal", [False, True])
def test_the_attention_backward_gpu_ir_runs_on_the_executor(target, causal):
    # The whole GPU IR the compile makes for the dK/dV kernel (staged M and Delta, two loops
    # when causal; shared memory allocated, barriers inserted), run by the CPU executor beside
    # the tile IR, with a sequence that is not a multiple of the blocks. They differ only in
    # rounding (fused multiply-adds, the order of the dots' sums).
    import _attention_bwd_kernels as bwd
    from test_attention_bwd_ptx import compile_kernel
    D, N, H, BM, BN, W, S = 64, 200, 2, 64, 128, 8, 2
    rng = np.random.default_rng(1 + causal)
    q, k, v, do = [(rng.standard_normal((1, H, N, D)) * 0.5).astype(np.float16)
                   for _ in range(4)]
    M = rng.standard_normal((H, N)).astype(np.float32) + 3
    delta = rng.standard_normal((H, N)).astype(np.float32)
    grid = ((N + BN - 1) // BN, H)

    def run(kernel, **constexprs):
        dk, dv = (np.full((1, H, N, D), np.nan, np.float16) for _ in range(2))
        kernel[grid](q, k, v, do, dk, dv, M, delta, 0.125, H, N, H * N * D, N * D, D,
                     **constexprs)
        return dk.astype(np.float32), dv.astype(np.float32)

    cx = dict(HEAD_DIM=D, BLOCK_M=BM, BLOCK_N=BN, CAUSAL=causal)
    bwd.attn_bwd_dkdv.cache.clear()
    want = run(bwd.attn_bwd_dkdv, **cx)
    tk = next(iter(bwd.attn_bwd_dkdv.cache.values()))
    ck = compile_kernel(bwd.attn_bwd_dkdv, "fp16", target, cx, W, S)
    assert len(re.findall(r"ttg\.local_alloc [^\n]*memdesc<2x64xf32", ck.asm["gir"])) == \
        (4 if causal else 2)
    gk = copy.copy(tk)
    gk.module = C.parse_module(ck.asm["gir"], "<gir>")
    for w, g in zip(want, run(gk)):
        assert not np.isnan(g).any()
        np.testing.assert_allclose(g, w, rtol=0, atol=1e-2 * np.abs(w).max())
