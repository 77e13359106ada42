"""``tp.utils.checkpoint``: activation checkpointing, as ``torch.utils.checkpoint``.

``checkpoint(function, *args)`` runs ``function`` keeping none of its intermediate results for
backward: only its inputs are saved, and backward runs ``function`` again, with the random
generators put back where they were, so dropout draws the same masks and the gradients are
those of the un-checkpointed run. Memory for activations drops from the whole chain to one
segment's at a time; the cost is a second forward pass.

>>> import tensorplug as tp
>>> from tensorplug.utils.checkpoint import checkpoint
>>> layer = tp.nn.Sequential(tp.nn.Linear(4, 4), tp.nn.Tanh(), tp.nn.Linear(4, 4))
>>> x = tp.randn(2, 4, requires_grad=True)
>>> checkpoint(layer, x, use_reentrant=False).sum().backward()
>>> x.grad.shape
(2, 4)

The two variants behave as PyTorch's:

- ``use_reentrant=True`` (the default when the argument is left out, with PyTorch's warning):
  only the tensor arguments are inputs of the checkpoint's graph node; backward recomputes and
  runs a nested backward, which accumulates the parameters' ``.grad`` directly. Keyword arguments
  are refused, and when no tensor argument requires grad nothing inside gets a gradient.
- ``use_reentrant=False``: the parameters (and other leaves) the function uses are inputs of the
  node too, so ``tp.autograd.grad`` works through it, keyword arguments are passed on, and
  gradients reach parameters even when no argument requires grad. The forward is recorded once
  to find those leaves, then its saved tensors are dropped. A function that reads a tensor that
  requires grad, is not an argument and is not a leaf (an activation taken from a closure) is not
  checkpointed: it runs as usual, keeping its activations, with a warning saying which tensor.

Differences from PyTorch (docs/deviations.md): recomputation always runs the whole function
(``early_stop`` is accepted, recomputing less is PyTorch's optimisation); ``debug=True`` is
accepted and adds nothing; ``determinism_check="default"`` compares the recomputed outputs'
shapes and dtypes with the first run's (PyTorch compares every saved tensor's).
"""
from __future__ import annotations

import contextlib
import warnings

from ..amp._state import Snapshot as AutocastSnapshot
from ..frontend.autograd.functional import backward as _autograd_backward
from ..frontend.autograd.functional import grad as _autograd_grad
from ..frontend.autograd.grad_mode import enable_grad, is_grad_enabled, no_grad
from ..frontend.autograd.graph import NO_EDGE, AccumulateGrad, Node, SavedTensor, gradient_edge, set_history
from ..frontend.device import canonical_device
from ..frontend.random import default_generator
from ..frontend.tensor import Tensor

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "noop_context_fn"]


class CheckpointError(RuntimeError):
    """The recomputation differed from the first run (different output shapes or dtypes)."""


def noop_context_fn():
    """The default ``context_fn``: no context around the forward run or the recomputation."""
    return contextlib.nullcontext(), contextlib.nullcontext()


def _tensors(values) -> list:
    return [v for v in values if isinstance(v, Tensor)]


class _RngStates:
    """The default generators' states of the CPU and of every device an argument lives on, taken
    before the forward run, so that the recomputation draws the same numbers (dropout masks)."""

    def __init__(self, tensors: list):
        devices = [canonical_device("cpu")]
        for t in tensors:
            if t.device not in devices:
                devices.append(t.device)
        self.states = [(default_generator(d), default_generator(d).get_state()) for d in devices]

    @contextlib.contextmanager
    def replayed(self):
        """Generators at the saved states inside, back at their current states after (the
        recomputation must not change what the rest of the program draws)."""
        current = [(gen, gen.get_state()) for gen, _ in self.states]
        for gen, state in self.states:
            gen.set_state(state)
        try:
            yield
        finally:
            for gen, state in current:
                gen.set_state(state)


def _output_tensors(outputs) -> tuple[bool, list]:
    """(single, outputs as a list): a tensor, or the items of a tuple or list."""
    if isinstance(outputs, (tuple, list)):
        return False, list(outputs)
    return True, [outputs]


def _rebuild(outputs, items: list):
    if isinstance(outputs, (tuple, list)):
        return type(outputs)(items) if not hasattr(outputs, "_fields") else type(outputs)(*items)
    return items[0]


