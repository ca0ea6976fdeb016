"""Testing helpers (`tritium.testing`), as in `triton.testing`.

- `assert_close(x, y, atol, rtol)`.
- `do_bench(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None,
  return_mode="mean")`: the time of one call of `fn` in ms. On a GPU (torch's
  CUDA is initialised once `fn` has run, i.e. `fn` launched there) it uses
  CUDA events and zeroes a 256 MB buffer before every timed call to flush the
  L2 cache, as Triton does; otherwise (the CPU executor) time.perf_counter
  around every call, with the same logic: one call, 5 calls to estimate the
  time, then enough calls for `warmup` ms and `rep` ms. No cache flush on the
  CPU (a flush bigger than the last-level cache would cost far more than
  the calls being timed).
- `do_bench_cudagraph(fn, rep=20, ...)`: CUDA graph replay on a GPU. Without
  a GPU (or when `fn` does not launch on it) it falls back to `do_bench(fn,
  rep=rep, ...)` on the CPU, so autotune(use_cuda_graph=True) also works
  with the CPU executor.
- `perf_report(benchmarks)` / `Benchmark(...)` / `Mark.run(show_plots,
  print_data, save_path)`: runs the benchmark grid, prints a table, writes
  `<plot_name>.csv` (and `<plot_name>.png` when matplotlib is importable).
"""

import csv
import math
import os
import statistics
import sys
import time

from .runtime.driver import set_benchmarker as _set_benchmarker

__all__ = ["Benchmark", "Mark", "assert_close", "do_bench", "do_bench_cudagraph",
           "perf_report"]


def _to_numpy(x):
    import numpy as np  # noqa: PLC0415
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        x = x.detach()
        if x.device.type != "cpu":
            x = x.cpu()
        if x.dtype in (torch.bfloat16,) or str(x.dtype).startswith("torch.float8"):
            x = x.float()
        return x.numpy()
    return np.asarray(x)


def assert_close(x, y, atol=None, rtol=None, err_msg=""):
    """Asserts that x and y (torch tensors, numpy arrays or scalars) are equal
    within atol + rtol * |y| elementwise; NaNs must match. Defaults as in
    Triton: atol=1e-2, rtol=0."""
    import numpy as np  # noqa: PLC0415
    atol = 1e-2 if atol is None else atol
    rtol = 0.0 if rtol is None else rtol
    a, b = _to_numpy(x), _to_numpy(y)
    if a.dtype == np.bool_ or b.dtype == np.bool_:
        np.testing.assert_array_equal(a, b, err_msg=err_msg)
        return
    np.testing.assert_allclose(a.astype(np.float64) if a.dtype.kind == "f" else a,
                               b.astype(np.float64) if b.dtype.kind == "f" else b,
                               atol=atol, rtol=rtol, equal_nan=True, err_msg=err_msg)


# ---------------------------------------------------------------------------
# benchmarking

_RETURN_MODES = ("min", "max", "mean", "median", "all")


def _quantile(values, qs):
    """Quantiles with linear interpolation (numpy's default)."""
    a = sorted(values)
    n = len(a)
    out = []
    for q in qs:
        if not 0 <= q <= 1:
            raise ValueError(f"quantiles must be in [0, 1], got {q!r}")
        point = q * (n - 1)
        lo, hi = math.floor(point), math.ceil(point)
        out.append(a[lo] + (a[hi] - a[lo]) * (point - lo))
    return out


def _summarize(times, quantiles, return_mode):
    if quantiles is not None:
        ret = _quantile(times, list(quantiles))
        return ret[0] if len(ret) == 1 else ret
    if return_mode == "all":
        return list(times)
    if return_mode == "min":
        return min(times)
    if return_mode == "max":
        return max(times)
    if return_mode == "mean":
        return statistics.mean(times)
    return statistics.median(times)


def _check_return_mode(return_mode):
    if return_mode not in _RETURN_MODES:
        raise ValueError(f"return_mode must be one of {', '.join(map(repr, _RETURN_MODES))}, "
                         f"got {return_mode!r}")


