"""The persistent tensor-descriptor matmul (the form of Triton's persistent-matmul tutorial):
one program per SM walks the output tiles in grouped order with `tl.range(..., flatten=True)`,
A, B and C move through host `TensorDescriptor`s (B given N x K, K contiguous, as the tutorial
takes it), fp16 in, fp32 accumulate, fp16 out. The same source under tritium and Triton, each at
its best of the same configs, beside torch.matmul (cuBLAS). Both lower the descriptors to TMA on
sm_90a (cp.async.bulk.tensor): the K loop's loads, and the epilogue's store through shared
memory (tritium: lower-tma-stores; TRITIUM_DISABLE_PASSES=tma-store stores from registers).

Run: python3 benchmarks/bench_matmul_persistent.py [--json results.json] [--quick]
"""

import os
import sys

import common
import torch

SRC = '''
@triton.jit
def matmul_persistent(a_desc, b_desc, c_desc, M, N, K, BLOCK_M: tl.constexpr,
                      BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                      NUM_SMS: tl.constexpr):
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    k_steps = tl.cdiv(K, BLOCK_K)
    per_group = GROUP_M * tiles_n
    for tile in tl.range(tl.program_id(0), tiles_m * tiles_n, NUM_SMS, flatten=True):
        group = tile // per_group
        first_m = group * GROUP_M
        rows = min(tiles_m - first_m, GROUP_M)
        off_m = (first_m + (tile % rows)) * BLOCK_M
        off_n = ((tile % per_group) // rows) * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ks in range(k_steps):
            a = a_desc.load([off_m, ks * BLOCK_K])
            b = b_desc.load([off_n, ks * BLOCK_K])
            acc = tl.dot(a, b.T, acc)
        c_desc.store([off_m, off_n], acc.to(tl.float16))
'''

# (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages)
CONFIGS = [(128, 256, 64, 8, 3), (128, 128, 64, 8, 3), (128, 128, 64, 4, 4), (128, 256, 64, 8, 4)]
QUICK_CONFIGS = [(128, 256, 64, 8, 3), (128, 128, 64, 4, 4)]


def build(name):
    """The kernel and the TensorDescriptor class under `name` ("tritium" or "triton")."""
    import importlib  # noqa: PLC0415
    import importlib.util  # noqa: PLC0415
    import tempfile  # noqa: PLC0415
    path = os.path.join(tempfile.mkdtemp(), f"persistent_{name}.py")
    with open(path, "w") as f:
        f.write(f"import {name} as triton\nimport {name}.language as tl\n" + SRC)
    spec = importlib.util.spec_from_file_location(f"persistent_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    desc = importlib.import_module(f"{name}.tools.tensor_descriptor").TensorDescriptor
    return mod.matmul_persistent, desc


def launcher(impl, a, bt, c, cfg, sms):
    kernel, Desc = impl
    bm, bn, bk, w, s = cfg
    M, K = a.shape
    N = bt.shape[0]
    a_d = Desc(a, list(a.shape), list(a.stride()), [bm, bk])
    b_d = Desc(bt, list(bt.shape), list(bt.stride()), [bn, bk])
    c_d = Desc(c, list(c.shape), list(c.stride()), [bm, bn])
    grid = (min(sms, ((M + bm - 1) // bm) * ((N + bn - 1) // bn)),)

    def run():
        kernel[grid](a_d, b_d, c_d, M, N, K, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8,
                     NUM_SMS=sms, num_warps=w, num_stages=s)
        return c
    return run


def main():
    args = common.parse_args(__doc__)
    if not torch.cuda.is_available():
        print("matmul_persistent: no CUDA GPU; skipped")
        return 0
    triton, _ = common.import_triton()
    impls = {"tritium": build("tritium")}
    if triton is not None:
        impls["triton"] = build("triton")
        # Descriptors made in a kernel need scratch; host ones do not, but a Triton build may ask.
        triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8,
                                                                     device="cuda"))
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    configs = QUICK_CONFIGS if args.quick else CONFIGS
    sizes = [4096] if args.quick else [4096, 8192]
    rows = []
    print(f"matmul_persistent: {torch.cuda.get_device_name(0)}, {sms} SMs")
    print(f"{'case':<26} {'impl':<8} {'ms':>9} {'TFLOP/s':>8} {'rel_err':>9} {'vs torch':>9} "
          f"{'vs triton':>9}  config")
    for n in sizes:
        a = torch.randn(n, n, device="cuda", dtype=torch.float16)
        bt = torch.randn(n, n, device="cuda", dtype=torch.float16)  # B^T: N x K
        c = torch.empty(n, n, device="cuda", dtype=torch.float16)
        ref = torch.matmul(a, bt.T).float()
        flops = 2 * n ** 3
        case = f"float16 {n}x{n}x{n}"
        torch_ms = [common.time_ms(lambda: torch.matmul(a, bt.T), reps=args.reps)]
        # Both compilers' configs timed in turn (see common.best_configs_interleaved); cuBLAS
        # before and after the sweep, the mean of the two.
        found = common.best_configs_interleaved(
            {name: (lambda cfg, impl=impl: launcher(impl, a, bt, c, cfg, sms))
             for name, impl in impls.items()}, configs, max(args.reps // 4, 10))
        torch_ms.append(common.time_ms(lambda: torch.matmul(a, bt.T), reps=args.reps))
        res = {"torch": (sum(torch_ms) / 2, None, 0.0)}
        for name, impl in impls.items():
            best, errors = found[name]
            if best is None:
                rows.append({"bench": "matmul_persistent", "case": case, "impl": name,
                             "ok": False, "error": "; ".join(errors)[:400]})
                print(f"{case:<26} {name:<8} FAILED: {'; '.join(errors)[:200]}")
                continue
            ms, cfg = best
            common.poison_(c)
            launcher(impl, a, bt, c, cfg, sms)()
            torch.cuda.synchronize()
            res[name] = (ms, cfg, common.rel_err(c.float(), ref))
        t_ms = res["torch"][0]
        tr_ms = res.get("triton", (None,))[0]
        for name, (ms, cfg, err) in res.items():
            ok = err <= 2e-2
            rows.append({"bench": "matmul_persistent", "case": case, "impl": name, "ms": ms,
                         "tflops": flops / (ms * 1e-3) / 1e12, "rel_err": err, "ok": ok,
                         "config": list(cfg) if cfg else None, "bytes": 0})
            vs_tr = f"{ms / tr_ms:8.2f}x" if tr_ms else f"{'-':>9}"
            print(f"{case:<26} {name:<8} {ms:9.4f} {flops / (ms * 1e-3) / 1e12:8.1f} "
                  f"{err:9.2e} {ms / t_ms:8.2f}x {vs_tr}  {cfg or ''}{'' if ok else '  WRONG'}")
        del a, bt, c, ref
        torch.cuda.empty_cache()
    print("(time ratios: >1 means slower than the peer)")
    common.save_rows(args.json, rows,
                     {"matmul_persistent": {"device": torch.cuda.get_device_name(0)}})
    bad = [r for r in rows if r["impl"] == "tritium" and not r.get("ok", True)]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
