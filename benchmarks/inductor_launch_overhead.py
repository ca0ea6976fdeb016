"""Host cost of Inductor's `binary.run` per launch, without a GPU: the C function that is `run`
for a GPU kernel (lib/bindings/inductor_launch.cpp) in its dry-run mode (everything but the
driver call), beside the Python path it replaced (CompiledKernel.run -> its bound fast path ->
the pybind11 launcher; `GpuKernel.pack_args`, which converts the same arguments through the same
code, stands in for the launch). A kernel of three pointers and an int, five Inductor parameters
(one a constexpr), stand-in tensors with data_ptr(). Best of 5 rounds of 200,000 calls.
Run: PYTHONPATH=python python3 benchmarks/inductor_launch_overhead.py"""

import operator
import threading
import time

from tritium.errors import load_C

C = load_C()
KEPT = (0, 1, 2, 3)  # Inductor's argument positions the kernel takes
NPARAMS = 5


class StandInTensor:
    """What a launch reads of a torch tensor."""

    def __init__(self, address):
        self.address = address

    def data_ptr(self):
        return self.address


def c_run(kernel):
    run = C.inductor_launcher(list(KEPT), NPARAMS, print)
    C.inductor_launcher_set_kernel(run, kernel)
    C.inductor_launcher_set_dry_run(run, True)
    return run


def python_run(kernel):
    """CompiledKernel.run and the fast path it bound, as kernels.py had them."""
    lock, stats = threading.Lock(), {"launches": 0}
    pick, launch = operator.itemgetter(*KEPT), kernel.pack_args

    def fast(grid_0, grid_1, grid_2, stream, args):
        if (stream is None or len(args) != NPARAMS or grid_0 <= 0 or grid_1 <= 0
                or grid_2 <= 0):
            return False
        launch(pick(args))
        with lock:
            stats["launches"] += 1
        return True

    class Kernel:
        def run(self, grid_0, grid_1, grid_2, stream, function, packed_metadata,
                launch_metadata, launch_enter_hook, launch_exit_hook, *args):
            f = self.__dict__.get("_fast")
            if (f is not None and launch_enter_hook is None and launch_exit_hook is None
                    and f(grid_0, grid_1, grid_2, stream, args)):
                return
            raise AssertionError("the fast path declined")

    k = Kernel()
    k._fast = fast
    return k.run


def per_call_us(run, args, n=200_000):
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(n):
            run(4, 1, 1, 7, None, None, None, None, None, *args)
        best = min(best, (time.perf_counter() - t) / n * 1e6)
    return best


def main():
    kernel = C.GpuKernel("k", b"", False, "sm_90a", 4, 0,
                         [("ptr", "x"), ("ptr", "y"), ("ptr", "out"), ("i32", "n")])
    args = (StandInTensor(4096), StandInTensor(8192), StandInTensor(12288), 1000, 64)
    c_us = per_call_us(c_run(kernel), args)
    py_us = per_call_us(python_run(kernel), args)
    print(f"Inductor's binary.run, host only: C {c_us:.3f} us/call, "
          f"the Python path it replaced {py_us:.3f} us/call")


if __name__ == "__main__":
    main()
