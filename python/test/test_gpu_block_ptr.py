"""GPU tests (marker gpu) of block pointers and tensor descriptors: ragged copies with
boundary_check and padding, 3-D blocks, the block-pointer matmul advanced along K, host and
on-device tensor descriptors. Against torch on fresh random inputs, outputs poisoned with NaN
before each launch. The kernels are those of _block_ptr_kernels.py, which the CPU tests also
compile to PTX for sm_80 and sm_90a."""

import zlib

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu

import _block_ptr_kernels as K  # noqa: E402
import tritium as triton  # noqa: E402
from tritium.tools.tensor_descriptor import TensorDescriptor  # noqa: E402

DEV = "cuda"


@pytest.fixture(autouse=True)
def _seed(request):
    torch.manual_seed(zlib.crc32(request.node.nodeid.encode()))


def poisoned(shape, dtype=torch.float32):
    return torch.full(shape, float("nan"), dtype=dtype, device=DEV)


@pytest.mark.parametrize("M,N", [(37, 21), (128, 256), (5, 300)])
@pytest.mark.parametrize("order", [(1, 0), (0, 1)])
def test_copy2d_ragged(M, N, order):
    x = torch.randn(M, N, device=DEV)
    y = poisoned((M, N))
    grid = (triton.cdiv(M, 32), triton.cdiv(N, 64))
    K.copy2d_kernel[grid](x, y, M, N, x.stride(0), x.stride(1), y.stride(0), y.stride(1),
                          BM=32, BN=64, PAD="zero", ORDER=order)
    torch.testing.assert_close(y, x + 1, rtol=0, atol=0)


def test_store_boundary_check_leaves_the_outside_alone():
    x = torch.randn(37, 21, device=DEV)
    y = poisoned((40, 40))
    K.copy2d_kernel[(2, 1)](x, y, 37, 21, 21, 1, 40, 1, BM=32, BN=32, PAD="", ORDER=(1, 0))
    torch.testing.assert_close(y[:37, :21], x + 1, rtol=0, atol=0)
    assert torch.isnan(y[37:, :]).all() and torch.isnan(y[:, 21:]).all()


@pytest.mark.parametrize("pad", ["zero", "nan"])
@pytest.mark.parametrize("om,on", [(0, 0), (-3, 5), (10, -7), (20, 20)])
def test_padding(pad, om, on):
    M, N = 13, 11
    x = torch.rand(M, N, device=DEV) + 1
    out = poisoned((16, 16))
    K.padded_block_kernel[(1,)](x, out, M, N, om, on, BM=16, BN=16, PAD=pad)
    ref = torch.full((16 + 64, 16 + 64), 0.0 if pad == "zero" else float("nan"), device=DEV)
    # x placed at (32 - om, 32 - on) of a padded canvas, then the window at (32, 32).
    ref[32 - om:32 - om + M, 32 - on:32 - on + N] = x
    torch.testing.assert_close(out, ref[32:48, 32:48], rtol=0, atol=0, equal_nan=True)


