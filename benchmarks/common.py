"""Shared helpers of the benchmarks: CUDA-event timing with the L2 flushed
before every timed run, correctness checks against torch (outputs poisoned
with NaN first), the copy-bandwidth ceiling, and the result table / JSON.

Every benchmark runs tritium, torch and (when importable) Triton in one
process, so the numbers share the card's state. Triton is only a peer we
measure against: it is imported here and in the benchmark files, never from
python/tritium.
"""

import argparse
import json
import math
import os
import statistics
import sys
import time
import traceback

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

# The ceiling all achieved rates are compared with: device-to-device copy
# bandwidth (bytes read + written) measured on this workplace's H200s.
NOMINAL_COPY_GBPS = 4300.0


def import_triton():
    """(triton, triton.language) or (None, None)."""
    if os.environ.get("TRITIUM_BENCH_NO_TRITON"):
        return None, None
    try:
        import triton
        import triton.language as tl
        return triton, tl
    except Exception:  # not installed, or broken for this GPU
        return None, None


def load_kernels_as(path, name, tag):
    """The module of kernel file `path` (written for tritium: `import tritium as triton`, `import
    tritium.language as tl`, `from tritium.tools...`) with those imports of `name` ("tritium" or
    "triton") instead, written to a file of its own so that both compilers can read its source."""
    import importlib.util  # noqa: PLC0415
    import tempfile  # noqa: PLC0415
    with open(path) as f:
        src = f.read()
    assert "import tritium as triton\n" in src, path
    for old, new in [("import tritium as triton\n", f"import {name} as triton\n"),
                     ("import tritium.language as tl\n", f"import {name}.language as tl\n"),
                     ("from tritium.tools.", f"from {name}.tools.")]:
        src = src.replace(old, new)
    dest = os.path.join(tempfile.mkdtemp(), f"{tag}_{name}.py")
    with open(dest, "w") as f:
        f.write(src)
    spec = importlib.util.spec_from_file_location(f"{tag}_{name}", dest)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def parse_args(description):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--json", help="append result rows to this JSON file")
    p.add_argument("--reps", type=int, default=100, help="timed runs per case (median)")
    p.add_argument("--quick", action="store_true", help="fewer reps, for a smoke run")
    a = p.parse_args()
    if a.quick:
        a.reps = 10
    return a


class Flusher:
    """Writing a buffer larger than L2 (60 MB on an H200) before each timed
    run evicts the previous run's data, so every run reads from HBM."""

    def __init__(self, nbytes=256 << 20):
        self.buf = torch.empty(nbytes, dtype=torch.int8, device="cuda")

    def __call__(self):
        self.buf.zero_()


_flusher = None


def flusher():
    global _flusher
    if _flusher is None:
        _flusher = Flusher()
    return _flusher


def time_ms(fn, reps=100, warmup=5, flush=True):
    """Median GPU time of fn() in ms over `reps` runs, each between two CUDA
    events on the current stream, with the L2 flushed before it (the flush
    also keeps the GPU busy while Python issues the launch, so the host's
    launch overhead stays out of the measurement)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    f = flusher() if flush else (lambda: None)
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        f()
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends))


def host_us_per_launch(fn, n=20000):
    """Microseconds per launch over n back-to-back calls of fn() (a tiny
    kernel): (wall time until the last call returned, wall time until the
    GPU finished them all), each divided by n. The best of 3 runs."""
    for _ in range(100):
        fn()
    torch.cuda.synchronize()
    best = (float("inf"), float("inf"))
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        best = min(best, ((t1 - t0) / n * 1e6, (t2 - t0) / n * 1e6))
    return best


def best_config(make_run, configs, reps):
    """((ms, cfg) of the fastest config that compiles and runs, or None; errors) where
    make_run(cfg) returns the launch. A config one compiler cannot build is skipped, as
    autotuning does, and its error kept for the report. BENCH_CONFIGS=1 in the environment
    prints every config's time."""
    import torch  # noqa: PLC0415
    verbose = os.environ.get("BENCH_CONFIGS") == "1"
    best, errors = None, []
    for cfg in configs:
        try:
            run = make_run(cfg)
            run()
            torch.cuda.synchronize()
            ms = time_ms(run, reps=reps)
        except Exception as e:  # noqa: BLE001
            errors.append(f"{cfg}: {type(e).__name__}: {str(e).splitlines()[0][:160]}")
            continue
        if verbose:
            print(f"    config {cfg}: {ms:.4f} ms", flush=True)
        if best is None or ms < best[0]:
            best = (ms, cfg)
    return best, errors


