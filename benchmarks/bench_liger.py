#!/usr/bin/env python3
"""Liger-Kernel 0.8.5 under tritium, beside Triton: a real library's kernels, unchanged.

Liger-Kernel (PyPI `liger-kernel`) is a library of fused training kernels (norms, activations,
losses, RoPE...) whose modules `import triton`. This benchmark loads it from its wheel and runs
every op that has Triton kernels, forward and backward, in fp32 and bf16, against plain torch,
then times it end to end (forward + backward, launches and the op's own torch work included),
once with `import triton` resolving to tritium and once with the real Triton.

    # once, on a machine with a package index (the wheel is not committed):
    pip download --no-deps liger-kernel==0.8.5 -d benchmarks/wheels/

    # GPU machine (torch + Triton installed, no network), from the repository root:
    PYTHONPATH=python python3 benchmarks/bench_liger.py --out liger.json

    # development, on the CPU executor (tritium only, small shapes, correctness only);
    # --ptx-check sm_90a also compiles every launched kernel for the H200 (PTX + ptxas):
    PYTHONPATH=python python3 benchmarks/bench_liger.py --device cpu [--ptx-check sm_90a]

How `import triton` becomes tritium: `tritium.inductor.install()`, the public switch that puts
tritium's `triton` compatibility surface in sys.modules. A plain `sys.modules["triton"] = tritium`
is not enough for Liger: its entry points are wrapped in `@torch.compiler.disable`, which imports
torch._dynamo and so torch._inductor, and torch._inductor imports `triton.backends.compiler` and
`triton.compiler.compiler` as soon as a `triton` module exists; the surface has those.

Under tools/gpu-check.sh (which runs every benchmarks/bench_*.py with --json) the rows are
appended to its results.json; give it BENCH_TIMEOUT=900, as both children together take longer
than its default 300 s. `--ops rms_norm,cross_entropy` and `--dtypes bf16` pick cases, `--quick`
shortens the timing, `--no-time` checks only.

The main mode (no --impl) runs `--impl triton` and `--impl tritium` as two subprocesses (a child
that dies is restarted after the case it died in, which is recorded as failed), prints one table
(op, dtype, tritium ms, Triton ms, tritium/Triton, ok) with the counts, and writes everything as
JSON to --out. A child prints one JSON line per case:
{"op", "dtype", "shape", "ok", "error", "max_err", "ms", ...}; `error` is the first line of the
exception (a compile error names the missing feature), `max_err` the largest difference from the
torch reference relative to the largest reference value of that tensor.

Correctness: fresh random inputs (seeded per case); the reference is plain torch in fp32 on the
same (rounded) inputs; outputs and the gradients of every differentiable input are compared
elementwise, |liger - ref| <= atol + rtol * |ref| with atol = a * max|ref| (fp32: rtol 1e-3,
a 1e-4; bf16: rtol 3e-2, a 1e-2), and must be finite. On CUDA the caching allocator is poisoned
with NaN before each checked run, so memory a kernel should write and does not shows up.
Timing: the median of CUDA-event intervals around one forward + backward, each after a 256 MB
cache flush, with the inputs' .grad cleared (triton.testing.do_bench's method; the same code for
both implementations). Most of these steps are short enough that the host's time (autograd,
torch's own ops, launches) shows in that figure and moves between processes, so each case also
reports its GPU time: the summed durations of the step's kernels and copies (torch.profiler).
--rounds N runs the two children N times, alternating, and keeps each case's best of the rounds.
--kernels RATIO then lists, for each case whose GPU time is above RATIO times Triton's, every
kernel of its step under both compilers (the profiler's per-kernel time), so that a slow case
names its slow kernel.

Not covered: ops with no Triton kernel of their own (LigerTiledMLPFunction,
LigerFusedLinearScaledCrossEntropy*: torch / CUTLASS), ops that need a process group
(LigerVocabParallelCEFunction, the TP variants) and, by default, the ops that need tl.dot on the
GPU or TMA (LigerFusedMoEFunction, LigerFusedNeighborhoodAttentionFunction, LigerMHCCoeffs,
LigerMLPFunction), and the experimental int8 x int2 matmul.
"""

import argparse
import atexit
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_WHEEL = os.path.join(HERE, "wheels", "liger_kernel-0.8.5-py3-none-any.whl")


class Library:
    """The library under test. benchmarks/bench_fla.py runs flash-linear-attention through this
    file's machinery by replacing LIB (and CASES) before calling main()."""

    name, version, pip, bench = "Liger-Kernel", "0.8.5", "liger-kernel==0.8.5", "liger"
    wheel = DEFAULT_WHEEL
    package = "liger_kernel.ops"  # imported in each child once `triton` is chosen
    script = os.path.abspath(__file__)  # what the children run

    @staticmethod
    def extra_wheels():
        """Other pure-Python wheels to put on sys.path (dependencies the GPU machine lacks)."""
        return []

    @staticmethod
    def cpu_shims():
        _cpu_shims()


LIB = Library


# ----------------------------------------------------------------------------------------------
# Set-up: the wheel on sys.path, `triton` chosen
# ----------------------------------------------------------------------------------------------

def put_wheel_on_path(wheel):
    """Extracts the (pure-Python) wheel into a temporary directory and puts it first on sys.path.
    Liger walks its packages with pkgutil, which wants real directories."""
    if not os.path.exists(wheel):
        raise SystemExit(f"bench_{LIB.bench}: no wheel at {wheel}; run `pip download --no-deps "
                         f"{LIB.pip} -d {os.path.dirname(wheel)}` on a machine with a "
                         "package index and carry it over")
    root = tempfile.mkdtemp(prefix=f"{LIB.bench}-wheel-")
    atexit.register(shutil.rmtree, root, True)
    with zipfile.ZipFile(wheel) as z:
        z.extractall(root)
    sys.path.insert(0, root)
    return root


def choose_triton(impl):
    """Makes `import triton` resolve to `impl` ("tritium" or "triton") before Liger is imported."""
    if impl == "tritium":
        import tritium.inductor  # noqa: PLC0415

        tritium.inductor.install()
        import triton  # noqa: PLC0415

        assert getattr(triton, "__tritium_surface__", False), "triton is not tritium's surface"
    else:
        import triton  # noqa: PLC0415

        assert not getattr(triton, "__tritium_surface__", False)
        assert "tritium" not in sys.modules


# ----------------------------------------------------------------------------------------------
# The cases
# ----------------------------------------------------------------------------------------------

CASES = []  # (op name, builder)


def case(name):
    def deco(fn):
        CASES.append((name, fn))
        return fn

    return deco


class Case:
    """inputs: the op's arguments (tensors and others); grad: indices of inputs that get
    gradients; liger/ref: functions of the inputs returning a tensor or a tuple; outs: which
    outputs to compare and backpropagate (default: every floating-point tensor)."""

    def __init__(self, shape, inputs, grad, liger, ref, outs=None, tol=None, cast_ref=True):
        self.shape, self.inputs, self.grad = shape, inputs, grad
        self.liger, self.ref, self.outs, self.tol = liger, ref, outs, tol
        self.cast_ref = cast_ref


