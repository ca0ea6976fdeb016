"""tritium kernels as PyTorch custom operators.

A Python function that launches tritium kernels is opaque to torch.compile: Dynamo cannot trace
into the launch, so a model calling it breaks its graph there. Registered as a custom operator
(torch.library) with a fake implementation (output shapes and dtypes, no computation), it becomes
one node of the graph: `torch.compile(model, fullgraph=True)` traces through it, and autograd
uses the backward the user gives.

    @tritium.torch_op("mylib::scaled_add", fake=lambda x, y, alpha: torch.empty_like(x))
    def scaled_add(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
        out = torch.empty_like(x)
        add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, alpha, x.numel(), BLOCK=1024)
        return out

The function needs type annotations (torch.library infers the operator's schema from them).
"""


def torch_op(name, *, fake=None, mutates_args=(), backward=None, setup_context=None,
             device_types=None):
    """Decorator: registers the function as the custom operator `name` ("namespace::op").

    fake: the fake (meta) implementation, taking the same arguments and returning empty tensors
      of the outputs' shapes and dtypes; required when the function returns tensors.
    mutates_args: the names of the arguments the function writes to (as in torch.library).
    backward, setup_context: the autograd formula (torch.library.register_autograd's).
    device_types: restrict the implementation to these device types ("cpu", "cuda").
    Returns the operator (callable like the function)."""
    import torch  # noqa: PLC0415 (torch is optional for the rest of tritium)

    def register(fn):
        op = torch.library.custom_op(name, mutates_args=mutates_args,
                                     device_types=device_types)(fn)
        returns = fn.__annotations__.get("return", None)
        if fake is not None:
            op.register_fake(fake)
        elif returns not in (None, type(None), "None"):
            raise TypeError(f"tritium.torch_op({name!r}): a function that returns tensors needs "
                            "fake= (a function giving empty outputs of the right shapes and "
                            "dtypes), so that torch.compile can trace it without running it")
        else:
            op.register_fake(lambda *args, **kwargs: None)
        if backward is not None:
            op.register_autograd(backward, setup_context=setup_context)
        elif setup_context is not None:
            raise TypeError(f"tritium.torch_op({name!r}): setup_context= needs backward=")
        return op

    return register