class _CheckpointNode(Node):
    """Backward of one checkpointed call: recompute, then differentiate the recomputation.

    Its edges are the tensor arguments' (then, without reentrancy, the leaves' the function
    used); it keeps the arguments and the generator states, nothing the function computed.
    """

    __slots__ = ("function", "args", "kwargs", "saved", "leaves", "rng", "context_fn", "reentrant", "output_meta",
                 "determinism_check", "autocast")

    def __init__(self, function, args, kwargs, leaves, rng, context_fn, reentrant, determinism_check):
        tensor_args = _tensors(args)
        edges = tuple(gradient_edge(t) if t.requires_grad else NO_EDGE for t in tensor_args)
        edges += tuple((acc, 0) for acc in leaves)
        super().__init__(edges)
        self.function = function
        # Tensors are kept as SavedTensor (version-checked: an argument changed in place before
        # backward is an error, as for any saved tensor); other arguments as they are.
        self.args = [None if isinstance(a, Tensor) else a for a in args]
        self.saved = [(i, SavedTensor(a, "CheckpointFunction")) for i, a in enumerate(args) if isinstance(a, Tensor)]
        self.kwargs = kwargs
        self.leaves = leaves
        self.rng = rng
        self.context_fn = context_fn
        self.reentrant = reentrant
        self.determinism_check = determinism_check
        self.output_meta = []
        # The recomputation runs under the autocast state of the first run, so that it computes
        # the same dtypes (backward itself never autocasts).
        self.autocast = AutocastSnapshot()

    @property
    def num_outputs(self) -> int:
        return len(self.output_meta)

    def name(self) -> str:
        return "CheckpointFunctionBackward"

    def release(self) -> None:
        for _, saved in self.saved:
            saved.release()

    def backward(self, grads: tuple) -> tuple:
        args = list(self.args)
        inputs = []
        for i, saved in self.saved:
            original = saved.unpack()
            detached = original.detach()
            detached.requires_grad_(original.requires_grad)
            args[i] = detached
            inputs.append(detached)
        rng = self.rng.replayed() if self.rng is not None else contextlib.nullcontext()
        recompute_context = self.context_fn()[1]
        with rng, enable_grad(), self.autocast, recompute_context:
            outputs = self.function(*args, **self.kwargs)
        _, recomputed = _output_tensors(outputs)
        roots, root_grads = [], []
        for nr, (shape, dtype) in enumerate(self.output_meta):
            out = recomputed[nr] if nr < len(recomputed) else None
            if self.determinism_check == "default" and shape is not None and (
                    not isinstance(out, Tensor) or out.shape != shape or out.dtype is not dtype):
                got = f"{list(out.shape)} {out.dtype.name}" if isinstance(out, Tensor) else type(out).__name__
                raise CheckpointError(
                    f"torch.utils.checkpoint: recomputed output {nr} differs from the first run's: {list(shape)} "
                    f"{dtype.name} then, {got} now (the function must compute the same thing both times)"
                )
            if isinstance(out, Tensor) and out.requires_grad and grads[nr] is not None:
                roots.append(out)
                root_grads.append(grads[nr])
        wanted = [t for t in inputs if t.requires_grad]
        if self.reentrant:
            if not roots:
                raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
            # A nested backward: parameters used inside get their .grad here, as in PyTorch.
            _autograd_backward(roots, root_grads)
            return tuple(t.grad if t.requires_grad else None for t in inputs)
        targets = wanted + [acc.variable for acc in self.leaves]
        if not roots or not targets:
            return (None,) * len(self.next_functions)
        found = iter(_autograd_grad(roots, targets, root_grads, allow_unused=True))
        input_grads = tuple(next(found) if t.requires_grad else None for t in inputs)
        return input_grads + tuple(found)


def _attach(node: _CheckpointNode, outputs, recorded_only: bool):
    """Make the float outputs the node's outputs (a detached alias for each, so the graph the
    first run may have recorded is let go); other outputs pass through."""
    single, items = _output_tensors(outputs)
    for nr, out in enumerate(items):
        meta = (None, None)
        if isinstance(out, Tensor) and out.dtype.is_floating_point and (out.requires_grad or not recorded_only):
            meta = (out.shape, out.dtype)
            alias = out.detach()
            set_history(alias, node, nr)
            items[nr] = alias
        node.output_meta.append(meta)
    return items[0] if single else _rebuild(outputs, items)


