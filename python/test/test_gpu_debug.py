"""Bounds-checked GPU kernels (TRITIUM_DEBUG=1, @jit(debug=True), the launch
option debug=True): every load, store and atomic is checked against the
extent of the tensor argument it derives from, and a violation raises
OutOfBoundsError naming the kernel, the line, the program id and the offset
instead of crashing the process.

CPU tests (always): the PTX of test/target/debug/bounds_check.tir against its
BC FileCheck lines, every test/target kernel compiled with checks assembled
by ptxas for sm_80 and sm_90a, the compile metadata, the disk cache key, and
the error message built from a device record.

GPU tests (marker gpu): out-of-bounds loads, stores and atomics caught with
the right line, program id and offset; in-bounds kernels unaffected (equal to
torch); masked-off accesses out of range not reported; the process keeps
working after an error. An out-of-bounds kernel is only ever launched with
checks on."""

import glob
import os
import shutil
import struct
import subprocess
import zlib

import pytest

import tritium as triton
import tritium.language as tl
from tritium.compile_api import build_specialization
from tritium.compiler import compiler
from tritium.errors import ExecutionError, load_C
from tritium.runtime import debug

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TIR = os.path.join(REPO, "test", "target", "debug", "bounds_check.tir")
TARGETS = ("sm_80", "sm_90a")


def _line_of(marker):
    """The 1-based line of this file holding `marker` (once)."""
    with open(__file__) as f:
        lines = [i + 1 for i, text in enumerate(f) if marker in text and "_line_of" not in text]
    assert len(lines) == 1, (marker, lines)
    return lines[0]


def _filecheck():
    for d in ["/usr/lib/llvm-14/bin"] + sorted(glob.glob("/usr/lib/llvm-*/bin"), reverse=True):
        p = os.path.join(d, "FileCheck")
        if os.access(p, os.X_OK):
            return p
    return shutil.which("FileCheck")


def _kernels(module_text):
    return [line.split("@", 1)[1].split("(", 1)[0] for line in module_text.splitlines()
            if line.startswith("tt.func @") and "kernel = true" in line]


def _compile_tir(path, target, bounds_check=True):
    C = load_C()
    text = open(path).read()
    out = []
    # Memory descriptors exist only in GPU IR: those files skip the GPU passes.
    # (Only IR lines count: a FileCheck comment may name a memdesc.)
    gpu_ir = any("!ttg.memdesc" in line for line in text.splitlines()
                 if not line.lstrip().startswith("//"))
    for name in _kernels(text):
        module = C.parse_module(text, path)
        out.append(C.compile_to_ptx(module, name, target, 4, 3, bounds_check=bounds_check,
                                    gpu_ir=gpu_ir))
    return out


# ----------------------------------------------------------------------------------------------
# CPU: the PTX


def test_bounds_check_ptx_filecheck_and_ptxas():
    C = load_C()
    for target in TARGETS:
        results = _compile_tir(TIR, target)
        assert [r["name"] for r in results] == ["bc_add", "bc_loop", "bc_unknown",
                                                "bc_half_atomics", "bc_control_flow"]
        if C.ptxas_path():
            for r in results:
                cubin, _log = C.run_ptxas(r["ptx"], target, [])
                assert cubin[:4] == b"\x7fELF"
        if target == "sm_90a":
            fc = _filecheck()
            if fc is None:
                pytest.skip("FileCheck not found")
            ptx = "\n".join(r["ptx"] for r in results)
            run = subprocess.run([fc, "--check-prefix=BC", TIR], input=ptx, text=True,
                                 capture_output=True)
            assert run.returncode == 0, run.stderr


