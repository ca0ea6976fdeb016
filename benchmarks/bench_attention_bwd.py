"""Fused attention backward: the three kernels of python/test/_attention_bwd_kernels.py (Delta
preprocess, dK/dV over query blocks, dQ over key/value blocks; no atomics), the same source under
tritium and Triton, fp16 and bf16, head dims 64 and 128, causal and not, batch 4, 32 heads, N 4096,
beside the backward of torch's scaled_dot_product_attention (flash backend; its forward is run
outside the timed region, the time is that of autograd's backward call). Each compiler gets the
same sweep of configs and is reported at its best one; the check (dQ, dK, dV against SDPA's, every
result NaN-poisoned first) runs on that config. The forward's output and row log-sum-exp (M) come
from torch, so both compilers' backwards read the same inputs.

Run: python3 benchmarks/bench_attention_bwd.py [--json results.json] [--quick]
BENCH_TRANSPOSE_LOADED=1 runs the kernels in the form of Triton's tutorial instead (Q^T, dO, K^T
loaded once each and tl.trans'd where the other orientation is read; TRANSPOSE_LOADED in the
kernels' source), under both compilers alike.
"""

import os
import sys

import common
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS = os.path.join(HERE, "..", "python", "test", "_attention_bwd_kernels.py")

# (BLOCK_M1, BLOCK_N1, BLOCK_M2, BLOCK_N2, num_warps, num_stages): dK/dV kernel's query and key
# blocks, dQ kernel's query and key blocks, launch options of both.
CONFIGS = {64: [(64, 128, 128, 64, 8, 2), (32, 128, 128, 32, 8, 2), (64, 64, 64, 64, 4, 2),
                (32, 64, 64, 32, 4, 3), (64, 128, 128, 64, 8, 3), (32, 128, 128, 32, 4, 2)],
           128: [(64, 64, 128, 32, 8, 2), (32, 64, 128, 32, 8, 2), (64, 128, 128, 64, 8, 2),
                 (32, 128, 128, 32, 8, 2), (64, 64, 64, 64, 4, 2), (32, 64, 64, 32, 4, 2)]}
# --quick: each head dim's default config and the one Triton was fastest at in the full runs
# (the sixth session's: 3 stages at d64, 128-row key blocks at d128), so that a short run still
# compares against Triton's best.
QUICK_CONFIGS = {64: [CONFIGS[64][0], CONFIGS[64][4]], 128: [CONFIGS[128][0], CONFIGS[128][2]]}


def build(name):
    """The module of _attention_bwd_kernels.py under `name` ("tritium" or "triton")."""
    return common.load_kernels_as(KERNELS, name, "attention_bwd")


def forward_state(q, k, v, causal, sm_scale):
    """SDPA's output (the input dtype) and M, the rows' log-sum-exp in base 2 (fp32), as the
    forward with STORE_M writes them."""
    o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=sm_scale)
    Z, H, N, _ = q.shape
    m = torch.empty(Z * H, N, device=q.device, dtype=torch.float32)
    for z in range(Z):  # one batch at a time: the fp32 scores of all 4x32 heads need 8 GiB
        s = (q[z].float() @ k[z].float().transpose(-1, -2)) * sm_scale
        if causal:
            s.masked_fill_(torch.triu(torch.ones(N, N, dtype=torch.bool, device=q.device), 1),
                           float("-inf"))
        m[z * H:(z + 1) * H] = torch.logsumexp(s, -1) * 1.4426950408889634
        del s
    return o, m


TRANSPOSE_LOADED = os.environ.get("BENCH_TRANSPOSE_LOADED") == "1"


def launcher(mod, q, k, v, o, do, m, causal, sm_scale, cfg, out, poison=False):
    kernels = (mod.attn_bwd_preprocess, mod.attn_bwd_dkdv, mod.attn_bwd_dq)

    def run():
        out[:] = mod.attention_backward(q, k, v, o, do, m, causal, sm_scale, cfg, kernels,
                                        poison=poison, transpose_loaded=TRANSPOSE_LOADED)
        return out
    return run


