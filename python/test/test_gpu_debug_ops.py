"""tl.device_print, tl.device_assert and tl.inline_asm_elementwise on the GPU
(marker gpu; the kernels are in _debug_ops_kernels.py, their PTX is checked
without a GPU in test_debug_ops_ptx.py).

- device_print: the kernel runs in a subprocess (vprintf's buffer reaches
  stdout when the device synchronises) once on CUDA tensors and once on CPU
  tensors (the executor); the GPU prints the executor's lines, each element
  once, whatever the layout.
- device_assert: with debug=True a false element raises DeviceAssertionError
  naming the kernel's line, the message, the element and the program id, and
  the process goes on working; without debug the assert is removed.
- inline_asm_elementwise: results against torch on fresh random inputs
  (outputs poisoned first), for 1, 4 and 8 warps."""

import os
import re
import subprocess
import sys
import zlib

import pytest

import _debug_ops_kernels as K
from tritium.runtime import debug

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.abspath(os.path.join(HERE, ".."))

pytestmark = pytest.mark.gpu


@pytest.fixture
def torch():
    torch = pytest.importorskip("torch")
    torch.manual_seed(zlib.crc32(os.environ.get("PYTEST_CURRENT_TEST", "").encode()))
    return torch


def _line_of(marker):
    with open(K.__file__) as f:
        lines = [i + 1 for i, text in enumerate(f) if marker in text]
    assert len(lines) == 1, (marker, lines)
    return lines[0]


# ---- device_print --------------------------------------------------------------------------

_PRINT_SCRIPT = r"""
import ctypes
import sys
sys.path[:0] = [{here!r}, {python_dir!r}]
import torch
import _debug_ops_kernels as K

device, cases, num_warps = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3])
dtypes = {{"bool": torch.bool, "int8": torch.int8, "uint8": torch.uint8, "int16": torch.int16,
          "int32": torch.int32, "int64": torch.int64, "float16": torch.float16,
          "bfloat16": torch.bfloat16, "float32": torch.float32, "float64": torch.float64}}
libc = ctypes.CDLL(None)
# Every case in one process (a process per case cost seconds of torch import each); a
# marker line, after the device synchronised, separates one case's output from the next.
for case in cases:
    print("=== " + case, flush=True)
    kind, _, dtype = case.partition(":")
    if kind in ("dec", "hex"):
        n = 256
        t = dtypes[dtype]
        if t == torch.bool:
            x = torch.arange(n) % 3 == 0
        elif t.is_floating_point:
            x = ((torch.arange(n) - n // 2) * 0.25).to(t)
        elif t == torch.int64:
            x = torch.arange(n, dtype=t) * (2 ** 33 + 7) - 2 ** 40
        else:
            info = torch.iinfo(t)
            x = torch.arange(n, dtype=torch.int64).remainder(info.max - info.min + 1).add(info.min)
            x = x.to(t)
        K.print_1d[(1,)](x.to(device), BLOCK=n, HEX=kind == "hex", num_warps=num_warps)
    elif kind == "2d":
        r, c = (int(v) for v in dtype.split("x"))
        x = torch.arange(r * c, dtype=torch.float32).reshape(r, c) * 0.5 - 3
        K.print_2d[(2, 1, 1)](x.to(device), R=r, C=c, num_warps=num_warps)
    elif kind == "scalars":
        x = torch.tensor([1.5, -0.75, 8.0], dtype=torch.float16)
        K.print_scalars[(3,)](x.to(device), 2 ** 40 + 3, num_warps=num_warps)
    if device == "cuda":
        torch.cuda.synchronize()
    # The driver's printf buffer and the executor's prints go through C stdio, buffered on
    # a pipe: flushed here, before the next case's marker.
    libc.fflush(None)
    sys.stdout.flush()
"""