def test_copy3d():
    x = torch.randn(5, 9, 100, device=DEV)
    y = poisoned(tuple(x.shape))
    K.copy3d_kernel[(3, 3, 4)](x, y, 5, 9, 100, BA=2, BB=4, BC=32)
    torch.testing.assert_close(y, x * 2, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize("M,N,Kd", [(512, 512, 512), (300, 200, 130), (64, 1000, 77)])
@pytest.mark.parametrize("num_stages", [1, 3])
def test_block_ptr_matmul(dtype, M, N, Kd, num_stages):
    a = torch.randn(M, Kd, device=DEV).to(dtype)
    b = torch.randn(Kd, N, device=DEV).to(dtype)
    c = poisoned((M, N), dtype)
    BM, BN, BK = 64, 64, 32
    grid = (triton.cdiv(M, BM), triton.cdiv(N, BN))
    K.block_ptr_matmul_kernel[grid](a, b, c, M, N, Kd, a.stride(0), a.stride(1), b.stride(0),
                                    b.stride(1), c.stride(0), c.stride(1), BM=BM, BN=BN, BK=BK,
                                    num_stages=num_stages)
    ref = a.float() @ b.float()
    tol = 2e-2 * Kd ** 0.5 if dtype != torch.float32 else 1e-2 * Kd ** 0.5
    torch.testing.assert_close(c.float(), ref, rtol=2e-2, atol=tol)


def test_block_ptr_matmul_with_no_k():
    """K = 0 with 16-byte strides: on sm_90a A and B are TMA copies of tensors without
    elements, which the driver cannot map; the launcher maps them onto the module's fill
    element, and the product is zeros."""
    M, N = 256, 512
    a = torch.randn(M, 64, device=DEV, dtype=torch.float16)[:, :0]  # row stride 64
    b = torch.empty(0, N, device=DEV, dtype=torch.float16)
    c = poisoned((M, N), torch.float16)
    K.block_ptr_matmul_kernel[(triton.cdiv(M, 64), triton.cdiv(N, 64))](
        a, b, c, M, N, 0, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
        c.stride(1), BM=64, BN=64, BK=32, num_stages=3)
    torch.testing.assert_close(c, torch.zeros_like(c), rtol=0, atol=0)


def test_block_ptr_matmul_transposed_b():
    M, N, Kd = 256, 192, 128
    a = torch.randn(M, Kd, device=DEV, dtype=torch.float16)
    bt = torch.randn(N, Kd, device=DEV, dtype=torch.float16)
    b = bt.t()
    c = poisoned((M, N), torch.float16)
    K.block_ptr_matmul_kernel[(4, 3)](a, b, c, M, N, Kd, a.stride(0), a.stride(1), b.stride(0),
                                      b.stride(1), c.stride(0), c.stride(1), BM=64, BN=64, BK=32)
    torch.testing.assert_close(c.float(), a.float() @ b.float(), rtol=2e-2, atol=0.3)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("M,N,Kd", [(512, 256, 256), (200, 136, 96)])
def test_descriptor_matmul(dtype, M, N, Kd):
    a = torch.randn(M, Kd, device=DEV).to(dtype)
    b = torch.randn(Kd, N, device=DEV).to(dtype)
    c = poisoned((M, N), dtype)
    BM, BN, BK = 64, 64, 32
    descs = [TensorDescriptor.from_tensor(a, [BM, BK]), TensorDescriptor.from_tensor(b, [BK, BN]),
             TensorDescriptor.from_tensor(c, [BM, BN])]
    K.descriptor_matmul_kernel[(triton.cdiv(M, BM), triton.cdiv(N, BN))](*descs, Kd, BM=BM,
                                                                          BN=BN, BK=BK)
    torch.testing.assert_close(c.float(), a.float() @ b.float(), rtol=2e-2, atol=0.3)


@pytest.mark.parametrize("Kd", [96, 80])
def test_descriptor_matmul_nan_padding(Kd):
    # padding="nan" on A (a TMA copy's NaN fill on sm_90a): a ragged last K block reads NaN
    # past K, and every output element is NaN; a whole one reads none.
    M, N = 200, 136
    a = torch.randn(M, Kd, device=DEV).to(torch.float16)
    b = torch.randn(Kd, N, device=DEV).to(torch.float16)
    c = poisoned((M, N), torch.float16)
    BM, BN, BK = 64, 64, 32
    descs = [TensorDescriptor.from_tensor(a, [BM, BK], padding="nan"),
             TensorDescriptor.from_tensor(b, [BK, BN]), TensorDescriptor.from_tensor(c, [BM, BN])]
    K.descriptor_matmul_kernel[(triton.cdiv(M, BM), triton.cdiv(N, BN))](*descs, Kd, BM=BM,
                                                                          BN=BN, BK=BK)
    if Kd % BK:
        assert torch.isnan(c).all()
    else:
        torch.testing.assert_close(c.float(), a.float() @ b.float(), rtol=2e-2, atol=0.3)


def _persistent():
    import os  # noqa: PLC0415
    import sys  # noqa: PLC0415
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
    import bench_matmul_persistent  # noqa: PLC0415
    return bench_matmul_persistent


@pytest.mark.parametrize("tma", [True, False])
@pytest.mark.parametrize("M,N,Kd,cfg", [(200, 136, 160, (64, 64, 32, 4, 3)),
                                        (1000, 520, 264, (128, 128, 64, 8, 3)),
                                        (1000, 784, 520, (128, 128, 64, 4, 4)),
                                        (384, 512, 512, (128, 256, 64, 8, 4))])
def test_persistent_descriptor_matmul(tma, M, N, Kd, cfg, monkeypatch):
    # The persistent TensorDescriptor matmul (benchmarks/bench_matmul_persistent.py): B given
    # N x K and transposed in the kernel, several tiles a program, ragged edges. On sm_90a its
    # blocks are TMA copies (and masked cp.async copies with TRITIUM_DISABLE_PASSES=tma).
    if tma:
        monkeypatch.delenv("TRITIUM_DISABLE_PASSES", raising=False)
    else:
        monkeypatch.setenv("TRITIUM_DISABLE_PASSES", "tma")
    bm = _persistent()
    impl = bm.build("tritium")
    a = torch.randn(M, Kd, device=DEV).to(torch.float16)
    bt = torch.randn(N, Kd, device=DEV).to(torch.float16)
    c = poisoned((M, N), torch.float16)
    run = bm.launcher(impl, a, bt, c, cfg, 7)  # 7 programs: several tiles each
    run()
    torch.testing.assert_close(c.float(), a.float() @ bt.float().T, rtol=2e-2, atol=0.3)


@pytest.mark.parametrize("pad", ["zero", "nan"])
@pytest.mark.parametrize("M,N", [(100, 128), (37, 40)])
def test_device_descriptor(pad, M, N):
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8,
                                                                 device=DEV))
    x = torch.randn(M, N, device=DEV)
    y = poisoned((M, N))
    K.device_descriptor_kernel[(triton.cdiv(M, 32), triton.cdiv(N, 32))](x, y, M, N, BM=32,
                                                                         BN=32, PAD=pad)
    torch.testing.assert_close(y, x * 2, rtol=0, atol=0)
    triton.set_allocator(None)


