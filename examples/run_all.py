"""Runs every example (what `make demo` runs) and exits non-zero if any of them fails.

Each example checks its kernel against a numpy (or torch) reference on fresh random inputs of
several sizes and prints PASS or FAIL per case with the largest error seen. On a machine with a
CUDA GPU each also checks itself there and prints a benchmark table beside torch (and Triton
when it is importable), saving a plot under examples/plots/ when matplotlib is installed.
"""

import importlib.util
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = ["vector_add", "fused_softmax", "layer_norm", "matmul", "block_ptr_matmul", "dropout",
            "fused_attention", "grouped_gemm"]


def _ensure_tritium_importable():
    # `make demo` sets PYTHONPATH; a plain `python3 examples/run_all.py` from a checkout finds the
    # in-tree package here instead.
    try:
        import tritium  # noqa: F401
    except ImportError:
        sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))


def _load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main():
    _ensure_tritium_importable()
    if HERE not in sys.path:  # the examples import their shared helpers (_bench.py)
        sys.path.insert(0, HERE)
    results = {}
    for name in EXAMPLES:
        print(f"== {name}")
        t0 = time.perf_counter()
        try:
            ok = bool(_load(name).main())
        except Exception:
            traceback.print_exc()
            ok = False
        results[name] = ok
        print(f"== {name}: {'PASS' if ok else 'FAIL'} ({time.perf_counter() - t0:.1f} s)\n")
    failed = [name for name, ok in results.items() if not ok]
    print(f"{len(results) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