def _leaves_of_recorded_graph(outputs: list, tensor_args: list, first_new: int):
    """Walk the nodes recorded since sequence number ``first_new`` back from the outputs.

    Returns (leaf accumulators the function used besides its arguments, the recorded nodes, a
    foreign node or None): a foreign node is one recorded before the call that the function
    reached without it being an argument's, so its gradient cannot be routed through an edge.
    """
    argument_edges = {gradient_edge(t) for t in tensor_args if t.requires_grad}
    leaves, recorded, seen = [], [], set()
    stack = [out.grad_fn for out in outputs if isinstance(out, Tensor) and out.grad_fn is not None
             and out.grad_fn._sequence_nr >= first_new]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        recorded.append(node)
        for edge in node.next_functions:
            nxt = edge[0]
            if nxt is None or edge in argument_edges:
                continue
            if isinstance(nxt, AccumulateGrad):
                if nxt not in leaves:
                    leaves.append(nxt)
            elif nxt._sequence_nr < first_new:
                return leaves, recorded, nxt
            else:
                stack.append(nxt)
    return leaves, recorded, None


def _checkpoint_without_reentrant(function, args, kwargs, preserve, context_fn, determinism_check):
    tensor_args = _tensors(args)
    rng = _RngStates(tensor_args) if preserve else None
    first_new = Node(())._sequence_nr + 1
    with context_fn()[0]:
        outputs = function(*args, **kwargs)
    if not is_grad_enabled():
        return outputs
    _, items = _output_tensors(outputs)
    leaves, recorded, foreign = _leaves_of_recorded_graph(items, tensor_args, first_new)
    if not recorded:
        return outputs
    if foreign is not None:
        warnings.warn(
            f"checkpoint: the function uses a tensor that requires grad but is neither one of its arguments nor a leaf "
            f"(its grad_fn is {foreign.name()}); it was run without checkpointing and keeps its activations. Pass that "
            f"tensor as an argument to checkpoint it.",
            stacklevel=3,
        )
        return outputs
    for node in recorded:
        node.release()
    node = _CheckpointNode(function, args, kwargs, leaves, rng, context_fn, False, determinism_check)
    return _attach(node, outputs, recorded_only=True)


def _checkpoint_reentrant(function, args, preserve):
    tensor_args = _tensors(args)
    needs_grad = is_grad_enabled() and any(t.requires_grad for t in tensor_args)
    if is_grad_enabled() and not needs_grad:
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=3)
    rng = _RngStates(tensor_args) if preserve else None
    with no_grad():
        outputs = function(*args)
    if not needs_grad:
        return outputs
    node = _CheckpointNode(function, args, {}, [], rng, noop_context_fn, True, "none")
    return _attach(node, outputs, recorded_only=False)


def checkpoint(function, *args, use_reentrant: bool | None = None, context_fn=noop_context_fn,
               determinism_check: str = "default", debug: bool = False, early_stop: bool = True, **kwargs):
    """``function(*args, **kwargs)`` without keeping its intermediate results: backward
    recomputes them. ``preserve_rng_state=False`` skips saving and restoring the generators.

    ``use_reentrant`` should be given (PyTorch warns when it is not, and then uses True); False
    is the variant PyTorch recommends: see the module's docstring for the differences.
    """
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting in PyTorch "
            "2.9, calling checkpoint without use_reentrant will raise an exception. use_reentrant=False is "
            "recommended, but if you need to preserve the current default behavior, you can pass "
            "use_reentrant=True. Refer to docs for more details on the differences between the two variants.",
            stacklevel=2,
        )
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if determinism_check not in ("default", "none"):
        raise ValueError(
            f"determinism_check should be one of ['default', 'none'], but got {determinism_check!r}"
        )
    if use_reentrant:
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        return _checkpoint_reentrant(function, args, preserve)
    return _checkpoint_without_reentrant(function, args, kwargs, preserve, context_fn, determinism_check)


def checkpoint_sequential(functions, segments: int, input, use_reentrant: bool | None = None, **kwargs):
    """Run ``functions`` (an ``nn.Sequential`` or a list of modules or functions) in order on
    ``input``, in ``segments`` chunks; every chunk but the last is checkpointed, so only the
    chunks' inputs are kept for backward.

    >>> model = tp.nn.Sequential(*[tp.nn.Linear(4, 4) for _ in range(8)])
    >>> out = checkpoint_sequential(model, 4, tp.randn(2, 4, requires_grad=True), use_reentrant=False)
    """
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be passed explicitly. "
            "In version 2.9 we will raise an exception if use_reentrant is not passed. use_reentrant=False is "
            "recommended, but if you need to preserve the current default behavior, you can pass "
            "use_reentrant=True. Refer to docs for more details on the differences between the two variants.",
            stacklevel=2,
        )
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    from ..nn.containers import Sequential

    if isinstance(functions, Sequential):
        functions = list(functions.children())
    functions = list(functions)

    def run_segment(start: int, end: int):
        def forward(x):
            for j in range(start, end + 1):
                x = functions[j](x)
            return x

        return forward

    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_segment(start, end), input, use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run_segment(end + 1, len(functions) - 1)(input)
