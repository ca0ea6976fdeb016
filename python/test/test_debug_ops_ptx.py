"""tl.device_print, tl.device_assert and tl.inline_asm_elementwise without a GPU:
their PTX for sm_80 and sm_90a assembled by ptxas (every printable dtype, hex,
1-D and 2-D layouts, 1/4/8 warps), the debug build's assert sites and the
error a device record of a failed assert becomes, the frontend's checks of
inline asm, and the CPU executor's refusal of it. test/target/debug/*.tir
pins the PTX patterns; test_gpu_debug_ops.py runs the kernels."""

import os
import re
import shutil
import struct
import subprocess

import numpy as np
import pytest

import tritium
import tritium.language as tl
from tritium.errors import CompilationError, ExecutionError
from tritium.runtime import debug

import _debug_ops_kernels as K

PTXAS = shutil.which("ptxas") or ("/usr/local/cuda/bin/ptxas"
                                  if os.path.exists("/usr/local/cuda/bin/ptxas") else None)
TARGETS = ("sm_80", "sm_90a")
needs_ptxas = pytest.mark.skipif(PTXAS is None, reason="ptxas not installed")


def _line_of(marker, path=K.__file__):
    with open(path) as f:
        lines = [i + 1 for i, text in enumerate(f) if marker in text]
    assert len(lines) == 1, (marker, lines)
    return lines[0]


def _compile(kernel, sig, constexprs=None, target="sm_90a", num_warps=4, debug_build=False):
    return tritium.compile(kernel, signature=sig, constexprs=constexprs or {}, target=target,
                           num_warps=num_warps, use_cache=False, debug=debug_build)


