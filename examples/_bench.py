"""What the examples share: arrays of either kind, and the GPU benchmark.

The examples' wrappers take numpy arrays (the CPU executor) or torch tensors (CPU tensors run on
the executor too; CUDA tensors on the GPU), so the helpers here make an output of the same kind
(`nan_like`: poisoned with NaN, so an element the kernel misses shows up) and read strides in
elements whatever the kind (`strides`).

On a GPU each example calls `benchmark(...)`: one timing per case and implementation (tritium,
torch, and Triton when it is importable), printed as a table and plotted to
examples/plots/<name>.png when matplotlib is installed. Triton runs only as a peer in the same
process: `triton_twin(path)` loads a second copy of the example with its two imports swapped
for Triton's (and `tritium.tools` for `triton.tools`), which is all it takes to run an
example's kernels there. Nothing imports Triton
unless a benchmark asks for it, and TRITIUM_BENCH_NO_TRITON=1 keeps it out.
"""

import importlib.util
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PLOT_DIR = os.path.join(HERE, "plots")

_TRITIUM_IMPORTS = ("import tritium as triton\n", "import tritium.language as tl\n")
_TRITON_IMPORTS = ("import triton\n", "import triton.language as tl\n")


def _torch():
    return sys.modules.get("torch")


def is_torch(x):
    torch = _torch()
    return torch is not None and isinstance(x, torch.Tensor)


def nan_like(x, shape=None, dtype=None):
    """An output buffer like `x` (numpy array or torch tensor, same device), filled with NaN (or
    -1 for integer dtypes), of `shape` and `dtype` when given."""
    if is_torch(x):
        torch = _torch()
        dtype = dtype if dtype is not None else x.dtype
        out = torch.empty(tuple(x.shape) if shape is None else tuple(shape), dtype=dtype,
                          device=x.device)
        return out.fill_(float("nan") if out.dtype.is_floating_point else -1)
    import numpy as np  # noqa: PLC0415
    dtype = np.dtype(dtype if dtype is not None else x.dtype)
    fill = np.nan if dtype.kind == "f" else -1
    return np.full(x.shape if shape is None else shape, fill, dtype=dtype)


def strides(x):
    """Strides in elements (numpy counts bytes, torch elements)."""
    if is_torch(x):
        return tuple(x.stride())
    return tuple(s // x.itemsize for s in x.strides)


def gpu_available():
    """True when torch is installed and sees a CUDA GPU (imports torch only if installed), unless
    TRITIUM_EXAMPLES_CPU_ONLY=1 asks for the CPU checks alone."""
    if os.environ.get("TRITIUM_EXAMPLES_CPU_ONLY", "") not in ("", "0"):
        return False
    try:
        import torch  # noqa: PLC0415
    except ImportError:
        return False
    return torch.cuda.is_available()


def triton_twin(path):
    """The example at `path` loaded again with Triton's imports instead of tritium's (a module
    whose kernels and wrappers run on Triton), or None when Triton is not importable."""
    if os.environ.get("TRITIUM_BENCH_NO_TRITON"):
        return None
    try:
        import triton  # noqa: F401, PLC0415
    except Exception:  # not installed, or broken on this machine
        return None
    with open(path) as f:
        source = twin_source(f.read(), path)
    name = "triton_twin_" + os.path.splitext(os.path.basename(path))[0]
    # Triton reads a kernel's source back from its file, so the twin lives in a real file.
    twin_dir = os.path.join(tempfile.gettempdir(), "tritium-examples-twins")
    os.makedirs(twin_dir, exist_ok=True)
    twin_path = os.path.join(twin_dir, name + ".py")
    with open(twin_path, "w") as f:
        f.write(source)
    if HERE not in sys.path:
        sys.path.insert(0, HERE)
    spec = importlib.util.spec_from_file_location(name, twin_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def twin_source(source, path="<example>"):
    """An example's source with Triton's imports in place of tritium's."""
    for ours, theirs in zip(_TRITIUM_IMPORTS, _TRITON_IMPORTS):
        if ours not in source:
            raise ValueError(f"{path}: expected the line {ours.strip()!r}")
        source = source.replace(ours, theirs, 1)
    return source.replace("from tritium.tools.", "from triton.tools.")


def _time_ms(fn):
    import tritium.testing  # noqa: PLC0415
    return tritium.testing.do_bench(fn, warmup=10, rep=50, return_mode="median")


def benchmark(name, cases, impls, rate, unit, xlabel):
    """Times every implementation on every case and prints one table; plots it when matplotlib
    is importable. Returns the rows {case, impl, ms, rate} (ms None where an implementation
    failed; its error is printed).

    cases: [(label, x)]: x is the case's position on the plot's x axis.
    impls: {name: make} where make(label) returns a callable running one launch (or None when
      the implementation does not cover that case).
    rate: rate(label, ms) -> the achieved rate in `unit` (GB/s, TFLOP/s)."""
    rows = []
    for label, x in cases:
        for impl, make in impls.items():
            row = {"case": label, "x": x, "impl": impl, "ms": None, "rate": None}
            try:
                fn = make(label)
                if fn is None:
                    continue
                row["ms"] = _time_ms(fn)
                row["rate"] = rate(label, row["ms"])
            except Exception as e:  # one failing peer must not hide the others
                row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:100]}"
            rows.append(row)
    _print_table(name, rows, unit)
    _plot(name, rows, unit, xlabel)
    return rows


def _print_table(name, rows, unit):
    impls = list(dict.fromkeys(r["impl"] for r in rows))
    print(f"\n{name}: median ms ({unit}) per case")
    print(f"{'case':<22}" + "".join(f"{impl:>22}" for impl in impls))
    for label in dict.fromkeys(r["case"] for r in rows):
        cells = []
        for impl in impls:
            r = next((r for r in rows if r["case"] == label and r["impl"] == impl), None)
            if r is None:
                cells.append(f"{'-':>22}")
            elif r["ms"] is None:
                cells.append(f"{'failed':>22}")
            else:
                cells.append(f"{r['ms']:>10.4f} ({r['rate']:>8.1f})")
        print(f"{label:<22}" + "".join(cells))
    for r in rows:
        if "error" in r:
            print(f"  {r['impl']} on {r['case']}: {r['error']}")


def _plot(name, rows, unit, xlabel):
    try:
        import matplotlib  # noqa: PLC0415
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: PLC0415
    except ImportError:
        print(f"{name}: matplotlib is not installed; no plot")
        return None
    fig, ax = plt.subplots(figsize=(6, 4))
    for impl in dict.fromkeys(r["impl"] for r in rows):
        pts = [(r["x"], r["rate"]) for r in rows if r["impl"] == impl and r["rate"] is not None]
        if pts:
            ax.plot(*zip(*pts), marker="o", label=impl)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(unit)
    ax.set_xscale("log", base=2)
    ax.set_title(name)
    ax.grid(True, alpha=0.3)
    ax.legend()
    os.makedirs(PLOT_DIR, exist_ok=True)
    path = os.path.join(PLOT_DIR, f"{name}.png")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    print(f"{name}: plot saved to {path}")
    return path
