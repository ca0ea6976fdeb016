"""The GPU compile's last IR (layouts, pipelined and staged loops, prefetched and versioned row
loops, shared memory allocated, barriers inserted) run by the CPU executor beside the tile IR
the CPU path runs, on the kernels users compile most: the tutorial matmul with ragged M, N and
K (and its block-pointer form), the attention forward (causal and not) and backward, layer norm
forward and backward, softmax, dropout (bit for bit: Philox is integer arithmetic). No GPU
needed: a GPU pass that changes what a kernel computes shows here, before it reaches a GPU (what
the PTX emitter makes of the IR is the GPU tests' part). The two differ only by rounding (fused
multiply-adds, the order of a dot's sums)."""

import copy
import importlib.util
import os
import sys

import numpy as np
import pytest

from tritium.errors import load_C
import tritium
import _dot_kernels

C = load_C()
HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.abspath(os.path.join(HERE, "..", "..", "examples"))
if EXAMPLES not in sys.path:
    sys.path.append(EXAMPLES)  # the examples import their helpers (_bench.py)


def _example(name):
    spec = importlib.util.spec_from_file_location(f"_ex_{name}", os.path.join(EXAMPLES, f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _sig(kernel, constexprs, types):
    """The signature of `kernel`'s runtime parameters: types[name], else i32."""
    return {p.name: types.get(p.name, "i32") for p in kernel.params if p.name not in constexprs}


def _both(kernel, grid, make_args, outputs, constexprs, types, target, num_warps, num_stages,
          divisible=()):
    """Runs the tile IR (CPU path) and the GPU compile's IR for `target` on the executor, each
    on fresh copies of make_args() (outputs poisoned with NaN); returns both runs' `outputs`."""
    ref = make_args()
    kernel.cache.clear()
    kernel[grid](*ref, **constexprs)
    tk = next(iter(kernel.cache.values()))
    # Integers equal to 1 were specialized away by the CPU launch (as Triton does): the GPU
    # compile takes them as the same constants.
    runtime = [p.name for p in kernel.params if p.name not in constexprs]
    cx = dict(constexprs)
    for i, name in enumerate(runtime):
        if name not in tk.arg_names:
            cx[name] = ref[i]
    ck = tritium.compile(kernel, signature=_sig(kernel, cx, types), constexprs=cx,
                         target=target, num_warps=num_warps, num_stages=num_stages,
                         use_cache=False, divisible_by_16=list(divisible))
    gk = copy.copy(tk)
    gk.module = C.parse_module(ck.asm["gir"], "<gir>")
    got = make_args()
    gk[grid](*[a for n, a in zip(runtime, got) if n in tk.arg_names])
    return [ref[i] for i in outputs], [got[i] for i in outputs], ck.asm["gir"]


def _close(want, got, rel):
    for w, g in zip(want, got):
        w, g = np.asarray(w, np.float64), np.asarray(g, np.float64)
        assert not np.isnan(g).any()
        np.testing.assert_allclose(g, w, rtol=0, atol=rel * max(np.abs(w).max(), 1.0))


TARGETS = ["sm_90a", "sm_80"]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("shape,block,warps,stages", [
    ((100, 72, 200), (64, 64, 32), 4, 3),
    ((128, 256, 160), (64, 128, 64), 8, 4),
    ((37, 19, 50), (16, 16, 16), 1, 2),
])
def test_matmul(target, shape, block, warps, stages):
    mm = _example("matmul")
    M, N, K = shape
    BM, BN, BK = block
    rng = np.random.default_rng(M + N + K)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)

    def args():
        c = np.full((M, N), np.nan, np.float16)
        return [a, b, c, M, N, K, K, 1, N, 1, N, 1]
    grid = (-(-M // BM) * -(-N // BN),)
    cx = dict(BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, GROUP_M=4)
    want, got, gir = _both(mm.matmul_kernel, grid, args, [2], cx,
                           {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16"}, target, warps,
                           stages, divisible=["a_ptr", "b_ptr", "c_ptr"])
    assert "ttg.async_copy_global_to_local" in gir
    _close(want, got, 1e-2)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("D,block,warps,stages", [(64, (64, 64), 4, 3), (64, (128, 64), 8, 2),
                                                  (128, (64, 32), 4, 2)])
def test_attention_forward(target, causal, D, block, warps, stages):
    import _attention_kernels as fwd
    H, N = 2, 200
    BM, BN = block
    rng = np.random.default_rng(D + N + causal)
    q, k, v = [(rng.standard_normal((1, H, N, D)) * 0.5).astype(np.float16) for _ in range(3)]
    s = N * D

    def args():
        o = np.full((1, H, N, D), np.nan, np.float16)
        return [q, k, v, o, 0.125, H, N, H * s, s, D, H * s, s, D, H * s, s, D, H * s, s, D]
    cx = dict(HEAD_DIM=D, BLOCK_M=BM, BLOCK_N=BN, CAUSAL=causal, M=None, STORE_M=False)
    types = {"Q": "*fp16", "K": "*fp16", "V": "*fp16", "Out": "*fp16", "sm_scale": "fp32"}
    want, got, gir = _both(fwd.attn_fwd, (-(-N // BM), H), args, [3], cx, types, target, warps,
                           stages, divisible=["Q", "K", "V", "Out"])
    assert ("ttng.warp_group_dot" in gir) == (target == "sm_90a")
    assert "ttg.async_copy_global_to_local" in gir
    # split-masked-loops: the key blocks whose mask is all true (below the ragged end and,
    # causal, the diagonal) run in a loop of their own, without the select.
    loops = gir.split("scf.for")[1:]
    assert len(loops) == 2, gir
    body = loops[0][:loops[0].index("scf.yield")]
    assert not [line for line in body.splitlines() if "arith.select" in line and "tensor<" in line]
    _close(want, got, 1e-2)


@pytest.mark.parametrize("transpose_loaded", [False, True])
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("causal", [False, True])
def test_attention_backward_dq(target, causal, transpose_loaded):
    import _attention_bwd_kernels as bwd
    D, N, H, BM, BN, W, S = 64, 200, 2, 64, 64, 4, 2
    rng = np.random.default_rng(7 + causal)
    q, k, v, do = [(rng.standard_normal((1, H, N, D)) * 0.5).astype(np.float16) for _ in range(4)]
    M = rng.standard_normal((H, N)).astype(np.float32) + 3
    delta = rng.standard_normal((H, N)).astype(np.float32)

    def args():
        dq = np.full((1, H, N, D), np.nan, np.float16)
        return [q, k, v, do, dq, M, delta, 0.125, H, N, H * N * D, N * D, D]
    cx = dict(HEAD_DIM=D, BLOCK_M=BM, BLOCK_N=BN, CAUSAL=causal,
              TRANSPOSE_LOADED=transpose_loaded)
    types = {"Q": "*fp16", "K": "*fp16", "V": "*fp16", "DO": "*fp16", "DQ": "*fp16",
             "M": "*fp32", "Delta": "*fp32", "sm_scale": "fp32"}
    want, got, gir = _both(bwd.attn_bwd_dq, (-(-N // BM), H), args, [4], cx, types, target, W, S,
                           divisible=["Q", "K", "V", "DO", "DQ", "M", "Delta"])
    # K^T and V^T pipelined; the tutorial form reads K^T's buffers both ways.
    assert ("ttg.memdesc_trans" in gir) == transpose_loaded
    _close(want, got, 1e-2)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("causal", [False, True])
def test_attention_backward_dkdv_transposed_loads(target, causal):
    import _attention_bwd_kernels as bwd
    D, N, H, BM, BN, W, S = 64, 200, 2, 32, 64, 4, 2
    rng = np.random.default_rng(11 + causal)
    q, k, v, do = [(rng.standard_normal((1, H, N, D)) * 0.5).astype(np.float16) for _ in range(4)]
    M = rng.standard_normal((H, N)).astype(np.float32) + 3
    delta = rng.standard_normal((H, N)).astype(np.float32)

    def args():
        dk = np.full((1, H, N, D), np.nan, np.float16)
        dv = np.full((1, H, N, D), np.nan, np.float16)
        return [q, k, v, do, dk, dv, M, delta, 0.125, H, N, H * N * D, N * D, D]
    cx = dict(HEAD_DIM=D, BLOCK_M=BM, BLOCK_N=BN, CAUSAL=causal, TRANSPOSE_LOADED=True)
    types = {"Q": "*fp16", "K": "*fp16", "V": "*fp16", "DO": "*fp16", "DK": "*fp16",
             "DV": "*fp16", "M": "*fp32", "Delta": "*fp32", "sm_scale": "fp32"}
    want, got, gir = _both(bwd.attn_bwd_dkdv, (-(-N // BN), H), args, [4, 5], cx, types, target,
                           W, S, divisible=["Q", "K", "V", "DO", "DK", "DV", "M", "Delta"])
    # Q^T and dO: each one set of buffers per loop, read as loaded and through the view.
    assert gir.count("ttg.memdesc_trans") >= 2, gir
    _close(want, got, 1e-2)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("n_cols,block", [(300, 128), (1000, 1024)])
def test_layer_norm_forward_and_backward(target, n_cols, block):
    ln = _example("layer_norm")
    rows = 37
    rng = np.random.default_rng(n_cols)
    x = rng.standard_normal((rows, n_cols)).astype(np.float32)
    w = rng.standard_normal(n_cols).astype(np.float32)
    b = rng.standard_normal(n_cols).astype(np.float32)
    dy = rng.standard_normal((rows, n_cols)).astype(np.float32)

    def fwd_args():
        y = np.full_like(x, np.nan)
        return [x, y, w, b, np.full(rows, np.nan, np.float32), np.full(rows, np.nan, np.float32),
                n_cols, n_cols, 1e-5]
    f32 = "*fp32"
    types = {n: f32 for n in ("x_ptr", "y_ptr", "w_ptr", "b_ptr", "mean_ptr", "rstd_ptr", "dy_ptr",
                              "dx_ptr", "part_dw_ptr", "part_db_ptr")}
    types["eps"] = "fp32"
    want, got, _ = _both(ln.layer_norm_fwd_kernel, (rows,), fwd_args, [1, 4, 5],
                         dict(BLOCK_SIZE=block), types, target, 4, 3)
    _close(want, got, 1e-5)
    mean, rstd = want[1], want[2]
    progs = 8
    big = 1 << (n_cols - 1).bit_length()

    def bwd_args(in_place=False):
        dx = dy.copy() if in_place else np.full_like(x, np.nan)
        return [x, dx if in_place else dy, dx, w, mean, rstd,
                np.full((progs, n_cols), np.nan, np.float32),
                np.full((progs, n_cols), np.nan, np.float32), n_cols, rows, n_cols]
    # The row loop stores dX: the GPU IR versions it on a check that the stores cannot reach
    # the rows it loads ahead; dX over dY (in place) takes the loop as written.
    for in_place in (False, True):
        want, got, gir = _both(ln.layer_norm_bwd_dx_kernel, (progs,),
                               lambda: bwd_args(in_place), [2, 6, 7], dict(BLOCK_SIZE=big),
                               types, target, 8, 1)
        assert "prefetched = " in gir and "scf.if" in gir  # versioned, rows a step ahead
        _close(want, got, 1e-4)


@pytest.mark.parametrize("target", TARGETS)
def test_block_pointer_matmul(target):
    # tl.make_block_ptr / tl.advance with boundary_check: masked loads after the GPU passes.
    bp = _example("block_ptr_matmul")
    M, N, K, BM, BN, BK = 72, 40, 100, 32, 32, 32
    rng = np.random.default_rng(3)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)

    def args():
        return [a, b, np.full((M, N), np.nan, np.float16), M, N, K, K, 1, N, 1, N, 1]
    want, got, gir = _both(bp.block_ptr_matmul_kernel, (-(-M // BM), -(-N // BN)), args, [2],
                           dict(BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK),
                           {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16"}, target, 4, 3,
                           divisible=["a_ptr", "b_ptr", "c_ptr"])
    _close(want, got, 1e-2)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("n_cols,warps", [(781, 4), (3000, 8)])
def test_softmax(target, n_cols, warps):
    sm = _example("fused_softmax")
    rows = 9
    x = np.random.default_rng(n_cols).standard_normal((rows, n_cols)).astype(np.float32)
    block = 1 << (n_cols - 1).bit_length()

    def args():
        return [np.full_like(x, np.nan), x, n_cols, n_cols, n_cols]
    want, got, _ = _both(sm.softmax_kernel, (rows,), args, [0], dict(BLOCK=block),
                         {"out_ptr": "*fp32", "in_ptr": "*fp32"}, target, warps, 3)
    _close(want, got, 1e-6)


@pytest.mark.parametrize("target", TARGETS)
def test_dropout_is_bit_exact(target):
    # tl.rand's Philox stream: integer arithmetic, the same bits on both levels.
    dr = _example("dropout")
    n = 5000
    x = (np.random.default_rng(0).standard_normal(n) + 3).astype(np.float32)

    def args():
        return [x, np.full_like(x, np.nan), n, 0.3, 1234]
    want, got, _ = _both(dr.seeded_dropout_kernel, (-(-n // 1024),), args, [1],
                         dict(BLOCK=1024), {"x_ptr": "*fp32", "out_ptr": "*fp32", "p": "fp32"},
                         target, 4, 3)
    np.testing.assert_array_equal(got[0], want[0])


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("shape,block,warps,stages,trans_fn", [
    ((100, 72, 200), (64, 64, 32), 4, 3, True),
    ((128, 256, 160), (64, 128, 64), 8, 4, False),
    ((37, 19, 50), (16, 16, 16), 1, 2, False),
])
def test_matmul_transposed_operand(target, shape, block, warps, stages, trans_fn):
    # tl.dot(a, b.T) with b loaded N x K: B is pipelined like A (cp.async into buffers that hold
    # the tile as loaded, read through a ttg.memdesc_trans view), not loaded in the iteration.
    M, N, K = shape
    BM, BN, BK = block
    rng = np.random.default_rng(M * N + K)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((N, K)).astype(np.float16)

    def args():
        return [a, b, np.full((M, N), np.nan, np.float16), M, N, K]
    want, got, gir = _both(_dot_kernels.matmul_bt_kernel, (-(-M // BM), -(-N // BN)), args, [2],
                           dict(BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, TRANS_FN=trans_fn),
                           {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16"}, target, warps,
                           stages, divisible=["a_ptr", "b_ptr", "c_ptr"])
    loop = gir[gir.index("scf.for"):]
    assert "ttg.memdesc_trans" in loop and "tt.trans" not in loop, gir
    assert " tt.load " not in loop, gir
    assert gir.count("ttg.async_copy_global_to_local") == 2 * stages, gir
    np.testing.assert_allclose(want[0].astype(np.float32), (a.astype(np.float32) @
                                                            b.astype(np.float32).T),
                               rtol=2e-2, atol=2e-2)
    _close(want, got, 1e-2)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("n_m,block_m,warps,stages", [(200, 64, 4, 3), (64, 32, 4, 2)])
def test_one_load_read_as_loaded_and_transposed(target, n_m, block_m, warps, stages):
    BN, D = 64, 64
    rng = np.random.default_rng(n_m)
    k = (rng.standard_normal((BN, D)) / 4).astype(np.float16)
    q = (rng.standard_normal((n_m, D)) / 4).astype(np.float16)

    def args():
        return [k, q, np.full((BN, D), np.nan, np.float32), n_m]
    want, got, gir = _both(_dot_kernels.dk_like_kernel, (1,), args, [2],
                           dict(BLOCK_N=BN, BLOCK_M=block_m, D=D),
                           {"k_ptr": "*fp16", "q_ptr": "*fp16", "dk_ptr": "*fp32"}, target, warps,
                           stages, divisible=["k_ptr", "q_ptr", "dk_ptr"])
    loop = gir[gir.index("scf.for"):]
    # The Q^T tile: one set of buffers, read directly and through the view.
    assert "ttg.memdesc_trans" in loop and " tt.load " not in loop, gir
    assert gir.count("ttg.async_copy_global_to_local") == stages, gir
    ref = (k.astype(np.float32) @ q.astype(np.float32).T).astype(np.float16).astype(np.float32) \
        @ q.astype(np.float32)
    np.testing.assert_allclose(want[0], ref, rtol=0, atol=2e-2 * np.abs(ref).max())
    _close(want, got, 1e-2)


def _persistent_module():
    sys.path.insert(0, os.path.join(HERE, "..", "..", "benchmarks"))
    import bench_matmul_persistent  # noqa: PLC0415
    return bench_matmul_persistent


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("shape,cfg", [((200, 136, 160), (64, 64, 32, 4, 3)),
                                       ((96, 256, 128), (64, 128, 64, 8, 2))])
def test_persistent_descriptor_matmul(target, shape, cfg):
    # The persistent TensorDescriptor matmul (bench_matmul_persistent.py's source): descriptor
    # loads with every dim bounds-checked, B given N x K and transposed in the kernel, a tile loop
    # around the K loop. Its row pointers and bounds are computed once per tile (before the
    # pipelined K loop), its columns per iteration.
    bm = _persistent_module()
    kernel, Desc = bm.build("tritium")
    M, N, K = shape
    BM, BN, BK, W, S = cfg
    rng = np.random.default_rng(M + N + K)
    a = rng.standard_normal((M, K)).astype(np.float16)
    bt = rng.standard_normal((N, K)).astype(np.float16)
    tiles = -(-M // BM) * -(-N // BN)
    programs = max(1, tiles // 2)  # several tiles per program

    def run(module=None):
        c = np.full((M, N), np.nan, np.float16)
        args = [Desc(a, [M, K], [K, 1], [BM, BK]), Desc(bt, [N, K], [K, 1], [BN, BK]),
                Desc(c, [M, N], [N, 1], [BM, BN]), M, N, K]
        cx = dict(BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, GROUP_M=2, NUM_SMS=programs)
        if module is None:
            kernel[(programs,)](*args, **cx)
            return c, args, cx
        tk = next(iter(kernel.cache.values()))
        gk = copy.copy(tk)
        gk.module = C.parse_module(module, "<gir>")
        # The tile kernel takes the specialisation's runtime values (descriptors flattened).
        _, _, runtime = kernel.specialize(kernel._bind(tuple(args), cx))
        gk[(programs,)](*runtime)
        return c, args, cx
    kernel.cache.clear()
    want, args, cx = run()
    from tritium.compiler import compiler as _compiler  # noqa: PLC0415
    key, params, _ = kernel.specialize(kernel._bind(tuple(args), cx))
    ck = _compiler.compile_gpu(kernel, params, key, num_warps=W, num_stages=S, target=target,
                               use_cache=False, bounds_check=False)
    gir = ck.asm["gir"]
    inner = gir[gir.index("scf.for", gir.index("scf.for") + 1):]
    assert "ttg.memdesc_trans" in inner
    # On sm_90a the A and B blocks are TMA copies (two tensor maps after the arguments), the
    # K loop waits on mbarriers; the executor runs those ops too (the result is checked below).
    tma = target == "sm_90a"
    assert ("ttng.async_tma_copy_global_to_local" in inner) == tma, inner
    assert ("ttg.async_copy_global_to_local" in inner) != tma
    # ... and c's tile leaves through shared memory as a TMA store (lower-tma-stores) where its
    # row stride is known to be a 16-byte multiple (N specialised as divisible by 16): a third
    # tensor map, and the executor runs that op too. Otherwise the masked stores.
    tma_store = tma and N % 16 == 0
    assert ("ttng.async_tma_copy_local_to_global" in gir) == tma_store
    assert len(ck.metadata.get("tensor_maps", [])) == (2 + tma_store if tma else 0)
    # Nothing in the K loop multiplies a 64-bit row offset: hoisted to the tile loop.
    k_loop = inner[:inner.index("scf.yield")]
    assert "arith.muli" not in k_loop or "xi64" not in "".join(
        line for line in k_loop.splitlines() if "arith.muli" in line), k_loop
    got, _, _ = run(gir)
    np.testing.assert_allclose(want.astype(np.float32), a.astype(np.float32) @
                               bt.astype(np.float32).T, rtol=2e-2, atol=5e-2)
    _close([want], [got], 1e-2)
