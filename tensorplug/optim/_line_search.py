"""The strong Wolfe line search of ``LBFGS(line_search_fn="strong_wolfe")``.

Along a descent direction d from x, it looks for a step t whose loss decreases enough,
f(t) <= f(0) + c1 t f'(0), and whose slope has flattened, |f'(t)| <= c2 |f'(0)| (the strong
Wolfe conditions; Nocedal and Wright, Numerical Optimization, algorithms 3.5 and 3.6). A first
phase grows t until an interval is known to hold such a step; a second shrinks the interval. Both
pick their trial steps as the minimizer of the cubic that matches f and f' at two known points,
kept away from the interval's ends.

``evaluate(t)`` returns ``(loss, flat_grad, slope)`` at x + t d, the slope being flat_grad . d;
everything else here is Python floats.
"""
from __future__ import annotations

import math

__all__ = ["strong_wolfe"]


def _cubic_minimum(t1: float, f1: float, g1: float, t2: float, f2: float, g2: float, lo: float, hi: float) -> float:
    """The minimizer in [lo, hi] of the cubic through (t1, f1) and (t2, f2) with slopes g1, g2;
    the middle of [lo, hi] when the cubic has no minimum."""
    d1 = g1 + g2 - 3 * (f1 - f2) / (t1 - t2)
    square = d1 * d1 - g1 * g2
    if square < 0:
        return (lo + hi) / 2
    d2 = math.copysign(math.sqrt(square), t2 - t1)
    t = t2 - (t2 - t1) * (g2 + d2 - d1) / (g2 - g1 + 2 * d2)
    return min(max(t, lo), hi) if math.isfinite(t) else (lo + hi) / 2


class _Point:
    __slots__ = ("t", "loss", "grad", "slope")

    def __init__(self, t, loss, grad, slope):
        self.t, self.loss, self.grad, self.slope = t, loss, grad, slope


def strong_wolfe(evaluate, t: float, loss: float, grad, slope: float, direction_max: float, *,
                 c1: float = 1e-4, c2: float = 0.9, tolerance_change: float = 1e-9, max_evals: int = 25):
    """Search along the direction from a point with ``loss``, ``grad`` and ``slope`` (< 0),
    starting with step ``t``; ``direction_max`` is max |d|, for the tolerance on steps.
    Returns ``(loss, flat_grad, t, evaluations)`` of the step taken."""
    start = _Point(0.0, loss, grad, slope)
    prev, evals = start, 0
    sufficient = lambda p: p.loss <= loss + c1 * p.t * slope  # noqa: E731
    flat = lambda p: abs(p.slope) <= -c2 * slope  # noqa: E731

    # Phase 1: grow the step until [lo, hi] brackets a point meeting both conditions.
    lo = hi = None
    while True:
        current = _Point(t, *evaluate(t))
        evals += 1
        if not sufficient(current) or (evals > 1 and current.loss >= prev.loss):
            lo, hi = prev, current
            break
        if flat(current):
            return current.loss, current.grad, current.t, evals
        if current.slope >= 0:
            lo, hi = current, prev
            break
        if evals >= max_evals:
            return current.loss, current.grad, current.t, evals
        # Extrapolate: at least a hundredth of the last step further, at most ten times as far.
        low, high = t + 0.01 * (t - prev.t), t * 10
        t = _cubic_minimum(prev.t, prev.loss, prev.slope, t, current.loss, current.slope, low, high)
        prev = current

    # Phase 2 (zoom): lo is the best point meeting the sufficient decrease, hi bounds the interval.
    while evals < max_evals and abs(hi.t - lo.t) * direction_max >= tolerance_change:
        a, b = min(lo.t, hi.t), max(lo.t, hi.t)
        t = _cubic_minimum(lo.t, lo.loss, lo.slope, hi.t, hi.loss, hi.slope, a, b)
        # Stay a tenth of the interval away from its ends, where the cubic is least trustworthy.
        margin = 0.1 * (b - a)
        t = min(max(t, a + margin), b - margin)
        current = _Point(t, *evaluate(t))
        evals += 1
        if not sufficient(current) or current.loss >= lo.loss:
            hi = current
            continue
        if flat(current):
            return current.loss, current.grad, current.t, evals
        if current.slope * (hi.t - lo.t) >= 0:
            hi = lo
        lo = current
    return lo.loss, lo.grad, lo.t, evals
