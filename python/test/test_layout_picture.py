"""tritium.tools.layout: which thread and register hold each element, from the layout's text."""

import pytest

from tritium.tools import layout

BLOCKED = ("#ttg.blocked<{sizePerThread = [1, 2], threadsPerWarp = [4, 8], warpsPerCTA = [2, 1], "
           "order = [1, 0]}>")


def test_blocked_picture_and_holders():
    h = layout.holders(BLOCKED, [8, 16])
    # Two registers along a row, 8 lanes along it, 4 lanes down, two warps down.
    assert h[(0, 0)] == [(0, 0)] and h[(0, 1)] == [(0, 1)] and h[(0, 2)] == [(1, 0)]
    assert h[(1, 0)] == [(8, 0)] and h[(4, 0)] == [(32, 0)]
    assert len(h) == 128 and all(len(v) == 1 for v in h.values())
    pic = layout.picture(BLOCKED, [8, 16]).splitlines()
    assert len(pic) == 9 and pic[1].split()[:3] == ["T0:0", "T0:1", "T1:0"]
    assert pic[5].split()[0] == "T32:0"


def test_copies_list_every_holder():
    # 4 x 4 in a layout made for 4 x 16: the lanes beyond the columns hold copies.
    h = layout.holders(BLOCKED, [4, 4])
    assert sorted(h[(0, 0)])[:2] == [(0, 0), (2, 0)] and len(h[(0, 0)]) == 8
    assert "/" in layout.picture(BLOCKED, [4, 4]).splitlines()[1]


def test_mma_accumulator():
    mma = "#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [1, 1], instrShape = [16, 8]}>"
    h = layout.holders(mma, [16, 8])
    # mma.sync's accumulator fragment: lane 4g + t holds (g, 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1).
    assert h[(0, 0)] == [(0, 0)] and h[(0, 1)] == [(0, 1)] and h[(8, 0)] == [(0, 2)]
    assert h[(1, 2)] == [(5, 0)]


def test_bad_layout_text():
    with pytest.raises(ValueError, match="not a GPU layout"):
        layout.holders("#ttg.nonsense<{}>", [4, 4])


def test_png(tmp_path):
    pytest.importorskip("matplotlib")
    layout.save_png(BLOCKED, [8, 16], tmp_path / "l.png")
    assert (tmp_path / "l.png").stat().st_size > 1000
