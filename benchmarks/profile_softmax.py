"""Profiling aid (not a benchmark): runs the softmax kernels of
bench_softmax.py, tritium's and Triton's, for one shape, so that ncu can
compare them, and writes both kernels' PTX and cubin into a folder.

  python3 benchmarks/profile_softmax.py OUTDIR [N]
  ncu --kernel-name regex:softmax --launch-skip 4 --launch-count 2 \
      python3 benchmarks/profile_softmax.py OUTDIR 4096
"""

import os
import sys

import torch

import bench_softmax as B
import common


def main(out_dir, n):
    os.makedirs(out_dir, exist_ok=True)
    M = 4096
    x = torch.randn(M, n, device="cuda")
    out = torch.empty_like(x)
    block = 1 << (n - 1).bit_length()
    nw = B.num_warps_for(block)
    k = None
    for _ in range(5):
        k = B.softmax_kernel[(M,)](out, x, x.stride(0), out.stride(0), n, BLOCK=block,
                                   num_warps=nw)
    torch.cuda.synchronize()
    for name in ("ptx", "cubin", "gir"):
        if name in k.asm:
            mode = "wb" if name == "cubin" else "w"
            with open(os.path.join(out_dir, f"tritium.{name}"), mode) as f:
                f.write(k.asm[name])
    triton, tl = common.import_triton()
    if triton is not None:
        tk = B.triton_kernel(triton, tl)
        for _ in range(5):
            c = tk[(M,)](out, x, x.stride(0), out.stride(0), n, BLOCK=block, num_warps=nw)
        torch.cuda.synchronize()
        for name in ("ptx", "cubin"):
            mode = "wb" if name == "cubin" else "w"
            with open(os.path.join(out_dir, f"triton.{name}"), mode) as f:
                f.write(c.asm[name])


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 4096)
