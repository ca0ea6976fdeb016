"""CPU tests of @tritium.autotune, tritium.Config and @tritium.heuristics:
config selection (with an injected, deterministic benchmarker), pruning,
re-tuning on new keys, reset_to_zero / restore_value / hooks, heuristics,
the on-disk result cache (across processes, stale and corrupt files), and
configs that fail to compile or to run."""

import json
import os
import stat
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import tritium
import tritium.language as tl
from tritium import autotuner
from tritium.autotuner import Autotuner, AutotunerError, Config, Heuristics

REPO_PYTHON = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
N = 200


@tritium.jit
def double_kernel(x_ptr, y_ptr, tag_ptr, n, BLOCK: tl.constexpr):
    """y = 2 * x; tag[0] = BLOCK (so a benchmarker can see which config ran)."""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2, mask=m)
    tl.store(tag_ptr, BLOCK)


@tritium.jit
def accumulate_kernel(acc_ptr, tag_ptr, n, BLOCK: tl.constexpr):
    """acc += 1 elementwise (atomically); tag[0] = BLOCK."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(acc_ptr + offs, 1.0, mask=offs < n)
    tl.store(tag_ptr, BLOCK)


@tritium.jit
def increment_kernel(x_ptr, tag_ptr, n, BLOCK: tl.constexpr):
    """x += 1 in place (load, add, store); tag[0] = BLOCK."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=m) + 1, mask=m)
    tl.store(tag_ptr, BLOCK)


@tritium.jit
def fragile_kernel(x_ptr, tag_ptr, BLOCK: tl.constexpr, WIDTH: tl.constexpr):
    """Fails to compile for BLOCK > 64; stores WIDTH elements without a mask,
    so it fails to run when WIDTH exceeds x's size."""
    assert BLOCK <= 64, "BLOCK too large"
    tl.store(x_ptr + tl.arange(0, WIDTH), 1.0)
    tl.store(tag_ptr, BLOCK)


def grid(meta):
    return (tritium.cdiv(meta["n"], meta["BLOCK"]),)


BLOCKS = (32, 64, 128)
CONFIGS = [Config({"BLOCK": 32}, num_warps=1), Config({"BLOCK": 64}, num_warps=2),
           Config({"BLOCK": 128}, num_warps=4)]


class FakeBench:
    """A benchmarker whose times are fixed per BLOCK: runs kernel_call `calls`
    times, reads the BLOCK the kernel wrote into tag[0], returns its time."""

    def __init__(self, tag, times, calls=1, after_call=None):
        self.tag, self.times, self.calls, self.after_call = tag, times, calls, after_call
        self.seen = []

    def __call__(self, kernel_call, quantiles):
        assert tuple(quantiles) == (0.5, 0.2, 0.8)
        for _ in range(self.calls):
            self.tag[0] = -1
            kernel_call()
            if self.after_call:
                self.after_call()
        block = int(self.tag[0])
        self.seen.append(block)
        t = self.times[block]
        return [t, 0.9 * t, 1.1 * t]


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path / "cache"))
    for var in ("TRITIUM_PRINT_AUTOTUNING", "TRITON_PRINT_AUTOTUNING", "TRITIUM_CACHE_DISABLE"):
        monkeypatch.delenv(var, raising=False)
    autotuner.stats.reset()
    yield


def data(n=N):
    x = np.arange(n, dtype=np.float32)
    return x, np.zeros_like(x), np.zeros(1, np.int32)


def tuned_double(times, configs=CONFIGS, key=("n",), **kw):
    tag = np.zeros(1, np.int32)
    bench = FakeBench(tag, times)
    kernel = tritium.autotune(configs, key=list(key), do_bench=bench, **kw)(double_kernel)
    return kernel, bench, tag


def autotune_files():
    d = autotuner.autotune_cache_dir()
    return sorted(os.path.join(d, f) for f in os.listdir(d)) if os.path.isdir(d) else []


# ----------------------------------------------------------------------------------------------
# Config


