"""Block pointers (tl.make_block_ptr, tl.advance, boundary_check, padding_option) and tensor
descriptors (tl.make_tensor_descriptor, the host TensorDescriptor) on the CPU executor, against
numpy; their errors; and the GPU kernels of test_gpu_block_ptr.py compiled to PTX for sm_80 and
sm_90a (assembled with ptxas when it is installed)."""

import inspect
import os
import re
import sys

import numpy as np
import pytest

import tritium
import tritium as triton
import tritium.language as tl
from tritium.compiler import compiler as _compiler
from tritium.tools.tensor_descriptor import TensorDescriptor

import _block_ptr_kernels as K

THIS_FILE = os.path.abspath(__file__)
rng = np.random.default_rng(0)


def _poisoned(shape, dtype=np.float32):
    return np.full(shape, np.nan, dtype)


# ---------------------------------------------------------------------------
# block pointers
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("M,N", [(37, 21), (32, 32), (5, 70)])
@pytest.mark.parametrize("order", [(1, 0), (0, 1)])
def test_copy2d_ragged(M, N, order):
    x = rng.random((M, N), dtype=np.float32)
    y = _poisoned((M, N))
    grid = (triton.cdiv(M, 16), triton.cdiv(N, 16))
    K.copy2d_kernel[grid](x, y, M, N, N, 1, N, 1, BM=16, BN=16, PAD="zero", ORDER=order)
    np.testing.assert_array_equal(y, x + 1)


def test_copy2d_column_major_strides():
    x = np.asfortranarray(rng.random((29, 19), dtype=np.float32))
    y = np.asfortranarray(_poisoned((29, 19)))
    K.copy2d_kernel[(2, 2)](x, y, 29, 19, 1, 29, 1, 29, BM=16, BN=16, PAD="", ORDER=(0, 1))
    np.testing.assert_array_equal(y, x + 1)


def test_store_boundary_check_leaves_the_outside_alone():
    # y is a 40x40 buffer of which the kernel sees a 37x21 tensor (row stride 40):
    # the blocks that overhang the edges store nothing outside it.
    x = rng.random((37, 21), dtype=np.float32)
    y = _poisoned((40, 40))
    K.copy2d_kernel[(3, 2)](x, y, 37, 21, 21, 1, 40, 1, BM=16, BN=16, PAD="zero", ORDER=(1, 0))
    np.testing.assert_array_equal(y[:37, :21], x + 1)
    assert np.isnan(y[37:, :]).all() and np.isnan(y[:, 21:]).all()


@pytest.mark.parametrize("pad", ["zero", "nan"])
@pytest.mark.parametrize("om,on", [(0, 0), (-3, 5), (10, -7), (20, 20)])
def test_padding(pad, om, on):
    M, N = 13, 11
    x = rng.random((M, N), dtype=np.float32) + 1
    out = _poisoned((16, 16))
    K.padded_block_kernel[(1,)](x, out, M, N, om, on, BM=16, BN=16, PAD=pad)
    fill = 0.0 if pad == "zero" else np.nan
    ref = np.full((16, 16), fill, np.float32)
    for i in range(16):
        for j in range(16):
            r, c = om + i, on + j
            if 0 <= r < M and 0 <= c < N:
                ref[i, j] = x[r, c]
    np.testing.assert_array_equal(out, ref)


def test_padding_on_integers():
    x = np.arange(40, dtype=np.int32).reshape(5, 8)
    out = np.full((16, 16), -1, np.int32)
    K.padded_block_kernel[(1,)](x, out, 5, 8, 0, 0, BM=16, BN=16, PAD="zero")
    ref = np.zeros((16, 16), np.int32)
    ref[:5, :8] = x
    np.testing.assert_array_equal(out, ref)


def test_copy3d():
    x = rng.random((5, 9, 20), dtype=np.float32)
    y = _poisoned(x.shape)
    K.copy3d_kernel[(3, 3, 2)](x, y, 5, 9, 20, BA=2, BB=4, BC=16)
    np.testing.assert_array_equal(y, x * 2)


