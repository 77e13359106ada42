"""``tp._dynamo``: the TorchDynamo entry points scripts call directly, for an eager library.

Training scripts reset the compiler between runs (``torch._dynamo.reset()``), raise its limits
(``torch._dynamo.config.cache_size_limit = 64``) or mark shapes dynamic before compiling. With
no compiler these do nothing, and ``tp.compile`` returns what it is given (docs/deviations.md).
"""
from __future__ import annotations

from typing import Any

from ..compiler import disable, is_compiling, reset
from . import config

__all__ = ["config", "reset", "disable", "is_compiling", "mark_dynamic", "mark_static", "maybe_mark_dynamic",
           "allow_in_graph", "graph_break", "optimize", "list_backends"]


def mark_dynamic(t: Any, index, *, hint_override=None, min=None, max=None, specialize_on=None) -> None:
    """Nothing to record: no graph is traced, so every size is already dynamic."""


def maybe_mark_dynamic(t: Any, index) -> None:
    """Nothing to record (see ``mark_dynamic``)."""


def mark_static(t: Any, index=None) -> None:
    """Nothing to record (see ``mark_dynamic``)."""


def allow_in_graph(fn):
    """``fn`` unchanged: there is no graph to keep it in."""
    return fn


def graph_break() -> None:
    """Nothing to break: tensorplug runs op by op."""


def optimize(*args, **kwargs):
    """The older spelling of ``compile``: a decorator that returns the function unchanged."""
    return lambda fn: fn


def list_backends(exclude_tags=("debug", "experimental")) -> list[str]:
    """No compiler backends: ``tp.compile`` accepts any name and runs eagerly."""
    return []
