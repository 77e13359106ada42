"""The autograd graph: nodes, edges, saved tensors and leaf accumulators.

A node is the backward of one recorded operation. Its ``next_functions`` are edges
``(node, input_nr)`` to the nodes that produced its inputs (an ``AccumulateGrad`` for a leaf,
``(None, 0)`` for an input that needs no gradient). Tensors point to their node (``grad_fn``); nodes
point only backwards, and a node never holds the tensor it produced with its grad_fn, so the
graph has no reference cycles and is freed by reference counting alone.
"""
from __future__ import annotations

import itertools
import traceback
import weakref

from ...dispatcher import AUTOGRAD, ExcludeKeys
from ..tensor import Tensor, make_tensor
from . import saved_hooks as _saved_hooks
from .multi_grad import register_multi_grad_hook
from .saved_hooks import disable_saved_tensors_hooks, save_on_cpu, saved_tensors_hooks

__all__ = [
    "Node", "AccumulateGrad", "SavedTensor", "NO_EDGE", "gradient_edge", "set_history", "anomaly_mode",
    "saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks", "register_multi_grad_hook",
]

#: The edge of an input that needs no gradient, as PyTorch shows it in next_functions.
NO_EDGE = (None, 0)

_AUTOGRAD_MASK = AUTOGRAD.mask
_sequence = itertools.count()


class _AnomalyMode:
    enabled = False
    check_nan = True


anomaly_mode = _AnomalyMode()


class Node:
    """Backward of one operation. Subclasses implement :meth:`backward`."""

    __slots__ = ("next_functions", "_sequence_nr", "_pre_hooks", "_hooks", "_forward_trace", "__weakref__")
    num_outputs = 1
    #: Set (a message with ``{nr}``) by nodes whose outputs must not be modified in place, as
    #: PyTorch forbids for the outputs of a custom Function that returns its inputs as they are.
    inplace_error: str | None = None

    def __init__(self, next_functions: tuple):
        self.next_functions = next_functions
        self._sequence_nr = next(_sequence)
        self._pre_hooks = None
        self._hooks = None
        self._forward_trace = "".join(traceback.format_stack(limit=12)[:-3]) if anomaly_mode.enabled else None

    def name(self) -> str:
        return type(self).__name__

    def backward(self, grads: tuple) -> tuple:
        """Gradients for each input edge, given gradients for each output."""
        raise NotImplementedError

    def release(self) -> None:
        """Drop saved tensors (after a backward without retain_graph)."""

    def register_hook(self, hook):
        """``hook(grad_inputs, grad_outputs)`` runs after this node's backward."""
        if self._hooks is None:
            self._hooks = []
        self._hooks.append(hook)
        return _RemovableHandle(self._hooks, hook)

    def register_prehook(self, hook):
        """``hook(grad_outputs)`` runs before this node's backward and may replace them."""
        if self._pre_hooks is None:
            self._pre_hooks = []
        self._pre_hooks.append(hook)
        return _RemovableHandle(self._pre_hooks, hook)

    def __repr__(self) -> str:
        return f"<{self.name()} object at {id(self):#x}>"


class _RemovableHandle:
    __slots__ = ("_hooks", "_hook")

    def __init__(self, hooks: list, hook):
        self._hooks, self._hook = hooks, hook

    def remove(self) -> None:
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


class AccumulateGrad(Node):
    """The sink of a leaf tensor: adds incoming gradients into ``leaf.grad``."""

    __slots__ = ("variable",)

    def __init__(self, variable: Tensor):
        super().__init__(())
        self.variable = variable

    def backward(self, grads: tuple) -> tuple:
        raise RuntimeError("AccumulateGrad is applied by the engine")


