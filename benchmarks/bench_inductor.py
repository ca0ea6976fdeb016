"""torch.compile on tritium beside stock Inductor (Triton 3.6), caches empty: the models of
python/test/_inductor_models.py run in fresh processes with fresh Inductor and tritium caches
(three: tritium; stock with its default compile workers; stock with one compile thread, for its
compile time), and per model it prints the first calls' seconds (Inductor's compile, most of it,
plus the runs and the eager reference), the seconds inside `triton.compile`, and a warm compiled
call's microseconds, with ratios. Needs a CUDA GPU, and Triton for the peer columns.
BENCH_INDUCTOR_FRESH=1: one process per model and column instead of one per column;
BENCH_INDUCTOR_REPEAT=N (default 2): the tritium and stock columns each run N times, interleaved,
and every figure is the best of its N processes (a warm step of these small models is host time,
which moves by tens of microseconds between processes)."""

import json
import os
import subprocess
import sys
import tempfile

import common

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS_PY = os.path.join(HERE, "..", "python", "test", "_inductor_models.py")
PYTHON_DIR = os.path.join(HERE, "..", "python")
# All ten by default; BENCH_INDUCTOR_MODELS="mlp softmax" (a space-separated list) for fewer.
DEFAULT_MODELS = ["mlp", "reductions", "elementwise", "conv_bn", "dynamic", "training",
                  "softmax", "cumsum", "dropout", "transformer"]


