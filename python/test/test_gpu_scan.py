"""GPU tests (marker gpu) of tl.cumsum / tl.cumprod / tl.associative_scan and tl.reduce with a
combine function, against torch: the kernels of _scan_kernels.py on CUDA tensors, 1-D to 3-D
blocks along every axis, with 1, 4 and 8 warps (registers, lanes and warps splitting the axis),
reverse, tuple inputs. Outputs are poisoned (NaN or a sentinel) before each launch. The CPU
counterparts are in test_scan_cpu.py; test_scan_ptx.py assembles the same PTX without a GPU."""

import zlib

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu

from _scan_kernels import (  # noqa: E402
    SHAPES, argmax_reduce_kernel, cumsum_dtype_kernel, linear_recurrence_kernel, out_dims,
    reduce_kernel, scan_kernel, scan_ref, sort_flip_kernel,
)

DEV = "cuda"


@pytest.fixture(autouse=True)
def _seed(request):
    torch.manual_seed(zlib.crc32(request.node.nodeid.encode()))


def poisoned(shape, dtype):
    if isinstance(shape, int):
        shape = (shape,)
    if dtype.is_floating_point:
        return torch.full(shape, float("nan"), dtype=dtype, device=DEV)
    return torch.full(shape, torch.iinfo(dtype).max - 5, dtype=dtype, device=DEV)


def _dims(shape):
    s = list(shape) + [1] * (3 - len(shape))
    return dict(A=s[0], B=s[1], C=s[2], RANK=len(shape))


def _check(out, ref, rtol=1e-5):
    # np.ascontiguousarray makes a 0-d result (a reduction over every axis) 1-d.
    ref = torch.as_tensor(np.ascontiguousarray(ref)).to(out.device).reshape(out.shape)
    if out.dtype.is_floating_point:
        scale = max(1.0, float(ref.double().abs().max()))
        torch.testing.assert_close(out.double(), ref.double(), rtol=rtol, atol=rtol * scale)
    else:
        assert torch.equal(out.cpu(), ref.cpu().to(out.dtype)), (out, ref)


TORCH = {"fp32": torch.float32, "fp16": torch.float16, "i32": torch.int32, "i8": torch.int8,
         "i64": torch.int64}


@pytest.mark.parametrize("num_warps", [1, 4, 8])
@pytest.mark.parametrize("shape,axis", [(s, a) for s in SHAPES for a in range(len(s))], ids=str)
@pytest.mark.parametrize("op,dtype", [("cumsum", "fp32"), ("assoc_max", "i32"), ("cumprod", "fp16"),
                                      ("assoc_add", "i8"), ("cumsum", "i64")], ids=str)
@pytest.mark.parametrize("reverse", [False, True])
def test_scan(shape, axis, op, dtype, num_warps, reverse):
    t = TORCH[dtype]
    if t.is_floating_point:
        x = torch.randn(shape, device=DEV).to(t)
        if op == "cumprod":
            x = (1.0 + 0.05 * torch.randn(shape, device=DEV)).to(t)
    else:
        x = torch.randint(-3, 4, shape, device=DEV).to(t)
    out_t = torch.int32 if (op == "cumsum" and dtype == "i8") else t
    y = poisoned(shape, out_t)
    scan_kernel[(1,)](x, y, AXIS=axis, OP=op, REVERSE=reverse, num_warps=num_warps, **_dims(shape))
    ref = scan_ref(op, x.cpu().numpy(), axis, reverse)
    _check(y, ref, rtol=2e-2 if dtype == "fp16" else 1e-5)


@pytest.mark.parametrize("num_warps", [1, 4, 8])
@pytest.mark.parametrize("shape,axis", [(s, a) for s in SHAPES for a in range(len(s))], ids=str)
@pytest.mark.parametrize("reverse", [False, True])
def test_linear_recurrence(shape, axis, reverse, num_warps):
    a = 0.5 + 0.5 * torch.rand(shape, device=DEV)
    b = torch.randn(shape, device=DEV)
    oa, ob = poisoned(shape, torch.float32), poisoned(shape, torch.float32)
    linear_recurrence_kernel[(1,)](a, b, oa, ob, AXIS=axis, REVERSE=reverse, num_warps=num_warps,
                                   **_dims(shape))
    ra, rb = scan_ref("recurrence", (a.cpu().numpy(), b.cpu().numpy()), axis, reverse)
    _check(oa, ra, 1e-4)
    _check(ob, rb, 1e-4)


