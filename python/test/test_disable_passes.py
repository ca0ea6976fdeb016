"""TRITIUM_DISABLE_PASSES: the GPU compile leaves out the optimizations it names (a user's
workaround for a pass that miscompiles, and a way to measure what a pass gains). Compiled
without a GPU: each optional pass left out in turn, for sm_90a and sm_80, on kernels that
exercise it (the attention backward's dK/dV loop: a dot loop with vector loads, which the
pipeliner stages; a reducing row loop, which prefetch-loads carries a row ahead; a K loop over
tensor descriptors with a masked result: invariant row offsets, a mask true on a prefix); the GPU
IR shows the pass's work gone and ptxas assembles the PTX. A name the compile
cannot leave out is a clear error, and the setting is part of the cache key."""

import pytest

import tritium
import tritium.language as tl
import _attention_bwd_kernels as bwd
from test_attention_bwd_ptx import HAS_PTXAS, compile_kernel

OPTIONAL = ["prefetch-loads", "remove-layout-conversions", "propagate-layouts", "pipeline",
            "stage-vectors", "hoist-slice", "split-masked-loops", "fuse-multiply-add", "tma",
            "tma-store", "order-warpgroups", "sync-two-stage-dots", "tma-empty-barriers",
            "split-tma-barriers", "gpu-cse", "tma-elect"]