def S(full, small, small_mode):
    return small if small_mode else full


def _rows(cfg):
    return S((4, 1024), (2, 8), cfg.small)


def _hidden(cfg):
    return S(4096, 256, cfg.small)


def _vocab(cfg):
    return S(32000, 500, cfg.small)


def _bt(cfg):
    return S(4096, 16, cfg.small)


class NotApplicable(Exception):
    """Raised by a case's builder for a dtype the library does not take (no record)."""


class Cfg:
    def __init__(self, dtype, device, small, seed):
        import torch  # noqa: PLC0415

        self.dtype, self.device, self.small = dtype, device, small
        self.gen = torch.Generator(device="cpu").manual_seed(seed)

    def randn(self, *shape, scale=1.0, dtype=None):
        import torch  # noqa: PLC0415

        t = torch.randn(shape, generator=self.gen) * scale
        return t.to(device=self.device, dtype=dtype or self.dtype)

    def rand(self, *shape, lo=0.0, hi=1.0, dtype=None):
        import torch  # noqa: PLC0415

        t = torch.rand(shape, generator=self.gen) * (hi - lo) + lo
        return t.to(device=self.device, dtype=dtype or self.dtype)

    def randint(self, hi, *shape):
        import torch  # noqa: PLC0415

        return torch.randint(0, hi, shape, generator=self.gen).to(self.device)


def _L():
    import liger_kernel.ops as L  # noqa: PLC0415

    return L


def _rms(x, eps):
    import torch  # noqa: PLC0415

    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


@case("rms_norm")
def _rms_norm(c):
    B, T = _rows(c)
    H = _hidden(c)
    eps = 1e-6
    return Case(f"{B}x{T}x{H}", [c.randn(B, T, H), c.rand(H, lo=0.5, hi=1.5)], [0, 1],
                lambda x, w: _L().LigerRMSNormFunction.apply(x, w, eps),
                lambda x, w: _rms(x, eps) * w)


@case("fused_add_rms_norm")
def _fused_add_rms_norm(c):
    B, T = _rows(c)
    H = _hidden(c)
    eps = 1e-6

    def ref(x, r, w):
        s = x + r
        return _rms(s, eps) * w, s

    return Case(f"{B}x{T}x{H}", [c.randn(B, T, H), c.randn(B, T, H), c.rand(H, lo=0.5, hi=1.5)],
                [0, 1, 2], lambda x, r, w: _L().LigerFusedAddRMSNormFunction.apply(x, r, w, eps),
                ref)


@case("modulated_rms_norm")
def _modulated_rms_norm(c):
    B, T = _rows(c)
    H = _hidden(c)
    eps = 1e-6

    def ref(x, w, scale, shift):
        return (1 + scale[:, None, :]) * (_rms(x, eps) * w) + shift[:, None, :]

    return Case(f"{B}x{T}x{H} mod {B}x{H}",
                [c.randn(B, T, H), c.rand(H, lo=0.5, hi=1.5), c.randn(B, H, scale=0.1),
                 c.randn(B, H, scale=0.1)], [0, 1, 2, 3],
                lambda x, w, s, t: _L().LigerModulatedRMSNormFunction.apply(x, w, s, t, eps),
                ref)


@case("layer_norm")
def _layer_norm(c):
    import torch.nn.functional as F  # noqa: PLC0415

    B, T = _rows(c)
    H = _hidden(c)
    eps = 1e-5
    return Case(f"{B}x{T}x{H}", [c.randn(B, T, H), c.rand(H, lo=0.5, hi=1.5), c.randn(H, scale=0.1)],
                [0, 1, 2], lambda x, w, b: _L().LigerLayerNormFunction.apply(x, w, b, eps),
                lambda x, w, b: F.layer_norm(x, (H,), w, b, eps))


@case("group_norm")
def _group_norm(c):
    import torch.nn.functional as F  # noqa: PLC0415

    Bn, C, G, HW = S((32, 256, 32, 4096), (2, 16, 4, 64), c.small)
    eps = 1e-6
    return Case(f"{Bn}x{C}x{HW} g{G}",
                [c.randn(Bn, C, HW), c.rand(C, lo=0.5, hi=1.5), c.randn(C, scale=0.1)], [0, 1, 2],
                lambda x, w, b: _L().LigerGroupNormFunction.apply(x, w, b, C, G, eps),
                lambda x, w, b: F.group_norm(x, G, w, b, eps))


@case("poly_norm")
def _poly_norm(c):
    B, T = _rows(c)
    H = _hidden(c)
    eps = 1e-6

    def ref(x, w, b):
        return w[0] * _rms(x ** 3, eps) + w[1] * _rms(x ** 2, eps) + w[2] * _rms(x, eps) + b

    # B is a 0-d tensor (Liger's backward returns a 0-d gradient for it)
    return Case(f"{B}x{T}x{H}", [c.randn(B, T, H), c.rand(3, lo=0.2, hi=0.6), c.randn(scale=0.1)],
                [0, 1, 2], lambda x, w, b: _L().LigerPolyNormFunction.apply(x, w, b, eps), ref)


@case("dyt")
def _dyt(c):
    import torch  # noqa: PLC0415

    B, T = _rows(c)
    H = _hidden(c)
    return Case(f"{B}x{T}x{H}",
                [c.randn(B, T, H), c.rand(1, lo=0.4, hi=0.6), c.rand(H, lo=0.5, hi=1.5),
                 c.randn(H, scale=0.1)], [0, 1, 2, 3],
                lambda x, a, g, b: _L().LigerDyTFunction.apply(x, a, g, b),
                lambda x, a, g, b: g * torch.tanh(a * x) + b)


@case("swiglu")
def _swiglu(c):
    import torch.nn.functional as F  # noqa: PLC0415

    B, T = _rows(c)
    I = S(11008, 384, c.small)  # noqa: E741
    return Case(f"{B}x{T}x{I}", [c.randn(B, T, I), c.randn(B, T, I)], [0, 1],
                lambda a, b: _L().LigerSiLUMulFunction.apply(a, b),
                lambda a, b: F.silu(a) * b)


@case("fused_gate_up_swiglu")
def _fused_gate_up(c):
    import torch.nn.functional as F  # noqa: PLC0415

    BT = _bt(c)
    I = S(11008, 384, c.small)  # noqa: E741
    # 2-D input: Liger's backward returns the gradient flattened to (rows, 2 * I)
    return Case(f"{BT}x2*{I}", [c.randn(BT, 2 * I)], [0],
                lambda y: _L().LigerFusedGateUpSiLUMulFunction.apply(y),
                lambda y: F.silu(y[..., :I]) * y[..., I:])


