"""The C++ launch fast path (lib/bindings/fast_launch.cpp), without a GPU.

A stand-in tensor type plays torch.Tensor and the launcher runs dry: it
records the launch it would make (grid, stream, device, argument bits)
instead of calling the driver. What is checked:
  - a registered specialisation launches from C++ with the right bits;
  - every change jit.py's specialisation key sees (dtype, alignment, int
    class, == 1, % 16, constexpr values, launch options, device) goes back
    to JITFunction.run instead;
  - the key is sound: equal fast-path keys imply equal jit.py keys
    (hypothesis over random argument lists).
"""

import os
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tritium
import tritium.language as tl
from tritium import _C as C


class FakeDType:
    def __init__(self, typestr):
        self.typestr = typestr


F32, F16 = FakeDType("<f4"), FakeDType("<f2")


class FakeTensor:
    """What the fast path reads of a torch CUDA tensor; jit.py's key reads
    __cuda_array_interface__."""

    def __init__(self, address, dtype=F32, device=0, cuda=True, numel=1):
        self.address, self.dtype, self.device, self.is_cuda = address, dtype, device, cuda
        self._numel = numel

    def data_ptr(self):
        return self.address

    def numel(self):
        return self._numel

    def get_device(self):
        return self.device if self.is_cuda else -1

    @property
    def __cuda_array_interface__(self):
        return {"data": (self.address, False), "typestr": self.dtype.typestr, "shape": (1,),
                "version": 3}


@tritium.jit
def add(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + i, tl.load(x_ptr + i, mask=i < n) * scale, mask=i < n)


class Recorder:
    """Stands in for JITFunction.run: records each slow-path call."""

    def __init__(self):
        self.calls = []

    def __call__(self, *args, grid=None, warmup=False, **kwargs):
        self.calls.append((args, grid, kwargs))
        return "slow"


def fake_gpu_kernel():
    return C.GpuKernel("add", b"not loaded in a dry run", False, "sm_90a", 4, 0,
                       [("ptr", "x_ptr"), ("ptr", "y_ptr"), ("i32", "n"), ("fp32", "scale")])


@pytest.fixture
def launcher(monkeypatch):
    """add's fast launcher, dry, with one registered specialisation:
    (16-aligned f32, 16-aligned f32, i32 not divisible by 16, float,
    BLOCK=128) on device 0, num_warps=4."""
    add._fast = None
    fast = add._make_fast_launcher()
    C.fast_set_dry_run(fast, True)
    slow = Recorder()
    monkeypatch.setattr(add, "run", slow, raising=False)
    x, y = FakeTensor(0x10000), FakeTensor(0x20000)
    ok = C.fast_register(fast, (x, y, 1000, 0.5), {"BLOCK": 128, "num_warps": 4}, "result",
                         fake_gpu_kernel(), [0, 1, 2, 3], FakeTensor, lambda d: 7000 + d)
    assert ok
    yield fast, slow
    add._fast = None


def test_a_tensor_of_2_31_elements_takes_the_python_path(launcher):
    """Its kernel is a specialisation with 64-bit offsets (jit._key_one), which only the Python
    path makes; a tensor one element smaller stays on the fast path."""
    fast, slow = launcher
    big = FakeTensor(0x30000, numel=2 ** 31)
    assert add[(8,)](big, FakeTensor(0x40000), 2001, 2.0, BLOCK=128, num_warps=4) == "slow"
    assert len(slow.calls) == 1
    below = FakeTensor(0x30000, numel=2 ** 31 - 1)
    assert add[(8,)](below, FakeTensor(0x40000), 2001, 2.0, BLOCK=128, num_warps=4) == "result"
    assert len(slow.calls) == 1


def test_registered_call_launches_from_cpp(launcher):
    fast, slow = launcher
    x, y = FakeTensor(0x30000), FakeTensor(0x40000)
    r = add[(8,)](x, y, 2000 + 1, 2.0, BLOCK=128, num_warps=4)
    assert r == "result" and slow.calls == []
    last = C.fast_last_launch(fast)
    assert last["grid"] == (8, 1, 1)
    assert last["stream"] == 7000 and last["device"] == 0
    assert last["args"] == [0x30000, 0x40000, 2001, struct.unpack("<I", struct.pack("<f", 2.0))[0]]
    assert C.fast_stats(fast)["hits"] == 1


def test_negative_int_and_keyword_order(launcher):
    fast, slow = launcher
    x, y = FakeTensor(0x30000), FakeTensor(0x40000)
    add[4, 2](num_warps=4, BLOCK=128, y_ptr=y, x_ptr=x, n=-3, scale=1.5)
    assert slow.calls == []
    last = C.fast_last_launch(fast)
    assert last["grid"] == (4, 2, 1)
    assert last["args"][2] == 2 ** 32 - 3  # i32 -3, two's complement in the low 4 bytes


