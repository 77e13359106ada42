"""L-BFGS: quasi-Newton steps from the last ``history_size`` gradient and step differences.

The optimizer works on one flat vector holding every parameter in order. ``_CurvatureMemory``
keeps the step / gradient-change pairs and turns a gradient into a search direction with the
two-loop recursion (Nocedal and Wright, Numerical Optimization, algorithm 7.4); the strong Wolfe
line search lives in ``_line_search``. Everything the optimizer carries between ``step`` calls is
stored under the first parameter with PyTorch's key names, so saved optimizer states keep working.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..frontend.autograd import enable_grad
from ..frontend.factories import zeros
from ..frontend.ops.joining import cat
from ..frontend.tensor import Tensor
from ._line_search import strong_wolfe
from .optimizer import Optimizer, _use_grad

__all__ = ["LBFGS"]

# A pair whose y . s is not clearly positive would make the inverse-Hessian estimate indefinite.
_MIN_CURVATURE = 1e-10


@dataclass
class _CurvatureMemory:
    """The L-BFGS memory, under PyTorch's state names: ``old_stps`` (steps s), ``old_dirs``
    (gradient changes y), ``ro`` (1 / y.s), ``H_diag`` (the initial inverse-Hessian scale) and
    ``al`` (the first loop's coefficients of the latest direction)."""

    capacity: int
    steps: list = field(default_factory=list)
    grad_changes: list = field(default_factory=list)
    inverse_curvatures: list = field(default_factory=list)
    scale: float = 1.0
    coefficients: list | None = None

    @classmethod
    def restore(cls, state: dict, capacity: int) -> "_CurvatureMemory":
        """The memory saved in ``state``; numbers may be 0-d tensors in a state saved by PyTorch."""
        memory = cls(capacity)
        if "old_stps" in state:
            memory.steps = list(state["old_stps"])
            memory.grad_changes = list(state["old_dirs"])
            memory.inverse_curvatures = [float(v) for v in state["ro"]]
            memory.scale = float(state["H_diag"])
        return memory

    def save(self, state: dict) -> None:
        state.update(old_stps=self.steps, old_dirs=self.grad_changes, ro=self.inverse_curvatures, H_diag=self.scale)
        if self.coefficients is not None:
            # PyTorch keeps one slot per history entry, the unused ones None.
            state["al"] = self.coefficients + [None] * (self.capacity - len(self.coefficients))

    def remember(self, step: Tensor, grad_change: Tensor) -> None:
        """Add the pair (s, y) when it has positive curvature, forgetting the oldest when full."""
        curvature = grad_change.dot(step).item()
        if curvature <= _MIN_CURVATURE:
            return
        if len(self.steps) == self.capacity:
            for pairs in (self.steps, self.grad_changes, self.inverse_curvatures):
                del pairs[0]
        self.steps.append(step)
        self.grad_changes.append(grad_change)
        self.inverse_curvatures.append(1.0 / curvature)
        self.scale = curvature / grad_change.dot(grad_change).item()

    def descent_direction(self, grad: Tensor) -> Tensor:
        """``-H grad``, H the inverse-Hessian estimate the remembered pairs define."""
        pairs = list(zip(self.steps, self.grad_changes, self.inverse_curvatures))
        coefficients = [0.0] * len(pairs)
        # Newest to oldest: strip from -grad its components along each y.
        projected = grad.neg()
        for i in reversed(range(len(pairs))):
            s, y, rho = pairs[i]
            coefficients[i] = s.dot(projected).item() * rho
            projected.add_(y, alpha=-coefficients[i])
        # Oldest to newest: scale by the initial estimate, then add the corrections along each s.
        direction = projected.mul(self.scale)
        for (s, y, rho), coefficient in zip(pairs, coefficients):
            direction.add_(s, alpha=coefficient - y.dot(direction).item() * rho)
        self.coefficients = coefficients
        return direction


def _max_abs(vector: Tensor) -> float:
    return vector.abs().max().item()


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
        if not lr >= 0.0:  # NaN included
            raise ValueError(f"Invalid learning rate: {lr}")
        if line_search_fn not in (None, "strong_wolfe"):
            raise RuntimeError("only 'strong_wolfe' is supported")
        # PyTorch's default budget: a quarter more closure calls than iterations.
        evaluations = max_eval if max_eval is not None else max_iter * 5 // 4
        super().__init__(params, dict(lr=lr, max_iter=max_iter, max_eval=evaluations, tolerance_grad=tolerance_grad,
                                      tolerance_change=tolerance_change, history_size=history_size,
                                      line_search_fn=line_search_fn))
        if len(self.param_groups) > 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")

    @property
    def _flat_params(self) -> list:
        return self.param_groups[0]["params"]

    # --- the parameters as one flat vector ------------------------------------------------------
    def _flat_grad(self) -> Tensor:
        """All gradients in parameter order as one vector (zeros for a parameter without one)."""
        pieces = []
        for param in self._flat_params:
            grad = param.grad
            if grad is None:
                pieces.append(zeros(param.numel(), dtype=param.dtype, device=param.device))
            else:
                # A sparse gradient (nn.Embedding(sparse=True)) takes part densely, as in PyTorch.
                pieces.append((grad if isinstance(grad, Tensor) else grad.to_dense()).reshape(-1))
        return cat(pieces, 0)

    def _move(self, step_size: float, direction: Tensor) -> None:
        """Parameters += step_size * direction."""
        sizes = [param.numel() for param in self._flat_params]
        for param, piece in zip(self._flat_params, direction.split(sizes)):
            param.add_(piece.view_as(param), alpha=step_size)

    def _loss_and_grad(self, closure: Callable) -> tuple[float, Tensor]:
        with enable_grad():
            loss = float(closure())
        return loss, self._flat_grad()

    def _line_search(self, closure: Callable, step_size: float, loss: float, grad: Tensor, slope: float,
                     direction: Tensor, tolerance_change: float):
        """The strong Wolfe step along ``direction``; leaves the parameters moved by it."""
        origin = [param.clone() for param in self._flat_params]

        def probe(trial: float):
            self._move(trial, direction)
            trial_loss, trial_grad = self._loss_and_grad(closure)
            for param, saved in zip(self._flat_params, origin):
                param.copy_(saved)
            return trial_loss, trial_grad, trial_grad.dot(direction).item()

        loss, grad, step_size, evaluations = strong_wolfe(probe, step_size, loss, grad, slope, _max_abs(direction),
                                                          tolerance_change=tolerance_change)
        self._move(step_size, direction)
        return loss, grad, step_size, evaluations

    # --- the step -------------------------------------------------------------------------------
    @_use_grad
    def step(self, closure):
        """Run up to ``max_iter`` L-BFGS iterations; returns the loss of the first closure call."""
        if closure is None:
            raise RuntimeError("LBFGS.step() needs a closure that re-evaluates the model and returns the loss")
        options = self.param_groups[0]
        lr, tolerance_change = options["lr"], options["tolerance_change"]
        # PyTorch keeps all state under the first parameter; its state_dict shows it there.
        state = self.state[self._flat_params[0]]
        for counter in ("func_evals", "n_iter"):  # closure calls and iterations over all steps
            state.setdefault(counter, 0)

        with enable_grad():
            first_loss = closure()
        loss, grad = float(first_loss), self._flat_grad()
        state["func_evals"] += 1
        evaluations = 1
        if _max_abs(grad) <= options["tolerance_grad"]:
            return first_loss

        memory = _CurvatureMemory.restore(state, options["history_size"])
        direction, step_size = state.get("d"), state.get("t")
        previous_grad, previous_loss = state.get("prev_flat_grad"), state.get("prev_loss")

        for iteration in range(1, options["max_iter"] + 1):
            state["n_iter"] += 1
            very_first = state["n_iter"] == 1
            if very_first:
                memory = _CurvatureMemory(options["history_size"])
                direction = grad.neg()
            else:
                memory.remember(direction.mul(step_size), grad.sub(previous_grad))
                direction = memory.descent_direction(grad)
            previous_grad, previous_loss = grad.clone(), loss
            # The very first step is scaled so that it moves the parameters by at most lr in total.
            step_size = min(1.0, 1.0 / grad.abs().sum().item()) * lr if very_first else lr

            slope = grad.dot(direction).item()
            if slope > -tolerance_change:
                break  # not a descent direction (any more)

            last_iteration = iteration == options["max_iter"]
            if options["line_search_fn"] == "strong_wolfe":
                loss, grad, step_size, used = self._line_search(closure, step_size, loss, grad, slope, direction,
                                                                tolerance_change)
            else:
                self._move(step_size, direction)
                used = 0
                if not last_iteration:  # the next iteration needs the gradient here
                    loss, grad = self._loss_and_grad(closure)
                    used = 1
            evaluations += used
            state["func_evals"] += used

            if last_iteration or evaluations >= options["max_eval"]:
                break
            converged = (_max_abs(grad) <= options["tolerance_grad"]
                         or _max_abs(direction.mul(step_size)) <= tolerance_change
                         or abs(loss - previous_loss) < tolerance_change)
            if converged:
                break

        memory.save(state)
        state.update(d=direction, t=step_size, prev_flat_grad=previous_grad, prev_loss=previous_loss)
        return first_loss
