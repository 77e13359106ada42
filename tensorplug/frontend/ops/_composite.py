"""Composite ops: an op defined by its decomposition into other ops, dispatched by name.

>>> @composite("softplus")
... def softplus(input, beta=1.0, threshold=20.0):
...     scaled = input * beta
...     return tp.where(scaled > threshold, input, (scaled.exp() + 1).log() / beta)

The decorated function is the decomposition; the returned function dispatches through the op's
table, so a backend can replace the decomposition with a fused kernel. Until one does, the
decomposition runs (above autograd, so the primitives it calls record the graph: gradients come
for free). A backend may only override an op with an explicit derivative, given with
``derivative=``: ``formula(grad, args, output, kwargs, needs) -> tuple`` of gradients, one per
entry of ``differentiable`` (positions of the op's tensor arguments); ``args`` are the call's
positional arguments, ``output`` the result when ``save_output`` (else None), ``needs`` which
gradients are wanted.
"""
from __future__ import annotations

import functools

from ... import dispatcher
from ...dispatcher import AUTOGRAD, ExcludeKeys, Operator

__all__ = ["composite", "register_derivative"]


def composite(name: str, *, derivative=None, differentiable: tuple = (0,), save_output: bool = False):
    """Define composite op ``name`` from the decorated decomposition (see the module docstring)."""

    def define(decomposition):
        op = Operator(name, decomposition=decomposition)
        lookup, extract = op.lookup, dispatcher.keyset_of

        @functools.wraps(decomposition)
        def call(*args, **kwargs):
            return lookup(extract(args, kwargs))(*args, **kwargs)

        call.op = op
        if derivative is not None:
            register_derivative(op, derivative, differentiable, save_output)
        return call

    return define


def register_derivative(op: Operator, formula, differentiable: tuple = (0,), save_output: bool = False) -> None:
    """Give composite ``op`` an explicit derivative (its Autograd kernel), which allows backends
    to override it with fused kernels."""
    from ..autograd.derivatives import FormulaNode
    from ..autograd.graph import NO_EDGE, SavedTensor, gradient_edge, set_history
    from ..tensor import Tensor

    mask = AUTOGRAD.mask

    def autograd_kernel(below, *args, **kwargs):
        needs = [i for i in differentiable if i < len(args) and isinstance(args[i], Tensor) and args[i]._keys & mask]
        if not needs:
            with ExcludeKeys(mask):
                return op.lookup(below)(*args, **kwargs)
        edges = tuple(gradient_edge(args[i]) if i in needs else NO_EDGE for i in differentiable)
        saved = tuple(SavedTensor(a, op.name) if isinstance(a, Tensor) else a for a in args)
        # Below autograd, nested ops (a decomposition) must not record: they are covered by
        # this op's own derivative.
        with ExcludeKeys(mask):
            out = op.lookup(below)(*args, **kwargs)
        saved_out = SavedTensor(out, op.name, True) if save_output else None
        set_history(out, FormulaNode(op.name, formula, edges, saved, saved_out, kwargs))
        return out

    autograd_kernel.__qualname__ = f"autograd_{op.name}"
    dispatcher.register_kernel(op, AUTOGRAD, autograd_kernel)

