"""ptxas's register choice (lib/target/nvidia/register_cap.cpp): given only .maxntid, ptxas often
sizes registers for full occupancy (32 a thread at 4 warps) even when a thread holds hundreds of
values, and spills kilobytes a thread. A kernel that spills that much is assembled again with
.maxnreg (64K registers over the program's threads, at most 255) and keeps that when it spills
less. Measured on the H200 (2026-12-03): a 256x256 bf16 tile copy at 4 warps went from 32
registers and 6 KB of spill stores a thread to 255 and 0.3 KB; Liger's _mask_bwd_kernel of that
shape from 70 to 21 us (Triton: 18). A kernel that loads inside a loop is assembled with the cap
beside the first, and keeps it when it spills no more and leaves as many programs per SM as
ptxas's own choice: ptxas then issues the loop's loads together more often (Liger's tvd: 1.07x ->
1.00x Triton's time). And a kernel at one or two programs per SM whose register count sits at
most 8 above a count at which one more program fits is assembled at that count too, kept where it spills no more (Liger's
GEGLU backward: 66 -> 64 registers, 1 -> 2 programs, 1.09x -> 0.96x Triton's time, the fourteenth
session). Needs ptxas, no GPU."""

import os
import re
import shutil
import subprocess
import sys

import pytest

import tritium
import tritium.language as tl

PTXAS = shutil.which("ptxas") or ("/usr/local/cuda/bin/ptxas"
                                  if os.path.exists("/usr/local/cuda/bin/ptxas") else None)
pytestmark = pytest.mark.skipif(PTXAS is None, reason="ptxas not installed")


