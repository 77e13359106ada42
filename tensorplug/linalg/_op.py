"""``linalg_op``: an op with one or several outputs, a kernel per device and an explicit derivative.

    @linalg_op("linalg_inv", derivative=_inv_backward)
    def _inv(A):
        return to_device(np.linalg.inv(to_host(A)), A)

The decorated function is the op's decomposition: it fills every backend's slot, so it runs on
every device (for the decompositions, through the host; see _host.py) until a backend registers
a kernel of its own for the op's name. The Autograd slot holds the derivative, which is what
allows that override (tensorplug.frontend.ops._composite explains the rule for one output).

``derivative(grads, inputs, outputs, needs) -> tuple``: ``grads`` has one entry per output (None
where no gradient flowed), ``inputs`` are the call's positional arguments, ``outputs`` the op's
results, ``needs`` which of the ``differentiable`` arguments want a gradient. It returns one
gradient (or None) per entry of ``differentiable``. Formulas are written with tensorplug ops, so a
backward with ``create_graph=True`` records itself and gives second derivatives. Only floating
outputs listed in ``differentiable_outputs`` get a history (ranks and signs are constants).
"""
from __future__ import annotations

import functools

from .. import dispatcher
from ..dispatcher import AUTOGRAD, COMPLEX, ExcludeKeys, Operator
from ..frontend.autograd.grad_mode import is_grad_enabled
from ..frontend.autograd.graph import NO_EDGE, Node, SavedTensor, gradient_edge, set_history
from ..frontend.tensor import Tensor, make_tensor

__all__ = ["linalg_op"]

_MASK = AUTOGRAD.mask


class LinalgNode(Node):
    """The backward of one linalg op call, with one gradient slot per output."""

    __slots__ = ("op_name", "formula", "saved", "outputs", "count")

    def __init__(self, op_name: str, formula, edges: tuple, saved: tuple, outputs: tuple):
        super().__init__(edges)
        self.op_name, self.formula, self.saved, self.outputs = op_name, formula, saved, outputs
        self.count = len(outputs)

    @property
    def num_outputs(self) -> int:
        return self.count

    def name(self) -> str:
        return "".join(part.capitalize() for part in self.op_name.split("_")) + "Backward0"

    def backward(self, grads: tuple) -> tuple:
        grads = tuple(grads) + (None,) * (self.count - len(grads))
        if all(g is None for g in grads):
            return (None,) * len(self.next_functions)
        inputs = tuple(s.unpack() if isinstance(s, SavedTensor) else s for s in self.saved)
        outputs = tuple(self._output(nr, s) for nr, s in enumerate(self.outputs))
        needs = tuple(edge[0] is not None for edge in self.next_functions)
        return tuple(self.formula(grads, inputs, outputs, needs))

    def _output(self, nr: int, saved):
        if not isinstance(saved, SavedTensor):
            return saved
        t = saved.unpack()
        if is_grad_enabled() and (t._dtype.is_floating_point or t._dtype.is_complex):
            # A double backward differentiates through this output: re-attach it to this node
            # under its own output number (SavedTensor.unpack knows only output 0).
            t = make_tensor(t._storage, t._shape, t._stride, t._offset, t._dtype, t._device, t._version_ref, t._base)
            set_history(t, self, nr)
        return t

    def release(self) -> None:
        for s in self.saved + self.outputs:
            if isinstance(s, SavedTensor):
                s.release()


def linalg_op(name: str, *, derivative, differentiable: tuple = (0,), differentiable_outputs: tuple | None = None):
    """Define op ``name`` from the decorated kernel, with an explicit derivative (module docstring)."""

    def define(kernel):
        op = Operator(name, decomposition=kernel)
        lookup, extract = op.lookup, dispatcher.keyset_of

        @functools.wraps(kernel)
        def call(*args, **kwargs):
            return lookup(extract(args, kwargs))(*args, **kwargs)

        def autograd_kernel(below, *args, **kwargs):
            needs = [i for i in differentiable if i < len(args) and isinstance(args[i], Tensor) and args[i]._keys & _MASK]
            with ExcludeKeys(_MASK):
                result = op.lookup(below)(*args, **kwargs)
            if not needs:
                return result
            outs = result if isinstance(result, tuple) else (result,)
            recorded = range(len(outs)) if differentiable_outputs is None else differentiable_outputs
            edges = tuple(gradient_edge(args[i]) if i in needs else NO_EDGE for i in differentiable)
            saved = tuple(SavedTensor(a, name) if isinstance(a, Tensor) else a for a in args)
            node = LinalgNode(name, derivative, edges, saved, outs)
            for nr, out in enumerate(outs):
                # A complex output is always differentiable (slogdet's sign is, for complex input).
                if isinstance(out, Tensor) and (out._dtype.is_complex or nr in recorded and out._dtype.is_floating_point):
                    set_history(out, node, nr)
            # Saved once the outputs have their grad_fn: a saved-tensor pack hook sees them so, as in PyTorch.
            node.outputs = tuple(SavedTensor(o, name, True) if isinstance(o, Tensor) else o for o in outs)
            return result

        def complex_kernel(below, *args, **kwargs):
            # Complex operands go down to the Autograd slot unchanged: the kernel hands LAPACK the
            # complex arrays and the derivative is written with conjugate transposes.
            return op.lookup(below)(*args, **kwargs)

        autograd_kernel.__qualname__ = f"autograd_{name}"
        complex_kernel.__qualname__ = f"complex_{name}"
        dispatcher.register_kernel(op, AUTOGRAD, autograd_kernel)
        dispatcher.register_kernel(op, COMPLEX, complex_kernel)
        call.op = op
        return call

    return define
