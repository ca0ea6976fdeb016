"""Shared memory as values (memdescs, cp.async, ldmatrix) end to end, with
hand-written GPU IR kernels: a tile goes global -> shared (ttg.local_alloc of
a loaded tensor, or ttg.async_copy_global_to_local) -> registers in another
layout (ttg.local_load; mma operand layouts through ldmatrix) -> global, and
must come back equal to the input.

The CPU tests compile every kernel for sm_80 and sm_90a (compile_to_ptx with
gpu_ir=True, ptxas where installed) and run its IR on the CPU executor; the
tests marked gpu launch the PTX (skipped without a GPU)."""

import numpy as np
import pytest

from tritium.errors import load_C

C = load_C()
pytestmark = pytest.mark.skipif(not hasattr(C, "compile_to_ptx"),
                                reason="this _C has no GPU compile")

NUM_WARPS = 4
BLOCKED8 = ("#ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], "
            "warpsPerCTA = [4, 1], order = [1, 0]}>")
BLOCKED4 = ("#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], "
            "warpsPerCTA = [4, 1], order = [1, 0]}>")
MMA41 = ("#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [4, 1], "
         "instrShape = [16, 8]}>")
MMA22 = ("#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [2, 2], "
         "instrShape = [16, 8]}>")
DOT_A = f"#ttg.dot_op<{{opIdx = 0, parent = {MMA41}, kWidth = 2}}>"
DOT_B = f"#ttg.dot_op<{{opIdx = 1, parent = {MMA22}, kWidth = 2}}>"


def swizzled(vec, per_phase, max_phase, order=(1, 0)):
    return (f"#ttg.swizzled_shared<{{vec = {vec}, perPhase = {per_phase}, "
            f"maxPhase = {max_phase}, order = [{order[0]}, {order[1]}]}}>")


NVMMA128 = ("#ttg.nvmma_shared<{swizzlingByteWidth = 128, transposed = false, "
            "elementBitWidth = 16}>")


def pointers(name, base, layout, rows, cols, elem):
    """Ops making %{name}_p = base + row * cols + col (and %{name}_rows)."""
    t = f"tensor<{rows}x{cols}"
    return f"""
  %{name}_r = tt.make_range {{end = {rows}, start = 0}} : tensor<{rows}xi32, #ttg.slice<{{dim = 1, parent = {layout}}}>>
  %{name}_rows = tt.expand_dims %{name}_r {{axis = 1}} : tensor<{rows}x1xi32, {layout}>
  %{name}_cs = arith.constant {{value = {cols}}} : tensor<{rows}x1xi32, {layout}>
  %{name}_rs = arith.muli %{name}_rows, %{name}_cs : tensor<{rows}x1xi32, {layout}>
  %{name}_c = tt.make_range {{end = {cols}, start = 0}} : tensor<{cols}xi32, #ttg.slice<{{dim = 0, parent = {layout}}}>>
  %{name}_cols = tt.expand_dims %{name}_c {{axis = 0}} : tensor<1x{cols}xi32, {layout}>
  %{name}_rb = tt.broadcast %{name}_rs : {t}xi32, {layout}>
  %{name}_cb = tt.broadcast %{name}_cols : {t}xi32, {layout}>
  %{name}_off = arith.addi %{name}_rb, %{name}_cb : {t}xi32, {layout}>
  %{name}_sp = tt.splat %{base} : {t}x!tt.ptr<{elem}>, {layout}>
  %{name}_p = tt.addptr %{name}_sp, %{name}_off : {t}x!tt.ptr<{elem}>, {layout}>"""


def round_trip_ir(rows, cols, elem, shared, load_layout, via_async, masked=False):
    """in -> shared (layout `shared`) -> registers (`load_layout`) -> out.
    Masked: only rows below %n are copied; the others read back as 0."""
    g = BLOCKED8
    t = f"tensor<{rows}x{cols}x{elem}"
    md = f"!ttg.memdesc<{rows}x{cols}x{elem}, {shared}, mutable>"
    if via_async:
        mask = ""
        if masked:
            mask = f"""
  %ns = tt.splat %n : tensor<{rows}x1xi32, {g}>
  %m1 = arith.cmpi %a_rows, %ns {{predicate = "slt"}} : tensor<{rows}x1xi1, {g}>
  %m = tt.broadcast %m1 : tensor<{rows}x{cols}xi1, {g}>"""
        fill = f"""{mask}
  %buf = ttg.local_alloc : {md}
  %tok = ttg.async_copy_global_to_local %a_p, %buf{", %m" if masked else ""} : !ttg.async.token
  %grp = ttg.async_commit_group %tok : !ttg.async.token
  %done = ttg.async_wait %grp {{num = 0}} : !ttg.async.token
  %y = ttg.local_load %buf, %done : {t}, {load_layout}>"""
    else:
        fill = f"""
  %x = tt.load %a_p : {t}, {g}>
  %buf = ttg.local_alloc %x : {md}
  %y = ttg.local_load %buf : {t}, {load_layout}>"""
    return f"""tt.func @round_trip(%in: !tt.ptr<{elem}> {{tt.divisibility = 16}}, %out: !tt.ptr<{elem}> {{tt.divisibility = 16}}, %n: i32) attributes {{kernel = true, num_warps = {NUM_WARPS}}} {{{pointers("a", "in", g, rows, cols, elem)}{pointers("o", "out", g, rows, cols, elem)}{fill}
  %z = ttg.convert_layout %y : {t}, {g}>
  tt.store %o_p, %z
  tt.return
}}
"""


