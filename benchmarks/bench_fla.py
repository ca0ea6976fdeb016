#!/usr/bin/env python3
"""flash-linear-attention (fla-core 0.6.0) under tritium, beside Triton: a library of chunked
linear-attention kernels (tl.dot in every chunk, cumulative gates, recurrent state passing),
unchanged.

fla-core's ops `import triton`; this file runs them through benchmarks/bench_liger.py's machinery
(the wheel on sys.path, `triton` chosen per child process, correctness forward + backward against
a torch reference with NaN-poisoned memory, CUDA-event timing of forward + backward, the table)
with its own cases. The references are fla's own torch implementations (`naive_*`: plain torch
loops over time), or, where fla has none, its recurrent kernel (marked "vs fused_recurrent").

    # once, on a machine with a package index (the wheels are not committed):
    pip download --no-deps fla-core==0.6.0 einops -d benchmarks/wheels/

    # GPU machine, from the repository root:
    PYTHONPATH=python python3 benchmarks/bench_fla.py --out fla.json

    # CPU executor (tritium only, small shapes); --ptx-check sm_90a also compiles every kernel
    # launched for the H200 (PTX + ptxas):
    PYTHONPATH=python python3 benchmarks/bench_fla.py --device cpu [--ptx-check sm_90a]

Options as bench_liger.py's (--ops, --dtypes fp32,bf16, --quick, --no-time, --rounds, --kernels).
Tolerances: fla computes its dots in tf32 by default (`tl.dot`'s default input precision), about
5e-4 relative to the reference on these shapes; fp32 cases use rtol 5e-3 and an absolute 2e-3 of
the reference's largest value, bf16 cases rtol 5e-2 and 3e-2.
"""

import glob
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bench_liger as BL  # noqa: E402

TOL = {"fp32": (5e-3, 2e-3), "bf16": (5e-2, 3e-2)}


class FLA(BL.Library):
    name, version, pip, bench = "flash-linear-attention (fla-core)", "0.6.0", \
        "fla-core==0.6.0 einops", "fla"
    wheel = os.path.join(HERE, "wheels", "fla_core-0.6.0-py3-none-any.whl")
    package = "fla.ops"
    script = os.path.abspath(__file__)

    @staticmethod
    def extra_wheels():
        try:
            import einops  # noqa: F401,PLC0415
            return []
        except ImportError:
            found = sorted(glob.glob(os.path.join(HERE, "wheels", "einops-*.whl")))
            if not found:
                raise SystemExit("bench_fla: fla needs einops; pip install einops, or pip "
                                 "download einops -d benchmarks/wheels/") from None
            return found[-1:]

    @staticmethod
    def cpu_shims():
        pass


BL.LIB = FLA
BL.CASES[:] = []
case, Case, S = BL.case, BL.Case, BL.S


def _ops(mod):
    import importlib  # noqa: PLC0415
    return importlib.import_module("fla.ops." + mod)


def _naive(mod):
    import importlib  # noqa: PLC0415
    return importlib.import_module("fla.ops." + mod + ".naive")


def _dims(c):
    """(B, T, H, K, V): fla's benchmark shape on the GPU, a small one on the CPU executor."""
    return S((4, 2048, 8, 128, 128), (1, 128, 2, 32, 32), c.small)


def _tol(c):
    return TOL["bf16" if "bfloat16" in str(c.dtype) else "fp32"]


def _qkv(c, B, T, H, K, V, unit_k=False):
    import torch.nn.functional as F  # noqa: PLC0415

    q, k, v = c.randn(B, T, H, K), c.randn(B, T, H, K, scale=0.5), c.randn(B, T, H, V)
    if unit_k:  # the delta rules want unit keys (their state stays bounded)
        k = F.normalize(k.float(), dim=-1).to(k.dtype)
    return q, k, v


def _log_gate(c, *shape, scale=1.0):
    import torch.nn.functional as F  # noqa: PLC0415
    return (F.logsigmoid(c.randn(*shape, dtype=c.dtype).float()) * scale).to(c.dtype)


def _first(f):
    return lambda *a: f(*a)[0]


@case("chunk_gla")
def _chunk_gla(c):
    B, T, H, K, V = _dims(c)
    q, k, v = _qkv(c, B, T, H, K, V)
    g = _log_gate(c, B, T, H, K, scale=1 / 8)
    return Case(f"{B}x{T}x{H}x{K}", [q, k, v, g], [0, 1, 2, 3],
                _first(lambda q, k, v, g: _ops("gla").chunk_gla(q, k, v, g)),
                _first(lambda q, k, v, g: _naive("gla").naive_recurrent_gla(q, k, v, g)),
                tol=_tol(c))


@case("fused_recurrent_gla")
def _fr_gla(c):
    B, T, H, K, V = _dims(c)
    q, k, v = _qkv(c, B, T, H, K, V)
    g = _log_gate(c, B, T, H, K, scale=1 / 8)
    return Case(f"{B}x{T}x{H}x{K}", [q, k, v, g], [0, 1, 2, 3],
                _first(lambda q, k, v, g: _ops("gla").fused_recurrent_gla(q, k, v, gk=g)),
                _first(lambda q, k, v, g: _naive("gla").naive_recurrent_gla(q, k, v, g)),
                tol=_tol(c))


