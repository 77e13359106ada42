"""Module backward hooks: the gradient taps a hooked module call puts around its tensors.

A module with full backward hooks or backward pre-hooks makes one :class:`HookedCall` per call.
Before ``forward`` the call swaps its tensor arguments for aliases recorded by one
:class:`GradientTap` node; after ``forward`` it does the same with the tensor outputs. Backward
meets the output tap first, with the gradients w.r.t. the outputs: the pre-hooks run there and may
replace them. It meets the input tap last, with the gradients w.r.t. the inputs: the hooks run
there with both, and may replace the inputs' gradients. The deprecated (legacy) hooks instead sit
on the autograd node that produced the module's first output tensor (:func:`attach_legacy_hooks`).
"""
from __future__ import annotations

import functools
import warnings
from typing import Callable

from ..frontend.autograd.grad_mode import is_grad_enabled
from ..frontend.autograd.graph import NO_EDGE, Node, gradient_edge, set_history
from ..frontend.factories import zeros
from ..frontend.tensor import Tensor, make_tensor

__all__ = ["GradientTap", "HookedCall", "attach_legacy_hooks", "TAP_NODE_NAME", "INPLACE_ON_TAPPED_TENSOR"]

#: The grad_fn name PyTorch shows for a hooked module's outputs (and forward's view of its inputs).
TAP_NODE_NAME = "BackwardHookFunctionBackward"

#: PyTorch's error for an in-place op on a tapped tensor: the op's new history would bypass the
#: tap, so the module's hooks would see wrong gradients or none.
INPLACE_ON_TAPPED_TENSOR = (
    "Output {nr} of BackwardHookFunction is a view and is being modified inplace. This view was created inside a "
    "custom Function (or because an input was returned as-is) and the autograd logic to handle view+inplace would "
    "override the custom backward associated with the custom Function, leading to incorrect gradients. This "
    "behavior is forbidden. You can fix this by cloning the output of the custom Function."
)

_NO_INPUT_NEEDS_GRAD = (
    "Full backward hook is firing when gradients are computed with respect to module outputs since no "
    "inputs require gradients. See "
    "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html#torch.nn.Module.register_full_backward_hook "
    "for more details."
)


class GradientTap(Node):
    """An identity node over some tensors of one module call; backward hands the gradients that
    flow through it to ``on_gradients(tap, grads)``, whose answer flows on."""

    __slots__ = ("_layouts", "_on_gradients")
    inplace_error = INPLACE_ON_TAPPED_TENSOR

    def __init__(self, tensors: list, on_gradients: Callable):
        super().__init__(tuple(gradient_edge(t) if t.requires_grad else NO_EDGE for t in tensors))
        self._layouts = [(t._shape, t._dtype, t._device) for t in tensors]
        self._on_gradients = on_gradients

    @property
    def num_outputs(self) -> int:
        return len(self._layouts)

    def name(self) -> str:
        return TAP_NODE_NAME

    def backward(self, grads: tuple) -> tuple:
        return self._on_gradients(self, grads)

    def zero_filled(self, grads: tuple) -> tuple:
        """``grads`` with zeros where a tensor got no gradient, as a custom Function's backward
        receives them (PyTorch's materialize_grads)."""
        return tuple(
            zeros(layout[0], dtype=layout[1], device=layout[2]) if grad is None else grad
            for grad, layout in zip(grads, self._layouts)
        )


def _tap(values: tuple, on_gradients: Callable) -> tuple[tuple, list | None]:
    """Route the tensors among ``values`` through one new tap. Returns the values with the
    tapped aliases in place and the slots (indices) of all tensors; no tap, and None for the
    slots, when no tensor needs a gradient or grad mode is off."""
    slots = [i for i, value in enumerate(values) if isinstance(value, Tensor)]
    tensors = [values[i] for i in slots]
    if not is_grad_enabled() or not any(t.requires_grad for t in tensors):
        return values, None
    tap = GradientTap(tensors, on_gradients)
    swapped = list(values)
    for nr, (slot, t) in enumerate(zip(slots, tensors)):
        if not t.requires_grad:
            continue
        # An alias with no _base, not a view: an in-place op on it must meet the tap's
        # inplace_error instead of rebasing the tensor it aliases.
        alias = make_tensor(t._storage, t._shape, t._stride, t._offset, t._dtype, t._device, t._version_ref)
        set_history(alias, tap, nr)
        swapped[slot] = alias
    return tuple(swapped), slots