def test_config_str_all_kwargs_and_equality():
    c = Config({"BLOCK": 64, "GROUP": 8}, num_warps=8, num_stages=2)
    assert str(c) == ("BLOCK: 64, GROUP: 8, num_warps: 8, num_ctas: 1, num_stages: 2, "
                      "maxnreg: None")
    assert c.all_kwargs() == {"BLOCK": 64, "GROUP": 8, "num_warps": 8, "num_ctas": 1,
                              "num_stages": 2}
    assert Config({}, maxnreg=128).all_kwargs()["maxnreg"] == 128
    assert c == Config({"BLOCK": 64, "GROUP": 8}, num_warps=8, num_stages=2)
    assert c != Config({"BLOCK": 64, "GROUP": 8}, num_warps=4, num_stages=2)
    assert len({c, Config({"BLOCK": 64, "GROUP": 8}, num_warps=8, num_stages=2)}) == 1
    assert tritium.Config is Config and tritium.autotune is autotuner.autotune


# ----------------------------------------------------------------------------------------------
# selection and re-tuning


def test_tuning_picks_fastest_config_and_launches_it():
    kernel, bench, tag = tuned_double({32: 3.0, 64: 1.0, 128: 2.0})
    assert isinstance(kernel, Autotuner) and kernel.fn is double_kernel
    x, y, _ = data()
    kernel[grid](x, y, tag, N)
    assert sorted(bench.seen) == [32, 64, 128]
    assert kernel.best_config == CONFIGS[1] and kernel.bench_calls == 3
    assert int(tag[0]) == 64  # the real launch used the winner
    np.testing.assert_array_equal(y, 2 * x)
    assert kernel.configs_timings[CONFIGS[0]][0] == 3.0
    assert kernel.last_source == "tuned"


def test_same_key_does_not_retune_new_key_does():
    kernel, bench, tag = tuned_double({32: 1.0, 64: 2.0, 128: 3.0})
    x, y, _ = data()
    kernel[grid](x, y, tag, N)
    assert kernel.bench_calls == 3
    kernel[grid](x, y, tag, N)
    kernel.run(x, y, tag, N, grid=grid)
    assert kernel.bench_calls == 3 and kernel.last_source == "memory"
    x2, y2, _ = data(N + 17)
    kernel[grid](x2, y2, tag, N + 17)  # n is the key: tuned again
    assert kernel.bench_calls == 6
    np.testing.assert_array_equal(y2, 2 * x2)
    # The dtypes of the tensor arguments are part of the key too (as in Triton).
    x3 = np.arange(N, dtype=np.float64)
    kernel[grid](x3, np.zeros_like(x3), tag, N)
    assert kernel.bench_calls == 9
    assert len(kernel.cache) == 3


def test_a_single_config_is_not_timed():
    kernel, bench, tag = tuned_double({64: 1.0}, configs=[Config({"BLOCK": 64})])
    x, y, _ = data()
    kernel[grid](x, y, tag, N)
    assert kernel.bench_calls == 0 and int(tag[0]) == 64
    assert kernel.best_config.kwargs == {"BLOCK": 64}


def test_conflicting_meta_parameter_is_an_error():
    kernel, bench, tag = tuned_double({32: 1.0, 64: 2.0, 128: 3.0})
    x, y, _ = data()
    with pytest.raises(ValueError, match="Conflicting meta-parameters: BLOCK"):
        kernel[grid](x, y, tag, N, BLOCK=32)


def test_warmup_compiles_every_config_without_running():
    kernel, bench, tag = tuned_double({32: 1.0, 64: 2.0, 128: 3.0})
    x, y, _ = data()
    compiled = kernel.warmup(x, y, tag, N)
    assert len(compiled) == 3
    assert {c.constants["BLOCK"] for c in compiled} == set(BLOCKS)
    assert kernel.bench_calls == 0 and int(tag[0]) == 0 and not y.any()


def test_configs_are_compiled_before_any_is_timed(monkeypatch):
    events = []
    kernel, bench, tag = tuned_double({32: 1.0, 64: 2.0, 128: 3.0})
    real_warmup = double_kernel.warmup
    monkeypatch.setattr(double_kernel, "warmup",
                        lambda *a, **k: events.append(("compile", k["BLOCK"].value))
                        or real_warmup(*a, **k), raising=False)
    inner_bench = kernel.do_bench
    kernel.do_bench = lambda fn, quantiles: (events.append(("time",)),
                                             inner_bench(fn, quantiles))[1]
    x, y, _ = data()
    kernel[grid](x, y, tag, N)
    assert [e[0] for e in events] == ["compile"] * 3 + ["time"] * 3
    assert sorted(e[1] for e in events if e[0] == "compile") == list(BLOCKS)


