"""``tp.nn.utils``: gradient clipping, flattening parameters to one vector, ``skip_init`` and the
legacy ``weight_norm``/``remove_weight_norm``; ``tp.nn.utils.rnn``
holds the padded and packed sequence utilities, ``tp.nn.utils.parametrize`` the
parametrizations and ``tp.nn.utils.parametrizations`` their weight_norm and spectral_norm.

>>> import tensorplug as tp
>>> w = tp.nn.Parameter(tp.ones(4))
>>> (w * 3).sum().backward()
>>> round(tp.nn.utils.clip_grad_norm_([w], max_norm=1.0).item(), 4)
6.0
"""
from __future__ import annotations

import math

from ...frontend.autograd import no_grad
from ...frontend.factories import tensor
from ...frontend.ops.joining import cat, stack
from ...frontend.tensor import Tensor
from . import parametrizations, parametrize, rnn
from ._skip_init import skip_init
from ._spectral_norm import remove_spectral_norm, spectral_norm
from ._weight_norm import remove_weight_norm, weight_norm

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm", "parameters_to_vector", "vector_to_parameters",
           "weight_norm", "remove_weight_norm", "spectral_norm", "remove_spectral_norm", "skip_init"]


def _as_list(parameters) -> list:
    if isinstance(parameters, Tensor):
        return [parameters]
    return list(parameters)


def get_total_norm(tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """The ``norm_type``-norm of all ``tensors`` together, as if concatenated into one vector."""
    tensors = _as_list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return tensor(0.0)
    with no_grad():
        if norm_type == math.inf:
            norms = [t.detach().abs().amax() for t in tensors]
            total = stack([n.to(tensors[0].dtype) for n in norms]).amax()
        else:
            norms = [t.detach().norm(norm_type) for t in tensors]
            total = stack([n.to(tensors[0].dtype) for n in norms]).norm(norm_type)
    if error_if_nonfinite and not math.isfinite(total.item()):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it cannot be "
            "clipped. To disable this error and scale the gradients by the non-finite norm anyway, set "
            "`error_if_nonfinite=False`"
        )
    return total


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """Scale the gradients in place so that their total norm is at most ``max_norm``; returns the
    total norm before clipping (``norm_type`` may be ``float('inf')``)."""
    params = [p for p in _as_list(parameters) if p.grad is not None]
    total = get_total_norm([p.grad for p in params], norm_type, error_if_nonfinite)
    if not params:
        return total
    with no_grad():
        # No branch on the value (as PyTorch): a coefficient clamped to 1 leaves grads unchanged.
        coefficient = (float(max_norm) / (total + 1e-6)).clamp(max=1.0)
        for p in params:
            p.grad.mul_(coefficient.to(p.grad.dtype))
    return total


def clip_grad_norm(parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """Deprecated alias of :func:`clip_grad_norm_` (as in PyTorch)."""
    import warnings

    warnings.warn(
        "`torch.nn.utils.clip_grad_norm` is now deprecated in favor of `torch.nn.utils.clip_grad_norm_`.",
        FutureWarning, stacklevel=2,
    )
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamp every gradient to [-clip_value, clip_value] in place."""
    clip_value = float(clip_value)
    with no_grad():
        for p in _as_list(parameters):
            if p.grad is not None:
                p.grad.clamp_(min=-clip_value, max=clip_value)


def parameters_to_vector(parameters) -> Tensor:
    """All parameters flattened and concatenated into one 1-D tensor (a copy)."""
    params = _as_list(parameters)
    device = None
    for p in params:
        if device is not None and p.device != device:
            raise TypeError("Found two parameters on different devices, this is currently not supported.")
        device = p.device
    return cat([p.reshape(-1) for p in params])


def vector_to_parameters(vec: Tensor, parameters) -> None:
    """Copy consecutive slices of the 1-D ``vec`` into the parameters, in place."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected a Tensor, but got: {type(vec).__name__}")
    params = _as_list(parameters)
    needed = sum(p.numel() for p in params)
    if vec.ndim != 1 or vec.numel() != needed:
        raise RuntimeError(f"vector_to_parameters(): expected a 1-D vector of {needed} elements, got shape {list(vec.shape)}")
    offset = 0
    with no_grad():
        for p in params:
            count = p.numel()
            p.copy_(vec[offset:offset + count].reshape(p.shape))
            offset += count
