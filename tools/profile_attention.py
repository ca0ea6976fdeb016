"""One launch of the attention forward (benchmarks/bench_attention.py's kernel) under tritium or
Triton, for ncu: python3 tools/profile_attention.py {tritium|triton} D CAUSAL BM BN WARPS STAGES"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "benchmarks"))
import torch  # noqa: E402

import bench_attention as B  # noqa: E402

name, D, causal, bm, bn, w, s = sys.argv[1], *map(int, sys.argv[2:8])
kern = B.build(name)
q, k, v = (torch.randn(4, 32, 4096, D, device="cuda", dtype=torch.float16) for _ in range(3))
o = torch.empty_like(q)
run = B.launcher(kern, q, k, v, o, bool(causal), D ** -0.5, (bm, bn, w, s))
for _ in range(3):
    run()
torch.cuda.synchronize()
