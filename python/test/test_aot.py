"""python -m tritium.tools.compile (ahead-of-time, Triton's AOT arguments): the PTX, cubin and the
C launcher it writes. Without a GPU the C code is compiled (not run) against a stand-in cuda.h
that declares the driver API calls it uses, with their CUDA signatures; on the GPU machine the
same output links against the real driver (see the README)."""

import os
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = os.path.join(HERE, "..")

KERNEL = '''
import tritium as triton
import tritium.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)
'''

CUDA_H = '''
#include <stddef.h>
typedef int CUresult;
#define CUDA_SUCCESS 0
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef unsigned long long CUdeviceptr;
typedef enum { CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8 } CUfunction_attribute;
CUresult cuModuleLoadData(CUmodule *module, const void *image);
CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name);
CUresult cuModuleUnload(CUmodule hmod);
CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value);
CUresult cuLaunchKernel(CUfunction f, unsigned gridDimX, unsigned gridDimY, unsigned gridDimZ,
                        unsigned blockDimX, unsigned blockDimY, unsigned blockDimZ,
                        unsigned sharedMemBytes, CUstream hStream, void **kernelParams,
                        void **extra);
'''

MAIN_CPP = '''
#include "add.h"
int main() {
  if (add_load() != CUDA_SUCCESS) return 1;
  CUresult r = add(nullptr, 0, 0, 0, 4096);
  add_unload();
  return r == CUDA_SUCCESS ? 0 : 2;
}
'''


def _run_tool(tmp_path, *extra):
    (tmp_path / "kern.py").write_text(KERNEL)
    env = dict(os.environ, PYTHONPATH=PYTHON + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "tritium.tools.compile", str(tmp_path / "kern.py"),
                           "--kernel-name", "add_kernel", "--target", "sm_90a",
                           "-o", str(tmp_path / "out"), *extra],
                          env=env, capture_output=True, text=True, timeout=300)


def test_aot_writes_ptx_cubin_and_a_c_launcher(tmp_path):
    r = _run_tool(tmp_path, "--signature", "*fp32:16, *fp32:16, *fp32:16, i32, 1024",
                  "--grid", "(n + 1023) / 1024, 1, 1", "--out-name", "add")
    assert r.returncode == 0, r.stderr[-3000:]
    out = tmp_path / "out"
    ptx = (out / "add.ptx").read_text()
    assert ".entry add_kernel(" in ptx and ".target sm_90a" in ptx
    header, source = (out / "add.h").read_text(), (out / "add.c").read_text()
    assert ("CUresult add(CUstream stream, CUdeviceptr x_ptr, CUdeviceptr y_ptr, "
            "CUdeviceptr out_ptr, int32_t n);") in header
    assert "(unsigned)((n + 1023) / 1024)" in source and "cuLaunchKernel" in source
    if shutil.which("/usr/local/cuda/bin/ptxas") or shutil.which("ptxas"):
        assert (out / "add.cubin").stat().st_size > 0
    cc, cxx = shutil.which("gcc") or shutil.which("cc"), shutil.which("g++") or shutil.which("c++")
    if not cc or not cxx:
        pytest.skip("no C/C++ compiler")
    stub = tmp_path / "stub"
    stub.mkdir()
    (stub / "cuda.h").write_text(CUDA_H)
    (out / "main.cpp").write_text(MAIN_CPP)
    # The sanitizer job preloads the ASan runtime into every process; a native compiler must
    # not get it (its leak report at exit hangs the pipe).
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    for tool, src in ((cc, "add.c"), (cxx, "main.cpp")):
        c = subprocess.run([tool, "-std=c11" if src.endswith(".c") else "-std=c++17", "-Wall",
                            "-Werror", "-c", "-I", str(stub), "-I", str(out), str(out / src),
                            "-o", str(out / (src + ".o"))], capture_output=True, text=True,
                           env=env, timeout=300)
        assert c.returncode == 0, c.stderr


def test_aot_signature_errors(tmp_path):
    r = _run_tool(tmp_path, "--signature", "*fp32:16, *fp32:16, i32, 1024", "--grid", "1,1,1")
    assert r.returncode != 0 and "has 4 entries, the kernel 5 parameters" in r.stderr
    r = _run_tool(tmp_path, "--signature", "*fp32:16, *fp32:16, *fp32:16, q32, 1024",
                  "--grid", "1,1,1")
    assert r.returncode != 0 and "unknown type 'q32'" in r.stderr