@pytest.mark.parametrize("M,N,Kd", [(50, 40, 70), (32, 32, 32), (16, 48, 17)])
def test_block_ptr_matmul(M, N, Kd):
    a = rng.random((M, Kd), dtype=np.float32)
    b = rng.random((Kd, N), dtype=np.float32)
    c = _poisoned((M, N))
    grid = (triton.cdiv(M, 16), triton.cdiv(N, 16))
    kern = K.block_ptr_matmul_kernel[grid](a, b, c, M, N, Kd, Kd, 1, N, 1, N, 1,
                                           BM=16, BN=16, BK=16)
    np.testing.assert_allclose(c, a @ b, rtol=2e-2, atol=2e-2)  # tf32 by default
    # Only the advanced offsets are loop-carried: base, shape and strides stay invariant.
    loop = next(line for line in kern.asm["tir"].splitlines() if "scf.for" in line)
    assert loop.rstrip().endswith(": i32, i32, tensor<16x16xf32> {"), loop


def test_block_ptr_matmul_fp16_transposed_b():
    M, N, Kd = 33, 48, 40
    a = rng.standard_normal((M, Kd)).astype(np.float16)
    bt = rng.standard_normal((N, Kd)).astype(np.float16)  # b = bt.T, given by strides
    c = _poisoned((M, N), np.float16)
    K.block_ptr_matmul_kernel[(3, 3)](a, bt, c, M, N, Kd, Kd, 1, 1, Kd, N, 1,
                                      BM=16, BN=16, BK=16)
    ref = a.astype(np.float32) @ bt.T.astype(np.float32)
    np.testing.assert_allclose(c.astype(np.float32), ref, rtol=1e-2, atol=1e-2)


@triton.jit
def _advance_in_if_kernel(x, out, N, flag, B: tl.constexpr):
    p = tl.make_block_ptr(x, (N,), (1,), (0,), (B,), (0,))
    if flag > 0:
        p = tl.advance(p, (B,))
    else:
        p = tl.advance(p, (2 * B,))
    tl.store(out + tl.arange(0, B), tl.load(p, boundary_check=(0,)))


@pytest.mark.parametrize("flag", [1, 0])
def test_block_ptr_through_if(flag):
    x = rng.random(40, dtype=np.float32)
    out = _poisoned(16)
    _advance_in_if_kernel[(1,)](x, out, 40, flag, B=16)
    start = 16 if flag else 32
    ref = np.zeros(16, np.float32)
    ref[:40 - start] = x[start:start + 16]
    np.testing.assert_array_equal(out, ref)


@triton.jit
def _advance_helper(p, step):
    return tl.advance(p, (step, 0))


@triton.jit
def _row_sums_kernel(x, out, M, N, B: tl.constexpr, BN: tl.constexpr):
    """Sums of blocks of rows, walking a block pointer with a while loop and a @jit helper."""
    p = tl.make_block_ptr(x, (M, N), (N, 1), (0, 0), (B, BN), (1, 0))
    acc = tl.zeros((B,), tl.float32)
    i = 0
    while i < M:
        acc += tl.sum(tl.load(p, boundary_check=(0, 1)), axis=1)
        p = _advance_helper(p, B)
        i += B
    tl.store(out + tl.arange(0, B), acc)


def test_block_ptr_through_while_and_helper():
    x = rng.random((37, 10), dtype=np.float32)
    out = _poisoned(8)
    _row_sums_kernel[(1,)](x, out, 37, 10, B=8, BN=16)
    pad = np.zeros((40, 10), np.float32)
    pad[:37] = x
    np.testing.assert_allclose(out, pad.reshape(5, 8, 10).sum(axis=(0, 2)), rtol=1e-5)


@triton.jit
def _unchecked_kernel(x, y, M, N, BM: tl.constexpr, BN: tl.constexpr):
    p = tl.make_block_ptr(x, (M, N), (N, 1), (BM, 0), (BM, BN), (1, 0))
    q = tl.make_block_ptr(y, (M, N), (N, 1), (0, 0), (BM, BN), (1, 0))
    tl.store(q, tl.load(p))


def test_without_boundary_check_the_access_is_unchecked():
    # In bounds, unchecked loads and stores move the whole block.
    x = rng.random((32, 16), dtype=np.float32)
    y = _poisoned((16, 16))
    _unchecked_kernel[(1,)](x, y, 32, 16, BM=16, BN=16)
    np.testing.assert_array_equal(y, x[16:])
    # The unchecked IR has no mask.
    k = _unchecked_kernel.warmup(x, y, 32, 16, BM=16, BN=16, grid=(1,))
    assert "arith.cmpi" not in k.asm["tir"]


# ---------------------------------------------------------------------------
# tensor descriptors
# ---------------------------------------------------------------------------


