"""A data-parallel training step whose layer norm (forward and backward) and fused activation
are tritium kernels, under torch.distributed (DDP).

    torchrun --nproc-per-node 2 examples/distributed/ddp_step.py

With CUDA GPUs each rank uses `cuda:<local rank>` and the NCCL backend; without them the gloo
backend and tritium's CPU executor. The ranks share one tritium cache (TRITIUM_CACHE_DIR): the
activation's autotuned block size is timed by one rank and read from disk by the other (the
autotuner's lock), which the printed counters show. Rank 0 checks the loss and every gradient
against a single-process run of the same step on the whole batch, and prints one JSON line per
rank.
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # examples/: layer_norm.py and _bench.py
try:
    import tritium  # noqa: F401
except ImportError:  # a checkout without tritium installed
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

import tritium as triton  # noqa: E402
import tritium.language as tl  # noqa: E402
from layer_norm import LayerNorm  # noqa: E402
from tritium import autotuner  # noqa: E402


@triton.autotune([triton.Config({"BLOCK": b}) for b in (128, 256, 512)], key=["n"])
@triton.jit
def leaky_relu_kernel(x_ptr, y_ptr, n, slope, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(y_ptr + offs, tl.where(x > 0, x, x * slope), mask=m)


@triton.jit
def leaky_relu_backward_kernel(x_ptr, dy_ptr, dx_ptr, n, slope, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    dy = tl.load(dy_ptr + offs, mask=m)
    tl.store(dx_ptr + offs, tl.where(x > 0, dy, dy * slope), mask=m)


DEVICES_SEEN = set()  # the devices of the tensors tritium's kernels ran on, in this rank


class LeakyReLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, slope):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        leaky_relu_kernel[lambda m: (triton.cdiv(n, m["BLOCK"]),)](x, y, n, slope)
        DEVICES_SEEN.add(str(x.device))
        ctx.save_for_backward(x)
        ctx.slope = slope
        return y

    @staticmethod
    def backward(ctx, dy):
        (x,) = ctx.saved_tensors
        dy = dy.contiguous()
        dx = torch.empty_like(x)
        n = x.numel()
        leaky_relu_backward_kernel[(triton.cdiv(n, 256),)](x, dy, dx, n, ctx.slope, BLOCK=256)
        DEVICES_SEEN.add(str(dx.device))
        return dx, None


class Block(torch.nn.Module):
    """Linear -> tritium layer norm -> tritium leaky ReLU -> Linear."""

    def __init__(self, d_in=32, d_hidden=64, d_out=8):
        super().__init__()
        self.fc1 = torch.nn.Linear(d_in, d_hidden)
        self.ln_weight = torch.nn.Parameter(torch.ones(d_hidden) + 0.1 * torch.randn(d_hidden))
        self.ln_bias = torch.nn.Parameter(0.1 * torch.randn(d_hidden))
        self.fc2 = torch.nn.Linear(d_hidden, d_out)

    def forward(self, x):
        h = self.fc1(x)
        h = LayerNorm.apply(h, self.ln_weight, self.ln_bias, 1e-5)
        return self.fc2(LeakyReLU.apply(h, 0.05))


def make_model_and_batch(device):
    torch.manual_seed(0)
    model = Block().to(device)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(64, 32, generator=g).to(device)
    target = torch.randn(64, 8, generator=g).to(device)
    return model, x, target


def step(model, x, target):
    loss = torch.nn.functional.mse_loss(model(x), target)
    loss.backward()
    return loss.detach()


def main():
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    cuda = torch.cuda.is_available() and torch.cuda.device_count() >= world
    device = torch.device(f"cuda:{local}") if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if cuda else "gloo")

    model, x, target = make_model_and_batch(device)
    ddp = DDP(model, device_ids=[local] if cuda else None)
    shard = x.shape[0] // world
    rows = slice(rank * shard, (rank + 1) * shard)
    loss = step(ddp, x[rows], target[rows])
    # The mean of the shards' losses is the whole batch's; DDP averaged the gradients.
    dist.all_reduce(loss)
    loss /= world
    grads = {n: p.grad.detach().clone() for n, p in model.named_parameters()}

    result = {"rank": rank, "world": world, "device": str(device),
              "tritium_devices": sorted(DEVICES_SEEN), "autotuner": autotuner.stats.as_dict(),
              "loss": float(loss)}
    if rank == 0:
        ref_model, _, _ = make_model_and_batch(device)
        ref_loss = step(ref_model, x, target)
        ref_grads = {n: p.grad for n, p in ref_model.named_parameters()}
        err = max(float((grads[n] - ref_grads[n]).abs().max()) for n in grads)
        result.update(ref_loss=float(ref_loss), max_grad_err=err,
                      ok=bool(abs(float(loss) - float(ref_loss)) <= 1e-5 * max(1.0, float(ref_loss))
                              and err <= 1e-5))
    else:
        # Every rank holds the same averaged gradients: compare with rank 0's.
        for n in sorted(grads):
            other = grads[n].clone()
            dist.broadcast(other, 0)
            assert torch.allclose(other, grads[n], rtol=0, atol=1e-6), n
    if rank == 0:
        for n in sorted(grads):
            dist.broadcast(grads[n], 0)
    # One write of the whole line: the ranks share the launcher's stdout.
    sys.stdout.flush()
    os.write(sys.stdout.fileno(), (json.dumps(result) + "\n").encode())
    dist.barrier()
    dist.destroy_process_group()
    return 0 if result.get("ok", True) else 1


if __name__ == "__main__":
    sys.exit(main())
