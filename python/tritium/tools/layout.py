"""Pictures of GPU layouts: which thread and register hold each element of a tensor.

    from tritium.tools import layout
    print(layout.picture("#ttg.blocked<{sizePerThread = [1, 2], threadsPerWarp = [4, 8], "
                         "warpsPerCTA = [2, 1], order = [1, 0]}>", [8, 16]))

prints one cell per element of a 2-D tensor (1-D: one row), `T<thread>:<register>` with thread =
warp * 32 + lane, listing every holder when threads hold copies. Any layout the IR prints works:
blocked, slice, linear, nvidia_mma, dot_op (the text of `compiled.asm["gir"]`'s types).
`save_png(text, shape, path)` draws the same picture, one colour per warp (needs matplotlib).
"""

from ..errors import load_C


def holders(layout, shape):
    """{coordinate tuple: [(thread, register), ...]} of a tensor of `shape` in `layout`."""
    out = {}
    for warp, lane, reg, coord in load_C().layout_elements(layout, [int(s) for s in shape]):
        out.setdefault(tuple(coord), []).append((warp * 32 + lane, reg))
    return out


def picture(layout, shape):
    """The text picture of `layout` on `shape` (rank 1 or 2)."""
    shape = [int(s) for s in shape]
    if len(shape) not in (1, 2):
        raise ValueError(f"layout pictures are for 1-D and 2-D tensors, got shape {shape}")
    h = holders(layout, shape)
    rows, cols = (1, shape[0]) if len(shape) == 1 else shape

    def cell(r, c):
        key = (c,) if len(shape) == 1 else (r, c)
        return "/".join(f"T{t}:{reg}" for t, reg in sorted(h.get(key, [])))

    cells = [[cell(r, c) for c in range(cols)] for r in range(rows)]
    width = max(len(x) for row in cells for x in row)
    head = f"{layout} on {'x'.join(map(str, shape))}: T<thread>:<register> per element"
    return "\n".join([head] + [" ".join(x.ljust(width) for x in row).rstrip() for row in cells])


def save_png(layout, shape, path):
    """The picture as a PNG at `path`: elements coloured by the warp of their first holder."""
    import matplotlib  # noqa: PLC0415 (optional)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415
    shape = [int(s) for s in shape]
    rows, cols = (1, shape[0]) if len(shape) == 1 else shape
    h = holders(layout, shape)
    fig, ax = plt.subplots(figsize=(max(4, cols * 0.6), max(2, rows * 0.4)))
    cmap = plt.get_cmap("tab20")
    for r in range(rows):
        for c in range(cols):
            t, reg = sorted(h[(c,) if len(shape) == 1 else (r, c)])[0]
            ax.add_patch(plt.Rectangle((c, rows - 1 - r), 1, 1, color=cmap((t // 32) % 20)))
            ax.text(c + 0.5, rows - 0.5 - r, f"T{t}\n{reg}", ha="center", va="center", fontsize=6)
    ax.set_xlim(0, cols)
    ax.set_ylim(0, rows)
    ax.set_axis_off()
    fig.savefig(path, dpi=150, bbox_inches="tight")
    plt.close(fig)
