"""Autograd for views: a view of a tensor that requires grad gets a node mapping the view's
gradient back to its input's shape.

Views are frontend-only metadata ops (no dispatch), so they record here, cheaply: one flag
test when nothing requires grad.
"""
from __future__ import annotations

from ...dispatcher import AUTOGRAD, local_state
from ..tensor import Tensor
from .graph import Node, gradient_edge, set_history

__all__ = ["ViewNode", "record_view", "maybe_record"]

_AUTOGRAD_MASK = AUTOGRAD.mask


class ViewNode(Node):
    """Backward of a view op. ``kind`` says how the gradient goes back to the input's shape:

    * ``reshape``: reshape back; ``permute``: permute by the inverse order;
    * ``expand``: sum over the broadcast dims;
    * ``replay``: scatter into zeros of the input's shape through the same view op
      (``replay(zeros)`` is the view's region), for select, slices, narrow, diagonal, ...;
    * ``replay_sum``: the same, adding up repeated elements, for views that may overlap
      (unfold, as_strided);
    * ``strided``: as ``replay`` through an as_strided geometry on a contiguous input.
    """

    __slots__ = ("kind", "input_shape", "dtype", "device", "arg", "op_name")

    def __init__(self, edge, op_name: str, kind: str, source: Tensor, arg):
        super().__init__((edge,))
        self.op_name = op_name
        self.kind = kind
        self.input_shape = source._shape
        self.dtype = source._dtype
        self.device = source._device
        self.arg = arg

    def name(self) -> str:
        return "".join(p.capitalize() for p in self.op_name.split("_")) + "Backward0"

    def backward(self, grads: tuple) -> tuple:
        grad = grads[0]
        if grad is None:
            return (None,)
        kind = self.kind
        if kind == "reshape":
            return (grad.reshape(self.input_shape),)
        if kind == "permute":
            order = self.arg
            inverse = [0] * len(order)
            for i, d in enumerate(order):
                inverse[d] = i
            return (grad.permute(inverse),)
        if kind == "expand":
            return (sum_to_shape(grad, self.input_shape),)
        import tensorplug as tp

        zeros = tp.zeros(self.input_shape, dtype=self.dtype, device=self.device)
        if kind == "replay_sum":
            # The view may repeat input elements (unfold, as_strided): replay it on the
            # inputs' flat positions and add every gradient element into its position.
            replay, args = self.arg
            positions = replay(tp.arange(zeros.numel(), device=self.device).reshape(self.input_shape), *args)
            flat = zeros.reshape(-1)
            flat.index_put_((positions.reshape(-1),), grad.reshape(-1), accumulate=True)
            return (flat.reshape(self.input_shape),)
        if kind == "replay":
            replay, args = self.arg
            region = replay(zeros, *args)
        else:
            region = zeros.as_strided(*self.arg)
        region.copy_(grad)
        return (zeros,)


def sum_to_shape(grad: Tensor, shape: tuple) -> Tensor:
    """Sum ``grad`` over the dims that broadcasting added or stretched, back to ``shape``."""
    lead = grad.ndim - len(shape)
    stretched = [lead + i for i, size in enumerate(shape) if size == 1 and grad._shape[lead + i] != 1]
    if not stretched:
        # Only leading dims: a sum without keepdim has the shape itself, and a result that is no
        # view lets the engine make it the leaf's .grad without a copy (a bias's gradient).
        return grad.sum(dim=list(range(lead))) if lead else grad
    grad = grad.sum(dim=list(range(lead)) + stretched, keepdim=True)
    return grad.reshape(shape) if grad._shape != shape else grad


def maybe_record(view: Tensor, source: Tensor, op_name: str, kind: str, arg=None) -> Tensor:
    """Give ``view`` a backward node when ``source`` requires grad and grad mode is on."""
    if source._keys & _AUTOGRAD_MASK and local_state.mask & _AUTOGRAD_MASK:
        set_history(view, ViewNode(gradient_edge(source), op_name, kind, source, arg))
    return view


def record_view(view: Tensor, base: Tensor, geometry: tuple) -> None:
    """After an in-place op rebased ``base``, make ``view`` a view of the new base."""
    set_history(view, ViewNode(gradient_edge(base), "as_strided", "strided", base, geometry))
