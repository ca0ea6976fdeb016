"""Batched (rank-3) tl.dot on the tensor cores without a GPU: the kernel of test_gpu_dot.py's
rank-3 tests compiled for sm_80 and sm_90a (mma.sync on both: wgmma has no batched form) and
assembled with ptxas, for fp16 (fp32 and fp16 accumulate), bf16, tf32, tf32x3 and int8, several
batch/M/N/K tiles and 1, 4 and 8 warps. Each kernel issues, per thread, the mma.sync count its
batched layout implies (warps over the batch, then M and N), and the tiles whose registers fit
assemble without spills. The compiled GPU IR (batched mma and dot_op layouts, swizzled rank-3
buffers filled by the cp.async pipeline) also runs on the CPU executor against numpy. The GPU
tests check the values on the device."""

import os
import re
import shutil
import subprocess

import numpy as np
import pytest

import tritium
from tritium import _C

from _dot_kernels import batched_kernel

PTXAS = shutil.which("ptxas") or ("/usr/local/cuda/bin/ptxas"
                                  if os.path.exists("/usr/local/cuda/bin/ptxas") else None)

# kind: (element type, precision, fp16 accumulate, mma.sync type suffix, K per instruction)
KINDS = {
    "fp16": ("fp16", "ieee", False, ".f32.f16.f16.f32", 16),
    "fp16-acc16": ("fp16", "ieee", True, ".f16.f16.f16.f16", 16),
    "bf16": ("bf16", "ieee", False, ".f32.bf16.bf16.f32", 16),
    "tf32": ("fp32", "tf32", False, ".f32.tf32.tf32.f32", 8),
    "tf32x3": ("fp32", "tf32x3", False, ".f32.tf32.tf32.f32", 8),
    "int8": ("i8", "ieee", False, ".s32.s8.s8.s32", 32),
}
TILES = [(2, 16, 16, 16), (4, 64, 32, 32), (2, 128, 64, 64)]
# (kind, tile, warps) that assemble without spills (measured; a regression guard). The others
# spill as 2-D dots of the same per-warp tile do: one warp over 4x64x32 or more (the fp32
# accumulator alone is 256 registers), 2x128x64 with 4 warps (64x64 per warp of fp32
# accumulator plus all of K=64 of both operand fragments), tf32x3's three operand parts at
# 4x64x32 with 4 warps.
NO_SPILL = ({(k, TILES[0], w) for k in KINDS for w in (1, 4, 8)}
            | {(k, TILES[1], 8) for k in KINDS}
            | {(k, TILES[1], 4) for k in KINDS if k != "tf32x3"}
            | {(k, TILES[2], 8) for k in KINDS}
            | {("fp16-acc16", TILES[2], 4)})


def _signature(kind):
    elem, _, f16acc, _, _ = KINDS[kind]
    out = "*fp16" if f16acc else "*i32" if elem == "i8" else "*fp32"
    return {"a_ptr": "*" + elem, "b_ptr": "*" + elem, "c_ptr": out, "out_ptr": out, "NB": "i32",
            "M": "i32", "N": "i32", "K": "i32"}


def _compile(kind, tile, warps, target):
    _, precision, f16acc, _, _ = KINDS[kind]
    BB, BM, BN, BK = tile
    return tritium.compile(batched_kernel, signature=_signature(kind), target=target,
                           num_warps=warps, use_cache=False,
                           constexprs={"BB": BB, "BM": BM, "BN": BN, "BK": BK,
                                       "PRECISION": precision, "HAS_ACC": True, "F16_ACC": f16acc},
                           divisible_by_16=["a_ptr", "b_ptr", "c_ptr", "out_ptr", "M", "N", "K"])


