"""Fused attention forward in the form of Triton's fused-attention tutorial: Q, K, V and O through
host tensor descriptors (python/test/_attention_desc_kernels.py; TMA copies and a TMA store on
sm_90a), the same source under tritium and Triton, the cases and block configs of
bench_attention.py, beside torch's scaled_dot_product_attention. Each compiler at its best config;
the check (against SDPA, NaN-poisoned output) runs on that config.

Run: python3 benchmarks/bench_attention_tma.py [--json results.json] [--quick]
"""

import sys

import bench_attention

if __name__ == "__main__":
    sys.exit(bench_attention.main("descriptor"))
