"""A straight-through-estimator quantizer with a clipping mask."""
import torch


class QuantizeSTE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale, bits: int = 8):
        qmax = 2 ** (bits - 1) - 1
        ctx.save_for_backward(x, scale)
        # Bug: `bits` is an int; save_for_backward only takes tensors.
        ctx.save_for_backward(x, scale, bits)
        return torch.clamp(torch.round(x / scale), -qmax - 1, qmax) * scale

    @staticmethod
    def backward(ctx, grad_out):
        x, scale, bits = ctx.saved_tensors
        qmax = 2 ** (bits - 1) - 1
        outside = (x / scale).abs() > qmax
        # Bug: changes the incoming gradient in place; another node may share it.
        grad_out[outside] = 0
        # Bug: a literal is not a gradient; `bits` needs None.
        return grad_out, None, 0
