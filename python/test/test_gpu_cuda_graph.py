"""tritium launches inside torch.cuda graphs, and the tensor-like arguments torch users pass
(marker gpu).

- A captured graph of several launches (add, then softmax, then layer norm) replays with new
  data copied into its static inputs and matches torch each time. That only works when the
  launches go to torch's current stream (the capture stream) and do nothing a capture forbids.
- A kernel launched for the first time during a capture (it compiles and loads its module
  then) is captured too: the module load runs in the relaxed capture mode
  (lib/runtime/launcher.cpp), where the driver allows it.
- A bounds-checked launch, which waits for the kernel, refuses to be captured with a clear
  error instead of invalidating the capture.
- Views with offsets and strides, objects with __cuda_array_interface__ and DLPack producers.

Outputs are poisoned with NaN before every launch or replay; inputs are fresh random values.
"""

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu

import tritium as triton  # noqa: E402
import tritium.language as tl  # noqa: E402
from tritium.errors import ExecutionError, load_C  # noqa: E402

DEV = "cuda"


@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m),
             mask=m)


@triton.jit
def _softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(in_ptr + row * in_stride + cols, mask=cols < n_cols, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * out_stride + cols, e / tl.sum(e, axis=0), mask=cols < n_cols)


@triton.jit
def _layer_norm_kernel(x_ptr, y_ptr, w_ptr, b_ptr, stride, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=m, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    d = tl.where(m, x - mean, 0.0)
    rstd = 1 / tl.sqrt(tl.sum(d * d, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=m)
    b = tl.load(b_ptr + cols, mask=m)
    tl.store(y_ptr + row * stride + cols, d * rstd * w + b, mask=m)


def _pipeline(x, y, w, b, s, p, out):
    """out = layer_norm(softmax(x + y)) by three tritium launches into s, p and out."""
    rows, cols = x.shape
    _add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, s, x.numel(), BLOCK=1024)
    block = triton.next_power_of_2(cols)
    _softmax_kernel[(rows,)](p, s, s.stride(0), p.stride(0), cols, BLOCK=block)
    _layer_norm_kernel[(rows,)](p, out, w, b, p.stride(0), cols, 1e-5, BLOCK=block)


def _randomise_(*tensors):
    for t in tensors:
        t.copy_(torch.randn_like(t))


def test_graph_of_several_launches_replays_with_new_data():
    rows, cols = 96, 300
    x, y = torch.randn(rows, cols, device=DEV), torch.randn(rows, cols, device=DEV)
    w, b = torch.randn(cols, device=DEV), torch.randn(cols, device=DEV)
    s, p, out = (torch.full((rows, cols), float("nan"), device=DEV) for _ in range(3))
    # Compile and load every kernel outside the capture, on a side stream as torch advises.
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        _pipeline(x, y, w, b, s, p, out)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()

    kernels = (_add_kernel, _softmax_kernel, _layer_norm_kernel)
    hits = [load_C().fast_stats(k._fast)["hits"] for k in kernels]
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        _pipeline(x, y, w, b, s, p, out)
    # each captured launch went through the C++ fast path (torch's current stream from C++)
    assert [load_C().fast_stats(k._fast)["hits"] for k in kernels] == [h + 1 for h in hits]
    for _ in range(3):
        _randomise_(x, y, w, b)
        for t in (s, p, out):
            t.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        want = torch.nn.functional.layer_norm(torch.softmax(x + y, dim=1), (cols,), w, b, 1e-5)
        torch.testing.assert_close(s, x + y)
        torch.testing.assert_close(out, want, rtol=1e-3, atol=1e-3)


def test_graph_replays_on_the_stream_it_is_given():
    """Captured on a user stream, replayed after new data was written on another stream."""
    n = 5000
    x, y = torch.randn(n, device=DEV), torch.randn(n, device=DEV)
    out = torch.full((n,), float("nan"), device=DEV)
    _add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)  # compile outside
    torch.cuda.synchronize()
    stream = torch.cuda.Stream()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        _add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    writer = torch.cuda.Stream()
    with torch.cuda.stream(writer):
        _randomise_(x, y)
        out.fill_(float("nan"))
    torch.cuda.current_stream().wait_stream(writer)
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x + y)


@triton.jit
def _scale_shift_kernel(x_ptr, out_ptr, n, a, b, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * a + b, mask=m)