def run(models, stock, compile_time=False, timeout=900):
    """`models` in one fresh process with empty caches: {model: its JSON row,
    or {"ok": False, "error"}}. compile_time: add up the seconds in
    `triton.compile` (for stock Inductor, with one compile thread, so that the
    compiles happen in that process)."""
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.path.abspath(PYTHON_DIR) + os.pathsep + env.get("PYTHONPATH", "")
        env["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(tmp, "inductor")
        env["TRITIUM_CACHE_DIR"] = os.path.join(tmp, "tritium")
        env["TRITON_CACHE_DIR"] = os.path.join(tmp, "triton")
        env["TRITIUM_INDUCTOR_DEVICE"] = "cuda"
        env["TRITIUM_INDUCTOR_STOCK"] = "1" if stock else "0"
        env["TRITIUM_INDUCTOR_COMPILE_TIME"] = "1" if compile_time else "0"
        # The stock compile-time process has no warm column (one compile thread).
        env["TRITIUM_INDUCTOR_WARM_STEPS"] = "0" if stock and compile_time else "200"
        try:
            proc = subprocess.run([sys.executable, MODELS_PY, *models], env=env,
                                  capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {m: {"ok": False, "error": "timed out"} for m in models}
        lines = [json.loads(x) for x in proc.stdout.splitlines() if x.startswith("{")]
        out = {r["model"]: r for r in lines if "model" in r}
        failed = {"ok": False, "error": (proc.stderr or proc.stdout)[-300:]}
        return {m: out.get(m, failed) for m in models}


def run_all(models, stock, compile_time=False):
    """run() for every model: one process for all (the first model's figure
    carries Inductor's one-time start-up), or one per model with
    BENCH_INDUCTOR_FRESH=1."""
    if os.environ.get("BENCH_INDUCTOR_FRESH") == "1":
        out = {}
        for m in models:
            out.update(run([m], stock, compile_time))
        return out
    return run(models, stock, compile_time)


def _best_of(runs, models):
    """Per model, the fastest of several processes' figures (each field on its own); a model
    that failed in any run is reported failed, with that run's error."""
    out = {}
    for m in models:
        rows = [r[m] for r in runs]
        failed = [r for r in rows if not r.get("ok")]
        if failed:
            out[m] = failed[0]
            continue
        best = dict(rows[0])
        for field in ("seconds", "compile_seconds", "warm_us"):
            values = [r[field] for r in rows if r.get(field) is not None]
            if values:
                best[field] = min(values)
        best["runs"] = len(rows)
        out[m] = best
    return out


def _error_line(err):
    """The line of an error worth printing (Dynamo appends advice lines)."""
    lines = [x for x in str(err).strip().splitlines()
             if x.strip() and not x.startswith(("Set TORCH", "You can suppress"))]
    return (lines or [""])[0][:160]


def _ratio(a, b):
    return f"{a / b:.2f}x" if a is not None and b else "-"


def main():
    args = common.parse_args(__doc__)
    import torch  # noqa: PLC0415

    if not torch.cuda.is_available():
        print("inductor: no CUDA GPU; skipped")
        return 0
    triton, _ = common.import_triton()
    chosen = os.environ.get("BENCH_INDUCTOR_MODELS", "").split()
    models = chosen if chosen and chosen != ["all"] else DEFAULT_MODELS
    if args.quick:
        models = models[:2]
    print(f"inductor first call: {torch.cuda.get_device_name(0)}")
    print(f"{'model':<12} {'first s':>8} {'stock s':>8} {'ratio':>6}  {'compile s':>9} "
          f"{'stock':>7} {'ratio':>6}  {'warm us':>8} {'stock':>8} {'ratio':>6}  kernels")
    rows, status = [], 0
    # The warm steps of these small models are host time, which moves by tens of us between
    # processes: each column runs BENCH_INDUCTOR_REPEAT times, tritium and stock interleaved,
    # and each figure is the best of its runs.
    repeat = max(1, int(os.environ.get("BENCH_INDUCTOR_REPEAT", "2")))
    tritium_runs, stock_runs = [], []
    for _ in range(repeat):
        tritium_runs.append(run_all(models, stock=False, compile_time=True))
        if triton is not None:
            stock_runs.append(run_all(models, stock=True))
    tritium_rows = _best_of(tritium_runs, models)
    stock_rows = _best_of(stock_runs, models) if stock_runs else {}
    stock_compile = run_all(models, stock=True, compile_time=True) if triton is not None else {}
    for m in models:
        t, s, sc = tritium_rows[m], stock_rows.get(m), stock_compile.get(m)
        if not t.get("ok"):
            status = 1
            stock = f"; stock {s['seconds']:.2f} s" if s and s.get("ok") else ""
            print(f"{m:<12} FAILED: {_error_line(t.get('error'))}{stock}")
            rows.append({"bench": "inductor", "case": m, "impl": "tritium", "ok": False,
                         "error": t.get("error")})
            continue
        s = s if s and s.get("ok") else {}
        sc = sc if sc and sc.get("ok") else {}
        ts, ss = t["seconds"], s.get("seconds")
        tc, sc_s = t.get("compile_seconds"), sc.get("compile_seconds")
        tw, sw = t.get("warm_us"), s.get("warm_us")

        def fmt(x, spec):
            return "-" if x is None else format(x, spec)

        print(f"{m:<12} {ts:>8.2f} {fmt(ss, '8.2f')} {_ratio(ts, ss):>6}  {fmt(tc, '9.3f')} "
              f"{fmt(sc_s, '7.3f')} {_ratio(tc, sc_s):>6}  {fmt(tw, '8.1f')} {fmt(sw, '8.1f')} "
              f"{_ratio(tw, sw):>6}  {t['compiles']}")
        rows.append({"bench": "inductor", "case": m, "impl": "tritium", "ok": True,
                     "seconds": ts, "compile_seconds": tc, "warm_us": tw,
                     "compiles": t["compiles"]})
        if ss:
            rows.append({"bench": "inductor", "case": m, "impl": "stock", "ok": True,
                         "seconds": ss, "compile_seconds": sc_s, "warm_us": sw})
    print("(first s: the model's first calls in a fresh process, caches empty, stock Inductor "
          "with its default compile workers; compile s: seconds inside triton.compile in such a "
          "process, stock with one compile thread; warm us: one compiled call, warm; kernels: "
          "compiles by tritium; ratio: tritium over stock, < 1 means faster; first s, compile s "
          f"and warm us: the best of {repeat} processes each)")
    if args.json:
        common.save_rows(args.json, rows, {"inductor": {"device": torch.cuda.get_device_name(0)}})
    return status


if __name__ == "__main__":
    sys.exit(main())