@pytest.mark.parametrize("y0", [0, 40, -8])
def test_gpu_descriptor_gather_scatter(y0):
    from test_block_ptr_cpu import gather_scatter_ref  # noqa: PLC0415

    M, N, BN = 20, 48, 16
    x = torch.rand((M, N), device=DEV)
    y = poisoned((M, N))
    idx = torch.tensor([3, 0, 19, 7, 25, -2, 11, 5], dtype=torch.int32, device=DEV)
    K.gather_scatter_kernel[(1,)](x, y, idx, M, N, y0, NROWS=8, BN=BN)
    ref = gather_scatter_ref(x.cpu().numpy(), poisoned((M, N)).cpu().numpy(), idx.cpu().numpy(),
                             y0, BN)
    torch.testing.assert_close(y.cpu(), torch.from_numpy(ref), equal_nan=True)


TORCH_DTYPES = {"float16": torch.float16, "float32": torch.float32, "int8": torch.int8,
                "float64": torch.float64}


def _store_cases():
    from test_block_ptr_cpu import TMA_STORE_CASES  # noqa: PLC0415
    return [(d.__name__, bm, bn) for d, bm, bn, _ in TMA_STORE_CASES]


@pytest.mark.parametrize("dtype,BM,BN", _store_cases())
@pytest.mark.parametrize("ragged", [False, True])
def test_descriptor_store(dtype, BM, BN, ragged):
    # On sm_90a a TMA store (N divisible by 16). Ragged: the last blocks reach past M and N;
    # their elements past N would land on the next row's first ones, and the rows past M of
    # the buffer must stay as they were.
    dt = TORCH_DTYPES[dtype]
    M, N = (3 * BM + 5, 2 * BN + 16) if ragged else (2 * BM, 2 * BN)
    N = max(N, 16)
    x = (torch.rand(M, N, device=DEV) * 100).to(dt)
    big = torch.full((M + BM, N), 77, dtype=dt, device=DEV)
    y = big[:M]
    K.desc_store_kernel[(triton.cdiv(M, BM), triton.cdiv(N, BN))](x, y, M, N, BM=BM, BN=BN)
    torch.testing.assert_close(y, x + 1, rtol=0, atol=0)
    assert (big[M:] == 77).all()


def test_descriptor_store_to_a_tensor_without_elements():
    # M = 0: the launcher maps the tensor onto the kernel's fill global, which the copy must
    # not write (predicated on every dim being positive); then the same kernel with rows.
    x = torch.rand(64, 32, device=DEV)
    big = torch.full((64, 32), 77.0, device=DEV)
    K.desc_store_kernel[(1, 1)](x, big[:0], 0, 32, BM=64, BN=32)
    torch.cuda.synchronize()
    assert (big == 77).all()
    K.desc_store_kernel[(1, 1)](x, big, 64, 32, BM=64, BN=32)
    torch.testing.assert_close(big, x + 1, rtol=0, atol=0)


def test_descriptor_store_read_back():
    M, N, BM, BN = 300, 64, 64, 64
    x = torch.rand(M, N, device=DEV)
    y, z = poisoned((M, N)), poisoned((M, N))
    for _ in range(3):
        K.desc_store_readback_kernel[(triton.cdiv(M, BM),)](x, y, z, M, N, BM=BM, BN=BN)
        torch.testing.assert_close(y, x + 1, rtol=0, atol=0)
        torch.testing.assert_close(z, x + 1, rtol=0, atol=0)
        x = torch.rand(M, N, device=DEV)
