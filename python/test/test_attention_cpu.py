"""The fused attention forward of _attention_kernels.py on the CPU executor against a torch (fp32)
reference at small sizes: causal and not, sequence lengths that are not multiples of the blocks,
two head dims. The GPU run of the same kernel is test_gpu_attention.py."""

import pytest

torch = pytest.importorskip("torch")

import _attention_desc_kernels as desc  # noqa: E402
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


def _forward_ptx(num_warps, causal, monkeypatch, disable=""):
    import re  # noqa: F401, PLC0415
    import numpy as np  # noqa: PLC0415
    from tritium.compiler import compiler as _compiler  # noqa: PLC0415
    if disable:
        monkeypatch.setenv("TRITIUM_DISABLE_PASSES", disable)
    else:
        monkeypatch.delenv("TRITIUM_DISABLE_PASSES", raising=False)
    t = np.zeros(64, np.float16)
    H, N, D = 32, 4096, 128
    args = (t, t, t, t, 0.088, H, N) + (H * N * D, N * D, D) * 4
    kern = attn.attn_fwd
    key, params, _ = kern.specialize(kern._bind(args, dict(HEAD_DIM=D, BLOCK_M=128, BLOCK_N=128,
                                                            CAUSAL=causal)))
    ck = _compiler.compile_gpu(kern, params, key, num_warps=num_warps, num_stages=2,
                               target="sm_90a", use_cache=False, bounds_check=False)
    return ck.asm["ptx"]


@pytest.mark.parametrize("causal", [False, True])
def test_attention_forward_two_warpgroups_ping_pong(causal, monkeypatch):
    # 128x128 on 8 warps (sm_90a): in the forward's loop over unmasked blocks (the first of the
    # two split-masked-loops makes), warpgroup 1 waits on named barrier 1 before its QK^T
    # wgmmas and warpgroup 0 arrives there right after committing its own; P @ V is not
    # ordered. The masked blocks' loop (the causal diagonal, a ragged end) is not ordered. On
    # 4 warps, or with the pass left out, no named barrier.
    import re  # noqa: PLC0415
    ptx = _forward_ptx(8, causal, monkeypatch)
    loops = re.findall(r"\$L_for_body_\d+:\n(.*?)\$L_for_end", ptx, re.S)
    dot_loops = [b for b in loops if "wgmma.mma_async" in b]
    assert len(dot_loops) == 2
    assert "bar.arrive" not in dot_loops[1] and "bar.sync 1" not in dot_loops[1]
    for body in dot_loops[:1]:
        wait = re.search(r"@(%p\d+) bar\.sync 1, 256;\n\twgmma\.fence\.sync\.aligned;", body)
        arrive = re.search(r"wgmma\.commit_group\.sync\.aligned;\n\t@(%p\d+) bar\.arrive 1, 256;",
                           body)
        assert wait and arrive, body[:3000]
        assert body.count("bar.sync 1, 256") == 1 and body.count("bar.arrive 1, 256") == 1
        assert wait.start() < arrive.start() < body.index("wgmma.commit_group", arrive.end())
        # the two predicates: warpgroup 0 arrives, every other one waits
        assert re.search(rf"setp\.eq\.u32 {arrive.group(1)}, %r\d+, 0;", ptx)
        assert re.search(rf"setp\.ne\.u32 {wait.group(1)}, %r\d+, 0;", ptx)
    assert "bar.arrive" not in _forward_ptx(4, causal, monkeypatch)
    assert "bar.arrive" not in _forward_ptx(8, causal, monkeypatch, "order-warpgroups")


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("Z,H,N,D,BM,BN", [(1, 2, 64, 32, 32, 16), (2, 1, 64, 16, 16, 32)])
def test_attention_forward_descriptors_cpu(causal, Z, H, N, D, BM, BN):
    # The tutorial's form: host tensor descriptors over the (Z*H*N, D) views.
    torch.manual_seed(N + D + BM)
    q, k, v = (torch.randn(Z, H, N, D, dtype=torch.float16) for _ in range(3))
    o = desc.attention_desc(q, k, v, causal, 0.5, BLOCK_M=BM, BLOCK_N=BN)
    ref = attn.reference(q, k, v, causal, 0.5)
    assert not torch.isnan(o).any()
    assert torch.allclose(o.float(), ref, atol=2e-3, rtol=2e-3), (o.float() - ref).abs().max()


def test_attention_descriptors_need_whole_blocks():
    q = torch.zeros(1, 1, 48, 16, dtype=torch.float16)
    with pytest.raises(ValueError, match="N = 48 must be a multiple of BLOCK_M = 32"):
        desc.attention_desc(q, q, q, False, 0.5, BLOCK_M=32, BLOCK_N=16)


