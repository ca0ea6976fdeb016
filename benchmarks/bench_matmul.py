"""Matrix multiplication, the kernel of Triton's third tutorial (grouped program order, a K loop of
tl.load + tl.dot), the same source under tritium and Triton, fp16 and bf16 (fp32 accumulate, output
in the input dtype), beside torch.matmul (cuBLAS). Each compiler gets the same sweep of block
configurations (the tutorial's autotuning space, num_warps 4/8, num_stages 3-4) and is reported
at its best one; the check runs on that config (the fp8 case also over the tutorial's fp8 configs). Also the seed's weak spot: small K (K = 64, 128); fp8 e4m3 (B column-major, fp16 out) beside
torch._scaled_mm; and tritium's mma.sync path (target sm_90) on the same GPU.

Run: python3 benchmarks/bench_matmul.py [--json results.json] [--quick]
"""

import os
import sys

import common
import torch

SRC = '''
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c = accumulator.to(c_ptr.dtype.element_ty)
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)
'''

# (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages)
CONFIGS = [(128, 256, 64, 8, 3), (128, 128, 64, 4, 4), (128, 128, 32, 4, 4), (64, 128, 64, 4, 4),
           (128, 64, 64, 4, 4), (64, 64, 64, 4, 4), (128, 128, 64, 8, 3), (64, 256, 32, 4, 4)]
QUICK_CONFIGS = [(128, 128, 64, 4, 4), (128, 128, 32, 4, 4), (64, 128, 64, 4, 4)]
# The tutorial's autotuning space also lists configs for fp8 inputs (BLOCK_K = 128: a 128-byte
# row of fp8 per K step, as 64 fp16 elements are); the fp8 case sweeps these besides CONFIGS.
FP8_CONFIGS = [(128, 256, 128, 8, 3), (256, 128, 128, 8, 3), (256, 64, 128, 4, 4),
               (64, 256, 128, 4, 4), (128, 128, 128, 4, 4), (128, 64, 64, 4, 4), (64, 128, 64, 4, 4)]


def build(name):
    """The kernel source under `name` ("tritium" or "triton"), imported from a file so that both
    compilers can read its source."""
    import importlib.util  # noqa: PLC0415
    import tempfile  # noqa: PLC0415
    path = os.path.join(tempfile.mkdtemp(), f"matmul_{name}.py")
    with open(path, "w") as f:
        f.write(f"import {name} as triton\nimport {name}.language as tl\n" + SRC)
    spec = importlib.util.spec_from_file_location(f"matmul_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.matmul_kernel


def launcher(kernel, a, b, c, cfg):
    M, K = a.shape
    N = b.shape[1]
    bm, bn, bk, w, s = cfg
    grid = (triton_cdiv(M, bm) * triton_cdiv(N, bn),)

    def run():
        kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                     c.stride(0), c.stride(1), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8,
                     num_warps=w, num_stages=s)
        return c
    return run


def triton_cdiv(a, b):
    return (a + b - 1) // b


