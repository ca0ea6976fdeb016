"""The tutorial matmul's time against K, tritium beside Triton and torch in one process: a fixed
per-tile cost (prologue, epilogue) shows as the intercept of time(K), a cost per K iteration as
its slope. Run on the GPU machine from the repository root:

    PYTHONPATH=python python3 tools/matmul_k_sweep.py [CONFIG ...]

CONFIG is BM,BN,BK,WARPS,STAGES (default: 128,256,64,8,3 and 64,256,32,4,4). fp16, M = N = 4096
for K = 64 ... 4096 and M = N = 8192 for K = 64, 128; each output checked against torch.matmul
(poisoned with NaN first); the median of 5 interleaved rounds of 50 launches each, in us
(benchmarks/RESULTS.md, twelfth session, has a run)."""
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "benchmarks"))

import bench_matmul as B  # noqa: E402
import common  # noqa: E402
import torch  # noqa: E402

SIZES = [(4096, [64, 128, 256, 512, 1024, 2048, 4096]), (8192, [64, 128])]


def main(argv):
    cfgs = [tuple(int(v) for v in a.split(",")) for a in argv] or \
        [(128, 256, 64, 8, 3), (64, 256, 32, 4, 4)]
    ours, tri = B.build("tritium"), B.build("triton")
    print(f"{'config':<22} {'M=N':>5} {'K':>5} {'tritium':>9} {'Triton':>9} {'torch':>9} "
          f"{'Triton/tritium':>15}")
    for cfg in cfgs:
        for n, ks in SIZES:
            for k in ks:
                a = torch.randn(n, k, device="cuda", dtype=torch.float16)
                b = torch.randn(k, n, device="cuda", dtype=torch.float16)
                c = torch.empty(n, n, device="cuda", dtype=torch.float16)
                ref = torch.matmul(a, b).float()
                fns = {"tritium": B.launcher(ours, a, b, c, cfg),
                       "triton": B.launcher(tri, a, b, c, cfg),
                       "torch": lambda: torch.matmul(a, b)}  # noqa: B023
                for name in ("tritium", "triton"):
                    common.poison_(c)
                    fns[name]()
                    torch.cuda.synchronize()
                    err = common.rel_err(c.float(), ref)
                    if err > 2e-2:
                        print(f"WRONG: {name} {cfg} K={k}: relative error {err:.3g}")
                times = {name: [] for name in fns}
                for _ in range(5):
                    for name, fn in fns.items():
                        times[name].append(common.time_ms(fn, reps=50) * 1e3)
                m = {name: statistics.median(v) for name, v in times.items()}
                print(f"{str(cfg):<22} {n:>5} {k:>5} {m['tritium']:9.1f} {m['triton']:9.1f} "
                      f"{m['torch']:9.1f} {m['triton'] / m['tritium']:15.3f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
