"""Where a warm torch.compile step spends its time, tritium under Inductor or stock (GPU machine):

    TRITIUM_INDUCTOR_DEVICE=cuda [TRITIUM_INDUCTOR_STOCK=1] python tools/profile_inductor.py MODEL...

For each model of python/test/_inductor_models.py: the warm step in microseconds, the GPU kernels
of one step (torch.profiler: name, calls, GPU time per call), the host time per step spent in each
Python function (cProfile, the top entries by own time), and the same step with CUDA launches
synchronised one by one (so host overhead and GPU time separate)."""

import cProfile
import io
import os
import pstats
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python", "test"))
import _inductor_models as models  # noqa: E402  (installs tritium under Inductor unless STOCK)

import torch  # noqa: E402


def _per_step_us(warm, steps):
    models._sync()
    t = time.perf_counter()
    for _ in range(steps):
        warm()
    models._sync()
    return (time.perf_counter() - t) / steps * 1e6


def profile(name, steps=200):
    torch._dynamo.reset()
    _, warm = models.MODELS[name]()
    for _ in range(10):
        warm()
    us = min(_per_step_us(warm, steps) for _ in range(3))
    print(f"\n##### {name} ({'stock' if models.STOCK else 'tritium'}): warm {us:.1f} us/step")

    from torch.profiler import ProfilerActivity, profile as tprofile  # noqa: PLC0415

    with tprofile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(20):
            warm()
        models._sync()
    rows = []
    for e in prof.key_averages():
        dev = getattr(e, "self_device_time_total", None)
        if dev is None:
            dev = e.self_cuda_time_total
        if dev > 0:
            rows.append((dev / 20, e.count / 20, e.key))
    rows.sort(reverse=True)
    print(f"GPU per step: {sum(r[0] for r in rows):.1f} us in {sum(r[1] for r in rows):.0f} "
          "kernels/copies")
    for dev, count, key in rows[:15]:
        print(f"  {dev:8.1f} us  x{count:4.1f}  {key[:110]}")
    cpu_rows = sorted(((e.self_cpu_time_total / 20, e.count / 20, e.key)
                       for e in prof.key_averages()), reverse=True)
    print("host (profiler, self CPU per step):")
    for cpu, count, key in cpu_rows[:10]:
        print(f"  {cpu:8.1f} us  x{count:4.1f}  {key[:110]}")

    pr = cProfile.Profile()
    pr.enable()
    for _ in range(steps):
        warm()
    models._sync()
    pr.disable()
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(18)
    print("cProfile (tottime over", steps, "steps):")
    print("\n".join(s.getvalue().splitlines()[:40]))


if __name__ == "__main__":
    for n in sys.argv[1:] or ["conv_bn", "cumsum", "transformer", "softmax", "mlp"]:
        try:
            profile(n)
        except Exception as e:  # noqa: BLE001 -- report and go on
            print(f"##### {n}: {type(e).__name__}: {e}")
