"""The issue's small model (two linear layers, a tritium fused bias + GELU, a tritium layer norm;
see _model_ops.py) on CPU tensors, its kernels on the CPU executor: eager and
torch.compile(fullgraph=True) outputs and gradients match the model in plain torch.
test_gpu_model.py runs the same model on the GPU, also inside a captured CUDA graph."""

import pytest

torch = pytest.importorskip("torch")

import _model_ops as M  # noqa: E402


def _inputs(seed):
    torch.manual_seed(seed)
    model = M.Model()
    x = torch.randn(12, 32)
    dy = torch.randn(12, 48)
    return model, x, dy


def _assert_matches(model, run, x, dy):
    out, got = M.grads(model, run, x, dy)
    ref, want = M.grads(model, model.reference, x, dy)
    torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-5)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-5)


def test_eager_forward_and_backward_match_torch():
    model, x, dy = _inputs(0)
    _assert_matches(model, model, x, dy)


def test_layer_norm_op_on_non_contiguous_input():
    torch.manual_seed(3)
    wide = torch.randn(10, 80)
    x = wide[:, 5:53]  # rows 80 apart
    w, b = torch.randn(48), torch.randn(48)
    y, mean, rstd = M.layer_norm(x, w, b, 1e-5)
    torch.testing.assert_close(y, torch.nn.functional.layer_norm(x, (48,), w, b, 1e-5),
                               rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(mean, x.mean(1), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_compile_fullgraph_matches_torch(backend, monkeypatch):
    # Inductor compiles C++ with the system compiler, which must not get the ASan runtime the
    # sanitizer job preloads into this interpreter.
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    # torch's on-disk compile caches do not key on the operators' Python implementations: a
    # cached graph from an earlier run would hide a change to them
    monkeypatch.setattr(torch._inductor.config, "fx_graph_cache", False)
    monkeypatch.setattr(torch._functorch.config, "enable_autograd_cache", False)
    torch._dynamo.reset()
    model, x, dy = _inputs(1)
    compiled = torch.compile(model, fullgraph=True, backend=backend)
    _assert_matches(model, compiled, x, dy)
    # new data through the same compiled graph
    _assert_matches(model, compiled, torch.randn(12, 32), torch.randn(12, 48))


def test_compile_traces_the_custom_ops_as_graph_nodes():
    """The graph Dynamo captures calls the tritium operators (no graph break, not inlined)."""
    torch._dynamo.reset()
    model, x, _ = _inputs(2)
    seen = []

    def backend(gm, example_inputs):
        seen.append(str(gm.graph))
        return gm.forward

    out = torch.compile(model, fullgraph=True, backend=backend)(x)
    torch.testing.assert_close(out, model.reference(x), rtol=1e-4, atol=1e-5)
    assert len(seen) == 1
    assert "tritium_model.bias_gelu" in seen[0] and "tritium_model.layer_norm" in seen[0]