def test_bounds_check_metadata():
    by_name = {r["name"]: r for r in _compile_tir(TIR, "sm_90a")}
    add = by_name["bc_add"]
    assert add["params"] == [("ptr", "x_ptr"), ("ptr", "y_ptr"), ("ptr", "out_ptr"), ("i32", "n")]
    bc = add["bounds_check"]
    assert bc["hidden_params"] == [("u64", "extent of x_ptr"), ("u64", "extent of y_ptr"),
                                   ("u64", "extent of out_ptr"), ("u64", "extent of n"),
                                   ("ptr", "bounds record")]
    assert [(s[0], s[1], s[2]) for s in bc["sites"]] == [("load", 0, 4), ("load", 1, 4),
                                                         ("store", 2, 4)]
    assert bc["unchecked"] == 0 and bc["record_bytes"] == 32
    assert by_name["bc_loop"]["bounds_check"]["unchecked"] == 0
    flow = by_name["bc_control_flow"]["bounds_check"]
    assert flow["unchecked"] == 0
    assert [(s[0], s[1]) for s in flow["sites"]] == [("load", 0), ("store", 1)]
    unknown = by_name["bc_unknown"]["bounds_check"]
    assert unknown["unchecked"] == 2  # the int_to_ptr gather and the select of two params
    assert [(s[0], s[1]) for s in unknown["sites"]] == [("load", 0), ("store", 3)]
    atomics = by_name["bc_half_atomics"]["bounds_check"]
    assert [(s[0], s[1], s[2]) for s in atomics["sites"]] == [
        ("load", 0, 2), ("atomic", 1, 4), ("atomic", 2, 2), ("atomic", 3, 4), ("store", 0, 2)]
    # Off (the default): no hidden parameters, no checks.
    plain = load_C().compile_to_ptx(load_C().parse_module(open(TIR).read(), TIR), "bc_add",
                                    "sm_90a")
    assert "bounds_check" not in plain and "_extent_" not in plain["ptx"]
    assert "report_done" not in plain["ptx"]


def test_every_target_kernel_assembles_with_checks():
    C = load_C()
    files = sorted(glob.glob(os.path.join(REPO, "test", "target", "*.tir")))
    assert len(files) >= 8
    for path in files:
        for target in TARGETS:
            if path.endswith("_sm90.tir") and target != "sm_90a":
                continue  # sm_90 instructions: an error elsewhere (the file checks it)
            for r in _compile_tir(path, target):
                assert "bounds_check" in r
                declared = [ln for ln in r["ptx"].splitlines() if ln.startswith("\t.param ")]
                assert len(declared) == 2 * len(r["params"]) + 1, path
                if C.ptxas_path():
                    cubin, _log = C.run_ptxas(r["ptx"], target, [])
                    assert cubin[:4] == b"\x7fELF", path


@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)  # ADD-LOAD-X
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


def _add_spec():
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}
    return build_specialization(_add_kernel, sig, {"BLOCK": 1024})


def test_compile_gpu_bounds_check(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    params, key = _add_spec()
    plain = compiler.compile_gpu(_add_kernel, params, key, target="sm_80")
    checked = compiler.compile_gpu(_add_kernel, params, key, target="sm_80", bounds_check=True)
    assert "bounds_check" not in plain.metadata and "_extent_" not in plain.asm["ptx"]
    meta = checked.metadata["bounds_check"]
    assert checked.metadata["debug"] is True
    assert meta["unchecked"] == 0
    kind, param, eb, file, line, col, message, shape = meta["sites"][0]
    assert (message, shape) == ("", [])  # an assert's fields
    assert (kind, param, eb) == ("load", 0, 4)
    assert os.path.basename(file) == os.path.basename(__file__)
    assert line == _line_of("# ADD-LOAD-X") and col > 0
    # The two builds are two disk cache entries; the checked one comes back
    # from the cache with its metadata.
    again = compiler.compile_gpu(_add_kernel, params, key, target="sm_80", bounds_check=True)
    assert again.metadata["bounds_check"] == meta
    assert again.asm["ptx"] == checked.asm["ptx"]
    # The launcher's kernel takes the hidden parameters too (no driver
    # needed to build it).
    assert [tuple(p) for p in checked.gpu_kernel().params] == (
        [tuple(p) for p in checked.metadata["params"]] + [tuple(p) for p in meta["hidden_params"]])
    assert len(plain.gpu_kernel().params) == 4


def test_debug_enabled(monkeypatch):
    class Fn:
        debug = None

    monkeypatch.delenv("TRITIUM_DEBUG", raising=False)
    f = Fn()
    assert not debug.debug_enabled(f, {})
    monkeypatch.setenv("TRITIUM_DEBUG", "1")
    assert debug.debug_enabled(f, {})
    assert not debug.debug_enabled(f, {"debug": False})
    f.debug = False
    assert not debug.debug_enabled(f, {})
    monkeypatch.setenv("TRITIUM_DEBUG", "0")
    f.debug = True
    assert debug.debug_enabled(f, {})
    f.debug = None
    assert not debug.debug_enabled(f, {})
    assert debug.debug_enabled(f, {"debug": True})


def test_extent_of_arguments():
    class CAI:
        def __init__(self, shape, typestr, strides=None, data=4096):
            self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr,
                                             "data": (data, False), "strides": strides,
                                             "version": 3}

    assert debug._extent(CAI((10, 3), "<f4")) == 120
    assert debug._extent(CAI((10, 3), "<f4", strides=(4, 40))) == 9 * 4 + 2 * 40 + 4
    assert debug._extent(CAI((0,), "<f4")) == 0
    assert debug._extent(12345) == debug.UNKNOWN_EXTENT  # a bare address


