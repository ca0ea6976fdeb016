"""test_int64_offsets_cpu.py's kernels on the GPU: offsets past 2^31 elements of a 2 GiB int8 CUDA
tensor, computed by the kernels in int32 as Triton users write them, land on the right elements
(the launch specialises the pointer with 64-bit offsets). Run with `pytest -m gpu`."""

import numpy as np
import pytest

from test_int64_offsets_cpu import BIG, _copy_block, _row_sum

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def big():
    x = torch.zeros(BIG, dtype=torch.int8, device="cuda")
    yield x
    del x
    torch.cuda.empty_cache()


def test_block_offsets_past_2_31(big):
    BLOCK = 1024
    first = 2 ** 21 + 3
    start = first * BLOCK
    pattern = torch.arange(3 * BLOCK, device="cuda") % 100
    big[start:start + 3 * BLOCK] = pattern.to(torch.int8)
    n = start + 2 * BLOCK + 100
    out = torch.full((3 * BLOCK,), 77, dtype=torch.int8, device="cuda")
    for _ in range(2):  # the second launch: what the launch cache keeps for a big tensor
        big[start:start + 3 * BLOCK] = pattern.to(torch.int8)
        _copy_block[(3,)](big, out, first, n, BLOCK=BLOCK)
        want = pattern.to(torch.int8).clone()
        want[2 * BLOCK + 100:] = -1
        assert torch.equal(out, want)
        assert torch.equal(big[start:start + 2 * BLOCK + 100],
                           (pattern[:2 * BLOCK + 100] + 1).to(torch.int8))
        assert torch.equal(big[start + 2 * BLOCK + 100:start + 3 * BLOCK],
                           pattern[2 * BLOCK + 100:].to(torch.int8))
    assert int(big[:start].abs().sum()) == 0, "a store wrapped around to the start"


def test_row_times_stride_past_2_31(big):
    stride, COLS = 65536, 64
    row0 = (2 ** 31) // stride
    big[row0 * stride:row0 * stride + COLS] = 1
    big[(row0 - 1) * stride:(row0 - 1) * stride + COLS] = 2
    out = torch.zeros(2, dtype=torch.int32, device="cuda")
    _row_sum[(2,)](big, out, stride, row0 - 1, COLS=COLS)
    np.testing.assert_array_equal(out.cpu().numpy(), [2 * COLS, COLS])


def test_small_tensors_keep_the_fast_path():
    """The same kernel on a small tensor after a big one: its own (int32) specialisation."""
    x = torch.arange(4096, device="cuda").to(torch.int8)
    out = torch.full((1024,), 77, dtype=torch.int8, device="cuda")
    _copy_block[(1,)](x, out, 1, 4096, BLOCK=1024)
    assert torch.equal(out, torch.arange(1024, 2048, device="cuda").to(torch.int8))


def test_loop_carried_offsets_past_2_31(big):
    from test_int64_offsets_cpu import _carried_sum  # noqa: PLC0415

    BLOCK, steps = 1024, 4
    first = 2 ** 21 - 2
    start = first * BLOCK
    for s in range(steps):
        big[start + s * BLOCK:start + (s + 1) * BLOCK] = s + 1
    out = torch.zeros(BLOCK, dtype=torch.int32, device="cuda")
    _carried_sum[(1,)](big, out, first, steps, BLOCK=BLOCK)
    assert torch.equal(out, torch.full_like(out, 1 + 2 + 3 + 4))
    big[start:start + steps * BLOCK] = 0


def test_strided_view_reaching_past_2_31(big):
    """A view of 2^15 + 1 rows 65536 elements apart has 2^21 + 64 elements but reaches 2^31 + 64
    from its address. After a small tensor has put _row_sum's int32 specialisation on the fast
    path, the view must not take it (the fast path counted elements; it now reads the view's
    footprint and sends it to the Python path, which specialises with 64-bit offsets)."""
    stride, COLS = 65536, 64
    small = torch.ones(4 * stride, dtype=torch.int8, device="cuda")
    out = torch.zeros(2, dtype=torch.int32, device="cuda")
    for _ in range(2):
        _row_sum[(2,)](small, out, stride, 1, COLS=COLS)
    np.testing.assert_array_equal(out.cpu().numpy(), [COLS, COLS])
    row0 = (2 ** 31) // stride
    big[row0 * stride:row0 * stride + COLS] = 3
    big[(row0 - 1) * stride:(row0 - 1) * stride + COLS] = 5
    view = big.as_strided((row0 + 1, COLS), (stride, 1))
    assert view.numel() < 2 ** 31 and not view.is_contiguous()
    for _ in range(2):
        out.fill_(-1)
        _row_sum[(2,)](view, out, stride, row0 - 1, COLS=COLS)
        np.testing.assert_array_equal(out.cpu().numpy(), [5 * COLS, 3 * COLS])
