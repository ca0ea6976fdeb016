"""Vector add, fp32, n = 2^24 and 2^28: tritium vs torch vs Triton.

Bytes moved: 3 * 4 * n (two reads, one write). Also the host-side launch
overhead of each on a tiny vector.

Run: python3 benchmarks/bench_vector_add.py [--json results.json] [--quick]
"""

import sys

import common  # noqa: F401  (puts python/ on sys.path)
import torch

import tritium
import tritium.language as ttl

BLOCK = 1024


@tritium.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: ttl.constexpr):
    offs = ttl.program_id(0) * BLOCK + ttl.arange(0, BLOCK)
    mask = offs < n
    x = ttl.load(x_ptr + offs, mask=mask)
    y = ttl.load(y_ptr + offs, mask=mask)
    ttl.store(out_ptr + offs, x + y, mask=mask)


def triton_kernel(triton, tl):
    @triton.jit
    def add_kernel_triton(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        y = tl.load(y_ptr + offs, mask=mask)
        tl.store(out_ptr + offs, x + y, mask=mask)
    return add_kernel_triton


def make_cases(triton, tl):
    tk = triton_kernel(triton, tl) if triton else None
    for log2n in (24, 28):
        n = 1 << log2n
        x = torch.randn(n, device="cuda")
        y = torch.randn(n, device="cuda")
        out = torch.empty_like(x)
        ref = x + y
        grid = (triton_cdiv(n, BLOCK),)
        impls = {
            "tritium": lambda: add_kernel[grid](x, y, out, n, BLOCK=BLOCK, num_warps=4),
            "torch": lambda: torch.add(x, y, out=out),
        }
        if tk is not None:
            impls["triton"] = lambda: tk[grid](x, y, out, n, BLOCK=BLOCK, num_warps=4)

        def check(name, impls=impls, ref=ref, out=out):
            common.poison_(out)
            impls[name]()
            torch.cuda.synchronize()
            return common.rel_err(out, ref)

        yield common.Case("vector_add", f"fp32 n=2^{log2n}", 3 * 4 * n, impls, check, 0.0)


def triton_cdiv(a, b):
    return (a + b - 1) // b


def launch_rows(triton, tl):
    """Microseconds per launch over 20,000 back-to-back launches of a
    4096-element add (4 runtime arguments; GPU time ~2 us)."""
    n = 4096
    x = torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    grid = (n // BLOCK,)
    impls = {"tritium": lambda: add_kernel[grid](x, x, out, n, BLOCK=BLOCK),
             "torch": lambda: torch.add(x, x, out=out),
             "torch fill_": lambda: out.fill_(1.0)}
    if triton is not None:
        tk = triton_kernel(triton, tl)
        impls["triton"] = lambda: tk[grid](x, x, out, n, BLOCK=BLOCK)
    rows = []
    for name, fn in impls.items():
        row = {"bench": "vector_add", "case": "launch n=4096", "impl": name, "kind": "launch"}
        try:
            row["us_per_launch"], row["us_per_launch_synced"] = common.host_us_per_launch(fn)
            row["ok"] = True
        except Exception as e:
            row["error"] = f"{type(e).__name__}: {e}".splitlines()[0][:400]
            row["ok"] = False
        rows.append(row)
    return rows


make_cases.extra_rows = launch_rows

if __name__ == "__main__":
    sys.exit(common.main("vector_add", __doc__, make_cases))
