"""Tests of tritium.testing: assert_close, do_bench (CPU timing, quantiles,
return modes), do_bench_cudagraph's CPU fallback, perf_report / Benchmark."""

import csv
import os
import time

import numpy as np
import pytest

import tritium
import tritium.language as tl
from tritium import testing


@tritium.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m),
             mask=m)


class Counter:
    def __init__(self, sleep_s=0.0):
        self.calls = 0
        self.sleep_s = sleep_s

    def __call__(self):
        self.calls += 1
        if self.sleep_s:
            time.sleep(self.sleep_s)


# ----------------------------------------------------------------------------------------------
# assert_close


def test_assert_close():
    testing.assert_close(np.array([1.0, 2.0]), np.array([1.005, 2.0]))
    with pytest.raises(AssertionError):
        testing.assert_close(np.array([1.0, 2.0]), np.array([1.1, 2.0]))
    testing.assert_close(np.array([1.0, np.nan]), np.array([1.0, np.nan]))
    testing.assert_close(np.array([True, False]), np.array([True, False]))


# ----------------------------------------------------------------------------------------------
# do_bench


def test_do_bench_times_a_sleep():
    fn = Counter(sleep_s=0.001)
    t = testing.do_bench(fn, warmup=5, rep=20)
    assert isinstance(t, float)
    assert 0.9 <= t < 50.0  # ms; at least the sleep
    # One call, 5 to estimate, then warm-up and timed calls sized by the estimate.
    assert 1 + 5 + 1 + 1 <= fn.calls <= 1 + 5 + 5 + 20 + 2


def test_do_bench_call_counts_follow_warmup_and_rep():
    fn = Counter(sleep_s=0.002)
    all_times = testing.do_bench(fn, warmup=1, rep=8, return_mode="all")
    # estimate >= 2 ms: 1 warm-up call (at least one), at most 4 timed calls.
    assert 1 <= len(all_times) <= 4
    assert fn.calls == 1 + 5 + 1 + len(all_times)
    assert all(t >= 1.9 for t in all_times)


def test_do_bench_quantiles_and_return_modes():
    fn = Counter(sleep_s=0.0002)
    q = testing.do_bench(fn, warmup=1, rep=10, quantiles=[0.2, 0.5, 0.8])
    assert isinstance(q, list) and len(q) == 3
    assert 0 < q[0] <= q[1] <= q[2]
    single = testing.do_bench(fn, warmup=1, rep=5, quantiles=[0.5])
    assert isinstance(single, float) and single > 0
    times = testing.do_bench(fn, warmup=1, rep=10, return_mode="all")
    assert isinstance(times, list) and len(times) >= 2 and all(t > 0 for t in times)
    with pytest.raises(ValueError, match="return_mode"):
        testing.do_bench(fn, return_mode="average")
    with pytest.raises(ValueError, match="quantiles"):
        testing.do_bench(fn, warmup=1, rep=1, quantiles=[1.5])


def test_do_bench_summaries_of_fixed_times(monkeypatch):
    monkeypatch.setattr(testing, "_bench_cpu", lambda fn, warmup, rep, grad: [3.0, 1.0, 2.0, 10.0])
    fn = Counter()
    assert testing.do_bench(fn, return_mode="min") == 1.0
    assert testing.do_bench(fn, return_mode="max") == 10.0
    assert testing.do_bench(fn) == 4.0  # mean by default
    assert testing.do_bench(fn, return_mode="median") == 2.5
    assert testing.do_bench(fn, return_mode="all") == [3.0, 1.0, 2.0, 10.0]
    assert testing.do_bench(fn, quantiles=[0.5]) == 2.5
    assert testing.do_bench(fn, quantiles=(0.0, 1.0 / 3, 1.0)) == pytest.approx([1.0, 2.0, 10.0])
    assert fn.calls == 7  # the first call of each do_bench (the rest is faked)


def test_quantiles_match_numpy():
    rng = np.random.default_rng(0)
    for n in (1, 2, 7, 100):
        v = rng.random(n).tolist()
        qs = [0.0, 0.2, 0.5, 0.8, 1.0]
        np.testing.assert_allclose(testing._quantile(v, qs), np.quantile(v, qs))


def test_do_bench_fast_function_is_bounded():
    fn = Counter()
    start = time.perf_counter()
    t = testing.do_bench(fn, warmup=2, rep=5)
    assert time.perf_counter() - start < 5.0
    assert 0 <= t < 1.0 and fn.calls > 10


def test_do_bench_grad_to_none():
    class T:
        grad = "old"

    ts = [T(), T()]
    seen = []

    def fn():
        seen.append(ts[0].grad)
        ts[0].grad = "accumulated"
        ts[1].grad = "accumulated"

    testing.do_bench(fn, warmup=1, rep=1, grad_to_none=ts)
    assert ts[0].grad == "accumulated"  # fn ran last
    assert None in seen  # the timed calls saw the gradient reset


