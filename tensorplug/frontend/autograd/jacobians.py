"""``tp.autograd.functional``'s higher-level API: ``jacobian``, ``hessian``, ``vjp``, ``jvp``,
``hvp`` and ``vhp``, after PyTorch's ``torch.autograd.functional`` (its argument and result
structures, its ``strict`` checks and their messages).

Everything is reverse mode over ``autograd.grad``: ``jvp`` and ``hvp`` use the double-backward
trick, as PyTorch's do; ``vectorize=True`` is accepted and computes row by row as
``vectorize=False`` does (PyTorch batches the rows with vmap; the values are the same), and
``strategy="forward-mode"`` (which PyTorch allows only with ``vectorize=True``) is computed with
reverse mode too (docs/deviations.md).
"""
from __future__ import annotations

from ..tensor import Tensor
from .functional import grad as _grad
from .grad_mode import enable_grad, is_grad_enabled, set_grad_enabled

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


def _tensors(value, arg_name: str, fn_name: str) -> tuple[bool, tuple]:
    """(whether ``value`` was a single tensor, its tensors as a tuple), each checked to be a Tensor."""
    single = not isinstance(value, tuple)
    values = (value,) if single else value
    for i, el in enumerate(values):
        if not isinstance(el, Tensor):
            where = f"given {arg_name}" if single else f"value at index {i}"
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors but the"
                            f" {where} has type {type(el)}.")
    return single, values


def _unwrap(values: tuple, single: bool):
    return values[0] if single else values


def _leaves(tensors, create_graph: bool, requires_grad: bool = True) -> tuple:
    """The tensors to differentiate with respect to: with create_graph one that requires grad stays
    connected to its history (a view of it), so the caller can differentiate the result; otherwise
    a fresh leaf."""
    return tuple(t.view_as(t) if create_graph and t.requires_grad else t.detach().requires_grad_(requires_grad)
                 for t in tensors)


def _detached(values, create_graph: bool):
    """Results as returned: still in the graph with create_graph, detached otherwise (nested tuples too)."""
    if isinstance(values, Tensor):
        return values if create_graph else values.detach()
    return tuple(_detached(v, create_graph) for v in values)


_STRICT_MESSAGES = {
    "hessian": ("The hessian of the user-provided function with respect to input {i} is independent of the input. This is"
                " not allowed in strict mode. You should ensure that your function is thrice differentiable and that the"
                " hessian depends on the inputs."),
    "jacobian": ("While computing the hessian, found that the jacobian of the user-provided function with respect to input"
                 " {i} is independent of the input. This is not allowed in strict mode. You should ensure that your function"
                 " is twice differentiable and that the jacobian depends on the inputs (this would be violated by a linear"
                 " function for example)."),
    "grad_inputs": ("The gradient with respect to input {i} is independent of the inputs of the user-provided function. This"
                    " is not allowed in strict mode."),
    "outputs": ("Output {i} of the user-provided function does not require gradients. The outputs must be computed in a"
                " differentiable manner from the input when running in strict mode."),
}


def _require_grad(tensors, kind: str, strict: bool) -> None:
    """In strict mode, every tensor of ``tensors`` must exist and depend on the inputs."""
    if not strict:
        return
    for i, t in enumerate(tensors):
        if t is None:
            raise RuntimeError(f"The output of the user-provided function is independent of input {i}. This is not allowed"
                               " in strict mode.")
        if not t.requires_grad:
            raise RuntimeError(_STRICT_MESSAGES[kind].format(i=i))