@case("chunk_simple_gla")
def _chunk_simple_gla(c):
    B, T, H, K, V = _dims(c)
    q, k, v = _qkv(c, B, T, H, K, V)
    g = _log_gate(c, B, T, H)
    return Case(f"{B}x{T}x{H}x{K}", [q, k, v, g], [0, 1, 2, 3],
                _first(lambda *a: _ops("simple_gla").chunk_simple_gla(*a)),
                _first(lambda *a: _naive("simple_gla").naive_recurrent_simple_gla(*a)),
                tol=_tol(c))


@case("parallel_simple_gla")
def _parallel_simple_gla(c):
    B, T, H, K, V = _dims(c)
    q, k, v = _qkv(c, B, T, H, K, V)
    g = _log_gate(c, B, T, H)
    return Case(f"{B}x{T}x{H}x{K}", [q, k, v, g], [0, 1, 2, 3],
                _first(lambda *a: _ops("simple_gla").parallel_simple_gla(*a)),
                lambda *a: _naive("simple_gla").naive_parallel_simple_gla(*a), tol=_tol(c))


def _retention_ref(q, k, v):
    t = [x.transpose(1, 2) for x in (q, k, v)]
    return _naive("retention").naive_retention(*t).transpose(1, 2)


@case("chunk_retention")
def _chunk_retention(c):
    B, T, H, K, V = _dims(c)
    return Case(f"{B}x{T}x{H}x{K}", list(_qkv(c, B, T, H, K, V)), [0, 1, 2],
                _first(lambda *a: _ops("retention").chunk_retention(*a)), _retention_ref,
                tol=_tol(c))


@case("parallel_retention")
def _parallel_retention(c):
    B, T, H, K, V = _dims(c)
    return Case(f"{B}x{T}x{H}x{K}", list(_qkv(c, B, T, H, K, V)), [0, 1, 2],
                _first(lambda *a: _ops("retention").parallel_retention(*a)), _retention_ref,
                tol=_tol(c))


@case("chunk_delta_rule")
def _chunk_delta_rule(c):
    import torch  # noqa: PLC0415

    if c.dtype == torch.float32:
        raise BL.NotApplicable("fla's chunk_delta_rule takes bf16 only (its own check)")
    B, T, H, K, V = _dims(c)
    q, k, v = _qkv(c, B, T, H, K, V, unit_k=True)
    beta = torch.sigmoid(c.randn(B, T, H).float()).to(c.dtype)
    return Case(f"{B}x{T}x{H}x{K} vs fused_recurrent", [q, k, v, beta], [0, 1, 2, 3],
                _first(lambda *a: _ops("delta_rule").chunk_delta_rule(*a)),
                _first(lambda *a: _ops("delta_rule").fused_recurrent_delta_rule(
                    *[x.to(torch.bfloat16) for x in a])), tol=_tol(c), cast_ref=False)


@case("chunk_gated_delta_rule")
def _chunk_gdn(c):
    import torch  # noqa: PLC0415

    B, T, H, K, V = _dims(c)
    q, k, v = _qkv(c, B, T, H, K, V, unit_k=True)
    beta = torch.sigmoid(c.randn(B, T, H).float()).to(c.dtype)
    g = _log_gate(c, B, T, H)
    return Case(f"{B}x{T}x{H}x{K}", [q, k, v, g, beta], [0, 1, 2, 3, 4],
                _first(lambda q, k, v, g, b: _ops("gated_delta_rule").chunk_gated_delta_rule(
                    q, k, v, g, b)),
                _first(lambda q, k, v, g, b: _naive("gated_delta_rule")
                       .naive_recurrent_gated_delta_rule(q, k, v, b, g)), tol=_tol(c))


@case("chunk_linear_attn")
def _chunk_linear_attn(c):
    B, T, H, K, V = _dims(c)
    return Case(f"{B}x{T}x{H}x{K}", list(_qkv(c, B, T, H, K, V)), [0, 1, 2],
                _first(lambda *a: _ops("linear_attn").chunk_linear_attn(*a, normalize=False)),
                _first(lambda *a: _naive("linear_attn").naive_recurrent_linear_attn(*a)),
                tol=_tol(c))


@case("chunk_hgrn")
def _chunk_hgrn(c):
    B, T, H, K, V = _dims(c)
    D = H * K
    return Case(f"{B}x{T}x{D}", [c.randn(B, T, D), _log_gate(c, B, T, D)], [0, 1],
                _first(lambda x, g: _ops("hgrn").chunk_hgrn(x, g)),
                lambda x, g: _naive("hgrn").naive_recurrent_hgrn(x, g), tol=_tol(c))


@case("parallel_attn")
def _parallel_attn(c):
    B, T, H, K, V = _dims(c)
    return Case(f"{B}x{T}x{H}x{K}", list(_qkv(c, B, T, H, K, V)), [0, 1, 2],
                lambda *a: _ops("attn").parallel_attn(*a),
                lambda *a: _naive("attn").naive_parallel_attn(*a), tol=_tol(c))


