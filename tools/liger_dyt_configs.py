"""Liger-Kernel's dyt kernels with every autotune config timed alone (no autotuner), under tritium or
Triton, one JSON line per (kernel, dtype, config). The autotuned op's time depends on which config
the tuning picks in that process; this separates the compiler's part (each config's kernel) from
that pick. Run once per implementation, from the repository root, on the GPU machine:

    PYTHONPATH=python python3 tools/liger_dyt_configs.py tritium > tritium.jsonl
    PYTHONPATH=python python3 tools/liger_dyt_configs.py triton > triton.jsonl

4096x4096 inputs, HAVE_BETA; the median of 200 single launches timed with CUDA events, no L2 flush
(benchmarks/RESULTS.md, eleventh session, has a run). Without the flush a 4096x4096 bf16 input
(32 MB) stays in the H200's L2, which hides load-latency differences: `--tuned` instead runs each
side's own autotuner (L2 flushed, as the op runs it) and prints its five fastest configs with
their medians (twelfth session's run: level in fp32, tritium 1.3-1.5x in bf16):

    PYTHONPATH=python python3 tools/liger_dyt_configs.py tritium --tuned"""
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


def tuned(dyt, torch, impl):
    """Each dyt kernel tuned by its own autotuner; one JSON line per (kernel, dtype): the pick
    and the five fastest configs' median us."""
    for dt in (torch.float32, torch.bfloat16):
        torch.manual_seed(0)
        x = torch.randn(M, N, device="cuda", dtype=dt)
        dy = torch.randn_like(x)
        alpha = torch.tensor([0.5], device="cuda", dtype=dt)
        gamma = torch.rand(N, device="cuda", dtype=dt) + 0.5
        beta = torch.randn(N, device="cuda", dtype=dt)
        dyt.liger_dyt_fwd(x, alpha, gamma, beta)
        dyt.liger_dyt_bwd(dy, x, alpha, gamma, beta)
        torch.cuda.synchronize()
        for name, kernel in (("fwd", dyt._dyt_fwd_kernel), ("bwd", dyt._dyt_bwd_kernel)):
            timings = sorted((v[0] if isinstance(v, (list, tuple)) else v, str(c))
                             for c, v in kernel.configs_timings.items())
            print(json.dumps({"impl": impl, "k": name, "dt": str(dt)[6:],
                              "best": str(kernel.best_config),
                              "top5": [(round(ms * 1000, 1), c) for ms, c in timings[:5]]}),
                  flush=True)


def main(impl, mode=None):
    import bench_liger  # noqa: PLC0415

    bench_liger.choose_triton(impl)  # `import triton` is tritium's surface or Triton itself
    root = tempfile.mkdtemp(prefix="liger-wheel-")
    with zipfile.ZipFile(bench_liger.DEFAULT_WHEEL) as z:
        z.extractall(root)
    sys.path.insert(0, root)
    import torch  # noqa: PLC0415
    import triton  # noqa: PLC0415

    import liger_kernel.ops.dyt as dyt  # noqa: PLC0415

    if mode == "--tuned":
        return tuned(dyt, torch, impl)
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
    if len(sys.argv) not in (2, 3) or sys.argv[1] not in ("tritium", "triton") or \
            sys.argv[2:] not in ([], ["--tuned"]):
        sys.exit("usage: liger_dyt_configs.py tritium|triton [--tuned]")
    main(*sys.argv[1:])