@tritium.jit
def tile_copy(a, b, sm, L, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    c = tl.arange(0, BLOCK)
    offs = r[:, None] * sm + c[None, :]
    m = (r[:, None] < L) & (c[None, :] < L)
    x = tl.load(a + offs, mask=m, other=0.0)
    tl.store(b + offs, x, mask=m)


def _compile(block, num_warps, dtype="fp32", target="sm_90a"):
    sig = {"a": f"*{dtype}", "b": f"*{dtype}", "sm": "i32", "L": "i32"}
    return tritium.compile(tile_copy, signature=sig, constexprs={"BLOCK": block}, target=target,
                           num_warps=num_warps, use_cache=False, divisible_by_16=list(sig))


def _header(ptx):
    return ptx[:ptx.index("{")]


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("num_warps", [4, 8])
def test_a_tile_that_spills_gets_the_program_s_registers(target, num_warps):
    k = _compile(256, num_warps, "fp32", target)
    if "n_regs" not in k.metadata:
        pytest.skip("compiled without ptxas")
    # 256x256 fp32 values over 128 or 256 threads: 256-512 a thread. ptxas 13.0 alone keeps 32
    # registers and spills 6.3 KB a thread at 4 warps; the second try has 255 registers.
    assert ".maxnreg 255" in _header(k.asm["ptx"]), _header(k.asm["ptx"])
    assert k.metadata["n_regs"] > 128, k.metadata["ptxas_log"]
    assert k.metadata["n_spills"] < 3000, k.metadata["ptxas_log"]


@pytest.mark.parametrize("block,num_warps,dtype", [(32, 4, "fp32"), (64, 4, "fp32"),
                                                   (64, 8, "bf16"), (256, 16, "bf16")])
def test_a_tile_that_does_not_spill_keeps_ptxas_s_choice(block, num_warps, dtype):
    # 8-128 values a thread that fit, no loop: ptxas's own register count, no .maxnreg.
    k = _compile(block, num_warps, dtype)
    if "n_regs" not in k.metadata:
        pytest.skip("compiled without ptxas")
    assert ".maxnreg" not in _header(k.asm["ptx"])
    assert k.metadata["n_spills"] == 0, k.metadata["ptxas_log"]


@tritium.jit
def row_loop(p, q, g, n, scale, BLOCK: tl.constexpr):
    # Liger's tvd in small: two loads and a store a column block, a row loop.
    row = tl.program_id(0).to(tl.int64)
    p += row * n
    q += row * n
    g += row * n
    for i in range(0, n, BLOCK):
        offs = i + tl.arange(0, BLOCK)
        m = offs < n
        a = tl.load(p + offs, mask=m, other=0.0)
        b = tl.load(q + offs, mask=m, other=0.0)
        tl.store(g + offs, tl.where(a == b, 0.0, tl.where(a > b, 0.5 * scale, -0.5 * scale)), mask=m)


def _compile_loop(block, num_warps):
    sig = {"p": "*fp32", "q": "*fp32", "g": "*fp32", "n": "i32", "scale": "fp32"}
    return tritium.compile(row_loop, signature=sig, constexprs={"BLOCK": block}, target="sm_90a",
                           num_warps=num_warps, use_cache=False,
                           divisible_by_16=["p", "q", "g", "n"])


def _ptxas_use(ptx, tmp_path):
    src = tmp_path / "k.ptx"
    src.write_text(ptx)
    out = subprocess.run([PTXAS, "-arch=sm_90a", "-O3", "-v", str(src), "-o", str(tmp_path / "k.cubin")],
                         capture_output=True, text=True, check=True)
    log = out.stdout + out.stderr
    spills = re.search(r"(\d+) bytes spill stores", log)
    return int(re.search(r"Used (\d+) registers", log).group(1)), int(spills.group(1)) if spills else 0


def _programs_per_sm(threads, regs):
    # What register_cap.cpp's programsPerSM computes: 64K registers, 8 a thread at a time.
    warps = threads // 32
    return min(65536 // (max(8, (regs + 7) // 8 * 8) * 32) // warps, 2048 // threads, 32)


def _step_cap(threads, regs, shared=0):
    # What register_cap.cpp's occupancyStepCap computes: where one or two programs fit per SM,
    # the count (a multiple of 8, at most 8 below `regs`) at which one more fits, or 0.
    warps = threads // 32
    if _programs_per_sm(threads, regs) > 2:
        return 0
    nxt = _programs_per_sm(threads, regs) + 1
    by_shared = 32 if shared <= 0 else min(32, 228 * 1024 // (shared + 1024))
    if nxt > 2048 // threads or nxt > 32 or nxt > by_shared:
        return 0
    cap = 65536 // (nxt * warps * 32) // 8 * 8
    return cap if 8 <= cap < regs and regs - cap <= 8 else 0


def _with_cap(raw, cap):
    return raw.replace(".maxntid", f".maxnreg {cap}\n.maxntid", 1)


@pytest.mark.parametrize("block,num_warps", [(1024, 4), (4096, 8), (16384, 16)])
def test_a_loop_kernel_keeps_the_cap_exactly_where_occupancy_stays(block, num_warps, tmp_path):
    # A kernel that loads in a loop is assembled with and without `.maxnreg` (64K registers over
    # its threads, at most 255); the capped one is kept iff it spills no more and leaves as many
    # programs per SM. Where it is not, the occupancy step may still cap the first (the next
    # test). Checked against fresh ptxas runs of the PTX texts.
    k = _compile_loop(block, num_warps)
    if "n_regs" not in k.metadata:
        pytest.skip("compiled without ptxas")
    threads = num_warps * 32
    cap = min(255, 65536 // threads // 8 * 8)
    ptx = k.asm["ptx"]
    raw = re.sub(r"\n\.maxnreg \d+\n", "\n", ptx, count=1)
    regs0, spills0 = _ptxas_use(raw, tmp_path)
    regs1, spills1 = _ptxas_use(_with_cap(raw, cap), tmp_path)
    keeps = spills1 <= spills0 and _programs_per_sm(threads, regs1) >= _programs_per_sm(threads, regs0)
    assert (f"\n.maxnreg {cap}\n" in _header(ptx)) == keeps, (regs0, spills0, regs1, spills1)
    if keeps:
        assert k.metadata["n_regs"] == regs1
    else:
        _check_step(k, raw, threads, regs0, spills0, tmp_path)


def _check_step(k, raw, threads, regs0, spills0, tmp_path):
    """k (whose PTX without its cap is `raw`, assembling to regs0/spills0) carries the occupancy
    step's cap exactly where it applies: a step exists, and ptxas under it spills no more and
    fits more programs per SM."""
    header = _header(k.asm["ptx"])
    step = _step_cap(threads, regs0)
    stepped = False
    if step:
        regs2, spills2 = _ptxas_use(_with_cap(raw, step), tmp_path)
        stepped = spills2 <= spills0 and \
            _programs_per_sm(threads, regs2) > _programs_per_sm(threads, regs0)
    if stepped:
        assert f"\n.maxnreg {step}\n" in header, (regs0, step, header)
        assert k.metadata["n_regs"] == regs2
    else:
        assert ".maxnreg" not in header, (regs0, step, header)
        assert k.metadata["n_regs"] == regs0


@tritium.jit
def gelu_tanh_grad(dy, x, g, stride, N: tl.constexpr, BLOCK: tl.constexpr):
    # The backward of gelu(x, tanh) * g over one row, written in place (x gets dx, g gets dg):
    # three loads and two stores a column, no loop; Liger's GEGLU backward in shape.
    row = tl.program_id(0).to(tl.int64)
    dy += row * stride
    x += row * stride
    g += row * stride
    offs = tl.arange(0, BLOCK)
    m = offs < N
    d = tl.load(dy + offs, mask=m, other=0.0)
    a = tl.load(x + offs, mask=m, other=0.0)
    b = tl.load(g + offs, mask=m, other=0.0)
    u = 0.7978845608028654 * (a + 0.044715 * a * a * a)
    t = tl.extra.cuda.libdevice.tanh(u)
    gelu = 0.5 * a * (1.0 + t)
    du = 0.7978845608028654 * (1.0 + 3.0 * 0.044715 * a * a)
    da = d * b * (0.5 * (1.0 + t) + 0.5 * a * (1.0 - t * t) * du)
    tl.store(x + offs, da, mask=m)
    tl.store(g + offs, d * gelu, mask=m)


def test_a_kernel_just_above_an_occupancy_step_is_capped_at_it(tmp_path):
    # 11008 fp32 columns over 16 warps: ptxas alone takes 66 registers (one 512-thread program
    # per SM: 72 a thread allocated); at .maxnreg 64 two fit, without spills. On the H200 that
    # took Liger's GEGLU backward from 1.09x to Triton's time (benchmarks/RESULTS.md).
    sig = {"dy": "*fp32", "x": "*fp32", "g": "*fp32", "stride": "i64"}
    k = tritium.compile(gelu_tanh_grad, signature=sig, constexprs={"N": 11008, "BLOCK": 16384},
                        target="sm_90a", num_warps=16, use_cache=False, divisible_by_16=list(sig))
    if "n_regs" not in k.metadata:
        pytest.skip("compiled without ptxas")
    raw = re.sub(r"\n\.maxnreg \d+\n", "\n", k.asm["ptx"], count=1)
    regs0, spills0 = _ptxas_use(raw, tmp_path)
    assert _step_cap(512, regs0) == 64, regs0  # ptxas 13.0: 66
    _check_step(k, raw, 512, regs0, spills0, tmp_path)
    assert "\n.maxnreg 64\n" in _header(k.asm["ptx"]) and k.metadata["n_regs"] <= 64


@pytest.mark.parametrize("block,num_warps", [(32, 4), (1024, 4), (4096, 8)])
def test_kernels_far_from_a_step_keep_ptxas_s_choice(block, num_warps, tmp_path):
    # The same kernel at other shapes: the step applies exactly where _step_cap says it does.
    sig = {"dy": "*fp32", "x": "*fp32", "g": "*fp32", "stride": "i64"}
    k = tritium.compile(gelu_tanh_grad, signature=sig, constexprs={"N": block - block // 8,
                                                                   "BLOCK": block},
                        target="sm_90a", num_warps=num_warps, use_cache=False,
                        divisible_by_16=list(sig))
    if "n_regs" not in k.metadata:
        pytest.skip("compiled without ptxas")
    raw = re.sub(r"\n\.maxnreg \d+\n", "\n", k.asm["ptx"], count=1)
    regs0, spills0 = _ptxas_use(raw, tmp_path)
    _check_step(k, raw, num_warps * 32, regs0, spills0, tmp_path)


def test_a_failing_capped_assembly_leaves_the_first(tmp_path):
    # The capped assembly runs beside the first; where ptxas rejects it (here a wrapper that
    # refuses any PTX with .maxnreg) the compile keeps the first result instead of failing.
    wrapper = tmp_path / "ptxas"
    wrapper.write_text("#!/bin/sh\n"
                       "for a in \"$@\"; do case \"$a\" in *.ptx) "
                       "grep -q '^\\.maxnreg' \"$a\" && { echo refused >&2; exit 3; } ;; esac; done\n"
                       f"exec {PTXAS} \"$@\"\n")
    wrapper.chmod(0o755)
    script = ("import sys; sys.path.insert(0, sys.argv[1]); import test_register_cap_ptx as t\n"
              "k = t._compile_loop(16384, 16)\n"
              "print('maxnreg' if '.maxnreg' in t._header(k.asm['ptx']) else 'none', "
              "k.metadata.get('n_regs'))\n")
    env = dict(os.environ, TRITIUM_PTXAS=str(wrapper))
    out = subprocess.run([sys.executable, "-c", script, os.path.dirname(__file__)], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    kept, regs = out.stdout.split()
    assert kept == "none" and int(regs) > 0, out.stdout