def test_host_descriptor_numpy_copy():
    @triton.jit
    def kern(xd, yd, BM: tl.constexpr, BN: tl.constexpr):
        pm = tl.program_id(0)
        pn = tl.program_id(1)
        tl.static_assert(xd.block_shape == [BM, BN])
        tl.static_assert(xd.dtype == tl.float32)
        tl.static_assert(len(xd.shape) == 2 and len(xd.strides) == 2)
        v = xd.load([pm * BM, pn * BN])
        yd.store([pm * BM, pn * BN], v * 2)

    x = rng.random((37, 24), dtype=np.float32)
    y = _poisoned((37, 24))
    kern[(3, 2)](TensorDescriptor.from_tensor(x, [16, 16]),
                 TensorDescriptor.from_tensor(y, [16, 16]), BM=16, BN=16)
    np.testing.assert_array_equal(y, x * 2)


def test_host_descriptor_matmul_torch_cpu():
    torch = pytest.importorskip("torch")
    M, N, Kd = 40, 48, 64
    a = torch.randn(M, Kd, dtype=torch.float16)
    b = torch.randn(Kd, N, dtype=torch.float16)
    c = torch.full((M, N), float("nan"), dtype=torch.float16)
    descs = [TensorDescriptor.from_tensor(a, [16, 32]), TensorDescriptor.from_tensor(b, [32, 16]),
             TensorDescriptor.from_tensor(c, [16, 16])]
    K.descriptor_matmul_kernel[(3, 3)](*descs, Kd, BM=16, BN=16, BK=32)
    torch.testing.assert_close(c.float(), a.float() @ b.float(), rtol=1e-2, atol=1e-2)


def test_host_descriptor_specialisation():
    # Shape and strides specialise like int arguments: a new shape that keeps the key reuses the
    # kernel (test_fast_launch.py checks the C++ fast path's key of a descriptor against this one).
    @triton.jit
    def kern(xd, out):
        v = xd.load([0, 0])
        tl.store(out + tl.arange(0, 16)[:, None] * 16 + tl.arange(0, 16)[None, :], v)

    for rows in (5, 7):
        x = rng.random((rows, 16), dtype=np.float32)
        out = _poisoned((16, 16))
        kern[(1,)](TensorDescriptor.from_tensor(x, [16, 16]), out)
        ref = np.zeros((16, 16), np.float32)
        ref[:rows] = x
        np.testing.assert_array_equal(out, ref)
    assert len(kern.cache) == 1
    ((key, kernel),) = kern.cache.items()
    # The last stride (1) becomes a constant; 16 and the row stride are divisible by 16.
    assert kernel.arg_names == ["xd__base", "xd__shape0", "xd__shape1", "xd__stride0", "out"]
    assert "tt.divisibility" in kernel.asm["tir"]


@pytest.mark.parametrize("pad", ["zero", "nan"])
def test_device_descriptor(pad):
    M, N = 21, 36
    x = rng.random((M, N), dtype=np.float32)
    y = _poisoned((M, N))
    K.device_descriptor_kernel[(2, 3)](x, y, M, N, BM=16, BN=16, PAD=pad)
    np.testing.assert_array_equal(y, x * 2)


@triton.jit
def _descriptor_window_kernel(x, out, M, N, om, on, BM: tl.constexpr, BN: tl.constexpr,
                              PAD: tl.constexpr):
    d = tl.make_tensor_descriptor(x, [M, N], [N, 1], [BM, BN], padding_option=PAD)
    v = tl.load_tensor_descriptor(d, [om, on])
    o = tl.make_tensor_descriptor(out, [BM, BN], [BN, 1], [BM, BN])
    tl.store_tensor_descriptor(o, [0, 0], v)


@pytest.mark.parametrize("pad", ["zero", "nan"])
def test_descriptor_padding_every_dimension(pad):
    M, N = 9, 12
    x = rng.random((M, N), dtype=np.float32)
    out = _poisoned((16, 16))
    _descriptor_window_kernel[(1,)](x, out, M, N, -2, 3, BM=16, BN=16, PAD=pad)
    ref = np.full((16, 16), 0.0 if pad == "zero" else np.nan, np.float32)
    ref[2:2 + M, :N - 3] = x[:, 3:]
    np.testing.assert_array_equal(out, ref)