def _cuda_in_use(device):
    """Whether to time with CUDA events: device="cuda"/"cpu" decides; else
    when torch has a CUDA GPU and its CUDA context exists (after one call of
    the function: it launched there)."""
    if device is not None:
        if device not in ("cuda", "cpu"):
            raise ValueError(f"device must be 'cuda', 'cpu' or None, got {device!r}")
        return device == "cuda"
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    try:
        return bool(torch.cuda.is_available() and torch.cuda.is_initialized())
    except Exception:  # noqa: BLE001 -- a broken CUDA install: time on the host
        return False


def _clear_grads(grad_to_none):
    if grad_to_none is not None:
        for x in grad_to_none:
            x.grad = None


# The smallest estimate of a call (ms) used to size the loops: a function
# faster than the timer still gets a bounded number of calls.
_MIN_ESTIMATE_MS = 1e-4


def do_bench(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None, return_mode="mean",
             *, device=None):
    """The running time of `fn()` in ms (see the module docstring).

    warmup, rep: ms spent on warm-up calls and on timed calls; grad_to_none:
    tensors whose .grad is reset before every timed call; quantiles: a list
    of quantiles of the timed calls to return instead (one value when the
    list has one element); return_mode: "min", "max", "mean", "median" or
    "all" (the list of times); device: "cuda" or "cpu" forces the timer."""
    _check_return_mode(return_mode)
    fn()
    if _cuda_in_use(device):
        times = _bench_cuda(fn, warmup, rep, grad_to_none)
    else:
        times = _bench_cpu(fn, warmup, rep, grad_to_none)
    return _summarize(times, quantiles, return_mode)


def _bench_cpu(fn, warmup, rep, grad_to_none):
    clock = time.perf_counter
    t0 = clock()
    for _ in range(5):
        fn()
    estimate_ms = max((clock() - t0) * 1e3 / 5, _MIN_ESTIMATE_MS)
    n_warmup = max(1, int(warmup / estimate_ms))
    n_repeat = max(1, int(rep / estimate_ms))
    for _ in range(n_warmup):
        fn()
    times = [0.0] * n_repeat
    for i in range(n_repeat):
        _clear_grads(grad_to_none)
        t0 = clock()
        fn()
        times[i] = (clock() - t0) * 1e3
    return times


def _bench_cuda(fn, warmup, rep, grad_to_none):
    import torch  # noqa: PLC0415
    torch.cuda.synchronize()
    # Zeroing 256 MB before every call leaves none of fn's data in the L2.
    cache = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda")
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        cache.zero_()
        fn()
    end.record()
    torch.cuda.synchronize()
    estimate_ms = max(start.elapsed_time(end) / 5, _MIN_ESTIMATE_MS)
    n_warmup = max(1, int(warmup / estimate_ms))
    n_repeat = max(1, int(rep / estimate_ms))
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n_repeat)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n_repeat)]
    for _ in range(n_warmup):
        fn()
    for i in range(n_repeat):
        _clear_grads(grad_to_none)
        cache.zero_()
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in zip(starts, ends)]


def do_bench_cudagraph(fn, rep=20, grad_to_none=None, quantiles=None, return_mode="mean"):
    """The running time of `fn()` in ms, replaying a CUDA graph of `rep` ms of
    calls 10 times (as Triton). Without a GPU, or when `fn` does not launch
    on it, this is `do_bench(fn, rep=rep, ...)` on the CPU."""
    _check_return_mode(return_mode)
    torch = sys.modules.get("torch")
    if torch is None or not _cuda_available(torch):
        return do_bench(fn, rep=rep, grad_to_none=grad_to_none, quantiles=quantiles,
                        return_mode=return_mode, device="cpu")
    with torch.cuda.stream(torch.cuda.Stream()):
        fn()
        if not torch.cuda.is_initialized():
            # fn ran on the CPU executor: nothing to capture.
            return do_bench(fn, rep=rep, grad_to_none=grad_to_none, quantiles=quantiles,
                            return_mode=return_mode, device="cpu")
        if grad_to_none is not None:
            for x in grad_to_none:
                x.detach_()
                x.requires_grad_(True)
                x.grad = None
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(5):
            fn()
        end.record()
        torch.cuda.synchronize()
        estimate_ms = start.elapsed_time(end) / 5
        n_repeat = 1000 if estimate_ms == 0 else max(1, int(rep / estimate_ms))
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(n_repeat):
                _clear_grads(grad_to_none)
                fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(10):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            graph.replay()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end) / n_repeat)
    return _summarize(times, quantiles, return_mode)