# ----------------------------------------------------------------------------------------------
# CPU: the error a device record describes


def _record(count, site, pid, nbytes, offset):
    return struct.pack("<IIIIIIq", count, site, pid[0], pid[1], pid[2], nbytes, offset)


def _metadata(path, line, col, kind="load", eb=4):
    return {"params": [["ptr", "x_ptr"], ["ptr", "out_ptr"], ["i32", "n"]],
            "bounds_check": {"sites": [[kind, 0, eb, str(path), line, col],
                                       ["store", 1, eb, str(path), line + 1, 5]],
                             "hidden_params": [], "unchecked": 0, "record_bytes": 32}}


def test_bounds_error_message(tmp_path):
    src = tmp_path / "kern.py"
    src.write_text("def k(x_ptr):\n    offs = tl.arange(0, 1024)\n"
                   "    x = tl.load(x_ptr + offs)\n    tl.store(out_ptr + offs, x)\n")
    meta = _metadata(src, 3, 9)
    assert debug.bounds_error("k", meta, bytes(32), [4096, 4096, 0]) is None
    e = debug.bounds_error("k", meta, _record(1, 0, (3, 0, 0), 4, 4100), [4096, 4096, 0])
    assert isinstance(e, debug.OutOfBoundsError)
    assert isinstance(e, ExecutionError) and isinstance(e, IndexError)
    msg = str(e)
    assert msg.splitlines()[0] == (
        f"out-of-bounds load in kernel 'k' at {src}:3:9: byte offset 4100 (element 1025) of "
        "argument 'x_ptr', which reaches 4096 bytes = 1024 elements of 4 bytes; "
        "program id (3, 0, 0)")
    assert msg.splitlines()[1:] == ["    x = tl.load(x_ptr + offs)", "        ^"]
    assert (e.kernel, e.kind, e.argument, e.offset, e.extent, e.program_id) == (
        "k", "load", "x_ptr", 4100, 4096, (3, 0, 0))
    assert (e.file, e.line, e.col) == (str(src), 3, 9)
    # A 16-byte vector straddling the end names its first element outside.
    e = debug.bounds_error("k", meta, _record(1, 0, (0, 0, 0), 16, 4080), [4092, 4096, 0])
    assert e.offset == 4092 and "byte offset 4092 (element 1023)" in str(e)
    assert "which reaches 4092 bytes = 1023 elements" in str(e)
    # Below the base; more than one violation; a store; program ids on y, z.
    e = debug.bounds_error("k", meta, _record(5, 1, (0, 7, 2), 4, -4), [4096, 4096, 0])
    assert e.offset == -4 and e.kind == "store" and e.argument == "out_ptr"
    assert e.program_id == (0, 7, 2) and e.count == 5
    assert "byte offset -4 (element -1)" in str(e) and "program id (0, 7, 2)" in str(e)
    assert "4 more out-of-bounds accesses" in str(e)
    assert "    tl.store(out_ptr + offs, x)" in str(e)
    # Pickles (ExecutionError's protocol) as an ExecutionError with its text.
    import pickle  # noqa: PLC0415
    back = pickle.loads(pickle.dumps(e))
    assert isinstance(back, ExecutionError) and str(back) == str(e)


def test_bounds_error_without_source():
    meta = _metadata("", 0, 0)
    e = debug.bounds_error("k", meta, _record(1, 0, (1, 2, 3), 4, 8000), [4096, 4096, 0])
    assert "at an unknown location" in str(e) and len(str(e).splitlines()) == 1
    # An extent that is not a whole number of elements.
    e = debug.bounds_error("k", meta, _record(1, 0, (1, 2, 3), 4, 4098), [4098, 4096, 0])
    assert "byte offset 4098 of argument 'x_ptr', which reaches 4098 bytes;" in str(e)


class _FakeStorage:
    def __init__(self, address, nbytes):
        self._address, self._nbytes = address, nbytes

    def data_ptr(self):
        return self._address

    def nbytes(self):
        return self._nbytes


