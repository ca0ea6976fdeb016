"""Where the time of one `kernel[grid](...)` launch goes (GPU machine):
the whole launch, the launch with the driver call left out (the fast path's
dry run), and the pieces a launch needs from torch, each per call over
20,000 calls. Run: python3 benchmarks/launch_breakdown.py"""

import time

import torch

import tritium
import tritium.language as tl
from tritium import _C as C


@tritium.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask),
             mask=mask)


def per_call(fn, n=20000):
    for _ in range(200):
        fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - t0) / n * 1e6)
    return best


def main():
    n = 4096
    x = torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    grid = (n // 1024,)
    launch = lambda: add_kernel[grid](x, x, out, n, BLOCK=1024)  # noqa: E731
    launch()
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x + x)
    raw = torch._C._cuda_getCurrentRawStream
    rows = [("whole launch", per_call(launch))]
    C.fast_set_dry_run(add_kernel._fast, True)
    rows.append(("launch without the driver call (dry run)", per_call(launch)))
    C.fast_set_dry_run(add_kernel._fast, False)
    rows.append(("add_kernel[grid] alone", per_call(lambda: add_kernel[grid])))
    rows.append(("3x (is_cuda, data_ptr(), dtype) + get_device()",
                 per_call(lambda: (x.is_cuda, x.data_ptr(), x.dtype, x.is_cuda, x.data_ptr(),
                                   x.dtype, out.is_cuda, out.data_ptr(), out.dtype,
                                   x.get_device()))))
    rows.append(("torch._C._cuda_getCurrentRawStream(0)", per_call(lambda: raw(0))))
    rows.append(("torch fill_", per_call(lambda: out.fill_(1.0))))
    for name, us in rows:
        print(f"{name:<50} {us:7.2f} us")
    print("fast path stats:", C.fast_stats(add_kernel._fast))


if __name__ == "__main__":
    main()
