"""A fused linear + GELU, written the way it often is on a first try."""
import torch
import torch.nn.functional as F


class FusedLinearGelu(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias=None, approximate="tanh"):
        pre = F.linear(x, weight, bias)
        # Bug: tensors kept as ctx attributes escape save_for_backward's checks
        # and activation-checkpointing hooks, and inputs here leak memory.
        ctx.x = x
        ctx.weight = weight
        ctx.pre = pre
        ctx.approximate = approximate
        return F.gelu(pre, approximate=approximate)

    @staticmethod
    def backward(ctx, grad_out):
        pre = ctx.pre
        with torch.enable_grad():
            pre = pre.detach().requires_grad_()
            (dgelu,) = torch.autograd.grad(F.gelu(pre, approximate=ctx.approximate), pre,
                                           grad_out)
        grad_x = dgelu @ ctx.weight
        grad_w = dgelu.flatten(0, -2).t() @ ctx.x.flatten(0, -2)
        # Bug: forward takes 4 inputs, so autograd expects 4 gradients; this
        # fails as soon as a caller passes the optional bias.
        return grad_x, grad_w


def fused_linear_gelu(x, weight, bias=None):
    return FusedLinearGelu.apply(x, weight, bias)