@case("geglu")
def _geglu(c):
    import torch.nn.functional as F  # noqa: PLC0415

    B, T = _rows(c)
    I = S(11008, 384, c.small)  # noqa: E741
    return Case(f"{B}x{T}x{I}", [c.randn(B, T, I), c.randn(B, T, I)], [0, 1],
                lambda a, b: _L().LigerGELUMulFunction.apply(a, b),
                lambda a, b: F.gelu(a, approximate="tanh") * b)


@case("relu_squared")
def _relu_squared(c):
    import torch  # noqa: PLC0415

    B, T = _rows(c)
    I = S(11008, 384, c.small)  # noqa: E741
    return Case(f"{B}x{T}x{I}", [c.randn(B, T, I)], [0],
                lambda x: _L().LigerReLUSquaredFunction.apply(x),
                lambda x: torch.relu(x) ** 2)


@case("softmax")
def _softmax(c):
    import torch  # noqa: PLC0415

    R, N = S((4096, 4096), (16, 300), c.small)
    return Case(f"{R}x{N}", [c.randn(R, N)], [0],
                lambda x: _L().LigerSoftmaxFunction.apply(x),
                lambda x: torch.softmax(x, -1))


def _sparsemax_ref(x, dim=-1):
    import torch  # noqa: PLC0415

    z = x.transpose(dim, -1)
    zs = torch.sort(z, dim=-1, descending=True).values
    k = torch.arange(1, z.shape[-1] + 1, device=z.device, dtype=z.dtype)
    cs = zs.cumsum(-1)
    support = 1 + k * zs > cs
    kz = support.sum(-1, keepdim=True)
    tau = (cs.gather(-1, kz - 1) - 1) / kz.to(z.dtype)
    return torch.clamp(z - tau, min=0).transpose(dim, -1)


@case("sparsemax")
def _sparsemax(c):
    R, N = S((4096, 1024), (16, 300), c.small)
    return Case(f"{R}x{N}", [c.randn(R, N)], [0],
                lambda x: _L().LigerSparsemaxFunction.apply(x, -1),
                lambda x: _sparsemax_ref(x, -1))


@case("cross_entropy")
def _cross_entropy(c):
    import torch.nn.functional as F  # noqa: PLC0415

    BT, V = _bt(c), _vocab(c)
    tgt = c.randint(V, BT)
    tgt[::7] = -100
    return Case(f"{BT}x{V}", [c.randn(BT, V), tgt], [0],
                lambda x, t: _L().LigerCrossEntropyFunction.apply(x, t, None)[0],
                lambda x, t: F.cross_entropy(x, t, ignore_index=-100))


@case("fused_linear_cross_entropy")
def _flce(c):
    import torch.nn.functional as F  # noqa: PLC0415

    BT, H, V = _bt(c), _hidden(c), _vocab(c)
    tgt = c.randint(V, BT)
    tgt[::7] = -100
    return Case(f"{BT}x{H} @ {V}x{H}", [c.randn(BT, H), c.randn(V, H, scale=H ** -0.5), tgt],
                [0, 1],
                lambda x, w, t: _L().LigerFusedLinearCrossEntropyFunction.apply(x, w, t)[0],
                lambda x, w, t: F.cross_entropy(x @ w.T, t, ignore_index=-100))


def _jsd_ref(log_q, log_p, beta=0.5):
    """Generalised JSD of student log-probs log_q and teacher log-probs log_p, mean over rows."""
    import torch  # noqa: PLC0415

    m = beta * log_p.exp() + (1 - beta) * log_q.exp()
    log_m = torch.log(m)
    per = beta * log_p.exp() * (log_p - log_m) + (1 - beta) * log_q.exp() * (log_q - log_m)
    return per.sum() / log_q.shape[0]


@case("jsd")
def _jsd(c):
    import torch  # noqa: PLC0415

    BT, V = _bt(c), _vocab(c)
    x = torch.log_softmax(c.randn(BT, V, dtype=torch.float32), -1).to(c.dtype)
    y = torch.log_softmax(c.randn(BT, V, dtype=torch.float32), -1).to(c.dtype)
    return Case(f"{BT}x{V}", [x, y], [0], lambda x, y: _L().LigerJSDFunction.apply(x, y),
                lambda x, y: _jsd_ref(x, y))


@case("fused_linear_jsd")
def _fljsd(c):
    import torch  # noqa: PLC0415

    BT, H, V = _bt(c), _hidden(c), _vocab(c)

    def ref(si, sw, ti, tw):
        return _jsd_ref(torch.log_softmax(si @ sw.T, -1), torch.log_softmax(ti @ tw.T, -1))

    return Case(f"{BT}x{H} @ {V}x{H}",
                [c.randn(BT, H), c.randn(V, H, scale=H ** -0.5), c.randn(BT, H),
                 c.randn(V, H, scale=H ** -0.5)], [0, 1],
                lambda si, sw, ti, tw: _L().LigerFusedLinearJSDFunction.apply(si, sw, ti, tw), ref)


@case("kl_div")
def _kl_div(c):
    import torch  # noqa: PLC0415
    import torch.nn.functional as F  # noqa: PLC0415

    BT, V = _bt(c), _vocab(c)
    x = torch.log_softmax(c.randn(BT, V, dtype=torch.float32), -1).to(c.dtype)
    y = torch.softmax(c.randn(BT, V, dtype=torch.float32), -1).to(c.dtype)
    return Case(f"{BT}x{V}", [x, y], [0], lambda x, y: _L().LigerKLDivLossFunction.apply(x, y),
                lambda x, y: F.kl_div(x, y, reduction="batchmean"))


@case("fused_linear_kl_div")
def _flkl(c):
    import torch  # noqa: PLC0415
    import torch.nn.functional as F  # noqa: PLC0415

    BT, H, V = _bt(c), _hidden(c), _vocab(c)
    tgt = torch.softmax(c.randn(BT, V, dtype=torch.float32), -1).to(c.dtype)
    return Case(f"{BT}x{H} @ {V}x{H}", [c.randn(BT, H), c.randn(V, H, scale=H ** -0.5), tgt],
                [0, 1], lambda x, w, t: _L().LigerFusedLinearKLDivFunction.apply(x, w, t),
                lambda x, w, t: F.kl_div(torch.log_softmax(x @ w.T, -1), t,
                                         reduction="batchmean"))


@case("tvd")
def _tvd(c):
    import torch  # noqa: PLC0415

    BT, V = _bt(c), _vocab(c)
    p = torch.softmax(c.randn(BT, V, dtype=torch.float32), -1).to(c.dtype)
    q = torch.softmax(c.randn(BT, V, dtype=torch.float32), -1).to(c.dtype)
    return Case(f"{BT}x{V}", [p, q], [0], lambda p, q: _L().LigerTVDLossFunction.apply(p, q),
                lambda p, q: 0.5 * (p - q).abs().sum() / p.shape[0])