def test_callable_grid_gets_meta(launcher):
    fast, slow = launcher
    seen = []

    def grid(meta):
        seen.append(dict(meta))
        return (tritium.cdiv(meta["n"], meta["BLOCK"]),)

    x, y = FakeTensor(0x30000), FakeTensor(0x40000)
    add[grid](x, y, 1001, 1.0, BLOCK=128, num_warps=4)
    assert slow.calls == []
    assert C.fast_last_launch(fast)["grid"] == (8, 1, 1)
    assert seen[0]["n"] == 1001 and seen[0]["BLOCK"] == 128 and seen[0]["num_warps"] == 4
    assert seen[0]["x_ptr"] is x


def test_wrapped_constexpr_is_its_value(launcher):
    """tl.constexpr(128) for a constexpr parameter selects the same kernel
    as 128 (jit.py unwraps it too); the autotuner passes configs so."""
    fast, slow = launcher
    x, y = FakeTensor(0x30000), FakeTensor(0x40000)
    assert add[(2,)](x, y, 1001, 1.0, BLOCK=tl.constexpr(128), num_warps=4) == "result"
    assert slow.calls == []
    seen = []
    add[lambda meta: seen.append(meta["BLOCK"]) or (1,)](x, y, 1001, 1.0,
                                                         BLOCK=tl.constexpr(128), num_warps=4)
    assert seen == [128] and type(seen[0]) is int and slow.calls == []


def test_empty_grid_does_not_launch(launcher):
    fast, slow = launcher
    x, y = FakeTensor(0x30000), FakeTensor(0x40000)
    assert add[(0,)](x, y, 1001, 1.0, BLOCK=128, num_warps=4) == "result"
    assert C.fast_last_launch(fast) is None and slow.calls == []


def test_stream_option_is_used_but_not_keyed(launcher):
    fast, slow = launcher
    x, y = FakeTensor(0x30000), FakeTensor(0x40000)
    add[(1,)](x, y, 1001, 1.0, BLOCK=128, num_warps=4, stream=99)
    assert slow.calls == [] and C.fast_last_launch(fast)["stream"] == 99


X, Y = FakeTensor(0x30000), FakeTensor(0x40000)


@pytest.mark.parametrize("args, kwargs, why", [
    ((X, Y, 1001, 1.0), {"BLOCK": 64, "num_warps": 4}, "another constexpr value"),
    ((X, Y, 1001, 1.0), {"BLOCK": 128, "num_warps": 8}, "another num_warps"),
    ((X, Y, 1001, 1.0), {"BLOCK": 128}, "num_warps not given"),
    ((X, FakeTensor(0x40004), 1001, 1.0), {"BLOCK": 128, "num_warps": 4}, "unaligned pointer"),
    ((X, FakeTensor(0x40000, F16), 1001, 1.0), {"BLOCK": 128, "num_warps": 4}, "another dtype"),
    ((FakeTensor(0x30000, device=1), Y, 1001, 1.0), {"BLOCK": 128, "num_warps": 4},
     "first tensor on another device"),
    ((X, FakeTensor(0x40000, cuda=False), 1001, 1.0), {"BLOCK": 128, "num_warps": 4},
     "a CPU tensor"),
    ((X, Y, 1, 1.0), {"BLOCK": 128, "num_warps": 4}, "n == 1"),
    ((X, Y, 1024, 1.0), {"BLOCK": 128, "num_warps": 4}, "n % 16 == 0"),
    ((X, Y, 2 ** 40, 1.0), {"BLOCK": 128, "num_warps": 4}, "n is i64"),
    ((X, Y, 2 ** 63 + 1, 1.0), {"BLOCK": 128, "num_warps": 4}, "n is u64"),
    ((X, Y, 2 ** 70, 1.0), {"BLOCK": 128, "num_warps": 4}, "n beyond 64 bits"),
    ((X, Y, 1001, 1), {"BLOCK": 128, "num_warps": 4}, "scale is an int"),
    ((X, Y, 1001, True), {"BLOCK": 128, "num_warps": 4}, "scale is a bool"),
    ((X, Y, 1001, None), {"BLOCK": 128, "num_warps": 4}, "scale is None"),
    ((X, Y, tl.constexpr(1001), 1.0), {"BLOCK": 128, "num_warps": 4},
     "a runtime parameter made a constexpr"),
    ((X, Y, 1001, 1.0), {"BLOCK": 128.0, "num_warps": 4}, "constexpr of another type"),
    ((X, Y, 1001, 1.0), {"BLOCK": True, "num_warps": 4}, "constexpr bool"),
    ((X, Y, 1001, 1.0, 128, 5), {"num_warps": 4}, "too many arguments"),
    ((X, Y, 1001), {"BLOCK": 128, "num_warps": 4}, "missing argument"),
    ((X, Y, 1001, 1.0), {"BLOCK": 128, "num_warps": 4, "bogus": 1}, "unknown keyword"),
    ((X, Y, 1001, 1.0), {"BLOCK": 128, "num_warps": 4, "n": 3}, "n given twice"),
])
def test_every_key_change_takes_the_slow_path(launcher, args, kwargs, why):
    fast, slow = launcher
    assert add[(3,)](*args, **kwargs) == "slow", why
    assert len(slow.calls) == 1 and C.fast_last_launch(fast) is None
    got_args, got_grid, got_kwargs = slow.calls[0]
    assert got_args == args and got_grid == (3,) and got_kwargs == kwargs