class SavedTensor:
    """A tensor saved for backward, with the version it had, checked when it is unpacked.

    An input is kept as it is (it leads to older nodes only). An op's own output is kept as an
    alias without its grad_fn, since the node would otherwise hold itself; :meth:`unpack`
    re-attaches the node when the value is needed for a double backward.

    Under saved-tensor hooks (saved_hooks.py) the node keeps ``(packed, unpack_hook, edge)`` in
    ``_hooked`` instead of the tensor: what pack_hook returned, and the gradient edge of the
    original, which the unpacked tensor is attached to so that a double backward still reaches
    it. As in PyTorch, a hooked tensor has no version check (the hooks own its value).
    """

    __slots__ = ("_tensor", "_version", "_is_output", "_op_name", "_hooked")

    def __init__(self, t: Tensor, op_name: str, is_output: bool = False):
        self._is_output = is_output
        self._op_name = op_name
        self._version = t._version_ref[0]
        if _saved_hooks.pushed:  # one module-level read on the common path (no hooks anywhere)
            hooks = _saved_hooks.current_hooks()
            if hooks is not None:
                self._tensor = None
                self._hooked = _pack(t, hooks, is_output)
                return
        if is_output:
            t = make_tensor(t._storage, t._shape, t._stride, t._offset, t._dtype, t._device, t._version_ref, t._base)
        self._tensor = t
        self._hooked = None

    def unpack(self, node: Node | None = None) -> Tensor:
        t = self._tensor
        if t is None:
            if self._hooked is not None:
                return self._unpack_hooked(node)
            raise RuntimeError(
                "Trying to backward through the graph a second time (or directly access saved tensors after they "
                "have already been freed). Saved intermediate values of the graph are freed when you call .backward() "
                "or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second "
                "time or if you need to access saved tensors after calling backward."
            )
        if t._version_ref[0] != self._version:
            what = f"output 0 of {self._op_name}" if self._is_output else f"an input of {self._op_name}"
            raise RuntimeError(
                f"one of the variables needed for gradient computation has been modified by an inplace operation: "
                f"[{t._dtype.name} {list(t._shape)}], which is {what}, is at version "
                f"{t._version_ref[0]}; expected version {self._version} instead. Hint: enable anomaly detection "
                f"to find the operation that failed to compute its gradient, with tp.autograd.set_detect_anomaly(True)."
            )
        if self._is_output and node is not None:
            # Re-attach the producing node so that create_graph can differentiate through it.
            t = make_tensor(t._storage, t._shape, t._stride, t._offset, t._dtype, t._device, t._version_ref, t._base)
            t._keys |= _AUTOGRAD_MASK
            t.grad_fn = node
        return t

    def _unpack_hooked(self, node: Node | None) -> Tensor:
        packed, unpack_hook, edge = self._hooked
        value = unpack_hook(packed)
        if not isinstance(value, Tensor):
            raise TypeError(
                f"Output of saved tensor unpack_hook expected to be a Tensor but got result of type "
                f"{type(value).__name__}"
            )
        # A new tensor over the value's memory: the unpacked value's own graph, if any, is not
        # the one this node differentiates (PyTorch attaches the saved tensor's edge instead).
        t = make_tensor(value._storage, value._shape, value._stride, value._offset, value._dtype, value._device,
                        value._version_ref, value._base)
        if self._is_output:
            if node is not None:
                t._keys |= _AUTOGRAD_MASK
                t.grad_fn = node
        elif edge is not None:
            target, output_nr = edge
            if target.__class__ is AccumulateGrad:
                # A leaf: the unpacked tensor is a leaf whose gradients flow into the original's .grad.
                t._keys |= _AUTOGRAD_MASK
                autograd_meta(t).accumulator = weakref.ref(target)
            else:
                set_history(t, target, output_nr)
        return t

    def release(self) -> None:
        self._tensor = None
        self._hooked = None


_PACK_MODIFIED_INPUT = (
    "A saved tensor pack hook is modifying its input in place. Tensors provided as input to pack hook cannot be "
    "modified by in-place operations as this can lead to unexpected side-effects. Please open an issue if you need "
    "to perform in-place operations on the input to a pack hook."
)


def _pack(t: Tensor, hooks: tuple, is_output: bool) -> tuple:
    """``(packed, unpack_hook, edge)`` for ``t`` saved under ``hooks`` (see SavedTensor)."""
    pack_hook, unpack_hook = hooks
    version = t._version_ref[0]
    with ExcludeKeys(_AUTOGRAD_MASK):  # PyTorch runs pack hooks with grad mode off
        packed = pack_hook(t)
    if t._version_ref[0] != version:
        raise RuntimeError(_PACK_MODIFIED_INPUT)
    # An output's edge is its node, which unpack(node) is given; an input that needs no gradient has none.
    edge = gradient_edge(t) if not is_output and t._keys & _AUTOGRAD_MASK else None
    return (packed, unpack_hook, edge)


class AutogradMeta:
    """Per-tensor autograd state that most tensors never need (kept in ``Tensor._autograd``)."""

    __slots__ = ("output_nr", "accumulator", "hooks", "post_accumulate_hooks", "retains_grad")

    def __init__(self):
        self.output_nr = 0
        self.accumulator = None  # weakref to the leaf's AccumulateGrad
        self.hooks = None
        self.post_accumulate_hooks = None  # hook(leaf) after .grad was updated (DDP's trigger)
        self.retains_grad = False


def autograd_meta(t: Tensor) -> AutogradMeta:
    meta = t._autograd
    if not isinstance(meta, AutogradMeta):
        meta = AutogradMeta()
        t._autograd = meta
    return meta


def gradient_edge(t: Tensor):
    """The edge a gradient for ``t`` flows into: (grad_fn, output_nr), or the leaf's accumulator."""
    grad_fn = t.grad_fn
    if grad_fn is not None:
        meta = t._autograd
        return (grad_fn, 0 if meta is None else meta.output_nr)
    if not t._keys & _AUTOGRAD_MASK:
        return None
    meta = autograd_meta(t)
    accumulator = meta.accumulator() if meta.accumulator is not None else None
    if accumulator is None:
        accumulator = AccumulateGrad(t)
        meta.accumulator = weakref.ref(accumulator)
    return (accumulator, 0)


def set_history(t: Tensor, node: Node, output_nr: int = 0) -> None:
    """Make ``t`` the ``output_nr``-th output of ``node``."""
    t.grad_fn = node
    t._keys |= _AUTOGRAD_MASK
    if output_nr or isinstance(t._autograd, AutogradMeta):
        autograd_meta(t).output_nr = output_nr