@tritium.jit
def _row_norms(x_ptr, y_ptr, rows, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    for r in range(0, rows):
        x = tl.load(x_ptr + r * n + offs, mask=m, other=0.0)
        s = tl.sum(x * x, axis=0)
        tl.store(y_ptr + r, s * 0.5 + 1.0)


def _dkdv(target):
    return compile_kernel(bwd.attn_bwd_dkdv, "fp16", target,
                          dict(HEAD_DIM=64, BLOCK_M=64, BLOCK_N=128, CAUSAL=False), 8, 2)


@tritium.jit
def _desc_dot(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
              BK: tl.constexpr):
    """A K loop over in-kernel tensor descriptors (row pointers invariant, columns not), whose
    scores are masked past N as attention masks its keys; the result through a descriptor."""
    a_d = tl.make_tensor_descriptor(a_ptr, [M, K], [K, 1], [BM, BK])
    b_d = tl.make_tensor_descriptor(b_ptr, [N, K], [K, 1], [BN, BK])
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        s = tl.dot(a_d.load([0, k]), b_d.load([0, k]).T)
        cols = k + tl.arange(0, BN)
        acc += tl.where(cols[None, :] < N, s, 0.0)
    c_d = tl.make_tensor_descriptor(c_ptr, [M, N], [N, 1], [BM, BN])
    c_d.store([0, 0], acc)


def _desc(target):
    return tritium.compile(_desc_dot, signature={"a_ptr": "*fp16", "b_ptr": "*fp16",
                                                 "c_ptr": "*fp32", "M": "i32", "N": "i32",
                                                 "K": "i32"},
                           constexprs={"BM": 64, "BN": 64, "BK": 64}, target=target,
                           num_warps=4, num_stages=3, use_cache=False,
                           divisible_by_16=["a_ptr", "b_ptr", "c_ptr", "M", "N", "K"])


def _desc8(target):
    """_desc_dot on 8 warps: two warpgroups read the TMA buffers."""
    return tritium.compile(_desc_dot, signature={"a_ptr": "*fp16", "b_ptr": "*fp16",
                                                 "c_ptr": "*fp32", "M": "i32", "N": "i32",
                                                 "K": "i32"},
                           constexprs={"BM": 128, "BN": 64, "BK": 64}, target=target,
                           num_warps=8, num_stages=3, use_cache=False,
                           divisible_by_16=["a_ptr", "b_ptr", "c_ptr", "M", "N", "K"])


@tritium.jit
def _desc_chain(q_ptr, k_ptr, v_ptr, o_ptr, N, D: tl.constexpr, BN: tl.constexpr):
    """Attention's loop without the softmax: K read by the first dot, V by the second."""
    q_d = tl.make_tensor_descriptor(q_ptr, [64, D], [D, 1], [64, D])
    k_d = tl.make_tensor_descriptor(k_ptr, [N, D], [D, 1], [BN, D])
    v_d = tl.make_tensor_descriptor(v_ptr, [N, D], [D, 1], [BN, D])
    q = q_d.load([0, 0])
    acc = tl.zeros((64, D), dtype=tl.float32)
    for n in range(0, N, BN):
        s = tl.dot(q, k_d.load([n, 0]).T)
        p = tl.exp2(s - tl.max(s, 1)[:, None])
        acc = tl.dot(p.to(tl.float16), v_d.load([n, 0]), acc)
    o_d = tl.make_tensor_descriptor(o_ptr, [64, D], [D, 1], [64, D])
    o_d.store([0, 0], acc)


def _chain(target):
    return tritium.compile(_desc_chain, signature={"q_ptr": "*fp16", "k_ptr": "*fp16",
                                                   "v_ptr": "*fp16", "o_ptr": "*fp32",
                                                   "N": "i32"},
                           constexprs={"D": 64, "BN": 64}, target=target, num_warps=4,
                           num_stages=2, use_cache=False,
                           divisible_by_16=["q_ptr", "k_ptr", "v_ptr", "o_ptr", "N"])


def _loop_waits(gir):
    """The mbarrier waits in the first loop's body."""
    body = gir[gir.index("scf.for"):]
    return body[:body.index("scf.yield")].count("ttng.wait_barrier")


def _no_row_offsets_in_loop(gir):
    """No 64-bit multiply in the first loop's body (the descriptors' row offsets, hoisted)."""
    body = gir[gir.index("scf.for"):]
    body = body[:body.index("scf.yield")]
    return not [line for line in body.splitlines() if "arith.muli" in line and "xi64" in line]


def _rows(target):
    return tritium.compile(_row_norms, signature={"x_ptr": "*fp32", "y_ptr": "*fp32",
                                                  "rows": "i32", "n": "i32"},
                           constexprs={"BLOCK": 1024}, target=target, num_warps=4,
                           use_cache=False)


# What each pass leaves in the GPU IR of the kernel that shows it (on the targets it runs for,
# with the passes named third left out of both compiles).
SIGNS = {"prefetch-loads": (_rows, "prefetched ="),
         "pipeline": (_dkdv, "ttg.async_copy_global_to_local"),
         # The pipeliner's step 0: M and Delta through shared memory, two buffers each.
         "stage-vectors": (_dkdv, "memdesc<2x64xf32"),
         "fuse-multiply-add": (_rows, "math.fma"),
         # The descriptors' 64-bit row offsets computed once, before the K loop (where the
         # blocks are masked loads: with TMA there are none).
         "hoist-slice": (_desc, _no_row_offsets_in_loop, "tma"),
         "split-masked-loops": (_desc, lambda gir: "%split" in gir),
         # The descriptors' blocks copied with TMA (sm_90a), as masked loads without.
         "tma": (_desc, "ttng.async_tma_copy_global_to_local", "", ["sm_90a"]),
         # The descriptor's store as a TMA store through shared memory (sm_90a).
         "tma-store": (_desc, "ttng.async_tma_copy_local_to_global", "", ["sm_90a"]),
         # The dK/dV loop (8 warps, 2 stages, four wgmmas): every wgmma retired in its
         # iteration; left out, dV's and dK's stay in flight (sm_90a).
         "sync-two-stage-dots": (_dkdv, lambda gir: "ttng.warp_group_dot" in gir and
                                 "async = true" not in gir, "", ["sm_90a"]),
         # Two warpgroups: the TMA buffers released on empty mbarriers instead of a barrier
         # of the whole block before the copies (sm_90a).
         "tma-empty-barriers": (_desc8, "%empties", "", ["sm_90a"]),
         # K's and V's copies on mbarriers of their own: two waits in the loop, V's just
         # before the second dot (sm_90a).
         "split-tma-barriers": (_chain, lambda gir: _loop_waits(gir) == 2, "", ["sm_90a"])}


def _sign(name):
    """SIGNS[name] as (kernel, sign, passes left out of both compiles, targets)."""
    entry = SIGNS.get(name, (None, None))
    return (entry + ("", ["sm_90a", "sm_80"])[len(entry) - 2:])[:4]


@pytest.mark.parametrize("target", ["sm_90a", "sm_80"])
@pytest.mark.parametrize("name", OPTIONAL)
def test_each_optional_pass_can_be_left_out(name, target, monkeypatch):
    kern, sign, base, targets = _sign(name)
    if base:
        monkeypatch.setenv("TRITIUM_DISABLE_PASSES", base)
    else:
        monkeypatch.delenv("TRITIUM_DISABLE_PASSES", raising=False)
    kernels = (_dkdv, _rows, _desc, _desc8, _chain)
    with_pass = {f: f(target) for f in kernels}
    monkeypatch.setenv("TRITIUM_DISABLE_PASSES", ",".join(n for n in (base, name) if n))
    without = {f: f(target) for f in kernels}
    for f, k in without.items():
        assert k.asm["gir"] != "" and k.asm["ptx"] != ""
        if HAS_PTXAS:
            assert k.asm.get("cubin"), f"{name} left out, {f.__name__}: no cubin"
    if name in SIGNS:
        shows = sign if callable(sign) else (lambda gir: sign in gir)
        if target not in targets:
            assert not shows(with_pass[kern].asm["gir"])
            return
        assert shows(with_pass[kern].asm["gir"])
        assert not shows(without[kern].asm["gir"])
    else:
        # Layout passes: the same kernel, at most other layouts and more conversions.
        assert without[_dkdv].asm["gir"].count("ttg.convert_layout") >= \
            with_pass[_dkdv].asm["gir"].count("ttg.convert_layout")


def test_a_pass_the_compile_needs_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("TRITIUM_DISABLE_PASSES", "prefetch-loads, convert-to-gpu")
    with pytest.raises(tritium.CompilationError,
                       match=r"'convert-to-gpu' is not a pass the GPU compile can leave out; "
                             r"these can: prefetch-loads, remove-layout-conversions"):
        _rows("sm_90a")


def test_the_setting_is_part_of_the_cache_key(monkeypatch, tmp_path):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TRITIUM_DISABLE_PASSES", raising=False)

    def rows():
        return tritium.compile(_row_norms, signature={"x_ptr": "*fp32", "y_ptr": "*fp32",
                                                      "rows": "i32", "n": "i32"},
                               constexprs={"BLOCK": 1024}, target="sm_90a", num_warps=4,
                               use_cache=True)
    first = rows()
    assert "prefetched =" in first.asm["gir"]
    monkeypatch.setenv("TRITIUM_DISABLE_PASSES", "prefetch-loads")
    assert "prefetched =" not in rows().asm["gir"]  # not the entry compiled with the pass
    monkeypatch.delenv("TRITIUM_DISABLE_PASSES")
    assert rows().asm["gir"] == first.asm["gir"]
