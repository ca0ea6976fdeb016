"""The smallest end-to-end check of the NVIDIA path, for a first look at a
new machine (or under a debugger: `cuda-gdb -batch -ex run -ex bt --args
python3 tools/gpu-smoke.py`).

1. compiles a vector add and a softmax to PTX (and a cubin, with ptxas) for
   sm_90a -- no GPU needed for this part;
2. when a GPU and torch are there, launches the vector add on CUDA tensors
   and checks it against torch.
Prints one line per step; exits non-zero on the first failure.

Run from the repository root: PYTHONPATH=python python3 tools/gpu-smoke.py
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
os.environ.setdefault("TRITIUM_CACHE_DISABLE", "1")

import tritium  # noqa: E402
import tritium.language as tl  # noqa: E402
from tritium.compile_api import compile as tcompile  # noqa: E402


@tritium.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask),
             mask=mask)


@tritium.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_stride + cols, mask=mask, other=-float("inf"))
    z = x - tl.max(x, axis=0)
    num = tl.exp(z)
    tl.store(out_ptr + row * out_stride + cols, num / tl.sum(num, axis=0), mask=mask)


def main():
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}
    print("compile add_kernel ...", flush=True)
    k = tcompile(add_kernel, signature=sig, constexprs={"BLOCK": 1024}, target="sm_90a")
    print(f"  ok: {len(k.asm['ptx'])} bytes of PTX, cubin: {'cubin' in k.asm}", flush=True)
    print("compile softmax_kernel ...", flush=True)
    s = tcompile(softmax_kernel, signature={"out_ptr": "*fp32", "in_ptr": "*fp32",
                                            "in_stride": "i32", "out_stride": "i32",
                                            "n_cols": "i32"},
                 constexprs={"BLOCK": 1024}, target="sm_90a", num_warps=4)
    print(f"  ok: {len(s.asm['ptx'])} bytes of PTX", flush=True)
    try:
        import torch
    except ImportError:
        print("no torch: launch skipped")
        return 0
    if not torch.cuda.is_available():
        print("no GPU: launch skipped")
        return 0
    n = 1_000_003
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.full((n,), float("nan"), device="cuda")
    print("launch through @jit ...", flush=True)
    add_kernel[(tritium.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    torch.cuda.synchronize()
    ok = torch.equal(out, x + y)
    print(f"  {'ok' if ok else 'WRONG'}", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