def best_configs_interleaved(make_runs, configs, reps, rounds=None):
    """best_config for several implementations at once, fairly: `make_runs` maps a name to
    make_run(cfg); every (implementation, config) pair is timed once a round, the pairs of a
    round in turn, over `rounds` rounds (BENCH_ROUNDS, default 2), and each pair's median
    counts. Timed one implementation after the other, a long compute-bound sweep heats the GPU
    and the later one runs at lower clocks (the H100's cuBLAS read 746, 659 and 632 TFLOP/s at
    8192^3 across one minute); interleaved, each sees the same drift. Returns {name: ((ms, cfg)
    or None, errors)}."""
    import torch  # noqa: PLC0415
    rounds = rounds or int(os.environ.get("BENCH_ROUNDS", "2"))
    verbose = os.environ.get("BENCH_CONFIGS") == "1"
    runs, errors, times = {}, {n: [] for n in make_runs}, {}
    for name, make_run in make_runs.items():
        for cfg in configs:
            try:
                run = make_run(cfg)
                run()
                torch.cuda.synchronize()
                runs[(name, cfg)] = run
            except Exception as e:  # noqa: BLE001
                errors[name].append(f"{cfg}: {type(e).__name__}: {str(e).splitlines()[0][:160]}")
    for _ in range(rounds):
        for cfg in configs:
            for name in make_runs:
                if (name, cfg) in runs:
                    times.setdefault((name, cfg), []).append(time_ms(runs[(name, cfg)], reps=reps))
    out = {}
    for name in make_runs:
        best = None
        for cfg in configs:
            if (name, cfg) not in times:
                continue
            ms = statistics.median(times[(name, cfg)])
            if verbose:
                print(f"    {name} config {cfg}: {ms:.4f} ms", flush=True)
            if best is None or ms < best[0]:
                best = (ms, cfg)
        out[name] = (best, errors[name])
    return out


