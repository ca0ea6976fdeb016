"""The C function that is Inductor's `binary.run` for a GPU kernel
(lib/bindings/inductor_launch.cpp), checked without a GPU in its dry-run mode:
which arguments it passes the kernel (constexpr positions dropped, tensors by
data_ptr(), None as 0), and that everything it does not handle reaches the
Python fallback with the same arguments. test_gpu_inductor.py runs it on the
GPU under torch.compile."""

import pytest

from tritium.errors import load_C

C = load_C()


class FakeTensor:
    """What the launcher reads of a torch tensor: data_ptr()."""

    def __init__(self, address):
        self.address = address

    def data_ptr(self):
        return self.address


def make(kept=(0, 2, 3), nparams=5):
    """A launcher for a kernel (x: ptr, n: i32, scale: fp32) whose Python
    function has 5 parameters, positions 1 and 4 constexprs."""
    calls = []

    def fallback(*args):
        calls.append(args)
        return "fallback"

    kernel = C.GpuKernel("k", b"", False, "sm_90a", 4, 0,
                         [("ptr", "x"), ("i32", "n"), ("fp32", "scale")])
    run = C.inductor_launcher(list(kept), nparams, fallback)
    C.inductor_launcher_set_dry_run(run, True)
    return run, kernel, calls


def args(grid=(4, 2, 1), stream=77, enter=None, exit_=None, params=None):
    if params is None:
        params = (FakeTensor(0x7F00_0000_1000), 128, 5, 0.5, 64)
    return (*grid, stream, None, ("metadata",), None, enter, exit_, *params)


def test_launch_drops_constexprs_and_converts():
    run, kernel, calls = make()
    C.inductor_launcher_set_kernel(run, kernel)
    before = C.inductor_launches()
    assert run(*args()) is None
    assert calls == []
    grid, stream, bits = C.inductor_launcher_last(run)
    assert grid == (4, 2, 1) and stream == 77
    import struct  # noqa: PLC0415
    assert bits[0] == 0x7F00_0000_1000
    assert bits[1] & 0xFFFFFFFF == 5
    assert struct.unpack("<f", struct.pack("<I", bits[2] & 0xFFFFFFFF))[0] == 0.5
    assert C.inductor_launches() == before + 1


def test_none_pointer_is_null():
    run, kernel, calls = make()
    C.inductor_launcher_set_kernel(run, kernel)
    run(*args(params=(None, 128, 7, 1.0, 64)))
    assert calls == []
    assert C.inductor_launcher_last(run)[2][0] == 0


@pytest.mark.parametrize("case", ["no kernel", "enter hook", "exit hook", "stream None",
                                  "empty grid", "argument count", "bad argument"])
def test_fallback_gets_the_same_arguments(case):
    run, kernel, calls = make()
    if case != "no kernel":
        C.inductor_launcher_set_kernel(run, kernel)
    a = {"no kernel": args(),
         "enter hook": args(enter=print),
         "exit hook": args(exit_=print),
         "stream None": args(stream=None),
         "empty grid": args(grid=(0, 1, 1)),
         "argument count": args()[:-1],
         "bad argument": args(params=(FakeTensor(16), 128, "not an int", 0.5, 64))}[case]
    before = C.inductor_launches()
    assert run(*a) == "fallback"
    assert calls == [a]
    assert C.inductor_launches() == before


def test_fallback_errors_propagate():
    def fallback(*args):
        raise TypeError("from the Python path")

    run = C.inductor_launcher([0], 1, fallback)
    with pytest.raises(TypeError, match="from the Python path"):
        run(1, 1, 1, 0, None, None, None, None, None, FakeTensor(16))


def test_set_kernel_checks_the_parameter_count():
    run, kernel, _ = make(kept=(0, 2))
    with pytest.raises(ValueError, match="takes 3 arguments, the launcher passes 2"):
        C.inductor_launcher_set_kernel(run, kernel)
    with pytest.raises(ValueError, match="not one of the 2 parameters"):
        C.inductor_launcher([0, 2], 2, print)
    with pytest.raises(TypeError, match="not an Inductor launcher"):
        C.inductor_launcher_set_kernel(print, kernel)
