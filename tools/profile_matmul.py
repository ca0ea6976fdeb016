"""One launch of the tutorial matmul (benchmarks/bench_matmul.py's kernel) under tritium or Triton,
for ncu / cuobjdump: python3 tools/profile_matmul.py {tritium|triton} M N K BM BN BK WARPS STAGES [CUBIN]
With CUBIN, the kernel's cubin is written there (for cuobjdump -sass)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "benchmarks"))
import torch  # noqa: E402

import bench_matmul as B  # noqa: E402

name = sys.argv[1]
M, N, K, bm, bn, bk, w, s = map(int, sys.argv[2:10])
kern = B.build(name)
a = torch.randn(M, K, device="cuda", dtype=torch.float16)
b = torch.randn(K, N, device="cuda", dtype=torch.float16)
c = torch.empty(M, N, device="cuda", dtype=torch.float16)
run = B.launcher(kern, a, b, c, (bm, bn, bk, w, s))
for _ in range(3):
    run()
torch.cuda.synchronize()
if len(sys.argv) > 10:
    args = (a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
    if name == "triton":
        ck = kern[(1,)](*args, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, num_warps=w, num_stages=s)
    else:
        import tritium  # noqa: PLC0415
        sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
               "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32"}
        ck = tritium.compile(kern, signature=sig, num_warps=w, num_stages=s, use_cache=False,
                             constexprs={"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8,
                                         "stride_ak": 1, "stride_bn": 1, "stride_cn": 1},
                             divisible_by_16=["a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am",
                                              "stride_bk", "stride_cm"])
    with open(sys.argv[10], "wb") as f:
        f.write(ck.asm["cubin"])