@pytest.mark.parametrize("causal", [False, True])
def test_attention_forward_descriptors_ptx(causal):
    # sm_90a, 128x128 on 8 warps: the loop's K and V blocks are TMA copies completing on
    # mbarriers (two 64-column boxes each at d128), the output one TMA store, and the loop
    # over unmasked blocks ordered for the two warpgroups' ping-pong.
    import re  # noqa: PLC0415
    from tritium.compiler import compiler as _compiler  # noqa: PLC0415
    q = torch.zeros(1, 2, 4096, 128, dtype=torch.float16)
    kern = desc.attn_fwd_desc
    args = desc.descriptors(q, q, q, q, 128, 128) + (0.088, 4096)
    key, params, _ = kern.specialize(kern._bind(args, dict(HEAD_DIM=128, BLOCK_M=128,
                                                           BLOCK_N=128, CAUSAL=causal)))
    ck = _compiler.compile_gpu(kern, params, key, num_warps=8, num_stages=3, target="sm_90a",
                               use_cache=False, bounds_check=False)
    ptx = ck.asm["ptx"]
    # K and V (the loop's copies) and O (the store); Q, read once before the loop, is a load.
    assert len(ck.metadata["tensor_maps"]) == 3
    loops = re.findall(r"\$L_for_body_\d+:\n(.*?)\$L_for_end", ptx, re.S)
    body = [b for b in loops if "wgmma.mma_async" in b][0]
    assert body.count("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier") == 4
    assert "mbarrier.try_wait.parity" in body and "ld.global" not in body
    # No barrier of the whole block in the loop: every warp releases the stage it read on
    # the stage's empty mbarrier, and warpgroup 1 waits for that before its first thread
    # issues the copies into it.
    assert "bar.sync 0;" not in body
    release = re.search(r"@(%p\d+) mbarrier\.arrive\.shared::cta\.b64 %rd\d+, \[(%r\d+)\];\n"
                        r"\t@!(%p\d+) bra\.uni (\$L_mbar_done_\d+);\n(?:.*\n)*?"
                        r"\tmbarrier\.try_wait\.parity\.shared::cta\.b64 %p\d+, \[\2\]", body)
    assert release, body[-3000:]
    assert re.search(rf"setp\.eq\.u32 {release.group(1)}, %r\d+, 0;", ptx)  # lane 0
    assert re.search(rf"setp\.eq\.u32 {release.group(3)}, %r\d+, 1;", ptx)  # warpgroup 1
    copies = body.index("cp.async.bulk.tensor.2d.shared::cluster")
    assert body.index(release.group(4) + ":") < copies
    issuer = re.search(r"@(%p\d+) mbarrier\.arrive\.expect_tx", body).group(1)
    assert re.search(rf"and\.pred {issuer}, (%p\d+), %p\d+;", ptx) or \
        re.search(rf"setp\.eq\.u32 {issuer}, %r\d+, 128;", ptx)
    # The ping-pong both ways: warpgroup 1 waits on barrier 1 for warpgroup 0's QK^T,
    # warpgroup 0 on barrier 2 for warpgroup 1's of the iteration before; warpgroup 1
    # arrives on 2 once before the loop, warpgroup 0 waits on it once after.
    assert body.count("bar.sync 1, 256") == 1 and body.count("bar.arrive 1, 256") == 1
    assert body.count("bar.sync 2, 256") == 1 and body.count("bar.arrive 2, 256") == 1
    start = ptx.index("$L_for_body_")
    head, tail = ptx[:start], ptx[ptx.index("\n$L_for_end_", start):]
    assert head.count("bar.arrive 2, 256") == 1 and tail.count("bar.sync 2, 256") == 1
    assert ptx.count("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group") == 2
    # With 3 stages K and V complete on one mbarrier a stage (split-tma-barriers splits
    # 2-stage loops only): one expect of both tiles' bytes.
    assert body.count("mbarrier.arrive.expect_tx") == 1
    # Each copy from one lane of warp 4 (warpgroup 1's first warp) that elect.sync picks, so
    # that ptxas issues it from the warp's uniform datapath.
    assert body.count("elect.sync") == 2 and re.search(r"setp\.eq\.u32 %p\d+, %r\d+, 4;", ptx)


def test_attention_forward_descriptors_ptx_one_warpgroup():
    # sm_90a, Triton's best d128 config (128x64 on 4 warps, 2 stages): the softmax's
    # per-row exp2(m_i - m_ij) once a row (gpu-cse merges the copy the layout passes made for
    # the accumulator's rescale): 64 exponentials of the scores and 4 of the rows a thread
    # holds; K's wait at the top, V's after the softmax; each copy from an elected lane of
    # warp 0.
    import re  # noqa: PLC0415
    from tritium.compiler import compiler as _compiler  # noqa: PLC0415
    q = torch.zeros(1, 2, 4096, 128, dtype=torch.float16)
    kern = desc.attn_fwd_desc
    args = desc.descriptors(q, q, q, q, 128, 64) + (0.088, 4096)
    key, params, _ = kern.specialize(kern._bind(args, dict(HEAD_DIM=128, BLOCK_M=128,
                                                           BLOCK_N=64, CAUSAL=False)))
    ck = _compiler.compile_gpu(kern, params, key, num_warps=4, num_stages=2, target="sm_90a",
                               use_cache=False, bounds_check=False)
    ptx = ck.asm["ptx"]
    loops = re.findall(r"\$L_for_body_\d+:\n(.*?)\$L_for_end", ptx, re.S)
    body = [b for b in loops if "wgmma.mma_async" in b][0]
    assert body.count("ex2.approx") == 128 * 64 // 128 + 4
    waits = [m.start() for m in re.finditer(r"mbarrier\.try_wait\.parity", body)]
    assert len(waits) == 2
    assert waits[0] < body.index("wgmma.mma_async") and waits[1] > body.rindex("ex2.approx")
    assert body.count("elect.sync") == 2 and re.search(r"setp\.eq\.u32 %p\d+, %r\d+, 0;", ptx)
