"""Layer-norm forward, fp16, 4096 x {4096, 16384}: tritium vs torch vs
Triton (Triton's tutorial kernel: one program per row, fp32 statistics,
mean and rstd written too). Bytes moved: 2 * 2 * M * N for x and y, plus
w, b, mean and rstd.

Run: python3 benchmarks/bench_layer_norm.py [--json results.json] [--quick]
"""

import sys

import common
import torch

import tritium
import tritium.language as ttl

EPS = 1e-5


@tritium.jit
def layer_norm_fwd(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: ttl.constexpr):
    row = ttl.program_id(0)
    Y += row * stride
    X += row * stride
    _mean = ttl.zeros([BLOCK_SIZE], dtype=ttl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + ttl.arange(0, BLOCK_SIZE)
        a = ttl.load(X + cols, mask=cols < N, other=0.).to(ttl.float32)
        _mean += a
    mean = ttl.sum(_mean, axis=0) / N
    _var = ttl.zeros([BLOCK_SIZE], dtype=ttl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + ttl.arange(0, BLOCK_SIZE)
        x = ttl.load(X + cols, mask=cols < N, other=0.).to(ttl.float32)
        x = ttl.where(cols < N, x - mean, 0.)
        _var += x * x
    var = ttl.sum(_var, axis=0) / N
    rstd = 1 / ttl.sqrt(var + eps)
    ttl.store(Mean + row, mean)
    ttl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + ttl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = ttl.load(W + cols, mask=mask)
        b = ttl.load(B + cols, mask=mask)
        x = ttl.load(X + cols, mask=mask, other=0.).to(ttl.float32)
        x_hat = (x - mean) * rstd
        y = x_hat * w + b
        ttl.store(Y + cols, y, mask=mask)


def triton_kernel(triton, tl):
    @triton.jit
    def layer_norm_fwd_triton(X, Y, W, B, Mean, Rstd, stride, N, eps,
                              BLOCK_SIZE: tl.constexpr):
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
    return layer_norm_fwd_triton


def make_cases(triton, tl):
    tk = triton_kernel(triton, tl) if triton else None
    M = 4096
    for N in (4096, 16384):
        x = (torch.randn(M, N, device="cuda") * 2 + 0.5).half()
        w = torch.randn(N, device="cuda").half()
        b = torch.randn(N, device="cuda").half()
        y = torch.empty_like(x)
        mean = torch.empty(M, device="cuda")
        rstd = torch.empty(M, device="cuda")
        ref = torch.nn.functional.layer_norm(x.double(), (N,), w.double(), b.double(), EPS)
        # Triton's tutorial: blocks of at most 64 KB, one warp per 256 elements, up to 8.
        block = min(65536 // x.element_size(), 1 << (N - 1).bit_length())
        nw = min(max(block // 256, 1), 8)
        impls = {
            "tritium": lambda: layer_norm_fwd[(M,)](x, y, w, b, mean, rstd, x.stride(0), N, EPS,
                                                    BLOCK_SIZE=block, num_warps=nw),
            "torch": lambda: torch.nn.functional.layer_norm(x, (N,), w, b, EPS),
        }
        if tk is not None:
            impls["triton"] = lambda: tk[(M,)](x, y, w, b, mean, rstd, x.stride(0), N, EPS,
                                               BLOCK_SIZE=block, num_warps=nw)

        def check(name, impls=impls, ref=ref, y=y):
            common.poison_(y, mean, rstd)
            r = impls[name]()
            torch.cuda.synchronize()
            return common.rel_err(r if name == "torch" else y, ref)

        nbytes = 2 * 2 * M * N + 2 * 2 * N + 2 * 4 * M
        yield common.Case("layer_norm", f"fp16 {M}x{N}", nbytes, impls, check, 2e-3)


if __name__ == "__main__":
    sys.exit(common.main("layer_norm", __doc__, make_cases))
