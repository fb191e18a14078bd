"""The same ideas written correctly: autograd-lint reports nothing here, also
with `--dynamic` (run `python examples/clean_reference.py` for the gradchecks
that AGF301 asks every Function to have)."""
import torch
import torch.distributed as dist
import torch.nn.functional as F


class FusedLinearGelu(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias=None):
        ctx.save_for_backward(x, weight, bias)
        return F.gelu(F.linear(x, weight, bias))

    @staticmethod
    def backward(ctx, grad_out):
        x, weight, bias = ctx.saved_tensors
        # Recomputed from the inputs with differentiable ops, so double
        # backward (create_graph=True) differentiates through this too.
        pre = F.linear(x, weight, bias)
        cdf = 0.5 * (1.0 + torch.erf(pre * 0.5**0.5))
        pdf = torch.exp(-0.5 * pre * pre) * (2.0 * torch.pi) ** -0.5
        dgelu = grad_out * (cdf + pre * pdf)
        grad_x = dgelu @ weight if ctx.needs_input_grad[0] else None
        grad_w = dgelu.flatten(0, -2).t() @ x.flatten(0, -2) if ctx.needs_input_grad[1] else None
        grad_b = dgelu.flatten(0, -2).sum(0) if bias is not None and ctx.needs_input_grad[2] \
            else None
        return grad_x, grad_w, grad_b


class CopyToTensorParallelRegion(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, group=None):
        ctx.group = group
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad_output):
        grad = grad_output.clone()
        dist.all_reduce(grad, group=ctx.group)
        return grad, None


def check_gradients() -> None:
    """gradcheck and gradgradcheck in float64 (a process group of one for the
    all-reduce)."""
    x = torch.randn(3, 4, dtype=torch.double, requires_grad=True)
    weight = torch.randn(5, 4, dtype=torch.double, requires_grad=True)
    bias = torch.randn(5, dtype=torch.double, requires_grad=True)
    assert torch.autograd.gradcheck(FusedLinearGelu.apply, (x, weight, bias))
    assert torch.autograd.gradgradcheck(FusedLinearGelu.apply, (x, weight, bias))
    if not dist.is_initialized():
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:29512", rank=0,
                                world_size=1)
    assert torch.autograd.gradcheck(CopyToTensorParallelRegion.apply, (x,))
    assert torch.autograd.gradgradcheck(CopyToTensorParallelRegion.apply, (x,))


if __name__ == "__main__":
    check_gradients()
    print("gradcheck and gradgradcheck pass")
