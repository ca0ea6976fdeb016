#!/usr/bin/env python3
"""Differential fuzzer, GPU against the CPU executor (the GPU machine).

The random @jit kernels of kernel_fuzz.py run twice on the same inputs: on
the CPU executor (numpy arrays: the reference semantics) and on the GPU
(torch CUDA tensors: the NVIDIA backend), outputs poisoned alike first.
Integer outputs must match bit for bit. Float outputs must match within a
tolerance: the GPU contracts a*b+c into fma, divides with div.full.f32 (as
Triton does) and sums reductions in another order, all legal. Inputs are
finite (no NaN/inf: float-to-int casts of those are undefined in Triton).

Integer programs using //, %, << or >> can divide by a computed zero or
shift by 32 or more, and float programs casting to an integer type can
cast a value out of its range, all of which Triton leaves undefined; their
mismatches are listed apart as "undefined-behaviour candidates" (read
them: they may still be bugs). Programs with tl.dot run on the tensor cores
(mma.sync / wgmma); float results then differ from the executor's by the order
of the additions only, which the tolerance (scaled by the largest magnitude)
covers.

A mismatch prints the seed and a greedily minimised program.

Usage: python3 tools/fuzz/gpu_fuzz.py [--seeds N] [--start S] [--jobs J] [--seed S]
"""

import argparse
import multiprocessing as mp
import os
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

import kernel_fuzz as kf  # noqa: E402

TOL = {"float16": 2e-2, "float32": 1e-4, "float64": 1e-9}
UB_OPS = ("//", "%", "<<", ">>")
UB_CASTS = (".to(tl.int", ".to(tl.uint")


def finite_inputs(gen, seed):
    arrs, nvalid = gen.inputs(seed)
    out = []
    for a in arrs:
        if a.dtype.kind == "f":
            a = a.copy()
            a[~np.isfinite(a)] = 1.5
        out.append(a)
    return out, nvalid


class Rejected(Exception):
    """The executor rejects the program too: the generator's doing, not a finding."""


def run_both(gen, src, seed, tmpdir):
    """(executor outputs, GPU outputs) as numpy arrays."""
    import torch  # noqa: PLC0415
    arrs, nvalid = finite_inputs(gen, seed)
    dt = kf.NP[gen.dtype]
    cpu_outs = [np.full(gen.size(), 7, dt) for _ in range(3)]
    try:
        k = kf.load_kernel(src, tmpdir)
        k[(gen.grid,)](*[a.copy() for a in arrs], *cpu_outs, gen.s, gen.k, nvalid)
    except Exception as e:  # noqa: BLE001
        raise Rejected(f"{type(e).__name__}: {str(e)[:200]}") from None
    gpu_ins = [torch.from_numpy(a.copy()).cuda() for a in arrs]
    gpu_outs = [torch.from_numpy(np.full(gen.size(), 7, dt)).cuda() for _ in range(3)]
    k[(gen.grid,)](*gpu_ins, *gpu_outs, gen.s, gen.k, nvalid)
    torch.cuda.synchronize()
    return cpu_outs, [o.cpu().numpy() for o in gpu_outs]


def compare(gen, ref, got, has_dot=False):
    """None when they agree, else a description. A tl.dot (fp32 or tf32 on the
    tensor cores) adds in another order than the executor: its results carry
    fp32 rounding whatever the program's dtype, so its tolerance is fp32's at
    least."""
    for i, (a, b) in enumerate(zip(ref, got)):
        if gen.is_int:
            bad = np.nonzero(a != b)[0]
        else:
            a64, b64 = a.astype(np.float64), b.astype(np.float64)
            tol = max(TOL[gen.dtype], TOL["float32"]) if has_dot else TOL[gen.dtype]
            scale = max(1.0, float(np.nanmax(np.abs(a64[np.isfinite(a64)]), initial=0.0)))
            close = np.isclose(a64, b64, rtol=tol, atol=tol * scale, equal_nan=True)
            same_inf = (a64 == b64)
            bad = np.nonzero(~(close | same_inf))[0]
        if len(bad):
            j = bad[:4]
            return (f"out{i} differs at {j.tolist()} ({len(bad)} elements): executor "
                    f"{a[j].tolist()} vs GPU {b[j].tolist()}")
    return None


def check(gen, src, seed, tmpdir):
    ref, got = run_both(gen, src, seed, tmpdir)
    return compare(gen, ref, got, has_dot="tl.dot" in src)


def minimise(gen, seed, tmpdir):
    return kf.minimise_program(gen, lambda src: check(gen, src, seed, tmpdir) is not None)


def fuzz_one(seed):
    """(seed, outcome, detail, program) with outcome in ok, rejected (by the
    executor too), gpu-error, mismatch, ub-candidate."""
    with tempfile.TemporaryDirectory() as tmpdir:
        gen = kf.Gen(seed).program()
        src = gen.source()
        try:
            what = check(gen, src, seed, tmpdir)
        except Rejected as e:
            return seed, "rejected", str(e), ""
        except Exception as e:  # noqa: BLE001 - the executor ran it, the GPU did not
            return seed, "gpu-error", f"{type(e).__name__}: {str(e)[:300]}", src
        if what is None:
            return seed, "ok", "", ""
        maybe_ub = (any(op in src for op in UB_OPS) if gen.is_int
                    else any(c in src for c in UB_CASTS))
        kind = "ub-candidate" if maybe_ub else "mismatch"
        return seed, kind, what, minimise(gen, seed, tmpdir)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--jobs", type=int, default=min(8, os.cpu_count() or 1))
    args = ap.parse_args(argv)
    seeds = [args.seed] if args.seed is not None else list(range(args.start,
                                                                 args.start + args.seeds))
    t0 = time.time()
    counts = {}
    ctx = mp.get_context("spawn")
    with ctx.Pool(args.jobs) as pool:
        for seed, kind, what, src in pool.imap_unordered(fuzz_one, seeds):
            counts[kind] = counts.get(kind, 0) + 1
            if kind in ("mismatch", "ub-candidate"):
                print(f"{kind.upper()} seed {seed}: {what}\nminimised program:\n{src}\n")
            elif kind == "gpu-error":
                print(f"GPU-ERROR seed {seed}: {what}\nprogram:\n{src}\n")
    print(f"gpu fuzz: {len(seeds)} seeds in {time.time() - t0:.1f}s: " +
          ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    return 1 if counts.get("mismatch") or counts.get("gpu-error") else 0


if __name__ == "__main__":
    sys.exit(main())
