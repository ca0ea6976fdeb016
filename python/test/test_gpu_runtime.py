"""GPU tests of the runtime alone (marker gpu): driver loading, module load
(cubin through ptxas, and PTX through the driver's JIT), argument packing,
dynamic shared memory, streams and the launch errors, with hand-written PTX
kernels so that they do not depend on the compiler.

Outputs are poisoned with NaN (or a sentinel) before each launch; inputs are
fresh random values."""

import struct

import pytest

import _ptx_samples as S

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu

from tritium.errors import load_C  # noqa: E402


@pytest.fixture(scope="module")
def C():
    C = load_C()
    ok, why = C.cuda_available()
    if not ok:
        pytest.fail(f"torch sees a GPU but tritium's driver loader does not: {why}")
    return C


@pytest.fixture(scope="module")
def target(C):
    major, minor = C.device_capability(0)
    return "sm_90a" if (major, minor) == (9, 0) else f"sm_{major}{minor}"


def make_kernel(C, body, params, target, name, use_ptxas, shared=0, num_warps=4):
    ptx = S.ptx(body, target)
    if use_ptxas:
        if C.ptxas_path() is None:
            pytest.skip("no ptxas")
        cubin, log = C.run_ptxas(ptx, target, [])
        assert cubin[:4] == b"\x7fELF"
        return C.GpuKernel(name, cubin, True, target, num_warps, shared, params)
    return C.GpuKernel(name, ptx.encode(), False, target, num_warps, shared, params)


def stream0():
    return torch.cuda.current_stream().cuda_stream


@pytest.mark.parametrize("use_ptxas", [True, False], ids=["cubin", "driver-jit"])
@pytest.mark.parametrize("n", [1, 1000, 4096, 1 << 20, (1 << 20) + 3])
def test_axpy(C, target, use_ptxas, n):
    k = make_kernel(C, S.AXPY, S.AXPY_PARAMS, target, "axpy", use_ptxas)
    a = torch.randn(n, device="cuda")
    b = torch.randn(n, device="cuda")
    out = torch.full((n,), float("nan"), device="cuda")
    alpha = 1.7
    grid = (n + 127) // 128
    k.launch(grid, 1, 1, stream0(), 0, [a, b, out, n, alpha])  # tensors via data_ptr()
    torch.cuda.synchronize()
    ref = torch.addcmul(b, a, torch.tensor(alpha, device="cuda"))
    torch.testing.assert_close(out, ref, rtol=1e-6, atol=1e-6)
    # integer addresses are accepted too
    out.fill_(float("nan"))
    k.launch(grid, 1, 1, stream0(), 0, [a.data_ptr(), b.data_ptr(), out.data_ptr(), n, alpha])
    torch.cuda.synchronize()
    torch.testing.assert_close(out, ref, rtol=1e-6, atol=1e-6)


def test_attributes(C, target):
    k = make_kernel(C, S.AXPY, S.AXPY_PARAMS, target, "axpy", False)
    attrs = k.attributes(0)
    assert 0 < attrs["num_regs"] <= 255
    assert attrs["max_threads_per_block"] >= 128
    props = C.device_properties(0)
    assert props["multiprocessors"] > 0
    assert props["max_shared_memory_per_block_optin"] >= props["max_shared_memory_per_block"]


@pytest.mark.parametrize("use_ptxas", [True, False], ids=["cubin", "driver-jit"])
def test_argument_packing(C, target, use_ptxas):
    k = make_kernel(C, S.PACK, S.PACK_PARAMS, target, "pack", use_ptxas, num_warps=1)
    out = torch.full((64,), 0xAB, dtype=torch.uint8, device="cuda")
    vals = [-123456789, -(2 ** 40) - 5, 4_000_000_000, 2 ** 63 + 11, 3.25, -1.0e300, True]
    k.launch(1, 1, 1, stream0(), 0, [out] + vals)
    torch.cuda.synchronize()
    raw = bytes(out.cpu().tolist())
    a, = struct.unpack_from("<i", raw, 0)
    b, = struct.unpack_from("<q", raw, 8)
    c, = struct.unpack_from("<I", raw, 16)
    d, = struct.unpack_from("<Q", raw, 24)
    e, = struct.unpack_from("<f", raw, 32)
    f, = struct.unpack_from("<d", raw, 40)
    g, = struct.unpack_from("<I", raw, 48)
    assert (a, b, c, d, e, f, g) == (vals[0], vals[1], vals[2], vals[3], 3.25, -1.0e300, 1)


