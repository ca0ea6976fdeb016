"""Device check of tritium's PTX: correctness against torch/numpy, then timings
against torch and Triton (with Triton's PTX and SASS summaries for comparison).

Loads the cubins (sm_90a, assembled by ptxas where they were written) and the
sm_80 PTX (through the driver's JIT) with the driver API via ctypes, so it
needs only torch (and triton, for the comparison) on the GPU machine.

    # here: compile the kernels and write PTX, cubins and a manifest
    TRITIUM_DEVCHECK_DIR=build-gpu-cg/devcheck ./build-gpu-cg/tritium-unittests \
        --gtest_also_run_disabled_tests --gtest_filter='GPUDeviceCheck.*'
    # on the GPU machine (device tool: carry build-gpu-cg/devcheck):
    python3 unittest/gpu_device_check.py build-gpu-cg/devcheck [--no-bench]

Results go to $OUT (or the artifact folder): results.txt, Triton's PTX and
SASS of softmax and layer norm, and tritium's SASS.
"""
import ctypes, math, os, statistics, sys, time, traceback
import numpy as np
import torch

HERE = os.path.abspath(next((a for a in sys.argv[1:] if not a.startswith("--")),
                            os.path.dirname(os.path.abspath(__file__))))
OUT = os.environ.get("OUT", HERE)
log_lines = []


def log(*a):
    s = " ".join(str(x) for x in a)
    print(s, flush=True)
    log_lines.append(s)


cuda = ctypes.CDLL("libcuda.so.1")
cuda.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
cuda.cuModuleLoadData.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p]
cuda.cuModuleGetFunction.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, ctypes.c_char_p]
cuda.cuFuncSetAttribute.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
CT = [ctypes.c_uint64, ctypes.c_int32, ctypes.c_int64, ctypes.c_uint32, ctypes.c_uint64,
      ctypes.c_float, ctypes.c_double, ctypes.c_uint8]

manifest = {}
for line in open(os.path.join(HERE, "manifest.txt")):
    p = line.split()
    manifest[p[0]] = (p[1], int(p[2]), int(p[3]), [int(x) for x in p[4:]])


class Kernel:
    def __init__(self, tag, mode):
        name, nw, smem, kinds = manifest[tag]
        path = os.path.join(HERE, tag + (".sm_90a.cubin" if mode == "cubin" else ".sm_80.ptx"))
        data = open(path, "rb").read()
        self.mod, self.fn = ctypes.c_void_p(), ctypes.c_void_p()
        r = cuda.cuModuleLoadData(ctypes.byref(self.mod), data)
        assert r == 0, f"cuModuleLoadData({path}) = {r}"
        r = cuda.cuModuleGetFunction(ctypes.byref(self.fn), self.mod, name.encode())
        assert r == 0, f"cuModuleGetFunction = {r}"
        if smem > 48 * 1024:
            assert cuda.cuFuncSetAttribute(self.fn, 8, smem) == 0
        self.nw, self.smem, self.kinds = nw, smem, kinds

    def __call__(self, grid, *args):
        assert len(args) == len(self.kinds), (len(args), self.kinds)
        vals = []
        for k, a in zip(self.kinds, args):
            if isinstance(a, torch.Tensor):
                a = a.data_ptr()
            vals.append(CT[k](a))
        params = (ctypes.c_void_p * len(vals))(*[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in vals])
        g = list(grid) + [1] * (3 - len(grid))
        r = cuda.cuLaunchKernel(self.fn, g[0], g[1], g[2], 32 * self.nw, 1, 1, self.smem,
                                ctypes.c_void_p(torch.cuda.current_stream().cuda_stream), params, None)
        assert r == 0, f"cuLaunchKernel = {r}"


dev = "cuda"
gen = torch.Generator(device="cpu").manual_seed(0)


def rnd(*shape, dtype=torch.float32, scale=1.0):
    return (torch.randn(*shape, generator=gen) * scale).to(dtype).to(dev)


def poison(*shape, dtype=torch.float32):
    t = torch.empty(*shape, dtype=dtype, device=dev)
    if dtype.is_floating_point:
        t.fill_(float("nan"))
    else:
        t.fill_(-7)
    return t


def close(name, got, want, atol=1e-5, rtol=1e-5):
    got = got.detach().cpu().double()
    want = want.detach().cpu().double()
    ok = got.shape == want.shape and torch.allclose(got, want, atol=atol, rtol=rtol, equal_nan=True)
    err = (got - want).abs().nan_to_num(0).max().item() if got.shape == want.shape else float("inf")
    return ok, f"{name}: max_abs_err={err:.3g}"