def _grads(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None) -> tuple:
    """``autograd.grad`` of the outputs that require grad; None for each input nothing reaches."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    live = [(out, g) for out, g in zip(outputs, grad_outputs) if out is not None and out.requires_grad]
    if not live:
        return (None,) * len(inputs)
    return _grad([out for out, _ in live], list(inputs), [g for _, g in live], allow_unused=True,
                 create_graph=create_graph, retain_graph=retain_graph)


_FILL_MESSAGES = {
    "back": "The output of the user-provided function is independent of input {i}. This is not allowed in strict mode.",
    "back_trick": ("The gradient with respect to the input is independent of entry {i} in the grad_outputs when using the"
                   " double backward trick to compute forward mode gradients. This is not allowed in strict mode."),
    "double_back": "The jacobian of the user-provided function is independent of input {i}. This is not allowed in strict mode.",
    "double_back_trick": ("The hessian of the user-provided function is independent of entry {i} in the grad_jacobian. This"
                          " is not allowed in strict mode as it prevents from using the double backward trick to replace"
                          " forward mode AD."),
}


def _zeros_where_missing(grads, like, strict: bool, create_graph: bool, stage: str) -> tuple:
    """Zeros shaped as ``like`` where no gradient arrived (an error in strict mode)."""
    import tensorplug as tp

    filled = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_FILL_MESSAGES[stage].format(i=i))
            g = tp.zeros_like(like[i])
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of input {i}. This is not allowed"
                               " in strict mode when create_graph=True.")
        filled.append(g)
    return tuple(filled)


def _cotangent(v, like: tuple, like_single: bool, create_graph: bool, fn_name: str, none_message: str):
    """The vector ``v`` of a product, checked against the tensors it multiplies; None is allowed for
    one single-element tensor (the vector is then 1)."""
    if v is None:
        if len(like) != 1 or like[0].numel() != 1:
            raise RuntimeError(none_message)
        return None
    _, v = _tensors(v, "v", fn_name)
    v = _leaves(v, create_graph, requires_grad=False)
    if len(v) != len(like):
        if like_single:
            raise RuntimeError("The given v should contain a single Tensor.")
        raise RuntimeError(f"v is a tuple of invalid length: should be {len(like)} but got {len(v)}.")
    for idx, (el_v, el_like) in enumerate(zip(v, like)):
        if tuple(el_v.shape) != tuple(el_like.shape):
            where = "" if like_single else f"Entry {idx} in "
            raise RuntimeError(f"{where}v has invalid size: should be {tuple(el_like.shape)} but got {tuple(el_v.shape)}.")
    return v


_V_NONE_FOR_INPUT = ("The vector v can only be None if the input to the user-provided function is a single Tensor with a"
                     " single element.")
_V_NONE_FOR_OUTPUT = ("The vector v can only be None if the user-provided function returns a single Tensor with a single"
                      " element.")


def _single_output(outputs, outputs_single: bool, fn_name: str) -> None:
    if not outputs_single or not isinstance(outputs[0], Tensor):
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if outputs[0].numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should contain a single element")


def _product(kind: str, func, inputs, v, create_graph: bool, strict: bool):
    """The four products, one reverse-mode computation each, ``(outputs, product)``:

    - ``vjp``: v^T J, one backward pass of the outputs with v;
    - ``jvp``: J v, as the vjp (with respect to zero seeds shaped as the outputs) of the vjp: that
      is linear in the seeds, and its gradient with respect to them, with v, is J v;
    - ``vhp``: v^T H, the backward pass with v of the gradient (computed with a graph);
    - ``hvp``: H v, the same seed trick one level up.
    """
    import tensorplug as tp

    with enable_grad():
        inputs_single, inputs = _tensors(inputs, "inputs", kind)
        inputs = _leaves(inputs, create_graph)
        if kind != "vjp":
            v = _cotangent(v, inputs, inputs_single, create_graph, kind, _V_NONE_FOR_INPUT)
        outputs_single, outputs = _tensors(func(*inputs), "outputs of the user-provided function", kind)
        _require_grad(outputs, "outputs", strict)
        if kind == "vjp":
            v = _cotangent(v, outputs, outputs_single, create_graph, kind, _V_NONE_FOR_OUTPUT)
            last, wrt, like, result_single, stage = outputs, inputs, inputs, inputs_single, "back"
        elif kind == "jvp":
            seeds = tuple(tp.zeros_like(out).requires_grad_(True) for out in outputs)
            grad_inputs = _grads(outputs, inputs, seeds, create_graph=True)
            _require_grad(grad_inputs, "grad_inputs", strict)
            last, wrt, like, result_single, stage = grad_inputs, seeds, outputs, outputs_single, "back_trick"
        else:
            _single_output(outputs, outputs_single, kind)
            jac = _grads(outputs, inputs, create_graph=True)
            _require_grad(jac, "jacobian", strict)
            if kind == "vhp":
                last, wrt, stage = jac, inputs, "double_back"
            else:
                seeds = tuple(tp.zeros_like(inp).requires_grad_(True) for inp in inputs)
                last, wrt, stage = _grads(jac, inputs, seeds, create_graph=True), seeds, "double_back_trick"
                _require_grad(jac, "hessian", strict)
            like, result_single = inputs, inputs_single
    with set_grad_enabled(create_graph or is_grad_enabled()):
        product = _zeros_where_missing(_grads(last, wrt, v, create_graph=create_graph), like, strict, create_graph,
                                       stage)
    return (_unwrap(_detached(outputs, create_graph), outputs_single),
            _unwrap(_detached(product, create_graph), result_single))


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T J)``: the vector-Jacobian product at ``inputs``, shaped as the inputs.

    >>> import tensorplug as tp
    >>> out, g = tp.autograd.functional.vjp(lambda x: (x * x).sum(), tp.tensor([1.0, 2.0]))
    >>> g.tolist()
    [2.0, 4.0]
    """
    return _product("vjp", func, inputs, v, create_graph, strict)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), J v)``: the Jacobian-vector product, shaped as the outputs, by the
    double-backward trick (see _product), as PyTorch computes it."""
    return _product("jvp", func, inputs, v, create_graph, strict)


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T H)``: the vector-Hessian product of a function returning one element."""
    return _product("vhp", func, inputs, v, create_graph, strict)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), H v)``: the Hessian-vector product of a function returning one element, by the
    double-backward trick as PyTorch computes it (equal to ``vhp`` for twice-differentiable functions)."""
    return _product("hvp", func, inputs, v, create_graph, strict)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``: for output i and input j a tensor of shape
    ``outputs[i].shape + inputs[j].shape``; a tensor when both are single tensors, a tuple when one
    is a tuple, a tuple of tuples when both are.

    >>> import tensorplug as tp
    >>> tp.autograd.functional.jacobian(lambda x: x * x, tp.tensor([1.0, 2.0])).tolist()
    [[2.0, 0.0], [0.0, 4.0]]
    """
    if strategy not in ("forward-mode", "reverse-mode"):
        raise ValueError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your function has more'
                         ' outputs than inputs, "forward-mode" tends to be more performant. Otherwise, prefer to use'
                         ' "reverse-mode".')
    if strategy == "forward-mode":
        # PyTorch's argument rules for forward mode; the Jacobian itself comes from reverse mode.
        if create_graph:
            raise NotImplementedError('torch.autograd.functional.jacobian: `create_graph=True` and `strategy="forward-mode"`'
                                      ' are not supported together (yet). Please either set `create_graph=False` or'
                                      ' `strategy="reverse-mode"`.')
        if strict:
            raise RuntimeError('torch.autograd.functional.jacobian: `strict=True` and `strategy="forward-mode"` are not'
                               ' supported together (yet). Please either set `strict=False` or `strategy="reverse-mode"`.')
        if not vectorize:
            raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse Hessian is only"
                                      " implemented for `vectorize=True`.")
    import tensorplug as tp

    with enable_grad():
        inputs_single, inputs = _tensors(inputs, "inputs", "jacobian")
        inputs = _leaves(inputs, create_graph)
        outputs_single, outputs = _tensors(func(*inputs), "outputs of the user-provided function", "jacobian")
        _require_grad(outputs, "outputs", strict)
        if vectorize and strict:
            raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are not supported"
                               " together. Please either set `strict=False` or `vectorize=False`.")
        # One backward per output element (vectorize=True computes the same rows the same way).
        jacobian_rows = []
        for i, out in enumerate(outputs):
            per_input = tuple([] for _ in inputs)
            flat = out.reshape(-1)
            for k in range(out.numel()):
                row = _grads((flat[k],), inputs, retain_graph=True, create_graph=create_graph)
                for j, (collected, g, inp) in enumerate(zip(per_input, row, inputs)):
                    if g is not None:
                        if strict and create_graph and not g.requires_grad:
                            raise RuntimeError(f"The jacobian of the user-provided function is independent of input {i}."
                                               " This is not allowed in strict mode when create_graph=True.")
                        collected.append(g)
                    else:
                        if strict:
                            raise RuntimeError(f"Output {i} of the user-provided function is independent of input {j}."
                                               " This is not allowed in strict mode.")
                        collected.append(tp.zeros_like(inp))
            jacobian_rows.append(tuple(
                (tp.stack(collected, 0) if collected else tp.zeros((0,) + tuple(inp.shape), dtype=inp.dtype, device=inp.device))
                .reshape(tuple(out.shape) + tuple(inp.shape))
                for collected, inp in zip(per_input, inputs)))
        result = _detached(tuple(jacobian_rows), create_graph)
        if inputs_single:
            result = tuple(row[0] for row in result)
        return _unwrap(result, outputs_single)


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a function returning one element: for inputs i and j a tensor of shape
    ``inputs[i].shape + inputs[j].shape`` (a tensor for a single input, a tuple of tuples otherwise)."""
    inputs_single, inputs = _tensors(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise ValueError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def scalar(*args):  # func's one element, as a 0-d tensor
        single, out = _tensors(func(*args), "outputs of the user-provided function", "hessian")
        _require_grad(out, "outputs", strict)
        _single_output(out, single, "hessian")
        return out[0].squeeze()

    def gradient(*args):  # the Hessian is the Jacobian of this gradient
        if outer_jacobian_strategy == "forward-mode":
            args = tuple(t.requires_grad_(True) for t in args)
        grads = jacobian(scalar, args, create_graph=True)
        _require_grad(grads, "jacobian", strict)
        return grads

    result = jacobian(gradient, inputs, create_graph=create_graph, strict=strict, vectorize=vectorize,
                      strategy=outer_jacobian_strategy)
    # jacobian saw a tuple on both sides; a single input gives back a single tensor.
    return result[0][0] if inputs_single else result


