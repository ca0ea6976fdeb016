"""Tuples as kernel arguments (each element specialised like an argument of its own, nested
tuples too) and `if`/`while` on a one-element tensor, as Triton allows, on the CPU executor."""

from typing import NamedTuple

import numpy as np
import pytest

import tritium as triton
import tritium.language as tl


@triton.jit
def _tuple_kernel(ptrs, scalars, nested, N: tl.constexpr):
    src, dst = ptrs
    scale, shift = scalars
    offs = tl.arange(0, N)
    x = tl.load(src + offs) * scale + shift
    inner_ptr, (k, flag) = nested
    if flag:
        x = x + k
    tl.store(dst + offs, x)
    tl.store(inner_ptr + offs, offs)


@pytest.mark.parametrize("flag", [True, False])
def test_tuple_arguments(flag):
    x = np.arange(8, dtype=np.float32)
    y = np.full(8, np.nan, np.float32)
    z = np.full(8, -1, np.int32)
    _tuple_kernel[(1,)]((x, y), (2.0, 16), (z, (100, flag)), N=8)
    np.testing.assert_array_equal(y, x * 2 + 16 + (100 if flag else 0))
    np.testing.assert_array_equal(z, np.arange(8))


def test_tuple_elements_specialise_separately():
    x = np.arange(8, dtype=np.float32)
    y = np.zeros(8, np.float32)
    z = np.zeros(8, np.int32)
    _tuple_kernel[(1,)]((x, y), (2.0, 16), (z, (1, True)), N=8)   # 1 specialises as a constant
    _tuple_kernel[(1,)]((x, y), (2.0, 16), (z, (7, True)), N=8)
    np.testing.assert_array_equal(y, x * 2 + 16 + 7)
    assert len(_tuple_kernel.cache) >= 2


def test_tuple_of_unsupported_values_is_a_clear_error():
    with pytest.raises(TypeError, match=r"argument 'ptrs' of _tuple_kernel\[1\]"):
        _tuple_kernel[(1,)]((np.zeros(8, np.float32), object()), (1.0, 1), (np.zeros(8, np.int32),
                                                                         (1, True)), N=8)


@triton.jit
def _one_element_condition_kernel(p, out):
    x = tl.load(p + tl.arange(0, 1))
    if x > 0:
        tl.store(out, 1.0)
    else:
        tl.store(out, -1.0)
    i = tl.zeros([1], tl.int32)
    while i < 3:
        i += 1
    tl.store(out + 1, i.to(tl.float32).item())


@pytest.mark.parametrize("v,want", [(2.0, 1.0), (-2.0, -1.0)])
def test_if_and_while_on_a_one_element_tensor(v, want):
    out = np.full(2, np.nan, np.float32)
    _one_element_condition_kernel[(1,)](np.array([v], np.float32), out)
    np.testing.assert_array_equal(out, [want, 3.0])


@triton.jit
def _shape_kernel(dst, shape):
    m, n = shape
    tl.store(dst + tl.arange(0, 2), tl.where(tl.arange(0, 2) == 0, m, n))


def test_torch_size_is_a_tuple_argument():
    # Triton's descriptor tests pass `tensor.shape` (a torch.Size, a tuple subclass) as a tuple.
    torch = pytest.importorskip("torch")
    out = np.full(2, -1, np.int32)
    _shape_kernel[(1,)](out, torch.Size([37, 5]))
    np.testing.assert_array_equal(out, [37, 5])


@triton.jit
def _empty_kernel(dst):
    pass


@pytest.mark.parametrize("nw", [3, 0, 64, 2.0])
def test_num_warps_must_be_a_power_of_two(nw):
    # Triton raises an AssertionError; tritium's LaunchOptionError is one (and a ValueError).
    dst = np.zeros(4, np.float32)
    with pytest.raises(AssertionError, match="must be a power of 2"):
        _empty_kernel[(1,)](dst, num_warps=nw)
    with pytest.raises(ValueError, match="must be a power of 2"):
        _empty_kernel[(1,)](dst, num_warps=nw)
    for ok in (1, 2, 4, 32):
        _empty_kernel[(1,)](dst, num_warps=ok)


class _Closure(NamedTuple):
    fn: tl.constexpr  # a @jit function: a compile-time field
    captured: tuple


class _Strided(NamedTuple):
    ptr: object
    n: int
    stride: int


@triton.jit
def _scale_by(x, s_ptr, bias):
    return x * tl.load(s_ptr) + bias


@triton.jit
def _add_to(x, s_ptr, bias):
    return x + tl.load(s_ptr) - bias


@triton.jit
def _namedtuple_kernel(closure, src: _Strided, dst, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < src.n
    x = tl.load(src.ptr + offs * src.stride, mask=mask, other=0.0)
    tl.store(dst + offs, closure.fn(x, *closure.captured), mask=mask)


def test_namedtuple_arguments():
    # NamedTuple arguments: rebuilt as their type in the kernel (fields by name), a field
    # annotated tl.constexpr (here a @jit function, called through it) a compile-time value;
    # each distinct function is its own specialisation.
    x = np.arange(16, dtype=np.float32)
    s = np.array([3.0], np.float32)
    for fn, want in ((_scale_by, x[::2][:6] * 3 + 1), (_add_to, x[::2][:6] + 3 - 1)):
        y = np.full(8, np.nan, np.float32)
        _namedtuple_kernel[(1,)](_Closure(fn, (s, 1.0)), _Strided(x, 6, 2), y, BLOCK=8)
        np.testing.assert_array_equal(y[:6], want)
        assert np.isnan(y[6:]).all()
    assert len(_namedtuple_kernel.cache) == 2


@triton.jit
def _apply(f, X):
    tl.store(X, f(tl.load(X)))


def test_jit_function_argument():
    # A @jit function as a plain argument is a compile-time value: one specialisation per
    # function, called in the kernel.
    x = np.ones(1, np.float32)
    _apply[(1,)](_twice, x)
    _apply[(1,)](_twice, x)
    _apply[(1,)](_negate, x)
    np.testing.assert_array_equal(x, [-4.0])
    assert len(_apply.cache) == 2


@triton.jit
def _twice(x):
    return x * 2


@triton.jit
def _negate(x):
    return -x
