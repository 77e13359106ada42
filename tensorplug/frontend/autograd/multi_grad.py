"""``register_multi_grad_hook``: one hook over the gradients of several tensors, once per backward pass.

Each tensor gets an ordinary tensor hook that reports to one shared record per registration.
With ``mode="all"`` the record works out, when the first of them fires in a pass, how many of the
tensors that pass reaches (their nodes are reachable from the pass's roots), and calls ``fn`` with
every gradient (None for the tensors the pass does not reach) as soon as that many have fired. A
pass that reaches a tensor without computing its gradient (none flows there) would never get
there: the record then calls ``fn`` when the pass ends, with what it has. With ``mode="any"``
``fn`` gets the first gradient computed in the pass.
"""
from __future__ import annotations

import weakref
from typing import Callable, Sequence

from ..tensor import Tensor

# engine and graph are imported where they are used: graph.py exports register_multi_grad_hook
# (PyTorch's tp.autograd.graph path), so this module loads while graph.py does.

__all__ = ["register_multi_grad_hook"]


class _MultiHandle:
    """Removes every tensor hook of one register_multi_grad_hook call."""

    __slots__ = ("handles",)

    def __init__(self, handles: list):
        self.handles = handles

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()

    def __enter__(self) -> _MultiHandle:
        return self

    def __exit__(self, *exc_info) -> None:
        self.remove()


def _reachable(roots) -> set:
    """Every node reachable from ``roots`` (an iterative walk: graphs can be long chains)."""
    seen = set()
    stack = [node for node in roots if node is not None]
    seen.update(stack)
    while stack:
        for nxt, _ in stack.pop().next_functions:
            if nxt is not None and nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen


class _AllGradients:
    """The record of a ``mode="all"`` registration (see the module docstring)."""

    def __init__(self, tensors: tuple, fn: Callable):
        self.fn = fn
        # Weak references: the record is reachable from the tensors' own hooks, and a non-leaf's
        # node or a leaf must not be kept alive by it.
        self.targets = [
            (False, weakref.ref(t.grad_fn)) if t.grad_fn is not None else (True, weakref.ref(t)) for t in tensors
        ]
        self.token = None  # the pass the gradients below belong to
        self.grads: list = []
        self.expected = 0
        self.fired = 0

    def _start(self, token, roots) -> None:
        self.token = token
        self.grads = [None] * len(self.targets)
        self.fired = 0
        from .engine import queue_callback
        from .graph import AccumulateGrad

        reachable = _reachable(roots)
        leaves = {id(node.variable) for node in reachable if node.__class__ is AccumulateGrad}
        self.expected = sum(
            1 for is_leaf, ref in self.targets
            if (ref() is not None and (id(ref()) in leaves if is_leaf else ref() in reachable))
        )
        queue_callback(self._pass_ended)

    def hook_for(self, index: int) -> Callable:
        from .engine import running_pass

        def on_gradient(grad):
            token, roots = running_pass()
            if self.token is not token:
                self._start(token, roots)
            if self.grads[index] is None:
                self.fired += 1
            self.grads[index] = grad
            if self.fired == self.expected:
                self._call()

        return on_gradient

    def _call(self) -> None:
        grads = self.grads
        self.expected = -1  # called for this pass: later gradients of it are not reported again
        self.fn(grads)

    def _pass_ended(self) -> None:
        if self.expected != -1 and self.fired:
            self._call()
        self.token = None
        self.grads = []


class _FirstGradient:
    """The record of a ``mode="any"`` registration: ``fn`` sees the first gradient of each pass."""

    def __init__(self, fn: Callable):
        self.fn = fn
        self.token = None

    def hook_for(self, index: int) -> Callable:
        from .engine import queue_callback, running_pass

        def on_gradient(grad):
            token, _ = running_pass()
            if self.token is token:
                return
            self.token = token
            queue_callback(self._pass_ended)
            self.fn(grad)

        return on_gradient

    def _pass_ended(self) -> None:
        self.token = None


def register_multi_grad_hook(tensors: Sequence[Tensor], fn: Callable, *, mode: str = "all") -> _MultiHandle:
    """Call ``fn`` once per backward pass with the gradients of ``tensors`` (``mode="all"``) or the first one computed (``"any"``)."""
    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    tensors = tuple(tensors)
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"register_multi_grad_hook: tensors[{i}] is a {type(t).__name__}, not a Tensor")
        if not t.requires_grad:
            raise RuntimeError(
                f"register_multi_grad_hook: tensors[{i}] (shape {list(t._shape)}, {t._dtype.name}) does not require "
                f"grad, so no gradient is ever computed for it"
            )
    record = _AllGradients(tensors, fn) if mode == "all" else _FirstGradient(fn)
    return _MultiHandle([t.register_hook(record.hook_for(i)) for i, t in enumerate(tensors)])
