"""Models run under torch.compile with Inductor's Triton backend on tritium
(test_inductor_cpu.py and test_gpu_inductor.py run this file in a subprocess,
so that the sys.modules surgery of tritium.inductor.install() stays out of the
test process). Prints one JSON line per model:
{"model", "ok", "error", "max_abs_err", "compiles", "kernels", "seconds"}.

    python _inductor_models.py [model ...]     (default: all of MODELS)

Environment: TRITIUM_INDUCTOR_TRACEBACK=1 prints a failing model's traceback
to stderr. TRITIUM_INDUCTOR_DEVICE=cuda runs the models on the GPU (torch's
default device; Inductor's GPU kernels), else on the CPU executor through
Inductor's cpu_backend="triton". TRITIUM_INDUCTOR_STOCK=1 leaves Inductor on
its own Triton: the peer of benchmarks/bench_inductor.py.
"""

import copy
import json
import os
import sys
import time
import traceback

import tritium.inductor

DEVICE = os.environ.get("TRITIUM_INDUCTOR_DEVICE", "cpu")
STOCK = os.environ.get("TRITIUM_INDUCTOR_STOCK") == "1"
if not STOCK:
    tritium.inductor.install()

# Under the sanitizer job this interpreter has the ASan runtime preloaded; the native compilers
# Inductor may start must not (their leak report at exit would hang the pipe).
os.environ.pop("LD_PRELOAD", None)

import torch  # noqa: E402
import torch._dynamo  # noqa: E402
import torch._inductor.config as inductor_config  # noqa: E402

if DEVICE == "cpu":
    inductor_config.cpu_backend = "triton"
else:
    torch.set_default_device(DEVICE)  # every model's tensors and parameters

# Inductor's own tests compare fp32 results at about these tolerances.
RTOL, ATOL = 1e-4, 1e-5


def _mlp():
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.LayerNorm(64),
                            torch.nn.Linear(64, 16))
    x = torch.randn(8, 32)
    cm = torch.compile(m)
    return [(cm(x), m(x))], lambda: cm(x)


def _reductions():
    def f(x, big):
        # big's rows are too long for one block: a looped reduction (triton_red_).
        return (x.sum(dim=(0, 2)), x.amax(dim=1), x.mean(), x.var(dim=-1), x.prod(dim=0),
                big.sum(-1), (big * big).mean(0))

    torch.manual_seed(0)
    x, big = torch.randn(4, 6, 10), torch.randn(3, 5000)
    cf = torch.compile(f)
    return list(zip(cf(x, big), f(x, big))), lambda: cf(x, big)


def _elementwise():
    def f(x, y):
        a = torch.sigmoid(x) * torch.tanh(y) - x.abs()
        b = torch.where(x > 0, x * y, -y).clamp(-1, 1) + torch.maximum(x, y)
        c = torch.erf(x) + torch.sqrt(y.abs() + 1) * torch.exp(-x * x)
        d = (x * 10).to(torch.int32) // 3 + (y * 10).to(torch.int64) % 4
        return a * b + c, d

    torch.manual_seed(0)
    x, y = torch.randn(1000), torch.randn(1000)
    cf = torch.compile(f)
    return list(zip(cf(x, y), f(x, y))), lambda: cf(x, y)


def _conv_bn():
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
                            torch.nn.Conv2d(8, 4, 3), torch.nn.BatchNorm2d(4)).eval()
    with torch.no_grad():
        for bn in (m[1], m[4]):  # statistics that are not the identity
            bn.running_mean.uniform_(-1, 1)
            bn.running_var.uniform_(0.5, 2)
    x = torch.randn(2, 3, 12, 12)
    cm = torch.compile(m)
    return [(cm(x), m(x))], lambda: cm(x)


def _dynamic():
    def f(x):
        return (x * 2 + x.sum(-1, keepdim=True)).sigmoid() * x.mean(0)

    cf = torch.compile(f, dynamic=True)
    torch.manual_seed(0)
    pairs = []
    for n in (5, 17, 33, 64):
        x = torch.randn(3, n)
        pairs.append((cf(x), f(x)))
    return pairs, lambda: cf(x)


