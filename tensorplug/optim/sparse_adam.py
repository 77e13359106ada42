"""SparseAdam: Adam for sparse gradients (``nn.Embedding(sparse=True)``), updating only the rows
a gradient holds."""
from __future__ import annotations

import math

from ..frontend.factories import zeros_like
from ..frontend.tensor import Tensor
from .optimizer import Optimizer, _use_grad

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    """``torch.optim.SparseAdam``: the same arguments, defaults, state and update.

    Per step, with the gradient coalesced (one entry per row) and ``t`` the parameter's step count
    (an int, counted even when the gradient holds no entries), only the rows ``r`` it holds change:
    ``m[r] += (1 - beta1) * (g - m[r])``, ``v[r] += (1 - beta2) * (g * g - v[r])``, then
    ``p[r] -= lr * sqrt(1 - beta2**t) / (1 - beta1**t) * m[r] / (sqrt(v[r]) + eps)`` (note ``eps``
    outside the bias correction, unlike Adam). Dense gradients are refused.

    >>> emb = tp.nn.Embedding(10, 3, sparse=True)
    >>> opt = tp.optim.SparseAdam(emb.parameters(), lr=0.1)
    >>> emb(tp.tensor([1, 4])).sum().backward(); opt.step()
    """

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8, maximize: bool = False) -> None:
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not isinstance(params, Tensor):  # (a lone tensor: the base class refuses it)
            # Sparse parameters are named before the base class refuses them as non-Tensors.
            params = list(params)
            groups = params if params and isinstance(params[0], dict) else [{"params": params}]
            for group in groups:
                if isinstance(group, dict) and "params" in group:
                    group["params"] = _as_list(group["params"])
            sparse = [[g, i] for g, group in enumerate(groups) if isinstance(group, dict)
                      for i, p in enumerate(group.get("params", ())) if getattr(p, "is_sparse", False)]
            if sparse:
                raise ValueError(f"Sparse params at indices {sparse}: SparseAdam requires dense parameter tensors")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, maximize=maximize))

    @_use_grad
    def step(self, closure=None):
        loss = self._evaluate(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, eps, maximize = group["lr"], group["eps"], group.get("maximize", False)
            for p in group["params"]:
                if p.grad is None:
                    continue
                if isinstance(p.grad, Tensor):
                    raise RuntimeError("SparseAdam does not support dense gradients, please consider Adam instead")
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0
                    state["exp_avg"] = zeros_like(p)
                    state["exp_avg_sq"] = zeros_like(p)
                state["step"] += 1
                _update_rows(p, -p.grad if maximize else p.grad, state, lr, beta1, beta2, eps)
        return loss


def _update_rows(p: Tensor, grad, state: dict, lr: float, beta1: float, beta2: float, eps: float) -> None:
    grad = grad.coalesce()  # the update is not linear in the gradient: one entry per row
    values = grad._values()
    if values.numel() == 0:
        return
    rows = tuple(grad._indices()[d] for d in range(grad.sparse_dim()))
    exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
    m = exp_avg[rows]
    m = m + (values - m) * (1 - beta1)
    v = exp_avg_sq[rows]
    v = v + (values * values - v) * (1 - beta2)
    exp_avg.index_put_(rows, m)
    exp_avg_sq.index_put_(rows, v)
    step = state["step"]
    step_size = lr * math.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
    p.index_put_(rows, p[rows] + (m / (v.sqrt() + eps)) * -step_size)


def _as_list(params) -> list:
    return [params] if isinstance(params, Tensor) else list(params)