def test_do_bench_a_cpu_kernel():
    n = 4096
    x = np.random.rand(n).astype(np.float32)
    y = np.random.rand(n).astype(np.float32)
    out = np.zeros_like(x)
    t = testing.do_bench(lambda: add_kernel[(tritium.cdiv(n, 256),)](x, y, out, n, BLOCK=256),
                         warmup=2, rep=10, quantiles=[0.5, 0.2, 0.8])
    assert len(t) == 3 and t[1] <= t[0] <= t[2] and 0 < t[0] < 1000
    np.testing.assert_allclose(out, x + y)


def test_do_bench_cudagraph_falls_back_to_the_cpu():
    fn = Counter(sleep_s=0.0005)
    t = testing.do_bench_cudagraph(fn, rep=5)
    assert isinstance(t, float) and t >= 0.4 and fn.calls >= 7
    q = testing.do_bench_cudagraph(fn, rep=5, quantiles=[0.2, 0.8])
    assert len(q) == 2 and q[0] <= q[1]
    with pytest.raises(ValueError, match="return_mode"):
        testing.do_bench_cudagraph(fn, return_mode="bogus")


@pytest.mark.gpu
def test_do_bench_on_gpu_uses_cuda_events():
    import torch
    x = torch.randn(1 << 22, device="cuda")
    t = testing.do_bench(lambda: x.mul_(1.0), warmup=5, rep=20, quantiles=[0.2, 0.5, 0.8])
    assert 0 < t[0] <= t[1] <= t[2] < 100
    g = testing.do_bench_cudagraph(lambda: x.mul_(1.0), rep=5)
    assert 0 < g < 100


# ----------------------------------------------------------------------------------------------
# perf_report


def test_perf_report_prints_a_table_and_writes_csv(tmp_path, capsys):
    calls = []

    @testing.perf_report(testing.Benchmark(
        x_names=["size"], x_vals=[128, 1024], line_arg="provider", line_vals=["a", "b"],
        line_names=["A", "B"], styles=[("blue", "-"), ("green", "--")], ylabel="GB/s",
        plot_name="vector-add", args={"scale": 2}, x_log=True))
    def bench(size, provider, scale):
        calls.append((size, provider, scale))
        v = size * scale / 1000 + (0.5 if provider == "b" else 0.0)
        return v, v - 0.1, v + 0.1

    assert bench.run(print_data=True, save_path=str(tmp_path / "out")) is None
    assert calls == [(128, "a", 2), (128, "b", 2), (1024, "a", 2), (1024, "b", 2)]
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == "vector-add:"
    assert lines[1].split() == ["size", "A", "B"]
    assert lines[2].split() == ["0", "128", "0.256", "0.756"]
    assert lines[3].split() == ["1", "1024", "2.048", "2.548"]
    with open(tmp_path / "out" / "vector-add.csv", newline="") as f:
        rows = list(csv.reader(f))
    assert rows == [["size", "A", "B"], ["128", "0.256000", "0.756000"],
                    ["1024", "2.048000", "2.548000"]]
    assert os.path.exists(tmp_path / "out" / "results.html")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert not os.path.exists(tmp_path / "out" / "vector-add.png")
    else:
        assert os.path.getsize(tmp_path / "out" / "vector-add.png") > 0


def test_perf_report_several_x_names_and_benchmarks(tmp_path):
    benches = [testing.Benchmark(x_names=["M", "N"], x_vals=[(1, 2), 3], line_arg="p",
                                 line_vals=[1, 10], line_names=["one", "ten"],
                                 plot_name=f"mm-{i}", args={}) for i in range(2)]

    @testing.perf_report(benches)
    def bench(M, N, p):
        return float(M * N * p)

    tables = bench.run(save_path=str(tmp_path), return_df=True)
    assert len(tables) == 2
    for i in range(2):
        with open(tmp_path / f"mm-{i}.csv", newline="") as f:
            rows = list(csv.reader(f))
        assert rows == [["M", "N", "one", "ten"], ["1", "2", "2.000000", "20.000000"],
                        ["3", "3", "9.000000", "90.000000"]]
    t = tables[0]
    rows = t.values.tolist() if hasattr(t, "values") else t.rows
    assert [list(r) for r in rows] == [[1, 2, 2.0, 20.0], [3, 3, 9.0, 90.0]]


def test_perf_report_bad_input():
    with pytest.raises(ValueError, match="line_names"):
        testing.Benchmark(x_names=["n"], x_vals=[1], line_arg="p", line_vals=[1, 2],
                          line_names=["only one"], plot_name="p", args={})
    b = testing.Benchmark(x_names=["M", "N"], x_vals=[(1, 2, 3)], line_arg="p", line_vals=[1],
                          line_names=["x"], plot_name="p", args={})
    with pytest.raises(ValueError, match="x_names"):
        testing.perf_report(b)(lambda M, N, p: 1.0).run()