def main():
    args = common.parse_args(__doc__)
    if not torch.cuda.is_available():
        print("matmul: no CUDA GPU; skipped")
        return 0
    triton, tl = common.import_triton()
    impls = {"tritium": build("tritium")}
    if triton is not None:
        impls["triton"] = build("triton")
    configs = QUICK_CONFIGS if args.quick else CONFIGS
    # (dtype, M, N, K, tritium target): the default target is the GPU's (sm_90a: wgmma); "sm_90"
    # is the mma.sync path on the same GPU.
    cases = [(torch.float16, 4096, 4096, 4096, None), (torch.bfloat16, 4096, 4096, 4096, None),
             (torch.float16, 8192, 8192, 8192, None), (torch.bfloat16, 8192, 8192, 8192, None),
             (torch.float16, 8192, 8192, 64, None), (torch.float16, 8192, 8192, 128, None),
             (torch.float8_e4m3fn, 8192, 8192, 8192, None),
             (torch.float16, 4096, 4096, 4096, "sm_90")]
    if args.quick:
        cases = [cases[0], cases[6], cases[7]]
    rows = []
    print(f"matmul: {torch.cuda.get_device_name(0)}")
    print(f"{'case':<34} {'impl':<8} {'ms':>9} {'TFLOP/s':>8} {'rel_err':>9} {'vs torch':>9} "
          f"{'vs triton':>9}  config")
    for dtype, M, N, K, target in cases:
        fp8 = dtype == torch.float8_e4m3fn
        a = torch.randn(M, K, device="cuda").to(dtype)
        # fp8: B column-major (K contiguous), as torch._scaled_mm and Triton's tutorial take it.
        b = torch.randn(N, K, device="cuda").to(dtype).T if fp8 else \
            torch.randn(K, N, device="cuda").to(dtype)
        out_dtype = torch.float16 if fp8 else dtype
        c = torch.empty(M, N, device="cuda", dtype=out_dtype)
        ref = (a.float() @ b.float()) if fp8 else torch.matmul(a, b).float()
        flops = 2 * M * N * K
        case = f"{str(dtype)[6:]} {M}x{N}x{K}" + (f" {target}" if target else "")
        if fp8:
            one = torch.ones((), device="cuda")
            torch_fn = lambda: torch._scaled_mm(a, b, one, one, out_dtype=torch.float16)  # noqa: E731
        else:
            torch_fn = lambda: torch.matmul(a, b)  # noqa: E731
        torch_ms = [common.time_ms(torch_fn, reps=args.reps)]
        sweep = configs + (FP8_CONFIGS if fp8 and not args.quick else [])
        # Both compilers' configs timed in turn (common.best_configs_interleaved: a sweep heats
        # the GPU, and the one timed second would run at lower clocks); cuBLAS before and after,
        # the mean of the two.
        found = {} if target else common.best_configs_interleaved(
            {name: (lambda cfg, kern=kern: launcher(kern, a, b, c, cfg))
             for name, kern in impls.items()}, sweep, max(args.reps // 4, 10))
        torch_ms.append(common.time_ms(torch_fn, reps=args.reps))
        res = {"torch": (sum(torch_ms) / 2, None)}
        for name, kern in impls.items():
            if target and name != "tritium":
                continue
            if target:
                os.environ["TRITIUM_TARGET"] = target
            try:
                if target:
                    best, errors = common.best_config(lambda cfg: launcher(kern, a, b, c, cfg),
                                                      sweep, max(args.reps // 4, 10))
                else:
                    best, errors = found[name]
                if best is not None:
                    ms, cfg = best
                    common.poison_(c)
                    launcher(kern, a, b, c, cfg)()
                    torch.cuda.synchronize()
                    err = common.rel_err(c.float(), ref)
            finally:
                os.environ.pop("TRITIUM_TARGET", None)
            if best is None:
                rows.append({"bench": "matmul", "case": case, "impl": name, "ok": False,
                             "error": "; ".join(errors)[:400]})
                print(f"{case:<34} {name:<8} FAILED: {'; '.join(errors)[:200]}")
                continue
            res[name] = (ms, cfg, err)
        t_ms = res["torch"][0]
        tr_ms = res.get("triton", (None,))[0]
        for name, r in res.items():
            ms = r[0]
            err = r[2] if len(r) > 2 else 0.0
            ok = err <= 2e-2
            rows.append({"bench": "matmul", "case": case, "impl": name, "ms": ms,
                         "tflops": flops / (ms * 1e-3) / 1e12, "rel_err": err, "ok": ok,
                         "config": list(r[1]) if r[1] else None, "bytes": 0})
            vs_t = f"{ms / t_ms:8.2f}x"
            vs_tr = f"{ms / tr_ms:8.2f}x" if tr_ms else f"{'-':>9}"
            print(f"{case:<34} {name:<8} {ms:9.4f} {flops / (ms * 1e-3) / 1e12:8.1f} "
                  f"{err:9.2e} {vs_t} {vs_tr}  {r[1] or ''}{'' if ok else '  WRONG'}")
        del a, b, c, ref
        torch.cuda.empty_cache()
    print("(time ratios: >1 means slower than the peer)")
    common.save_rows(args.json, rows, {"matmul": {"device": torch.cuda.get_device_name(0)}})
    bad = [r for r in rows if r["impl"] == "tritium" and not r.get("ok", True)]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