def main():
    args = common.parse_args(__doc__)
    if not torch.cuda.is_available():
        print("attention backward: no CUDA GPU; skipped")
        return 0
    triton, _ = common.import_triton()
    mods = {"tritium": build("tritium")}
    if triton is not None:
        mods["triton"] = build("triton")
    cases = [(dt, 4, 32, 4096, D, causal) for dt in (torch.float16, torch.bfloat16)
             for D in (64, 128) for causal in (False, True)]
    if args.quick:
        cases = [c for c in cases if c[0] == torch.float16]
    rows = []
    print(f"attention backward: {torch.cuda.get_device_name(0)}")
    print(f"{'case':<36} {'impl':<8} {'ms':>9} {'TFLOP/s':>8} {'rel_err':>9} {'vs sdpa':>9} "
          f"{'vs triton':>9}  config")
    for dt, Z, H, N, D, causal in cases:
        configs = (QUICK_CONFIGS if args.quick else CONFIGS)[D]
        q, k, v, do = (torch.randn(Z, H, N, D, device="cuda", dtype=dt) for _ in range(4))
        sm_scale = D ** -0.5
        # dV = P^T dO, dP = dO V^T, dQ = dS K, dK = dS^T Q, and S = Q K^T recomputed: 5 products.
        flops = 2 * 5 * Z * H * N * N * D * (0.5 if causal else 1.0)
        case = f"{str(dt)[6:]} {Z}x{H}x{N} d{D}" + (" causal" if causal else "")
        qs, ks, vs = (t.detach().clone().requires_grad_() for t in (q, k, v))
        with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.FLASH_ATTENTION):
            os_ = torch.nn.functional.scaled_dot_product_attention(qs, ks, vs, is_causal=causal,
                                                                   scale=sm_scale)
        ref = torch.autograd.grad(os_, (qs, ks, vs), do, retain_graph=True)
        sdpa = lambda: torch.autograd.grad(os_, (qs, ks, vs), do, retain_graph=True)  # noqa: E731
        res = {"sdpa": (common.time_ms(sdpa, reps=args.reps), None, 0.0)}
        o, m = forward_state(q, k, v, causal, sm_scale)
        out = [None, None, None]
        for name, mod in mods.items():
            best, errors = common.best_config(
                lambda cfg: launcher(mod, q, k, v, o, do, m, causal, sm_scale, cfg, out),  # noqa: B023
                configs, max(args.reps // 4, 10))
            if best is None:
                rows.append({"bench": "attention_bwd", "case": case, "impl": name, "ok": False,
                             "error": "; ".join(errors)[:400]})
                print(f"{case:<36} {name:<8} FAILED: {'; '.join(errors)[:200]}")
                continue
            ms, cfg = best
            out[:] = [None, None, None]
            launcher(mod, q, k, v, o, do, m, causal, sm_scale, cfg, out, poison=True)()
            torch.cuda.synchronize()
            err = max(common.rel_err(g.float(), r.float()) for g, r in zip(out, ref))
            res[name] = (ms, cfg, err)
        s_ms = res["sdpa"][0]
        tr_ms = res.get("triton", (None,))[0]
        for name, (ms, cfg, err) in res.items():
            ok = err <= (3e-2 if dt == torch.bfloat16 else 5e-3)
            rows.append({"bench": "attention_bwd", "case": case, "impl": name, "ms": ms,
                         "tflops": flops / (ms * 1e-3) / 1e12, "rel_err": err, "ok": ok,
                         "config": list(cfg) if cfg else None, "bytes": 0})
            vs_tr = f"{ms / tr_ms:8.2f}x" if tr_ms else f"{'-':>9}"
            print(f"{case:<36} {name:<8} {ms:9.4f} {flops / (ms * 1e-3) / 1e12:8.1f} {err:9.2e} "
                  f"{ms / s_ms:8.2f}x {vs_tr}  {cfg or ''}{'' if ok else '  WRONG'}", flush=True)
        del q, k, v, do, o, m, qs, ks, vs, os_, ref, out
        torch.cuda.empty_cache()
    print("(time ratios: >1 means slower than the peer; rel_err: the worst of dQ, dK, dV "
          "against SDPA's)")
    common.save_rows(args.json, rows, {"attention_bwd": {"device": torch.cuda.get_device_name(0)}})
    bad = [r for r in rows if r["impl"] == "tritium" and not r.get("ok", True)]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
