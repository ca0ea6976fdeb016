"""Cold compile + first launch of the attention forward (bench_attention.py's kernel, fp16,
d128, 128x64 blocks, 4 warps, 2 stages) in this process, under tritium or Triton with empty
caches: python3 tools/attention_compile_time.py {tritium|triton}. With TRITIUM_COMPILE_TIMES=1
tritium prints where the compile's time goes."""
import os
import sys
import tempfile
import time

os.environ["TRITIUM_CACHE_DIR"] = tempfile.mkdtemp()
os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp()
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "benchmarks"))
import torch  # noqa: E402

import bench_attention as B  # noqa: E402

name = sys.argv[1]
kern = B.build(name)
q, k, v = (torch.randn(1, 2, 256, 128, device="cuda", dtype=torch.float16) for _ in range(3))
o = torch.empty_like(q)
torch.cuda.synchronize()
t = time.perf_counter()
B.launcher(kern, q, k, v, o, False, 0.088, (128, 64, 4, 2))()
torch.cuda.synchronize()
print(f"{name}: cold compile + first launch {1e3 * (time.perf_counter() - t):.1f} ms")
