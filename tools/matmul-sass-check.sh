#!/usr/bin/env bash
# On the GPU machine: compiles the tutorial matmul (benchmarks/bench_matmul.py's source) for
# sm_90a at its benchmark config and reports what ptxas and the SASS say: registers, spills,
# and the tensor-core instructions (HGMMA for wgmma; HMMA would mean the mma.sync path).
#   tools/matmul-sass-check.sh OUTDIR
set -uo pipefail
OUT=${1:?usage: tools/matmul-sass-check.sh OUTDIR}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export PYTHONPATH="$ROOT/python:$ROOT/benchmarks${PYTHONPATH:+:$PYTHONPATH}"
python3 - "$OUT" <<'PY'
import sys, time
import bench_matmul, tritium
k = bench_matmul.build("tritium")
sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
       "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32"}
t0 = time.time()
c = tritium.compile(k, signature=sig, target="sm_90a", num_warps=4, num_stages=4, use_cache=False,
                    constexprs={"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8,
                                "stride_ak": 1, "stride_bn": 1, "stride_cn": 1},
                    divisible_by_16=["a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am",
                                     "stride_bk", "stride_cm"])
print(f"compile (fresh, in process) {1000 * (time.time() - t0):.1f} ms")
print(c.metadata.get("ptxas_log", ""))
open(sys.argv[1] + "/matmul.cubin", "wb").write(c.asm["cubin"])
open(sys.argv[1] + "/matmul.ptx", "w").write(c.asm["ptx"])
PY
cuobjdump -sass "$OUT/matmul.cubin" > "$OUT/matmul.sass" 2>&1
echo "SASS: $(grep -c HGMMA "$OUT/matmul.sass") HGMMA, $(grep -c ' HMMA' "$OUT/matmul.sass") HMMA, $(grep -c LDGSTS "$OUT/matmul.sass") LDGSTS"