@case("fused_ce_tvd")
def _fused_ce_tvd(c):
    import torch  # noqa: PLC0415
    import torch.nn.functional as F  # noqa: PLC0415

    BT, V = _bt(c), _vocab(c)
    tgt = c.randint(V, BT)
    tgt[::7] = -100

    def ref(s, t, y):
        ce = F.cross_entropy(s, y, ignore_index=-100, reduction="none")
        tvd = 0.5 * (torch.softmax(s, -1) - torch.softmax(t, -1)).abs().sum(-1)
        return ce, tvd * (y != -100)

    return Case(f"{BT}x{V}", [c.randn(BT, V), c.randn(BT, V), tgt], [0],
                lambda s, t, y: _L().LigerFusedCETVDFunction.apply(s, t, y), ref)


@case("grpo_loss")
def _grpo(c):
    import torch  # noqa: PLC0415

    B, L, V = S((4, 1024, 32000), (2, 8, 500), c.small)
    beta, eps_lo, eps_hi, temp = 0.04, 0.2, 0.2, 0.9
    ids = c.randint(V, B, L)
    mask = (c.rand(B, L, dtype=torch.float32) > 0.1).to(torch.int32)
    old = c.randn(B, L, dtype=torch.float32, scale=0.5) - 10.0
    ref_lp = c.randn(B, L, dtype=torch.float32, scale=0.5) - 10.0
    adv = c.randn(B, dtype=torch.float32)

    def ref(logits, old_lp, ref_lp, ids, adv, mask):
        lp = torch.log_softmax(logits[:, :-1].float() / temp, -1).gather(-1, ids[..., None])[..., 0]
        c1 = torch.exp(lp - old_lp)
        c2 = torch.clamp(c1, 1 - eps_lo, 1 + eps_hi)
        per = -torch.minimum(c1 * adv[:, None], c2 * adv[:, None])
        per = per + beta * (torch.exp(ref_lp - lp) - (ref_lp - lp) - 1)
        m = mask.float()
        return ((per * m).sum(-1) / m.sum(-1).clamp(min=1.0)).mean()

    # logits near uniform so that log-probs sit near -log V (about -10.4), and the ratios near 1
    return Case(f"{B}x{L + 1}x{V}",
                [c.randn(B, L + 1, V, scale=0.5), old, ref_lp, ids, adv, mask], [0],
                lambda lg, o, r, i, a, m: _L().GrpoLossFunction.apply(
                    lg, o, r, i, a, m, temp, beta, eps_lo, eps_hi, False)[0],
                ref)


def _rotate_half(x):
    import torch  # noqa: PLC0415

    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), -1)


def _cos_sin(c, T, D, lead=()):
    import torch  # noqa: PLC0415

    inv = 1.0 / (10000 ** (torch.arange(0, D, 2, dtype=torch.float32) / D))
    pos = torch.arange(T, dtype=torch.float32)
    if lead:
        pos = pos + torch.arange(lead[0], dtype=torch.float32)[:, None, None] * 3
        f = pos[..., None] * inv
    else:
        f = (pos[:, None] * inv)[None]
    emb = torch.cat((f, f), -1)
    return emb.cos().to(c.device, c.dtype), emb.sin().to(c.device, c.dtype)


@case("rope")
def _rope(c):
    B, Hq, Hk, T, D = S((4, 32, 8, 1024, 128), (2, 4, 2, 8, 64), c.small)
    cos, sin = _cos_sin(c, T, D)  # (1, T, D)

    def ref(q, k, cos, sin):
        cs, sn = cos[:, None], sin[:, None]
        return q * cs + _rotate_half(q) * sn, k * cs + _rotate_half(k) * sn

    return Case(f"q {B}x{Hq}x{T}x{D} k {B}x{Hk}x{T}x{D}",
                [c.randn(B, Hq, T, D), c.randn(B, Hk, T, D), cos, sin], [0, 1],
                lambda q, k, cs, sn: _L().LigerRopeFunction.apply(q, k, cs, sn), ref)


@case("qwen2vl_mrope")
def _mrope(c):
    import torch  # noqa: PLC0415

    B, Hq, Hk, T, D = S((4, 28, 4, 1024, 128), (2, 4, 2, 8, 64), c.small)
    sec = [16, 24, 24] if D == 128 else [8, 12, 12]
    cos, sin = _cos_sin(c, T, D, lead=(3, B))  # (3, 1, T, D)
    cos, sin = cos.expand(3, B, T, D).contiguous(), sin.expand(3, B, T, D).contiguous()

    def ref(q, k, cos, sin):
        s2 = sec * 2
        cs = torch.cat([m[i % 3] for i, m in enumerate(cos.split(s2, -1))], -1)[:, None]
        sn = torch.cat([m[i % 3] for i, m in enumerate(sin.split(s2, -1))], -1)[:, None]
        return q * cs + _rotate_half(q) * sn, k * cs + _rotate_half(k) * sn

    return Case(f"q {B}x{Hq}x{T}x{D} k {B}x{Hk}x{T}x{D}",
                [c.randn(B, Hq, T, D), c.randn(B, Hk, T, D), cos, sin], [0, 1],
                lambda q, k, cs, sn: _L().LigerQwen2VLMRopeFunction.apply(q, k, cs, sn, sec), ref)


@case("llama4_rope")
def _llama4_rope(c):
    import torch  # noqa: PLC0415

    B, T, Hq, Hk, D = S((4, 1024, 32, 8, 128), (2, 8, 4, 2, 64), c.small)
    inv = 1.0 / (500000 ** (torch.arange(0, D, 2, dtype=torch.float32) / D))
    ang = torch.arange(T, dtype=torch.float32)[:, None] * inv
    freqs = torch.polar(torch.ones_like(ang), ang).to(c.device)  # complex64 (T, D/2)

    def ref(q, k, freqs):
        def rot(x):
            xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2).contiguous())
            return torch.view_as_real(xc * freqs[None, :, None, :]).flatten(3)

        return rot(q), rot(k)

    return Case(f"q {B}x{T}x{Hq}x{D} k {B}x{T}x{Hk}x{D}",
                [c.randn(B, T, Hq, D), c.randn(B, T, Hk, D), freqs], [0, 1],
                lambda q, k, f: _L().LigerLlama4RopeFunction.apply(q, k, f), ref)


