"""The small model of the PyTorch-integration tests: two linear layers, a tritium fused bias +
GELU between them and a tritium layer norm after, each a torch custom operator
(tritium.torch_op) with a fake implementation and a backward that launches tritium kernels
through custom operators of its own, so that torch.compile traces forward and backward without
running them. The layer norm's kernels are examples/layer_norm.py's (forward, dx, and the
partial-sum dw/db reduction). Used by test_model_cpu.py (CPU executor) and test_gpu_model.py.
"""

import importlib.util
import os
import sys

import torch

import tritium
import tritium as triton
import tritium.language as tl

_EXAMPLES = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "examples"))


def _load_layer_norm_example():
    if _EXAMPLES not in sys.path:  # the example imports its helpers (_bench.py) from there
        sys.path.append(_EXAMPLES)
    spec = importlib.util.spec_from_file_location("tritium_example_layer_norm",
                                                  os.path.join(_EXAMPLES, "layer_norm.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


LN = _load_layer_norm_example()

SQRT1_2 = 0.7071067811865476
INV_SQRT_2PI = 0.3989422804014327


@triton.jit
def _bias_gelu_kernel(x_ptr, b_ptr, out_ptr, n, n_cols, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    z = tl.load(x_ptr + offs, mask=m) + tl.load(b_ptr + offs % n_cols, mask=m)
    tl.store(out_ptr + offs, 0.5 * z * (1 + tl.erf(z * SQRT1_2)), mask=m)


@triton.jit
def _bias_gelu_bwd_kernel(g_ptr, x_ptr, b_ptr, dz_ptr, n, n_cols, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    z = tl.load(x_ptr + offs, mask=m) + tl.load(b_ptr + offs % n_cols, mask=m)
    cdf = 0.5 * (1 + tl.erf(z * SQRT1_2))
    pdf = tl.exp(-0.5 * z * z) * INV_SQRT_2PI
    tl.store(dz_ptr + offs, tl.load(g_ptr + offs, mask=m) * (cdf + z * pdf), mask=m)


def _launch_elementwise(kernel, *tensors):
    n, n_cols = tensors[0].numel(), tensors[0].shape[-1]
    kernel[(triton.cdiv(n, 256),)](*tensors, n, n_cols, BLOCK=256)


@tritium.torch_op("tritium_model::bias_gelu_backward",
                  fake=lambda g, x, b: torch.empty_like(x))
def bias_gelu_backward(g: torch.Tensor, x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    g, x = g.contiguous(), x.contiguous()
    dz = torch.empty_like(x)
    _launch_elementwise(_bias_gelu_bwd_kernel, g, x, b, dz)
    return dz


def _bias_gelu_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0], inputs[1])


def _bias_gelu_backward(ctx, grad):
    x, b = ctx.saved_tensors
    dz = bias_gelu_backward(grad, x, b)
    return dz, dz.sum(0)


@tritium.torch_op("tritium_model::bias_gelu", fake=lambda x, b: torch.empty_like(x),
                  backward=_bias_gelu_backward, setup_context=_bias_gelu_setup)
def bias_gelu(x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """gelu(x + b) for a 2-D x and a bias over its last dimension, in one kernel."""
    x = x.contiguous()
    out = torch.empty_like(x)
    _launch_elementwise(_bias_gelu_kernel, x, b, out)
    return out


def _layer_norm_fake(x, w, b, eps):
    rows = x.shape[0]
    return (torch.empty_like(x), x.new_empty(rows, dtype=torch.float32),
            x.new_empty(rows, dtype=torch.float32))


def _layer_norm_backward_fake(dy, x, w, mean, rstd):
    return torch.empty_like(x), torch.empty_like(w), torch.empty_like(w)


@tritium.torch_op("tritium_model::layer_norm_backward", fake=_layer_norm_backward_fake)
def layer_norm_backward(dy: torch.Tensor, x: torch.Tensor, w: torch.Tensor, mean: torch.Tensor,
                        rstd: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return LN.layer_norm_backward(dy.contiguous(), x, w, mean, rstd)


def _layer_norm_setup(ctx, inputs, output):
    x, w = inputs[0], inputs[1]
    ctx.save_for_backward(x, w, output[1], output[2])


def _layer_norm_backward(ctx, dy, _dmean, _drstd):
    x, w, mean, rstd = ctx.saved_tensors
    dx, dw, db = layer_norm_backward(dy, x, w, mean, rstd)
    return dx, dw, db, None


@tritium.torch_op("tritium_model::layer_norm", fake=_layer_norm_fake,
                  backward=_layer_norm_backward, setup_context=_layer_norm_setup)
def layer_norm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor,
               eps: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(y, mean, rstd) of a 2-D x (the mean and rstd are for the backward)."""
    return LN.layer_norm(x.contiguous(), w, b, eps)


class Model(torch.nn.Module):
    def __init__(self, d_in=32, d_hidden=64, d_out=48, eps=1e-5):
        super().__init__()
        self.fc1 = torch.nn.Linear(d_in, d_hidden, bias=False)
        self.b1 = torch.nn.Parameter(torch.randn(d_hidden) * 0.1)
        self.fc2 = torch.nn.Linear(d_hidden, d_out)
        self.norm = torch.nn.LayerNorm(d_out, eps=eps)
        with torch.no_grad():  # not the trivial ones and zeros
            self.norm.weight.copy_(1 + 0.1 * torch.randn(d_out))
            self.norm.bias.copy_(0.1 * torch.randn(d_out))

    def forward(self, x):
        h = bias_gelu(self.fc1(x), self.b1)
        y, _, _ = layer_norm(self.fc2(h), self.norm.weight, self.norm.bias, self.norm.eps)
        return y

    def reference(self, x):
        """The same model in eager torch alone."""
        h = torch.nn.functional.gelu(self.fc1(x) + self.b1)
        return self.norm(self.fc2(h))


def grads(model, run, x, dy):
    """(output, [input grad] + parameter grads) of run(x) with upstream gradient dy."""
    model.zero_grad(set_to_none=True)
    x = x.detach().requires_grad_(True)
    out = run(x)
    out.backward(dy)
    return out.detach(), [x.grad] + [p.grad for p in model.parameters()]
