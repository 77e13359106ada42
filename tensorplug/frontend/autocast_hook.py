"""Where Python functions that are not functional operators join autocast.

Most of what autocast casts is an operator's inputs, on the Autocast dispatch key
(amp/_casting.py). Some functions must be cast before any operator runs: those that check their
inputs' dtypes first (``matmul`` wants one dtype, the recurrent layers too), whose operator
writes into an output the function allocates (``matmul``, ``prod``), or that are written in
Python over many operators (most losses). They are decorated here with the name of their entry in
autocast's policy tables; amp installs the function that applies it. The frontend and nn import
this module, never amp, so imports run one way.

Outside an autocast region a decorated function costs one test of the thread's include set.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

from ..dispatcher import AUTOCAST, local_state

__all__ = ["autocast_function", "install", "AUTOCAST_MASK", "apply"]

AUTOCAST_MASK = AUTOCAST.mask


def _not_installed(name: str, fn: Callable, args: tuple, kwargs: dict) -> Any:
    return fn(*args, **kwargs)


#: apply(name, fn, args, kwargs): run ``fn`` under the policy named ``name`` (set by amp).
apply: Callable[[str, Callable, tuple, dict], Any] = _not_installed


def install(function: Callable[[str, Callable, tuple, dict], Any]) -> None:
    global apply
    apply = function


def autocast_function(name: str):
    """Decorator: ``fn`` follows autocast's policy for ``name`` while autocast is active."""

    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            # The mask test lets the policy run the function again with autocast excluded.
            if local_state.include & local_state.mask & AUTOCAST_MASK:
                return apply(name, fn, args, kwargs)
            return fn(*args, **kwargs)

        return wrapper

    return decorate
