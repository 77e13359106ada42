"""Muon: momentum steps for 2-D weights, orthogonalized by a Newton-Schulz iteration."""
from __future__ import annotations

import math

from ..frontend import dtypes as _dt
from ..frontend.factories import zeros_like
from ..frontend.tensor import Tensor
from .optimizer import Optimizer, _use_grad

__all__ = ["Muon"]

_LR_ADJUSTMENTS = (None, "original", "match_rms_adamw")


class Muon(Optimizer):
    """``torch.optim.Muon``: the same arguments, defaults, checks, state and update.

    Per step: ``buf`` moves towards the gradient ``g`` by ``1 - momentum`` (``buf.lerp_(g, 1 -
    momentum)``, the only state), the update is ``g.lerp(buf, momentum)`` with Nesterov or ``buf``
    without, and it is orthogonalized by ``ns_steps`` Newton-Schulz iterations ``X = a X + (b A + c
    A @ A) X`` with ``A = X X^T``, started from the update scaled to a Frobenius norm of one (at most
    ``1 / eps``) and laid wide (rows <= columns). As in PyTorch the iteration runs in bfloat16 (in
    float32 on a backend without bfloat16, such as the npdev example plugin). The
    parameter first decays by ``1 - lr * weight_decay``, then moves by ``-lr'`` times the result, with
    ``lr' = lr * sqrt(max(1, rows / cols))`` ("original", the default) or ``0.2 * lr *
    sqrt(max(rows, cols))`` ("match_rms_adamw").
    """

    def __init__(self, params, lr: float = 1e-3, weight_decay: float = 0.1, momentum: float = 0.95,
                 nesterov: bool = True, ns_coefficients: tuple[float, float, float] = (3.4445, -4.775, 2.0315),
                 eps: float = 1e-7, ns_steps: int = 5, adjust_lr_fn: str | None = None) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn not in _LR_ADJUSTMENTS:
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
                        ns_coefficients=ns_coefficients, eps=eps, ns_steps=ns_steps, adjust_lr_fn=adjust_lr_fn)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.dim() != 2:
                    raise ValueError(
                        f"Muon only supports 2D parameters whereas we found a parameter with size: {p.size()}")

    @_use_grad
    def step(self, closure=None):
        loss = self._evaluate(closure)
        for group in self.param_groups:
            _check_iteration(group["ns_coefficients"], group["ns_steps"])
            lr = float(group["lr"])
            momentum = group["momentum"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                self._check_dense(p.grad)
                if p._dtype.is_complex:
                    raise RuntimeError("Muon does not support complex parameters")
                grad = p.grad
                state = self.state[p]
                if not state:
                    state["momentum_buffer"] = zeros_like(grad)
                buf = state["momentum_buffer"].lerp_(grad, 1 - momentum)
                update = grad.lerp(buf, momentum) if group["nesterov"] else buf
                orthogonal = _newton_schulz(update, group["ns_coefficients"], group["ns_steps"], group["eps"])
                p.mul_(1 - lr * group["weight_decay"])
                p.add_(orthogonal.to(p._dtype), alpha=-_adjusted_lr(lr, group["adjust_lr_fn"], p.shape))
        return loss


def _check_iteration(coefficients, steps: int) -> None:
    """PyTorch's step-time refusals of the Newton-Schulz settings, made before any parameter moves."""
    if steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if len(coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")


def _newton_schulz(update: Tensor, coefficients, steps: int, eps: float) -> Tensor:
    """``update``'s approximate orthogonalization (``U S' V^T`` with ``S'`` near one), in bfloat16."""
    a, b, c = coefficients
    x = update.to(_dt.bfloat16 if _dt.bfloat16 in update._device._dtypes else _dt.float32)
    tall = x.shape[0] > x.shape[1]
    if tall:  # the Gram matrix of the shorter side is the cheaper one
        x = x.T
    x = x / x.norm().clamp(min=eps)  # a Frobenius norm of one bounds the spectral norm by one
    for _ in range(steps):
        gram = x @ x.T
        x = a * x + (b * gram + c * (gram @ gram)) @ x
    return x.T if tall else x


def _adjusted_lr(lr: float, adjustment: str | None, shape) -> float:
    """The step size that gives orthogonalized updates of any aspect ratio a comparable RMS."""
    rows, cols = shape[:2]
    if adjustment == "match_rms_adamw":
        return lr * 0.2 * math.sqrt(max(rows, cols))
    return lr * math.sqrt(max(1, rows / cols))
