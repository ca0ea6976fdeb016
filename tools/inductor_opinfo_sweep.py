"""torch's OpInfo database through torch.compile on tritium, without a GPU.

Two sweeps, each printing one JSON line per case and a summary at the end:

  run   every OpInfo op (or --ops) under torch.compile with Inductor's Triton CPU backend
        (cpu_backend="triton": tritium's CPU executor), its first --samples sample inputs,
        compared with eager torch; --grad compares the input gradients of a weighted sum of
        the outputs instead.
        (--dynamic: symbolic shapes).
        python3 tools/inductor_opinfo_sweep.py run --dtype float32 [--grad] [--ops a,b]

  gpu   every kernel file Inductor wrote under an Inductor cache folder (the run sweep's,
        TORCHINDUCTOR_CACHE_DIR), compiled through the surface for a GPU target with ptxas,
        as Inductor's precompile on a GPU would (its configs' num_warps, num_stages and
        constexprs); reports compile errors and ptxas spills.
        python3 tools/inductor_opinfo_sweep.py gpu --cache DIR [--arch 90]

A failure here is a lead, not a verdict: Inductor's lowering itself differs from eager in places
(it computes fp16/bf16 in fp32, stores 0.0 for the mean of an empty var_mean, divides a
ceil_mode average pool's last window by the full window), and a few of its CPU-Triton kernels
use a 0-d CPU tensor's pointer as a value; each is read before it is called tritium's. The
twentieth session (2026-12-05) found get_int_dtype, eight libdevice names
and negative offsets into as_strided views this way.

Needs torch and expecttest (torch.testing._internal imports it).
"""

import argparse
import copy
import importlib.util
import json
import os
import signal
import sys
import time
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import tritium.inductor  # noqa: E402

tritium.inductor.install()

import torch  # noqa: E402
import torch._dynamo  # noqa: E402
import torch._inductor.config as inductor_config  # noqa: E402


def _message(e):
    """The exception's text: its head (what failed) and its tail (where, in a kernel)."""
    text = "".join(traceback.format_exception_only(type(e), e)).strip()
    return text if len(text) <= 900 else text[:450] + " [...] " + text[-450:]


class _Timeout(Exception):
    pass


def _alarm(*_):
    raise _Timeout("timeout")


def _weighted_grad(op):
    """The input's gradient of sum(out * w) over the op's differentiable outputs, w a ramp (so
    that a gradient routed to the wrong element shows)."""
    def fn(inp, *args, **kwargs):
        out = op(inp, *args, **kwargs)
        outs = [o for o in (out if isinstance(out, (tuple, list)) else [out])
                if isinstance(o, torch.Tensor) and o.requires_grad]
        if not outs:
            return ()
        total = sum((o.float() * (1.0 + torch.arange(o.numel(), dtype=torch.float32)
                                  .reshape(o.shape) / 7)).sum() for o in outs)
        return torch.autograd.grad(total, inp, allow_unused=True)
    return fn


def run(args):
    from torch.testing._internal.common_methods_invocations import op_db  # noqa: PLC0415

    inductor_config.cpu_backend = "triton"
    inductor_config.fallback_random = True
    torch._dynamo.config.cache_size_limit = 64
    signal.signal(signal.SIGALRM, _alarm)
    dtype = getattr(torch, args.dtype)
    wide = dtype in (torch.float32, torch.float64)
    tol = dict(rtol=1e-3, atol=1e-4) if wide else dict(rtol=2e-2, atol=2e-2)
    names = set(args.ops.split(",")) if args.ops else None
    cases = failed = 0
    for op in op_db:
        if names is not None and op.name not in names:
            continue
        # Uninitialised or random outputs compare with nothing.
        if names is None and (op.name.startswith(("empty", "new_empty")) or "rand" in op.name
                              or "bernoulli" in op.name or "normal" in op.name):
            continue
        if dtype not in op.supported_dtypes("cpu"):
            continue
        if args.grad and not (op.supports_autograd
                              and dtype in op.supported_backward_dtypes("cpu")):
            continue
        try:
            samples = list(op.sample_inputs("cpu", dtype, requires_grad=args.grad))
        except Exception:  # noqa: BLE001 -- the op's own sample generator
            continue
        fn = _weighted_grad(op) if args.grad else (lambda inp, *a, _op=op, **k: _op(inp, *a, **k))
        fails, t0 = [], time.time()
        for i, s in enumerate(samples[:args.samples]):
            torch._dynamo.reset()
            try:
                want = fn(s.input, *s.args, **s.kwargs)
            except Exception:  # noqa: BLE001 -- eager rejects the sample: nothing to compare
                continue
            signal.alarm(args.timeout)
            try:
                got = torch.compile(fn, dynamic=args.dynamic or None)(s.input, *s.args,
                                                                      **s.kwargs)
                signal.alarm(0)
                torch.testing.assert_close(got, want, equal_nan=True, **tol)
            except Exception as e:  # noqa: BLE001 -- reported
                signal.alarm(0)
                fails.append((i, _message(e)))
        cases += 1
        failed += bool(fails)
        print(json.dumps({"op": op.name, "variant": op.variant_test_name, "fails": fails,
                          "seconds": round(time.time() - t0, 1)}), flush=True)
    print(json.dumps({"summary": "run", "dtype": args.dtype, "grad": args.grad,
                      "dynamic": args.dynamic,
                      "ops": cases, "failed": failed}), flush=True)


