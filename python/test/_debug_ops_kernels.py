"""Kernels of tl.device_print, tl.device_assert and tl.inline_asm_elementwise,
shared by test_debug_ops_ptx.py (PTX assembled by ptxas, no GPU) and
test_gpu_debug_ops.py (run on the GPU)."""

import tritium as triton
import tritium.language as tl


@triton.jit
def print_1d(x_ptr, BLOCK: tl.constexpr, HEX: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.device_print("x", x, hex=HEX)


@triton.jit
def print_2d(x_ptr, R: tl.constexpr, C: tl.constexpr):
    # The row index is broadcast along the columns: with more threads than
    # elements, several threads hold each element (printed once).
    rows = tl.arange(0, R)[:, None]
    cols = tl.arange(0, C)[None, :]
    x = tl.load(x_ptr + rows * C + cols)
    tl.device_print("v: ", x, rows + cols)


@triton.jit
def print_scalars(x_ptr, n):
    pid = tl.program_id(0)
    tl.device_print("pid and n", pid, n)
    tl.device_print("first", tl.load(x_ptr + pid))
    tl.device_print("ptr", x_ptr)
    tl.device_print("100% done")


@triton.jit
def assert_below(x_ptr, y_ptr, limit, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.device_assert(x < limit, "x must stay below the limit")  # ASSERT-LINE
    tl.store(y_ptr + offs, x + 1)


@triton.jit
def assert_2d(x_ptr, R: tl.constexpr, C: tl.constexpr):
    offs = tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]
    x = tl.load(x_ptr + offs)
    assert x >= 0, "negative entry"  # ASSERT-2D


@triton.jit
def asm_shift(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.inline_asm_elementwise("shl.b32 $0, $1, 3;", "=r,r", [x], dtype=tl.int32,  # SHIFT
                                  is_pure=True, pack=1)
    tl.store(y_ptr + offs, y)


@triton.jit
def asm_field(x_ptr, y_ptr, BLOCK: tl.constexpr):
    # Bits 4..11 of each element, zero-extended.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.inline_asm_elementwise("bfe.u32 $0, $1, 4, 8;", "=r,r", [x], dtype=tl.uint32,
                                  is_pure=True, pack=1)
    tl.store(y_ptr + offs, y)


@triton.jit
def asm_xor_bytes(a_ptr, b_ptr, y_ptr, BLOCK: tl.constexpr):
    # Four int8 elements of each argument per 32-bit register.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    y = tl.inline_asm_elementwise("xor.b32 $0, $1, $2;", "=r,r,r", [a, b], dtype=tl.int8,
                                  is_pure=True, pack=4)
    tl.store(y_ptr + offs, y)


@triton.jit
def asm_bytes_to_float(a_ptr, y_ptr, BLOCK: tl.constexpr):
    # One packed register of four int8 in, four f32 out: byte k is element k.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs)
    y = tl.inline_asm_elementwise(
        """{
        .reg .b32 b<4>;
        bfe.s32 b0, $4, 0, 8;
        bfe.s32 b1, $4, 8, 8;
        bfe.s32 b2, $4, 16, 8;
        bfe.s32 b3, $4, 24, 8;
        cvt.rn.f32.s32 $0, b0;
        cvt.rn.f32.s32 $1, b1;
        cvt.rn.f32.s32 $2, b2;
        cvt.rn.f32.s32 $3, b3;
        }""",
        "=f,=f,=f,=f,r", [a], dtype=tl.float32, is_pure=True, pack=4)
    tl.store(y_ptr + offs, y)


@triton.jit
def asm_half_pairs(a_ptr, b_ptr, c_ptr, y_ptr, BLOCK: tl.constexpr):
    # Two fp16 elements per register, one f16x2 instruction per call.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    c = tl.load(c_ptr + offs)
    y = tl.inline_asm_elementwise("fma.rn.f16x2 $0, $1, $2, $3;", "=r,r,r,r", [a, b, c],
                                  dtype=tl.float16, is_pure=True, pack=2)
    tl.store(y_ptr + offs, y)


@triton.jit
def asm_two_results(x_ptr, lo_ptr, hi_ptr, BLOCK: tl.constexpr):
    # A tuple of dtypes: two results per call; a scalar argument broadcasts.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    lo, hi = tl.inline_asm_elementwise(
        "{ add.s32 $0, $2, $3; sub.s32 $1, $2, $3; }", "=r,=r,r,r", [x, 7],
        dtype=(tl.int32, tl.int32), is_pure=False, pack=1)
    tl.store(lo_ptr + offs, lo)
    tl.store(hi_ptr + offs, hi)


@triton.jit
def row_then_target_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    """Liger-Kernel's cross-entropy pattern: every thread stores its part of a row, then, after
    tl.debug_barrier(), one scalar store overwrites the row's target element. Without the barrier
    the scalar store can land before another thread's row store to the same address."""
    row = tl.program_id(0)
    y = tl.load(y_ptr + row)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        v = tl.load(x_ptr + row * n + offs, mask=offs < n)
        tl.store(x_ptr + row * n + offs, v * 2.0, mask=offs < n)
    tl.debug_barrier()
    tl.store(x_ptr + row * n + y, -1.0)