def equal(name, got, want):
    got, want = got.detach().cpu(), want.detach().cpu()
    ok = got.shape == want.shape and bool((got == want).all())
    bad = 0 if not got.shape == want.shape else int((got != want).sum())
    return ok, f"{name}: mismatches={bad}"


def run_checks(mode):
    K = lambda tag: Kernel(tag, mode)
    results = []

    def test(fn):
        try:
            for ok, msg in fn():
                results.append(ok)
                log(f"[{mode}] {'PASS' if ok else 'FAIL'} {fn.__name__}: {msg}")
        except Exception:
            results.append(False)
            log(f"[{mode}] FAIL {fn.__name__}: exception\n{traceback.format_exc()}")

    def vector_add():
        for tag, dt in [("add_f32_w4", torch.float32), ("add_f16_w4", torch.float16)]:
            n = 10000  # multiple of 16, not of 1024: the last block is masked
            x, y = rnd(n, dtype=dt), rnd(n, dtype=dt)
            out = poison(n + 64, dtype=dt)
            K(tag)((math.ceil(n / 1024),), x, y, out, n)
            torch.cuda.synchronize()
            yield close(tag, out[:n], x + y, 1e-3 if dt == torch.float16 else 0)
            yield (bool(out[n:].isnan().all()), "no write past n")

    def softmax():
        for tag, (m, n, stride) in [("softmax_kernel_w4", (37, 1000, 1003)), ("softmax_aligned_w4", (64, 1024, 1024)),
                                    ("softmax_4096_w8", (16, 4096, 4096)), ("softmax_4096_w16", (16, 3008, 4096))]:
            x = rnd(m, stride, scale=3)
            out = poison(m, stride)
            K(tag)((m,), out, x, stride, stride, n)
            torch.cuda.synchronize()
            yield close(f"{tag} {m}x{n}", out[:, :n], torch.softmax(x[:, :n].double(), 1), 1e-6, 1e-5)
        m, n = 102, 128
        x = rnd(m, n, scale=3)
        out = poison(m, n)
        K("softmax2d_kernel_w4")((math.ceil(m / 4),), out, x, n, m, n)
        torch.cuda.synchronize()
        yield close("softmax2d 102x128", out, torch.softmax(x.double(), 1), 1e-6, 1e-5)

    def layer_norm():
        for tag, (m, n, stride) in [("layer_norm_fwd_w4", (33, 1024, 1024)), ("layer_norm_fwd_w8", (8, 4096, 4096)),
                                    ("layer_norm_fwd_w4", (5, 2048 + 512, 2560)),
                                    ("layer_norm_unaligned_w4", (9, 1000, 1024))]:
            xs = rnd(m, stride, dtype=torch.float16, scale=2) + 0.5
            x = xs[:, :n]
            w, b = rnd(n, dtype=torch.float16), rnd(n, dtype=torch.float16)
            ys = poison(m, stride, dtype=torch.float16)
            y = ys[:, :n]
            mean, rstd = poison(m), poison(m)
            K(tag)((m,), xs, ys, w, b, mean, rstd, stride, n, 1e-5)
            torch.cuda.synchronize()
            ref = torch.nn.functional.layer_norm(x.float(), (n,), w.float(), b.float(), 1e-5)
            xm = x.double().mean(1)
            xr = 1 / torch.sqrt(x.double().var(1, unbiased=False) + 1e-5)
            yield close(f"{tag} {m}x{n} y", y, ref, 2e-2, 1e-2)
            yield close(f"{tag} {m}x{n} mean", mean, xm, 1e-4, 1e-4)
            yield close(f"{tag} {m}x{n} rstd", rstd, xr, 1e-4, 1e-4)

    def casts():
        n = 1024
        x = (torch.rand(n, generator=gen) * 120).to(dev)
        x[:4] = torch.tensor([0.0, 1.5, 2.5, 119.99])
        o16, obf = poison(n, dtype=torch.float16), poison(n, dtype=torch.float16)
        oi8, ou8 = torch.zeros(n, dtype=torch.int8, device=dev), torch.zeros(n, dtype=torch.uint8, device=dev)
        oi64, of64 = torch.zeros(n, dtype=torch.int64, device=dev), poison(n, dtype=torch.float64)
        K("cast_kernel_w4")((n // 256,), x, o16, obf, oi8, ou8, oi64, of64, n)
        torch.cuda.synchronize()
        yield equal("f16", o16, x.half())
        yield equal("bf16->f16", obf, x.bfloat16().float().half())
        yield equal("i8", oi8, x.to(torch.int8))
        yield equal("u8", ou8, x.to(torch.uint8))
        yield equal("i64", oi64, x.to(torch.int64))
        yield equal("f64*2", of64, x.double() * 2)

    def broadcast_2d():
        M, N = 64, 128
        x, c, r = rnd(M, N), rnd(N), rnd(M)
        out = poison(M, N)
        K("bcast2d_kernel_w4")((M // 32, N // 64), x, c, r, out, M, N, N)
        torch.cuda.synchronize()
        yield close("x*c+r", out, x * c[None, :] + r[:, None], 1e-6, 1e-6)

    def argmax():
        m, n = 8, 1000
        x = rnd(m, n)
        x[0] = 1.0
        x[1, 0] = float("nan"); x[1, 7] = 50.0; x[1, 9] = 50.0
        x[2] = float("nan")
        x[3, 999] = 100.0
        idx, mx = poison(m, dtype=torch.int32), poison(m)
        K("argmax_kernel_w4")((m,), x, idx, mx, n, n)
        torch.cuda.synchronize()
        # Lanes past n_cols load other = -inf, so a row of NaNs reduces
        # to -inf at index n_cols (NaN is ignored unless every lane is NaN;
        # np.nanargmax would treat NaN as -inf and tie it with the padding).
        xs = np.concatenate([x.cpu().numpy(), np.full((m, 1024 - n), -np.inf, np.float32)], 1)
        want_i, want_m = [], []
        for r in xs:
            ok = ~np.isnan(r)
            if not ok.any():
                want_i.append(0); want_m.append(float("nan"))
                continue
            best = r[ok].max()
            want_i.append(int(np.flatnonzero(ok & (r == best))[0])); want_m.append(float(best))
        yield equal("argmax", idx.cpu(), torch.tensor(want_i, dtype=torch.int32))
        yield close("max", mx, torch.tensor(want_m), 0, 0)

    def transpose():
        x = rnd(64, 64)
        out = poison(64, 64)
        K("transpose_w4")((1,), x, out)
        torch.cuda.synchronize()
        yield equal("transpose", out, x.t())

    def atomics():
        P = 64
        cnt = torch.zeros(32, device=dev)
        tick = torch.zeros(34, dtype=torch.int32, device=dev)
        olds = poison(P * 32, dtype=torch.int32)
        hmax = torch.full((32,), float("-inf"), dtype=torch.float16, device=dev)
        scal = poison(P, dtype=torch.int32)
        K("atomics_w4")((P,), cnt, tick, olds, hmax, scal)
        torch.cuda.synchronize()
        yield equal("counters (owners only)", cnt, torch.full((32,), float(P)))
        yield equal("tickets", tick[:33], torch.full((33,), P, dtype=torch.int32))
        o = olds.view(P, 32).cpu().sort(0).values
        yield equal("old values, every copy", o, torch.arange(P, dtype=torch.int32)[:, None].expand(P, 32))
        yield equal("scalar old values", scal.cpu().sort().values, torch.arange(P, dtype=torch.int32))
        yield equal("fp16 max (CAS loop)", hmax.cpu(), (torch.arange(32) + P - 1).half())
        yield equal("cas", tick[33:].cpu(), torch.tensor([1000], dtype=torch.int32))

    def control_flow():
        P = 8
        out = poison(P * 128, dtype=torch.int32)
        K("collatz_w4")((P,), out, 1)
        torch.cuda.synchronize()
        want = []
        for i in range(P * 128):
            v, s = i + 1, 0
            while v > 1:
                v = 3 * v + 1 if v % 2 else v // 2
                s += 1
            want.append(s + (1000000 if (i // 128) % 2 else 0))
        yield equal("collatz steps (while + if)", out.cpu(), torch.tensor(want, dtype=torch.int32))

    def reductions():
        for tag in ["reduce_2d_w4", "reduce_2d_w8"]:
            x = 1 + 0.01 * rnd(64, 32)
            sums, mins, prod = poison(32), poison(64, dtype=torch.int32), poison(1)
            K(tag)((1,), x, sums, mins, prod)
            torch.cuda.synchronize()
            yield close(f"{tag} column sums", sums, x.double().sum(0), 1e-4, 1e-5)
            yield equal(f"{tag} row argmins", mins.cpu(), x.cpu().argmin(1).int())
            yield close(f"{tag} product", prod, x.double().prod().reshape(1), 1e-3, 1e-3)

    for t in [vector_add, softmax, layer_norm, casts, broadcast_2d, argmax, transpose, atomics,
              control_flow, reductions]:
        test(t)
    return results


def bench(fn, reps=20, inner=5):
    fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ts = []
    for _ in range(reps):
        s.record()
        for _ in range(inner):
            fn()
        e.record()
        torch.cuda.synchronize()
        ts.append(s.elapsed_time(e) / inner)
    return statistics.median(ts)


def benchmarks():
    try:
        import triton
        import triton.language as tl
    except Exception as ex:
        triton = None
        log("no triton:", ex)

    if triton:
        @triton.jit
        def t_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n
            tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)

        @triton.jit
        def t_softmax(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK: tl.constexpr):
            row = tl.program_id(0)
            cols = tl.arange(0, BLOCK)
            valid = cols < n_cols
            x = tl.load(in_ptr + row * in_row_stride + cols, mask=valid, other=-float("inf"))
            num = tl.exp(x - tl.max(x, axis=0))
            tl.store(out_ptr + row * out_row_stride + cols, num / tl.sum(num, axis=0), mask=valid)

        @triton.jit
        def t_layer_norm(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
            row = tl.program_id(0)
            Y += row * stride
            X += row * stride
            _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
            for off in range(0, N, BLOCK_SIZE):
                cols = off + tl.arange(0, BLOCK_SIZE)
                _mean += tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
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
                y = (x - mean) * rstd * w + b
                tl.store(Y + cols, y, mask=mask)

    def row(name, nbytes, t_ours, t_torch, t_triton):
        def gbs(t):
            return nbytes / t / 1e6 if t else float("nan")
        tri = f"{t_triton * 1e3:8.1f} us {gbs(t_triton):7.0f} GB/s" if t_triton else "    n/a"
        log(f"{name:34s} tritium {t_ours * 1e3:8.1f} us {gbs(t_ours):7.0f} GB/s | torch {t_torch * 1e3:8.1f} us "
            f"{gbs(t_torch):7.0f} GB/s | triton {tri} | tritium/triton time "
            f"{(t_ours / t_triton if t_triton else float('nan')):.3f}")

    for tag, dt, n in [("add_f32_w4", torch.float32, 1 << 28), ("add_f16_w4", torch.float16, 1 << 28)]:
        x, y, out = rnd(n, dtype=dt), rnd(n, dtype=dt), torch.empty(n, dtype=dt, device=dev)
        k = Kernel(tag, "cubin")
        grid = (n // 1024,)
        to = bench(lambda: k(grid, x, y, out, n))
        assert torch.equal(out, x + y)
        tt = bench(lambda: torch.add(x, y, out=out))
        ttr = bench(lambda: t_add[grid](x, y, out, n, BLOCK=1024, num_warps=4)) if triton else None
        row(f"vector add {dt} n=2^28", 3 * n * x.element_size(), to, tt, ttr)
        del x, y, out

    dumps = {}
    for tag, (m, n), block, nw in [("softmax_aligned_w4", (32768, 1024), 1024, 4),
                                   ("softmax_aligned_w4_divfull", (32768, 1024), 1024, 4),
                                   ("softmax_4096_w8", (16384, 4096), 4096, 8),
                                   ("softmax_4096_w8_divfull", (16384, 4096), 4096, 8),
                                   ("softmax_4096_w16", (16384, 4096), 4096, 16),
                                   ("softmax_4096_w16_divfull", (16384, 4096), 4096, 16)]:
        x, out = rnd(m, n), torch.empty(m, n, device=dev)
        k = Kernel(tag, "cubin")
        to = bench(lambda: k((m,), out, x, n, n, n))
        assert torch.allclose(out, torch.softmax(x, 1), atol=1e-6)
        tt = bench(lambda: torch.softmax(x, 1, out=out) if False else torch.softmax(x, 1))
        ttr = bench(lambda: t_softmax[(m,)](out, x, n, n, n, BLOCK=block, num_warps=nw)) if triton else None
        if triton:
            dumps[f"triton_softmax_{block}_w{nw}"] = t_softmax[(m,)](out, x, n, n, n, BLOCK=block, num_warps=nw)
        row(f"softmax f32 {m}x{n} {tag}", 2 * m * n * 4, to, tt, ttr)
        del x, out

    for tag, (m, n), nw in [("layer_norm_fwd_w4", (32768, 1024), 4), ("layer_norm_fwd_w4_rn", (32768, 1024), 4),
                            ("layer_norm_fwd_w8", (16384, 4096), 8), ("layer_norm_fwd_w8_rn", (16384, 4096), 8),
                            ("layer_norm_fwd_w4", (16384, 4096), 4)]:
        x = rnd(m, n, dtype=torch.float16)
        w, b = rnd(n, dtype=torch.float16), rnd(n, dtype=torch.float16)
        y = torch.empty_like(x)
        mean, rstd = torch.empty(m, device=dev), torch.empty(m, device=dev)
        k = Kernel(tag, "cubin")
        to = bench(lambda: k((m,), x, y, w, b, mean, rstd, n, n, 1e-5))
        ref = torch.nn.functional.layer_norm(x.float(), (n,), w.float(), b.float(), 1e-5)
        assert torch.allclose(y.float(), ref, atol=2e-2, rtol=1e-2)
        tt = bench(lambda: torch.nn.functional.layer_norm(x, (n,), w, b, 1e-5))
        ttr = bench(lambda: t_layer_norm[(m,)](x, y, w, b, mean, rstd, n, n, 1e-5, BLOCK_SIZE=1024,
                                              num_warps=nw)) if triton else None
        if triton:
            dumps[f"triton_layer_norm_w{nw}"] = t_layer_norm[(m,)](x, y, w, b, mean, rstd, n, n, 1e-5,
                                                                  BLOCK_SIZE=1024, num_warps=nw)
        row(f"layer_norm f16 {m}x{n} {tag}", 2 * m * n * 2, to, tt, ttr)
        del x, y
    return dumps


def sass_of(path):
    import subprocess
    return subprocess.run(["cuobjdump", "-sass", path], capture_output=True, text=True).stdout


def histogram(sass):
    import collections, re
    ops = collections.Counter()
    for line in sass.splitlines():
        m = re.match(r"\s*/\*[0-9a-f]{4}\*/\s+(@!?U?P\w+\s+)?([A-Z0-9_.]+)", line)
        if m:
            ops[m.group(2).split(".")[0]] += 1
    return ops


def sass_report(dumps):
    lines = []
    ours = {"tritium_softmax_1024_w4": "softmax_aligned_w4", "tritium_softmax_4096_w8": "softmax_4096_w8",
            "tritium_layer_norm_w4": "layer_norm_fwd_w4", "tritium_layer_norm_w8": "layer_norm_fwd_w8"}
    texts = {}
    for name, tag in ours.items():
        texts[name] = sass_of(os.path.join(HERE, tag + ".sm_90a.cubin"))
    for name, k in dumps.items():
        try:
            path = os.path.join("/tmp", name + ".cubin")
            open(path, "wb").write(k.asm["cubin"])
            texts[name] = sass_of(path)
            if name in ("triton_softmax_1024_w4", "triton_layer_norm_w4"):
                open(os.path.join(OUT, name + ".ptx"), "w").write(k.asm["ptx"])
        except Exception as ex:
            lines.append(f"{name}: {ex}")
    for name, text in sorted(texts.items()):
        h = histogram(text)
        lines.append(f"{name}: {sum(h.values())} SASS instructions: " +
                     ", ".join(f"{k} {v}" for k, v in h.most_common(24)))
    for name in ("tritium_layer_norm_w4", "triton_layer_norm_w4", "tritium_softmax_1024_w4",
                 "triton_softmax_1024_w4"):
        if name in texts:
            open(os.path.join(OUT, name + ".sass"), "w").write(texts[name])
    for l in lines:
        log(l)


def main():
    torch.zeros(1, device=dev)
    log("device:", torch.cuda.get_device_name(), "torch", torch.__version__)
    ok = True
    for mode in ["cubin", "ptx80"]:
        t0 = time.time()
        res = run_checks(mode)
        log(f"[{mode}] {sum(res)}/{len(res)} checks passed in {time.time() - t0:.1f}s")
        ok &= all(res)
    if "--no-bench" not in sys.argv:
        try:
            dumps = benchmarks()
            sass_report(dumps)
        except Exception:
            log("benchmarks failed:\n" + traceback.format_exc())
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "results.txt"), "w") as f:
        f.write("\n".join(log_lines) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
