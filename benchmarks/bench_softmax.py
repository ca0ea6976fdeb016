"""Fused row softmax, fp32, 4096 x {1024, 4096, 16384}: tritium vs torch vs
Triton. One program per row, the whole row in registers (Triton's tutorial
kernel). Bytes moved: 2 * 4 * M * N (one read, one write).

Run: python3 benchmarks/bench_softmax.py [--json results.json] [--quick]
"""

import sys

import common
import torch

import tritium
import tritium.language as ttl


@tritium.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: ttl.constexpr):
    row = ttl.program_id(0)
    cols = ttl.arange(0, BLOCK)
    mask = cols < n_cols
    x = ttl.load(in_ptr + row * in_stride + cols, mask=mask, other=-float("inf"))
    z = x - ttl.max(x, axis=0)
    num = ttl.exp(z)
    den = ttl.sum(num, axis=0)
    ttl.store(out_ptr + row * out_stride + cols, num / den, mask=mask)


def triton_kernel(triton, tl):
    @triton.jit
    def softmax_kernel_triton(out_ptr, in_ptr, in_stride, out_stride, n_cols,
                              BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(in_ptr + row * in_stride + cols, mask=mask, other=-float("inf"))
        z = x - tl.max(x, axis=0)
        num = tl.exp(z)
        den = tl.sum(num, axis=0)
        tl.store(out_ptr + row * out_stride + cols, num / den, mask=mask)
    return softmax_kernel_triton


def num_warps_for(block):
    # Triton's tutorial heuristic
    if block >= 8192:
        return 16
    if block >= 2048:
        return 8
    return 4


def make_cases(triton, tl):
    tk = triton_kernel(triton, tl) if triton else None
    M = 4096
    for N in (1024, 4096, 16384):
        x = torch.randn(M, N, device="cuda") * 3
        out = torch.empty_like(x)
        ref = torch.softmax(x.double(), dim=1)
        block = 1 << (N - 1).bit_length()
        nw = num_warps_for(block)
        impls = {
            "tritium": lambda: softmax_kernel[(M,)](out, x, x.stride(0), out.stride(0), N,
                                                    BLOCK=block, num_warps=nw),
            # torch's softmax allocates its output; the op itself is timed, not a copy.
            "torch": lambda: torch.softmax(x, dim=1),
        }
        if tk is not None:
            impls["triton"] = lambda: tk[(M,)](out, x, x.stride(0), out.stride(0), N,
                                               BLOCK=block, num_warps=nw)

        def check(name, impls=impls, ref=ref, out=out):
            common.poison_(out)
            r = impls[name]()
            torch.cuda.synchronize()
            return common.rel_err(r if name == "torch" else out, ref)

        yield common.Case("softmax", f"fp32 {M}x{N}", 2 * 4 * M * N, impls, check, 1e-5)


if __name__ == "__main__":
    sys.exit(common.main("softmax", __doc__, make_cases))
