"""CPU tests of the launcher's TMA tensor maps (no GPU, no driver): `_C.GpuKernel(...,
tensor_maps=)` takes the compiler's TensorMapSpec lists and checks them, `tensor_map_args`
shows what a launch would pass cuTensorMapEncodeTiled, and a GPUKernel's metadata carries its
maps through the disk cache to the GpuKernel it launches with."""

import pytest

import tritium
import tritium.language as tl
from tritium.errors import load_C
from tritium.runtime import cache as cache_mod
from tritium.runtime.cuda import GPUKernel

C = load_C()
pytestmark = pytest.mark.skipif(not hasattr(C, "GpuKernel"), reason="this _C has no GpuKernel")

FLOAT16, FLOAT32, UINT16 = 6, 7, 1  # CUtensorMapDataType

MATMUL_PARAMS = [("ptr", "a_ptr"), ("i32", "M"), ("i32", "K"), ("i32", "stride_am"),
                 ("fp32", "alpha")]


def spec(base=0, shape=((1, 0), (2, 0)), strides=((3, 0), (-1, 1)), box=(128, 64), elem_bytes=2,
         data_type=FLOAT16, swizzle=128, nan_fill=False):
    """A TensorMapSpec's flatten() list: [base, rank, (arg, value) per dim and stride, box...,
    elem_bytes, data_type, swizzle_bytes, nan_fill]; operands (arg, value), arg -1: constant."""
    out = [base, len(shape)]
    for arg, value in list(shape) + list(strides):
        out += [arg, value]
    return out + list(box) + [elem_bytes, data_type, swizzle, int(nan_fill)]


def kernel(maps, params=MATMUL_PARAMS, **kw):
    return C.GpuKernel("matmul", b"never loaded", False, "sm_90a", 4, 0, params,
                       tensor_maps=maps, **kw)


def test_gpu_kernel_takes_tensor_maps_and_shows_their_encoding():
    maps = [spec(), spec(shape=((-1, 1000), (-1, 4096)), strides=((-1, 4096), (-1, 1)),
                         swizzle=0, nan_fill=True)]
    k = kernel(maps)
    assert k.tensor_maps == maps and k.tensor_maps_at == len(MATMUL_PARAMS)
    enc = k.tensor_map_args([0x7f0000001000, 1000, 4096, 4096, 1.0])
    assert enc[0] == {"data_type": FLOAT16, "address": 0x7f0000001000, "dims": [4096, 1000],
                      "strides": [8192], "box": [64, 128], "element_strides": [1, 1],
                      "interleave": 0, "swizzle": 3, "l2_promotion": 2, "oob_fill": 0,
                      "empty": False}
    # Constants give the same dims and strides; no swizzle, NaN fill.
    assert enc[1] == dict(enc[0], swizzle=0, oob_fill=1)
    # Without maps: none, and nothing to encode.
    plain = C.GpuKernel("k", b"x", False, "sm_90a", 4, 0, MATMUL_PARAMS)
    assert plain.tensor_maps == [] and plain.tensor_map_args([16, 1, 1, 1, 0.0]) == []


@pytest.mark.parametrize("flat,message", [
    ([], "tensor map 0 is not a flattened TensorMapSpec"),
    (spec()[:-1], "tensor map 1 is not a flattened TensorMapSpec \\(15 integers"),
    ([0, 0, 128, 2, 6, 128, 0], "not a flattened TensorMapSpec"),
    (spec(base=1), "the base parameter is i32, not a pointer"),
    (spec(base=7), "the base is parameter 7, but the kernel has 5"),
    (spec(shape=((4, 0), (2, 0))), "dim 0 is parameter 'alpha', a fp32, not an integer"),
    (spec(strides=((3, 0), (-1, 2))), "stride 1 \\(the innermost\\) is 2 elements"),
    (spec(elem_bytes=4), "data type 6 has 2-byte elements, the spec says 4"),
    (spec(data_type=UINT16, nan_fill=True), "NaN fill .* needs a floating-point data type"),
    (spec(swizzle=16), "swizzle of 16 bytes"),
    (spec(box=(128, 300)), "box dim 1 is 300 elements, not 1 to 256"),
    (spec(box=(128, 4)), "the box's innermost dim is 8 bytes, not a multiple of 16"),
    (spec(swizzle=64), "the box's innermost dim is 128 bytes, more than the 64-byte swizzle"),
])
def test_malformed_tensor_maps_are_a_value_error(flat, message):
    """A bad map (the second, after a good one) is the caller's error, named."""
    with pytest.raises(ValueError, match="kernel 'matmul': .*" + message):
        kernel([spec(), flat] if flat else [flat])


def test_tensor_maps_go_before_the_hidden_parameters():
    params = MATMUL_PARAMS + [("u64", "extent of a_ptr"), ("ptr", "record")]
    k = kernel([spec()], params=params, tensor_maps_at=5)
    assert k.tensor_maps_at == 5
    assert k.tensor_map_args([4096, 8, 64, 64, 0.0, 99, 0])[0]["dims"] == [64, 8]
    with pytest.raises(ValueError, match="tensor maps placed after parameter 9, but the kernel "
                                         "has 7"):
        kernel([spec()], params=params, tensor_maps_at=9)
    # The specs index the parameters before the maps only.
    with pytest.raises(ValueError, match="dim 0 is parameter 5, but the kernel has 5"):
        kernel([spec(shape=((5, 0), (2, 0)))], params=params, tensor_maps_at=5)


