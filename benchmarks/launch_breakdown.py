"""Where the time of one `kernel[grid](...)` launch goes (GPU machine):
the whole launch, the launch with the driver call left out (the fast path's
dry run), and the pieces a launch needs from torch, each per call over
20,000 calls; then the same for a kernel taking three host TensorDescriptors
(examples/block_ptr_matmul.py's descriptor matmul at 512, its GPU config),
beside the Python path's cost for that call. Run:
python3 benchmarks/launch_breakdown.py"""

import time

import torch

import tritium
import tritium.language as tl
from tritium import _C as C
from tritium.tools.tensor_descriptor import TensorDescriptor


@tritium.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask),
             mask=mask)


@tritium.jit
def descriptor_matmul_kernel(a_desc, b_desc, c_desc, K, BLOCK_M: tl.constexpr,
                             BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = a_desc.load([pid_m * BLOCK_M, k])
        b = b_desc.load([k, pid_n * BLOCK_N])
        accumulator = tl.dot(a, b, accumulator)
    c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], accumulator.to(tl.float16))


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
    descriptor_rows()


def descriptor_rows():
    """A launch with three host TensorDescriptors (made once, as a persistent kernel's caller
    keeps them), against its Python path; and making the descriptors, which code that builds
    them per call (the tutorials) pays on top."""
    kern = descriptor_matmul_kernel
    n, bm, bn, bk = 512, 128, 128, 64
    a = torch.randn(n, n, device="cuda", dtype=torch.float16)
    b = torch.randn(n, n, device="cuda", dtype=torch.float16)
    c = torch.full((n, n), float("nan"), device="cuda", dtype=torch.float16)

    def make():
        return (TensorDescriptor.from_tensor(a, [bm, bk]),
                TensorDescriptor.from_tensor(b, [bk, bn]),
                TensorDescriptor.from_tensor(c, [bm, bn]))

    descs = make()
    grid = (n // bm, n // bn)
    opts = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, num_warps=8, num_stages=3)
    launch = lambda: kern[grid](*descs, n, **opts)  # noqa: E731
    launch()
    torch.cuda.synchronize()
    torch.testing.assert_close(c.float(), a.float() @ b.float(), rtol=1e-2, atol=1e-2)
    values = kern._bind(descs + (n,), {k: v for k, v in opts.items() if k.startswith("BLOCK")})
    rows = [("descriptor matmul: whole launch", per_call(launch))]
    C.fast_set_dry_run(kern._fast, True)
    rows.append(("descriptor matmul: without the driver call (dry run)", per_call(launch)))
    C.fast_set_dry_run(kern._fast, False)
    rows.append(("descriptor matmul: the Python path (JITFunction.run)",
                 per_call(lambda: kern.run(*descs, n, grid=grid, **opts), 5000)))
    rows.append(("descriptor matmul: jit._key alone (Python key)",
                 per_call(lambda: kern._key(values), 5000)))
    rows.append(("3x TensorDescriptor.from_tensor", per_call(make, 5000)))
    rows.append(("descriptor matmul: made per call, then launched",
                 per_call(lambda: kern[grid](*make(), n, **opts), 5000)))
    for name, us in rows:
        print(f"{name:<56} {us:7.2f} us")
    print("fast path stats:", C.fast_stats(kern._fast))


if __name__ == "__main__":
    main()