# (id, rows, cols, elem, shared layout, load layout, async copy, what the PTX must use)
CASES = [
    ("async-swizzled-ldmatrix-a", 128, 32, "f16", swizzled(8, 2, 4), DOT_A, True,
     ["cp.async.cg.shared.global", "ldmatrix.sync.aligned.m8n8.x4.shared.b16"]),
    ("async-nvmma-ldmatrix-a", 64, 64, "bf16", NVMMA128, DOT_A, True,
     ["cp.async.cg.shared.global", "ldmatrix.sync.aligned.m8n8.x4.shared.b16"]),
    ("async-ldmatrix-trans-b", 32, 32, "f16", swizzled(8, 1, 8), DOT_B, True,
     ["cp.async.cg.shared.global", "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"]),
    ("alloc-k-major-ldmatrix-a", 64, 32, "f16", swizzled(8, 1, 8, order=(0, 1)), DOT_A, False,
     ["st.shared", "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"]),
    ("alloc-swizzled-blocked", 128, 32, "f16", swizzled(8, 2, 4), BLOCKED4, False,
     ["st.shared.v4.b32", "ld.shared.v2.b32"]),
    ("async-f32-plain-blocked", 32, 64, "f32", swizzled(1, 1, 1), BLOCKED4, True,
     ["cp.async.cg.shared.global", "ld.shared.v4.f32"]),
    ("async-vec4-no-ldmatrix", 64, 64, "f16", swizzled(4, 1, 8), DOT_A, True,
     ["cp.async.ca.shared.global", "ld.shared.b32"]),
]

NP_TYPES = {"f16": np.float16, "bf16": None, "f32": np.float32}


def compile_case(ir, target):
    m = C.parse_module(ir, "round_trip.tir")
    return C.compile_to_ptx(m, "round_trip", target, NUM_WARPS, 1, gpu_ir=True,
                            ptxas=C.ptxas_path() is not None)


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_round_trip_compiles(case, target):
    _, rows, cols, elem, shared, load_layout, via_async, uses = case
    r = compile_case(round_trip_ir(rows, cols, elem, shared, load_layout, via_async), target)
    for instr in uses:
        assert instr in r["ptx"], f"{instr} missing from the PTX"
    if "ldmatrix" not in " ".join(uses):
        assert "ldmatrix" not in r["ptx"]
    assert r["shared_bytes"] >= rows * cols * (4 if elem == "f32" else 2)
    if C.ptxas_path() is not None:
        assert r["cubin"][:4] == b"\x7fELF", r["ptxas_log"]


def test_masked_round_trip_compiles():
    ir = round_trip_ir(128, 32, "f16", swizzled(8, 2, 4), DOT_A, True, masked=True)
    ptx = compile_case(ir, "sm_80")["ptx"]
    assert "selp.u32" in ptx and ", 16, %r" in ptx  # src-size 16 or 0


@pytest.mark.parametrize("case", [c for c in CASES if c[3] != "bf16"][:3],
                         ids=lambda c: c[0])
def test_round_trip_on_the_executor(case):
    """The IR itself (what the GPU test runs) on the CPU executor."""
    _, rows, cols, elem, shared, load_layout, via_async, _ = case
    m = C.parse_module(round_trip_ir(rows, cols, elem, shared, load_layout, via_async))
    x = np.random.default_rng(0).standard_normal((rows, cols)).astype(NP_TYPES[elem])
    out = np.full_like(x, np.nan)
    C.execute(m, "round_trip", (1, 1, 1),
              [C.ExecPointer(x.ctypes.data, x.nbytes), C.ExecPointer(out.ctypes.data, out.nbytes),
               rows])
    np.testing.assert_array_equal(out, x)


# ---- on the GPU --------------------------------------------------------------


@pytest.fixture(scope="module")
def gpu():
    torch = pytest.importorskip("torch")
    ok, why = C.cuda_available()
    if not ok:
        pytest.fail(f"torch sees a GPU but tritium's driver loader does not: {why}")
    major, minor = C.device_capability(0)
    target = "sm_90a" if (major, minor) == (9, 0) else f"sm_{major}{minor}"
    return torch, target


def launch_round_trip(gpu, ir, x, n):
    torch, target = gpu
    r = compile_case(ir, target)
    k = C.GpuKernel("round_trip", r["ptx"].encode(), False, r["target"], r["num_warps"],
                    r["shared_bytes"], [tuple(p) for p in r["params"]])
    out = torch.full_like(x, float("nan"))
    k.launch(1, 1, 1, torch.cuda.current_stream().cuda_stream, 0, [x, out, n])
    torch.cuda.synchronize()
    return out


@pytest.mark.gpu
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_round_trip_on_the_gpu(gpu, case):
    torch, _ = gpu
    _, rows, cols, elem, shared, load_layout, via_async, _ = case
    dtype = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}[elem]
    x = torch.randn(rows, cols, device="cuda").to(dtype)
    out = launch_round_trip(gpu, round_trip_ir(rows, cols, elem, shared, load_layout, via_async),
                            x, rows)
    assert torch.equal(out, x)


@pytest.mark.gpu
@pytest.mark.parametrize("n", [0, 1, 77, 128])
def test_masked_async_copy_on_the_gpu(gpu, n):
    """Rows at or past n are not read: cp.async zero-fills them."""
    torch, _ = gpu
    x = torch.randn(128, 32, device="cuda").to(torch.float16)
    ir = round_trip_ir(128, 32, "f16", swizzled(8, 2, 4), DOT_A, True, masked=True)
    out = launch_round_trip(gpu, ir, x, n)
    ref = x.clone()
    ref[n:] = 0
    assert torch.equal(out, ref)
