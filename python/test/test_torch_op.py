"""tritium.torch_op: a tritium kernel wrapper as a torch custom operator. torch.compile with
fullgraph=True traces a model that calls it (a graph break would raise), eager and compiled
results match torch, and autograd runs the backward the user gives. On the CPU executor; the GPU
runs of the same operator only change the tensors' device."""

import pytest

torch = pytest.importorskip("torch")

import tritium  # noqa: E402
import tritium as triton  # noqa: E402
import tritium.language as tl  # noqa: E402


@triton.jit
def _scaled_add_kernel(x_ptr, y_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    tl.store(out_ptr + offs, x + alpha * y, mask=m)


@triton.jit
def _gelu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + offs, 0.5 * x * (1 + tl.erf(x * 0.7071067811865476)), mask=m)


def _scaled_add_setup(ctx, inputs, output):
    ctx.alpha = inputs[2]


def _scaled_add_backward(ctx, grad):
    return grad, ctx.alpha * grad, None


@tritium.torch_op("tritium_test::scaled_add", fake=lambda x, y, alpha: torch.empty_like(x),
                  backward=_scaled_add_backward, setup_context=_scaled_add_setup)
def scaled_add(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    _scaled_add_kernel[(triton.cdiv(n, 256),)](x, y, out, alpha, n, BLOCK=256)
    return out


def _gelu_backward(ctx, grad):
    (x,) = ctx.saved_tensors
    cdf = 0.5 * (1 + torch.erf(x * 0.7071067811865476))
    pdf = torch.exp(-0.5 * x * x) * 0.3989422804014327
    return grad * (cdf + x * pdf)


def _gelu_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])


@tritium.torch_op("tritium_test::gelu", fake=lambda x: torch.empty_like(x),
                  backward=_gelu_backward, setup_context=_gelu_setup)
def gelu(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    _gelu_kernel[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256)
    return out


class _Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(32, 64)
        self.fc2 = torch.nn.Linear(64, 32)

    def forward(self, x):
        h = gelu(self.fc1(x))
        return scaled_add(self.fc2(h), x, 0.5)


def _reference(m, x):
    h = torch.nn.functional.gelu(m.fc1(x))
    return m.fc2(h) + 0.5 * x


def test_eager_matches_torch():
    torch.manual_seed(0)
    m, x = _Model(), torch.randn(8, 32)
    torch.testing.assert_close(m(x), _reference(m, x), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_compile_fullgraph(backend, monkeypatch):
    # Inductor compiles C++ with the system compiler, which must not get the ASan runtime the
    # sanitizer job preloads into this interpreter.
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    # torch's on-disk compile caches do not key on the operators' Python implementations: a
    # cached graph from an earlier run would hide a change to them
    monkeypatch.setattr(torch._inductor.config, "fx_graph_cache", False)
    monkeypatch.setattr(torch._functorch.config, "enable_autograd_cache", False)
    torch.manual_seed(1)
    torch._dynamo.reset()
    m, x = _Model(), torch.randn(8, 32)
    compiled = torch.compile(m, fullgraph=True, backend=backend)
    out = compiled(x)
    torch.testing.assert_close(out, _reference(m, x), rtol=1e-5, atol=1e-5)
    # The backward through both custom operators, compiled, against torch's.
    out.sum().backward()
    got = [p.grad.clone() for p in m.parameters()]
    m.zero_grad()
    _reference(m, x).sum().backward()
    for g, p in zip(got, m.parameters()):
        torch.testing.assert_close(g, p.grad, rtol=1e-4, atol=1e-5)


def test_autograd_uses_the_given_backward():
    torch.manual_seed(2)
    x = torch.randn(64, requires_grad=True)
    gelu(x).sum().backward()
    x2 = x.detach().clone().requires_grad_(True)
    torch.nn.functional.gelu(x2).sum().backward()
    torch.testing.assert_close(x.grad, x2.grad, rtol=1e-5, atol=1e-6)


def test_a_function_returning_tensors_needs_fake():
    with pytest.raises(TypeError, match="needs fake="):
        @tritium.torch_op("tritium_test::nofake")
        def nofake(x: torch.Tensor) -> torch.Tensor:
            return x.clone()
