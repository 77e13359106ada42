"""``nn.SyncBatchNorm``: batch normalization whose training statistics cover the whole batch of a
distributed data-parallel run, every process's share of it (PyTorch's SyncBatchNorm).

Outside a process group of more than one process (or in eval mode) it is ``BatchNorm``. Inside
one, in training, each process computes its shares' per-channel mean and biased variance with
their element count; ``all_gather`` brings every process's three to all of them, and each
combines them the same way (the group's mean, and its variance as the counts' weighted mean of
the variances plus the spread of the means, which stays exact where a sum of squares would
cancel). The backward pass all-reduces the two per-channel sums the input's gradient needs
(of the incoming gradient and of it times the normalized input): the gradient of every element
depends on the whole batch. The weight's and bias's gradients stay local sums, which
DistributedDataParallel then averages as it does every parameter's.
"""
from __future__ import annotations

from ..frontend.autograd import Function, no_grad
from ..frontend.tensor import Tensor
from . import functional as F
from .layers import _BatchNorm
from .module import Module

__all__ = ["SyncBatchNorm"]


def _channel_view(t: Tensor, ndim: int) -> Tensor:
    """A (C,) tensor shaped to broadcast against an (N, C, ...) input."""
    return t.reshape((1, -1) + (1,) * (ndim - 2))


class _SyncBatchNormFunction(Function):
    @staticmethod
    def forward(ctx, input, weight, bias, running_mean, running_var, eps, momentum, group, world_size):
        from .. import distributed as dist
        from ..frontend.factories import empty
        from ..frontend.ops.joining import stack
        from ..frontend.ops.math_ops import var_mean

        dims = (0,) + tuple(range(2, input.ndim))
        count = input.numel() // input.shape[1]
        if count:
            local_var, local_mean = var_mean(input, dims, correction=0)
        else:  # this process holds no samples: it adds nothing (its count is 0)
            local_var = local_mean = input.new_zeros(input.shape[1])
        counts = local_mean.new_full((input.shape[1],), float(count))
        mine = stack([local_mean, local_var, counts])  # (3, C)
        gathered = empty((world_size,) + tuple(mine.shape), dtype=mine.dtype, device=mine.device)
        dist.all_gather_single(gathered, mine.contiguous(), group=group)
        means, variances, sizes = gathered[:, 0], gathered[:, 1], gathered[:, 2]
        total = sizes.sum(0)
        if float(total.min()) == 0:
            raise ValueError("SyncBatchNorm: the whole batch is empty on every process")
        mean = (sizes * means).sum(0) / total
        var = (sizes * (variances + (means - mean) ** 2)).sum(0) / total
        if running_mean is not None:
            with no_grad():
                total_count = float(total[0])
                unbiased = var * (total_count / max(total_count - 1.0, 1.0))
                running_mean.mul_(1 - momentum).add_(mean * momentum)
                running_var.mul_(1 - momentum).add_(unbiased * momentum)
        invstd = (var + eps).rsqrt()
        xhat = (input - _channel_view(mean, input.ndim)) * _channel_view(invstd, input.ndim)
        ctx.save_for_backward(xhat, invstd, weight, total)
        ctx.group, ctx.dims = group, dims
        out = xhat if weight is None else xhat * _channel_view(weight, input.ndim)
        return out if bias is None else out + _channel_view(bias, input.ndim)

    @staticmethod
    def backward(ctx, grad):
        from .. import distributed as dist
        from ..frontend.ops.joining import stack

        xhat, invstd, weight, total = ctx.saved_tensors
        ndim, dims = grad.ndim, ctx.dims
        sum_dy = grad.sum(dims)
        sum_dy_xhat = (grad * xhat).sum(dims)
        grad_input = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            sums = stack([sum_dy, sum_dy_xhat]).contiguous()
            dist.all_reduce(sums, group=ctx.group)
            scale = invstd if weight is None else invstd * weight
            grad_input = (grad - _channel_view(sums[0] / total, ndim)
                          - xhat * _channel_view(sums[1] / total, ndim)) * _channel_view(scale, ndim)
        if weight is not None and ctx.needs_input_grad[1]:
            grad_weight = sum_dy_xhat
        if ctx.needs_input_grad[2]:
            grad_bias = sum_dy
        return grad_input, grad_weight, grad_bias, None, None, None, None, None, None


class SyncBatchNorm(_BatchNorm):
    """Batch normalization over (N, C, ...) inputs with statistics over every process's batch
    (see the module); ``process_group`` None means the default group."""

    _expected_dims = (2, 3, 4, 5)
    _layout = "[N, {C}, *]"

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, process_group=None, device=None, dtype=None, *, bias: bool = True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)
        self.process_group = process_group

    def forward(self, input):
        if not isinstance(input, Tensor) or input.ndim < 2:
            raise ValueError(f"expected at least 2D input (got {input.ndim if isinstance(input, Tensor) else '?'}D input)")
        world_size = self._world_size() if self.training else 1
        if world_size <= 1:
            return super().forward(input)
        if input.shape[1] != self.num_features:
            return super().forward(input)  # the shape error, worded as BatchNorm's
        factor = 0.0 if self.momentum is None else self.momentum
        running = self.track_running_stats and self.running_mean is not None
        if running and self.num_batches_tracked is not None:
            with no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked.item())
        return _SyncBatchNormFunction.apply(input, self.weight, self.bias, self.running_mean if running else None,
                                            self.running_var if running else None, self.eps, factor,
                                            self.process_group, world_size)

    def _world_size(self) -> int:
        from .. import distributed as dist

        if not (dist.is_available() and dist.is_initialized()):
            return 1
        return dist.get_world_size(self.process_group)

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group=None) -> Module:
        """``module`` with every BatchNorm1d/2d/3d (anywhere inside it) replaced by a SyncBatchNorm
        holding the same parameters, buffers, training mode and requires_grad, as PyTorch's."""
        converted = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            converted = SyncBatchNorm(module.num_features, module.eps, module.momentum, module.affine,
                                      module.track_running_stats, process_group)
            if module.affine:
                with no_grad():
                    converted.weight = module.weight
                    converted.bias = module.bias
            converted.running_mean = module.running_mean
            converted.running_var = module.running_var
            converted.num_batches_tracked = module.num_batches_tracked
            converted.training = module.training
            if hasattr(module, "qconfig"):
                converted.qconfig = module.qconfig
        for name, child in module.named_children():
            converted.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        del module
        return converted
