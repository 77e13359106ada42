"""L-BFGS: quasi-Newton steps from the last ``history_size`` gradient and step differences."""
from __future__ import annotations

from ..frontend.autograd import enable_grad
from ..frontend.factories import zeros
from ..frontend.ops.joining import cat
from ..frontend.tensor import Tensor
from ._line_search import strong_wolfe
from .optimizer import Optimizer, _use_grad

__all__ = ["LBFGS"]


class LBFGS(Optimizer):
    """``torch.optim.LBFGS``: the same arguments, defaults, state and iterations.

    ``step(closure)`` runs up to ``max_iter`` iterations (at most ``max_eval`` closure calls) and
    returns the loss of the first closure call. Every iteration takes the two-loop recursion's
    direction and moves by ``lr`` (the first ever step: ``min(1, 1 / |g|_1) * lr``), or, with
    ``line_search_fn="strong_wolfe"``, by the step a strong Wolfe line search finds starting
    there (up to 25 closure calls, which count towards ``max_eval``).
    """

    def __init__(self, params, lr: float = 1, max_iter: int = 20, max_eval: int | None = None,
                 tolerance_grad: float = 1e-7, tolerance_change: float = 1e-9, history_size: int = 100,
                 line_search_fn: str | None = None) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if line_search_fn is not None and line_search_fn != "strong_wolfe":
            raise RuntimeError("only 'strong_wolfe' is supported")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval, tolerance_grad=tolerance_grad,
                        tolerance_change=tolerance_change, history_size=history_size, line_search_fn=line_search_fn)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    def _gather_flat_grad(self):
        views = [zeros(p.numel(), dtype=p.dtype, device=p.device) if p.grad is None else _dense(p.grad).reshape(-1)
                 for p in self._params]
        return cat(views, 0)

    def _add_grad(self, step_size: float, direction) -> None:
        """``p += step_size * direction``, ``direction`` flat over all parameters in order."""
        offset = 0
        for p in self._params:
            numel = p.numel()
            p.add_(direction[offset:offset + numel].view_as(p), alpha=step_size)
            offset += numel

    def _directional_evaluate(self, closure, start: list, t: float, direction):
        """(loss, flat gradient, slope along direction) at start + t * direction; the parameters
        are back at start afterwards."""
        self._add_grad(t, direction)
        with enable_grad():
            loss = float(closure())
        flat_grad = self._gather_flat_grad()
        for p, saved in zip(self._params, start):
            p.copy_(saved)
        return loss, flat_grad, flat_grad.dot(direction).item()

    @_use_grad
    def step(self, closure):
        if closure is None:
            raise RuntimeError("LBFGS.step() needs a closure that re-evaluates the model and returns the loss")
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        history_size = group["history_size"]

        # All state lives under the first parameter, as in PyTorch (its state_dict shows it there).
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        with enable_grad():
            orig_loss = closure()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if flat_grad.abs().max().item() <= tolerance_grad:
            return orig_loss

        d, t = state.get("d"), state.get("t")
        old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        H_diag = state.get("H_diag")
        prev_flat_grad, prev_loss = state.get("prev_flat_grad"), state.get("prev_loss")

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = flat_grad.neg()
                old_dirs, old_stps, ro = [], [], []
                H_diag = 1.0
            else:
                y = flat_grad.sub(prev_flat_grad)
                s = d.mul(t)
                ys = y.dot(s).item()
                if ys > 1e-10:  # keep only pairs that keep the Hessian estimate positive definite
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    H_diag = ys / y.dot(y).item()
                # Two-loop recursion: d = -H g with H the L-BFGS inverse-Hessian estimate.
                al = [0.0] * len(old_dirs)
                q = flat_grad.neg()
                for i in range(len(old_dirs) - 1, -1, -1):
                    al[i] = old_stps[i].dot(q).item() * ro[i]
                    q.add_(old_dirs[i], alpha=-al[i])
                d = r = q.mul(H_diag)
                for i in range(len(old_dirs)):
                    be_i = old_dirs[i].dot(r).item() * ro[i]
                    r.add_(old_stps[i], alpha=al[i] - be_i)

            if prev_flat_grad is None:
                prev_flat_grad = flat_grad.clone()
            else:
                prev_flat_grad.copy_(flat_grad)
            prev_loss = loss

            t = min(1.0, 1.0 / flat_grad.abs().sum().item()) * lr if state["n_iter"] == 1 else lr
            gtd = flat_grad.dot(d).item()
            if gtd > -tolerance_change:  # not a descent direction
                break

            evals = 0
            if group["line_search_fn"] == "strong_wolfe":
                start = [p.clone() for p in self._params]
                loss, flat_grad, t, evals = strong_wolfe(
                    lambda step: self._directional_evaluate(closure, start, step, d), t, loss, flat_grad, gtd,
                    d.abs().max().item(), tolerance_change=tolerance_change)
                self._add_grad(t, d)
            else:
                self._add_grad(t, d)
                if n_iter != max_iter:
                    with enable_grad():
                        loss = float(closure())
                    flat_grad = self._gather_flat_grad()
                    evals = 1
            current_evals += evals
            state["func_evals"] += evals

            if n_iter == max_iter or current_evals >= max_eval:
                break
            if flat_grad.abs().max().item() <= tolerance_grad:
                break
            if d.mul(t).abs().max().item() <= tolerance_change:
                break
            if abs(loss - prev_loss) < tolerance_change:
                break

        state.update(d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=H_diag,
                     prev_flat_grad=prev_flat_grad, prev_loss=prev_loss)
        return orig_loss


def _dense(grad) -> Tensor:
    """A gradient as a dense tensor (a sparse one from nn.Embedding(sparse=True) too, as PyTorch)."""
    return grad if isinstance(grad, Tensor) else grad.to_dense()
