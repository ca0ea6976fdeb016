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