def test_first_launch_during_capture(tmp_path, monkeypatch):
    """The kernel compiles and its module loads inside the capture. Either that is captured
    and replays right (what the launcher does: the load runs in the relaxed capture mode), or
    it fails with an error that says capture is the problem; never a silently wrong graph."""
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))  # nothing compiled on disk either
    # a fresh JITFunction: no compiled kernel, no loaded module
    kernel = triton.jit(_scale_shift_kernel.fn)
    n = 3000
    x = torch.randn(n, device=DEV)
    out = torch.full((n,), float("nan"), device=DEV)
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            kernel[(triton.cdiv(n, 512),)](x, out, n, 2.0, 0.5, BLOCK=512)
    except Exception as e:  # noqa: BLE001
        assert any(w in str(e).lower() for w in ("captur", "graph")), str(e)
        pytest.fail(f"the first launch during a capture failed (clearly, but it should work "
                    f"since the module load runs in the relaxed capture mode): {e}")
    for _ in range(2):
        _randomise_(x)
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        torch.testing.assert_close(out, x * 2.0 + 0.5)


def test_bounds_checked_launch_refuses_capture():
    kernel = triton.jit(_scale_shift_kernel.fn, debug=True)
    n = 1000
    x = torch.randn(n, device=DEV)
    out = torch.full((n,), float("nan"), device=DEV)
    kernel[(2,)](x, out, n, 1.0, 0.0, BLOCK=512)  # compiled and run outside: fine
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x)
    graph = torch.cuda.CUDAGraph()
    with pytest.raises(ExecutionError, match="cannot be captured in a CUDA graph"):
        with torch.cuda.graph(graph):
            kernel[(2,)](x, out, n, 1.0, 0.0, BLOCK=512)
    # the process can still launch and capture afterwards
    out.fill_(float("nan"))
    _add_kernel[(1,)](x, x, out, n, BLOCK=1024)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, 2 * x)


# ---------------------------------------------------------------------------
# strided views and foreign tensor types


@triton.jit
def _copy2d_kernel(x_ptr, y_ptr, M, N, sxm, sxn, sym, syn, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    m = (rm[:, None] < M) & (rn[None, :] < N)
    v = tl.load(x_ptr + rm[:, None] * sxm + rn[None, :] * sxn, mask=m)
    tl.store(y_ptr + rm[:, None] * sym + rn[None, :] * syn, v * 2, mask=m)


@pytest.mark.parametrize("view", ["offset", "every_other_column", "transposed_slice",
                                  "expanded_row"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_strided_views_in_and_out(view, dtype):
    base = torch.randn(70, 90, device=DEV).to(dtype)
    x = {"offset": base[3:, 5:],
         "every_other_column": base[:, 1::2],
         "transposed_slice": base[2:60, 7:80].t(),
         "expanded_row": base[4:5, :].expand(33, 90)}[view]
    # the output is a view too: every third row of a larger buffer, NaN everywhere else
    big = torch.full((3 * x.shape[0], x.shape[1] + 4), float("nan"), device=DEV, dtype=dtype)
    y = big[::3, 2:2 + x.shape[1]]
    M, N = x.shape
    _copy2d_kernel[(triton.cdiv(M, 32), triton.cdiv(N, 32))](
        x, y, M, N, x.stride(0), x.stride(1), y.stride(0), y.stride(1), BM=32, BN=32)
    torch.testing.assert_close(y, x * 2)
    untouched = torch.ones_like(big, dtype=torch.bool)
    untouched[::3, 2:2 + N] = False
    assert torch.isnan(big[untouched]).all()


class _CudaArrayInterfaceOnly:
    """Exposes a CUDA tensor's memory through __cuda_array_interface__ alone (as numba and
    cupy arrays do)."""

    def __init__(self, t):
        self._t = t
        self.__cuda_array_interface__ = t.__cuda_array_interface__


class _DLPackOnly:
    def __init__(self, t):
        self._t = t

    def __dlpack__(self, *args, **kwargs):
        return self._t.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self._t.__dlpack_device__()


@pytest.mark.parametrize("wrap", [_CudaArrayInterfaceOnly, _DLPackOnly])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_foreign_gpu_arrays(wrap, dtype):
    n = 4097
    x, y = torch.randn(n, device=DEV, dtype=dtype), torch.randn(n, device=DEV, dtype=dtype)
    out = torch.full((n,), float("nan"), device=DEV, dtype=dtype)
    _add_kernel[(triton.cdiv(n, 1024),)](wrap(x), wrap(y), wrap(out), n, BLOCK=1024)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x + y)


def test_cuda_array_interface_args_in_a_graph():
    n = 2000
    x, y = torch.randn(n, device=DEV), torch.randn(n, device=DEV)
    out = torch.full((n,), float("nan"), device=DEV)
    args = (_CudaArrayInterfaceOnly(x), _CudaArrayInterfaceOnly(y), _CudaArrayInterfaceOnly(out))
    _add_kernel[(2,)](*args, n, BLOCK=1024)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        _add_kernel[(2,)](*args, n, BLOCK=1024)
    _randomise_(x, y)
    out.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x + y)
