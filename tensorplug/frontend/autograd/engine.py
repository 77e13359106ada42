"""The backward engine: walks the graph iteratively, in a deterministic order.

1. Count, for every node reachable from the roots, how many edges point at it (an iterative
   depth-first walk: no recursion limit, so a 100,000-op chain works).
2. Run nodes whose gradients are complete, latest-created first (like PyTorch: a node is only
   run after every node that feeds it), summing gradients that meet at one input.
3. Leaves' accumulators add into ``.grad``; ``autograd.grad`` captures instead.
Saved tensors are released after each node runs unless ``retain_graph``.
"""
from __future__ import annotations

import heapq

from ... import _autograd_core
from ..dtypes import dtype
from ..ops.elementwise import BINARY, binary_inplace
from ..shapes import broadcast_shapes
from ..meta_device import has_values
from ..tensor import Tensor
from ...dispatcher import AUTOCAST, AUTOGRAD, MaskKeys, local_state
from . import graph
from .derivatives import FormulaNode, TensorMeta
from .graph import NO_EDGE, AccumulateGrad, AutogradMeta, Node, SavedTensor, anomaly_mode, gradient_edge
from .views import sum_to_shape

__all__ = ["run_backward", "run_from_scalar", "running_pass"]

# Reentrant and thread-safe (each thread keeps its own stack of saved masks), so shared. Backward
# never autocasts: its ops run in the dtypes autocast chose for the forward ops they differentiate
# (PyTorch's documented behaviour), even when backward() is called inside an autocast region.
_BACKWARD_DENIED = AUTOGRAD.mask | AUTOCAST.mask
_GRAD_ON = MaskKeys(allow=AUTOGRAD.mask, deny=AUTOCAST.mask)
_GRAD_OFF = MaskKeys(deny=_BACKWARD_DENIED)


_NO_GRADIENT = [None]
_add_into = binary_inplace(BINARY["add"])  # Tensor.add_ without its alpha handling
_ADD = BINARY["add"].spec


def _add(a, b):
    if a is None:
        return b
    if b is None:
        return a
    # A sparse gradient (nn.Embedding(sparse=True)) adds from its own side: Tensor + sparse raises.
    return b + a if isinstance(a, Tensor) and not isinstance(b, Tensor) else a + b


def _dependencies(roots: list[Node]) -> dict[Node, int]:
    counts: dict[Node, int] = {}
    seen = set()
    stack = [node for node in roots if node is not None]
    for node in stack:
        seen.add(node)
    while stack:
        node = stack.pop()
        for nxt, _ in node.next_functions:
            if nxt is None:
                continue
            counts[nxt] = counts.get(nxt, 0) + 1
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return counts


def conform_gradient(grad, t: Tensor, where: str):
    """``grad`` as a gradient of ``t``: on ``t``'s device, and summed back to ``t``'s shape when a
    formula left it broadcast (PyTorch's engine does both for every input it validates)."""
    if not isinstance(grad, Tensor):
        return grad  # sparse gradients keep their own class
    if grad._device is not t._device:
        grad = grad.to(t._device)
    if grad._shape != t._shape:
        try:
            broadcast = broadcast_shapes(t._shape, grad._shape) == grad._shape
        except RuntimeError:
            broadcast = False
        if not broadcast:
            noun = "leaf" if where == "AccumulateGrad" else "tensor"
            raise RuntimeError(f"{where}: gradient of shape {list(grad._shape)} for a {noun} of shape "
                               f"{list(t._shape)}")
        grad = sum_to_shape(grad, t._shape)
    return grad


def _accumulate_into_leaf(leaf: Tensor, grad: Tensor, create_graph: bool) -> None:
    meta = leaf._autograd
    if isinstance(meta, AutogradMeta) and meta.hooks:
        for hook in meta.hooks:
            replaced = hook(grad)
            if replaced is not None:
                grad = replaced
    grad = conform_gradient(grad, leaf, "AccumulateGrad")
    if leaf.grad is None:
        # A gradient may be shared with other leaves (add returns the same tensor twice): own a copy.
        # (Grad mode is off here without create_graph, so clone records nothing.)
        leaf.grad = grad.clone()
    elif not (isinstance(grad, Tensor) and isinstance(leaf.grad, Tensor)):
        leaf.grad = _add(leaf.grad, grad)  # sparse: both sparse stays sparse (entries joined), else dense
    elif create_graph:
        leaf.grad = leaf.grad + grad
    else:
        _add_into(leaf.grad, grad)  # grad mode is off here, so this records nothing
    if isinstance(meta, AutogradMeta) and meta.post_accumulate_hooks:
        for hook in tuple(meta.post_accumulate_hooks):
            if hook(leaf) is not None:  # it may only act on the leaf (PyTorch's check and words)
                raise RuntimeError("Tensor post accumulate grad hooks should return None.")


# Callbacks queued during a backward pass (queue_callback), run once when it ends; one list per
# pass in progress (a hook may start a nested backward).
_final_callbacks: list[list] = []
# The root nodes of each pass in progress, innermost last (running_pass).
_pass_roots: list = []