def _training():
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.LayerNorm(32),
                            torch.nn.Linear(32, 4))
    ref = copy.deepcopy(m)
    x, t = torch.randn(8, 16), torch.randn(8, 4)

    def step(model, opt):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), t)
        loss.backward()
        opt.step()
        return loss.detach()

    opt, opt_ref = (torch.optim.SGD(p.parameters(), lr=0.1) for p in (m, ref))
    cm = torch.compile(m)
    pairs = [(step(cm, opt), step(ref, opt_ref)) for _ in range(3)]
    pairs += [(p.detach(), q.detach()) for p, q in zip(m.parameters(), ref.parameters())]
    return pairs, lambda: step(cm, opt)


def _transformer():
    torch.manual_seed(0)
    # Training mode with no dropout: deterministic, and not the fused inference fast path
    # (one aten op Inductor would leave alone); attention goes through SDPA.
    m = torch.nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64,
                                         dropout=0.0, batch_first=True).train()
    x = torch.randn(2, 10, 32)
    cm = torch.compile(m)

    def warm():
        with torch.no_grad():
            return cm(x)

    with torch.no_grad():
        return [(cm(x), m(x))], warm


def _softmax():
    torch.manual_seed(0)
    x = torch.randn(16, 33)
    f = lambda x: torch.softmax(x, -1) * x.amin(0)  # noqa: E731
    cf = torch.compile(f)
    return [(cf(x), f(x))], lambda: cf(x)


def _cumsum():
    torch.manual_seed(0)
    x = torch.randn(8, 100)
    f = lambda x: torch.cumsum(x, -1) + torch.cumprod(x, 0)  # noqa: E731
    cf = torch.compile(f)
    return [(cf(x), f(x))], lambda: cf(x)


def _dropout():
    torch.manual_seed(0)
    m = torch.nn.Dropout(0.5).train()
    x = torch.ones(1000)
    cm = torch.compile(m)
    y = cm(x)
    kept = y != 0
    # Random masks differ from eager's; compare what dropout promises.
    return [(y[kept], torch.full_like(y[kept], 2.0)),
            (torch.tensor(0.4 < kept.float().mean().item() < 0.6), torch.tensor(True))], \
        lambda: cm(x)


def _special():
    """The libdevice names Inductor calls for torch's special functions."""
    def f(x, y):
        a = torch.erfinv(torch.tanh(x) * 0.99) + torch.special.erfc(x) + torch.log10(x.abs() + 1)
        b = torch.asinh(x) + torch.acosh(x.abs() + 1) + torch.atanh(torch.tanh(y) * 0.9)
        c = torch.lgamma(x.abs() + 0.1) + torch.nextafter(x, y)
        # Bessel functions, erfcx and frexp (libdevice's j0, y1, cyl_bessel_i0/i1, erfcx, ilogb)
        d = torch.special.bessel_j0(x * 20) + torch.special.bessel_y1(y.abs() * 20 + 0.1)
        e = torch.special.i0(x * 5) + torch.special.i1e(y * 40) + torch.special.erfcx(x * 3)
        m, ex = torch.frexp(x * 1e3)
        return a, b, c, d, e, m, ex

    torch.manual_seed(0)
    x, y = torch.randn(1000), torch.randn(1000)
    cf = torch.compile(f)
    return list(zip(cf(x, y), f(x, y))), lambda: cf(x, y)


def _sort():
    """torch.sort, argsort and isin: Inductor's bitonic sort helper (triton_helpers'
    sort_with_index, which bitcasts through tl.core.get_int_dtype)."""
    def f(x, keys):
        v, i = torch.sort(x, dim=-1, stable=True)
        return v, i, torch.argsort(x, dim=-1, descending=True, stable=True), torch.isin(x, keys)

    torch.manual_seed(0)
    x = torch.randint(0, 20, (6, 30)).float()  # ties: the stable order is checked
    keys = torch.tensor([1.0, 3.0, 7.0, 19.0])
    cf = torch.compile(f)
    return list(zip(cf(x, keys), f(x, keys))), lambda: cf(x, keys)


# softmax (amin: tl.reduce with a combine), cumsum/cumprod (tl.associative_scan)
# and dropout in training mode (tl.rand) need the language of issue 12.
MODELS = {"mlp": _mlp, "reductions": _reductions, "elementwise": _elementwise,
          "conv_bn": _conv_bn, "dynamic": _dynamic, "training": _training,
          "softmax": _softmax, "cumsum": _cumsum, "dropout": _dropout,
          "transformer": _transformer, "special": _special, "sort": _sort}
BLOCKED = {}


def _sync():
    if DEVICE != "cpu":
        torch.cuda.synchronize()


