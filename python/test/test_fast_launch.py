"""The C++ launch fast path (lib/bindings/fast_launch.cpp), without a GPU.

A stand-in tensor type plays torch.Tensor and the launcher runs dry: it
records the launch it would make (grid, stream, device, argument bits)
instead of calling the driver. What is checked:
  - a registered specialisation launches from C++ with the right bits;
  - every change jit.py's specialisation key sees (dtype, alignment, int
    class, == 1, % 16, constexpr values, launch options, device) goes back
    to JITFunction.run instead;
  - the key is sound: equal fast-path keys imply equal jit.py keys
    (hypothesis over random argument lists);
  - host TensorDescriptor arguments: after the first call the descriptor
    matmul launches from C++ with the bits the Python path passes (the real
    Python path, compiling for sm_90a, with the driver call recorded), and
    every change of the descriptor's key goes back to the Python path.
"""

import os
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tritium
import tritium.language as tl
from tritium import _C as C


class FakeDType:
    def __init__(self, typestr):
        self.typestr = typestr
        self.is_floating_point = typestr[1] == "f"


F32, F16, I32 = FakeDType("<f4"), FakeDType("<f2"), FakeDType("<i4")


class FakeTensor:
    """What the fast path reads of a torch CUDA tensor; jit.py's key reads
    __cuda_array_interface__."""

    def __init__(self, address, dtype=F32, device=0, cuda=True, numel=1, shape=(1,),
                 strides=None):
        self.address, self.dtype, self.device, self.is_cuda = address, dtype, device, cuda
        self._numel = numel
        # What TensorDescriptor.from_tensor reads (the class name spares the fake its
        # alignment check, as for torch's FakeTensor).
        self.shape = tuple(shape)
        self._strides = strides or tuple(int(np.prod(shape[i + 1:])) for i in range(len(shape)))

    def data_ptr(self):
        return self.address

    def numel(self):
        return self._numel

    def stride(self):
        return self._strides

    def is_contiguous(self):
        return self._strides == tuple(int(np.prod(self.shape[i + 1:]))
                                      for i in range(len(self.shape)))

    def element_size(self):
        return int(self.dtype.typestr[2:])

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


def test_a_strided_view_reaching_2_31_elements_takes_the_python_path(launcher):
    """A column of a 2^16 x 2^16 matrix has 2^16 elements but reaches 2^32 - 2^16 + 1 from its
    address: its offsets need 64 bits (launcher.needs_int64_offsets on the Python path reads the
    footprint, not the count), so the fast path must not launch the 32-bit kernel with it. A
    view whose reach stays below 2^31, and a contiguous tensor, stay on the fast path."""
    fast, slow = launcher
    column = FakeTensor(0x30000, numel=2 ** 16, shape=(2 ** 16,), strides=(2 ** 16,))
    assert not column.is_contiguous()
    assert add[(8,)](column, FakeTensor(0x40000), 2001, 2.0, BLOCK=128, num_warps=4) == "slow"
    assert len(slow.calls) == 1
    # Reach 2^15 * 2^16 + 1 = 2^31 + 1: the Python path; one row fewer, 2^31 - 2^16 + 1: fast.
    over = FakeTensor(0x30000, numel=2 ** 15 + 1, shape=(2 ** 15 + 1,), strides=(2 ** 16,))
    assert add[(8,)](over, FakeTensor(0x40000), 2001, 2.0, BLOCK=128, num_warps=4) == "slow"
    assert len(slow.calls) == 2
    below = FakeTensor(0x30000, numel=2 ** 15, shape=(2 ** 15,), strides=(2 ** 16,))
    assert add[(8,)](below, FakeTensor(0x40000), 2001, 2.0, BLOCK=128, num_warps=4) == "result"
    assert len(slow.calls) == 2
    empty = FakeTensor(0x30000, numel=0, shape=(0, 2 ** 20), strides=(2 ** 20, 1))
    assert add[(8,)](empty, FakeTensor(0x40000), 2001, 2.0, BLOCK=128, num_warps=4) == "result"
    assert len(slow.calls) == 2


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
    import gc

    @tritium.jit
    def k(x_ptr, BLOCK: tl.constexpr):
        pass

    # `k[grid]` holds the function (Triton's `jit(f)[grid](...)` on a temporary works).
    launch = k[(1,)]
    assert launch.kernel is k
    # The launcher itself names it weakly: launched through the capsule alone after the
    # function is gone, it is an error, not a crash.
    capsule = k._make_fast_launcher()
    del k, launch
    gc.collect()
    with pytest.raises(RuntimeError, match="no longer exists"):
        C.fast_launch(capsule, (1,), FakeTensor(0x100), BLOCK=4)


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


