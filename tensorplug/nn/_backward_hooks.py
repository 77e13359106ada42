"""Module backward hooks: what ``Module.register_full_backward_hook`` and
``register_full_backward_pre_hook`` run on, as PyTorch's ``torch.utils.hooks.BackwardHook``.

A call of a module with such hooks passes its tensor inputs, and then its tensor outputs, through
an identity node each (``BackwardHookFunctionBackward``). The outputs' node sees the gradients
w.r.t. the outputs (it runs the pre hooks, which may replace them); the inputs' node sees the
gradients w.r.t. the inputs and runs the hooks with both, which may replace the inputs' ones.
"""
from __future__ import annotations

import warnings

from ..frontend.factories import zeros
from ..frontend.autograd.grad_mode import is_grad_enabled
from ..frontend.autograd.graph import NO_EDGE, Node, gradient_edge, set_history
from ..frontend.tensor import Tensor, make_tensor

__all__ = ["BackwardHook", "BackwardHookNode", "WrappedHook", "INPLACE_ON_HOOK_OUTPUT"]

#: PyTorch's error for an in-place op on a tensor that passed through the identity node: the
#: rebased history would skip the node, so the hook would see wrong gradients or none.
INPLACE_ON_HOOK_OUTPUT = (
    "Output {nr} of BackwardHookFunction is a view and is being modified inplace. This view was created inside a "
    "custom Function (or because an input was returned as-is) and the autograd logic to handle view+inplace would "
    "override the custom backward associated with the custom Function, leading to incorrect gradients. This "
    "behavior is forbidden. You can fix this by cloning the output of the custom Function."
)


class BackwardHookNode(Node):
    """The identity node between a hooked module and its tensor inputs (or outputs)."""

    __slots__ = ("_metas",)
    inplace_error = INPLACE_ON_HOOK_OUTPUT

    def __init__(self, edges: tuple, tensors: list):
        super().__init__(edges)
        self._metas = tuple((t._shape, t._dtype, t._device) for t in tensors)

    @property
    def num_outputs(self) -> int:
        return len(self._metas)

    def name(self) -> str:
        return "BackwardHookFunctionBackward"

    def backward(self, grads: tuple) -> tuple:
        # A missing gradient becomes zeros, as for any custom Function (materialize_grads): a
        # hook's grad_input holds zeros for an input the outputs did not use.
        return tuple(
            zeros(shape, dtype=dtype, device=device) if g is None else g
            for g, (shape, dtype, device) in zip(grads, self._metas)
        )


def _pack_with_none(indices, values, size: int) -> tuple:
    packed = [None] * size
    for index, value in zip(indices, values):
        packed[index] = value
    return tuple(packed)


class BackwardHook:
    """One module call's backward hooks: ``setup_input_hook(args)`` before ``forward``,
    ``setup_output_hook(result)`` after it."""

    def __init__(self, module, user_hooks: list, user_pre_hooks: list):
        self.module = module
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.grad_outputs = None
        self.n_outputs = -1
        self.output_tensors_index = None
        self.n_inputs = -1
        self.input_tensors_index = None

    def _apply_on_tensors(self, install, args: tuple):
        """Pass the tensors of ``args`` through one identity node and ``install`` its hook;
        returns the new args and the positions of the tensors (None when nothing is recorded)."""
        positions = [i for i, arg in enumerate(args) if isinstance(arg, Tensor)]
        tensors = [args[i] for i in positions]
        if not (any(t.requires_grad for t in tensors) and is_grad_enabled()):
            return args, None
        node = BackwardHookNode(tuple(gradient_edge(t) if t.requires_grad else NO_EDGE for t in tensors), tensors)
        new_args = list(args)
        for nr, (i, t) in enumerate(zip(positions, tensors)):
            if t.requires_grad:
                # An alias, not a view (no _base): an in-place op on it must meet this node
                # (the error in derivatives._inplace), not rebase the tensor it aliases.
                alias = make_tensor(t._storage, t._shape, t._stride, t._offset, t._dtype, t._device, t._version_ref)
                set_history(alias, node, nr)
                new_args[i] = alias
        install(node)
        return tuple(new_args), positions

    def setup_input_hook(self, args: tuple) -> tuple:
        def install(node: Node) -> None:
            node.register_hook(self._input_hook)

        new_args, self.input_tensors_index = self._apply_on_tensors(install, args)
        self.n_inputs = len(args)
        return new_args

    def _input_hook(self, grad_inputs: tuple, _grad_outputs: tuple):
        if self.grad_outputs is None:
            # The gradient reached the inputs without passing through the outputs (double
            # backward, or an output the module handed on untouched): nothing to report.
            return None
        packed = _pack_with_none(self.input_tensors_index, grad_inputs, self.n_inputs)
        for hook in self.user_hooks:
            out = hook(self.module, packed, self.grad_outputs)
            if out is None:
                continue
            if len(out) != len(packed):
                raise RuntimeError(
                    f"Backward hook returned an invalid number of grad_input, got {len(out)}, but expected {len(packed)}"
                )
            packed = out
        self.grad_outputs = None
        return tuple(packed[i] for i in self.input_tensors_index)

    def setup_output_hook(self, result):
        def install(node: Node) -> None:
            node.register_hook(self._output_hook)

        is_tuple = isinstance(result, tuple)
        outputs = result if is_tuple else (result,)
        new_outputs, self.output_tensors_index = self._apply_on_tensors(install, outputs)
        self.n_outputs = len(outputs)
        return new_outputs if is_tuple else new_outputs[0]

    def _output_hook(self, _grad_inputs: tuple, grad_outputs: tuple):
        self.grad_outputs = _pack_with_none(self.output_tensors_index, grad_outputs, self.n_outputs)
        expected = len(self.grad_outputs)
        for pre_hook in self.user_pre_hooks:
            replaced = pre_hook(self.module, self.grad_outputs)
            if replaced is None:
                continue
            if len(replaced) != expected:
                raise RuntimeError(
                    f"Backward pre hook returned an invalid number of grad_output, got {len(replaced)}, but expected {expected}"
                )
            self.grad_outputs = replaced
        local_grad_outputs = self.grad_outputs
        if self.input_tensors_index is None:
            # No input requires grad: the inputs' node does not exist, so the hooks run here,
            # with None for every grad_input (PyTorch's rule, and its warning).
            warnings.warn(
                "Full backward hook is firing when gradients are computed with respect to module outputs since no "
                "inputs require gradients. See "
                "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html#torch.nn.Module.register_full_backward_hook "
                "for more details.",
                stacklevel=2,
            )
            grad_inputs = (None,) * self.n_inputs
            for hook in self.user_hooks:
                out = hook(self.module, grad_inputs, self.grad_outputs)
                if out is not None and not (isinstance(out, tuple) and all(g is None for g in out)):
                    raise RuntimeError(
                        "Backward hook for Modules where no input requires gradient should always return None or None "
                        "for all gradients."
                    )
            self.grad_outputs = None
        return tuple(local_grad_outputs[i] for i in self.output_tensors_index)