def _kernel_files(cache):
    for root, _, files in os.walk(cache):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(root, name)
                with open(path, errors="replace") as f:
                    text = f.read()
                # Kernel files hold one @triton.jit kernel; graph files say "AOT ID".
                if "@triton.jit" in text and "AOT ID" not in text:
                    yield path


def gpu(args):
    from triton.backends.compiler import GPUTarget  # noqa: PLC0415  (the surface's)
    from triton.compiler import ASTSource  # noqa: PLC0415

    import triton  # noqa: PLC0415

    files = configs = failed = 0
    for path in sorted(_kernel_files(args.cache)):
        files += 1
        res = {"file": path, "errors": [], "spills": []}
        try:
            spec = importlib.util.spec_from_file_location("k_" + str(files), path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            tuner = next(v for v in vars(mod).values()
                         if hasattr(v, "triton_meta") and hasattr(v, "configs"))
            res["kernel"] = tuner.fn.__name__
            for cfg in tuner.configs[:args.configs]:
                meta = copy.deepcopy(tuner.triton_meta)
                signature = dict(meta["signature"], **{k: "constexpr" for k in cfg.kwargs})
                constants = dict(meta.get("constants", {}), **cfg.kwargs)
                attrs = meta["configs"][0] if meta.get("configs") else {}
                try:
                    k = triton.compile(ASTSource(tuner.fn, signature, constants, attrs),
                                       target=GPUTarget("cuda", args.arch, 32),
                                       options={"num_warps": cfg.num_warps,
                                                "num_stages": cfg.num_stages})
                    log = k.gpu.metadata.get("ptxas_log", "")  # waits for ptxas
                    configs += 1
                    res["spills"] += [line.strip() for line in log.splitlines()
                                      if "spill" in line and " 0 bytes spill" not in line]
                except Exception as e:  # noqa: BLE001 -- reported
                    res["errors"].append(_message(e))
        except Exception as e:  # noqa: BLE001 -- reported
            res["errors"].append("loading the file: " + _message(e))
        failed += bool(res["errors"] or res["spills"])
        if res["errors"] or res["spills"] or args.verbose:
            print(json.dumps(res), flush=True)
    print(json.dumps({"summary": "gpu", "arch": args.arch, "files": files,
                      "configs_compiled": configs, "with_issues": failed}), flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--dtype", default="float32")
    r.add_argument("--grad", action="store_true")
    r.add_argument("--dynamic", action="store_true", help="torch.compile(dynamic=True)")
    r.add_argument("--ops", default="", help="comma-separated OpInfo names (default: all)")
    r.add_argument("--samples", type=int, default=3)
    r.add_argument("--timeout", type=int, default=90, help="seconds per sample")
    g = sub.add_parser("gpu")
    g.add_argument("--cache", required=True, help="an Inductor cache folder")
    g.add_argument("--arch", type=int, default=90)
    g.add_argument("--configs", type=int, default=2, help="configs per kernel")
    g.add_argument("--verbose", action="store_true", help="print every kernel, not only issues")
    args = p.parse_args()
    run(args) if args.cmd == "run" else gpu(args)


if __name__ == "__main__":
    main()