@triton.jit
def _descriptor_atomics_kernel(x, M, N, B: tl.constexpr):
    d = tl.make_tensor_descriptor(x, [M, N], [N, 1], [B, B])
    ones = tl.full((B, B), 1, tl.int32)
    d.atomic_add([0, 0], ones)
    d.atomic_add([B // 2, B // 2], ones)
    d.atomic_max([0, B], ones * 7)
    d.atomic_min([B, 0], ones * -3)


def test_descriptor_atomics():
    M, N = 12, 20
    x = np.zeros((M, N), np.int32)
    _descriptor_atomics_kernel[(1,)](x, M, N, B=8)
    ref = np.zeros((M, N), np.int32)
    ref[:8, :8] += 1
    ref[4:12, 4:12] += 1
    ref[:8, 8:16] = np.maximum(ref[:8, 8:16], 7)
    ref[8:, :8] = np.minimum(ref[8:, :8], -3)
    np.testing.assert_array_equal(x, ref)


@triton.jit
def _descriptor_choice_kernel(x, y, out, N, pick, B: tl.constexpr):
    d = tl.make_tensor_descriptor(x, [N], [1], [B])
    if pick > 0:
        d = tl.make_tensor_descriptor(y, [N], [1], [B])
    acc = tl.zeros((B,), tl.float32)
    for i in range(0, N, B):
        acc += d.load([i])
    tl.store(out + tl.arange(0, B), acc)


@pytest.mark.parametrize("pick", [0, 1])
def test_descriptor_through_if_and_loop(pick):
    x = rng.random(40, dtype=np.float32)
    y = rng.random(40, dtype=np.float32)
    out = _poisoned(16)
    _descriptor_choice_kernel[(1,)](x, y, out, 40, pick, B=16)
    src = np.zeros(48, np.float32)
    src[:40] = y if pick else x
    np.testing.assert_allclose(out, src.reshape(3, 16).sum(axis=0), rtol=1e-6)


def test_set_allocator_is_accepted():
    calls = []
    tritium.set_allocator(lambda size, align, stream: calls.append(size))
    x = rng.random((16, 16), dtype=np.float32)
    y = _poisoned((16, 16))
    K.device_descriptor_kernel[(1, 1)](x, y, 16, 16, BM=16, BN=16, PAD="zero")
    np.testing.assert_array_equal(y, x * 2)
    assert calls == []  # plain masked loads need no scratch
    tritium.set_allocator(None)


@pytest.mark.parametrize("args,pattern", [
    (dict(strides=[8, 2]), "Last dimension must be contiguous"),
    (dict(block_shape=[16, 12]), "Shape element 1 must be a power of 2"),
    (dict(block_shape=[16]), "block_shape of rank 1"),
    (dict(padding="inf"), "Padding option inf not supported"),
    (dict(strides=[3, 1], shape=[4, 3]), "16-byte aligned"),
])
def test_host_descriptor_errors(args, pattern):
    x = np.zeros((16, 16), np.float32)
    kw = dict(shape=[16, 16], strides=[16, 1], block_shape=[16, 16])
    kw.update(args)
    with pytest.raises(ValueError, match=pattern):
        TensorDescriptor(x, **kw)


def test_host_descriptor_nan_padding_needs_floats():
    with pytest.raises(ValueError, match="floating-point"):
        TensorDescriptor.from_tensor(np.zeros((16, 16), np.int32), [16, 16], padding="nan")


# ---------------------------------------------------------------------------
# errors: located CompilationErrors with Triton's wording
# ---------------------------------------------------------------------------


@triton.jit
def _bad_rank(x, N):
    p = tl.make_block_ptr(x, (N, N), (N, 1), (0, 0), (16,), (1, 0))  # ERR rank
    tl.load(p)


@triton.jit
def _bad_pow2(x, N):
    p = tl.make_block_ptr(x, (N,), (1,), (0,), (12,), (0,))  # ERR pow2
    tl.load(p)


@triton.jit
def _bad_runtime_block(x, N):
    p = tl.make_block_ptr(x, (N,), (1,), (0,), (N,), (0,))  # ERR runtime
    tl.load(p)


@triton.jit
def _bad_padding(x, N):
    p = tl.make_block_ptr(x, (N,), (1,), (0,), (16,), (0,))
    tl.load(p, boundary_check=(0,), padding_option="inf")  # ERR padding


@triton.jit
def _bad_nan_int(x, N):
    p = tl.make_block_ptr(x, (N,), (1,), (0,), (16,), (0,))
    tl.load(p, boundary_check=(0,), padding_option="nan")  # ERR nanint


@triton.jit
def _bad_axis(x, N):
    p = tl.make_block_ptr(x, (N, N), (N, 1), (0, 0), (16, 16), (1, 0))
    tl.store(p, tl.zeros((16, 16), tl.float32), boundary_check=(0, 2))  # ERR axis


@triton.jit
def _bad_order(x, N):
    p = tl.make_block_ptr(x, (N, N), (N, 1), (0, 0), (16, 16), (1, 1))  # ERR order
    tl.load(p)


@triton.jit
def _bad_mask(x, N):
    p = tl.make_block_ptr(x, (N,), (1,), (0,), (16,), (0,))
    tl.load(p, mask=tl.arange(0, 16) < N)  # ERR mask


@triton.jit
def _bad_plain_boundary(x, N):
    tl.load(x + tl.arange(0, 16), boundary_check=(0,))  # ERR plain


@triton.jit
def _bad_desc_stride(x, N):
    d = tl.make_tensor_descriptor(x, [N, N], [1, N], [16, 16])  # ERR descstride
    d.load([0, 0])


@triton.jit
def _bad_desc_bytes(x, N):
    d = tl.make_tensor_descriptor(x, [N, N], [N, 1], [16, 2])  # ERR descbytes
    d.load([0, 0])


@triton.jit
def _bad_desc_rank(x, N):
    d = tl.make_tensor_descriptor(x, [N, N], [N, 1], [16, 16])
    d.load([0])  # ERR descrank


@triton.jit
def _bad_store_shape(x, N):
    p = tl.make_block_ptr(x, (N,), (1,), (0,), (16,), (0,))
    tl.store(p, tl.zeros((32,), tl.float32))  # ERR storeshape


def _located(e, marker, token):
    lines, _ = inspect.getsourcelines(sys.modules[__name__])
    hits = [i for i, t in enumerate(lines) if re.search(rf"# ERR {marker}$", t.rstrip())]
    assert len(hits) == 1
    text = lines[hits[0]].rstrip("\n")
    assert isinstance(e, tritium.CompilationError), type(e)
    assert os.path.abspath(e.file) == THIS_FILE
    assert e.line == hits[0] + 1, (e.line, str(e))
    assert e.col == text.index(token) + 1, (e.col, str(e))
    assert "^" in str(e)


@pytest.mark.parametrize("kern,dtype,marker,token,pattern", [
    (_bad_rank, np.float32, "rank", "tl.make_block_ptr",
     "Expected shape/strides/offsets/block_shape to have the same length"),
    (_bad_pow2, np.float32, "pow2", "tl.make_block_ptr", "Shape element 0 must be a power of 2"),
    (_bad_runtime_block, np.float32, "runtime", "tl.make_block_ptr",
     r"Expected a list of constant integers \(`int32_t` range\) in `block_shape`"),
    (_bad_padding, np.float32, "padding", "tl.load", "Padding option inf not supported"),
    (_bad_nan_int, np.int32, "nanint", "tl.load", "Padding option `nan` is not supported for "
                                                  "integer"),
    (_bad_axis, np.float32, "axis", "tl.store", "boundary_check dimension 2 is out of range"),
    (_bad_order, np.float32, "order", "tl.make_block_ptr", "Expected a permutation"),
    (_bad_mask, np.float32, "mask", "tl.load", "`mask` and `other` arguments cannot be "
                                               "specified for loading block pointers"),
    (_bad_plain_boundary, np.float32, "plain", "tl.load",
     "`padding_option` or `boundary_check` argument is not supported"),
    (_bad_desc_stride, np.float32, "descstride", "tl.make_tensor_descriptor",
     "Tensor descriptor last dim must be 1"),
    (_bad_desc_bytes, np.float32, "descbytes", "tl.make_tensor_descriptor",
     "at least 16 bytes in the last dimension"),
    (_bad_desc_rank, np.float32, "descrank", "d.load", "Expected 2 offsets"),
    (_bad_store_shape, np.float32, "storeshape", "tl.store", r"Block shape\(\[16\]\) and value "
                                                             r"shape\(\[32\]\) mismatch"),
])
def test_errors(kern, dtype, marker, token, pattern):
    x = np.zeros(64, dtype)
    with pytest.raises(tritium.CompilationError, match=pattern) as info:
        kern[(1,)](x, 8)
    _located(info.value, marker, token)


@triton.jit
def _bad_carried(x, N, B: tl.constexpr):
    p = tl.make_block_ptr(x, (N,), (1,), (0,), (B,), (0,))
    for i in range(3):
        p = tl.make_block_ptr(x, (N,), (1,), (0,), (2 * B,), (0,))
    tl.load(p)


def test_block_shape_must_not_change_in_a_loop():
    with pytest.raises(tritium.CompilationError,
                       match="'p' is block_pointer.*must keep its block shape"):
        _bad_carried[(1,)](np.zeros(64, np.float32), 8, B=16)


# ---------------------------------------------------------------------------
# the GPU kernels of test_gpu_block_ptr.py, compiled for sm_80 and sm_90a
# ---------------------------------------------------------------------------

HAS_PTXAS = tritium.errors.load_C().ptxas_path() is not None


def _gpu_compile(kern, args, kwargs, target, num_warps=4, num_stages=3):
    values = kern._bind(args, kwargs)
    key, params, _ = kern.specialize(values)
    return _compiler.compile_gpu(kern, params, key, num_warps=num_warps, num_stages=num_stages,
                                 target=target, use_cache=False)


def _ptx_cases():
    f16 = np.zeros((128, 128), np.float16)
    f32 = np.zeros((128, 128), np.float32)
    return {
        "copy2d": (K.copy2d_kernel, (f32, f32, 100, 128, 128, 1, 128, 1),
                   dict(BM=32, BN=64, PAD="nan", ORDER=(1, 0))),
        "copy3d": (K.copy3d_kernel, (f32, f32, 4, 8, 512), dict(BA=2, BB=4, BC=32)),
        "block_ptr_matmul": (K.block_ptr_matmul_kernel,
                             (f16, f16, f16, 128, 128, 128, 128, 1, 128, 1, 128, 1),
                             dict(BM=64, BN=64, BK=32)),
        "descriptor_matmul": (K.descriptor_matmul_kernel,
                              (TensorDescriptor.from_tensor(f16, [64, 32]),
                               TensorDescriptor.from_tensor(f16, [32, 64]),
                               TensorDescriptor.from_tensor(f16, [64, 64]), 128),
                              dict(BM=64, BN=64, BK=32)),
        "device_descriptor": (K.device_descriptor_kernel, (f32, f32, 100, 128),
                              dict(BM=32, BN=32, PAD="zero")),
    }


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("case", sorted(_ptx_cases()))
def test_gpu_kernels_compile_to_ptx(case, target):
    kern, args, kwargs = _ptx_cases()[case]
    k = _gpu_compile(kern, args, kwargs, target)
    ptx = k.asm["ptx"]
    assert f".target {target}" in ptx
    if HAS_PTXAS:
        assert k.asm["cubin"][:4] == b"\x7fELF"
    if "matmul" in case:
        # The K loop keeps the tensor cores and the pipelined, 16-byte-wide copies of the
        # plain-pointer matmul.
        assert ("wgmma.mma_async" if target == "sm_90a" else "mma.sync") in ptx
        if target == "sm_90a":
            # Host TensorDescriptors, and block pointers whose rows are contiguous (a unit last
            # stride) and checked in every dim, on sm_90a: TMA copies, a tensor map a tensor.
            assert "cp.async.bulk.tensor.2d" in ptx and "cp.async.cg" not in ptx
            # A descriptor's store too (lower-tma-stores): the tile leaves through shared
            # memory, one bulk copy a box, and the program waits only for the copy's reads.
            stores = case == "descriptor_matmul"
            assert len(k.metadata["tensor_maps"]) == (3 if stores else 2)
            assert ("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group" in ptx) == stores
            assert ("cp.async.bulk.wait_group.read 0" in ptx) == stores
        else:
            assert re.search(r"cp\.async\.c[ag]\.shared\.global.*, 16", ptx), ptx[:2000]
    if case == "copy2d":
        assert "ld.global.v4" in ptx or "ld.global.nc.v4" in ptx


def gather_scatter_ref(x, y, idx, y0, bn):
    """What desc.gather/scatter do on numpy: rows out of [0, M) and columns out of [0, N) read 0
    and are not written."""
    M, N = x.shape
    y = y.copy()
    for r in idx:
        for c in range(y0, y0 + bn):
            if 0 <= r < M and 0 <= c < N:
                y[r, c] = 2 * x[r, c]
    return y


@pytest.mark.parametrize("y0", [0, 8, 40, -8])
def test_descriptor_gather_scatter(y0):
    # Triton's TMA gather / scatter: a 2-D descriptor of 1-row blocks, rows from a tensor.
    M, N, BN = 20, 48, 16
    x = rng.random((M, N), dtype=np.float32)
    y = _poisoned((M, N))
    idx = np.array([3, 0, 19, 7, 25, -2, 11, 5], dtype=np.int32)  # 25 and -2: out of bounds
    K.gather_scatter_kernel[(1,)](x, y, idx, M, N, y0, NROWS=8, BN=BN)
    np.testing.assert_array_equal(y, gather_scatter_ref(x, _poisoned((M, N)), idx, y0, BN))


@pytest.mark.parametrize("rows,bn,pattern", [(4, 16, "at least 8 rows"),
                                             (8, 4, "at least 8 columns")])
def test_descriptor_gather_limits(rows, bn, pattern):
    x = np.zeros((16, 16), np.float32)
    idx = np.zeros(rows, np.int32)
    with pytest.raises(tritium.CompilationError, match=pattern):
        K.gather_scatter_kernel[(1,)](x, x.copy(), idx, 16, 16, 0, NROWS=rows, BN=bn)


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_descriptor_gather_scatter_ptx_assembles(target, tmp_path):
    import shutil  # noqa: PLC0415
    import subprocess  # noqa: PLC0415

    ptxas = shutil.which("ptxas") or ("/usr/local/cuda/bin/ptxas"
                                       if os.path.exists("/usr/local/cuda/bin/ptxas") else None)
    if ptxas is None:
        pytest.skip("ptxas not installed")
    sig = {"x": "*fp32", "y": "*fp32", "idx_ptr": "*i32", "M": "i32", "N": "i32", "Y0": "i32"}
    k = tritium.compile(K.gather_scatter_kernel, signature=sig, constexprs={"NROWS": 8, "BN": 16},
                        target=target, num_warps=4, use_cache=False)
    path = tmp_path / "k.ptx"
    path.write_text(k.asm["ptx"])
    r = subprocess.run([ptxas, f"-arch={target}", str(path), "-o", str(tmp_path / "k.cubin")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


@triton.jit
def _block_ptr_dtype_kernel(src_ptr, dst_ptr, N, BLOCK: tl.constexpr):
    bp = tl.make_block_ptr(base=src_ptr, shape=(N,), strides=(1,), offsets=(0,), block_shape=(BLOCK,),
                           order=(0,))
    # As in Triton: a block pointer's dtype is a pointer to the block; its element_ty the block type.
    tl.static_assert(bp.dtype.element_ty == tl.block_type(src_ptr.dtype.element_ty, [BLOCK]))
    v = tl.load(bp, boundary_check=(0,), padding_option="zero").to(bp.dtype.element_ty)
    tl.store(dst_ptr + tl.arange(0, BLOCK), v)


def test_block_ptr_dtype_is_a_pointer_to_the_block():
    src = np.arange(16, dtype=np.float16)
    dst = np.zeros(16, np.float16)
    _block_ptr_dtype_kernel[(1,)](src, dst, 13, BLOCK=16)
    np.testing.assert_array_equal(dst, np.where(np.arange(16) < 13, src, 0))


def test_block_ptr_matmul_with_no_k_on_torch_views():
    """K = 0 with torch tensors: torch gives a view without elements a null data_ptr, whose
    storage is not the kernel's (it once read as a pointer of the storage's whole extent,
    which the executor refused); the product is zeros. On sm_90a the same specialisation's
    blocks are TMA copies with the module's fill element (test_gpu_block_ptr)."""
    torch = pytest.importorskip("torch")
    M, N = 128, 192
    a = torch.randn(M, 64, dtype=torch.float16)[:, :0]  # row stride 64
    b = torch.empty(0, N, dtype=torch.float16)
    c = torch.full((M, N), float("nan"), dtype=torch.float16)
    args = (a, b, c, M, N, 0, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
            c.stride(1))
    K.block_ptr_matmul_kernel[(triton.cdiv(M, 64), triton.cdiv(N, 64))](*args, BM=64, BN=64,
                                                                        BK=32, num_stages=3)
    assert (c == 0).all()
    kern = K.block_ptr_matmul_kernel
    key, params, _ = kern.specialize(kern._bind(args, dict(BM=64, BN=64, BK=32)))
    ck = _compiler.compile_gpu(kern, params, key, num_warps=4, num_stages=3, target="sm_90a",
                               use_cache=False, bounds_check=False)
    assert len(ck.metadata["tensor_maps"]) == 2 and "tritium_tma_fill" in ck.asm["ptx"]


# ---------------------------------------------------------------------------
# descriptor stores: TMA stores on sm_90a (lower-tma-stores)
# ---------------------------------------------------------------------------

# (numpy dtype, BM, BN, swizzle of the box layout): rows of 16 bytes (no swizzle) up to 256.
TMA_STORE_CASES = [(np.float16, 64, 8, 0), (np.float16, 32, 16, 32), (np.float32, 16, 64, 128),
                   (np.int8, 64, 32, 32), (np.float32, 256, 32, 128), (np.float64, 8, 16, 128)]


@pytest.mark.parametrize("dtype,BM,BN,swz", TMA_STORE_CASES)
def test_descriptor_store_on_the_executor(dtype, BM, BN, swz):
    # Ragged in both dims; the rows past M of the buffer must stay as they were.
    M, N = BM + 3, 48 if BN < 48 else BN + 16
    x = (rng.random((M, N)) * 100).astype(dtype)
    big = np.full((M + BM, N), 77, dtype)
    y = big[:M]
    K.desc_store_kernel[(-(-M // BM), -(-N // BN))](x, y, M, N, BM=BM, BN=BN)
    np.testing.assert_array_equal(y, x + 1)
    assert (big[M:] == 77).all()


@pytest.mark.parametrize("dtype,BM,BN,swz", TMA_STORE_CASES)
def test_descriptor_store_ptx(dtype, BM, BN, swz):
    # sm_90a: the block through shared memory (the NVMMA layout of the box), one bulk copy per
    # box of swz bytes a row (16 without a swizzle), a wait for the reads; a tensor map of c.
    # N not known to be divisible by 16 (the row stride): the masked stores. Both assemble.
    M, N = 200, 64
    x, y = np.zeros((M, N), dtype), np.zeros((M, N), dtype)
    eb = np.dtype(dtype).itemsize
    k = _gpu_compile(K.desc_store_kernel, (x, y, M, N), dict(BM=BM, BN=BN), "sm_90a")
    ptx, gir = k.asm["ptx"], k.asm["gir"]
    assert f"swizzlingByteWidth = {swz}, transposed = false, elementBitWidth = {8 * eb}" in gir
    boxes = BN * eb // (swz or 16)
    assert ptx.count("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group") == boxes
    assert "cp.async.bulk.wait_group.read 0" in ptx and "st.global" not in ptx
    [spec] = k.metadata["tensor_maps"]
    assert spec[0] == 1 and spec[10:12] == [BM, (swz or 16) // eb] and spec[14] == swz
    if HAS_PTXAS:
        assert k.asm["cubin"][:4] == b"\x7fELF"
    plain = _gpu_compile(K.desc_store_kernel, (x, y, M, 63), dict(BM=BM, BN=BN), "sm_90a")
    assert "cp.async.bulk" not in plain.asm["ptx"] and "st.global" in plain.asm["ptx"]
    assert not plain.metadata.get("tensor_maps")


def test_descriptor_store_read_back():
    # A store, then loads of the same tensor in the same program: the TMA store waits for its
    # writes (wait = "write") and a barrier follows, so that every thread reads the new values.
    M, N, BM, BN = 50, 32, 16, 32
    x = rng.random((M, N), dtype=np.float32)
    y, z = _poisoned((M, N)), _poisoned((M, N))
    K.desc_store_readback_kernel[(-(-M // BM),)](x, y, z, M, N, BM=BM, BN=BN)
    np.testing.assert_array_equal(y, x + 1)
    np.testing.assert_array_equal(z, x + 1)
    k = _gpu_compile(K.desc_store_readback_kernel, (x, y, z, M, N), dict(BM=BM, BN=BN), "sm_90a")
    assert 'wait = "write"' in k.asm["gir"]
    ptx = k.asm["ptx"]
    wait = ptx.index("cp.async.bulk.wait_group 0")
    assert ptx.index("bar.sync 0", wait) < ptx.index("ld.global", wait)
