"""GPU tests of the launcher's TMA tensor maps (marker gpu, sm_90): a hand-written PTX kernel
(_ptx_samples.TMA_TILE) copies one box of a tensor through the tensor map the launcher encodes
from the launch's arguments, so that the encoding (dims, byte strides, box, swizzle, NaN fill),
the map's place among the parameters (after the kernel's own, before a hidden one) and the
re-encoding when the arguments change are checked against torch, independently of the
compiler. Outputs are poisoned before each launch; inputs are fresh random values."""

import pytest

import _ptx_samples as S

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu

from tritium.errors import load_C  # noqa: E402

FLOAT32 = 7  # CUtensorMapDataType
MARKER = 0x0123456789ABCDEF


@pytest.fixture(scope="module")
def C():
    C = load_C()
    ok, why = C.cuda_available()
    if not ok:
        pytest.fail(f"torch sees a GPU but tritium's driver loader does not: {why}")
    if C.device_capability(0) != (9, 0):
        pytest.skip("TMA tensor maps need an sm_90 GPU")
    if C.ptxas_path() is None:
        pytest.skip("no ptxas")
    return C


@pytest.fixture(scope="module")
def cubin(C):
    cubin, _ = C.run_ptxas(S.ptx(S.TMA_TILE, "sm_90a"), "sm_90a", [])
    return cubin


@pytest.fixture(scope="module")
def cubin_without_fill(C):
    cubin, _ = C.run_ptxas(S.ptx(S.TMA_TILE_BODY, "sm_90a"), "sm_90a", [])
    return cubin


def tma_kernel(C, cubin, rows, cols, swizzle=0, nan_fill=False, k_const=None):
    """TMA_TILE with one fp32 map of a (an [M, K] matrix, row stride stride_am), box
    [rows, cols]; K by argument, or the constant k_const."""
    k = (-1, k_const) if k_const is not None else (2, 0)
    spec = [0, 2, 1, 0, *k, 3, 0, -1, 1, rows, cols, 4, FLOAT32, swizzle, int(nan_fill)]
    return C.GpuKernel("tma_tile", cubin, True, "sm_90a", 4, 0, S.TMA_TILE_PARAMS,
                       tensor_maps=[spec], tensor_maps_at=len(S.TMA_TILE_PARAMS) - 1)


def run_box(k, a, x, y, rows, cols):
    """The box at column x, row y of `a` as the kernel saw it in shared memory, [rows, cols]."""
    nbytes = rows * cols * 4
    out = torch.full((rows * cols + 2,), float("nan"), device="cuda")
    out.view(torch.int32)[-2:] = -1
    k.launch(1, 1, 1, torch.cuda.current_stream().cuda_stream, 0,
             [a, a.shape[0], a.shape[1], a.stride(0), out, x, y, nbytes, MARKER])
    torch.cuda.synchronize()
    assert out[-2:].view(torch.int64).item() == MARKER  # the hidden parameter, after the map
    return out[:-2].view(rows, cols)


def expected_box(a, x, y, rows, cols, fill):
    want = torch.full((rows, cols), fill, device="cuda")
    part = a[y:y + rows, x:x + cols]
    want[:part.shape[0], :part.shape[1]] = part
    return want


@pytest.mark.parametrize("nan_fill", [False, True], ids=["zero-fill", "nan-fill"])
def test_a_box_of_a_strided_matrix_with_out_of_bounds_fill(C, cubin, nan_fill):
    k = tma_kernel(C, cubin, 8, 16, nan_fill=nan_fill)
    a = torch.randn(20, 48, device="cuda")[:, :40]  # row stride 48 elements (192 bytes)
    fill = float("nan") if nan_fill else 0.0
    for x, y in ((0, 0), (16, 8), (32, 16)):  # the last box is partly out of bounds
        got = run_box(k, a, x, y, 8, 16)
        torch.testing.assert_close(got, expected_box(a, x, y, 8, 16, fill), equal_nan=True)


