"""Compile time: tritium beside Triton, each measured in fresh processes.

Cases (each run in a new Python process, so nothing is cached in memory):
  cold   the first call of a new specialisation with an empty disk cache
         (fresh TRITIUM_CACHE_DIR / TRITON_CACHE_DIR): code generation,
         passes, PTX, ptxas (or the driver's JIT), module load and the
         first launch, until torch.cuda.synchronize() returns;
  warm   the first call in a new process whose disk cache holds the kernel;
for the vector-add kernel (fp32, BLOCK 1024, 4 warps), the layer-norm
forward kernel (fp16, N 4096, BLOCK 4096, 8 warps) and, on a GPU, the
tutorial matmul (fp16 4096^3, 128x128x64, 4 warps, 4 stages). The interpreter, torch
and the compiler are imported, and the CUDA context made, before the clock
starts. For tritium the cold compile is also split into phases
(TRITIUM_COMPILE_TIMES=1): cache lookup, AST walk, tile passes, GPU
passes + PTX, ptxas, cache store.

Autotuning (softmax, 4 configs that differ in num_warps): a first process
tunes and stores the result; a second process with the same cache dirs
runs the kernel: its first call's wall time and (tritium) its timing runs,
which must be 0.

Batch compile (no GPU needed): the 8 configs of an autotuned softmax
compiled one by one vs in one batch (compiler.compile_gpu_batch: the GPU
passes, PTX and ptxas of all configs in parallel on a C++ thread pool).

Without a GPU (or with --compile-only) the cold and warm cases compile
with tritium.compile(target="sm_90a") instead of launching: PTX and, when
ptxas is installed, cubin; Triton is not measured then.

Run: python3 benchmarks/bench_compile.py [--json results.json] [--quick] [--reps N]
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.abspath(os.path.join(HERE, "..", "python"))
RESULT_TAG = "BENCH_COMPILE_RESULT "

# ----------------------------------------------------------------------------------------------
# kernels, defined inside functions so that a child process imports only the
# compiler it measures


def tritium_kernels():
    import tritium
    import tritium.language as tl

    @tritium.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        y = tl.load(y_ptr + offs, mask=mask)
        tl.store(out_ptr + offs, x + y, mask=mask)

    @tritium.jit
    def layer_norm_fwd(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
        row = tl.program_id(0)
        Y += row * stride
        X += row * stride
        _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
        for off in range(0, N, BLOCK_SIZE):
            cols = off + tl.arange(0, BLOCK_SIZE)
            a = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
            _mean += a
        mean = tl.sum(_mean, axis=0) / N
        _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
        for off in range(0, N, BLOCK_SIZE):
            cols = off + tl.arange(0, BLOCK_SIZE)
            x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
            x = tl.where(cols < N, x - mean, 0.)
            _var += x * x
        var = tl.sum(_var, axis=0) / N
        rstd = 1 / tl.sqrt(var + eps)
        tl.store(Mean + row, mean)
        tl.store(Rstd + row, rstd)
        for off in range(0, N, BLOCK_SIZE):
            cols = off + tl.arange(0, BLOCK_SIZE)
            mask = cols < N
            w = tl.load(W + cols, mask=mask)
            b = tl.load(B + cols, mask=mask)
            x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
            x_hat = (x - mean) * rstd
            y = x_hat * w + b
            tl.store(Y + cols, y, mask=mask)

    @tritium.jit
    def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        x = tl.load(in_ptr + row * in_stride + cols, mask=cols < n_cols, other=-float("inf"))
        z = x - tl.max(x, axis=0)
        num = tl.exp(z)
        tl.store(out_ptr + row * out_stride + cols, num / tl.sum(num, axis=0), mask=cols < n_cols)

    return tritium, {"vector_add": add_kernel, "layer_norm": layer_norm_fwd,
                     "softmax": softmax_kernel}


def triton_kernels():
    import triton
    import triton.language as tl

    @triton.jit
    def add_kernel_triton(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        y = tl.load(y_ptr + offs, mask=mask)
        tl.store(out_ptr + offs, x + y, mask=mask)

    @triton.jit
    def layer_norm_fwd_triton(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
        row = tl.program_id(0)
        Y += row * stride
        X += row * stride
        _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
        for off in range(0, N, BLOCK_SIZE):
            cols = off + tl.arange(0, BLOCK_SIZE)
            a = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
            _mean += a
        mean = tl.sum(_mean, axis=0) / N
        _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
        for off in range(0, N, BLOCK_SIZE):
            cols = off + tl.arange(0, BLOCK_SIZE)
            x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
            x = tl.where(cols < N, x - mean, 0.)
            _var += x * x
        var = tl.sum(_var, axis=0) / N
        rstd = 1 / tl.sqrt(var + eps)
        tl.store(Mean + row, mean)
        tl.store(Rstd + row, rstd)
        for off in range(0, N, BLOCK_SIZE):
            cols = off + tl.arange(0, BLOCK_SIZE)
            mask = cols < N
            w = tl.load(W + cols, mask=mask)
            b = tl.load(B + cols, mask=mask)
            x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
            x_hat = (x - mean) * rstd
            y = x_hat * w + b
            tl.store(Y + cols, y, mask=mask)

    @triton.jit
    def softmax_kernel_triton(out_ptr, in_ptr, in_stride, out_stride, n_cols,
                              BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        x = tl.load(in_ptr + row * in_stride + cols, mask=cols < n_cols, other=-float("inf"))
        z = x - tl.max(x, axis=0)
        num = tl.exp(z)
        tl.store(out_ptr + row * out_stride + cols, num / tl.sum(num, axis=0), mask=cols < n_cols)

    return triton, {"vector_add": add_kernel_triton, "layer_norm": layer_norm_fwd_triton,
                    "softmax": softmax_kernel_triton}


VEC_N, VEC_BLOCK = 1 << 20, 1024
LN_M, LN_N = 1024, 4096
LN_BLOCK, LN_WARPS = 4096, 8   # Triton's tutorial choice for N = 4096 fp16
SM_M, SM_N = 4096, 1024
SM_WARPS = (1, 2, 4, 8)

COMPILE_SIGS = {
    "vector_add": ({"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"},
                   {"BLOCK": VEC_BLOCK}, 4),
    "layer_norm": ({"X": "*fp16", "Y": "*fp16", "W": "*fp16", "B": "*fp16", "Mean": "*fp32",
                    "Rstd": "*fp32", "stride": "i32", "N": "i32", "eps": "fp32"},
                   {"BLOCK_SIZE": LN_BLOCK}, LN_WARPS),
}


# ----------------------------------------------------------------------------------------------
# the child process: one measurement, printed as JSON on the last line


def _child_launch_matmul(impl):
    """First call of the tutorial matmul (bench_matmul.py's source), fp16 4096^3, 128x128x64
    tiles, 4 warps, 4 stages: the issue's compile-time yardstick."""
    import torch
    sys.path.insert(0, HERE)
    t_imp = time.perf_counter()
    import bench_matmul
    k = bench_matmul.build("triton" if impl == "triton" else "tritium")
    imported_ms = (time.perf_counter() - t_imp) * 1e3
    n = 4096
    a = torch.randn(n, n, device="cuda").half()
    b = torch.randn(n, n, device="cuda").half()
    c = torch.full((n, n), float("nan"), device="cuda", dtype=torch.float16)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    bench_matmul.launcher(k, a, b, c, (128, 128, 64, 4, 4))()
    torch.cuda.synchronize()
    ms = (time.perf_counter() - t0) * 1e3
    ref = (a.float() @ b.float())
    err = float((c.float() - ref).norm() / ref.norm())
    return {"ms": ms, "ok": err < 1e-2, "import_ms": imported_ms}


def _child_launch(impl, case):
    """First call of `case` on the GPU (compile + load + launch)."""
    import torch
    if case == "matmul":
        return _child_launch_matmul(impl)
    t_imp = time.perf_counter()
    mod, kernels = tritium_kernels() if impl.startswith("tritium") else triton_kernels()
    imported_ms = (time.perf_counter() - t_imp) * 1e3
    k = kernels[case]
    if case == "vector_add":
        x = torch.randn(VEC_N, device="cuda")
        y = torch.randn(VEC_N, device="cuda")
        out = torch.empty_like(x)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        k[(VEC_N // VEC_BLOCK,)](x, y, out, VEC_N, BLOCK=VEC_BLOCK, num_warps=4)
        torch.cuda.synchronize()
        ms = (time.perf_counter() - t0) * 1e3
        ok = bool(torch.equal(out, x + y))
    else:
        x = torch.randn(LN_M, LN_N, device="cuda").half()
        w = torch.randn(LN_N, device="cuda").half()
        b = torch.randn(LN_N, device="cuda").half()
        y = torch.full_like(x, float("nan"))
        mean = torch.empty(LN_M, device="cuda")
        rstd = torch.empty(LN_M, device="cuda")
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        k[(LN_M,)](x, y, w, b, mean, rstd, x.stride(0), LN_N, 1e-5, BLOCK_SIZE=LN_BLOCK,
                   num_warps=LN_WARPS)
        torch.cuda.synchronize()
        ms = (time.perf_counter() - t0) * 1e3
        ref = torch.nn.functional.layer_norm(x.float(), (LN_N,), w.float(), b.float(), 1e-5)
        ok = bool(torch.allclose(y.float(), ref, atol=2e-2, rtol=1e-2))
    return {"ms": ms, "ok": ok, "import_ms": imported_ms}


def _child_compile(case):
    """tritium.compile to sm_90a (no GPU): PTX, and cubin with ptxas."""
    t_imp = time.perf_counter()
    tritium, kernels = tritium_kernels()
    imported_ms = (time.perf_counter() - t_imp) * 1e3
    sig, consts, nw = COMPILE_SIGS[case]
    t0 = time.perf_counter()
    k = tritium.compile(kernels[case], signature=sig, constexprs=consts, target="sm_90a",
                        num_warps=nw, divisible_by_16=[n for n in sig if n != "eps"])
    ms = (time.perf_counter() - t0) * 1e3
    return {"ms": ms, "ok": bool(k.asm.get("ptx")), "cubin": "cubin" in k.asm,
            "import_ms": imported_ms}


def _child_autotune(impl):
    """An autotuned softmax's first call; for tritium also its timing runs."""
    import torch
    mod, kernels = tritium_kernels() if impl == "tritium" else triton_kernels()
    configs = [mod.Config({"BLOCK": SM_N}, num_warps=w) for w in SM_WARPS]
    if impl == "tritium":
        tuned = mod.autotune(configs, key=["n_cols"])(kernels["softmax"])
    else:
        try:
            tuned = mod.autotune(configs, key=["n_cols"], cache_results=True)(kernels["softmax"])
        except TypeError:  # a Triton without persistent autotuning
            tuned = mod.autotune(configs, key=["n_cols"])(kernels["softmax"])
    x = torch.randn(SM_M, SM_N, device="cuda")
    out = torch.full_like(x, float("nan"))
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    tuned[(SM_M,)](out, x, x.stride(0), out.stride(0), SM_N)
    torch.cuda.synchronize()
    ms = (time.perf_counter() - t0) * 1e3
    res = {"ms": ms, "ok": bool(torch.allclose(out, torch.softmax(x, dim=1), atol=1e-5))}
    if impl == "tritium":
        from tritium import autotuner
        from tritium.compiler import compiler
        res["bench_calls"] = autotuner.stats.bench_calls
        res["disk_hits"] = autotuner.stats.disk_hits
        res["batch_jobs"] = compiler.compile_stats["batch_jobs"]
    return res


def child_main(spec):
    sys.path.insert(0, PYTHON_DIR)
    kind = spec["kind"]
    if kind == "launch":
        res = _child_launch(spec["impl"], spec["case"])
    elif kind == "compile":
        res = _child_compile(spec["case"])
    else:
        res = _child_autotune(spec["impl"])
    print(RESULT_TAG + json.dumps(res), flush=True)


# ----------------------------------------------------------------------------------------------
# the parent: fresh processes, fresh cache dirs

PHASE_RE = re.compile(r"([A-Za-z][A-Za-z +]*?) (\d+(?:\.\d+)?) ms")


def parse_phases(stderr):
    """{phase: ms} of the last 'tritium compile NAME [...]: ...' line."""
    lines = [ln for ln in stderr.splitlines()
             if ln.startswith("tritium compile ") and not ln.startswith("tritium compile batch")]
    if not lines:
        return {}
    body = lines[-1].split("]", 1)[-1].split(":", 1)[-1]
    return {m.group(1).strip(): float(m.group(2)) for m in PHASE_RE.finditer(body)}


def run_child(spec, cache_dir, impl, timeout=240):
    env = dict(os.environ)
    env.pop("TRITIUM_CHECK_ROUNDTRIP", None)  # the test suite's check: not timed here
    env["PYTHONPATH"] = PYTHON_DIR + (os.pathsep + env["PYTHONPATH"]
                                      if env.get("PYTHONPATH") else "")
    env["TRITIUM_CACHE_DIR"] = os.path.join(cache_dir, "tritium")
    env["TRITON_CACHE_DIR"] = os.path.join(cache_dir, "triton")
    if impl.startswith("tritium"):
        env["TRITIUM_COMPILE_TIMES"] = "1"
    if impl == "tritium-jit":  # PTX to the driver's JIT, with its cache in the fresh dir
        env["TRITIUM_PTXAS"] = "0"
        env["CUDA_CACHE_PATH"] = os.path.join(cache_dir, "nv")
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", json.dumps(spec)],
                       env=env, capture_output=True, text=True, timeout=timeout)
    wall = (time.perf_counter() - t0) * 1e3
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith(RESULT_TAG)]
    if r.returncode != 0 or not lines:
        tail = (r.stderr or r.stdout).strip().splitlines()[-6:]
        raise RuntimeError(f"child {spec} failed (exit {r.returncode}): " + " | ".join(tail))
    res = json.loads(lines[-1][len(RESULT_TAG):])
    res["process_ms"] = wall
    if impl.startswith("tritium"):
        res["phases"] = parse_phases(r.stderr)
    return res


def median_of(runs, key):
    vals = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(vals) if vals else None


def measure_cold_warm(spec, impl, reps):
    """reps cold runs (each with fresh cache dirs) and reps warm runs (the
    last cold run's cache dirs)."""
    cold, warm = [], []
    dirs = []
    try:
        for _ in range(reps):
            d = tempfile.mkdtemp(prefix="bench-compile-")
            dirs.append(d)
            cold.append(run_child(spec, d, impl))
        for _ in range(reps):
            warm.append(run_child(spec, dirs[-1], impl))
    finally:
        for d in dirs:
            shutil.rmtree(d, ignore_errors=True)
    phases = {}
    for name in cold[0].get("phases", {}):
        vals = [r["phases"][name] for r in cold if name in r.get("phases", {})]
        phases[name] = statistics.median(vals)
    return {"cold_ms": median_of(cold, "ms"), "warm_ms": median_of(warm, "ms"),
            "ok": all(r["ok"] for r in cold + warm), "phases": phases,
            "warm_phases": warm[-1].get("phases", {}),
            "import_ms": median_of(cold, "import_ms"),
            "cubin": cold[0].get("cubin")}


def measure_autotune(impl):
    d = tempfile.mkdtemp(prefix="bench-compile-tune-")
    try:
        first = run_child({"kind": "autotune", "impl": impl}, d, impl)
        second = run_child({"kind": "autotune", "impl": impl}, d, impl)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return first, second


def measure_batch(reps):
    """In this process: the softmax configs compiled one by one and in one
    batch, without the disk cache (compile only, sm_90a)."""
    sys.path.insert(0, PYTHON_DIR)
    os.environ.pop("TRITIUM_COMPILE_TIMES", None)
    tritium, kernels = tritium_kernels()
    from tritium.compile_api import build_specialization
    from tritium.compiler import compiler
    sig = {"out_ptr": "*fp32", "in_ptr": "*fp32", "in_stride": "i32", "out_stride": "i32",
           "n_cols": "i32"}
    reqs = []
    for block in (1024, 4096):
        params, key = build_specialization(kernels["softmax"], sig, {"BLOCK": block},
                                           divisible_by_16=list(sig))
        for w in SM_WARPS:
            reqs.append(compiler.CompileRequest(kernels["softmax"], params, key, num_warps=w,
                                                target="sm_90a", use_cache=False))
    seq, par = [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        for r in reqs:
            compiler.compile_gpu(r.jit_fn, r.params, r.spec_key, num_warps=r.num_warps,
                                 target=r.target, use_cache=False)
        seq.append((time.perf_counter() - t0) * 1e3)
        t0 = time.perf_counter()
        out = compiler.compile_gpu_batch(reqs)
        par.append((time.perf_counter() - t0) * 1e3)
        bad = [o for o in out if isinstance(o, BaseException)]
        if bad:
            raise bad[0]
    return {"configs": len(reqs), "sequential_ms": statistics.median(seq),
            "batch_ms": statistics.median(par), "threads": os.cpu_count()}


def fmt(v, unit="ms"):
    return f"{v:9.1f} {unit}" if v is not None else f"{'-':>12}"


def ratio(a, b):
    return f"{a / b:6.2f}x" if a is not None and b else f"{'-':>7}"


def gpu_available():
    try:
        import torch
        return torch.cuda.is_available()
    except Exception:  # no torch, or a broken install
        return False


def triton_available():
    if os.environ.get("TRITIUM_BENCH_NO_TRITON"):
        return False
    r = subprocess.run([sys.executable, "-c", "import triton, triton.language"],
                       capture_output=True, text=True)
    return r.returncode == 0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", help="append result rows to this JSON file")
    p.add_argument("--reps", type=int, default=2, help="processes per measurement (median)")
    p.add_argument("--quick", action="store_true", help="one process per measurement")
    p.add_argument("--compile-only", action="store_true",
                   help="tritium.compile to sm_90a only, even with a GPU")
    p.add_argument("--child", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child:
        child_main(json.loads(a.child))
        return 0
    reps = 1 if a.quick else max(1, a.reps)
    on_gpu = gpu_available() and not a.compile_only
    impls = ["tritium"] + (["tritium-jit"] if on_gpu else []) + \
        (["triton"] if on_gpu and triton_available() else [])
    mode = "first call on the GPU (compile + load + launch)" if on_gpu else \
        "compile only: tritium.compile(target='sm_90a'), no launch"
    print(f"compile: {mode}; {reps} process(es) per figure (median); impls: {', '.join(impls)}")
    if on_gpu and "triton" not in impls:
        print("compile: triton is not importable; tritium only")
    rows, failed = [], False
    results = {}
    for case in ("vector_add", "layer_norm") + (("matmul",) if on_gpu else ()):
        for impl in impls:
            spec = ({"kind": "launch", "impl": impl, "case": case} if on_gpu
                    else {"kind": "compile", "case": case})
            row = {"bench": "compile", "case": case, "impl": impl,
                   "mode": "launch" if on_gpu else "compile-only"}
            try:
                res = measure_cold_warm(spec, impl, reps)
                row.update(res)
            except Exception as e:  # one failing measurement must not stop the others
                row["ok"] = False
                row["error"] = str(e)[:600]
            if impl.startswith("tritium") and not row.get("ok"):
                failed = True
            results[(case, impl)] = row
            rows.append(row)

    print(f"\n{'bench':<8} {'case':<12} {'impl':<11} {'cold first call':>16} {'warm first call':>16}"
          f"  {'cold vs triton':>14} {'warm vs triton':>14}")
    for (case, impl), r in results.items():
        if "error" in r:
            print(f"{'compile':<8} {case:<12} {impl:<11} FAILED: {r['error'][:200]}")
            continue
        tr = results.get((case, "triton"), {})
        flag = "" if r.get("ok") else "  WRONG"
        print(f"{'compile':<8} {case:<12} {impl:<11} {fmt(r['cold_ms']):>16} "
              f"{fmt(r['warm_ms']):>16}  {ratio(r['cold_ms'], tr.get('cold_ms')):>14} "
              f"{ratio(r['warm_ms'], tr.get('warm_ms')):>14}{flag}")
    print("(ratios: tritium over Triton, >1 means slower; each figure from fresh processes, "
          "imports and CUDA context excluded; tritium-jit: PTX through the driver's JIT "
          "instead of ptxas, TRITIUM_PTXAS=0)")

    print("\nwhere tritium's cold compile goes (median ms; TRITIUM_COMPILE_TIMES=1):")
    for case, impl in ((c, i) for c in ("vector_add", "layer_norm", "matmul") for i in impls
                       if i.startswith("tritium")):
        r = results.get((case, impl), {})
        ph = r.get("phases") or {}
        if ph:
            parts = ", ".join(f"{k} {v:.1f}" for k, v in ph.items())
            print(f"  {case:<12} {impl:<11} {parts}")
            rest = (r["cold_ms"] - ph.get("total", 0.0)) if r.get("cold_ms") else None
            if on_gpu and rest is not None:
                print(f"  {'':<24} module load (+ driver JIT) + first launch + sync: {rest:.1f}")
        wp = r.get("warm_phases") or {}
        if wp:
            print(f"  {'':<24} warm: " + ", ".join(f"{k} {v:.1f}" for k, v in wp.items()))

    if on_gpu:
        print("\nautotuned softmax (4 configs), second process with the disk cache warm:")
        for impl in (i for i in impls if i != "tritium-jit"):
            row = {"bench": "compile", "case": "autotune_softmax", "impl": impl}
            try:
                first, second = measure_autotune(impl)
                row.update({"first_process_ms": first["ms"], "second_process_ms": second["ms"],
                            "ok": first["ok"] and second["ok"]})
                extra = ""
                if impl == "tritium":
                    row.update({"first_bench_calls": first["bench_calls"],
                                "second_bench_calls": second["bench_calls"],
                                "first_batch_jobs": first["batch_jobs"]})
                    extra = (f"; timing runs {first['bench_calls']} then "
                             f"{second['bench_calls']}; configs compiled in the batch "
                             f"{first['batch_jobs']}")
                    if second["bench_calls"] != 0 or not row["ok"]:
                        failed = True
                print(f"  {impl:<8} tuning process {first['ms']:.1f} ms; second process first "
                      f"call {second['ms']:.1f} ms{extra}"
                      + ("" if row["ok"] else "  WRONG"))
            except Exception as e:  # noqa: BLE001
                row.update({"ok": False, "error": str(e)[:600]})
                print(f"  {impl:<8} FAILED: {str(e)[:300]}")
                failed = failed or impl == "tritium"
            rows.append(row)

    row = {"bench": "compile", "case": "batch_softmax_configs", "impl": "tritium"}
    try:
        b = measure_batch(reps + 1)
        row.update(b)
        print(f"\nbatch compile of {b['configs']} softmax configs (sm_90a, no cache): one by one "
              f"{b['sequential_ms']:.1f} ms, in one batch {b['batch_ms']:.1f} ms "
              f"(speed-up {b['sequential_ms'] / b['batch_ms']:.2f}x on {b['threads']} cores)")
    except Exception as e:  # noqa: BLE001
        row.update({"ok": False, "error": str(e)[:600]})
        print(f"\nbatch compile FAILED: {e}")
        failed = True
    rows.append(row)

    if a.json:
        data = {"meta": {}, "rows": []}
        if os.path.exists(a.json):
            with open(a.json) as f:
                data = json.load(f)
        data["meta"]["compile"] = {"mode": "launch" if on_gpu else "compile-only",
                                   "reps": reps, "cores": os.cpu_count()}
        data["rows"].extend(rows)
        with open(a.json, "w") as f:
            json.dump(data, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