def _ptxas(ptx, target, tmp_path):
    path = os.path.join(str(tmp_path), f"k_{target}.ptx")
    with open(path, "w") as f:
        f.write(ptx)
    r = subprocess.run([PTXAS, f"-arch={target}", path, "-o", path + ".cubin"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr + "\n" + ptx


def _assemble(kernel, sig, constexprs=None, num_warps=4, debug_build=False, tmp_path=None):
    """Compiles for both targets and assembles with ptxas; the sm_90a kernel."""
    out = None
    for target in TARGETS:
        out = _compile(kernel, sig, constexprs, target, num_warps, debug_build)
        _ptxas(out.asm["ptx"], target, tmp_path)
    return out


# ---- device_print ------------------------------------------------------------------------

PRINT_DTYPES = ["i1", "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "fp8e4nv", "fp8e5",
                "fp16", "bf16", "fp32", "fp64"]


@needs_ptxas
@pytest.mark.parametrize("hex_", [False, True])
@pytest.mark.parametrize("dtype", PRINT_DTYPES)
def test_print_1d_assembles(dtype, hex_, tmp_path):
    if dtype.startswith("fp8") and not hex_:
        # Widening fp8 to print it as a float needs sm_89's cvt (as any fp8
        # cast does); its bits print everywhere.
        with pytest.raises(CompilationError, match="converting from fp8 needs sm_89 or newer"):
            _compile(K.print_1d, {"x_ptr": "*" + dtype}, {"BLOCK": 256, "HEX": False},
                     target="sm_80")
        k = _compile(K.print_1d, {"x_ptr": "*" + dtype}, {"BLOCK": 256, "HEX": False})
        assert k.asm["ptx"].count("call (vprintf_ret), vprintf") == 2
        _ptxas(k.asm["ptx"], "sm_90a", tmp_path)
        return
    k = _assemble(K.print_1d, {"x_ptr": "*" + dtype}, {"BLOCK": 256, "HEX": hex_},
                  tmp_path=tmp_path)
    ptx = k.asm["ptx"]
    assert ".extern .func (.param .b32 func_retval0) vprintf" in ptx
    # 256 elements over 128 threads: two calls per thread, no owner test.
    assert ptx.count("call (vprintf_ret), vprintf") == 2
    assert "print_skip" not in ptx


@needs_ptxas
@pytest.mark.parametrize("num_warps", [1, 4, 8])
@pytest.mark.parametrize("shape", [(2, 2), (2, 8), (16, 32), (64, 4)])
def test_print_2d_assembles(shape, num_warps, tmp_path):
    r, c = shape
    k = _assemble(K.print_2d, {"x_ptr": "*fp32"}, {"R": r, "C": c}, num_warps=num_warps,
                  tmp_path=tmp_path)
    ptx = k.asm["ptx"]
    threads = 32 * num_warps
    # Two values per line; a thread holding copies of other threads'
    # elements skips them.
    assert ptx.count("call (vprintf_ret), vprintf") == 2 * max(r * c // threads, 1)
    if r * c < threads:
        assert "print_skip" in ptx


@needs_ptxas
def test_print_scalars_assembles(tmp_path):
    k = _assemble(K.print_scalars, {"x_ptr": "*fp16", "n": "i64"}, tmp_path=tmp_path)
    ptx = k.asm["ptx"]
    # Scalars print from thread 0: pid and n (two operands), the load, the
    # pointer, and the text alone.
    assert ptx.count("call (vprintf_ret), vprintf") == 5
    fmt = [ln for ln in ptx.splitlines() if ln.startswith(".global .align 1 .b8 print_scalars_fmt")]
    texts = []
    for ln in fmt:
        codes = ln.split("{", 1)[1].rstrip("};").split(",")
        texts.append(bytes(int(c) for c in codes[:-1]).decode())
    assert texts == [
        "pid (%u, %u, %u) pid and n (operand 0) %d\n",
        "pid (%u, %u, %u) pid and n (operand 1) %lld\n",
        "pid (%u, %u, %u) first %g\n",
        "pid (%u, %u, %u) ptr 0x%llx\n",
        "pid (%u, %u, %u) 100%% done\n",
    ]


# ---- device_assert -----------------------------------------------------------------------


@needs_ptxas
@pytest.mark.parametrize("num_warps", [1, 4])
def test_assert_assembles_and_records_sites(num_warps, tmp_path):
    k = _assemble(K.assert_below, {"x_ptr": "*i32", "y_ptr": "*i32", "limit": "i32"},
                  {"BLOCK": 512}, num_warps=num_warps, debug_build=True, tmp_path=tmp_path)
    sites = k.metadata["bounds_check"]["sites"]
    asserts = [s for s in sites if s[0] == "assert"]
    assert len(asserts) == 1
    kind, param, eb, file, line, col, message, shape = asserts[0]
    assert (param, eb, message, shape) == (-1, 0, "x must stay below the limit", [512])
    assert os.path.basename(file) == "_debug_ops_kernels.py"
    assert line == _line_of("# ASSERT-LINE") and col > 0
    # One report per element of the thread (512 / threads of them), after
    # the load's and the store's access checks.
    site = sites.index(asserts[0])
    reports = re.findall(r"st\.global\.u32 \[%rd\d+\+4\], " + str(site) + ";", k.asm["ptx"])
    assert len(reports) == 512 // (32 * num_warps)


@needs_ptxas
def test_assert_2d_python_assert_statement(tmp_path):
    k = _assemble(K.assert_2d, {"x_ptr": "*fp32"}, {"R": 8, "C": 16}, debug_build=True,
                  tmp_path=tmp_path)
    (site,) = [s for s in k.metadata["bounds_check"]["sites"] if s[0] == "assert"]
    assert site[4] == _line_of("# ASSERT-2D") and site[6:] == ["negative entry", [8, 16]]


def test_assert_removed_without_debug():
    plain = _compile(K.assert_below, {"x_ptr": "*i32", "y_ptr": "*i32", "limit": "i32"},
                     {"BLOCK": 512})
    assert "tt.assert" in plain.asm["gir"]  # in the IR, as in Triton's ...
    assert "atom.global" not in plain.asm["ptx"]  # ... but not checked without debug
    assert "bounds_check" not in plain.metadata


def _assert_metadata(file, line, col, message, shape):
    return {"params": [["ptr", "x_ptr"]],
            "bounds_check": {"sites": [["load", 0, 4, file, line - 1, 9, "", []],
                                       ["assert", -1, 0, file, line, col, message, shape]],
                             "hidden_params": [], "unchecked": 0, "record_bytes": 32}}


def test_assert_error_from_record(tmp_path):
    src = tmp_path / "kern.py"
    src.write_text("def k(x_ptr):\n    x = tl.load(x_ptr + offs)\n"
                   "    tl.device_assert(x < 3, 'small')\n")
    meta = _assert_metadata(str(src), 3, 5, "small", [4, 8])
    raw = struct.pack("<IIIIIIq", 3, 1, 2, 1, 0, 0, 19)  # element 19 = (2, 3)
    e = debug.bounds_error("k", meta, raw, [4096])
    assert isinstance(e, debug.DeviceAssertionError)
    assert isinstance(e, ExecutionError) and isinstance(e, AssertionError)
    lines = str(e).splitlines()
    assert lines[0] == (f"device assertion failed in kernel 'k' at {src}:3:5: small "
                        "(element (2, 3)), program id (2, 1, 0); 2 more failures (false "
                        "elements or out-of-bounds accesses) were suppressed")
    assert lines[1:] == ["    tl.device_assert(x < 3, 'small')", "    ^"]
    assert (e.kernel, e.assert_message, e.program_id, e.count) == ("k", "small", (2, 1, 0), 3)
    assert (e.file, e.line, e.col) == (str(src), 3, 5)
    # A scalar condition, no message, one failure, no source.
    meta = _assert_metadata("", 0, 0, "", [])
    e = debug.bounds_error("k", meta, struct.pack("<IIIIIIq", 1, 1, 0, 0, 0, 0, 0), [4096])
    assert str(e) == ("device assertion failed in kernel 'k' at an unknown location: "
                      "assertion, program id (0, 0, 0)")


# ---- inline_asm_elementwise -------------------------------------------------------------


@needs_ptxas
@pytest.mark.parametrize("num_warps", [1, 4])
@pytest.mark.parametrize("case", ["shift", "field", "xor_bytes", "bytes_to_float", "half_pairs",
                                  "two_results"])
def test_inline_asm_assembles(case, num_warps, tmp_path):
    kernel, sig = {
        "shift": (K.asm_shift, {"x_ptr": "*i32", "y_ptr": "*i32"}),
        "field": (K.asm_field, {"x_ptr": "*u32", "y_ptr": "*u32"}),
        "xor_bytes": (K.asm_xor_bytes, {"a_ptr": "*i8", "b_ptr": "*i8", "y_ptr": "*i8"}),
        "bytes_to_float": (K.asm_bytes_to_float, {"a_ptr": "*i8", "y_ptr": "*fp32"}),
        "half_pairs": (K.asm_half_pairs, {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16",
                                          "y_ptr": "*fp16"}),
        "two_results": (K.asm_two_results, {"x_ptr": "*i32", "lo_ptr": "*i32",
                                            "hi_ptr": "*i32"}),
    }[case]
    k = _assemble(kernel, sig, {"BLOCK": 1024}, num_warps=num_warps, tmp_path=tmp_path)
    assert "tt.elementwise_inline_asm" in k.asm["gir"]
    calls = k.asm["ptx"].count("\n\t{\n")
    per_thread = 1024 // (32 * num_warps)
    pack = {"xor_bytes": 4, "bytes_to_float": 4, "half_pairs": 2}.get(case, 1)
    assert calls == -(-per_thread // pack)


def test_inline_asm_ir_round_trip():
    k = _compile(K.asm_two_results, {"x_ptr": "*i32", "lo_ptr": "*i32", "hi_ptr": "*i32"},
                 {"BLOCK": 128})
    (line,) = [ln for ln in k.asm["tir"].splitlines() if "tt.elementwise_inline_asm" in ln]
    assert 'constraints = "=r,=r,r,r"' in line and "pack = 1" in line
    assert "pure = false" in line and line.rstrip().endswith(
        ": tensor<128xi32>, tensor<128xi32>")


@tritium.jit
def _asm_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr, ASM: tl.constexpr, CONSTRAINTS: tl.constexpr,
                DTYPE: tl.constexpr, PACK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs, tl.inline_asm_elementwise(ASM, CONSTRAINTS, [x], DTYPE, True, PACK))


def _asm_constexprs(asm, constraints, dtype, pack):
    return {"BLOCK": 64, "ASM": asm, "CONSTRAINTS": constraints, "DTYPE": dtype, "PACK": pack}


@pytest.mark.parametrize("asm,constraints,elem,pack,message", [
    ("mov.b32 $0, $1;", "=r,r,r", "i32", 1,
     "the constraints name 2 input register(s), the arguments need 1 (with pack=1)"),
    ("mov.b32 $0, $1;", "=r,=r,r", "i8", 4,
     "the constraints name 2 output register(s), the result dtypes need 1 (with pack=4)"),
    ("mov.b32 $0, $1;", "=r,h", "fp16", 1,
     "constraint '=r' of $0 names a register of another width: it holds 1 element(s) in "
     "16 bit(s); use 'h' (or 'c')"),
    ("mov.b32 $0, $1;", "=q,r", "i32", 1, "constraint '=q' of $0 names an unknown register kind"),
    ("mov.b32 $0, $1;", "=r,r", "i8", 3,
     "pack=3 does not split into whole registers of 8-bit elements"),
    ("mov.b32 $0, $1;", "=r,r", "i32", 0, "pack must be between 1 and 64, got 0"),
    ("mov.b32 $0, $1;", "r,=r", "i32", 1, "constraint '=r': outputs (=) must come before inputs"),
])
def test_inline_asm_frontend_errors(asm, constraints, elem, pack, message):
    dtype = {"i32": tl.int32, "i8": tl.int8, "fp16": tl.float16}[elem]
    with pytest.raises(CompilationError) as info:
        _compile(_asm_kernel, {"x_ptr": "*" + elem, "y_ptr": "*" + elem},
                 _asm_constexprs(asm, constraints, dtype, pack))
    assert "tl.inline_asm_elementwise: " + message in str(info.value)
    assert "tl.inline_asm_elementwise(ASM" in str(info.value)  # the line, with its caret


def test_inline_asm_names_an_operand_it_lacks():
    with pytest.raises(CompilationError, match=r"the asm names \$2, but its constraints give 2 "
                                               r"operand\(s\)"):
        _compile(_asm_kernel, {"x_ptr": "*i32", "y_ptr": "*i32"},
                 _asm_constexprs("add.s32 $0, $1, $2;", "=r,r", tl.int32, 1))


def test_inline_asm_pure_result_unused_is_removed():
    @tritium.jit
    def k(x_ptr, BLOCK: tl.constexpr, PURE: tl.constexpr):
        x = tl.load(x_ptr + tl.arange(0, BLOCK))
        tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], tl.int32, PURE, 1)

    pure = _compile(k, {"x_ptr": "*i32"}, {"BLOCK": 64, "PURE": True})
    impure = _compile(k, {"x_ptr": "*i32"}, {"BLOCK": 64, "PURE": False})
    assert "tt.elementwise_inline_asm" not in pure.asm["tir"]
    assert "tt.elementwise_inline_asm" in impure.asm["tir"]
    assert "\t{\nmov.b32 %r" in impure.asm["ptx"] and "\t{\n" not in pure.asm["ptx"]


def test_inline_asm_refused_by_cpu_executor():
    x = np.arange(64, dtype=np.int32)
    y = np.zeros_like(x)
    with pytest.raises(ExecutionError) as info:
        K.asm_shift[(1,)](x, y, BLOCK=64)
    msg = str(info.value)
    assert "tl.inline_asm_elementwise at " in msg and "needs a GPU" in msg
    assert f"_debug_ops_kernels.py:{_line_of('# SHIFT')}:" in msg


def test_device_print_on_cpu_matches_gpu_format(capfd):
    """The CPU executor's lines, which the GPU's vprintf formats reproduce
    (test_gpu_debug_ops.py compares the two on a GPU)."""
    x = np.array([[1.5, -2.0], [0.25, 3.0]], dtype=np.float32)
    K.print_2d[(1,)](x, R=2, C=2)
    out = sorted(capfd.readouterr().out.splitlines())
    assert out == [
        "pid (0, 0, 0) idx (0, 0) v: (operand 0) 1.5",
        "pid (0, 0, 0) idx (0, 0) v: (operand 1) 0",
        "pid (0, 0, 0) idx (0, 1) v: (operand 0) -2",
        "pid (0, 0, 0) idx (0, 1) v: (operand 1) 1",
        "pid (0, 0, 0) idx (1, 0) v: (operand 0) 0.25",
        "pid (0, 0, 0) idx (1, 0) v: (operand 1) 1",
        "pid (0, 0, 0) idx (1, 1) v: (operand 0) 3",
        "pid (0, 0, 0) idx (1, 1) v: (operand 1) 2",
    ]


def test_debug_barrier_is_a_barrier():
    """tl.debug_barrier() is a gpu.barrier in the IR and a bar.sync between the row's stores and
    the scalar store in the PTX (sm_80 and sm_90a); on the CPU executor the kernel computes what
    the program order says."""
    sig = {"x_ptr": "*fp32", "y_ptr": "*i32", "n": "i32", "BLOCK": "constexpr"}
    for target in TARGETS:
        k = _compile(K.row_then_target_kernel, sig, {"BLOCK": 128}, target=target)
        assert "gpu.barrier" in k.asm["tir"]
        ptx = k.asm["ptx"]
        last_row_store = ptx.rindex("st.global", 0, ptx.index("bar.sync"))
        assert ptx.index("bar.sync") > last_row_store
        assert "st.global" in ptx[ptx.index("bar.sync"):], "the scalar store after the barrier"
    x = np.ones((4, 300), np.float32)
    y = np.array([3, 150, 299, 0], np.int32)
    K.row_then_target_kernel[(4,)](x, y, 300, BLOCK=128)
    want = np.full((4, 300), 2.0, np.float32)
    want[np.arange(4), y] = -1.0
    np.testing.assert_array_equal(x, want)