@pytest.mark.parametrize("grid", [(-1,), (1, 2, 3, 4), (), "8", (1.5,)])
def test_unusual_grids_take_the_slow_path(launcher, grid):
    fast, slow = launcher
    add[grid](X, Y, 1001, 1.0, BLOCK=128, num_warps=4)
    assert len(slow.calls) == 1 and slow.calls[0][1] == grid


def test_callable_grid_result_is_passed_on(launcher):
    """A callable grid is called once; an unusual result goes to the slow
    path as the grid (not the callable, which would be called again)."""
    fast, slow = launcher
    calls = []

    def grid(meta):
        calls.append(1)
        return (-2,)

    add[grid](X, Y, 1001, 1.0, BLOCK=128, num_warps=4)
    assert len(calls) == 1 and slow.calls[0][1] == (-2,)


def test_registration_refuses_mismatched_kernels(launcher):
    fast, _ = launcher
    # scale (a float) registered as a pointer argument: refused.
    bad = C.GpuKernel("add", b"x", False, "sm_90a", 4, 0,
                      [("ptr", "x_ptr"), ("ptr", "y_ptr"), ("i32", "n"), ("ptr", "scale")])
    assert not C.fast_register(fast, (X, Y, 1001, 1.0), {"BLOCK": 32}, "r", bad, [0, 1, 2, 3],
                               FakeTensor, None)
    # Fewer runtime parameters than the kernel has: refused.
    assert not C.fast_register(fast, (X, Y, 1001, 1.0), {"BLOCK": 32}, "r", fake_gpu_kernel(),
                               [0, 1, 2], FakeTensor, None)


def test_dropped_kernel_is_an_error_not_a_crash():
    @tritium.jit
    def k(x_ptr, BLOCK: tl.constexpr):
        pass

    launch = k[(1,)]
    del k
    import gc
    gc.collect()
    with pytest.raises(RuntimeError, match="no longer exists"):
        launch(FakeTensor(0x100), BLOCK=4)


# -- soundness: equal fast keys imply equal jit.py keys ------------------------

@tritium.jit(do_not_specialize=["b"], do_not_specialize_on_alignment=["q"])
def spec(p, q, a, b, c, D: tl.constexpr, E: tl.constexpr = 3):
    pass


ints = st.sampled_from([0, 1, 2, 16, 17, -1, -16, 2 ** 31 - 16, 2 ** 31, -2 ** 31,
                        -2 ** 31 - 1, 2 ** 40, 2 ** 63 - 1, 2 ** 63, 2 ** 64 - 16, 2 ** 64 - 1])
scalars = st.one_of(ints, st.sampled_from([0.0, -0.0, 1.5, True, False, None]))
tensors = st.builds(FakeTensor, st.sampled_from([0x1000, 0x1004, 0x1010, 0x2008]),
                    st.sampled_from([F32, F16]), st.sampled_from([0, 1]))
constexprs = st.one_of(ints, st.sampled_from([0.0, 1.5, True, "x", "y", None]))
wrapped = st.builds(tl.constexpr, st.sampled_from([0, 1, 16, 2.5, None, "x"]))
calls = st.tuples(tensors, tensors, scalars, scalars, st.one_of(scalars, wrapped), constexprs,
                  st.one_of(st.none(), constexprs),
                  st.one_of(st.none(), st.sampled_from([1, 2, 4, 8])))


def jit_key(call):
    p, q, a, b, c, d, e, warps = call
    values = [p, q, a, b, c, d, 3 if e is None else e]
    key = spec._key(values)[0]
    return key, p.device, warps