class WrappedHook:
    """A deprecated ``register_backward_hook`` hook on the node of a module's output:
    ``hook(module, grad_input, grad_output)`` with that node's gradients."""

    def __init__(self, hook, module):
        self.hook = hook
        self.module = module

    def __call__(self, grad_inputs: tuple, grad_outputs: tuple):
        return self.hook(self.module, grad_inputs, grad_outputs)


def warn_non_full_backward_hook(inputs, result, grad_fn) -> None:
    """PyTorch's warnings for the cases where a deprecated backward hook misses gradients."""
    if not isinstance(result, Tensor):
        if not (isinstance(result, tuple) and all(isinstance(r, Tensor) for r in result)):
            warnings.warn(
                "Using non-full backward hooks on a Module that does not return a single Tensor or a tuple of Tensors "
                "is deprecated and will be removed in future versions. This hook will be missing some of the "
                "grad_output. Please use register_full_backward_hook to get the documented behavior.",
                FutureWarning, stacklevel=3,
            )
            return
    else:
        result = (result,)
    if not isinstance(inputs, Tensor):
        if not (isinstance(inputs, tuple) and all(isinstance(i, Tensor) for i in inputs)):
            warnings.warn(
                "Using non-full backward hooks on a Module that does not take as input a single Tensor or a tuple of "
                "Tensors is deprecated and will be removed in future versions. This hook will be missing some of the "
                "grad_input. Please use register_full_backward_hook to get the documented behavior.",
                FutureWarning, stacklevel=3,
            )
            return
    else:
        inputs = (inputs,)
    # Lists and identity tests, not sets: nodes in a set would order by hash (STYLE.md).
    out_grad_fns = []
    for r in result:
        if r.grad_fn is not None and all(r.grad_fn is not f for f in out_grad_fns):
            out_grad_fns.append(r.grad_fn)
    if not out_grad_fns or (len(out_grad_fns) == 1 and grad_fn is not out_grad_fns[0]):
        warnings.warn(
            "Using a non-full backward hook when outputs are nested in python data structure is deprecated and will be "
            "removed in future versions. This hook will be missing some grad_output.",
            FutureWarning, stacklevel=3,
        )
    elif len(out_grad_fns) > 1:
        warnings.warn(
            "Using a non-full backward hook when outputs are generated by different autograd Nodes is deprecated and "
            "will be removed in future versions. This hook will be missing some grad_output. Please use "
            "register_full_backward_hook to get the documented behavior.",
            FutureWarning, stacklevel=3,
        )
    else:
        input_fns = {id(i.grad_fn) for i in inputs if i.grad_fn is not None}
        next_fns = {id(edge[0]) for edge in grad_fn.next_functions}
        if input_fns != next_fns:
            warnings.warn(
                "Using a non-full backward hook when the forward contains multiple autograd Nodes is deprecated and "
                "will be removed in future versions. This hook will be missing some grad_input. Please use "
                "register_full_backward_hook to get the documented behavior.",
                FutureWarning, stacklevel=3,
            )
