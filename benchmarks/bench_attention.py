"""Fused attention forward: the FlashAttention-2 style kernel a user writes first (a loop over K/V
blocks, two tl.dot, an online softmax in base 2, a causal mask through tl.where), the same source
under tritium and Triton, fp16 and bf16, head dims 64 and 128, causal and not, beside torch's
scaled_dot_product_attention (flash backend). Each compiler gets the same sweep of block configs and
is reported at its best one; the check (against SDPA, NaN-poisoned output) runs on that config.

Run: python3 benchmarks/bench_attention.py [--json results.json] [--quick]
"""

import os
import sys

import common
import torch

SRC = '''
@triton.jit
def attn_fwd(Q, K, V, Out, sm_scale, H, N_CTX,
             stride_qz, stride_qh, stride_qm, stride_kz, stride_kh, stride_kn,
             stride_vz, stride_vh, stride_vn, stride_oz, stride_oh, stride_om,
             HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
             CAUSAL: tl.constexpr):
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    off_z = off_hz // H
    off_h = off_hz % H
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q_ptrs = Q + off_z * stride_qz + off_h * stride_qh + offs_m[:, None] * stride_qm + offs_d[None, :]
    k_base = K + off_z * stride_kz + off_h * stride_kh
    v_base = V + off_z * stride_vz + off_h * stride_vh
    q = tl.load(q_ptrs, mask=offs_m[:, None] < N_CTX, other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    if CAUSAL:
        hi = tl.minimum((start_m + 1) * BLOCK_M, N_CTX)
    else:
        hi = N_CTX
    for start_n in range(0, hi, BLOCK_N):
        cols = start_n + offs_n
        k = tl.load(k_base + cols[None, :] * stride_kn + offs_d[:, None], mask=cols[None, :] < N_CTX,
                    other=0.0)
        qk = tl.dot(q, k) * qk_scale
        keep = cols[None, :] < N_CTX
        if CAUSAL:
            keep = keep & (offs_m[:, None] >= cols[None, :])
        qk = tl.where(keep, qk, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = tl.load(v_base + cols[:, None] * stride_vn + offs_d[None, :], mask=cols[:, None] < N_CTX,
                    other=0.0)
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_ij
    acc = acc / l_i[:, None]
    o_ptrs = Out + off_z * stride_oz + off_h * stride_oh + offs_m[:, None] * stride_om + offs_d[None, :]
    tl.store(o_ptrs, acc.to(Out.dtype.element_ty), mask=offs_m[:, None] < N_CTX)

'''

# (BLOCK_M, BLOCK_N, num_warps, num_stages)
CONFIGS = [(128, 64, 4, 2), (128, 64, 4, 3), (128, 128, 8, 2), (128, 64, 8, 3), (128, 128, 8, 3),
           (64, 64, 4, 3)]
QUICK_CONFIGS = [(128, 64, 4, 2), (128, 128, 8, 2)]


