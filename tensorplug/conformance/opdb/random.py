"""Random ops: how to draw n numbers and which moments they must have.

Random outputs have no elementwise reference; the random suite checks determinism under a seed
and that the sample moments fall within statistical bounds of these expected values.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class RandomEntry:
    name: str
    draw: Callable[[Any, int, str, str], Any]  # draw(tp, n, dtype, device)
    mean: float
    var: float
    low: float | None = None  # every value lies in [low, high)
    high: float | None = None
    dtypes: tuple[str, ...] = ("float32", "float64", "float16", "bfloat16")
    integer: bool = False


ENTRIES = [
    RandomEntry("rand", lambda tp, n, dt, d: tp.rand(n, dtype=getattr(tp, dt), device=d), 0.5, 1 / 12, 0.0, 1.0),
    RandomEntry("randn", lambda tp, n, dt, d: tp.randn(n, dtype=getattr(tp, dt), device=d), 0.0, 1.0),
    RandomEntry("randint", lambda tp, n, dt, d: tp.randint(-3, 7, (n,), dtype=getattr(tp, dt), device=d), 1.5, (10 ** 2 - 1) / 12,
                -3, 7, dtypes=("int64", "int32", "int16", "int8"), integer=True),
    RandomEntry("uniform_", lambda tp, n, dt, d: tp.empty(n, dtype=getattr(tp, dt), device=d).uniform_(-2.0, 4.0), 1.0, 3.0, -2.0, 4.0),
    RandomEntry("normal_", lambda tp, n, dt, d: tp.empty(n, dtype=getattr(tp, dt), device=d).normal_(1.0, 2.0), 1.0, 4.0),
    # With replacement over 10 equal weights: uniform on 0..9 (mean 4.5, variance 99 / 12).
    RandomEntry("multinomial", lambda tp, n, dt, d: tp.multinomial(tp.ones(10, dtype=getattr(tp, dt), device=d), n, True),
                4.5, 99 / 12, 0, 10, dtypes=("float32", "float64"), integer=True),
    RandomEntry("bernoulli", lambda tp, n, dt, d: tp.bernoulli(tp.full((n,), 0.3, dtype=getattr(tp, dt), device=d)), 0.3, 0.21,
                0.0, 1.0 + 1e-9, dtypes=("float32", "float64")),
]
