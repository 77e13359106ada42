"""``tp.compile`` and ``tp.compiler``: tensorplug runs eagerly, so compiling is the identity.

PyTorch programs call ``torch.compile(model)`` (or decorate a function with ``@torch.compile``)
for speed; the program's results do not depend on it. tensorplug has no graph compiler: these
functions accept PyTorch's arguments, check them as PyTorch does, and return the callable
unchanged (PyTorch returns a wrapper, an ``OptimizedModule`` for a module), so the program runs
as written, op by op (docs/deviations.md).
"""
from __future__ import annotations

from typing import Any

__all__ = ["compile", "is_compiling", "is_dynamo_compiling", "disable", "reset"]

MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")


def _check(backend, mode, options) -> None:
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    if mode is not None and mode not in MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(MODES)}")
    if options is not None and not isinstance(options, dict):
        raise TypeError(f"compile(): options must be a dict, not {type(options).__name__}")
    if backend is not None and not (isinstance(backend, str) or callable(backend)):
        raise TypeError(f"compile(): backend must be a string or a callable, not {type(backend).__name__}")


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None,
            disable=False, **kwargs) -> Any:
    """Return ``model`` unchanged (tensorplug is eager). Usable as ``tp.compile(fn)``,
    ``@tp.compile`` and ``@tp.compile(mode="max-autotune")``; PyTorch's keyword arguments are
    accepted and checked, and have no effect.

    >>> f = tp.compile(lambda x: x + 1)
    >>> f(tp.tensor(1)).item()
    2
    """
    _check(backend, mode, options)
    if model is None:
        return lambda fn: compile(fn, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                                  options=options, disable=disable, **kwargs)
    if not callable(model):
        raise TypeError(f"compile(): a callable function is expected, but {type(model).__name__} is provided.")
    return model


def is_compiling() -> bool:
    """False: nothing runs under a graph compiler here."""
    return False


is_dynamo_compiling = is_compiling


def disable(fn=None, recursive=True, *, reason=None) -> Any:
    """``fn`` unchanged (there is no compiler to exclude it from); usable as a decorator."""
    if fn is None:
        return lambda f: f
    return fn


def reset() -> None:
    """Nothing to reset: no compiled code is cached."""
