"""tritium.executor_memory: memory a kernel reaches only through addresses it reads from a table
(a grouped GEMM's pointer arrays) is declared to the CPU executor, which checks every access
against the memory it knows. Undeclared, such an access is refused with a message that says
how to declare it; declared, it loads and stores, still bounds-checked."""

import numpy as np
import pytest

import tritium
import tritium as triton
import tritium.language as tl


@triton.jit
def _gather_scale_kernel(table_ptr, lens_ptr, n_tables, BLOCK: tl.constexpr):
    """Each program doubles one array whose address and length it reads from the tables."""
    i = tl.program_id(0)
    p = tl.load(table_ptr + i).to(tl.pointer_type(tl.float32))
    n = tl.load(lens_ptr + i)
    offs = tl.arange(0, BLOCK)
    x = tl.load(p + offs, mask=offs < n)
    tl.store(p + offs, x * 2, mask=offs < n)


def _tables(arrays):
    return (np.array([a.ctypes.data for a in arrays], dtype=np.int64),
            np.array([a.size for a in arrays], dtype=np.int32))


def test_undeclared_memory_is_refused_with_a_hint():
    a = np.ones(5, np.float32)
    table, lens = _tables([a])
    with pytest.raises(tritium.ExecutionError, match=r"executor_memory"):
        _gather_scale_kernel[(1,)](table, lens, 1, BLOCK=8)
    np.testing.assert_array_equal(a, 1)


def test_declared_memory_is_reached_through_the_table():
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(n).astype(np.float32) for n in (3, 8, 1, 6)]
    before = [a.copy() for a in arrays]
    table, lens = _tables(arrays)
    with tritium.executor_memory(*arrays[:2]):
        with tritium.executor_memory(*arrays[2:]):  # nested blocks add up
            _gather_scale_kernel[(4,)](table, lens, 4, BLOCK=8)
    for a, b in zip(arrays, before):
        np.testing.assert_array_equal(a, 2 * b)
    # the declaration ended with its block
    with pytest.raises(tritium.ExecutionError, match=r"does not derive from a pointer argument"):
        _gather_scale_kernel[(4,)](table, lens, 4, BLOCK=8)


def test_declared_memory_is_still_bounds_checked():
    a = np.ones(4, np.float32)
    table = np.array([a.ctypes.data], dtype=np.int64)
    lens = np.array([6], dtype=np.int32)  # two elements past the end
    with tritium.executor_memory(a):
        with pytest.raises(tritium.ExecutionError, match=r"out-of-bounds load.*declared memory 0"):
            _gather_scale_kernel[(1,)](table, lens, 1, BLOCK=8)


def test_torch_cpu_tensors_and_views_can_be_declared():
    torch = pytest.importorskip("torch")
    base = torch.arange(12, dtype=torch.float32)
    view = base[4:9]
    table = np.array([view.data_ptr()], dtype=np.int64)
    lens = np.array([5], dtype=np.int32)
    with tritium.executor_memory(view):
        _gather_scale_kernel[(1,)](table, lens, 1, BLOCK=8)
    torch.testing.assert_close(base, torch.cat([torch.arange(4.0), 2 * torch.arange(4.0, 9.0),
                                                 torch.arange(9.0, 12.0)]))


def test_only_tensors_can_be_declared():
    with pytest.raises(TypeError, match="expected a numpy array or a tensor"):
        with tritium.executor_memory(12345):
            pass


@triton.jit
def _shifted_copy_kernel(x_ptr, out_ptr, SHIFT: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, tl.load(x_ptr + (SHIFT + offs)))


def test_a_view_reaches_its_storage_before_its_first_element():
    """A view with a storage offset may be addressed below its first element, within its
    storage, as Inductor's kernels address as_strided views (`in_ptr0 + (-5 + r0)`); past the
    storage's start it is still an out-of-bounds load, whose message counts what lies before."""
    torch = pytest.importorskip("torch")
    base = torch.arange(16, dtype=torch.float32)
    out = torch.full((4,), float("nan"))
    _shifted_copy_kernel[(1,)](base[6:10], out, SHIFT=-5, N=4)
    assert out.tolist() == [1.0, 2.0, 3.0, 4.0]
    with pytest.raises(tritium.ExecutionError,
                       match=r"element offset -7 of argument 'x_ptr' \(10 elements of f32, "
                             r"and 6 before its first in its storage\)"):
        _shifted_copy_kernel[(1,)](base[6:10], out, SHIFT=-7, N=4)
    a = np.arange(16, dtype=np.float32)
    o = np.full(4, np.nan, dtype=np.float32)
    _shifted_copy_kernel[(1,)](a[6:10], o, SHIFT=-6, N=4)
    np.testing.assert_array_equal(o, [0.0, 1.0, 2.0, 3.0])
    with pytest.raises(tritium.ExecutionError, match="out-of-bounds load"):
        _shifted_copy_kernel[(1,)](a[6:10].copy(), o, SHIFT=-1, N=4)
