"""The same ideas written correctly: autograd-lint reports nothing here."""
import torch
import torch.distributed as dist
import torch.nn.functional as F


class FusedLinearGelu(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias=None):
        pre = F.linear(x, weight, bias)
        ctx.save_for_backward(x, weight, pre)
        ctx.has_bias = bias is not None
        return F.gelu(pre)

    @staticmethod
    def backward(ctx, grad_out):
        x, weight, pre = ctx.saved_tensors
        with torch.enable_grad():
            pre = pre.detach().requires_grad_()
            (dgelu,) = torch.autograd.grad(F.gelu(pre), pre, grad_out)
        grad_x = dgelu @ weight if ctx.needs_input_grad[0] else None
        grad_w = dgelu.flatten(0, -2).t() @ x.flatten(0, -2) if ctx.needs_input_grad[1] else None
        grad_b = dgelu.flatten(0, -2).sum(0) if ctx.has_bias and ctx.needs_input_grad[2] else None
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