def _printed(device, cases, num_warps, tmp_path):
    """{case: sorted "pid (" lines} of running `cases` in one subprocess."""
    script = tmp_path / "print_case.py"
    script.write_text(_PRINT_SCRIPT.format(here=HERE, python_dir=PYTHON_DIR))
    r = subprocess.run([sys.executable, str(script), device, ",".join(cases), str(num_warps)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    out, case = {c: [] for c in cases}, None
    for line in r.stdout.splitlines():
        if line.startswith("=== "):
            case = line[4:]
        elif line.startswith("pid ("):
            out[case].append(line)
    return {c: sorted(lines) for c, lines in out.items()}


PRINT_CASES = ([f"dec:{d}" for d in ("bool", "int8", "uint8", "int16", "int32", "int64",
                                     "float16", "bfloat16", "float32", "float64")]
               + [f"hex:{d}" for d in ("int8", "int16", "int32", "int64", "float16",
                                       "float32")]
               + ["2d:4x8", "2d:16x32", "2d:2x2"])


@pytest.fixture(scope="module")
def printed(tmp_path_factory):
    """(device, num_warps) -> {case: lines}, each pair run once, on first use."""
    runs = {}

    def get(device, num_warps):
        if (device, num_warps) not in runs:
            runs[device, num_warps] = _printed(device, PRINT_CASES, num_warps,
                                               tmp_path_factory.mktemp("print"))
        return runs[device, num_warps]
    return get


@pytest.mark.parametrize("num_warps", [1, 4])
@pytest.mark.parametrize("case", PRINT_CASES)
def test_gpu_device_print_matches_executor(case, num_warps, printed, torch):
    gpu = printed("cuda", num_warps)[case]
    cpu = printed("cpu", num_warps)[case]
    assert gpu, "the GPU printed nothing"
    assert gpu == cpu  # the same lines, each element once


def test_gpu_device_print_scalars_and_pointer(tmp_path, torch):
    gpu = _printed("cuda", ["scalars"], 4, tmp_path)["scalars"]
    cpu = _printed("cpu", ["scalars"], 4, tmp_path)["scalars"]
    # One line per program for each scalar print (thread 0 only).
    strip = [line for line in gpu if " ptr " not in line]
    assert strip == [line for line in cpu if " ptr " not in line]
    assert len(strip) == 3 * 4
    assert "pid (2, 0, 0) pid and n (operand 1) 1099511627779" in strip
    assert "pid (1, 0, 0) first -0.75" in strip and "pid (0, 0, 0) 100% done" in strip
    pointers = [line for line in gpu if " ptr " in line]
    assert len(pointers) == 3 and all(re.fullmatch(r"pid \(\d, 0, 0\) ptr 0x[0-9a-f]+", p)
                                      for p in pointers)


# ---- device_assert -------------------------------------------------------------------------


def test_gpu_device_assert_raises_in_debug_builds(torch):
    x = torch.arange(1024, device="cuda", dtype=torch.int32)
    y = torch.full_like(x, -1)
    K.assert_below[(4,)](x, y, 2000, BLOCK=256, debug=True)  # holds everywhere
    assert torch.equal(y, x + 1)
    with pytest.raises(debug.DeviceAssertionError) as info:
        K.assert_below[(4,)](x, y, 700, BLOCK=256, debug=True)
    e = info.value
    assert (e.kernel, e.assert_message) == ("assert_below", "x must stay below the limit")
    assert e.line == _line_of("# ASSERT-LINE") and os.path.basename(e.file) == \
        "_debug_ops_kernels.py"
    assert e.count == 1024 - 700  # every false element counted, the first described
    element = int(re.search(r"\(element \((\d+)\)\)", str(e)).group(1))
    assert e.program_id[1:] == (0, 0) and e.program_id[0] * 256 + element >= 700
    assert "tl.device_assert(x < limit" in str(e)
    # The context survives: the next launch runs and computes.
    y.fill_(-1)
    K.assert_below[(4,)](x, y, 5000, BLOCK=256, debug=True)
    assert torch.equal(y, x + 1)


def test_gpu_device_assert_2d_names_the_element(torch):
    x = torch.rand(8, 16, device="cuda")
    x[3, 5] = -1.0
    with pytest.raises(debug.DeviceAssertionError, match=r"negative entry \(element \(3, 5\)\), "
                                                         r"program id \(0, 0, 0\)") as info:
        K.assert_2d[(1,)](x, R=8, C=16, debug=True)
    assert info.value.line == _line_of("# ASSERT-2D") and info.value.count == 1


def test_gpu_device_assert_removed_without_debug(torch, monkeypatch):
    monkeypatch.delenv("TRITIUM_DEBUG", raising=False)
    x = torch.arange(1024, device="cuda", dtype=torch.int32)
    y = torch.full_like(x, -1)
    K.assert_below[(4,)](x, y, 10, BLOCK=256)  # false almost everywhere: not checked
    torch.cuda.synchronize()
    assert torch.equal(y, x + 1)


def test_gpu_device_assert_from_environment(torch, monkeypatch):
    # The specialisation test_gpu_device_assert_removed_without_debug installed on the fast
    # launch path does not serve a launch under TRITIUM_DEBUG=1 (it takes the slow path).
    monkeypatch.setenv("TRITIUM_DEBUG", "1")
    x = torch.arange(1024, device="cuda", dtype=torch.int32)
    y = torch.empty_like(x)
    with pytest.raises(debug.DeviceAssertionError):
        K.assert_below[(4,)](x, y, 100, BLOCK=256)


# ---- inline_asm_elementwise ----------------------------------------------------------------

N, BLOCK = 4096, 1024
WARPS = [1, 4, 8]


@pytest.mark.parametrize("num_warps", WARPS)
def test_gpu_inline_asm_shift(num_warps, torch):
    x = torch.randint(-2 ** 20, 2 ** 20, (N,), device="cuda", dtype=torch.int32)
    y = torch.full_like(x, -1)
    K.asm_shift[(N // BLOCK,)](x, y, BLOCK=BLOCK, num_warps=num_warps)
    assert torch.equal(y, x * 8)


@pytest.mark.parametrize("num_warps", WARPS)
def test_gpu_inline_asm_bit_field(num_warps, torch):
    x = torch.randint(-2 ** 31, 2 ** 31 - 1, (N,), device="cuda", dtype=torch.int32)
    y = torch.full_like(x, -1)
    K.asm_field[(N // BLOCK,)](x, y, BLOCK=BLOCK, num_warps=num_warps)
    assert torch.equal(y, (x >> 4) & 0xFF)


@pytest.mark.parametrize("num_warps", WARPS)
def test_gpu_inline_asm_int8_pack4(num_warps, torch):
    a = torch.randint(-128, 128, (N,), device="cuda", dtype=torch.int8)
    b = torch.randint(-128, 128, (N,), device="cuda", dtype=torch.int8)
    y = torch.full_like(a, 99)
    K.asm_xor_bytes[(N // BLOCK,)](a, b, y, BLOCK=BLOCK, num_warps=num_warps)
    assert torch.equal(y, a ^ b)
    f = torch.full((N,), float("nan"), device="cuda")
    K.asm_bytes_to_float[(N // BLOCK,)](a, f, BLOCK=BLOCK, num_warps=num_warps)
    assert torch.equal(f, a.float())


@pytest.mark.parametrize("num_warps", WARPS)
def test_gpu_inline_asm_fp16_pairs(num_warps, torch):
    a, b, c = (torch.randn(N, device="cuda", dtype=torch.float16) for _ in range(3))
    y = torch.full_like(a, float("nan"))
    K.asm_half_pairs[(N // BLOCK,)](a, b, c, y, BLOCK=BLOCK, num_warps=num_warps)
    torch.testing.assert_close(y, (a.float() * b.float() + c.float()).half())


@pytest.mark.parametrize("num_warps", WARPS)
def test_gpu_inline_asm_two_results(num_warps, torch):
    x = torch.randint(-2 ** 30, 2 ** 30, (N,), device="cuda", dtype=torch.int32)
    lo, hi = torch.full_like(x, -1), torch.full_like(x, -1)
    K.asm_two_results[(N // BLOCK,)](x, lo, hi, BLOCK=BLOCK, num_warps=num_warps)
    assert torch.equal(lo, x + 7) and torch.equal(hi, x - 7)


def test_debug_barrier_orders_the_target_store():
    """Liger-Kernel's cross-entropy pattern on 4096 rows of 32000: each row's target element
    holds the scalar stored after tl.debug_barrier(), never the row store it overwrites (before
    the barrier was emitted, 13 to 27 rows of Liger's 4096 kept the row's value)."""
    import torch  # noqa: PLC0415

    rows, n = 4096, 32000
    x = torch.ones((rows, n), device="cuda")
    y = torch.randint(0, n, (rows,), device="cuda", dtype=torch.int32)
    K.row_then_target_kernel[(rows,)](x, y, n, BLOCK=4096, num_warps=8)
    got = x[torch.arange(rows, device="cuda"), y.long()]
    assert torch.equal(got, torch.full_like(got, -1.0)), int((got != -1).sum())
    x[torch.arange(rows, device="cuda"), y.long()] = 2.0
    assert torch.equal(x, torch.full_like(x, 2.0))