def _spread(grads: tuple, slots: list, width: int) -> tuple:
    """A tuple of ``width`` entries: ``grads`` at ``slots``, None at the non-tensor positions."""
    spread = [None] * width
    for slot, grad in zip(slots, grads):
        spread[slot] = grad
    return tuple(spread)


def _checked_replacement(replacement, expected: int, who: str, what: str):
    """A hook's returned gradients, once their count is known right (PyTorch's error if not)."""
    if len(replacement) != expected:
        raise RuntimeError(
            f"{who} returned an invalid number of {what}, got {len(replacement)}, but expected {expected}"
        )
    return replacement


class HookedCall:
    """The backward hooks of one module call: ``wrap_inputs(args)`` before ``forward``,
    ``wrap_outputs(result)`` after it; backward then runs the hooks at the taps."""

    __slots__ = ("module", "hooks", "pre_hooks", "_input_slots", "_input_width", "_output_slots",
                 "_output_width", "_grad_outputs")

    def __init__(self, module, hooks: list, pre_hooks: list):
        self.module = module
        self.hooks = hooks
        self.pre_hooks = pre_hooks
        self._input_slots: list | None = None
        self._input_width = 0
        self._output_slots: list | None = None
        self._output_width = 0
        # The (possibly replaced) gradients w.r.t. the outputs, from the output tap until the
        # input tap hands them to the hooks; None outside that window.
        self._grad_outputs: tuple | None = None

    def wrap_inputs(self, args: tuple) -> tuple:
        """``args`` with its tensors tapped, for ``forward`` to see."""
        self._input_width = len(args)
        args, self._input_slots = _tap(args, self._inputs_reached)
        return args

    def wrap_outputs(self, result):
        """``forward``'s result with its tensors (a Tensor, or those of a tuple) tapped."""
        if not isinstance(result, (Tensor, tuple)):
            warnings.warn(
                "For backward hooks to be called, module output should be a Tensor or a tuple of Tensors but "
                f"received {type(result)}",
                stacklevel=3,
            )
        single = not isinstance(result, tuple)
        outputs = (result,) if single else result
        self._output_width = len(outputs)
        outputs, self._output_slots = _tap(outputs, self._outputs_reached)
        return outputs[0] if single else outputs

    def _outputs_reached(self, tap: GradientTap, grads: tuple) -> tuple:
        grad_outputs = _spread(grads, self._output_slots, self._output_width)
        for pre_hook in self.pre_hooks:
            replacement = pre_hook(self.module, grad_outputs)
            if replacement is not None:
                grad_outputs = _checked_replacement(replacement, len(grad_outputs), "Backward pre hook", "grad_output")
        if self._input_slots is None:
            self._fire_without_input_grads(grad_outputs)
        else:
            self._grad_outputs = grad_outputs
        return tuple(grad_outputs[slot] for slot in self._output_slots)

    def _fire_without_input_grads(self, grad_outputs: tuple) -> None:
        # No input needs a gradient, so no input tap exists and backward never reaches the
        # inputs: the hooks run now, with None for every grad_input (PyTorch's rule).
        warnings.warn(_NO_INPUT_NEEDS_GRAD, stacklevel=2)
        grad_inputs = (None,) * self._input_width
        for hook in self.hooks:
            returned = hook(self.module, grad_inputs, grad_outputs)
            if returned is not None and not (isinstance(returned, tuple) and all(g is None for g in returned)):
                raise RuntimeError(
                    "Backward hook for Modules where no input requires gradient should always return None or None "
                    "for all gradients."
                )

    def _inputs_reached(self, tap: GradientTap, grads: tuple) -> tuple:
        filled = tap.zero_filled(grads)
        grad_outputs, self._grad_outputs = self._grad_outputs, None
        if grad_outputs is None:
            # Backward reached the inputs without passing the output tap (a double backward, or
            # an input forward returned untouched): there is no grad_output to report.
            return filled
        grad_inputs = _spread(filled, self._input_slots, self._input_width)
        for hook in self.hooks:
            replacement = hook(self.module, grad_inputs, grad_outputs)
            if replacement is not None:
                grad_inputs = _checked_replacement(replacement, len(grad_inputs), "Backward hook", "grad_input")
        return tuple(grad_inputs[slot] for slot in self._input_slots)


