"""Kernels shared by the CPU (test_dot_cpu.py) and GPU (test_gpu_dot.py) tests of tl.dot, written
exactly as for Triton."""

import tritium as triton
import tritium.language as tl


@triton.jit
def persistent_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                             stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                             BLOCK_K: tl.constexpr, NUM_SMS: tl.constexpr, WS: tl.constexpr):
    """One program per SM walks the output tiles (a persistent kernel); the hints Triton takes on
    the tile loop (flatten, warp_specialize) are accepted."""
    start = tl.program_id(0)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_tiles = tl.cdiv(M, BLOCK_M) * num_pid_n
    offs_k = tl.arange(0, BLOCK_K)
    for tile in tl.range(start, num_tiles, NUM_SMS, flatten=True, warp_specialize=WS):
        pid_m = tile // num_pid_n
        pid_n = tile % num_pid_n
        offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BLOCK_K)):
            kk = k * BLOCK_K + offs_k
            a = tl.load(a_ptr + offs_m[:, None] * stride_am + kk[None, :] * stride_ak,
                        mask=(offs_m[:, None] < M) & (kk[None, :] < K), other=0.0)
            b = tl.load(b_ptr + kk[:, None] * stride_bk + offs_n[None, :] * stride_bn,
                        mask=(kk[:, None] < K) & (offs_n[None, :] < N), other=0.0)
            acc = tl.dot(a, b, acc)
        c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
        tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def batched_kernel(a_ptr, b_ptr, c_ptr, out_ptr, NB, M, N, K, BB: tl.constexpr, BM: tl.constexpr,
                   BN: tl.constexpr, BK: tl.constexpr, PRECISION: tl.constexpr,
                   HAS_ACC: tl.constexpr, F16_ACC: tl.constexpr = False):
    """out[b] = a[b] @ b[b] (+ c[b]) for a block of BB batches, with a K loop and masks on every
    dim (ragged batch, M, N and K). F16_ACC: accumulate in fp16 (out_dtype=tl.float16)."""
    rb = tl.program_id(0) * BB + tl.arange(0, BB)[:, None, None]
    rm = tl.program_id(1) * BM + tl.arange(0, BM)[None, :, None]
    rn = tl.program_id(2) * BN + tl.arange(0, BN)[None, None, :]
    kc = tl.arange(0, BK)[None, None, :]
    kr = tl.arange(0, BK)[None, :, None]
    if F16_ACC:
        acc = tl.zeros((BB, BM, BN), dtype=tl.float16)
    elif a_ptr.dtype.element_ty == tl.int8:
        acc = tl.zeros((BB, BM, BN), dtype=tl.int32)
    else:
        acc = tl.zeros((BB, BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rb * M * K + rm * K + k + kc, mask=(rb < NB) & (rm < M) & (k + kc < K),
                    other=0)
        b = tl.load(b_ptr + rb * K * N + (k + kr) * N + rn,
                    mask=(rb < NB) & (k + kr < K) & (rn < N), other=0)
        if F16_ACC:
            acc = tl.dot(a, b, acc, out_dtype=tl.float16)
        else:
            acc = tl.dot(a, b, acc, input_precision=PRECISION)
    mask = (rb < NB) & (rm < M) & (rn < N)
    if HAS_ACC:
        acc += tl.load(c_ptr + rb * M * N + rm * N + rn, mask=mask)
    tl.store(out_ptr + rb * M * N + rm * N + rn, acc, mask=mask)


@triton.jit
def batched_attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, B: tl.constexpr, M: tl.constexpr,
                             N: tl.constexpr, D: tl.constexpr):
    """o[b] = softmax(q[b] @ k[b]^T) @ v[b] for B heads at once: two chained rank-3 dots with the
    row statistics (reductions over the last axis of a batched accumulator) between them."""
    rb = tl.arange(0, B)[:, None, None]
    rm = tl.arange(0, M)[None, :, None]
    rn = tl.arange(0, N)[None, None, :]
    rdc = tl.arange(0, D)[None, None, :]
    rdr = tl.arange(0, D)[None, :, None]
    rnr = tl.arange(0, N)[None, :, None]
    q = tl.load(q_ptr + rb * M * D + rm * D + rdc)
    kt = tl.load(k_ptr + rb * N * D + rn * D + rdr)
    v = tl.load(v_ptr + rb * N * D + rnr * D + rdc)
    s = tl.dot(q, kt)
    m = tl.max(s, axis=2)
    p = tl.exp(s - m[:, :, None])
    l = tl.sum(p, axis=2)
    o = tl.dot(p.to(tl.float16), v) / l[:, :, None]
    tl.store(o_ptr + rb * M * D + rm * D + rdc, o)


@triton.jit
def matmul_bt_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                     BLOCK_K: tl.constexpr, TRANS_FN: tl.constexpr = False):
    """C = A @ B.T with B given N x K (K contiguous): the form of attention's Q @ K^T and of
    TensorDescriptor matmuls. In the K loop B's tile is transposed after its load (`b.T`, or
    `tl.trans(b)` with TRANS_FN), which the pipeliner copies as loaded and reads through a
    transposed view."""
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + offs_m[:, None] * K + (k + offs_k)[None, :],
                    mask=(offs_m[:, None] < M) & ((k + offs_k)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + offs_n[:, None] * K + (k + offs_k)[None, :],
                    mask=(offs_n[:, None] < N) & ((k + offs_k)[None, :] < K), other=0.0)
        acc = tl.dot(a, tl.trans(b) if TRANS_FN else b.T, acc)
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc.to(c_ptr.dtype.element_ty),
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def dk_like_kernel(k_ptr, q_ptr, dk_ptr, N_M, BLOCK_N: tl.constexpr, BLOCK_M: tl.constexpr,
                   D: tl.constexpr):
    """dK = sum over query blocks of (K Q_b^T) Q_b, each Q^T block loaded once and read both as
    loaded (S^T = K Q^T) and through tl.trans (dK += S^T Q): the attention backward's qT as
    Triton's tutorial writes it."""
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    k = tl.load(k_ptr + offs_n[:, None] * D + offs_d[None, :])
    dk = tl.zeros((BLOCK_N, D), dtype=tl.float32)
    for start in range(0, N_M, BLOCK_M):
        offs_m = start + tl.arange(0, BLOCK_M)
        qt = tl.load(q_ptr + offs_m[None, :] * D + offs_d[:, None], mask=offs_m[None, :] < N_M,
                     other=0.0)
        st = tl.dot(k, qt)
        dk = tl.dot(st.to(k.dtype), tl.trans(qt), dk)
    tl.store(dk_ptr + offs_n[:, None] * D + offs_d[None, :], dk)