class _FakeTensor:
    """Just enough of a torch tensor for launch_debug (no GPU, no torch)."""

    live = {}

    def __init__(self, nbytes, address=None, storage=None):
        self.data = bytearray(nbytes)
        self.address = address if address is not None else 0x10000 + 64 * len(self.live)
        self.storage = storage or _FakeStorage(self.address, nbytes)
        _FakeTensor.live[self.address] = self

    def data_ptr(self):
        return self.address

    def untyped_storage(self):
        return self.storage

    def cpu(self):
        return self

    def tolist(self):
        return list(self.data)


def test_launch_debug_flow(monkeypatch):
    """launch_debug end to end with a fake torch, driver and kernel: the
    extents it passes, the record it reads and the error it raises."""
    import sys  # noqa: PLC0415
    import types  # noqa: PLC0415
    from tritium.runtime.launcher import PointerArg  # noqa: PLC0415

    fake = types.ModuleType("torch")
    fake.Tensor = _FakeTensor
    fake.uint8 = "uint8"
    fake.zeros = lambda n, dtype, device: _FakeTensor(n)
    capturing = [False]
    fake.cuda = types.SimpleNamespace(synchronize=lambda device: None,
                                      is_current_stream_capturing=lambda: capturing[0])
    monkeypatch.setitem(sys.modules, "torch", fake)
    monkeypatch.setattr(debug, "load_C", lambda: types.SimpleNamespace(synchronize=lambda d: None))

    launched = []

    class FakeGpuKernel:
        def launch(self, gx, gy, gz, stream, device, args, check_pointers):
            launched.append(((gx, gy, gz), list(args)))
            record = _FakeTensor.live[args[-1]]
            record.data[:] = _record(2, 1, (5, 1, 0), 16, 8176)

    class FakeKernel:
        name = "k"
        metadata = _metadata(__file__, _line_of("# ADD-LOAD-X"), 9)
        metadata["bounds_check"]["record_bytes"] = 32

        def gpu_kernel(self):
            return FakeGpuKernel()

    # x: a view 256 bytes into a 8448-byte storage; out: 8184 bytes of its own.
    base = _FakeTensor(8448)
    x = _FakeTensor(0, address=base.address + 256, storage=base.storage)
    out = _FakeTensor(8184)
    values = [PointerArg(None, x.address, 8000, "cuda", x),
              PointerArg(None, out.address, 8184, "cuda", out), 77]
    args = [x.address, out.address, 77]
    with pytest.raises(debug.OutOfBoundsError) as info:
        debug.launch_debug(FakeKernel(), (6, 2, 1), args, values, 0, 0, False)
    grid, passed = launched[0]
    assert grid == (6, 2, 1)
    assert passed[:3] == args and passed[3:6] == [8192, 8184, 0]
    e = info.value
    assert (e.kind, e.argument, e.offset, e.extent, e.program_id, e.count) == (
        "store", "out_ptr", 8184, 8184, (5, 1, 0), 2)
    # Addresses instead of tensors (GPUKernel.launch): extents unknown.
    launched.clear()
    with pytest.raises(debug.OutOfBoundsError):
        debug.launch_debug(FakeKernel(), (1, 1, 1), args, None, 0, 0, False)
    assert launched[0][1][3:6] == [debug.UNKNOWN_EXTENT, debug.UNKNOWN_EXTENT, 0]
    # Inside a CUDA-graph capture the check could not wait for the kernel: refused, unlaunched.
    launched.clear()
    capturing[0] = True
    with pytest.raises(ExecutionError, match="cannot be captured in a CUDA graph"):
        debug.launch_debug(FakeKernel(), (1, 1, 1), args, values, 0, 0, False)
    assert launched == []


# ----------------------------------------------------------------------------------------------
# GPU


@pytest.fixture
def torch_cuda():
    torch = pytest.importorskip("torch")
    torch.manual_seed(zlib.crc32(os.environ.get("PYTEST_CURRENT_TEST", "").encode()))
    return torch


@triton.jit(debug=True)
def _copy_unmasked(src, dst, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(src + offs)  # COPY-LOAD
    tl.store(dst + offs, x)  # COPY-STORE


@triton.jit(debug=True)
def _copy_rows(src, dst, BLOCK: tl.constexpr):
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst + offs, tl.load(src + offs))  # ROWS-LINE