@pytest.mark.parametrize("nbytes", [1024, 48 * 1024, 100 * 1024, 200 * 1024])
def test_dynamic_shared_memory(C, target, nbytes):
    optin = C.device_properties(0)["max_shared_memory_per_block_optin"]
    if nbytes > optin:
        pytest.skip(f"device allows {optin} bytes")
    k = make_kernel(C, S.SMEM_REVERSE, S.SMEM_REVERSE_PARAMS, target, "smem_reverse", True,
                    shared=nbytes, num_warps=8)
    out = torch.full((256,), -1, dtype=torch.int32, device="cuda")
    k.launch(1, 1, 1, stream0(), 0, [out, nbytes])
    torch.cuda.synchronize()
    assert out.cpu().tolist() == list(range(255, -1, -1))


def test_too_much_shared_memory(C, target):
    optin = C.device_properties(0)["max_shared_memory_per_block_optin"]
    k = make_kernel(C, S.SMEM_REVERSE, S.SMEM_REVERSE_PARAMS, target, "smem_reverse", False,
                    shared=optin + 1024, num_warps=8)
    out = torch.zeros(256, dtype=torch.int32, device="cuda")
    with pytest.raises(C.CudaError, match="shared memory"):
        k.launch(1, 1, 1, stream0(), 0, [out, optin + 1024])


def test_cpu_tensor_rejected(C, target):
    k = make_kernel(C, S.AXPY, S.AXPY_PARAMS, target, "axpy", False)
    a = torch.randn(100, device="cuda")
    cpu = torch.randn(100)
    with pytest.raises(C.CudaError, match="not GPU memory"):
        k.launch(1, 1, 1, stream0(), 0, [a, cpu, a, 100, 1.0])


@pytest.mark.parametrize("grid", [(0, 1, 1), (1, 0, 1), (-3, 1, 1), (1, 1, 1 << 20)])
def test_bad_grid(C, target, grid):
    k = make_kernel(C, S.AXPY, S.AXPY_PARAMS, target, "axpy", False)
    a = torch.randn(16, device="cuda")
    with pytest.raises(C.CudaError, match="grid"):
        k.launch(*grid, stream0(), 0, [a, a, a, 16, 1.0])


def test_wrong_target(C, target):
    # A cubin for another major architecture is refused with a clear message.
    other = "sm_80" if not target.startswith("sm_8") else "sm_90a"
    if C.ptxas_path() is None:
        pytest.skip("no ptxas")
    cubin, _ = C.run_ptxas(S.ptx(S.AXPY, other), other, [])
    k = C.GpuKernel("axpy", cubin, True, other, 4, 0, S.AXPY_PARAMS)
    with pytest.raises(C.CudaError, match="compiled for " + other):
        k.load(0)


def test_side_stream(C, target):
    # A launch on torch's current (side) stream is ordered with torch's work there.
    k = make_kernel(C, S.AXPY, S.AXPY_PARAMS, target, "axpy", True)
    n = 1 << 22
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        a = torch.randn(n, device="cuda")
        b = torch.randn(n, device="cuda")
        out = torch.full((n,), float("nan"), device="cuda")
        k.launch((n + 127) // 128, 1, 1, torch.cuda.current_stream().cuda_stream, 0,
                 [a, b, out, n, 2.0])
        res = out * 1.0  # queued behind the kernel on the same stream
    s.synchronize()
    torch.testing.assert_close(res, 2.0 * a + b)


def test_launch_overhead_reasonable(C, target):
    # Not a timing assertion: 2000 back-to-back launches complete and agree.
    k = make_kernel(C, S.AXPY, S.AXPY_PARAMS, target, "axpy", True)
    a = torch.randn(256, device="cuda")
    out = torch.full((256,), float("nan"), device="cuda")
    st = stream0()
    for _ in range(2000):
        k.launch(2, 1, 1, st, 0, [a, a, out, 256, 1.0], False)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, 2 * a)
