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

from ... import _hotpath, dispatcher
from ...dispatcher import AUTOGRAD, Operator
from ..tensor import keyset_from_args

__all__ = ["composite", "register_derivative"]


def composite(name: str, *, derivative=None, differentiable: tuple = (0,), save_output: bool = False):
    """Define composite op ``name`` from the decorated decomposition (see the module docstring)."""

    def define(decomposition):
        op = Operator(name, decomposition=decomposition)
        table, lookup, state = op.table, op.lookup, dispatcher.local_state

        @functools.wraps(decomposition)
        def call(*args, **kwargs):
            # dispatcher.call, inlined: the key set from the arguments, this thread's
            # include/exclude, then the op's cached kernel.
            keys = (keyset_from_args(args, kwargs) | state.include) & state.mask
            return (table.get(keys) or lookup(keys))(*args, **kwargs)

        call.op = op
        if derivative is not None:
            register_derivative(op, derivative, differentiable, save_output)
        # The same steps in C for positional arguments (every op's internal callers use them):
        # call and keyset_from_args were two frames on every composite op (issue 14).
        return _hotpath.CompositeOp(call, table, lookup)

    return define


def register_derivative(op: Operator, formula, differentiable: tuple = (0,), save_output: bool = False) -> None:
    """Give composite ``op`` an explicit derivative (its Autograd kernel), which allows backends
    to override it with fused kernels."""
    from ..autograd.derivatives import FormulaNode
    from ..autograd.graph import NO_EDGE, SavedTensor, gradient_edge, set_history
    from ..tensor import Tensor

    mask = AUTOGRAD.mask
    name, lookup, state = op.name, op.lookup, dispatcher.local_state

    def autograd_kernel(below, *args, **kwargs):
        count = len(args)
        edges = []
        wanted = False
        for i in differentiable:
            arg = args[i] if i < count else None
            if isinstance(arg, Tensor) and arg._keys & mask:
                edges.append(gradient_edge(arg))
                wanted = True
            else:
                edges.append(NO_EDGE)
        # Below autograd, nested ops (a decomposition) must not record: they are covered by
        # this op's own derivative. The mask is set and restored inline, as ExcludeKeys(mask)
        # would: two Python calls fewer on every composite op (issue 14).
        previous = state.mask
        if not wanted:
            state.mask = previous & ~mask
            try:
                return lookup(below)(*args, **kwargs)
            finally:
                state.mask = previous
        saved = tuple([SavedTensor(a, name) if isinstance(a, Tensor) else a for a in args])
        state.mask = previous & ~mask
        try:
            out = lookup(below)(*args, **kwargs)
        finally:
            state.mask = previous
        node = FormulaNode(name, formula, tuple(edges), saved, None, kwargs)
        set_history(out, node)
        if save_output:
            # Saved once out has its grad_fn: a saved-tensor pack hook sees it so, as in PyTorch.
            node.output = SavedTensor(out, name, True)
        return out

    autograd_kernel.__qualname__ = f"autograd_{op.name}"
    kernel = autograd_kernel
    if 1 <= len(differentiable) <= 8:
        # The common case (positional arguments, no anomaly mode) runs in C, as a primitive's
        # recording does: this function's frames and the graph objects' __init__ were most of a
        # small layer's or loss's forward (issue 14). Every other call is autograd_kernel's.
        from ... import _autograd_core

        kernel = _autograd_core.RecordingKernel(autograd_kernel, op.table, lookup, formula, name, name,
                                                tuple(differentiable), True, save_output, None, composite=True)
    dispatcher.register_kernel(op, AUTOGRAD, kernel)

