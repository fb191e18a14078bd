"""Tensor-parallel region markers, as in Megatron-style model code."""
import torch
import torch.distributed as dist


class ReduceFromTensorParallelRegion(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, group=None):
        # Bug: all_reduce writes into the caller's tensor, and forward never
        # tells autograd (ctx.mark_dirty) that its input changed.
        dist.all_reduce(x, group=group)
        return x

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output, None


class CopyToTensorParallelRegion(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, group=None):
        ctx.group = group
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad_output):
        # Bug: reduces the incoming gradient in place.
        dist.all_reduce(grad_output, group=ctx.group)
        return grad_output, None
