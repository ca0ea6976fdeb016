"""Grouped GEMM: several independent matrix products C_g = A_g @ B_g, of different sizes, in one
launch.

The host passes the problems as small device arrays: the addresses of every A_g, B_g and C_g
(int64, turned back into pointers in the kernel), each problem's (M, N, K) and each matrix's
row stride. A fixed number of programs (one per SM on a GPU) walks the tiles of all problems
in turn: the tiles of problem 0 are numbered first, then those of problem 1, and so on, and
program p computes tiles p, p + P, p + 2P, ... of that numbering, so small and large problems
share the machine without one launch per problem.
Written exactly as for Triton (swap the imports for triton's and it runs there unchanged).

Run: python3 examples/grouped_gemm.py
"""

import contextlib
import os
import sys

import numpy as np

from _bench import benchmark, gpu_available, is_torch, triton_twin

import tritium as triton
import tritium.language as tl


@triton.jit
def grouped_matmul_kernel(a_ptrs, b_ptrs, c_ptrs, sizes_ptr, lds_ptr, group_count,
                          NUM_PROGRAMS: tl.constexpr, BLOCK_M: tl.constexpr,
                          BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    tile = tl.program_id(0)
    first_tile = 0  # number of the first tile of problem g
    for g in range(group_count):
        M = tl.load(sizes_ptr + g * 3)
        N = tl.load(sizes_ptr + g * 3 + 1)
        K = tl.load(sizes_ptr + g * 3 + 2)
        tiles_n = tl.cdiv(N, BLOCK_N)
        num_tiles = tl.cdiv(M, BLOCK_M) * tiles_n
        # every tile of this problem that is this program's
        while tile >= first_tile and tile < first_tile + num_tiles:
            lda = tl.load(lds_ptr + g * 3)
            ldb = tl.load(lds_ptr + g * 3 + 1)
            ldc = tl.load(lds_ptr + g * 3 + 2)
            a_ptr = tl.load(a_ptrs + g).to(tl.pointer_type(tl.float16))
            b_ptr = tl.load(b_ptrs + g).to(tl.pointer_type(tl.float16))
            c_ptr = tl.load(c_ptrs + g).to(tl.pointer_type(tl.float16))
            local = tile - first_tile
            offs_m = (local // tiles_n) * BLOCK_M + tl.arange(0, BLOCK_M)
            offs_n = (local % tiles_n) * BLOCK_N + tl.arange(0, BLOCK_N)
            offs_k = tl.arange(0, BLOCK_K)
            acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            for k in range(0, K, BLOCK_K):
                a = tl.load(a_ptr + offs_m[:, None] * lda + (k + offs_k)[None, :],
                            mask=(offs_m[:, None] < M) & ((k + offs_k)[None, :] < K), other=0.0)
                b = tl.load(b_ptr + (k + offs_k)[:, None] * ldb + offs_n[None, :],
                            mask=((k + offs_k)[:, None] < K) & (offs_n[None, :] < N), other=0.0)
                acc = tl.dot(a, b, acc)
            tl.store(c_ptr + offs_m[:, None] * ldc + offs_n[None, :], acc.to(tl.float16),
                     mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))
            tile += NUM_PROGRAMS
        first_tile += num_tiles


def _address(x):
    return x.data_ptr() if is_torch(x) else x.__array_interface__["data"][0]


def _row_stride(x):
    return x.stride(0) if is_torch(x) else x.strides[0] // x.itemsize


def _int_array(values, dtype, like):
    if is_torch(like):
        torch = sys.modules["torch"]
        return torch.tensor(values, dtype=getattr(torch, dtype), device=like.device)
    return np.array(values, dtype=dtype)


def prepare(As, Bs):
    """The outputs and the kernel's problem arrays for lists of fp16 row-major numpy arrays or
    torch tensors (made once: a benchmark or a CUDA graph reuses them)."""
    assert len(As) == len(Bs) > 0
    Cs, sizes, lds = [], [], []
    for a, b in zip(As, Bs):
        (M, K), (K2, N) = a.shape, b.shape
        assert K == K2 and a.dtype == b.dtype
        if is_torch(a):
            c = sys.modules["torch"].full((M, N), float("nan"), dtype=a.dtype, device=a.device)
        else:
            c = np.full((M, N), np.nan, dtype=a.dtype)  # poisoned: a missed element shows as NaN
        Cs.append(c)
        sizes += [M, N, K]
        lds += [_row_stride(a), _row_stride(b), _row_stride(c)]
    arrays = (_int_array([_address(a) for a in As], "int64", As[0]),
              _int_array([_address(b) for b in Bs], "int64", As[0]),
              _int_array([_address(c) for c in Cs], "int64", As[0]),
              _int_array(sizes, "int32", As[0]), _int_array(lds, "int32", As[0]), len(As))
    return Cs, arrays


def launch(arrays, num_programs=4, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32, num_warps=4,
           num_stages=2):
    grouped_matmul_kernel[(num_programs,)](*arrays, NUM_PROGRAMS=num_programs, BLOCK_M=BLOCK_M,
                                           BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, num_warps=num_warps,
                                           num_stages=num_stages)


def grouped_matmul(As, Bs, **config):
    """[A_g @ B_g] for every g, in one launch."""
    Cs, arrays = prepare(As, Bs)
    launch(arrays, **config)
    return Cs


def declare_memory(*arrays):
    declare = getattr(triton, "executor_memory", None)
    return declare(*arrays) if declare is not None else contextlib.nullcontext()


def main(seed=0):
    rng = np.random.default_rng(seed)
    ok = True
    # problem sizes that are no multiple of the blocks, and one with a single tile
    groups = [[(64, 64, 64), (33, 17, 100), (96, 80, 40)],
              [(16, 16, 16), (70, 40, 50), (8, 100, 24), (45, 45, 45)]]
    for num_programs, shapes in zip((3, 5), groups):
        As = [rng.standard_normal((M, K)).astype(np.float16) for M, N, K in shapes]
        Bs = [rng.standard_normal((K, N)).astype(np.float16) for M, N, K in shapes]
        Cs, arrays = prepare(As, Bs)
        # tritium's CPU executor checks every access against the memory it knows, so the
        # matrices the kernel reaches through the pointer tables are declared to it (a GPU, and
        # Triton, need no declaration)
        with declare_memory(*As, *Bs, *Cs):
            launch(arrays, num_programs=num_programs)
        for (M, N, K), a, b, c in zip(shapes, As, Bs, Cs):
            ref = a.astype(np.float32) @ b.astype(np.float32)
            err = float(np.max(np.abs(c.astype(np.float32) - ref)))  # NaN if one was missed
            passed = err <= 2e-2 * max(1.0, float(np.max(np.abs(ref))))
            ok &= passed
            print(f"grouped_gemm  {len(shapes)} problems, {num_programs} programs: "
                  f"M={M:<4d} N={N:<4d} K={K:<4d} max_abs_err={err:.3e}  "
                  f"{'PASS' if passed else 'FAIL'}")
    if ok and gpu_available():
        ok &= gpu_benchmark()
    return ok


def gpu_benchmark():
    """Groups of square fp16 products: checked against torch.matmul, then timed beside one
    torch.matmul per problem (and Triton's run of this same kernel)."""
    import torch
    twin = triton_twin(os.path.abspath(__file__))
    num_sms = torch.cuda.get_device_properties(0).multi_processor_count
    cfg = dict(num_programs=num_sms, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, num_warps=8,
               num_stages=3)
    sizes = [256, 512, 1024, 2048]
    groups = {}
    for n in sizes:
        # four problems of a group: n, n/2, n (K = n), 2n x n/2
        shapes = [(n, n, n), (n // 2, n // 2, n), (n, n, n // 2), (2 * n, n // 2, n)]
        As = [torch.randn(M, K, device="cuda", dtype=torch.float16) for M, N, K in shapes]
        Bs = [torch.randn(K, N, device="cuda", dtype=torch.float16) for M, N, K in shapes]
        groups[str(n)] = (shapes, As, Bs)
    ok = True
    for label, (shapes, As, Bs) in groups.items():
        Cs = grouped_matmul(As, Bs, **cfg)
        err = max(float(((c.float() - a.float() @ b.float()).abs().max()
                         / (a.float() @ b.float()).abs().max())) for a, b, c in zip(As, Bs, Cs))
        passed = err <= 1e-2
        ok &= passed
        print(f"grouped_gemm  GPU group n={label:<5} ({len(shapes)} problems) max_rel_err={err:.3e}  "
              f"{'PASS' if passed else 'FAIL'}")

    def flops(label):
        return sum(2 * M * N * K for M, N, K in groups[label][0])

    def launcher(prepare_fn, launch_fn):
        def make(label):
            arrays = prepare_fn(*groups[label][1:])[1]  # outside the timed launches
            return lambda: launch_fn(arrays, **cfg)
        return make

    impls = {"tritium": launcher(prepare, launch),
             "torch": lambda label: (lambda: [a @ b for a, b in zip(*groups[label][1:])])}
    if twin is not None:
        impls["triton"] = launcher(twin.prepare, twin.launch)
    benchmark("grouped_gemm", [(n, int(n)) for n in groups], impls,
              lambda label, ms: flops(label) / ms / 1e9, "TFLOP/s", "n (4 problems of about n^3)")
    return ok


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
