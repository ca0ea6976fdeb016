"""Liger-Kernel's dyt kernels with every autotune config timed alone (no autotuner), under tritium or
Triton, one JSON line per (kernel, dtype, config). The autotuned op's time depends on which config
the tuning picks in that process; this separates the compiler's part (each config's kernel) from
that pick. Run once per implementation, from the repository root, on the GPU machine:

    PYTHONPATH=python python3 tools/liger_dyt_configs.py tritium > tritium.jsonl
    PYTHONPATH=python python3 tools/liger_dyt_configs.py triton > triton.jsonl

4096x4096 inputs, HAVE_BETA; the median of 200 single launches timed with CUDA events, no L2 flush
(benchmarks/RESULTS.md, eleventh session, has a run)."""
import json
import os
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "benchmarks"))

M, N = 4096, 4096


def bench_us(fn, n=200):
    """Median of n single launches, each between two CUDA events, in microseconds."""
    import torch  # noqa: PLC0415

    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(n):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2] * 1000


def main(impl):
    import bench_liger  # noqa: PLC0415

    bench_liger.choose_triton(impl)  # `import triton` is tritium's surface or Triton itself
    root = tempfile.mkdtemp(prefix="liger-wheel-")
    with zipfile.ZipFile(bench_liger.DEFAULT_WHEEL) as z:
        z.extractall(root)
    sys.path.insert(0, root)
    import torch  # noqa: PLC0415
    import triton  # noqa: PLC0415

    import liger_kernel.ops.dyt as dyt  # noqa: PLC0415

    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for dt in (torch.float32, torch.bfloat16):
        torch.manual_seed(0)
        x = torch.randn(M, N, device="cuda", dtype=dt)
        dy = torch.randn_like(x)
        y = torch.empty_like(x)
        dx = torch.empty_like(x)
        alpha = torch.tensor([0.5], device="cuda", dtype=dt)
        gamma = torch.rand(N, device="cuda", dtype=dt) + 0.5
        beta = torch.randn(N, device="cuda", dtype=dt)
        da = torch.zeros(sms, triton.cdiv(N, 512), dtype=torch.float32, device="cuda")
        dg = torch.empty(sms, N, dtype=torch.float32, device="cuda")
        db = torch.empty_like(dg)
        for cfg in dyt._dyt_fwd_kernel.configs:
            bn, nw, ns = cfg.kwargs["BLOCK_N"], cfg.num_warps, cfg.num_stages
            opts = dict(BLOCK_N=bn, num_warps=nw, num_stages=ns)

            def fwd():
                dyt._dyt_fwd_kernel.fn[(triton.cdiv(N, bn), M)](x, y, alpha, gamma, beta, True, N,
                                                                 **opts)

            def bwd():
                dyt._dyt_bwd_kernel.fn[(triton.cdiv(N, bn), sms)](dy, dx, da, dg, db, x, alpha,
                                                                   gamma, True, M, N, **opts)

            for name, fn in (("fwd", fwd), ("bwd", bwd)):
                print(json.dumps({"impl": impl, "k": name, "dt": str(dt)[6:], "bn": bn, "nw": nw,
                                  "ns": ns, "us": round(bench_us(fn), 2)}), flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in ("tritium", "triton"):
        sys.exit("usage: liger_dyt_configs.py tritium|triton")
    main(sys.argv[1])