@pytest.mark.parametrize("args,message", [
    ([0x1000, 8, 4096, 20, 0.0],
     "stride 0 \\(argument 'stride_am'\\) is 40 bytes \\(20 elements of 2\\), not a multiple "
     "of 16"),
    ([0x1008, 8, 4096, 4096, 0.0], "the base 'a_ptr' is 0x1008, not 16-byte aligned"),
    ([None, 8, 4096, 4096, 0.0], "the base 'a_ptr' is a null pointer"),
    ([0x1000, -1, 4096, 4096, 0.0], "dim 0 \\(argument 'M'\\) is -1; TMA takes 0 to 2\\^32"),
    ([0x1000, 8, 4096, -4096, 0.0], "stride 0 \\(argument 'stride_am'\\) is -4096 elements; TMA "
                                    "takes no negative strides"),
])
def test_launch_values_the_driver_would_refuse(args, message):
    k = kernel([spec()])
    with pytest.raises(C.CudaError, match="kernel 'matmul': TMA tensor map 0 \\(of 'a_ptr'\\): "
                                          + message):
        k.tensor_map_args(args)


@pytest.mark.parametrize("args", [[0x1000, 8, 0, 4096, 0.0], [None, 0, 4096, 20, 0.0],
                                  [0x1008, 0, 0, -4096, 0.0]])
def test_a_tensor_without_elements_gets_a_placeholder_map(args):
    """A dim of 0 (which the driver refuses): whatever the base and strides, every dim is 1 and
    every stride 16 bytes, the box stays, and the launcher supplies the address (the module's
    fill element: test_gpu_tensor_maps)."""
    e = kernel([spec()]).tensor_map_args(args)[0]
    assert e["empty"] and e["address"] == 0
    assert e["dims"] == [1, 1] and e["strides"] == [16] and e["box"] == [64, 128]
    assert not kernel([spec()]).tensor_map_args([0x1000, 8, 64, 64, 0.0])[0]["empty"]


# ----------------------------------------------------------------------------------------------
# compile results and metadata


@tritium.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask),
             mask=mask)


ADD_SIG = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}
# x as a 1-D fp32 tensor of n elements, 64 per copy.
ADD_MAP = spec(base=0, shape=((3, 0),), strides=((-1, 1),), box=(64,), elem_bytes=4,
               data_type=FLOAT32, swizzle=0)


@pytest.fixture(scope="module")
def compiled_add():
    if not hasattr(C, "compile_batch"):
        pytest.skip("this _C has no NVIDIA backend")
    return tritium.compile(add_kernel, signature=ADD_SIG, constexprs={"BLOCK": 64},
                           target="sm_90a")


def test_a_kernel_without_tma_has_no_tensor_maps(compiled_add):
    """compile's result says "tensor_maps": [], and the metadata has no key for it (the cached
    metadata of such kernels is what it was)."""
    assert "tensor_maps" not in compiled_add.metadata
    assert compiled_add.gpu_kernel().tensor_maps == []
    from tritium.compile_api import build_specialization
    from tritium.compiler.pipeline import compile_tile

    params, _ = build_specialization(add_kernel, ADD_SIG, {"BLOCK": 64})
    t = compile_tile(add_kernel, params)
    (res,) = C.compile_batch([(t.module, t.name, "sm_90a", 4, 3)], False, 1)
    assert res["error"] is None and res["tensor_maps"] == []


def _with_maps(k, maps, **extra):
    meta = dict(k.metadata, tensor_maps=maps, **extra)
    return GPUKernel(k.name, dict(k.asm), meta)


def test_gpu_kernel_passes_its_metadata_maps(compiled_add):
    k = _with_maps(compiled_add, [ADD_MAP])
    g = k.gpu_kernel()
    assert g.tensor_maps == [ADD_MAP] and g.tensor_maps_at == 4
    enc = g.tensor_map_args([4096, 8192, 12288, 1000])
    assert enc[0]["dims"] == [1000] and enc[0]["strides"] == [] and enc[0]["box"] == [64]
    # Bounds-checked: the hidden parameters come after the maps.
    hidden = [["u64", "extent of x_ptr"], ["u64", "extent of y_ptr"],
              ["u64", "extent of out_ptr"], ["u64", "extent of n"], ["ptr", "record"]]
    checked = _with_maps(compiled_add, [ADD_MAP], bounds_check={"hidden_params": hidden})
    g = checked.gpu_kernel()
    assert len(g.params) == 9 and g.tensor_maps_at == 4 and g.tensor_maps == [ADD_MAP]
    # Metadata of an older cache entry (no key) still makes a kernel.
    old = dict(compiled_add.metadata)
    old.pop("tensor_maps", None)
    assert GPUKernel(compiled_add.name, dict(compiled_add.asm), old).gpu_kernel().tensor_maps == []


def test_tensor_maps_survive_the_disk_cache(compiled_add, tmp_path):
    k = _with_maps(compiled_add, [ADD_MAP, ADD_MAP])
    store = cache_mod.KernelCache(str(tmp_path))
    key = "ab" * 32
    store.put(key, k.to_blobs())
    again = GPUKernel.from_blobs(store.get(key))
    assert again.metadata["tensor_maps"] == [ADD_MAP, ADD_MAP]
    g = again.gpu_kernel()
    assert g.tensor_maps == [ADD_MAP, ADD_MAP] and g.tensor_maps_at == 4
    # and a kernel without maps reads back without the key
    store.put("cd" * 32, compiled_add.to_blobs())
    plain = GPUKernel.from_blobs(store.get("cd" * 32))
    assert "tensor_maps" not in plain.metadata and plain.gpu_kernel().tensor_maps == []