def _time_warm(warm):
    """Microseconds per call of the compiled model, warm (median of 5 rounds
    of WARM_STEPS calls, after 5 calls unmeasured)."""
    for _ in range(5):
        warm()
    _sync()
    rounds = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(WARM_STEPS):
            warm()
        _sync()
        rounds.append((time.perf_counter() - t) / WARM_STEPS * 1e6)
    return sorted(rounds)[2]


def _time_compiles():
    """Wraps the real Triton's `triton.compile` that Inductor calls with a
    timer; returns the dict it adds to."""
    import triton.compiler.compiler as cc  # noqa: PLC0415

    import torch._inductor.runtime.triton_heuristics as th  # noqa: PLC0415

    spent = {"seconds": 0.0, "calls": 0}
    real = th.triton.compile

    def timed(*args, **kwargs):
        t = time.perf_counter()
        try:
            return real(*args, **kwargs)
        finally:
            spent["seconds"] += time.perf_counter() - t
            spent["calls"] += 1

    th.triton.compile = timed
    cc.compile = timed
    return spent


# TRITIUM_INDUCTOR_WARM_STEPS=N: also time the compiled model warm (N calls
# per round). TRITIUM_INDUCTOR_COMPILE_TIME=1 with STOCK: add up the seconds
# spent in Triton's `triton.compile`, with one compile thread, so that every
# compile happens in this process. tritium's compile seconds come from
# tritium.inductor.stats() always (they include waiting for the ptxas runs it
# overlaps, which happen after triton.compile returns).
WARM_STEPS = int(os.environ.get("TRITIUM_INDUCTOR_WARM_STEPS", "0"))
COMPILE_TIME = None
if STOCK and os.environ.get("TRITIUM_INDUCTOR_COMPILE_TIME") == "1":
    inductor_config.compile_threads = 1
    COMPILE_TIME = _time_compiles()


def run(name):
    torch._dynamo.reset()
    from torch._dynamo.utils import counters  # noqa: PLC0415

    counters.clear()
    before = tritium.inductor.stats()
    spent_before = COMPILE_TIME["seconds"] if COMPILE_TIME is not None else 0.0
    result = {"model": name, "ok": False, "error": None, "max_abs_err": None}
    t0 = time.perf_counter()
    try:
        pairs, warm = {**MODELS, **BLOCKED}[name]()
        err = 0.0
        for got, want in pairs:
            torch.testing.assert_close(got, want, rtol=RTOL, atol=ATOL)
            if got.numel():
                err = max(err, (got.double() - want.double()).abs().max().item())
        result.update(ok=True, max_abs_err=err)
    except Exception as e:  # noqa: BLE001 -- reported to the test
        result["error"] = "".join(traceback.format_exception_only(type(e), e))[-2000:]
        if os.environ.get("TRITIUM_INDUCTOR_TRACEBACK") == "1":
            traceback.print_exc()
    if DEVICE != "cpu":
        torch.cuda.synchronize()
    # The model's first calls: Inductor's compile (most of it) plus the runs.
    result["seconds"] = time.perf_counter() - t0
    if result["ok"] and WARM_STEPS:
        result["warm_us"] = _time_warm(warm)
    from torch._dynamo.utils import counters  # noqa: PLC0415

    result["fxgraph_cache"] = {k: counters["inductor"][f"fxgraph_cache_{k}"]
                               for k in ("hit", "miss")}
    after = tritium.inductor.stats()
    if not STOCK:
        # tritium's own count: triton.compile plus waiting for the back halves it overlaps.
        result["compile_seconds"] = after["seconds"] - before["seconds"]
    elif COMPILE_TIME is not None:
        result["compile_seconds"] = COMPILE_TIME["seconds"] - spent_before
    result["compiles"] = after["compiles"] - before["compiles"]
    result["launches"] = after["launches"] - before["launches"]
    result["kernels"] = after["kernels"][len(before["kernels"]):]
    return result


def main(names):
    for name in names or MODELS:
        print(json.dumps(run(name)), flush=True)
    triton = sys.modules.get("triton")
    surface = bool(getattr(triton, "__tritium_surface__", False))
    # Every triton module loaded in this process must be the surface's.
    foreign = sorted(k for k, m in sys.modules.items()
                     if (k == "triton" or k.startswith("triton.")) and m is not None
                     and getattr(m, "__file__", None) is not None)
    print(json.dumps({"surface": surface, "foreign_triton_modules": foreign}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