@case("multi_token_attention")
def _mta(c):
    import torch  # noqa: PLC0415
    import torch.nn.functional as F  # noqa: PLC0415

    B, C, L, K = S((4, 8, 256, 3), (1, 2, 16, 3), c.small)

    def ref(s, w, b):
        causal = torch.ones(L, L, dtype=torch.bool, device=s.device).triu(1)
        p = torch.softmax(s.masked_fill(causal, -1e9), -1)
        return F.conv2d(p, w, b, padding=K // 2).masked_fill(causal, 0.0)

    return Case(f"{B}x{C}x{L}x{L} k{K}",
                [c.randn(B, C, L, L), c.randn(C, C, K, K, scale=0.2), c.randn(C, scale=0.1)],
                [0, 1, 2],
                lambda s, w, b: _L().LigerMultiTokenAttentionFunction.apply(s, w, b, 1, K // 2),
                ref)


@case("attn_res")
def _attn_res(c):
    import torch  # noqa: PLC0415

    N, B, T, D = S((8, 4, 1024, 4096), (4, 2, 8, 256), c.small)
    eps = 1e-6

    def ref(v, wq, wn):
        k = _rms(v, eps) * wn
        a = torch.softmax((k * wq).sum(-1), 0)
        return (a[..., None] * v).sum(0)

    return Case(f"{N}x{B}x{T}x{D}",
                [c.randn(N, B, T, D), c.randn(D, scale=D ** -0.5), c.rand(D, lo=0.5, hi=1.5)],
                [0, 1, 2], lambda v, wq, wn: _L().LigerAttnResFunction.apply(v, wq, wn, eps), ref)


@case("embedding")
def _embedding(c):
    import torch.nn.functional as F  # noqa: PLC0415

    V, H = S((32000, 4096), (500, 64), c.small)
    B, T = _rows(c)
    return Case(f"{B}x{T} into {V}x{H}", [c.randn(V, H), c.randint(V, B, T)], [0],
                lambda w, i: _L().LigerEmbeddingFunction.apply(w, i),
                lambda w, i: F.embedding(i, w))


@case("mhc_pre")
def _mhc_pre(c):
    import torch  # noqa: PLC0415

    B, T, HC, C = S((4, 1024, 4, 4096), (2, 8, 4, 256), c.small)
    return Case(f"{B}x{T}x{HC}x{C}",
                [c.randn(B, T, HC, C), c.rand(B, T, HC, dtype=torch.float32)], [0, 1],
                lambda x, h: _L().LigerMHCPreFunction.apply(x, h),
                lambda x, h: (x * h[..., None]).sum(-2))


@case("mhc_post_res")
def _mhc_post_res(c):
    import torch  # noqa: PLC0415

    B, T, HC, C = S((4, 1024, 4, 4096), (2, 8, 4, 256), c.small)

    def ref(x, f, hp, hr):
        return f[..., None, :] * hp[..., None] + torch.einsum("btoi,btic->btoc", hr, x)

    return Case(f"{B}x{T}x{HC}x{C}",
                [c.randn(B, T, HC, C), c.randn(B, T, C), c.rand(B, T, HC, dtype=torch.float32),
                 c.rand(B, T, HC, HC, dtype=torch.float32, lo=-0.5, hi=0.5)], [0, 1, 2, 3],
                lambda x, f, hp, hr: _L().LigerMHCPostResFunction.apply(x, f, hp, hr), ref)


# ----------------------------------------------------------------------------------------------
# Running one case
# ----------------------------------------------------------------------------------------------

TOL = {"float32": (1e-3, 1e-4), "bfloat16": (3e-2, 1e-2)}


def _tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _poison(device):
    """NaN in the CUDA caching allocator's free blocks: a large one for the large pool and many
    small ones for the small pool, so outputs a kernel fails to write show up as NaN."""
    import torch  # noqa: PLC0415

    if device != "cuda":
        return
    free, _ = torch.cuda.mem_get_info()
    big = min(int(free * 0.5), 8 << 30) // 4
    t = torch.empty(big, dtype=torch.float32, device="cuda").fill_(float("nan"))
    small = [torch.empty(1 << 18, dtype=torch.float32, device="cuda").fill_(float("nan"))
             for _ in range(64)]
    del t, small


def _compare(name, got, ref, dtype):
    import torch  # noqa: PLC0415

    rtol, a = TOL[dtype] if isinstance(dtype, str) else dtype
    if got is None:
        return math.inf, f"{name}: no value"
    got, ref = got.detach().float(), ref.detach().float()
    if got.shape != ref.shape:
        if got.numel() == ref.numel():
            got = got.reshape(ref.shape)
        else:
            return math.inf, f"{name}: shape {tuple(got.shape)} != {tuple(ref.shape)}"
    scale = ref.abs().max().item() if ref.numel() else 0.0
    if not torch.isfinite(got).all():
        return math.inf, f"{name}: {int((~torch.isfinite(got)).sum())} non-finite values"
    diff = (got - ref).abs()
    err = diff.max().item() if diff.numel() else 0.0
    rel = err / max(scale, 1e-30) if err else 0.0
    bad = diff > a * scale + rtol * ref.abs()
    if bad.any():
        i = int(bad.flatten().nonzero()[0])
        return rel, (f"{name}: {int(bad.sum())}/{bad.numel()} elements off, e.g. [{i}] "
                     f"{got.flatten()[i].item():.6g} vs {ref.flatten()[i].item():.6g}")
    return rel, None


def _fresh(inputs, grad, dtype=None):
    import torch  # noqa: PLC0415

    out = []
    for i, x in enumerate(inputs):
        if isinstance(x, torch.Tensor):
            y = x.detach().clone()
            if dtype is not None and y.is_floating_point():
                y = y.to(dtype)
            y.requires_grad_(i in grad)
            out.append(y)
        else:
            out.append(x)
    return out


def check(cs, dtype_name, device):
    """Runs Liger and the torch reference forward + backward; returns (ok, max_err, error)."""
    import torch  # noqa: PLC0415

    ref_in = _fresh(cs.inputs, cs.grad, torch.float32 if cs.cast_ref else None)
    lin = _fresh(cs.inputs, cs.grad)
    _poison(device)
    outs = _tuple(cs.liger(*lin))
    idx = cs.outs if cs.outs is not None else [
        i for i, o in enumerate(outs) if isinstance(o, torch.Tensor) and o.is_floating_point()]
    outs = [outs[i] for i in idx]
    g = torch.Generator(device="cpu").manual_seed(1234)
    cots = [torch.randn(o.shape, generator=g).to(o.device, o.dtype) for o in outs]
    got_out = [o.detach().clone() for o in outs]
    torch.autograd.backward(outs, [t.clone() for t in cots])
    got_grad = [lin[i].grad for i in cs.grad]

    routs = _tuple(cs.ref(*ref_in))
    routs = [routs[i] for i in idx]
    torch.autograd.backward(routs, [t.float() for t in cots])
    want_grad = [ref_in[i].grad for i in cs.grad]

    tol = cs.tol or dtype_name
    worst, errors = 0.0, []
    for k, (a, b) in enumerate(zip(got_out, routs)):
        e, msg = _compare(f"out{k}", a, b, tol)
        worst = max(worst, e)
        if msg:
            errors.append(msg)
    for k, (a, b) in zip(cs.grad, zip(got_grad, want_grad)):
        e, msg = _compare(f"grad{k}", a, b, tol)
        worst = max(worst, e)
        if msg:
            errors.append(msg)
    return not errors, worst, "; ".join(errors) or None


def bench(cs, device, warmup_ms=25, rep_ms=100):
    """Median ms of forward + backward (CUDA events, L2 flushed before each), and gpu_ms()'s
    total and per-kernel figures."""
    import torch  # noqa: PLC0415

    lin = _fresh(cs.inputs, cs.grad)
    outs0 = _tuple(cs.liger(*lin))
    idx = cs.outs if cs.outs is not None else [
        i for i, o in enumerate(outs0) if isinstance(o, torch.Tensor) and o.is_floating_point()]
    cots = [torch.randn_like(outs0[i]) for i in idx]
    del outs0
    leaves = [lin[i] for i in cs.grad]

    def step():
        for t in leaves:
            t.grad = None
        outs = _tuple(cs.liger(*lin))
        torch.autograd.backward([outs[i] for i in idx], cots)

    # tritium's do_bench for both implementations (it imports no `triton`): the same timer,
    # L2 flush and warm-up for each.
    from tritium.testing import do_bench  # noqa: PLC0415

    ms = do_bench(step, warmup=warmup_ms, rep=rep_ms, return_mode="median", device="cuda")
    try:
        gpu, kernels = gpu_ms(step)
    except Exception as e:  # noqa: BLE001 -- the end-to-end figure stands without it
        print(f"gpu_ms: {type(e).__name__}: {e}", file=sys.stderr)
        gpu, kernels = None, {}
    return ms, gpu, kernels


def gpu_ms(step, steps=10):
    """The GPU's own time for one step in ms: the summed durations of every kernel and copy
    the step launched (torch.profiler, the mean over `steps` steps), and the same per kernel
    ({name: us per step}). The end-to-end figure above also holds the host's time wherever the
    GPU waits for it; this one is what the compiled kernels (and torch's own) cost, without the
    host."""
    import torch  # noqa: PLC0415
    from torch.profiler import ProfilerActivity, profile  # noqa: PLC0415

    step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            step()
            torch.cuda.synchronize()
    # As tools/profile_inductor.py: every event's own device time, kernels and copies.
    per_event = {}
    for e in prof.key_averages():
        dev = getattr(e, "self_device_time_total", None)
        us = (e.self_cuda_time_total if dev is None else dev) or 0.0
        if us > 0:
            per_event[e.key] = per_event.get(e.key, 0.0) + us / steps
    total_us = sum(per_event.values())
    if total_us <= 0:
        return None, {}
    return total_us / 1e3, {k: round(v, 2) for k, v in per_event.items()}


def _cpu_shims():
    """Liger reads the SM count with torch.cuda.get_device_properties in some backward passes
    (dyt, fused_add_rms_norm): on the CPU executor give it a small one."""
    import torch  # noqa: PLC0415

    import liger_kernel.ops.dyt as dyt  # noqa: PLC0415

    class _Props:
        multi_processor_count = 4

    dyt.infer_device = lambda: "cuda"
    torch.cuda.get_device_properties = lambda *a, **k: _Props()


PTX_ERRORS = []  # the current case's kernels that failed to compile for --ptx-check's target


def _ptx_check_hook(target):
    """--ptx-check (CPU, tritium): each kernel launched on the executor is also compiled for
    `target` (PTX, and a cubin where ptxas is installed) with the launch's specialisation,
    num_warps and num_stages, so GPU-side compile failures show up without a GPU. Uses
    tritium's internal compile_gpu: a development aid, not part of the benchmark."""
    from tritium.compiler import compiler as comp  # noqa: PLC0415

    J = sys.modules["tritium.jit"]
    orig, seen = J.JITFunction.run, set()

    def run(self, *a, grid=None, warmup=False, **kw):
        try:
            opts = {o: kw[o] for o in self._launch_options if o in kw}
            rest = {k: v for k, v in kw.items() if k not in opts}
            key, spec, _ = self._key(self._bind(a, rest))
            nw = opts.get("num_warps") or comp.DEFAULT_NUM_WARPS
            ns = opts.get("num_stages") or comp.DEFAULT_NUM_STAGES
            if (self, key, nw, ns) not in seen:
                seen.add((self, key, nw, ns))
                comp.compile_gpu(self, J._params(spec), key, num_warps=nw, num_stages=ns,
                                 target=target)
        except Exception as e:  # noqa: BLE001
            # A located error's last line says why (the first says where).
            lines = str(e).strip().splitlines() or [""]
            PTX_ERRORS.append(f"{self.fn.__name__}: {type(e).__name__}: {lines[-1].strip()}")
        return orig(self, *a, grid=grid, warmup=warmup, **kw)

    J.JITFunction.run = run


def run_child(args):
    import torch  # noqa: PLC0415

    for extra in LIB.extra_wheels():
        put_wheel_on_path(extra)
    put_wheel_on_path(args.wheel)
    choose_triton(args.impl)
    import importlib  # noqa: PLC0415

    importlib.import_module(LIB.package)
    if args.device == "cpu":
        LIB.cpu_shims()
        if args.ptx_check and args.impl == "tritium":
            _ptx_check_hook(args.ptx_check)
    dtypes = {"fp32": torch.float32, "bf16": torch.bfloat16}
    skip = set(args.skip or [])
    want = set(args.ops.split(",")) if args.ops else None
    for n, (name, builder) in enumerate(CASES):
        if want and name not in want:
            continue
        for dname in args.dtypes.split(","):
            key = f"{name}/{dname}"
            if key in skip:
                continue
            print(f"BEGIN {key}", file=sys.stderr, flush=True)
            rec = {"op": name, "dtype": dname, "impl": args.impl, "device": args.device,
                   "shape": None, "ok": False, "error": None, "max_err": None, "ms": None}
            t_start = time.perf_counter()
            PTX_ERRORS.clear()
            try:
                cfg = Cfg(dtypes[dname], args.device, args.device == "cpu", seed=1000 + n)
                try:
                    cs = builder(cfg)
                except NotApplicable:
                    print(json.dumps({"op": name, "dtype": dname, "not_applicable": True}),
                          flush=True)
                    continue
                rec["shape"] = cs.shape
                ok, err, msg = check(cs, str(dtypes[dname]).replace("torch.", ""), args.device)
                rec.update(ok=ok, max_err=err if math.isfinite(err) else None, error=msg)
                if args.device == "cuda" and not args.no_time:
                    rec["ms"], rec["gpu_ms"], rec["gpu_kernels"] = bench(
                        cs, args.device, *((5, 20) if args.quick else (25, 100)))
            except Exception as e:  # noqa: BLE001
                first = (str(e).strip().splitlines() or [""])[0]
                rec["error"] = f"{type(e).__name__}: {first}"
                rec["ok"] = False
                if args.verbose:
                    traceback.print_exc()
            if args.ptx_check:
                rec["ptx_errors"] = list(dict.fromkeys(PTX_ERRORS))
            rec["seconds"] = round(time.perf_counter() - t_start, 2)
            print(json.dumps(rec), flush=True)
            if args.device == "cuda":
                torch.cuda.empty_cache()


# ----------------------------------------------------------------------------------------------
# The main mode: both children, the table
# ----------------------------------------------------------------------------------------------

def run_impl(impl, args):
    """Runs the cases under `impl` in a child process. A child that dies, or spends more than
    --case-timeout seconds on one case, is ended and restarted after that case, which is
    recorded as failed. Returns {(op, dtype): record}."""
    import queue  # noqa: PLC0415
    import threading  # noqa: PLC0415

    recs, skip = {}, []
    base = [sys.executable, LIB.script, "--impl", impl, "--device", args.device,
            "--wheel", args.wheel, "--dtypes", args.dtypes]
    for flag in ("no_time", "quick", "verbose"):
        if getattr(args, flag):
            base.append("--" + flag.replace("_", "-"))
    if args.ptx_check:
        base += ["--ptx-check", args.ptx_check]
    if args.ops:
        base += ["--ops", args.ops]
    for _attempt in range(80):
        cmd = base + sum((["--skip", k] for k in skip), [])
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        q = queue.Queue()

        def pump(f, tag):
            for line in f:
                q.put((tag, line))
            q.put((tag, None))

        for f, tag in ((p.stdout, "out"), (p.stderr, "err")):
            threading.Thread(target=pump, args=(f, tag), daemon=True).start()
        err_lines, current, open_streams, why = [], None, 2, None
        while open_streams:
            try:
                tag, line = q.get(timeout=args.case_timeout)
            except queue.Empty:
                why = f"no result after {args.case_timeout} s"
                p.kill()
                continue
            if line is None:
                open_streams -= 1
                continue
            if tag == "err":
                if line.startswith("BEGIN "):
                    current = line.split(None, 1)[1].strip()
                else:
                    err_lines.append(line)
                if args.verbose:
                    sys.stderr.write(line)
                continue
            line = line.strip()
            if not line.startswith("{"):
                continue
            r = json.loads(line)
            skip.append(f"{r['op']}/{r['dtype']}")
            current = None
            if r.get("not_applicable"):
                continue
            recs[(r["op"], r["dtype"])] = r
            print(f"  [{impl}] {r['op']:28s} {r['dtype']:5s} ok={r['ok']!s:5s} "
                  f"ms={r['ms'] if r['ms'] is None else round(r['ms'], 3)!s:8s} "
                  f"{(r['error'] or '')[:100]}", flush=True)
            for e in r.get("ptx_errors") or []:  # --ptx-check: kernels that did not compile
                print(f"      ptx-check: {e[:200]}", flush=True)
        rc = p.wait()
        if rc == 0 and why is None:
            break
        tail = " | ".join(ln.strip() for ln in err_lines[-3:])
        why = why or f"process died (exit {rc}): {tail[:300]}"
        if current is None or current in skip:
            print(f"  [{impl}] child exited {rc}: {tail}", flush=True)
            break
        op, dt = current.split("/")
        recs[(op, dt)] = {"op": op, "dtype": dt, "impl": impl, "ok": False, "ms": None,
                          "max_err": None, "shape": None, "error": why}
        skip.append(current)
        print(f"  [{impl}] {op} {dt}: {why}; restarting", flush=True)
    return recs


def best_of(runs):
    """One record per case from several rounds of one implementation: the smallest `ms` and
    `gpu_ms` of the rounds that timed it, and each kernel's smallest time; ok only when every
    round was (a round that failed keeps its record, with its error)."""
    out = {}
    for key in dict.fromkeys(k for r in runs for k in r):
        recs = [r[key] for r in runs if key in r]
        bad = [x for x in recs if not x.get("ok")]
        best = dict(bad[0] if bad else recs[0])
        for field in ("ms", "gpu_ms"):
            values = [x[field] for x in recs if x.get(field) is not None]
            best[field] = min(values) if values else None
        kernels = {}
        for x in recs:
            for name, us in (x.get("gpu_kernels") or {}).items():
                kernels[name] = min(us, kernels.get(name, us))
        best["gpu_kernels"] = kernels
        best["rounds"] = len(recs)
        out[key] = best
    return out


def summarize(tr, tm):
    rows, ratios = [], []
    keys = list(dict.fromkeys(list(tm.keys()) + list(tr.keys())))
    n_ok = n_fast = n_par = n_slow = 0
    for k in keys:
        a, b = tm.get(k, {}), tr.get(k, {})
        ms_a, ms_b = a.get("ms"), b.get("ms")
        ratio = ms_a / ms_b if ms_a and ms_b else None
        ok = bool(a.get("ok"))
        rows.append({"op": k[0], "dtype": k[1], "shape": a.get("shape") or b.get("shape"),
                     "tritium_ms": ms_a, "triton_ms": ms_b, "ratio": ratio, "ok": ok,
                     "tritium_gpu_ms": a.get("gpu_ms"), "triton_gpu_ms": b.get("gpu_ms"),
                     "tritium_kernels": a.get("gpu_kernels") or {},
                     "triton_kernels": b.get("gpu_kernels") or {},
                     "gpu_ratio": (a["gpu_ms"] / b["gpu_ms"] if a.get("gpu_ms")
                                   and b.get("gpu_ms") else None),
                     "triton_ok": b.get("ok"), "max_err": a.get("max_err"),
                     "error": a.get("error"), "triton_error": b.get("error")})
        if ok:
            n_ok += 1
        if ok and ratio is not None:
            ratios.append(ratio)
            if ratio <= 0.97:
                n_fast += 1
            elif ratio <= 1.03:
                n_par += 1
            else:
                n_slow += 1
    geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios)) if ratios else None
    counts = {"cases": len(keys), "ran": sum(1 for k in keys if tm.get(k, {}).get("ms")
                                               or tm.get(k, {}).get("ok")),
              "correct": n_ok, "faster": n_fast, "within_3pct": n_par, "slower": n_slow,
              "at_most_1x": sum(1 for r in ratios if r <= 1.0), "timed": len(ratios),
              "geomean_ratio": geo}
    return rows, counts


