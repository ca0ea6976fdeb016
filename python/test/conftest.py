"""pytest setup for tritium's Python tests.

- Puts <repo>/python first on sys.path, so `import tritium` works without
  PYTHONPATH (the in-tree build writes tritium/_C*.so there).
- Registers the marker `gpu` (needs an NVIDIA GPU) and skips gpu-marked tests
  when torch with CUDA is not available.  Run them with `pytest -m gpu`.
"""

import os
import sys

import pytest

_PYTHON_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
if _PYTHON_DIR not in sys.path:
    sys.path.insert(0, _PYTHON_DIR)

# Every compile in the test suite checks that print(parse(print(ir))) equals
# print(ir), before and after the pipeline, and verifies after every pass.
os.environ.setdefault("TRITIUM_CHECK_ROUNDTRIP", "1")


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs an NVIDIA GPU")


_gpu_reason = None


def _gpu_unavailable_reason():
    """None when a CUDA GPU is usable through torch, else why not (cached)."""
    global _gpu_reason
    if _gpu_reason is None:
        try:
            import torch
        except Exception:  # ImportError, or a broken install
            _gpu_reason = "needs an NVIDIA GPU (torch is not installed)"
        else:
            try:
                ok = torch.cuda.is_available()
            except Exception:
                ok = False
            _gpu_reason = "" if ok else "needs an NVIDIA GPU (torch.cuda is not available)"
    return _gpu_reason or None


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    # trylast: `-m "not gpu"` has already deselected, so torch is only imported
    # when gpu tests are actually going to run.
    gpu_items = [item for item in items if item.get_closest_marker("gpu")]
    if not gpu_items:
        return
    reason = _gpu_unavailable_reason()
    if reason:
        skip = pytest.mark.skip(reason=reason)
        for item in gpu_items:
            item.add_marker(skip)