def build(name):
    """The kernel source under `name` ("tritium" or "triton"), imported from a file so that both
    compilers can read its source."""
    import importlib.util  # noqa: PLC0415
    import os  # noqa: PLC0415
    import tempfile  # noqa: PLC0415
    path = os.path.join(tempfile.mkdtemp(), f"attention_{name}.py")
    with open(path, "w") as f:
        f.write(f"import {name} as triton\nimport {name}.language as tl\n" + SRC)
    spec = importlib.util.spec_from_file_location(f"attention_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.attn_fwd


def launcher(kernel, q, k, v, o, causal, sm_scale, cfg):
    Z, H, N, D = q.shape
    bm, bn, w, s = cfg
    grid = ((N + bm - 1) // bm, Z * H)

    def run():
        kernel[grid](q, k, v, o, sm_scale, H, N,
                     q.stride(0), q.stride(1), q.stride(2), k.stride(0), k.stride(1), k.stride(2),
                     v.stride(0), v.stride(1), v.stride(2), o.stride(0), o.stride(1), o.stride(2),
                     HEAD_DIM=D, BLOCK_M=bm, BLOCK_N=bn, CAUSAL=causal, num_warps=w, num_stages=s)
        return o
    return run


DESC_KERNELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "test",
                            "_attention_desc_kernels.py")


def build_desc(name):
    """The descriptor form (python/test/_attention_desc_kernels.py) under `name`: the module."""
    return common.load_kernels_as(DESC_KERNELS, name, "attention_desc")


def launcher_desc(mod, q, k, v, o, causal, sm_scale, cfg):
    Z, H, N, D = q.shape
    bm, bn, w, s = cfg
    descs = mod.descriptors(q, k, v, o, bm, bn)

    def run():
        mod.attn_fwd_desc[(N // bm, Z * H)](*descs, sm_scale, N, HEAD_DIM=D, BLOCK_M=bm,
                                            BLOCK_N=bn, CAUSAL=causal, num_warps=w,
                                            num_stages=s)
        return o
    return run


# The kernel's two forms: (name, build, launcher).
FORMS = {"pointer": ("attention", build, launcher),
         "descriptor": ("attention_tma", build_desc, launcher_desc)}


def main(form="pointer"):
    args = common.parse_args(__doc__)
    if not torch.cuda.is_available():
        print("attention: no CUDA GPU; skipped")
        return 0
    bench, build_, launch = FORMS[form]
    triton, tl = common.import_triton()
    impls = {"tritium": build_("tritium")}
    if triton is not None:
        impls["triton"] = build_("triton")
    configs = QUICK_CONFIGS if args.quick else CONFIGS
    cases = [(dt, Z, H, N, D, causal) for dt in (torch.float16, torch.bfloat16) for D in (64, 128)
             for causal in (False, True) for (Z, H, N) in ((4, 32, 4096),)]
    cases += [(torch.float16, 1, 32, 16384, 128, False), (torch.float16, 1, 32, 16384, 128, True)]
    if args.quick:
        cases = [c for c in cases if c[0] == torch.float16 and c[4] == 128 and c[3] == 4096]
    rows = []
    print(f"attention forward ({form} form): {torch.cuda.get_device_name(0)}")
    print(f"{'case':<36} {'impl':<8} {'ms':>9} {'TFLOP/s':>8} {'rel_err':>9} {'vs sdpa':>9} "
          f"{'vs triton':>9}  config")
    for dt, Z, H, N, D, causal in cases:
        q, k, v = (torch.randn(Z, H, N, D, device="cuda", dtype=dt) for _ in range(3))
        o = torch.empty_like(q)
        sm_scale = D ** -0.5
        flops = 4 * Z * H * N * N * D * (0.5 if causal else 1.0)
        case = f"{str(dt)[6:]} {Z}x{H}x{N} d{D}" + (" causal" if causal else "")
        sdpa = lambda: torch.nn.functional.scaled_dot_product_attention(  # noqa: E731
            q, k, v, is_causal=causal, scale=sm_scale)
        ref = sdpa().float()
        res = {"sdpa": (common.time_ms(sdpa, reps=args.reps), None, 0.0)}
        for name, kern in impls.items():
            best, errors = common.best_config(
                lambda cfg: launch(kern, q, k, v, o, causal, sm_scale, cfg), configs,
                max(args.reps // 4, 10))
            if best is None:
                rows.append({"bench": bench, "case": case, "impl": name, "ok": False,
                             "error": "; ".join(errors)[:400]})
                print(f"{case:<36} {name:<8} FAILED: {'; '.join(errors)[:200]}")
                continue
            ms, cfg = best
            common.poison_(o)
            launch(kern, q, k, v, o, causal, sm_scale, cfg)()
            torch.cuda.synchronize()
            res[name] = (ms, cfg, common.rel_err(o.float(), ref))
        s_ms = res["sdpa"][0]
        tr_ms = res.get("triton", (None,))[0]
        for name, (ms, cfg, err) in res.items():
            ok = err <= 2e-2
            rows.append({"bench": bench, "case": case, "impl": name, "ms": ms,
                         "tflops": flops / (ms * 1e-3) / 1e12, "rel_err": err, "ok": ok,
                         "config": list(cfg) if cfg else None, "bytes": 0})
            vs_tr = f"{ms / tr_ms:8.2f}x" if tr_ms else f"{'-':>9}"
            print(f"{case:<36} {name:<8} {ms:9.4f} {flops / (ms * 1e-3) / 1e12:8.1f} {err:9.2e} "
                  f"{ms / s_ms:8.2f}x {vs_tr}  {cfg or ''}{'' if ok else '  WRONG'}")
        del q, k, v, o, ref
        torch.cuda.empty_cache()
    print("(time ratios: >1 means slower than the peer)")
    common.save_rows(args.json, rows, {bench: {"device": torch.cuda.get_device_name(0)}})
    bad = [r for r in rows if r["impl"] == "tritium" and not r.get("ok", True)]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