def test_default_benchmarker_times_on_the_cpu():
    tag = np.zeros(1, np.int32)
    kernel = tritium.autotune(CONFIGS, key=["n"], warmup=1, rep=2)(double_kernel)
    x, y, _ = data()
    kernel[grid](x, y, tag, N)
    assert kernel.bench_calls == 3 and kernel.best_config in CONFIGS
    assert all(t[0] > 0 for t in kernel.configs_timings.values())
    np.testing.assert_array_equal(y, 2 * x)


def test_print_autotuning(monkeypatch, capsys):
    monkeypatch.setenv("TRITIUM_PRINT_AUTOTUNING", "1")
    kernel, bench, tag = tuned_double({32: 3.0, 64: 1.0, 128: 2.0})
    x, y, _ = data()
    kernel[grid](x, y, tag, N)
    out = capsys.readouterr().out
    assert "BLOCK: 32, num_warps: 1, num_ctas: 1, num_stages: 3, maxnreg: None]: 3.000000 ms" in out
    assert "best config: [BLOCK: 64, num_warps: 2" in out


# ----------------------------------------------------------------------------------------------
# pruning


def test_early_config_prune():
    calls = []

    def prune(configs, named_args, **kwargs):
        calls.append((len(configs), named_args["n"], sorted(kwargs)))
        return [c for c in configs if c.kwargs["BLOCK"] <= named_args["n"] // 2]

    kernel, bench, tag = tuned_double({32: 1.0, 64: 2.0, 128: 3.0},
                                      prune_configs_by={"early_config_prune": prune})
    x, y, _ = data()
    kernel[grid](x, y, tag, N)  # n = 200: BLOCK 128 is pruned
    assert calls == [(3, N, [])]
    assert sorted(bench.seen) == [32, 64]
    x2, y2, _ = data(100)
    kernel[grid](x2, y2, tag, 100)  # n = 100: only BLOCK 32 is left, nothing is timed
    assert kernel.bench_calls == 2 and kernel.best_config.kwargs["BLOCK"] == 32
    np.testing.assert_array_equal(y2, 2 * x2)


def test_early_config_prune_returning_nothing_is_an_error():
    kernel, bench, tag = tuned_double({32: 1.0, 64: 2.0, 128: 3.0},
                                      prune_configs_by={"early_config_prune": lambda c, a, **k: []})
    x, y, _ = data()
    with pytest.raises(AutotunerError, match="no configs left after pruning"):
        kernel[grid](x, y, tag, N)


@pytest.mark.parametrize("top_k, kept", [(2, [64, 128]), (1.0 / 3, [128]), (0.01, [128]),
                                         (0.7, [64, 128]), (5, [32, 64, 128])])
def test_perf_model_and_top_k(top_k, kept):
    seen_args = []

    def perf_model(**args):
        seen_args.append(args)
        return {32: 3.0, 64: 2.0, 128: 1.0}[args["BLOCK"]]

    kernel, bench, tag = tuned_double({32: 1.0, 64: 2.0, 128: 3.0},
                                      prune_configs_by={"perf_model": perf_model, "top_k": top_k})
    x, y, _ = data()
    kernel[grid](x, y, tag, N)
    # The configs the model ranks best are kept; one left is used untimed.
    assert sorted(bench.seen) == (kept if len(kept) > 1 else [])
    if top_k < 3:
        assert seen_args and seen_args[0]["n"] == N and "num_warps" in seen_args[0]
    else:
        assert seen_args == []  # nothing to prune: the model is not consulted
    assert kernel.best_config.kwargs["BLOCK"] == min(kept)  # the fake times prefer small
    assert int(tag[0]) == min(kept)


def test_bad_top_k():
    kernel, bench, tag = tuned_double({32: 1.0, 64: 2.0, 128: 3.0},
                                      prune_configs_by={"perf_model": lambda **a: 1.0,
                                                        "top_k": "2"})
    x, y, _ = data()
    with pytest.raises(TypeError, match="top_k"):
        kernel[grid](x, y, tag, N)


# ----------------------------------------------------------------------------------------------
# reset_to_zero, restore_value, hooks


def _accumulate_tuner(reset, calls=3):
    tag = np.zeros(1, np.int32)
    acc = np.zeros(N, np.float32)
    observed = []
    bench = FakeBench(tag, {32: 2.0, 64: 1.0, 128: 3.0}, calls=calls,
                      after_call=lambda: observed.append(float(acc[0])))
    kernel = tritium.autotune(CONFIGS, key=["n"], do_bench=bench,
                              reset_to_zero=["acc_ptr"] if reset else None)(accumulate_kernel)
    return kernel, acc, tag, observed


def test_reset_to_zero_zeroes_before_every_timing_run():
    kernel, acc, tag, observed = _accumulate_tuner(reset=True)
    acc[:] = 7.0
    kernel[grid](acc, tag, N)
    assert observed == [1.0] * 9  # 3 configs x 3 runs, each starting from zero
    # Zeroed once more after tuning, so the real launch also starts from zero.
    np.testing.assert_array_equal(acc, np.ones(N, np.float32))
    kernel[grid](acc, tag, N)  # no tuning now: no reset
    np.testing.assert_array_equal(acc, np.full(N, 2.0, np.float32))


def test_without_reset_to_zero_timing_runs_accumulate():
    kernel, acc, tag, observed = _accumulate_tuner(reset=False)
    kernel[grid](acc, tag, N)
    assert observed == [float(i) for i in range(1, 10)]
    np.testing.assert_array_equal(acc, np.full(N, 10.0, np.float32))


def test_restore_value_restores_after_every_timing_run():
    tag = np.zeros(1, np.int32)
    x = np.arange(N, dtype=np.float32)
    orig = x.copy()
    observed = []
    bench = FakeBench(tag, {32: 2.0, 64: 1.0, 128: 3.0}, calls=2,
                      after_call=lambda: observed.append(float(x[5])))
    kernel = tritium.autotune(CONFIGS, key=["n"], do_bench=bench,
                              restore_value=["x_ptr"])(increment_kernel)
    kernel[grid](x, tag, N)
    # Restored after every timing run (without restore_value: 6, 7, 8, ...).
    assert observed == [5.0] * 6
    np.testing.assert_array_equal(x, orig + 1)  # only the real launch's effect remains


def test_restore_value_with_torch_tensors():
    torch = pytest.importorskip("torch")
    tag = torch.zeros(1, dtype=torch.int32)
    x = torch.arange(N, dtype=torch.float32)
    bench = FakeBench(tag, {32: 2.0, 64: 1.0, 128: 3.0}, calls=2)
    kernel = tritium.autotune(CONFIGS, key=["n"], do_bench=bench,
                              restore_value=["x_ptr"])(increment_kernel)
    kernel[grid](x, tag, N)
    assert torch.equal(x, torch.arange(N, dtype=torch.float32) + 1)


def test_unknown_reset_or_restore_names_are_errors():
    with pytest.raises(ValueError, match="reset_to_zero names \\['acc'\\]"):
        tritium.autotune(CONFIGS, key=["n"], reset_to_zero=["acc"])(accumulate_kernel)
    with pytest.warns(UserWarning, match="key names \\['m'\\]"):
        tritium.autotune(CONFIGS, key=["m"])(accumulate_kernel)


def test_pre_and_post_hooks():
    log = []
    tag = np.zeros(1, np.int32)
    bench = FakeBench(tag, {32: 2.0, 64: 1.0, 128: 3.0}, calls=2)

    def pre_hook(args, reset_only=False):
        log.append(("pre", args["BLOCK"], args["n"], reset_only))

    def post_hook(args, exception):
        log.append(("post", args["BLOCK"], exception))

    configs = [Config({"BLOCK": 32}),
               Config({"BLOCK": 64}, pre_hook=lambda args: log.append(("cfg", args["BLOCK"])))]
    kernel = tritium.autotune(configs, key=["n"], do_bench=bench, pre_hook=pre_hook,
                              post_hook=post_hook)(double_kernel)
    x, y, _ = data()
    kernel[grid](x, y, tag, N)
    assert log == ([("pre", 32, N, False), ("post", 32, None)] * 2
                   + [("cfg", 64), ("pre", 64, N, False), ("post", 64, None)] * 2
                   + [("pre", 64, N, True),  # the reset after tuning
                      ("cfg", 64)])          # the config's hook before the real launch
    log.clear()
    kernel[grid](x, y, tag, N)
    assert log == [("cfg", 64)]


def test_post_hook_sees_the_exception_of_a_failing_run():
    seen = []
    tag = np.zeros(1, np.int32)
    x = np.zeros(64, np.float32)
    configs = [Config({"BLOCK": 32, "WIDTH": 64}), Config({"BLOCK": 16, "WIDTH": 128})]
    bench = FakeBench(tag, {32: 1.0, 16: 0.5})
    kernel = tritium.autotune(configs, key=[], do_bench=bench,
                              post_hook=lambda a, exception: seen.append(
                                  (a["WIDTH"], type(exception).__name__)))(fragile_kernel)
    with pytest.warns(UserWarning, match="WIDTH: 128.*failed to run"):
        kernel[(1,)](x, tag)
    assert seen == [(64, "NoneType"), (128, "ExecutionError")]
    assert kernel.best_config == configs[0]


# ----------------------------------------------------------------------------------------------
# heuristics


def test_heuristics_compute_constexprs():
    kernel = tritium.heuristics({"BLOCK": lambda args: tritium.next_power_of_2(args["n"])})(
        double_kernel)
    assert isinstance(kernel, Heuristics) and kernel.fn is double_kernel
    for n in (5, 100):
        x, y, tag = data(n)
        kernel[(1,)](x, y, tag, n)
        assert int(tag[0]) == tritium.next_power_of_2(n)
        np.testing.assert_array_equal(y, 2 * x)
    x, y, tag = data(40)
    kernel.run(x, y, tag, 40, grid=(1,))
    assert int(tag[0]) == 64


def test_heuristics_under_autotune_see_the_config():
    seen = []

    def block_from_width(args):
        seen.append(type(args["WIDTH"]))
        return args["WIDTH"] // 2

    tag = np.zeros(1, np.int32)
    bench = FakeBench(tag, {16: 2.0, 32: 1.0})
    kernel = tritium.autotune([Config({"WIDTH": 32}), Config({"WIDTH": 64})], key=[],
                              do_bench=bench)(
        tritium.heuristics({"BLOCK": block_from_width})(fragile_kernel))
    x = np.zeros(64, np.float32)
    kernel[(1,)](x, tag)
    assert sorted(bench.seen) == [16, 32]
    assert kernel.best_config.kwargs == {"WIDTH": 64} and int(tag[0]) == 32
    assert set(seen) == {int}  # plain values, not constexpr wrappers
    np.testing.assert_array_equal(x, np.ones(64, np.float32))


# ----------------------------------------------------------------------------------------------
# failing configs


def test_config_that_fails_to_compile_is_skipped_with_a_warning():
    tag = np.zeros(1, np.int32)
    configs = [Config({"BLOCK": 128, "WIDTH": 16}), Config({"BLOCK": 32, "WIDTH": 16}),
               Config({"BLOCK": 64, "WIDTH": 16})]
    bench = FakeBench(tag, {32: 2.0, 64: 1.0})
    kernel = tritium.autotune(configs, key=[], do_bench=bench)(fragile_kernel)
    x = np.zeros(16, np.float32)
    with pytest.warns(UserWarning) as rec:
        kernel[(1,)](x, tag)
    msgs = [str(w.message) for w in rec]
    assert len(msgs) == 1
    assert "config [BLOCK: 128, WIDTH: 16, num_warps: 4" in msgs[0]
    assert "failed to compile" in msgs[0] and "BLOCK too large" in msgs[0]
    assert sorted(bench.seen) == [32, 64]
    assert kernel.best_config == configs[2] and int(tag[0]) == 64
    assert kernel.configs_failures[configs[0]][0] == "failed to compile"


def test_every_config_failing_lists_each_one():
    tag = np.zeros(1, np.int32)
    configs = [Config({"BLOCK": 128, "WIDTH": 16}), Config({"BLOCK": 32, "WIDTH": 64}),
               Config({"BLOCK": 256, "WIDTH": 16})]
    kernel = tritium.autotune(configs, key=[], do_bench=FakeBench(tag, {}))(fragile_kernel)
    x = np.zeros(16, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(AutotunerError) as info:
            kernel[(1,)](x, tag)
    msg = str(info.value)
    assert "every config failed" in msg
    assert "[BLOCK: 128, WIDTH: 16, num_warps: 4, num_ctas: 1, num_stages: 3, maxnreg: None] " \
           "failed to compile: CompilationError" in msg
    assert "[BLOCK: 32, WIDTH: 64," in msg and "failed to run: ExecutionError" in msg
    assert "out-of-bounds store" in msg
    assert "[BLOCK: 256, WIDTH: 16," in msg
    assert msg.count("BLOCK too large") == 2
    assert isinstance(info.value.__cause__, tritium.CompilationError)
    assert autotuner.autotune_cache_dir() is not None and autotune_files() == []


# ----------------------------------------------------------------------------------------------
# results on disk


def test_result_persists_on_disk_with_private_dirs_and_no_temp_files():
    kernel, bench, tag = tuned_double({32: 3.0, 64: 1.0, 128: 2.0})
    x, y, _ = data()
    kernel[grid](x, y, tag, N)
    files = autotune_files()
    assert len(files) == 1 and files[0].endswith(".json")
    assert os.path.basename(files[0]).startswith("double_kernel-")
    for d in (os.path.dirname(files[0]), os.path.dirname(os.path.dirname(files[0]))):
        assert stat.S_IMODE(os.stat(d).st_mode) == 0o700
    with open(files[0]) as f:
        doc = json.load(f)
    assert doc["best"] == 1 and doc["identity"]["device"].startswith("cpu-executor")
    assert doc["identity"]["key"] == [repr(N), repr("float32"), repr("float32"),
                                      repr("int32")]
    assert autotuner.stats.disk_writes == 1 and autotuner.stats.disk_misses == 1

    # A new Autotuner (as in another process) finds it: no timing, even with a
    # benchmarker that would now pick another config.
    kernel2, bench2, tag2 = tuned_double({32: 1.0, 64: 9.0, 128: 9.0})
    kernel2[grid](x, y, tag2, N)
    assert kernel2.bench_calls == 0 and bench2.seen == []
    assert kernel2.best_config == CONFIGS[1] and kernel2.last_source == "disk"
    assert int(tag2[0]) == 64 and autotuner.stats.disk_hits == 1
    assert kernel2.configs_timings[CONFIGS[0]][0] == 3.0


def test_cache_results_false_and_cache_disable(monkeypatch):
    kernel, bench, tag = tuned_double({32: 3.0, 64: 1.0, 128: 2.0}, cache_results=False)
    x, y, _ = data()
    kernel[grid](x, y, tag, N)
    assert autotune_files() == []
    monkeypatch.setenv("TRITIUM_CACHE_DISABLE", "1")
    kernel, bench, tag = tuned_double({32: 3.0, 64: 1.0, 128: 2.0})
    kernel[grid](x, y, tag, N)
    assert autotune_files() == [] and kernel.bench_calls == 3


def test_results_for_another_device_or_config_list_are_not_used(monkeypatch):
    kernel, bench, tag = tuned_double({32: 3.0, 64: 1.0, 128: 2.0})
    x, y, _ = data()
    kernel[grid](x, y, tag, N)
    assert len(autotune_files()) == 1
    # Another config list (one config more): tuned again, a second file.
    more = CONFIGS + [Config({"BLOCK": 16})]
    kernel2, bench2, tag2 = tuned_double({16: 5.0, 32: 3.0, 64: 1.0, 128: 2.0}, configs=more)
    kernel2[grid](x, y, tag2, N)
    assert kernel2.bench_calls == 4 and len(autotune_files()) == 2
    # Same configs, other launch options: another list too.
    other = [Config({"BLOCK": b}, num_warps=8) for b in BLOCKS]
    kernel3, bench3, tag3 = tuned_double({32: 3.0, 64: 1.0, 128: 2.0}, configs=other)
    kernel3[grid](x, y, tag3, N)
    assert kernel3.bench_calls == 3 and len(autotune_files()) == 3
    # Another device.
    with monkeypatch.context() as m:
        m.setattr(autotuner, "_device_name", lambda args: "cuda:Some GPU:sm_90")
        kernel4, bench4, tag4 = tuned_double({32: 3.0, 64: 1.0, 128: 2.0})
        kernel4[grid](x, y, tag4, N)
    assert kernel4.bench_calls == 3 and len(autotune_files()) == 4
    # Another key value.
    kernel5, bench5, tag5 = tuned_double({32: 3.0, 64: 1.0, 128: 2.0})
    x2, y2, _ = data(N + 1)
    kernel5[grid](x2, y2, tag5, N + 1)
    assert kernel5.bench_calls == 3 and len(autotune_files()) == 5
    assert autotuner.stats.disk_hits == 0


def _tune_once(times=None):
    kernel, bench, tag = tuned_double(times or {32: 3.0, 64: 1.0, 128: 2.0})
    x, y, _ = data()
    kernel[grid](x, y, tag, N)
    return kernel


@pytest.mark.parametrize("damage", ["garbage", "truncated", "checksum", "identity", "best",
                                    "format"])
def test_stale_or_corrupt_file_is_ignored_and_rewritten(damage):
    _tune_once()
    (path,) = autotune_files()
    with open(path) as f:
        text = f.read()
    doc = json.loads(text)
    if damage == "garbage":
        text = "\x00\xffnot json at all"
    elif damage == "truncated":
        text = text[: len(text) // 2]
    elif damage == "checksum":  # a timing changed without its checksum
        doc["timings"][0][0] = 0.0001
        text = json.dumps(doc)
    else:
        if damage == "identity":  # a valid file of another source at this path
            doc["identity"]["source"] = "0" * 64
        elif damage == "best":
            doc["best"] = 17
        else:
            doc["format"] = 99
        doc["checksum"] = autotuner._checksum(doc)
        text = json.dumps(doc)
    with open(path, "w") as f:
        f.write(text)
    with pytest.warns(UserWarning, match="ignoring the cached result"):
        kernel = _tune_once({32: 1.0, 64: 2.0, 128: 3.0})
    assert kernel.bench_calls == 3 and kernel.best_config == CONFIGS[0]
    assert autotuner.stats.disk_rejected == 1
    # Rewritten: valid, with the new result, used by the next tuner.
    with open(path) as f:
        doc = json.load(f)
    assert doc["checksum"] == autotuner._checksum(doc) and doc["best"] == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = _tune_once({32: 9.0, 64: 9.0, 128: 1.0})
    assert again.bench_calls == 0 and again.best_config == CONFIGS[0]


SCRIPT = """
import json, sys
import numpy as np
import tritium, tritium.language as tl
from tritium import autotuner

@tritium.jit
def k(x_ptr, tag_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=m) * 3{EXTRA}, mask=m)
    tl.store(tag_ptr, BLOCK)

tag = np.zeros(1, np.int32)
TIMES = {TIMES}

def bench(fn, quantiles):
    fn()
    return TIMES[int(tag[0])]

kt = tritium.autotune([tritium.Config({{"BLOCK": b}}) for b in (16, 32, 64)], key=["n"],
                      do_bench=bench, restore_value=["x_ptr"])(k)
x = np.ones(100, np.float32)
kt[lambda m: (tritium.cdiv(m["n"], m["BLOCK"]),)](x, tag, 100)
print(json.dumps({{"bench_calls": kt.bench_calls, "stats": autotuner.stats.as_dict(),
                  "best": kt.best_config.kwargs["BLOCK"], "tag": int(tag[0]),
                  "x": float(x[99])}}))
"""


def _run_script(tmp_path, extra="", times=None):
    path = tmp_path / "tune_script.py"
    path.write_text(SCRIPT.format(EXTRA=extra, TIMES=times or {16: 2.0, 32: 1.0, 64: 3.0}))
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO_PYTHON + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, str(path)], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_second_process_uses_the_result_without_timing(tmp_path):
    first = _run_script(tmp_path)
    assert first["bench_calls"] == 3 and first["best"] == 32 and first["x"] == 3.0
    assert first["stats"]["disk_writes"] == 1
    # The second process's benchmarker would pick 16, but it does not time at all.
    second = _run_script(tmp_path, times={16: 0.1, 32: 1.0, 64: 3.0})
    assert second["bench_calls"] == 0 and second["stats"]["bench_calls"] == 0
    assert second["stats"]["disk_hits"] == 1
    assert second["best"] == 32 and second["tag"] == 32 and second["x"] == 3.0
    # An edited kernel is another source: tuned again.
    third = _run_script(tmp_path, extra=" + 0", times={16: 0.1, 32: 1.0, 64: 3.0})
    assert third["bench_calls"] == 3 and third["best"] == 16
    assert third["stats"]["disk_hits"] == 0


ARGS_SCRIPT = """
import json
import numpy as np
import tritium, tritium.language as tl

@tritium.jit
def add_into(acc_ptr, x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.atomic_add(acc_ptr + offs, tl.load(x_ptr + offs, mask=m), mask=m)

# The same kernel under another name: a source of its own, so its own disk entry.
@tritium.jit
def add_into_2(acc_ptr, x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.atomic_add(acc_ptr + offs, tl.load(x_ptr + offs, mask=m), mask=m)

def bench(fn, quantiles):
    fn()
    fn()
    return [1.0, 1.0, 1.0]

configs = [tritium.Config({"BLOCK": b}) for b in (16, 32, 64)]
grid = lambda m: (tritium.cdiv(m["n"], m["BLOCK"]),)
x = np.arange(100, dtype=np.float32)
out = {}
for name, kernel, kw in (("reset", add_into, {"reset_to_zero": ["acc_ptr"]}),
                         ("restore", add_into_2, {"restore_value": ["acc_ptr"]})):
    kt = tritium.autotune(configs, key=["n"], do_bench=bench, **kw)(kernel)
    acc = np.full(100, 5.0, np.float32)
    kt[grid](acc, x, 100)
    first = acc.tolist()
    source = kt.last_source
    kt[grid](acc, x, 100)
    out[name] = {"source": source, "first": first, "second": acc.tolist()}
print(json.dumps(out))
"""


def test_reset_and_restore_give_the_same_result_from_the_disk_as_when_tuned(tmp_path):
    # Issue 12: tuning zeroed the reset_to_zero tensors before the launch, a result read from
    # the disk did not. As in Triton, the first launch for a key (timed now or read from disk)
    # starts the reset_to_zero tensors from zero; restore_value tensors keep the caller's data.
    path = tmp_path / "args_script.py"
    path.write_text(ARGS_SCRIPT)
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO_PYTHON + os.pathsep + env.get("PYTHONPATH", "")
    runs = []
    for _ in range(2):
        r = subprocess.run([sys.executable, str(path)], env=env, capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0, r.stderr
        runs.append(json.loads(r.stdout.strip().splitlines()[-1]))
    tuned, cached = runs
    for name in ("reset", "restore"):
        assert tuned[name]["source"] == "tuned" and cached[name]["source"] == "disk"
    x = np.arange(100, dtype=np.float32)
    want = {"reset": (x, 2 * x), "restore": (5 + x, 5 + 2 * x)}
    for run in runs:
        for name, (first, second) in want.items():
            np.testing.assert_array_equal(np.array(run[name]["first"], np.float32), first)
            # A later launch with the config in memory: no reset, as in Triton.
            np.testing.assert_array_equal(np.array(run[name]["second"], np.float32), second)
    for name in want:
        for which in ("first", "second"):
            assert tuned[name][which] == cached[name][which]


def test_processes_tuning_one_key_at_once_time_it_once(tmp_path):
    """Ranks of a distributed job share the cache: started together on the same key, one
    process times the configs and the others wait for its result and read it from disk."""
    path = tmp_path / "tune_script.py"
    # Each timing sleeps, so that the processes overlap while one of them tunes.
    script = SCRIPT.format(EXTRA="", TIMES={16: 2.0, 32: 1.0, 64: 3.0}).replace(
        "def bench(fn, quantiles):\n    fn()\n",
        "def bench(fn, quantiles):\n    import time\n    time.sleep(0.3)\n    fn()\n")
    path.write_text(script)
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO_PYTHON + os.pathsep + env.get("PYTHONPATH", "")
    env["TRITIUM_CACHE_DIR"] = str(tmp_path / "cache")
    procs = [subprocess.Popen([sys.executable, str(path)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(3)]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=180)
        assert p.returncode == 0, err
        outs.append(json.loads(out.strip().splitlines()[-1]))
    tuned = [o for o in outs if o["stats"]["tunings"] == 1]
    assert len(tuned) == 1 and tuned[0]["bench_calls"] == 3
    for o in outs:
        assert o["best"] == 32 and o["x"] == 3.0
        if o is not tuned[0]:
            assert o["bench_calls"] == 0 and o["stats"]["disk_hits"] == 1