def _first_tensor(value) -> Tensor | None:
    """The tensor a legacy hook is attached through: ``value`` itself, else the first entry of a
    sequence or the first tensor of a dict, looked into in turn."""
    while not isinstance(value, Tensor):
        if isinstance(value, dict):
            value = next((v for v in value.values() if isinstance(v, Tensor)), None)
        elif isinstance(value, (list, tuple)) and value:
            value = value[0]
        else:
            return None
    return value


def attach_legacy_hooks(module, hooks: list, args: tuple, output) -> None:
    """Register deprecated ``register_backward_hook`` hooks on the node that produced the
    module's output: each runs as ``hook(module, grad_input, grad_output)`` with that node's
    gradients, and PyTorch's warnings say when those miss some of the module's."""
    anchor = _first_tensor(output)
    if anchor is None or anchor.grad_fn is None:
        return
    node = anchor.grad_fn
    for hook in hooks:
        node.register_hook(functools.partial(hook, module))
    _warn_when_legacy_hooks_miss_gradients(args, output, node)


def _all_tensors(value) -> tuple | None:
    """``value`` as a tuple of tensors (a Tensor alone, or a tuple of them); None otherwise."""
    if isinstance(value, Tensor):
        return (value,)
    if isinstance(value, tuple) and all(isinstance(v, Tensor) for v in value):
        return value
    return None


def _warn_when_legacy_hooks_miss_gradients(args, output, node: Node) -> None:
    def deprecated(message: str) -> None:
        warnings.warn(message, FutureWarning, stacklevel=5)

    outputs = _all_tensors(output)
    if outputs is None:
        deprecated(
            "Using non-full backward hooks on a Module that does not return a single Tensor or a tuple of Tensors "
            "is deprecated and will be removed in future versions. This hook will be missing some of the "
            "grad_output. Please use register_full_backward_hook to get the documented behavior."
        )
        return
    inputs = _all_tensors(args)
    if inputs is None:
        deprecated(
            "Using non-full backward hooks on a Module that does not take as input a single Tensor or a tuple of "
            "Tensors is deprecated and will be removed in future versions. This hook will be missing some of the "
            "grad_input. Please use register_full_backward_hook to get the documented behavior."
        )
        return
    # Distinct output nodes in first-seen order, by identity (a set of nodes would order by hash).
    producers: list = []
    for t in outputs:
        if t.grad_fn is not None and not any(t.grad_fn is p for p in producers):
            producers.append(t.grad_fn)
    if len(producers) > 1:
        deprecated(
            "Using a non-full backward hook when outputs are generated by different autograd Nodes is deprecated and "
            "will be removed in future versions. This hook will be missing some grad_output. Please use "
            "register_full_backward_hook to get the documented behavior."
        )
    elif not producers or producers[0] is not node:
        deprecated(
            "Using a non-full backward hook when outputs are nested in python data structure is deprecated and will be "
            "removed in future versions. This hook will be missing some grad_output."
        )
    else:
        # The node's inputs must be exactly the module's inputs, or grad_input misses some.
        from_inputs = {id(t.grad_fn) for t in inputs if t.grad_fn is not None}
        feeding_node = {id(edge[0]) for edge in node.next_functions}
        if from_inputs != feeding_node:
            deprecated(
                "Using a non-full backward hook when the forward contains multiple autograd Nodes is deprecated and "
                "will be removed in future versions. This hook will be missing some grad_input. Please use "
                "register_full_backward_hook to get the documented behavior."
            )
