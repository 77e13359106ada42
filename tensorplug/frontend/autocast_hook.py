"""Where Python functions that are not functional operators join autocast.

Most of what autocast casts is an operator's inputs, on the Autocast dispatch key
(amp/_casting.py). Some functions must be cast before any operator runs: those that check their
inputs' dtypes first (``matmul`` wants one dtype, the recurrent layers too), whose operator
writes into an output the function allocates (``matmul``, ``prod``), or that are written in
Python over many operators (most losses). They are decorated here with the name of their entry in
autocast's policy tables; amp installs the function that applies it. The frontend and nn import
this module, never amp, so imports run one way.

Outside an autocast region a decorated function costs one test of the thread's include set.

A primitive op's public function whose common case runs in C (``exp``, ``pow``, ``sum``, ...)
allocates its output before any Python runs, and is called too often to take a Python frame more:
:func:`autocast_front` puts it behind a key-set dispatch in C instead, which resolves to the
function itself unless the thread's include set holds the Autocast key (issue 13).
"""
from __future__ import annotations

import functools
from typing import Any, Callable

from .. import _hotpath
from ..dispatcher import AUTOCAST, local_state

__all__ = ["autocast_function", "autocast_front", "install", "AUTOCAST_MASK", "apply"]

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


def _renamed(name: str, kwargs: dict, keyword_names: dict) -> dict:
    for theirs, ours in keyword_names.items():
        if theirs in kwargs:
            if ours in kwargs:
                raise TypeError(f"{name}() got multiple values for argument '{theirs}'")
            kwargs[ours] = kwargs.pop(theirs)
    return kwargs


def autocast_front(name: str, fn: Callable, keyword_names: dict | None = None):
    """``fn`` behind a dispatch step in C that follows autocast's policy for ``name``.

    ``keyword_names`` maps PyTorch's keyword names to ``fn``'s (``pow(exponent=2)``); only
    calls with keywords pay for the renaming.

    Outside an autocast region the step resolves the call's key set, in C, to ``fn`` itself: no
    Python frame is added, so ``fn``'s own C fast path still runs. With the Autocast key in the
    thread's include set it resolves to the policy, which casts the inputs before ``fn`` allocates
    its output. As in PyTorch, a call with ``out=`` or ``dtype=`` is not eligible for autocast: it
    runs ``fn`` as it is. Only the public function and Tensor method are fronted; in-place
    variants (``exp_``) are not autocast, as in PyTorch.
    """

    def under_autocast(*args, **kwargs):
        if kwargs.get("out") is not None or kwargs.get("dtype") is not None:
            return fn(*args, **kwargs)
        return apply(name, fn, args, kwargs)

    @functools.wraps(fn)
    def with_keywords(*args, **kwargs):
        # The C step hands calls with keyword arguments to this function.
        if keyword_names:
            kwargs = _renamed(name, kwargs, keyword_names)
        if local_state.include & local_state.mask & AUTOCAST_MASK:
            return under_autocast(*args, **kwargs)
        return fn(*args, **kwargs)

    # Key set -> fn or under_autocast. Only the Autocast bit decides, so no operator table is
    # needed and no registration ever invalidates this one.
    table: dict[int, Callable] = {}

    def lookup(keys: int) -> Callable:
        kernel = under_autocast if keys & AUTOCAST_MASK else fn
        table[keys] = kernel
        return kernel

    return _hotpath.CompositeOp(with_keywords, table, lookup)
