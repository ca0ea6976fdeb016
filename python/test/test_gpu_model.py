"""The issue's done-when model on the GPU (marker gpu): two linear layers with a tritium fused
bias + GELU and a tritium layer norm, each a torch custom operator with a fake implementation
and a tritium backward (_model_ops.py), matches the same model in plain torch

- eagerly (forward and all gradients),
- under torch.compile(fullgraph=True) (inductor: the operators are graph nodes, no break),
- inside a captured CUDA graph, forward alone and forward + backward, replayed with new data
  copied into the static input.

test_model_cpu.py runs the eager and torch.compile parts on the CPU executor in CI.
"""

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu

import _model_ops as M  # noqa: E402

DEV = "cuda"
TOL = dict(rtol=1e-4, atol=1e-4)


@pytest.fixture(autouse=True)
def _exact_and_uncached(monkeypatch):
    # TF32 would make torch's own linear layers differ between the two runs compared
    monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", False)
    # torch's on-disk compile caches do not key on the operators' Python implementations: a
    # cached graph from an earlier run would hide a change to them
    monkeypatch.setattr(torch._inductor.config, "fx_graph_cache", False)
    monkeypatch.setattr(torch._functorch.config, "enable_autograd_cache", False)


def _setup(seed, batch=64):
    torch.manual_seed(seed)
    model = M.Model(d_in=128, d_hidden=512, d_out=256).to(DEV)
    x = torch.randn(batch, 128, device=DEV)
    dy = torch.randn(batch, 256, device=DEV)
    return model, x, dy


def _assert_matches(model, run, x, dy):
    out, got = M.grads(model, run, x, dy)
    ref, want = M.grads(model, model.reference, x, dy)
    torch.testing.assert_close(out, ref, **TOL)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, **TOL)


def test_eager_matches_torch():
    model, x, dy = _setup(0)
    _assert_matches(model, model, x, dy)


# inductor generates Triton kernels for the torch operations around the tritium operators (as
# it does in any model); aot_eager runs them eagerly
BACKENDS = ["inductor", "aot_eager"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_compile_fullgraph_matches_torch(backend):
    torch._dynamo.reset()
    model, x, dy = _setup(1)
    compiled = torch.compile(model, fullgraph=True, backend=backend)
    _assert_matches(model, compiled, x, dy)
    _assert_matches(model, compiled, torch.randn_like(x), torch.randn_like(dy))


def _warm_up(fn, iters=3):
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(iters):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()


def _check_forward_replays(fn, model, x, replays):
    """fn(x) captured in a CUDA graph, replayed on new data in the static input (output
    poisoned first) against the model's plain-torch reference."""
    static_x = x.clone()
    with torch.no_grad():
        _warm_up(lambda: fn(static_x))
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_out = fn(static_x)
        for _ in range(replays):
            static_x.copy_(torch.randn_like(static_x))
            static_out.fill_(float("nan"))
            graph.replay()
            torch.testing.assert_close(static_out, model.reference(static_x), **TOL)


def test_forward_in_a_cuda_graph():
    model, x, _ = _setup(2)
    _check_forward_replays(model, model, x, 3)


def test_forward_and_backward_in_a_cuda_graph():
    model, x, dy = _setup(3)
    static_x = x.clone().requires_grad_(True)
    static_dy = dy.clone()

    def step():
        out = model(static_x)
        out.backward(static_dy)
        return out

    _warm_up(step)
    model.zero_grad(set_to_none=True)
    static_x.grad = None
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = step()
    params = list(model.parameters())
    static_grads = [static_x.grad] + [p.grad for p in params]
    for _ in range(3):
        with torch.no_grad():
            static_x.copy_(torch.randn_like(static_x))
            static_dy.copy_(torch.randn_like(static_dy))
        for t in [static_out] + static_grads:
            t.detach().fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        got = [static_out.detach().clone()] + [g.clone() for g in static_grads]
        ref, want = M.grads(model, model.reference, static_x.detach(), static_dy)
        torch.testing.assert_close(got[0], ref, **TOL)
        for g, w in zip(got[1:], want):
            torch.testing.assert_close(g, w, **TOL)
        # M.grads replaced the .grad tensors; the graph writes the captured ones
        static_x.grad = static_grads[0]
        for p, g in zip(params, static_grads[1:]):
            p.grad = g


@pytest.mark.parametrize("backend", BACKENDS)
def test_compiled_model_in_a_cuda_graph(backend):
    """torch.compile(fullgraph=True) output, captured in a CUDA graph by hand."""
    torch._dynamo.reset()
    model, x, _ = _setup(4)
    compiled = torch.compile(model, fullgraph=True, backend=backend)
    _check_forward_replays(compiled, model, x, 2)