def kernel_rows(row):
    """The kernels of one case's step, both implementations side by side: (name, tritium us,
    Triton us, ratio), Liger's own kernels (the same names under both compilers) first, then
    torch's; slowest first within each. A kernel one side did not launch has None there."""
    a, b = row.get("tritium_kernels") or {}, row.get("triton_kernels") or {}
    out = []
    for name in dict.fromkeys(list(a) + list(b)):
        ta, tb = a.get(name), b.get(name)
        out.append((name, ta, tb, ta / tb if ta and tb else None))
    liger = [r for r in out if r[0].startswith("_")]
    rest = [r for r in out if not r[0].startswith("_")]
    key = lambda r: -max(r[1] or 0, r[2] or 0)  # noqa: E731
    return sorted(liger, key=key) + sorted(rest, key=key)


def print_kernels(rows, threshold):
    """Per-kernel GPU times of the cases whose GPU ratio exceeds `threshold`."""
    f = lambda v, p=1: "-" if v is None else f"{v:.{p}f}"  # noqa: E731
    picked = [r for r in rows if r.get("gpu_ratio") and r["gpu_ratio"] > threshold]
    if not picked:
        return
    print(f"\nkernels of the cases above {threshold:.2f}x Triton's GPU time (us per step):")
    print(f"  {'kernel':60s} {'tritium':>9s} {'Triton':>9s} {'ratio':>6s}")
    for r in picked:
        print(f"{r['op']} {r['dtype']} ({f(r['gpu_ratio'], 2)}x)")
        for name, ta, tb, ratio in kernel_rows(r):
            print(f"  {name[:60]:60s} {f(ta):>9s} {f(tb):>9s} {f(ratio, 2):>6s}")


