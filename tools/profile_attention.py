"""One launch of the attention forward (benchmarks/bench_attention.py's kernel) under tritium or
Triton, for ncu: python3 tools/profile_attention.py {tritium|triton} D CAUSAL BM BN WARPS STAGES [CUBIN]
With CUBIN, the launched kernel's cubin is written there (for cuobjdump -sass)."""
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
if len(sys.argv) > 8:
    if name == "triton":
        ck = kern[(1, 1)](q, k, v, o, D ** -0.5, 32, 4096, *q.stride()[:3], *k.stride()[:3],
                          *v.stride()[:3], *o.stride()[:3], HEAD_DIM=D, BLOCK_M=bm, BLOCK_N=bn,
                          CAUSAL=bool(causal), num_warps=w, num_stages=s)
        cubin = ck.asm["cubin"]
    else:
        import tritium  # noqa: PLC0415
        sig = {n: "i32" for n in ("H N_CTX stride_qz stride_qh stride_qm stride_kz stride_kh stride_kn "
                                  "stride_vz stride_vh stride_vn stride_oz stride_oh stride_om").split()}
        sig.update(Q="*fp16", K="*fp16", V="*fp16", Out="*fp16", sm_scale="fp32")
        ck = tritium.compile(kern, signature=sig, num_warps=w, num_stages=s, use_cache=False,
                             constexprs=dict(HEAD_DIM=D, BLOCK_M=bm, BLOCK_N=bn, CAUSAL=bool(causal)),
                             divisible_by_16=[n for n in sig if n not in ("sm_scale", "H")])
        cubin = ck.asm["cubin"]
    with open(sys.argv[8], "wb") as f:
        f.write(cubin)
