"""Adafactor: Adam-like steps that keep a matrix gradient's second moment as row and column means."""
from __future__ import annotations

from ..frontend import dtypes as _dt
from ..frontend.factories import zeros_like
from .optimizer import Optimizer, _use_grad

__all__ = ["Adafactor"]


class Adafactor(Optimizer):
    """``torch.optim.Adafactor``: the same arguments, defaults, state and update.

    At step ``t`` the newest squared gradient enters the running second moment with weight
    ``t**beta2_decay``. For a gradient of two or more dims only its means over the last dim
    (``row_var``) and over the one before (``col_var``) are kept, and the second moment is
    estimated as ``row_var @ col_var / mean(row_var)``; a vector keeps it whole (``variance``).
    The update ``g / sqrt(v)`` (``v`` floored at ``eps[0]**2``) is shrunk to an RMS of at most
    ``d``, and the parameter moves by ``-max(eps[1], RMS(p)) * min(lr, 1/sqrt(t))`` times it, after
    the decoupled weight decay ``p *= 1 - lr * weight_decay``. ``eps[0] = None`` is the
    parameter dtype's machine epsilon.
    """

    def __init__(self, params, lr: float = 1e-2, beta2_decay: float = -0.8, eps=(None, 1e-3), d: float = 1.0,
                 weight_decay: float = 0.0, *, foreach=None, maximize: bool = False) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not beta2_decay <= 0.0:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize)
        super().__init__(params, defaults)

    @_use_grad
    def step(self, closure=None):
        loss = self._evaluate(closure)
        for group in self.param_groups:
            lr, (eps1, eps2) = group["lr"], group["eps"]
            for p, state, grad in self._counted_grads(group):
                if p._dtype.is_complex:
                    raise RuntimeError("Adafactor does not support complex parameters")
                if len(state) == 1:  # just the step counter: the second moment's buffers come next
                    _add_second_moment(state, grad)
                t = state["step"].item()
                floor = _dt.finfo(p._dtype).eps if eps1 is None else eps1
                # The parameter's scale is read before the weight decay changes it.
                scale = max(eps2, p.norm(2).item() / p.numel() ** 0.5) * min(lr, t ** -0.5)
                if group["weight_decay"] != 0:
                    p.mul_(1 - lr * group["weight_decay"])
                update = _second_moment(state, grad, t ** group["beta2_decay"], floor)
                update = update.clamp_(min=floor * floor).rsqrt_().mul_(grad)
                shrink = max(1.0, update.norm(2).item() / (update.numel() ** 0.5 * group["d"]))
                p.add_(update, alpha=-scale / shrink)
        return loss


def _add_second_moment(state: dict, grad) -> None:
    """Zero running means: of the squares over each of the last two dims for a gradient of two or
    more dims (kept as size-1 dims), of the squares themselves for a vector or a scalar."""
    if grad.dim() > 1:
        state["row_var"] = grad.new_zeros(grad.shape[:-1] + (1,))
        state["col_var"] = grad.new_zeros(grad.shape[:-2] + (1,) + grad.shape[-1:])
    else:
        state["variance"] = zeros_like(grad)


def _second_moment(state: dict, grad, weight: float, floor: float):
    """Update the running means with ``grad`` (``weight`` for the newest) and return the second
    moment estimated from them, a new tensor of ``grad``'s shape."""
    squared = grad * grad
    if "variance" in state:
        return state["variance"].lerp_(squared, weight).clone()
    row_var = state["row_var"].lerp_(squared.mean(-1, keepdim=True), weight)
    col_var = state["col_var"].lerp_(squared.mean(-2, keepdim=True), weight)
    return (row_var @ col_var).div_(row_var.mean(-2, keepdim=True).clamp_(min=floor))