def measure_copy_gbps(nbytes=2 << 30):
    """Device-to-device copy bandwidth (read + write) in GB/s."""
    src = torch.empty(nbytes // 4, dtype=torch.float32, device="cuda").uniform_()
    dst = torch.empty_like(src)
    ms = time_ms(lambda: dst.copy_(src), reps=20, warmup=3, flush=False)
    del src, dst
    return 2 * nbytes / (ms * 1e-3) / 1e9


def poison_(*ts):
    for t in ts:
        if t.dtype.is_floating_point:
            t.fill_(float("nan"))
        else:
            t.fill_(-7)


def rel_err(out, ref):
    """||out - ref|| / ||ref|| in float64; inf when out holds NaN."""
    o, r = out.double(), ref.double()
    if torch.isnan(o).any():
        return math.inf
    return float((o - r).norm() / r.norm().clamp_min(1e-30))


class Case:
    """One benchmark case: impls maps a name (tritium, torch, triton) to a
    callable that runs it once; check(name) returns the error of the last
    run against the reference (after poisoning the outputs, running once)."""

    def __init__(self, bench, case, nbytes, impls, check, tol):
        self.bench, self.case, self.nbytes = bench, case, nbytes
        self.impls, self.check, self.tol = impls, check, tol


def run_case(c, reps, ceiling_gbps):
    rows = []
    for name, fn in c.impls.items():
        row = {"bench": c.bench, "case": c.case, "impl": name, "bytes": c.nbytes}
        try:
            err = c.check(name)
            row["rel_err"] = err
            row["ok"] = bool(err <= c.tol)
            ms = time_ms(fn, reps=reps)
            row["ms"] = ms
            row["gbps"] = c.nbytes / (ms * 1e-3) / 1e9
            row["frac_of_copy_bw"] = row["gbps"] / ceiling_gbps
        except Exception as e:  # a failing implementation must not stop the others
            row["ok"] = False
            row["error"] = f"{type(e).__name__}: {e}".splitlines()[0][:400]
            row["traceback"] = traceback.format_exc()[-2000:]
        rows.append(row)
    return rows


def print_rows(rows, ceiling_gbps):
    by_case = {}
    for r in rows:
        by_case.setdefault((r["bench"], r["case"]), {})[r["impl"]] = r
    print(f"\n{'bench':<12} {'case':<24} {'impl':<8} {'ms':>9} {'GB/s':>8} {'%copy':>6} "
          f"{'rel_err':>9}  {'vs torch':>8} {'vs triton':>9}")
    for (bench, case), impls in by_case.items():
        t = impls.get("torch", {}).get("ms")
        tr = impls.get("triton", {}).get("ms")
        for name, r in impls.items():
            if "ms" not in r:
                status = r.get("error", "check failed")
                print(f"{bench:<12} {case:<24} {name:<8} FAILED: {status[:90]}")
                continue
            vs_t = f"{r['ms'] / t:8.2f}x" if t else f"{'-':>9}"
            vs_tr = f"{r['ms'] / tr:8.2f}x" if tr else f"{'-':>9}"
            flag = "" if r["ok"] else "  WRONG"
            print(f"{bench:<12} {case:<24} {name:<8} {r['ms']:9.4f} {r['gbps']:8.0f} "
                  f"{100 * r['frac_of_copy_bw']:5.1f}% {r['rel_err']:9.2e} {vs_t} {vs_tr}{flag}")
    print("(time ratios: >1 means slower than the peer; %copy: achieved GB/s over the measured "
          f"copy bandwidth {ceiling_gbps:.0f} GB/s)")


def save_rows(path, rows, meta):
    if not path:
        return
    data = {"meta": {}, "rows": []}
    if os.path.exists(path):
        with open(path) as f:
            data = json.load(f)
    data["meta"].update(meta)
    data["rows"].extend(rows)
    with open(path, "w") as f:
        json.dump(data, f, indent=1)


def environment(ceiling_gbps):
    import tritium  # noqa: PLC0415
    props = torch.cuda.get_device_properties(0)
    triton, _ = import_triton()
    return {"device": props.name, "sms": props.multi_processor_count, "torch": torch.__version__,
            "triton": getattr(triton, "__version__", None), "tritium": tritium.__version__,
            "copy_gbps_measured": ceiling_gbps}


def main(bench, description, make_cases):
    """Runs make_cases(triton, tl) -> [Case], prints the table, saves JSON.
    Exit status 0 unless a tritium result is wrong or fails."""
    args = parse_args(description)
    if not torch.cuda.is_available():
        print(f"{bench}: no CUDA GPU; skipped")
        return 0
    ceiling = measure_copy_gbps()
    print(f"{bench}: {torch.cuda.get_device_name(0)}; copy bandwidth {ceiling:.0f} GB/s "
          f"(nominal {NOMINAL_COPY_GBPS:.0f})")
    triton, tl = import_triton()
    if triton is None:
        print(f"{bench}: triton is not importable; comparing with torch only")
    rows = []
    for case in make_cases(triton, tl):
        rows.extend(run_case(case, args.reps, ceiling))
        torch.cuda.empty_cache()
    extra = getattr(make_cases, "extra_rows", None)
    if extra:
        rows.extend(extra(triton, tl))
    print_rows([r for r in rows if "case" in r and r.get("kind") != "launch"], ceiling)
    launch = [r for r in rows if r.get("kind") == "launch"]
    for r in launch:
        v = r.get("us_per_launch")
        print(f"{r['bench']:<12} {r['case']:<24} {r['impl']:<8} "
              + (f"{v:8.2f} us/launch (host), {r['us_per_launch_synced']:8.2f} us/launch "
                 "(until the GPU finished)" if v is not None else f"FAILED: {r.get('error')}"))
    save_rows(args.json, rows, {bench: environment(ceiling)})
    bad = [r for r in rows if r["impl"] == "tritium" and not r.get("ok", True)]
    return 1 if bad else 0