@triton.jit(debug=True)
def _shift_left(src, dst, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(src + offs - 1)  # SHIFT-LOAD
    tl.store(dst + offs, x)


@triton.jit(debug=True)
def _bump(cnt_ptr, idx):
    tl.atomic_add(cnt_ptr + idx, 1.0)  # BUMP-ATOMIC


@triton.jit(debug=True)
def _copy_masked(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst + offs, tl.load(src + offs, mask=mask), mask=mask)


@triton.jit(debug=True)
def _row_sum(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    ptrs = x_ptr + row * n_cols + tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        m = start + tl.arange(0, BLOCK) < n_cols
        acc += tl.load(ptrs, mask=m, other=0.0)
        ptrs += BLOCK
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


@triton.jit(debug=True)
def _scale_2d(x_ptr, out_ptr, M, N, stride_xm, stride_om, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(x_ptr + rm[:, None] * stride_xm + rn[None, :], mask=mask, other=0.0)
    tl.store(out_ptr + rm[:, None] * stride_om + rn[None, :], x * 2.0 + 1.0, mask=mask)


@pytest.mark.gpu
def test_gpu_out_of_bounds_load(torch_cuda):
    torch = torch_cuda
    src = torch.randn(1023, device="cuda")
    dst = torch.full((1024,), float("nan"), device="cuda")
    with pytest.raises(debug.OutOfBoundsError) as info:
        _copy_unmasked[(1,)](src, dst, BLOCK=1024)
    e = info.value
    assert (e.kind, e.argument, e.offset, e.extent, e.program_id) == (
        "load", "src", 4092, 4092, (0, 0, 0))
    assert e.kernel == "_copy_unmasked"
    assert e.line == _line_of("# COPY-LOAD") and os.path.basename(e.file) == "test_gpu_debug.py"
    msg = str(e)
    assert "out-of-bounds load in kernel '_copy_unmasked'" in msg
    assert "byte offset 4092 (element 1023) of argument 'src'" in msg
    assert "x = tl.load(src + offs)" in msg and msg.rstrip().endswith("^")
    # The accesses in bounds ran (the vector holding element 1023 was
    # suppressed as a whole, so stop before it).
    torch.cuda.synchronize()
    assert torch.equal(dst[:1016], src[:1016])


@pytest.mark.gpu
def test_gpu_out_of_bounds_program_id(torch_cuda):
    torch = torch_cuda
    src = torch.randn(1023, device="cuda")
    dst = torch.empty(1024, device="cuda")
    with pytest.raises(debug.OutOfBoundsError) as info:
        _copy_unmasked[(4,)](src, dst, BLOCK=256)
    assert info.value.program_id == (3, 0, 0) and info.value.offset == 4092
    with pytest.raises(debug.OutOfBoundsError) as info:
        _copy_rows[(1, 4)](src, dst, BLOCK=256)
    e = info.value
    assert e.program_id == (0, 3, 0) and e.offset == 4092 and e.kind == "load"
    assert e.line == _line_of("# ROWS-LINE")


@pytest.mark.gpu
def test_gpu_out_of_bounds_store(torch_cuda):
    torch = torch_cuda
    src = torch.randn(1024, device="cuda")
    dst = torch.full((1021,), float("nan"), device="cuda")
    with pytest.raises(debug.OutOfBoundsError) as info:
        _copy_unmasked[(1,)](src, dst, BLOCK=1024)
    e = info.value
    assert (e.kind, e.argument, e.extent, e.program_id) == ("store", "dst", 4084, (0, 0, 0))
    assert e.offset in (4084, 4088, 4092)  # 4084 when the store is one 16-byte vector
    assert e.line == _line_of("# COPY-STORE")
    torch.cuda.synchronize()
    assert torch.equal(dst[:1016], src[:1016])


@pytest.mark.gpu
def test_gpu_out_of_bounds_below_base(torch_cuda):
    torch = torch_cuda
    src = torch.randn(256, device="cuda")
    dst = torch.empty(256, device="cuda")
    with pytest.raises(debug.OutOfBoundsError) as info:
        _shift_left[(1,)](src, dst, BLOCK=256)
    e = info.value
    assert (e.kind, e.argument, e.offset, e.program_id) == ("load", "src", -4, (0, 0, 0))
    assert e.line == _line_of("# SHIFT-LOAD")
    torch.cuda.synchronize()
    assert torch.equal(dst[1:], src[:255])
    assert dst[0].item() == 0.0  # the suppressed load left zero


@pytest.mark.gpu
def test_gpu_out_of_bounds_atomic(torch_cuda):
    torch = torch_cuda
    cnt = torch.zeros(10, device="cuda")
    _bump[(3,)](cnt, 9)
    torch.cuda.synchronize()
    assert cnt[9].item() == 3.0
    with pytest.raises(debug.OutOfBoundsError) as info:
        _bump[(1,)](cnt, 10)
    e = info.value
    assert (e.kind, e.argument, e.offset, e.extent) == ("atomic", "cnt_ptr", 40, 40)
    assert e.line == _line_of("# BUMP-ATOMIC")
    torch.cuda.synchronize()
    assert cnt.sum().item() == 3.0


@pytest.mark.gpu
@pytest.mark.parametrize("n", [1, 1000, 4096, 100_003])
def test_gpu_masked_off_accesses_not_reported(torch_cuda, n):
    torch = torch_cuda
    src = torch.randn(n, device="cuda")
    dst = torch.full((n,), float("nan"), device="cuda")
    _copy_masked[(triton.cdiv(n, 1024),)](src, dst, n, BLOCK=1024)
    torch.cuda.synchronize()
    assert torch.equal(dst, src)


@pytest.mark.gpu
def test_gpu_in_bounds_kernels_unaffected(torch_cuda):
    torch = torch_cuda
    x = torch.randn(37, 1000, device="cuda")
    out = torch.full((37,), float("nan"), device="cuda")
    _row_sum[(37,)](x, out, 1000, BLOCK=128)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x.sum(dim=1), rtol=1e-4, atol=1e-3)
    # A view: the extent runs to the end of the storage, so a strided 2-D
    # block inside it is in bounds.
    big = torch.randn(300, 200, device="cuda")
    view = big[5:, 3:]
    res = torch.full((295, 197), float("nan"), device="cuda")
    grid = (triton.cdiv(295, 32), triton.cdiv(197, 64))
    _scale_2d[grid](view, res, 295, 197, view.stride(0), res.stride(0), BM=32, BN=64)
    torch.cuda.synchronize()
    torch.testing.assert_close(res, view * 2.0 + 1.0)


@pytest.mark.gpu
def test_gpu_process_survives_and_record_resets(torch_cuda):
    torch = torch_cuda
    src = torch.randn(1023, device="cuda")
    dst = torch.empty(1024, device="cuda")
    for _ in range(2):  # the record is fresh for every launch
        with pytest.raises(debug.OutOfBoundsError):
            _copy_unmasked[(1,)](src, dst, BLOCK=1024)
    ok_src = torch.randn(1024, device="cuda")
    ok_dst = torch.full((1024,), float("nan"), device="cuda")
    _copy_unmasked[(1,)](ok_src, ok_dst, BLOCK=1024)
    torch.cuda.synchronize()
    assert torch.equal(ok_dst, ok_src)
    assert torch.equal(ok_src + 1, ok_src + 1)  # torch's own kernels still run


def _fresh_copy_kernel():
    """A new @jit function (no specialisation cached, nothing registered with
    the fast launch path), without debug=."""
    @triton.jit
    def copy_plain(src, dst, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(dst + offs, tl.load(src + offs))  # PLAIN-LINE
    return copy_plain


@pytest.mark.gpu
def test_gpu_debug_from_environment(torch_cuda, monkeypatch):
    torch = torch_cuda
    monkeypatch.setenv("TRITIUM_DEBUG", "1")
    k = _fresh_copy_kernel()
    src = torch.randn(255, device="cuda")
    dst = torch.empty(256, device="cuda")
    with pytest.raises(debug.OutOfBoundsError) as info:
        k[(1,)](src, dst, BLOCK=256)
    assert info.value.offset == 1020 and info.value.line == _line_of("# PLAIN-LINE")


@pytest.mark.gpu
def test_gpu_debug_launch_option(torch_cuda, monkeypatch):
    torch = torch_cuda
    monkeypatch.delenv("TRITIUM_DEBUG", raising=False)
    k = _fresh_copy_kernel()
    src = torch.randn(255, device="cuda")
    dst = torch.empty(256, device="cuda")
    with pytest.raises(debug.OutOfBoundsError) as info:
        k[(1,)](src, dst, BLOCK=256, debug=True)
    assert info.value.offset == 1020
    # In bounds, the same function without debug runs the plain build.
    ok = torch.randn(256, device="cuda")
    k[(1,)](ok, dst, BLOCK=256)
    torch.cuda.synchronize()
    assert torch.equal(dst, ok)
    plain = k.warmup(ok, dst, BLOCK=256, grid=(1,))
    assert "bounds_check" not in plain.metadata