def running_pass():
    """``(token, roots)`` of the innermost backward pass in progress, or None outside backward:
    ``token`` is the same object for every call during one pass, ``roots`` its root nodes."""
    if not _final_callbacks:
        return None
    return _final_callbacks[-1], _pass_roots[-1]


def queue_callback(callback) -> None:
    """Run ``callback()`` when the backward pass in progress ends (after every gradient of that
    pass has been accumulated), as PyTorch's ``Variable._execution_engine.queue_callback``."""
    if not _final_callbacks:
        raise RuntimeError("queue_callback() can only be called during the backward pass")
    _final_callbacks[-1].append(callback)


def _check_output(node: Node, index: int, grad) -> None:
    """Anomaly mode's check that a backward returned no NaN."""
    if isinstance(grad, Tensor) and grad._dtype.is_floating_point and has_values(grad):
        if bool((grad != grad).any()):
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {index}th output.")


def run_backward(roots, grad_roots, retain_graph: bool, create_graph: bool, inputs=None, accumulate: bool = True, allow_unused: bool = False):
    """Backpropagate from ``roots`` (tensors) seeded with ``grad_roots``.

    With ``inputs`` and ``accumulate=False`` (autograd.grad) returns their gradients instead of
    adding into ``.grad``; with ``inputs`` and ``accumulate=True`` (backward(inputs=...)) only
    those leaves accumulate.
    """
    buffers: dict[Node, list] = {}
    root_nodes = []
    for tensor, grad in zip(roots, grad_roots):
        edge = gradient_edge(tensor)
        if edge is None:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")
        node, nr = edge
        if isinstance(node, AccumulateGrad):
            root_nodes.append(node)
            buffers.setdefault(node, [None])[0] = _add(buffers.get(node, [None])[0], grad)
            continue
        slots = buffers.setdefault(node, [None] * _output_count(node, nr))
        if len(slots) <= nr:
            slots.extend([None] * (nr + 1 - len(slots)))
        slots[nr] = _add(slots[nr], grad)
        root_nodes.append(node)

    captures = {}
    if inputs is not None:
        for i, t in enumerate(inputs):
            edge = gradient_edge(t)
            if edge is None:
                raise RuntimeError(f"One of the differentiated Tensors (input {i}) does not require grad")
            captures.setdefault(edge, []).append(i)
    captured = [None] * (len(inputs) if inputs is not None else 0)

    check_nan = anomaly_mode.enabled and anomaly_mode.check_nan
    # The common backward runs the same steps as _dependencies + _run_ready in C
    # (csrc/autograd_core.cpp), calling back into this module for leaves and hooks.
    compiled = inputs is None and not check_nan
    if not compiled:
        counts = _dependencies(root_nodes)
        needed = _nodes_leading_to(captures, set(counts) | set(root_nodes)) if inputs is not None and not accumulate else None
        ready = []
        queued = set()
        for node in dict.fromkeys(root_nodes):
            if counts.get(node, 0) == 0 and node not in queued:
                heapq.heappush(ready, (-node._sequence_nr, id(node), node))
                queued.add(node)
    _final_callbacks.append([])
    _pass_roots.append(root_nodes)
    try:
        if compiled:
            with (_GRAD_ON if create_graph else _GRAD_OFF):
                _autograd_core.run_graph(root_nodes, buffers, retain_graph, create_graph)
        else:
            _run_ready(ready, buffers, counts, queued, captures, captured, needed, accumulate, inputs, retain_graph,
                       create_graph, check_nan)
        callbacks = _final_callbacks[-1]
        while callbacks:  # a callback may queue another
            callbacks.pop(0)()
    finally:
        _final_callbacks.pop()
        _pass_roots.pop()
    return _finish(inputs, captured, accumulate, allow_unused)


def run_from_scalar(node: Node, seed: Tensor, retain_graph: bool) -> None:
    """``loss.backward()`` of a 0-d loss whose node is ``node`` (output 0), seeded with
    ``seed``: run_backward's common case without its general setup (issue 14)."""
    slots = [None] * max(node.num_outputs, 1)
    slots[0] = seed
    _final_callbacks.append([])
    _pass_roots.append((node,))
    try:
        # What `with _GRAD_OFF:` does, without its two frames.
        state = local_state
        previous = state.mask
        state.mask = previous & ~_BACKWARD_DENIED
        try:
            _autograd_core.run_graph([node], {node: slots}, retain_graph, False)
        finally:
            state.mask = previous
        callbacks = _final_callbacks[-1]
        while callbacks:  # a callback may queue another
            callbacks.pop(0)()
    finally:
        _final_callbacks.pop()
        _pass_roots.pop()