def _cuda_available(torch):
    try:
        return bool(torch.cuda.is_available())
    except Exception:  # noqa: BLE001
        return False


# ---------------------------------------------------------------------------
# perf_report


class Benchmark:
    """One benchmark grid for `perf_report`: for every x in x_vals (given to
    every argument in x_names, or a tuple with one value per name) and every
    line value in line_vals (given to line_arg), the function is called with
    those arguments and `args`; it returns a number, or (value, min, max)."""

    def __init__(self, x_names, x_vals, line_arg, line_vals, line_names, plot_name, args,
                 xlabel="", ylabel="", x_log=False, y_log=False, styles=None, color=None):
        self.x_names = list(x_names)
        self.x_vals = list(x_vals)
        self.x_log = x_log
        self.line_arg = line_arg
        self.line_vals = list(line_vals)
        self.line_names = list(line_names)
        self.y_log = y_log
        self.styles = styles
        self.color = color
        self.xlabel = xlabel
        self.ylabel = ylabel
        self.plot_name = plot_name
        self.args = dict(args or {})
        if len(self.line_names) != len(self.line_vals):
            raise ValueError(f"Benchmark {plot_name!r}: {len(self.line_vals)} line_vals but "
                             f"{len(self.line_names)} line_names")


class BenchmarkTable:
    """The results of one Benchmark: `columns` (x names, then line names) and
    `rows` (lists of values); `mins`/`maxs` hold the (min, max) a function
    returned, per row and line (None when it returned one number)."""

    def __init__(self, columns):
        self.columns = list(columns)
        self.rows = []
        self.mins = []
        self.maxs = []

    def to_string(self):
        cells = [[""] + self.columns]
        for i, row in enumerate(self.rows):
            cells.append([str(i)] + [_fmt(v) for v in row])
        widths = [max(len(r[j]) for r in cells) for j in range(len(cells[0]))]
        return "\n".join("  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in cells)

    def to_csv(self, path, precision=6):
        with open(path, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(self.columns)
            for row in self.rows:
                w.writerow([f"{v:.{precision}f}" if isinstance(v, float) else v for v in row])

    def to_pandas(self):
        import pandas as pd  # noqa: PLC0415
        return pd.DataFrame(self.rows, columns=self.columns)

    def __str__(self):
        return self.to_string()


def _fmt(v):
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


class Mark:
    """A function marked by `perf_report`; `run(...)` runs its benchmarks."""

    def __init__(self, fn, benchmarks):
        self.fn = fn
        self.benchmarks = benchmarks

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)

    def _run(self, bench, save_path, show_plots, print_data, save_precision=6, **kwargs):
        table = BenchmarkTable(bench.x_names + bench.line_names)
        for x in bench.x_vals:
            xs = list(x) if isinstance(x, (list, tuple)) else [x] * len(bench.x_names)
            if len(xs) != len(bench.x_names):
                raise ValueError(f"Benchmark {bench.plot_name!r}: x value {x!r} has "
                                 f"{len(xs)} entries for x_names {bench.x_names}")
            x_args = dict(zip(bench.x_names, xs))
            row, mins, maxs = list(xs), [], []
            for y in bench.line_vals:
                ret = self.fn(**x_args, **{bench.line_arg: y}, **bench.args, **kwargs)
                if isinstance(ret, (tuple, list)):
                    if len(ret) != 3:
                        raise ValueError(f"Benchmark {bench.plot_name!r}: the function "
                                         "must return a number or (value, min, max), got "
                                         f"{ret!r}")
                    y_val, y_min, y_max = ret
                else:
                    y_val, y_min, y_max = ret, None, None
                row.append(_number(y_val))
                mins.append(None if y_min is None else _number(y_min))
                maxs.append(None if y_max is None else _number(y_max))
            table.rows.append(row)
            table.mins.append(mins)
            table.maxs.append(maxs)
        if bench.plot_name and (save_path or show_plots):
            self._plot(bench, table, save_path, show_plots)
        if print_data:
            print(f"{bench.plot_name}:")
            print(table.to_string())
        if save_path:
            table.to_csv(os.path.join(save_path, f"{bench.plot_name}.csv"), save_precision)
        return table

    @staticmethod
    def _plot(bench, table, save_path, show_plots):
        try:
            import matplotlib  # noqa: PLC0415
            if not show_plots:
                matplotlib.use("Agg", force=False)
            import matplotlib.pyplot as plt  # noqa: PLC0415
        except ImportError:
            return  # the CSV and the printed table still come
        fig, ax = plt.subplots()
        xs = [row[0] for row in table.rows]
        nx = len(bench.x_names)
        for i, name in enumerate(bench.line_names):
            ys = [row[nx + i] for row in table.rows]
            col = bench.styles[i][0] if bench.styles else None
            sty = bench.styles[i][1] if bench.styles else None
            ax.plot(xs, ys, label=name, color=col, ls=sty)
            lo = [m[i] for m in table.mins]
            hi = [m[i] for m in table.maxs]
            if all(v is not None for v in lo + hi):
                ax.fill_between(xs, lo, hi, alpha=0.15, color=col)
        ax.legend()
        ax.set_xlabel(bench.xlabel or bench.x_names[0])
        ax.set_ylabel(bench.ylabel)
        ax.set_xscale("log" if bench.x_log else "linear")
        ax.set_yscale("log" if bench.y_log else "linear")
        if save_path:
            fig.savefig(os.path.join(save_path, f"{bench.plot_name}.png"))
        if show_plots:
            plt.show()
        plt.close(fig)

    def run(self, show_plots=False, print_data=False, save_path="", return_df=False,
            **kwargs):
        """Runs every benchmark: prints the tables (print_data), writes
        `<plot_name>.csv`, `<plot_name>.png` (matplotlib) and results.html
        into save_path. return_df: return the tables (pandas DataFrames when
        pandas is importable, else BenchmarkTable objects; one, or a list)."""
        single = isinstance(self.benchmarks, Benchmark)
        benchmarks = [self.benchmarks] if single else list(self.benchmarks)
        if save_path:
            save_path = os.path.abspath(save_path)
            os.makedirs(save_path, exist_ok=True)
        tables = [self._run(b, save_path, show_plots, print_data, **kwargs) for b in benchmarks]
        if save_path:
            with open(os.path.join(save_path, "results.html"), "w", encoding="utf-8") as f:
                f.write("<html><body>\n")
                for b in benchmarks:
                    f.write(f'<image src="{b.plot_name}.png"/>\n')
                f.write("</body></html>\n")
        if return_df:
            try:
                tables = [t.to_pandas() for t in tables]
            except ImportError:
                pass
            return tables[0] if single else tables
        return None


def _number(v):
    """A benchmark value as a Python number (0-d tensors and numpy scalars too)."""
    if hasattr(v, "item") and not isinstance(v, (int, float)):
        v = v.item()
    return v


def perf_report(benchmarks):
    """Decorator: marks a function for benchmarking over `benchmarks` (a
    Benchmark or a list); run them with `.run(print_data=True, save_path=...)`."""
    return lambda fn: Mark(fn, benchmarks)


# triton.runtime.driver.active.get_benchmarker() (Inductor's, Triton's testing) returns this
# module's do_bench; the runtime sits below this module, so it is told here.
_set_benchmarker(do_bench)
