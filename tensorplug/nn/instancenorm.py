"""InstanceNorm1d/2d/3d: normalize each (sample, channel) over its spatial dims (``F.instance_norm``).

The parameters and buffers are BatchNorm's (a shared `_NormBase`, same names, so PyTorch state dicts load), with
PyTorch's instance-norm defaults: no affine parameters and no running statistics. With
``track_running_stats`` the running statistics are updated in training and used in eval.
"""
from __future__ import annotations

import warnings

from ..frontend.tensor import Tensor
from . import functional as F
from .layers import _NormBase

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]


class _InstanceNorm(_NormBase):
    _spatial_dims: int = 1

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = False,
                 track_running_stats: bool = False, device=None, dtype=None, *, bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def forward(self, input):
        no_batch_dims = self._spatial_dims + 1
        name = type(self).__name__
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}: expected a Tensor input, got {type(input).__name__}")
        if input.ndim not in (no_batch_dims, no_batch_dims + 1):
            raise ValueError(f"expected {no_batch_dims}D or {no_batch_dims + 1}D input (got {input.ndim}D input)")
        channels = input.shape[input.ndim - no_batch_dims]
        if channels != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={input.ndim - no_batch_dims} to match num_features "
                                 f"({self.num_features}), but got: {channels}.")
            warnings.warn(f"input's size at dim={input.ndim - no_batch_dims} does not match num_features. You can "
                          "silence this warning by not passing in num_features, which is not used because affine=False",
                          UserWarning, stacklevel=2)
        if input.ndim == no_batch_dims:  # unbatched: normalize as a batch of one
            return self._normalize(input.unsqueeze(0)).squeeze(0)
        return self._normalize(input)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:
        # As PyTorch: a state dict without a version (before 0.4.0, or whose metadata was lost)
        # with running statistics for a module that tracks none is an error naming the keys.
        if local_metadata.get("version", None) is None and not self.track_running_stats:
            keys = [prefix + name for name in ("running_mean", "running_var") if prefix + name in state_dict]
            if keys:
                klass = type(self).__name__
                error_msgs.append(
                    "Unexpected running stats buffer(s) {names} for {klass} with track_running_stats=False. If "
                    "state_dict is a checkpoint saved before 0.4.0, this may be expected because {klass} does not "
                    "track running stats by default since 0.4.0. Please remove these keys from state_dict. If the "
                    "running stats are actually needed, instead set track_running_stats=True in {klass} to enable "
                    "them. See the documentation of {klass} for details.".format(
                        names=" and ".join(f'"{k}"' for k in keys), klass=klass)
                )
                for key in keys:
                    state_dict.pop(key)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)

    def _normalize(self, input: Tensor) -> Tensor:
        momentum = 0.0 if self.momentum is None else self.momentum
        return F.instance_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                               self.training or not self.track_running_stats, momentum, self.eps)


class InstanceNorm1d(_InstanceNorm):
    """Over (N, C, L) or unbatched (C, L) inputs."""
    _spatial_dims = 1


class InstanceNorm2d(_InstanceNorm):
    """Over (N, C, H, W) or unbatched (C, H, W) inputs."""
    _spatial_dims = 2


class InstanceNorm3d(_InstanceNorm):
    """Over (N, C, D, H, W) or unbatched (C, D, H, W) inputs."""
    _spatial_dims = 3