@case("parallel_forgetting_attn")
def _forgetting_attn(c):
    B, T, H, K, V = _dims(c)
    q, k, v = _qkv(c, B, T, H, K, V)
    return Case(f"{B}x{T}x{H}x{K}", [q, k, v, _log_gate(c, B, T, H)], [0, 1, 2, 3],
                lambda *a: _ops("forgetting_attn").parallel_forgetting_attn(*a),
                lambda *a: _naive("forgetting_attn").naive_forgetting_attn(*a), tol=_tol(c))


@case("chunk_rwkv6")
def _chunk_rwkv6(c):
    B, T, H, K, V = _dims(c)
    q, k, v = _qkv(c, B, T, H, K, V)
    w = _log_gate(c, B, T, H, K, scale=1 / 8)
    return Case(f"{B}x{T}x{H}x{K} vs fused_recurrent", [q, k, v, w, c.randn(H, K)],
                [0, 1, 2, 3, 4], _first(lambda *a: _ops("rwkv6").chunk_rwkv6(*a)),
                _first(lambda *a: _ops("rwkv6").fused_recurrent_rwkv6(*a)), tol=_tol(c))


@case("chunk_kda")
def _chunk_kda(c):
    import torch  # noqa: PLC0415

    B, T, H, K, V = _dims(c)
    q, k, v = _qkv(c, B, T, H, K, V, unit_k=True)
    beta = torch.sigmoid(c.randn(B, T, H).float()).to(c.dtype)
    g = _log_gate(c, B, T, H, K, scale=1 / 8)
    return Case(f"{B}x{T}x{H}x{K}", [q, k, v, g, beta], [0, 1, 2, 3, 4],
                _first(lambda *a: _ops("kda").chunk_kda(*a)),
                _first(lambda *a: _naive("kda").naive_recurrent_kda(*a)), tol=_tol(c))


@case("chunk_gsa")
def _chunk_gsa(c):
    B, T, H, K, V = _dims(c)
    q, k, v = _qkv(c, B, T, H, K, V)
    M = 16 if c.small else 64
    s, g = c.randn(B, T, H, M), _log_gate(c, B, T, H, M)
    return Case(f"{B}x{T}x{H}x{K} slots {M}", [q, k, v, s, g], [0, 1, 2, 3, 4],
                _first(lambda *a: _ops("gsa").chunk_gsa(*a)),
                _first(lambda *a: _naive("gsa").naive_recurrent_gsa(*a)), tol=_tol(c))


@case("parallel_stickbreaking_attn")
def _stickbreaking(c):
    B, T, H, K, V = _dims(c)
    return Case(f"{B}x{T}x{H}x{K}", list(_qkv(c, B, T, H, K, V)), [0, 1, 2],
                _first(lambda *a: _ops("stickbreaking_attn").parallel_stickbreaking_attn(*a)),
                _first(lambda *a: _naive("stickbreaking_attn").naive_stickbreaking_attn(*a)),
                tol=_tol(c))


@case("layer_norm")
def _layer_norm(c):
    import importlib  # noqa: PLC0415

    N, D = S((8192, 4096), (64, 96), c.small)
    m = importlib.import_module("fla.modules.norm.layernorm")
    return Case(f"{N}x{D}", [c.randn(N, D), c.randn(D), c.randn(D)], [0, 1, 2],
                m.layer_norm, m.layer_norm_ref, tol=_tol(c))


@case("rms_norm_residual")
def _rms_norm_residual(c):
    import importlib  # noqa: PLC0415

    N, D = S((8192, 4096), (64, 96), c.small)
    m = importlib.import_module("fla.modules.norm.layernorm")
    return Case(f"{N}x{D}", [c.randn(N, D), c.randn(D), c.randn(D), c.randn(N, D)],
                [0, 1, 2, 3], _first(lambda *a: m.rms_norm(*a, prenorm=True)),
                _first(lambda *a: m.rms_norm_ref(*a, prenorm=True)), tol=_tol(c))


@case("l2norm")
def _l2norm(c):
    import importlib  # noqa: PLC0415

    import torch.nn.functional as F  # noqa: PLC0415

    N, D = S((8192, 4096), (64, 96), c.small)
    m = importlib.import_module("fla.modules.norm.l2norm")
    return Case(f"{N}x{D}", [c.randn(N, D)], [0], m.l2norm,
                lambda x: F.normalize(x, dim=-1, eps=1e-6), tol=_tol(c))


@case("swiglu")
def _swiglu(c):
    import importlib  # noqa: PLC0415

    import torch.nn.functional as F  # noqa: PLC0415

    N, D = S((8192, 4096), (64, 96), c.small)
    m = importlib.import_module("fla.modules.activations.ops")
    return Case(f"{N}x{D}", [c.randn(N, D), c.randn(N, D)], [0, 1], m.swiglu,
                lambda a, b: F.silu(a) * b, tol=_tol(c))


if __name__ == "__main__":
    sys.exit(BL.main())
