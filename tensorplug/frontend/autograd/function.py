"""``tp.autograd.Function``: user-defined forward and backward, as in PyTorch.

>>> class Square(tp.autograd.Function):
...     @staticmethod
...     def forward(ctx, x):
...         ctx.save_for_backward(x)
...         return x * x
...     @staticmethod
...     def backward(ctx, grad):
...         (x,) = ctx.saved_tensors
...         return 2 * x * grad
>>> y = Square.apply(tp.ones(2, requires_grad=True))
"""
from __future__ import annotations

from ..tensor import Tensor
from .grad_mode import is_grad_enabled, no_grad
from .graph import NO_EDGE, Node, SavedTensor, gradient_edge, set_history

__all__ = ["Function", "FunctionCtx"]


class FunctionCtx:
    """The ``ctx`` of a custom Function: saved tensors and flags shared by forward and backward."""

    def __init__(self):
        self._saved = ()
        self._non_differentiable = set()
        self.needs_input_grad = ()
        self.materialize_grads = True

    def save_for_backward(self, *tensors) -> None:
        # Kept as given until apply() has attached the outputs to their node, and saved then (only
        # when a node is recorded): a saved-tensor pack hook sees outputs with their grad_fn and
        # runs for recorded calls only, as in PyTorch.
        self._saved = tensors

    @property
    def saved_tensors(self) -> tuple:
        return tuple(s.unpack() if isinstance(s, SavedTensor) else s for s in self._saved)

    def mark_non_differentiable(self, *tensors) -> None:
        self._non_differentiable.update(id(t) for t in tensors)

    def set_materialize_grads(self, value: bool) -> None:
        self.materialize_grads = bool(value)

    def mark_dirty(self, *tensors) -> None:
        """Accepted for compatibility; in-place outputs are handled like other outputs."""


class _FunctionNode(Node):
    __slots__ = ("function", "ctx", "output_meta", "input_dtypes")

    def __init__(self, function, ctx: FunctionCtx, edges: tuple, output_meta: list, input_dtypes: tuple):
        super().__init__(edges)
        self.function = function
        self.ctx = ctx
        self.output_meta = output_meta
        self.input_dtypes = input_dtypes

    @property
    def num_outputs(self) -> int:
        return len(self.output_meta)

    def name(self) -> str:
        return f"{self.function.__name__}Backward"

    def backward(self, grads: tuple) -> tuple:
        import tensorplug as tp

        if self.ctx.materialize_grads:
            grads = tuple(
                tp.zeros(shape, dtype=dtype, device=device) if g is None and shape is not None else g
                for g, (shape, dtype, device) in zip(grads, self.output_meta)
            )
        result = self.function.backward(self.ctx, *grads)
        if not isinstance(result, tuple):
            result = (result,)
        if len(result) < len(self.next_functions):
            raise RuntimeError(
                f"function {self.name()} returned an incorrect number of gradients (expected "
                f"{len(self.next_functions)}, got {len(result)})"
            )
        # A gradient in another floating dtype than its input's becomes the input's, as PyTorch's
        # engine does (a backward computed in float32 for a bfloat16 input under autocast).
        return tuple(
            g.to(dtype) if isinstance(g, Tensor) and dtype is not None and g._dtype is not dtype
            and g._dtype.is_floating_point and dtype.is_floating_point else g
            for g, dtype in zip(result[: len(self.next_functions)], self.input_dtypes)
        )

    def release(self) -> None:
        for s in self.ctx._saved:
            if isinstance(s, SavedTensor):
                s.release()


class Function:
    """Subclass with static ``forward(ctx, *args)`` and ``backward(ctx, *grads)``; call ``apply``."""

    @classmethod
    def apply(cls, *args):
        ctx = FunctionCtx()
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
        record = is_grad_enabled() and any(ctx.needs_input_grad)
        with no_grad():
            outputs = cls.forward(ctx, *args)
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        if record:
            edges = tuple(gradient_edge(a) if needs else NO_EDGE for a, needs in zip(args, ctx.needs_input_grad))
            meta = [(o._shape, o._dtype, o._device) if isinstance(o, Tensor) else (None, None, None) for o in outs]
            input_dtypes = tuple(a._dtype if isinstance(a, Tensor) else None for a in args)
            node = _FunctionNode(cls, ctx, edges, meta, input_dtypes)
            marked = []
            for nr, o in enumerate(outs):
                if not isinstance(o, Tensor) or id(o) in ctx._non_differentiable or not o._dtype.is_floating_point:
                    marked.append(o)
                    continue
                if any(o is a for a in args):
                    o = o.detach()  # an input returned as is: the output is a new node's result
                set_history(o, node, nr)
                marked.append(o)
            outs = tuple(marked)
            ctx._saved = tuple(SavedTensor(t, "Function") if isinstance(t, Tensor) else t for t in ctx._saved)
        return outs[0] if single else outs

    @staticmethod
    def forward(ctx, *args):
        raise NotImplementedError("subclasses of Function implement forward(ctx, *args)")

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError("subclasses of Function implement backward(ctx, *grads)")