# -- host TensorDescriptor arguments -------------------------------------------

import importlib  # noqa: E402

from tritium.runtime import cuda as _cuda  # noqa: E402
from tritium.tools.tensor_descriptor import TensorDescriptor  # noqa: E402

_jit = importlib.import_module("tritium.jit")  # the module (tritium.jit is the decorator)


@tritium.jit
def desc_matmul(a_desc, b_desc, c_desc, K, BM: tl.constexpr, BN: tl.constexpr,
                BK: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc = tl.dot(a_desc.load([pm * BM, k]), b_desc.load([k, pn * BN]), acc)
    c_desc.store([pm * BM, pn * BN], acc.to(c_desc.dtype))


def desc(address, shape, dtype=F16, strides=None, block=(16, 16), padding="zero", **kw):
    """A TensorDescriptor of a fake CUDA tensor (contiguous unless strides are given)."""
    base = FakeTensor(address, dtype, shape=shape, strides=strides, **kw)
    return TensorDescriptor(base, list(shape), list(base.stride()), list(block), padding)


def matmul_args(M, N, K, dtype=F16, address=0x100000, a_strides=None, c_dtype=None,
                padding="zero"):
    """(a, b, c descriptors, K) of an M x K by K x N product, 16 x 16 x 16 blocks."""
    return (desc(address, (M, K), dtype, a_strides),
            desc(address + 0x1000000, (K, N), dtype),
            desc(address + 0x2000000, (M, N), c_dtype or dtype, padding=padding), K)


_KINDS = {"int1": "i1", "int32": "i32", "int64": "i64", "uint64": "u64", "fp32": "fp32"}


def fake_kernel_for(fn, args, kwargs):
    """A GpuKernel (never loaded) with the parameters the Python path would compile for this
    call, and where the fast path takes each from (jit._runtime_parts)."""
    _, spec, _ = fn._key(fn._bind(args, kwargs))
    params = []
    for name, p in _jit._params(spec):
        if p[0] == "arg":
            kind = "ptr" if isinstance(p[1], tl.pointer_type) else _KINDS[p[1].name]
            params.append((kind, name))
    kernel = C.GpuKernel(fn.__name__, b"never loaded", False, "sm_90a", 4, 0, params)
    return kernel, _jit._runtime_parts(fn.params, spec)


BASE_CALL = matmul_args(64, 48, 32)


@pytest.fixture
def desc_launcher(monkeypatch):
    """desc_matmul's fast launcher, dry, with BASE_CALL's specialisation registered."""
    desc_matmul._fast = None
    fast = desc_matmul._make_fast_launcher()
    C.fast_set_dry_run(fast, True)
    slow = Recorder()
    monkeypatch.setattr(desc_matmul, "run", slow, raising=False)
    kw = {"BM": 16, "BN": 16, "BK": 16}
    kernel, parts = fake_kernel_for(desc_matmul, BASE_CALL, kw)
    assert C.fast_register(fast, BASE_CALL, kw, "result", kernel, parts, FakeTensor,
                           lambda d: 7000 + d)
    yield fast, slow
    desc_matmul._fast = None


def test_descriptor_runtime_parts():
    """Each kernel argument's (parameter, part): a descriptor's base is part 0, its shape
    parts 1..rank, its strides rank+1..2*rank; the constant last stride (1) is no argument."""
    _, spec, _ = desc_matmul._key(desc_matmul._bind(BASE_CALL, {"BM": 16, "BN": 16, "BK": 16}))
    assert _jit._runtime_parts(desc_matmul.params, spec) == [
        (0, 0), (0, 1), (0, 2), (0, 3), (1, 0), (1, 1), (1, 2), (1, 3),
        (2, 0), (2, 1), (2, 2), (2, 3), (3, 0)]
    # A shape of 1 is a constant too; a parameter named like a part is still its own.
    _, spec, _ = desc_matmul._key(desc_matmul._bind(matmul_args(1, 48, 32),
                                                    {"BM": 16, "BN": 16, "BK": 16}))
    assert _jit._runtime_parts(desc_matmul.params, spec)[:3] == [(0, 0), (0, 2), (0, 3)]


def test_descriptor_call_launches_from_cpp(desc_launcher):
    fast, slow = desc_launcher
    a, b, c, K = matmul_args(80, 32, 48, address=0x5000000)  # other addresses and sizes, same key
    assert desc_matmul[(5, 2)](a, b, c, K, BM=16, BN=16, BK=16) == "result"
    assert slow.calls == [] and C.fast_stats(fast)["hits"] == 1
    last = C.fast_last_launch(fast)
    assert last["grid"] == (5, 2, 1) and last["stream"] == 7000 and last["device"] == 0
    assert last["args"] == [a.base.address, 80, 48, 48, b.base.address, 48, 32, 32,
                            c.base.address, 80, 32, 32, 48]


@pytest.mark.parametrize("args, why", [
    (matmul_args(64, 48, 32, c_dtype=F32), "c's dtype"),
    (matmul_args(64, 48, 32, dtype=F32), "every dtype"),
    (matmul_args(64, 48, 32, address=0x100008), "a's base not 16-byte aligned"),
    (matmul_args(40, 48, 32), "M not divisible by 16"),
    (matmul_args(1, 48, 32), "M == 1"),
    (matmul_args(2 ** 31, 48, 32), "M is i64"),
    (matmul_args(2 ** 64 - 16, 48, 32), "M is u64"),
    (matmul_args(64, 48, 32, a_strides=(40, 1)), "a's row stride not divisible by 16"),
    (matmul_args(64, 48, 32, padding="nan"), "c's padding"),
    ((desc(0x100000, (64, 32), block=(32, 16)),) + BASE_CALL[1:], "a's block shape"),
    ((desc(0x100000, (2, 64, 32), block=(1, 16, 16)),) + BASE_CALL[1:], "a's rank"),
    ((desc(0x100000, (64, 32), device=1),) + BASE_CALL[1:], "a on another GPU"),
    ((desc(0x100000, (64, 32), cuda=False),) + BASE_CALL[1:], "a in host memory"),
])
def test_every_descriptor_key_change_takes_the_slow_path(desc_launcher, args, why):
    fast, slow = desc_launcher
    assert desc_matmul[(1,)](*args, BM=16, BN=16, BK=16) == "slow", why
    assert len(slow.calls) == 1 and C.fast_last_launch(fast) is None
    assert C.fast_key(fast, args, {"BM": 16, "BN": 16, "BK": 16}) != \
        C.fast_key(fast, BASE_CALL, {"BM": 16, "BN": 16, "BK": 16})


class SubDescriptor(TensorDescriptor):
    pass


def mutated(**fields):
    d = desc(0x100000, (64, 32))
    for k, v in fields.items():
        setattr(d, k, v)
    return d


@pytest.mark.parametrize("a, why", [
    (SubDescriptor(FakeTensor(0x100000, F16, shape=(64, 32)), [64, 32], [32, 1], [16, 16]),
     "a subclass (jit.py does not take it for a descriptor)"),
    (mutated(shape=[64, True]), "a bool in the shape (jit.py keys True as 1)"),
    (mutated(strides=[np.int64(32), 1]), "a numpy int in the strides"),
    (mutated(shape=iter([64, 32])), "a shape that is not a list or tuple"),
    (mutated(block_shape=[16.0, 16]), "a float in the block shape"),
    (mutated(padding=None), "a padding that is not a str"),
    (mutated(base=0x100000), "a base that is not a tensor"),
    (mutated(shape=[64] * 300, strides=[32] * 300), "more parts than the fast path holds"),
])
def test_unusual_descriptors_take_the_slow_path(desc_launcher, a, why):
    fast, slow = desc_launcher
    args = (a,) + BASE_CALL[1:]
    assert desc_matmul[(1,)](*args, BM=16, BN=16, BK=16) == "slow", why
    assert C.fast_key(fast, args, {"BM": 16, "BN": 16, "BK": 16}) is None


def test_mutated_descriptor_is_read_again(desc_launcher):
    """TensorDescriptor is a mutable dataclass: its fields are read at each call."""
    fast, slow = desc_launcher
    a, b, c, K = matmul_args(64, 48, 32)
    desc_matmul[(1,)](a, b, c, K, BM=16, BN=16, BK=16)
    a.shape = [96, 32]  # same key, new value
    desc_matmul[(1,)](a, b, c, K, BM=16, BN=16, BK=16)
    assert C.fast_last_launch(fast)["args"][1] == 96 and slow.calls == []
    a.shape = [50, 32]  # another key
    assert desc_matmul[(1,)](a, b, c, K, BM=16, BN=16, BK=16) == "slow"


def test_registration_checks_descriptor_parts(desc_launcher):
    fast, _ = desc_launcher
    kw = {"BM": 16, "BN": 16, "BK": 16}
    kernel, parts = fake_kernel_for(desc_matmul, BASE_CALL, kw)
    swapped = [parts[1], parts[0]] + parts[2:]  # a shape where the pointer goes: refused
    assert not C.fast_register(fast, BASE_CALL, kw, "r", kernel, swapped, FakeTensor, None)
    beyond = parts[:3] + [(0, 5)] + parts[4:]  # a rank-2 descriptor has parts 0..4
    assert not C.fast_register(fast, BASE_CALL, kw, "r", kernel, beyond, FakeTensor, None)
    const = parts[:3] + [(0, 4)] + parts[4:]  # the last stride, the constant 1
    assert not C.fast_register(fast, BASE_CALL, kw, "r", kernel, const, FakeTensor, None)
    assert C.fast_register(fast, BASE_CALL, kw, "r", kernel, parts, FakeTensor, None)


@tritium.jit
def eight_descriptors(d0, d1, d2, d3, d4, d5, d6, d7):
    pass


def test_more_kernel_arguments_than_parameters_the_cpp_path_takes():
    """Eight rank-5 descriptors are 80 kernel arguments (a base, 5 shapes, 4 strides each):
    more than the 64 parameters a kernel may have on the fast path, all packed."""
    eight_descriptors._fast = None
    fast = eight_descriptors._make_fast_launcher()
    C.fast_set_dry_run(fast, True)
    shape = (3, 5, 7, 9, 48)

    def call(address):
        return tuple(desc(address + i * 0x10000, shape, block=(1, 1, 1, 1, 16)) for i in range(8))

    kernel, parts = fake_kernel_for(eight_descriptors, call(0x100000), {})
    assert len(parts) == 80
    assert C.fast_register(fast, call(0x100000), {}, "result", kernel, parts, FakeTensor, None)
    args = call(0x900000)
    assert eight_descriptors[(1,)](*args) == "result"
    strides = [5 * 7 * 9 * 48, 7 * 9 * 48, 9 * 48, 48]
    expected = [x for d in args for x in [d.base.address, *shape, *strides]]
    assert C.fast_last_launch(fast)["args"] == expected
    eight_descriptors._fast = None


def test_tuple_arguments_still_take_the_python_path(monkeypatch):
    """Only descriptors among the "group" parameters are registered with the fast path."""
    @tritium.jit
    def k(t, x):
        pass

    registered = []
    monkeypatch.setattr(_jit, "_fast_torch_hooks", lambda: (FakeTensor, None))
    monkeypatch.setattr(_jit, "load_C", lambda: type(
        "FakeC", (), {"fast_register": staticmethod(lambda *a: registered.append(a))}))
    kernel = type("FakeKernel", (), {"metadata": {}, "gpu_kernel": lambda self: None})()
    k._fast = "a launcher"
    for args in [((FakeTensor(0x1000), 3), 5), (desc(0x1000, (16, 16)), 5)]:
        spec = k._key(k._bind(args, {}))[1]
        k._register_fast(args, {}, {}, spec, kernel)
    k._fast = None
    assert len(registered) == 1 and registered[0][1][0].__class__ is TensorDescriptor


# Soundness for descriptors: equal fast keys imply equal jit.py keys.

@tritium.jit(do_not_specialize=["e"])
def dspec(d, e, D: tl.constexpr):
    pass


dims = st.sampled_from([1, 2, 16, 17, 48, 2 ** 31, 2 ** 32 + 16, 2 ** 63 + 16])
row_strides = st.sampled_from([8, 16, 24, 1024, 2 ** 31 + 8, 2 ** 33])
descriptors = st.builds(
    lambda address, dtype, device, shape, stride, block, padding: TensorDescriptor(
        FakeTensor(address, dtype, device, shape=(2, 2)), list(shape), [stride, 1], list(block),
        padding),
    st.sampled_from([0x1000, 0x1008, 0x1010]), st.sampled_from([F32, F16]),
    st.sampled_from([0, 1]), st.tuples(dims, dims), row_strides,
    st.sampled_from([(16, 16), (32, 16), (1, 16)]), st.sampled_from(["zero", "nan"]))
desc_calls = st.tuples(descriptors, descriptors, st.sampled_from([1, 16, "x"]))


def _dspec_fast():
    dspec._fast = None
    fast = dspec._make_fast_launcher()
    C.fast_register(fast, (), {}, None, fake_gpu_kernel(), [], FakeTensor, None)  # sets the type
    return fast


@settings(max_examples=400, deadline=None)
@given(desc_calls, desc_calls)
def test_equal_fast_keys_mean_equal_jit_keys_for_descriptors(one, two):
    fast = _dspec_fast()
    k1 = C.fast_key(fast, one[:2], {"D": one[2]})
    k2 = C.fast_key(fast, two[:2], {"D": two[2]})
    assert k1 is not None and k2 is not None
    if k1 == k2:
        assert dspec._key(list(one))[0] == dspec._key(list(two))[0], (one, two)
        assert one[0].base.device == two[0].base.device


def test_descriptor_fast_keys_are_not_all_equal():
    fast = _dspec_fast()

    def key(d, e=None):
        e = e or desc(0x2000, (16, 16))
        return C.fast_key(fast, (d, e), {"D": 1})

    base = desc(0x1000, (32, 48))
    variants = [base, desc(0x1000, (33, 48)), desc(0x1000, (1, 48)), desc(0x1000, (2 ** 31, 48)),
                desc(0x1000, (32, 48), strides=(56, 1)), desc(0x1000, (32, 48), F32),
                desc(0x1008, (32, 48)), desc(0x1000, (32, 48), block=(32, 16)),
                desc(0x1000, (32, 48), padding="nan"), desc(0x1000, (32, 48), device=1)]
    keys = [key(v) for v in variants]
    assert None not in keys and len(set(keys)) == len(keys)
    assert key(desc(0x5000, (64, 32))) == key(base)  # the same classes
    # do_not_specialize (e): no constant 1, no divisibility.
    assert key(base, desc(0x2000, (1, 16))) == key(base, desc(0x2000, (17, 16)))
    assert key(base, desc(0x2000, (32, 16))) == key(base, desc(0x2000, (17, 16)))


# The real Python path against the fast path: the Python path compiles for sm_90a (no GPU
# needed) and its driver call is recorded, as the bits GpuKernel.launch would pass.

class RecordingKernel(C.GpuKernel):
    launches = None  # the fixture's list

    def launch(self, gx, gy, gz, stream, device, args, check_pointers=True):
        RecordingKernel.launches.append({"grid": (gx, gy, gz), "stream": stream,
                                         "device": device, "args": self.pack_args(args)})


def recording_gpu_kernel(self):
    if self._kernel is None:
        m = self.metadata
        self._kernel = RecordingKernel(self.name, b"never loaded", False, m["target"],
                                       m["num_warps"], m["shared"],
                                       [tuple(p) for p in m["params"]])
    return self._kernel


@pytest.fixture
def python_path(monkeypatch, tmp_path):
    """desc_matmul with a dry fast launcher, and the Python path's launches (a list)."""
    monkeypatch.setenv("TRITIUM_TARGET", "sm_90a")
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TRITIUM_DEBUG", raising=False)
    monkeypatch.setattr(_jit, "_fast_torch_hooks", lambda: (FakeTensor, lambda d: 7000 + d))
    monkeypatch.setattr(_cuda, "current_stream", lambda d: 7000 + d)
    monkeypatch.setattr(_cuda.GPUKernel, "gpu_kernel", recording_gpu_kernel)
    launches = []
    monkeypatch.setattr(RecordingKernel, "launches", launches)
    desc_matmul._fast = None
    desc_matmul.__dict__.pop("gpu_cache", None)
    C.fast_set_dry_run(desc_matmul._make_fast_launcher(), True)
    yield launches
    desc_matmul._fast = None
    desc_matmul.__dict__.pop("gpu_cache", None)


PYTHON_PATH_CASES = [
    # (M, N, K, dtype, a's row stride, c's padding)
    (64, 48, 32, F16, None, "zero"),
    (40, 24, 72, F16, 88, "zero"),  # shapes and a row stride not divisible by 16
    (1, 48, 32, F32, None, "nan"),  # a shape of 1 (a constant), fp32, NaN padding
    (2 ** 31 + 16, 32, 2 ** 32 + 16, F16, 2 ** 32 + 16, "zero"),  # i64 shapes and strides
    (48, 32, 40, F16, -40, "zero"),  # a negative i32 stride: two's complement, 4 bytes
]


@pytest.mark.parametrize("M, N, K, dtype, row, padding", PYTHON_PATH_CASES)
def test_descriptor_fast_path_passes_the_python_paths_bits(python_path, M, N, K, dtype, row,
                                                           padding):
    launches = python_path
    fast = desc_matmul._fast
    kw = {"BM": 16, "BN": 16, "BK": 16, "num_warps": 4}
    strides = None if row is None else (row, 1)
    grid = (3, 2)

    def call(address):
        return matmul_args(M, N, K, dtype, address, strides, padding=padding)

    first = call(0x100000)
    desc_matmul[grid](*first, **kw)  # the Python path: compiles, launches, registers
    assert len(launches) == 1 and C.fast_stats(fast) == {"hits": 0, "misses": 1, "entries": 1}
    second = call(0x7000000)
    desc_matmul[grid](*second, **kw)  # the fast path
    assert len(launches) == 1 and C.fast_stats(fast)["hits"] == 1
    fast_launch = C.fast_last_launch(fast)
    desc_matmul.run(*second, grid=grid, **kw)  # the Python path, for the same call
    assert len(launches) == 2
    python_launch = launches[-1]
    assert fast_launch["args"] == python_launch["args"]
    assert fast_launch["grid"] == python_launch["grid"] == (3, 2, 1)
    assert fast_launch["stream"] == python_launch["stream"] == 7000
    assert fast_launch["device"] == python_launch["device"] == 0
    # The bits are the second call's: its addresses (not the first call's), shapes, strides.
    assert fast_launch["args"][0] == second[0].base.address
    assert second[2].base.address in fast_launch["args"]
    assert first[0].base.address not in fast_launch["args"]
    assert fast_launch["result"] is next(iter(desc_matmul.gpu_cache.values()))


def test_descriptor_respecialisation_through_the_python_path(python_path):
    """A descriptor change that changes the key compiles a second kernel and registers it
    beside the first; one that keeps the key reuses it from C++."""
    launches = python_path
    fast = desc_matmul._fast
    kw = {"BM": 16, "BN": 16, "BK": 16}
    k1 = desc_matmul[(1,)](*matmul_args(64, 48, 32), **kw)
    k2 = desc_matmul[(1,)](*matmul_args(40, 48, 32), **kw)  # M % 16 != 0: recompiled
    k3 = desc_matmul[(1,)](*matmul_args(64, 48, 32, c_dtype=F32), **kw)  # c in fp32
    assert len({id(k1), id(k2), id(k3)}) == 3 and len(desc_matmul.gpu_cache) == 3
    assert C.fast_stats(fast) == {"hits": 0, "misses": 3, "entries": 3}
    assert desc_matmul[(1,)](*matmul_args(56, 48, 32), **kw) is k2  # the same classes as 40
    assert desc_matmul[(1,)](*matmul_args(96, 48, 32, c_dtype=F32), **kw) is k3
    assert desc_matmul[(1,)](*matmul_args(128, 48, 32), **kw) is k1
    assert C.fast_stats(fast)["hits"] == 3 and len(launches) == 3
    assert C.fast_last_launch(fast)["args"][1] == 128
