"""``explain(op, *args)``: which kernel a call runs, and why."""
from __future__ import annotations

from typing import Any

from . import _keys
from ._operator import Operator, get_operator, keyset_of

__all__ = ["explain"]


def explain(op: Operator | str, *args: Any, print_result: bool = True, **kwargs: Any) -> str:
    """Describe how ``op(*args, **kwargs)`` would be dispatched, without running it.

    >>> tp.dispatcher.explain("add", tp.ones(2), tp.ones(2))  # doctest: +SKIP
    add: key set {CPU, InplaceOrView} -> CPU kernel
    """
    op = get_operator(op) if isinstance(op, str) else op
    keyset = keyset_of(args, kwargs)
    resolution = op.resolve(keyset)
    names = ", ".join(key.name for key in _keys.keys_in(keyset)) or "empty"
    kind = "composite" if op.is_composite else "primitive"
    lines = [f"{op.name} ({kind}): key set {{{names}}}"]
    lines += [f"  skip {reason}" for reason in resolution.skipped]
    lines.append(f"  -> {resolution.source}")
    kernel = getattr(resolution.kernel, "__wrapped__", resolution.kernel)
    lines.append(f"     runs {getattr(kernel, '__module__', '?')}.{getattr(kernel, '__qualname__', repr(kernel))}")
    text = "\n".join(lines)
    if print_result:
        print(text)
    return text