def test_the_map_follows_each_launchs_arguments(C, cubin):
    """Another tensor (address, shape, stride) re-encodes the map; the first one's comes back."""
    k = tma_kernel(C, cubin, 8, 16)
    a = torch.randn(20, 40, device="cuda")
    b = torch.randn(64, 96, device="cuda")[3:40, 4:68]  # 16-byte aligned: 3*96+4 floats in
    for t, x, y in ((a, 32, 16), (b, 48, 32), (a, 32, 16), (b, 0, 0)):
        got = run_box(k, t, x, y, 8, 16)
        torch.testing.assert_close(got, expected_box(t, x, y, 8, 16, 0.0))


def test_a_constant_dim(C, cubin):
    """K as the spec's constant: the argument is ignored."""
    k = tma_kernel(C, cubin, 8, 16, k_const=24)
    a = torch.randn(16, 40, device="cuda")
    got = run_box(k, a, 16, 0, 8, 16)
    torch.testing.assert_close(got, expected_box(a[:, :24], 16, 0, 8, 16, 0.0))


def test_128_byte_swizzle(C, cubin):
    """Rows of 128 bytes: 16-byte chunk j of shared-memory row r holds chunk j ^ (r % 8)."""
    k = tma_kernel(C, cubin, 8, 32, swizzle=128)
    a = torch.randn(64, 64, device="cuda")
    got = run_box(k, a, 32, 8, 8, 32).view(8, 8, 4)
    box = a[8:16, 32:64].reshape(8, 8, 4)
    want = torch.stack([box[r, [j ^ r for j in range(8)]] for r in range(8)])
    torch.testing.assert_close(got, want)


def test_bad_values_fail_before_the_launch(C, cubin):
    k = tma_kernel(C, cubin, 8, 16)
    a = torch.randn(20, 10, device="cuda")  # rows of 40 bytes
    with pytest.raises(C.CudaError, match="stride 0 \\(argument 'stride_am'\\) is 40 bytes"):
        run_box(k, a, 0, 0, 8, 16)
    storage = torch.randn(400, device="cuda")
    with pytest.raises(C.CudaError, match="the base 'a' is 0x[0-9a-f]+, not 16-byte aligned"):
        run_box(k, storage[1:321].view(20, 16), 0, 0, 8, 16)


@pytest.mark.parametrize("nan_fill", [False, True], ids=["zero-fill", "nan-fill"])
@pytest.mark.parametrize("shape", [(20, 0), (0, 40), (0, 0)])
def test_a_tensor_without_elements_reads_the_fill_value(C, cubin, nan_fill, shape):
    """The driver refuses a dim of 0: the launcher maps the tensor onto the module's fill element,
    so that the box reads as wholly out of bounds."""
    k = tma_kernel(C, cubin, 8, 16, nan_fill=nan_fill)
    fill = float("nan") if nan_fill else 0.0
    for a in (torch.empty(shape, device="cuda"), torch.randn(64, 64, device="cuda")[:shape[0], :shape[1]]):
        got = run_box(k, a, 0, 0, 8, 16)
        torch.testing.assert_close(got, torch.full((8, 16), fill, device="cuda"), equal_nan=True)
    # and a tensor with elements after it reads its own again
    a = torch.randn(20, 40, device="cuda")
    torch.testing.assert_close(run_box(k, a, 16, 8, 8, 16), expected_box(a, 16, 8, 8, 16, 0.0))


def test_a_tensor_without_elements_needs_the_fill_global(C, cubin_without_fill):
    k = tma_kernel(C, cubin_without_fill, 8, 16)
    with pytest.raises(C.CudaError, match="the tensor has no elements, and the kernel's module "
                                          "declares no 'tritium_tma_fill'"):
        run_box(k, torch.empty(20, 0, device="cuda"), 0, 0, 8, 16)
