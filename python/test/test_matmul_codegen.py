"""What the compiler makes of the blocked matmul of examples/matmul.py for sm_90a (no GPU needed):
the facts behind its speed, each of which a regression would silently undo.

- The K loop's loads are 16 bytes wide for both operands: B's contiguity survives `% N` (axis info
  of a remainder by a divisible-by-16 scalar), and A keeps its own coalesced layout instead of
  inheriting the store layout of C through the row offsets they share (convert-to-gpu).
- The loop advances one pointer per 16-byte vector, not one per element (the emitter's register
  demand), and no thread loads another's elements: A keeps a layout of its own instead of the one
  derived from C's 128-wide layout, which left half the lanes holding copies (24 copies per thread
  instead of 16; measured 296.7 against Triton's 250.9 us at 4096^3 before the fix).
- wgmma, a pipelined cp.async K loop, and .maxnreg (without it ptxas caps registers for full
  occupancy and spills the accumulator).
"""

import importlib.util
import os
import re
import sys

import pytest

import tritium

HERE = os.path.dirname(os.path.abspath(__file__))


def _compile():
    examples = os.path.normpath(os.path.join(HERE, "..", "..", "examples"))
    if examples not in sys.path:  # the example imports its neighbour _bench.py
        sys.path.append(examples)
    path = os.path.join(examples, "matmul.py")
    spec = importlib.util.spec_from_file_location("example_matmul", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
           "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32"}
    return tritium.compile(
        mod.matmul_kernel, signature=sig, target="sm_90a", num_warps=4, num_stages=4,
        use_cache=False,
        constexprs={"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "stride_ak": 1,
                    "stride_bn": 1, "stride_cn": 1},
        divisible_by_16=["a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bk",
                         "stride_cm"])


def test_matmul_codegen_for_sm90a():
    k = _compile()
    gir, ptx = k.asm["gir"], k.asm["ptx"]
    loop = next(line for line in gir.splitlines() if "scf.for" in line and "!tt.ptr<f16>" in line)
    a_layout = re.search(r"tensor<128x64x!tt\.ptr<f16>, #ttg\.blocked<\{sizePerThread = \[([0-9, ]+)\]",
                         loop)
    b_layout = re.search(r"tensor<64x128x!tt\.ptr<f16>, #ttg\.blocked<\{sizePerThread = \[([0-9, ]+)\]",
                         loop)
    assert a_layout and a_layout.group(1) == "1, 8", loop
    assert b_layout and b_layout.group(1) == "1, 8", loop
    assert "ttng.warp_group_dot" in gir and "async = true" in gir
    body = ptx[ptx.index("$L_for_body"):]
    body = body[:body.index("$L_for_end")]
    copies = [line for line in body.splitlines() if "cp.async." in line and "shared.global" in line]
    assert copies and all("cp.async.cg.shared.global" in c and "], 16," in c for c in copies), copies
    # 128x64 + 64x128 fp16 per stage over 128 threads: 16 vectors of 16 bytes each, no copies.
    assert len(copies) == 16, len(copies)
    assert body.count("wgmma.mma_async") == 8
    # One advanced pointer per vector, far from one per element (128 per operand); the wgmma
    # descriptors of the K steps (64-bit adds of small constants to the operand's base
    # descriptor, all before the fence) are not pointers.
    fence = body.index("wgmma.fence")
    descs = re.findall(r"add\.s64 (%rd\d+), %rd\d+, \d+;", body[:fence])
    pointer_adds = body.count("add.s64") - len(descs)
    assert 0 < len(descs) < 2 * body.count("wgmma.mma_async"), descs
    assert pointer_adds <= 16, pointer_adds
    assert ".maxnreg 255" in ptx


