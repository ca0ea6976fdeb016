"""The C++ launch fast path on the GPU (marker gpu): after the first launch
of a specialisation, `kernel[grid](...)` launches from C++; results stay
right for fresh inputs, new specialisations still compile, streams and
callable grids are honoured, and mistakes still get the Python path's
errors. Outputs are poisoned with NaN before each launch. Kernels with
host TensorDescriptor arguments (the descriptor matmul of
examples/block_ptr_matmul.py) take the fast path too.
"""

import os
import sys

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu

import tritium  # noqa: E402
import tritium.language as tl  # noqa: E402
from tritium import _C as C  # noqa: E402


@tritium.jit
def axpy(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    x = tl.load(x_ptr + i, mask=m)
    y = tl.load(y_ptr + i, mask=m)
    tl.store(out_ptr + i, alpha * x + y, mask=m)


def inputs(n, dtype=torch.float32):
    x = torch.randn(n, device="cuda", dtype=dtype)
    y = torch.randn(n, device="cuda", dtype=dtype)
    out = torch.full((n,), float("nan"), device="cuda", dtype=dtype)
    return x, y, out


def check(x, y, out, alpha):
    torch.testing.assert_close(out, alpha * x + y, rtol=1e-5, atol=1e-5)


def stats():
    return C.fast_stats(axpy._fast)


def test_hits_after_first_launch_and_stays_correct():
    n, block = 1000, 256
    before = None
    for trial in range(6):
        x, y, out = inputs(n)
        alpha = 0.5 + trial
        axpy[(triton_cdiv(n, block),)](x, y, out, n, alpha, BLOCK=block)
        torch.cuda.synchronize()
        check(x, y, out, alpha)
        if trial == 0:
            before = stats()
    after = stats()
    assert after["hits"] - before["hits"] == 5
    assert after["misses"] == before["misses"]


def triton_cdiv(a, b):
    return (a + b - 1) // b


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_each_specialisation_compiles_then_hits(dtype):
    block = 128
    sizes = [1000, 1024, 1, 4099, 2 ** 20]
    for round_ in range(2):
        start = stats() if axpy._fast is not None else {"hits": 0, "misses": 0}
        for n in sizes:
            x, y, out = inputs(n, dtype)
            axpy[(triton_cdiv(n, block),)](x, y, out, n, 2.0, BLOCK=block)
            torch.cuda.synchronize()
            torch.testing.assert_close(out, 2.0 * x + y, rtol=2e-3, atol=2e-3)
        if round_ == 1:
            assert stats()["hits"] - start["hits"] == len(sizes)


def test_unaligned_view_is_its_own_specialisation():
    n, block = 4096, 128
    base = torch.randn(n + 1, device="cuda")
    x = base[1:]  # 4-byte aligned only
    _, y, out = inputs(n)
    for _ in range(2):
        out.fill_(float("nan"))
        axpy[(n // block,)](x, y, out, n, 3.0, BLOCK=block)
        torch.cuda.synchronize()
        check(x, y, out, 3.0)
        aligned = torch.randn(n, device="cuda")
        out.fill_(float("nan"))
        axpy[(n // block,)](aligned, y, out, n, 3.0, BLOCK=block)
        torch.cuda.synchronize()
        check(aligned, y, out, 3.0)


def test_callable_grid_and_keywords():
    n = 5000
    for block in (64, 64, 512, 512):
        x, y, out = inputs(n)
        axpy[lambda meta: (triton_cdiv(meta["n"], meta["BLOCK"]),)](
            alpha=1.5, BLOCK=block, n=n, out_ptr=out, y_ptr=y, x_ptr=x)
        torch.cuda.synchronize()
        check(x, y, out, 1.5)


def test_side_stream_orders_with_torch_work():
    n, block = 1 << 22, 1024
    s = torch.cuda.Stream()
    x0, y, out = inputs(n)
    axpy[(n // block,)](x0, y, out, n, 1.0, BLOCK=block)  # compiled, registered
    torch.cuda.synchronize()
    with torch.cuda.stream(s):
        x = torch.randn(n, device="cuda")  # produced on s
        out.fill_(float("nan"))
        axpy[(n // block,)](x, y, out, n, 2.0, BLOCK=block)
    s.synchronize()
    check(x, y, out, 2.0)


def test_stream_keyword():
    n, block = 1 << 16, 256
    s = torch.cuda.Stream()
    x, y, out = inputs(n)
    axpy[(n // block,)](x, y, out, n, 1.0, BLOCK=block)
    torch.cuda.synchronize()
    out.fill_(float("nan"))
    torch.cuda.synchronize()
    axpy[(n // block,)](x, y, out, n, 1.0, BLOCK=block, stream=s.cuda_stream)
    s.synchronize()
    check(x, y, out, 1.0)


def test_mistakes_after_warm_up_still_get_clear_errors():
    n, block = 1000, 128
    x, y, out = inputs(n)
    axpy[(8,)](x, y, out, n, 1.0, BLOCK=block)
    torch.cuda.synchronize()
    with pytest.raises(Exception, match="CPU tensor"):
        axpy[(8,)](x, y, out.cpu(), n, 1.0, BLOCK=block)
    with pytest.raises(ValueError, match="negative"):
        axpy[(-1,)](x, y, out, n, 1.0, BLOCK=block)
    with pytest.raises(TypeError):
        axpy[(8,)](x, y, out, n, 1.0, BLOCK=block, bogus=3)
    with pytest.raises(TypeError):
        axpy[(8,)](x, y, out, n, 1.0, "extra", BLOCK=block)


def test_zero_grid_launches_nothing():
    n, block = 1000, 128
    x, y, out = inputs(n)
    axpy[(8,)](x, y, out, n, 1.0, BLOCK=block)
    out.fill_(float("nan"))
    axpy[(0,)](x, y, out, n, 1.0, BLOCK=block)
    torch.cuda.synchronize()
    assert torch.isnan(out).all()


@tritium.autotune(configs=[tritium.Config({"BLOCK": 128}, num_warps=4),
                           tritium.Config({"BLOCK": 512}, num_warps=8)], key=["n"])
@tritium.jit
def tuned_axpy(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    tl.store(out_ptr + i, alpha * tl.load(x_ptr + i, mask=m) + tl.load(y_ptr + i, mask=m), mask=m)


def test_autotuned_launches_take_the_fast_path():
    n = 10000
    grid = lambda meta: (triton_cdiv(n, meta["BLOCK"]),)  # noqa: E731
    hits = []
    for trial in range(4):
        x, y, out = inputs(n)
        tuned_axpy[grid](x, y, out, n, 0.25 + trial)
        torch.cuda.synchronize()
        check(x, y, out, 0.25 + trial)
        hits.append(C.fast_stats(tuned_axpy.fn._fast)["hits"])
    assert hits[3] - hits[0] == 3


# -- host TensorDescriptor arguments (examples/block_ptr_matmul.py's descriptor matmul) --------

_EXAMPLES = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
if _EXAMPLES not in sys.path:
    sys.path.append(_EXAMPLES)

import block_ptr_matmul as example  # noqa: E402
import _block_ptr_kernels as K  # noqa: E402
from tritium.tools.tensor_descriptor import TensorDescriptor  # noqa: E402

# The example's GPU benchmark configuration.
EXAMPLE_CFG = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, num_warps=8, num_stages=3)


def descriptor_stats():
    return C.fast_stats(example.descriptor_matmul_kernel._fast)


@pytest.mark.parametrize("M,N,Kd", [(512, 512, 512), (300, 200, 136), (1, 64, 64)])
def test_descriptor_matmul_example_launches_from_cpp(M, N, Kd):
    """example.matmul builds three TensorDescriptors per call (into a NaN-poisoned c): after
    the first call of a shape, every call launches from C++, and fresh inputs come out right."""
    before = None
    for trial in range(4):
        a = torch.randn(M, Kd, device="cuda", dtype=torch.float16)
        b = torch.randn(Kd, N, device="cuda", dtype=torch.float16)
        c = example.matmul(a, b, True, **EXAMPLE_CFG)
        torch.cuda.synchronize()
        torch.testing.assert_close(c.float(), a.float() @ b.float(), rtol=2e-2, atol=0.3)
        if trial == 0:
            before = descriptor_stats()
    after = descriptor_stats()
    assert after["hits"] - before["hits"] == 3
    assert after["misses"] == before["misses"]


def test_persistent_descriptors_see_new_contents():
    """Descriptors made once and launched again (as a persistent kernel's caller keeps them):
    the fast path launches on the tensors' current contents."""
    M = N = Kd = 256
    a = torch.empty(M, Kd, device="cuda", dtype=torch.float16)
    b = torch.empty(Kd, N, device="cuda", dtype=torch.float16)
    c = torch.empty(M, N, device="cuda", dtype=torch.float16)
    descs = (TensorDescriptor.from_tensor(a, [128, 64]), TensorDescriptor.from_tensor(b, [64, 128]),
             TensorDescriptor.from_tensor(c, [128, 128]))
    grid = (triton_cdiv(M, 128), triton_cdiv(N, 128))
    for trial in range(3):
        a.copy_(torch.randn(M, Kd, device="cuda"))
        b.copy_(torch.randn(Kd, N, device="cuda"))
        c.fill_(float("nan"))
        example.descriptor_matmul_kernel[grid](*descs, Kd, **EXAMPLE_CFG)
        torch.cuda.synchronize()
        torch.testing.assert_close(c.float(), a.float() @ b.float(), rtol=2e-2, atol=0.3)
        if trial == 0:
            start = descriptor_stats()["hits"]
    assert descriptor_stats()["hits"] - start == 2


def test_descriptor_dtype_and_shape_changes_respecialise():
    """fp16 and bf16 operands, and shapes of other classes (divisible by 16 or not), each
    compile their own kernel through the Python path and then launch from C++."""
    kern = K.descriptor_matmul_kernel
    BM, BN, BK = 64, 64, 32
    for round_ in range(2):
        for dtype in (torch.float16, torch.bfloat16):
            for M, N, Kd in [(256, 128, 96), (200, 136, 72)]:
                a = torch.randn(M, Kd, device="cuda").to(dtype)
                b = torch.randn(Kd, N, device="cuda").to(dtype)
                c = torch.full((M, N), float("nan"), device="cuda", dtype=dtype)
                descs = [TensorDescriptor.from_tensor(a, [BM, BK]),
                         TensorDescriptor.from_tensor(b, [BK, BN]),
                         TensorDescriptor.from_tensor(c, [BM, BN])]
                kern[(triton_cdiv(M, BM), triton_cdiv(N, BN))](*descs, Kd, BM=BM, BN=BN, BK=BK)
                torch.cuda.synchronize()
                torch.testing.assert_close(c.float(), a.float() @ b.float(), rtol=2e-2,
                                           atol=0.3)
        if round_ == 0:
            first = C.fast_stats(kern._fast)
    second = C.fast_stats(kern._fast)
    assert second["hits"] - first["hits"] == 4 and second["misses"] == first["misses"]
