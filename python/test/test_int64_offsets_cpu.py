"""Offsets into tensors of 2^31 elements or more (issue 12's 64-bit safety): a kernel that writes
`pid * BLOCK + arange` or `row * stride + col` in int32, as Triton users do, reads and writes the
right elements of a tensor past 2^31 elements, because the launcher specialises such a pointer
argument (tt.int64_offsets) and the widen-offsets pass recomputes its offsets and masks in 64 bits.
The arrays are int8 numpy arrays of 2^31 + a few thousand bytes (zero pages: nothing is touched but
the few blocks the kernels access)."""

import numpy as np
import pytest

import tritium
from harness import triton, tl

BIG = 2 ** 31 + 8192


@pytest.fixture(scope="module")
def big():
    return np.zeros(BIG, dtype=np.int8)


@triton.jit
def _copy_block(x_ptr, out_ptr, first_block, n, BLOCK: tl.constexpr):
    # first_block * BLOCK exceeds 2^31 - 1: in int32 it wraps to a negative offset.
    offs = (first_block + tl.program_id(0)) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x_ptr + offs, mask=mask, other=-1)
    tl.store(out_ptr + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK), v)
    tl.store(x_ptr + offs, v + 1, mask=mask)


def test_block_offsets_past_2_31(big):
    BLOCK = 1024
    first = 2 ** 21 + 3  # first * BLOCK = 2^31 + 3072
    start = first * BLOCK
    big[start:start + 3 * BLOCK] = (np.arange(3 * BLOCK) % 100).astype(np.int8)
    n = start + 2 * BLOCK + 100  # the third block is ragged: 100 valid elements
    out = np.full(3 * BLOCK, 77, np.int8)
    _copy_block[(3,)](big, out, first, n, BLOCK=BLOCK)
    want = (np.arange(3 * BLOCK) % 100).astype(np.int8)
    want[2 * BLOCK + 100:] = -1
    np.testing.assert_array_equal(out, want)
    # the stores went to the same elements, and only to the valid ones
    np.testing.assert_array_equal(big[start:start + 2 * BLOCK + 100],
                                  (np.arange(2 * BLOCK + 100) % 100 + 1).astype(np.int8))
    assert (big[start + 2 * BLOCK + 100:start + 3 * BLOCK] ==
            want[2 * BLOCK + 100:] * 0 + (np.arange(2 * BLOCK + 100, 3 * BLOCK) % 100)).all()
    assert not big[:start].any(), "a store wrapped around to the start of the tensor"


@triton.jit
def _row_sum(x_ptr, out_ptr, stride, row0, COLS: tl.constexpr):
    row = row0 + tl.program_id(0)
    cols = tl.arange(0, COLS)
    v = tl.load(x_ptr + row * stride + cols)  # row * stride > 2^31 in int32
    tl.store(out_ptr + tl.program_id(0), tl.sum(v.to(tl.int32)))


def test_row_times_stride_past_2_31(big):
    stride, COLS = 65536, 64
    row0 = (2 ** 31) // stride  # the first row at element 2^31
    big[row0 * stride:row0 * stride + COLS] = 1
    big[(row0 - 1) * stride:(row0 - 1) * stride + COLS] = 2
    out = np.zeros(2, np.int32)
    # rows row0 - 1 and row0: the second starts exactly at element 2^31
    _row_sum[(2,)](big, out, stride, row0 - 1, COLS=COLS)
    np.testing.assert_array_equal(out, [2 * COLS, COLS])


def test_the_specialisation_is_its_own():
    """A small tensor's kernel keeps int32 offsets; the big tensor's is a specialisation of its
    own whose IR marks the argument and computes the offsets in i64."""
    small = np.zeros(4096, np.int8)
    out = np.zeros(2048, np.int8)
    k_small = _copy_block.warmup(small, out, 0, 4096, BLOCK=1024, grid=(1,))
    assert "tt.int64_offsets" not in k_small.asm["tir"]
    assert "xi64" not in k_small.asm["tir"]
    k_big = _copy_block.warmup(np.zeros(BIG, np.int8), out, 0, 4096, BLOCK=1024, grid=(1,))
    tir = k_big.asm["tir"]
    assert "tt.int64_offsets = true" in tir
    assert "arith.muli" in tir and ": i64" in tir and "tensor<1024xi64>" in tir, tir
    assert k_small is not k_big


@triton.jit
def _carried_sum(x_ptr, out_ptr, start_block, steps, BLOCK: tl.constexpr):
    offs = start_block * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.int32)
    for _ in range(steps):
        acc += tl.load(x_ptr + offs).to(tl.int32)
        offs += BLOCK  # an int32 offset carried around the loop, past 2^31
    tl.store(out_ptr + tl.arange(0, BLOCK), acc)


def test_loop_carried_offsets_past_2_31(big):
    """An offset carried around a loop (`offs += BLOCK`) crosses 2^31 elements: its i64 twin,
    carried beside it, keeps the addresses right."""
    BLOCK, steps = 1024, 4
    first = 2 ** 21 - 2  # blocks 2^21 - 2 .. 2^21 + 1: the last two past element 2^31
    start = first * BLOCK
    for s in range(steps):
        big[start + s * BLOCK:start + (s + 1) * BLOCK] = s + 1
    out = np.zeros(BLOCK, np.int32)
    _carried_sum[(1,)](big, out, first, steps, BLOCK=BLOCK)
    np.testing.assert_array_equal(out, np.full(BLOCK, 1 + 2 + 3 + 4, np.int32))
    big[start:start + steps * BLOCK] = 0