@pytest.mark.parametrize("num_warps", [1, 4, 8])
@pytest.mark.parametrize("shape,axis", [(s, a) for s in SHAPES for a in list(range(len(s))) + [None]],
                         ids=str)
def test_reduce_combine(shape, axis, num_warps):
    x = torch.randint(-50, 51, shape, device=DEV).to(torch.float32)  # exact sums
    ref = x.sum() if axis is None else x.sum(axis)
    out = poisoned(max(ref.numel(), 1), torch.float32)
    reduce_kernel[(1,)](x, out, AXIS=axis, num_warps=num_warps, **_dims(shape),
                        **out_dims(tuple(ref.shape)))
    _check(out.reshape(ref.shape), ref.cpu().numpy())


@pytest.mark.parametrize("num_warps", [1, 4, 8])
@pytest.mark.parametrize("shape,axis", [(s, a) for s in SHAPES for a in range(len(s))], ids=str)
def test_reduce_tuple_argmax(shape, axis, num_warps):
    x = torch.randint(-20, 20, shape, device=DEV).to(torch.float32)  # many ties
    v_ref = x.amax(axis)
    i_ref = torch.from_numpy(np.asarray(x.cpu().numpy().argmax(axis=axis)).astype(np.int32))
    ov, oi = poisoned(v_ref.numel(), torch.float32), poisoned(v_ref.numel(), torch.int32)
    stride = int(np.prod(shape[axis + 1:]))
    argmax_reduce_kernel[(1,)](x, ov, oi, AXIS=axis, STRIDE=stride, SIZE=shape[axis],
                               num_warps=num_warps, **_dims(shape), **out_dims(tuple(v_ref.shape)))
    assert torch.equal(ov.reshape(v_ref.shape), v_ref)
    assert torch.equal(oi.reshape(v_ref.shape).cpu(), i_ref)


def test_cumsum_promotes_int8_and_bool():
    x = torch.full((64,), 100, dtype=torch.int8, device=DEV)
    y = poisoned((64,), torch.int32)
    cumsum_dtype_kernel[(1,)](x, y, N=64)
    assert torch.equal(y.cpu(), torch.cumsum(x.cpu().to(torch.int32), 0).to(torch.int32))


@pytest.mark.parametrize("num_warps", [1, 4])
@pytest.mark.parametrize("shape", [(128,), (16, 32), (4, 8, 16)], ids=str)
@pytest.mark.parametrize("dtype", [torch.float32, torch.int8], ids=str)
@pytest.mark.parametrize("descending", [False, True])
def test_sort(shape, dtype, descending, num_warps):
    x = (torch.randn(shape, device=DEV) * 30).to(dtype)
    y = poisoned(shape, dtype)
    sort_flip_kernel[(1,)](x, y, OP="sort", DIM=len(shape) - 1, DESCENDING=descending,
                           num_warps=num_warps, **_dims(shape))
    assert torch.equal(y, torch.sort(x, dim=-1, descending=descending).values)


@pytest.mark.parametrize("num_warps", [1, 4])
@pytest.mark.parametrize("shape,dim", [((128,), 0), ((16, 32), 0), ((16, 32), 1), ((4, 8, 16), 1)],
                         ids=str)
def test_flip(shape, dim, num_warps):
    x = torch.randn(shape, device=DEV)
    y = poisoned(shape, torch.float32)
    sort_flip_kernel[(1,)](x, y, OP="flip", DIM=dim, DESCENDING=False, num_warps=num_warps,
                           **_dims(shape))
    assert torch.equal(y, torch.flip(x, [dim]))


@pytest.mark.parametrize("axis", [0, 1, None])
def test_reduce_keep_dims(axis):
    from _scan_kernels import reduce_keep_dims_kernel
    x = torch.randn((32, 64), device=DEV)
    out = poisoned((32, 64), torch.float32)
    reduce_keep_dims_kernel[(1,)](x, out, A=32, B=64, AXIS=axis)
    ref = x - (x.amax() if axis is None else x.amax(axis, keepdim=True))
    assert torch.equal(out, ref)