def fast_key(fast, call):
    p, q, a, b, c, d, e, warps = call
    kwargs = {"D": d}
    if e is not None:
        kwargs["E"] = e
    if warps is not None:
        kwargs["num_warps"] = warps
    return C.fast_key(fast, (p, q, a, b, c), kwargs)


@settings(max_examples=400, deadline=None)
@given(calls, calls)
def test_equal_fast_keys_mean_equal_jit_keys(one, two):
    spec._fast = None
    fast = spec._make_fast_launcher()
    C.fast_register(fast, (), {}, None, fake_gpu_kernel(), [], FakeTensor, None)  # sets the type
    k1, k2 = fast_key(fast, one), fast_key(fast, two)
    if k1 is None or k2 is None:
        return
    if k1 == k2:
        assert jit_key(one) == jit_key(two), (one, two)


def test_fast_keys_are_not_all_equal():
    """The soundness property above would hold for a constant key too."""
    spec._fast = None
    fast = spec._make_fast_launcher()
    C.fast_register(fast, (), {}, None, fake_gpu_kernel(), [], FakeTensor, None)
    base = (FakeTensor(0x1000), FakeTensor(0x1000), 5, 5, 5, 4, None, None)
    variants = [base, base[:2] + (1,) + base[3:], base[:2] + (32,) + base[3:],
                base[:5] + (8,) + base[6:], base[:7] + (8,),
                (FakeTensor(0x1004),) + base[1:]]
    keys = [fast_key(fast, v) for v in variants]
    assert None not in keys and len(set(keys)) == len(keys)
    # do_not_specialize (b) and do_not_specialize_on_alignment (q) are honoured.
    assert fast_key(fast, base[:3] + (32,) + base[4:]) == fast_key(fast, base)
    assert fast_key(fast, base[:1] + (FakeTensor(0x1004),) + base[2:]) == fast_key(fast, base)


def test_kernel_with_more_parameters_than_the_cpp_path_takes_still_launches(tmp_path):
    """Over 64 parameters the launcher is not made; launches take the
    Python path (here the CPU executor) and work."""
    import importlib.util
    import numpy as np
    names = [f"a{i}" for i in range(70)]
    src = ("import tritium\nimport tritium.language as tl\n\n@tritium.jit\n"
           f"def many(out_ptr, {', '.join(names)}):\n"
           f"    tl.store(out_ptr, {' + '.join(names)})\n")
    path = tmp_path / "many_params.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("many_params", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = np.zeros(1, np.int32)
    mod.many[(1,)](out, *range(2, 72))
    assert out[0] == sum(range(2, 72))
    assert mod.many._fast is False


@pytest.mark.parametrize("name, value", [("TRITIUM_DEBUG", "1"), ("TRITIUM_TARGET", "sm_80")])
def test_environment_changes_take_the_slow_path(launcher, monkeypatch, name, value):
    """$TRITIUM_DEBUG and $TRITIUM_TARGET change what the slow path builds (bounds-checked
    kernels, another target): a registered specialisation launches from C++ only under the
    values it was registered with."""
    fast, slow = launcher
    x, y = FakeTensor(0x30000), FakeTensor(0x40000)
    old = os.environ.get(name)
    monkeypatch.setenv(name, value)
    assert add[(8,)](x, y, 2001, 2.0, BLOCK=128, num_warps=4) == "slow"
    if old is None:
        monkeypatch.delenv(name)
    else:
        monkeypatch.setenv(name, old)
    assert add[(8,)](x, y, 2001, 2.0, BLOCK=128, num_warps=4) == "result"
    assert len(slow.calls) == 1 and C.fast_stats(fast)["hits"] == 1


def test_registering_under_another_environment_drops_the_older_entries(launcher, monkeypatch):
    fast, slow = launcher
    old = os.environ.get("TRITIUM_TARGET")
    monkeypatch.setenv("TRITIUM_TARGET", "sm_80" if old != "sm_80" else "sm_90a")
    x, y = FakeTensor(0x10000), FakeTensor(0x20000)
    assert C.fast_register(fast, (x, y, 1000, 0.5), {"BLOCK": 64, "num_warps": 4}, "other",
                           fake_gpu_kernel(), [0, 1, 2, 3], FakeTensor, lambda d: 7000 + d)
    assert add[(8,)](x, y, 1000, 0.5, BLOCK=64, num_warps=4) == "other"
    # The BLOCK=128 entry was built under the fixture's environment: gone.
    assert add[(8,)](x, y, 1000, 0.5, BLOCK=128, num_warps=4) == "slow"
    assert len(slow.calls) == 1