def print_table(rows, counts, device):
    f = lambda v, p=3: "-" if v is None else f"{v:.{p}f}"  # noqa: E731
    print(f"\nbench {LIB.bench}: {LIB.name} {LIB.version} forward + backward on {device}, "
          "tritium beside Triton")
    print(f"{'op':28s} {'dtype':5s} {'tritium ms':>10s} {'Triton ms':>10s} {'ratio':>6s} "
          f"{'GPU ms':>8s} {'Triton':>8s} {'ratio':>6s}  ok")
    for r in rows:
        note = "" if r["ok"] else "  " + (r["error"] or "")[:110]
        if r.get("triton_ok") is False:
            note += "  [Triton: " + (r.get("triton_error") or "")[:60] + "]"
        print(f"{r['op']:28s} {r['dtype']:5s} {f(r['tritium_ms']):>10s} {f(r['triton_ms']):>10s} "
              f"{f(r['ratio'], 2):>6s} {f(r.get('tritium_gpu_ms')):>8s} "
              f"{f(r.get('triton_gpu_ms')):>8s} {f(r.get('gpu_ratio'), 2):>6s}  "
              f"{'yes' if r['ok'] else 'NO'}{note}")
    c = counts
    print(f"\n{c['cases']} cases on {device}: {c['correct']} correct under tritium; of {c['timed']} "
          f"timed: {c['faster']} faster (<=0.97x), {c['within_3pct']} within 3%, {c['slower']} "
          f"slower (>1.03x), {c['at_most_1x']} at <= 1.0x; geometric mean ratio "
          f"{f(c['geomean_ratio'], 3)}")
    print("(ms: forward + backward end to end, median of CUDA events with the L2 flushed, host "
          "time included wherever the GPU waits for it; GPU ms: the step's kernels and copies "
          "alone, torch.profiler)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--impl", choices=["tritium", "triton"], help="child mode: run the cases "
                    "with `triton` = this and print one JSON line per case")
    ap.add_argument("--device", default=None, choices=["cuda", "cpu"])
    ap.add_argument("--wheel", default=LIB.wheel)
    ap.add_argument("--dtypes", default="fp32,bf16")
    ap.add_argument("--ops", default=None, help="comma-separated op names (default: all)")
    ap.add_argument("--skip", action="append", help="op/dtype to skip (child mode)")
    ap.add_argument("--no-time", action="store_true", help="correctness only")
    ap.add_argument("--out", default=None, help="write the results here as JSON")
    ap.add_argument("--json", default=None, help="append rows to this JSON file in the format "
                    "of benchmarks/common.py (tools/gpu-check.sh passes it)")
    ap.add_argument("--quick", action="store_true", help="shorter timing, for a smoke run")
    ap.add_argument("--rounds", type=int, default=1,
                    help="run both children this many times, alternating, and keep each "
                         "case's best time (and GPU time) of the rounds")
    ap.add_argument("--kernels", type=float, default=None, metavar="RATIO",
                    help="after the table, each kernel's GPU time under both compilers for the "
                         "cases whose GPU time exceeds RATIO times Triton's (e.g. 1.02)")
    ap.add_argument("--ptx-check", default=None, metavar="TARGET",
                    help="with --device cpu: also compile every launched kernel for TARGET "
                    "(e.g. sm_90a) and report the ones that fail")
    ap.add_argument("--case-timeout", type=float, default=240.0,
                    help="seconds one case may take (compiles included) before its child is "
                    "ended and the case recorded as failed")
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    if args.list:
        for name, _ in CASES:
            print(name)
        return 0
    if args.device is None:
        import torch  # noqa: PLC0415

        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    if args.impl:
        run_child(args)
        return 0
    if not os.path.exists(args.wheel):
        print(f"bench_{LIB.bench}: no {LIB.name} wheel at {args.wheel}; skipped (pip download "
              f"--no-deps {LIB.pip} -d {os.path.dirname(args.wheel)})")
        return 0
    impls = ["tritium"] if args.device == "cpu" else ["triton", "tritium"]
    # --rounds N: the children alternate N times (triton, tritium, triton, ...), and each
    # case keeps its best figures: the host's share of a step moves between processes by
    # more than most of the differences this table shows.
    rounds = [{impl: run_impl(impl, args) for impl in impls} for _ in range(max(1, args.rounds))]
    res = {impl: best_of([r[impl] for r in rounds]) for impl in impls}
    rows, counts = summarize(res.get("triton", {}), res["tritium"])
    print_table(rows, counts, args.device)
    if args.kernels is not None:
        print_kernels(rows, args.kernels)
    if args.out:
        import torch  # noqa: PLC0415

        meta = {"library": f"{LIB.name} {LIB.version}", "device": args.device,
                "torch": torch.__version__,
                "gpu": torch.cuda.get_device_name() if args.device == "cuda" else None}
        with open(args.out, "w") as fh:
            json.dump({"meta": meta, "counts": counts, "rows": rows,
                       "raw": {impl: list(r.values()) for impl, r in res.items()}}, fh, indent=1)
        print(f"wrote {args.out}")
    if args.json:
        save_common_rows(args.json, res, counts, args.device)
    return 0 if counts["correct"] == counts["cases"] else 1


def save_common_rows(path, res, counts, device):
    """Appends one row per (case, implementation) to `path` as benchmarks/common.py does."""
    data = {"meta": {}, "rows": []}
    if os.path.exists(path):
        with open(path) as f:
            data = json.load(f)
    data["meta"][LIB.bench] = {"library": f"{LIB.name} {LIB.version}", "device": device,
                               "counts": counts}
    for impl, recs in res.items():
        for r in recs.values():
            data["rows"].append({"bench": LIB.bench, "case": f"{r['op']} {r['dtype']}",
                                 "shape": r.get("shape"), "impl": impl, "ms": r.get("ms"),
                                 "ok": r.get("ok"), "rel_err": r.get("max_err"),
                                 "error": r.get("error")})
    with open(path, "w") as f:
        json.dump(data, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