def _run_ready(ready, buffers, counts, queued, captures, captured, needed, accumulate, inputs, retain_graph,
               create_graph, check_nan) -> None:
    """The engine loop: runs every ready node, newest first, until none is left."""
    with (_GRAD_ON if create_graph else _GRAD_OFF):
        while ready:
            _, _, node = heapq.heappop(ready)
            if node.__class__ is AccumulateGrad:  # a root that is a leaf: backward() on a leaf
                _run_leaf(node, buffers, captures, captured, accumulate, inputs, create_graph)
                continue
            grads = buffers.pop(node, [None])
            if captures:
                _capture(node, grads, captures, captured)
            if needed is not None and node not in needed:
                results = (None,) * len(node.next_functions)
                if not retain_graph:
                    node.release()
            elif node._pre_hooks is None and node._hooks is None and node._forward_trace is None:
                try:  # _apply without hooks or anomaly traces: the common case, inlined
                    results = node.backward(tuple(grads))
                finally:
                    if not retain_graph:
                        node.release()
                if results.__class__ is not tuple:
                    results = (results,)
            else:
                results = _apply(node, tuple(grads), retain_graph)
            for index, (edge, grad) in enumerate(zip(node.next_functions, results)):
                nxt, nr = edge
                if nxt is None:
                    continue
                if grad is not None:
                    if check_nan:
                        _check_output(node, index, grad)
                    slots = buffers.get(nxt)
                    if slots is None:
                        slots = buffers[nxt] = [None] * _output_count(nxt, nr)
                    elif len(slots) <= nr:
                        slots.extend([None] * (nr + 1 - len(slots)))
                    current = slots[nr]
                    slots[nr] = grad if current is None else _add(current, grad)
                counts[nxt] -= 1
                if counts[nxt] == 0 and nxt not in queued:
                    queued.add(nxt)
                    if nxt.__class__ is AccumulateGrad:
                        # As in PyTorch, a leaf's gradient is accumulated as soon as it is complete
                        # (its post-accumulate hooks, DDP's bucket trigger, fire early), without
                        # a round trip through the queue.
                        _run_leaf(nxt, buffers, captures, captured, accumulate, inputs, create_graph)
                    else:
                        heapq.heappush(ready, (-nxt._sequence_nr, id(nxt), nxt))


def _capture(node: Node, grads: list, captures: dict, captured: list) -> None:
    """autograd.grad / backward(inputs=...): keep the gradients flowing into captured edges."""
    for nr, g in enumerate(grads):
        for i in captures.get((node, nr), ()):
            captured[i] = _add(captured[i], g)


def _run_leaf(node: AccumulateGrad, buffers, captures, captured, accumulate, inputs, create_graph) -> None:
    grads = buffers.pop(node, _NO_GRADIENT)
    if captures:
        _capture(node, grads, captures, captured)
    if accumulate and grads[0] is not None and (inputs is None or (node, 0) in captures):
        _accumulate_into_leaf(node.variable, grads[0], create_graph)


def _finish(inputs, captured, accumulate: bool, allow_unused: bool):
    if inputs is not None and accumulate:
        # backward(inputs=[...]) with non-leaf inputs: their gradient goes into their .grad.
        for t, g in zip(inputs, captured):
            if t.grad_fn is not None and g is not None:
                t.grad = g.detach().clone() if t.grad is None else t.grad + g.detach()
    if inputs is not None and not accumulate:
        for i, g in enumerate(captured):
            if g is None and not allow_unused:
                raise RuntimeError(
                    f"One of the differentiated Tensors (input {i}) appears to not have been used in the graph. "
                    f"Set allow_unused=True if this is the desired behavior."
                )
        return tuple(conform_gradient(g, t, "autograd.grad") if g is not None else None
                     for g, t in zip(captured, inputs))
    return None


def _nodes_leading_to(captures: dict, nodes: set) -> set:
    """The nodes from which some captured edge is reachable (autograd.grad runs only those).

    A node's inputs were recorded before it, so visiting nodes in creation order sees every
    input's answer before the node's own.
    """
    needed = set()
    for node in sorted(nodes, key=lambda n: n._sequence_nr):
        for edge in node.next_functions:
            if edge[0] is not None and (edge in captures or edge[0] in needed):
                needed.add(node)
                break
    return needed


def _output_count(node: Node, nr: int) -> int:
    count = node.num_outputs
    return count if count > nr else nr + 1


def _apply(node: Node, grads: tuple, retain_graph: bool) -> tuple:
    if node._pre_hooks:
        for hook in node._pre_hooks:
            replaced = hook(grads)
            if replaced is not None:
                grads = tuple(replaced)
    try:
        results = node.backward(grads)
    except Exception as exc:
        if node._forward_trace is not None:
            raise RuntimeError(
                f"Error in {node.name()} during backward: {exc}\n\nTraceback of the forward call that caused the error:\n"
                f"{node._forward_trace}"
            ) from exc
        raise
    finally:
        if not retain_graph:
            node.release()
    if not isinstance(results, tuple):
        results = (results,)
    if node._hooks:
        for hook in node._hooks:
            replaced = hook(results, grads)
            if replaced is not None:
                results = tuple(replaced)
    return results


_autograd_core.bind(Tensor, dtype, Node, FormulaNode, SavedTensor, AutogradMeta, AccumulateGrad, AUTOGRAD.mask,
                    graph._sequence, anomaly_mode, gradient_edge, NO_EDGE, TensorMeta, _accumulate_into_leaf, _apply, _add,
                    _add_into, _ADD.op.table, _ADD.op.lookup, frozenset(_ADD.fast_dtypes))