@pytest.mark.parametrize("tma", [True, False])
def test_persistent_descriptor_matmul_k_loop_for_sm90a(tma, monkeypatch):
    """The persistent TensorDescriptor matmul (bench_matmul_persistent.py). With TMA (the
    default on sm_90a) each K iteration is one mbarrier wait and one cp.async.bulk.tensor a
    tile, issued by one thread, reading two tensor maps passed after the arguments. Without
    (TRITIUM_DISABLE_PASSES=tma) both operands are pipelined cp.async copies (B through a
    transposed view), and the K loop's addresses are the hoisted row pointers plus one shifted
    column offset. Either way no 64-bit multiply in the loop (ptxas made each one an IMAD.WIDE
    plus register moves: 205 SASS instructions against 115)."""
    import torch  # noqa: PLC0415
    sys.path.insert(0, os.path.normpath(os.path.join(HERE, "..", "..", "benchmarks")))
    import bench_matmul_persistent as bm  # noqa: PLC0415
    from tritium.compiler import compiler as _compiler  # noqa: PLC0415
    if tma:
        monkeypatch.delenv("TRITIUM_DISABLE_PASSES", raising=False)
    else:
        monkeypatch.setenv("TRITIUM_DISABLE_PASSES", "tma")
    kernel, Desc = bm.build("tritium")
    M = N = K = 4096
    a, bt, c = (torch.empty(4096, 4096, dtype=torch.float16) for _ in range(3))
    args = [Desc(a, [M, K], [K, 1], [128, 64]), Desc(bt, [N, K], [K, 1], [256, 64]),
            Desc(c, [M, N], [N, 1], [128, 256]), M, N, K]
    cx = dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8, NUM_SMS=132)
    key, params, _ = kernel.specialize(kernel._bind(tuple(args), cx))
    k = _compiler.compile_gpu(kernel, params, key, num_warps=8, num_stages=3, target="sm_90a",
                              use_cache=False, bounds_check=False)
    ptx = k.asm["ptx"]
    loops = re.findall(r"(\$L_for_body_\d+):\n(.*?)\$L_for_end", ptx, re.S)
    inner = [body for _, body in loops if "wgmma.mma_async" in body]
    assert len(inner) == 1, [name for name, _ in loops]
    body = inner[0]
    copies = [line for line in body.splitlines() if "cp.async.cg.shared.global" in line]
    bulk = [line for line in body.splitlines() if "cp.async.bulk.tensor.2d" in line]
    if tma:
        assert len(copies) == 0 and len(bulk) == 2, body
        assert "mbarrier.try_wait.parity" in body
        maps = k.metadata["tensor_maps"]
        # a_desc's and b_desc's base arguments; c_desc's for the epilogue's TMA store
        assert sorted(m[0] for m in maps) == [0, 4, 8]
        # The epilogue: the tile to shared memory in the box layout (128 x 64 a box, 128-byte
        # swizzle), a fence for the async proxy, a barrier, then thread 0's four bulk copies,
        # one commit, and a wait for their reads only.
        epilogue = ptx[ptx.index("$L_for_end", ptx.index(body)):]
        stores = re.findall(r"cp\.async\.bulk\.tensor\.2d\.global\.shared::cta\.bulk_group "
                            r"\[%rd\d+, \{%r\d+, %r\d+\}\], \[%r\d+\]", epilogue)
        assert len(stores) == 4, epilogue
        first = epilogue.index(stores[0])
        assert -1 < epilogue.rfind("fence.proxy.async.shared::cta", 0, first) \
            < epilogue.rfind("bar.sync 0", 0, first)
        assert epilogue.count("cp.async.bulk.commit_group") == 1
        assert "cp.async.bulk.wait_group.read 0" in epilogue
        assert "st.global" not in epilogue
        assert [m[2 + 4 * 2:2 + 4 * 2 + 2] for m in maps if m[0] == 8] == [[128, 64]]
        assert ".param .align 64 .b8 matmul_persistent_tmap_1[128]" in ptx
        # the element the launcher maps a tensor without elements onto: 16 zeros, 16 ones
        fill = "{" + ", ".join(["0"] * 16 + ["255"] * 16) + "}"
        assert f".visible .global .align 16 .b8 tritium_tma_fill[32] = {fill};" in ptx
    else:
        assert len(copies) == 12 and all("], 16," in line for line in copies), copies
        assert not bulk and not k.metadata.get("tensor_maps")
        assert "tritium_tma_fill" not in ptx
    assert "mul.lo.s64" not in body and "mul.wide" not in body, body
    assert "ld.global" not in body