def _mma_per_thread(gir, tile, k_instr, passes):
    """mma.sync instructions per thread from the accumulator's batched layout: the batch, M and N
    per warp (where there are more warps than tiles, warps hold copies) over the instruction's
    1 x 16 x 8 x k_instr."""
    m = re.search(r"tt\.dot [^\n]*#ttg\.nvidia_mma<\{versionMajor = 2, versionMinor = 0, "
                  r"warpsPerCTA = \[(\d+), (\d+), (\d+)\], instrShape = \[1, 16, 8\]\}>", gir)
    assert m, "the rank-3 dot has no batched mma layout:\n" + gir
    wb, wm, wn = map(int, m.groups())
    BB, BM, BN, BK = tile
    return (max(1, BB // wb) * max(1, BM // (16 * wm)) * max(1, BN // (8 * wn)) * (BK // k_instr)
            * passes)


@pytest.mark.skipif(PTXAS is None, reason="ptxas not installed")
@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("warps", [1, 4, 8])
@pytest.mark.parametrize("tile", TILES, ids=lambda t: "x".join(map(str, t)))
@pytest.mark.parametrize("kind", list(KINDS))
def test_batched_dot_ptx(kind, tile, warps, target, tmp_path):
    elem, precision, _, suffix, k_instr = KINDS[kind]
    BB, BM, BN, BK = tile
    if elem == "fp32" and (BB * BM * BK + BB * BK * BN) * 4 * 3 > 200 * 1024:
        # The compiler refuses it, as it does a 2-D dot of that many bytes.
        with pytest.raises(tritium.CompilationError, match="bytes of shared memory"):
            _compile(kind, tile, warps, target)
        return
    k = _compile(kind, tile, warps, target)
    ptx, gir = k.asm["ptx"], k.asm["gir"]
    assert "wgmma" not in ptx
    if BK % k_instr:
        # int8 with K = 16: no instruction, FMAs (a mad.lo.s32 per product).
        assert "mma.sync" not in ptx
        assert ptx.count("mad.lo.s32") >= BB * BM * BN * BK // (32 * warps)
    else:
        mmas = re.findall(r"mma\.sync\.aligned\.m16n8k(\d+)\.row\.col(\S+) ", ptx)
        assert mmas and all(s == suffix and int(kk) == k_instr for kk, s in mmas), set(mmas)
        want = _mma_per_thread(gir, tile, k_instr, 3 if precision == "tf32x3" else 1)
        assert len(mmas) == want, (len(mmas), want)
        assert "fma.rn.f32" not in ptx
        if elem in ("fp16", "bf16"):
            assert "ldmatrix.sync.aligned" in ptx
    path = tmp_path / "k.ptx"
    path.write_text(ptx)
    r = subprocess.run([PTXAS, f"-arch={target}", "-v", str(path), "-o", str(tmp_path / "k.cubin")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    spills = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", r.stderr)
    assert spills, r.stderr
    if (kind, tile, warps) in NO_SPILL:
        assert spills.groups() == ("0", "0"), r.stderr


NP = {"fp16": np.float16, "fp32": np.float32, "i8": np.int8}


@pytest.mark.parametrize("kind", ["fp16", "fp16-acc16", "tf32", "tf32x3", "int8"])
@pytest.mark.parametrize("NB,M,N,K,BB,BM,BN,BK,warps", [(5, 40, 24, 70, 2, 32, 16, 32, 4),
                                                         (3, 33, 17, 64, 4, 32, 16, 32, 8),
                                                         (2, 16, 16, 32, 2, 16, 16, 32, 1)],
                         ids=str)
def test_batched_dot_gpu_ir_on_the_executor(kind, NB, M, N, K, BB, BM, BN, BK, warps):
    """The GPU IR of a rank-3 dot after every GPU pass (mma layouts, rank-3 shared buffers, the
    pipelined K loop with masks on every dim) on the CPU executor, against numpy."""
    elem, precision, f16acc, _, _ = KINDS[kind]
    k = tritium.compile(batched_kernel, signature=_signature(kind), target="sm_80",
                        num_warps=warps, use_cache=False,
                        constexprs={"BB": BB, "BM": BM, "BN": BN, "BK": BK,
                                    "PRECISION": precision, "HAS_ACC": True, "F16_ACC": f16acc})
    gir = k.asm["gir"]
    assert "instrShape = [1, 16, 8]" in gir and "ttg.async_copy" in gir
    rng = np.random.default_rng(NB * 1000 + M)
    if elem == "i8":
        a = rng.integers(-128, 128, (NB, M, K)).astype(np.int8)
        b = rng.integers(-128, 128, (NB, K, N)).astype(np.int8)
        c = rng.integers(-1000, 1000, (NB, M, N)).astype(np.int32)
        out = np.full((NB, M, N), -5, np.int32)
    else:
        a = rng.standard_normal((NB, M, K)).astype(NP[elem])
        b = rng.standard_normal((NB, K, N)).astype(NP[elem])
        odt = np.float16 if f16acc else np.float32
        c = rng.standard_normal((NB, M, N)).astype(odt)
        out = np.full((NB, M, N), np.nan, odt)
    m = _C.parse_module(gir)

    def ptr(x):
        return _C.ExecPointer(x.ctypes.data, x.nbytes)

    grid = (-(-NB // BB), -(-M // BM), -(-N // BN))
    _C.execute(m, "batched_kernel", grid, [ptr(a), ptr(b), ptr(c), ptr(out), NB, M, N, K], 1)
    if elem == "i8":
        want = np.matmul(a.astype(np.int64), b.astype(np.int64)) + c
        np.testing.assert_array_equal(out.astype(np.int64), want)
        return
    want = np.matmul(a.astype(np.float64), b.astype(np.float64)) + c.astype(np.float64)
    err = np.linalg.norm(out.astype(np.float64) - want) / np.linalg.norm(want)
    assert err < (2e-2 if f16acc else 2e-3 if precision == "tf32" else 1e-5), err


@pytest.mark.skipif(PTXAS is None, reason="ptxas not installed")
@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("warps", [1, 4, 8])
def test_batched_attention_ptx_and_executor(warps, target, tmp_path):
    """Two chained rank-3 dots with softmax statistics between them (slices of a batched mma
    layout): both dots on mma.sync, no spills, and the GPU IR on the executor against numpy."""
    from _dot_kernels import batched_attention_kernel  # noqa: PLC0415
    B, M, N, D = 2, 32, 64, 32
    sig = {"q_ptr": "*fp16", "k_ptr": "*fp16", "v_ptr": "*fp16", "o_ptr": "*fp32"}
    k = tritium.compile(batched_attention_kernel, signature=sig, target=target, num_warps=warps,
                        use_cache=False, constexprs={"B": B, "M": M, "N": N, "D": D},
                        divisible_by_16=list(sig))
    ptx = k.asm["ptx"]
    # Per thread: 2 x (32/16) x (64/8) x (32/16) for each dot, over the warps.
    assert ptx.count("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32") == 128 // warps
    path = tmp_path / "k.ptx"
    path.write_text(ptx)
    r = subprocess.run([PTXAS, f"-arch={target}", "-v", str(path), "-o", str(tmp_path / "k.cubin")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "0 bytes spill stores, 0 bytes spill loads" in r.stderr, r.stderr
    rng = np.random.default_rng(warps)
    q, kk, v = (rng.standard_normal(s).astype(np.float16) for s in ((B, M, D), (B, N, D), (B, N, D)))
    o = np.full((B, M, D), np.nan, np.float32)

    def ptr(x):
        return _C.ExecPointer(x.ctypes.data, x.nbytes)

    _C.execute(_C.parse_module(k.asm["gir"]), "batched_attention_kernel", (1, 1, 1),
               [ptr(q), ptr(kk), ptr(v), ptr(o)], 1)
    s = q.astype(np.float64) @ kk.astype(np.float64).transpose(0, 2, 1)
    p = np.exp(s - s.max(-1, keepdims=True))
    want = (p @ v.astype(np.float64)) / p.sum(-1, keepdims=True)
    np.testing.assert_allclose(o, want, atol=2e-3)  # p rounded to fp16 before the second dot
