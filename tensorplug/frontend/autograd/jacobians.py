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


def _as_tuple(value, arg_name: str, fn_name: str):
    """(was it a tuple, the tensors as a tuple), checking that each is a Tensor."""
    is_tuple = isinstance(value, tuple)
    values = value if is_tuple else (value,)
    for i, el in enumerate(values):
        if not isinstance(el, Tensor):
            where = f"value at index {i}" if is_tuple else f"given {arg_name}"
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors but the"
                            f" {where} has type {type(el)}.")
    return is_tuple, values


def _tuple_postprocess(res, to_unpack):
    """Undo the tuple wrapping of single-tensor arguments: ``to_unpack`` is a flag or a pair of them."""
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _grad_preprocess(inputs, create_graph: bool, need_graph: bool) -> tuple:
    # With create_graph an input that requires grad stays connected to its history (a view of
    # it), so the result can be differentiated by the caller; otherwise a fresh leaf.
    return tuple(inp.view_as(inp) if create_graph and inp.requires_grad else inp.detach().requires_grad_(need_graph)
                 for inp in inputs)


def _grad_postprocess(inputs, create_graph: bool):
    if isinstance(inputs[0], Tensor):
        return inputs if create_graph else tuple(inp.detach() for inp in inputs)
    return tuple(_grad_postprocess(inp, create_graph) for inp in inputs)


def _validate_v(v, other, is_other_tuple: bool) -> None:
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if tuple(el_v.shape) != tuple(el_other.shape):
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise RuntimeError(f"{prepend}v has invalid size: should be {tuple(el_other.shape)} but got {tuple(el_v.shape)}.")


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


def _check_requires_grad(tensors, kind: str, strict: bool) -> None:
    if not strict:
        return
    for i, t in enumerate(tensors):
        if t is None:
            raise RuntimeError(f"The output of the user-provided function is independent of input {i}. This is not allowed"
                               " in strict mode.")
        if not t.requires_grad:
            raise RuntimeError(_STRICT_MESSAGES[kind].format(i=i))


def _autograd_grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None) -> tuple:
    """``autograd.grad`` over the outputs that require grad; None for inputs nothing reaches."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    pairs = [(out, g) for out, g in zip(outputs, grad_outputs) if out is not None and out.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    return _grad([p[0] for p in pairs], list(inputs), [p[1] for p in pairs], allow_unused=True,
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


def _fill_in_zeros(grads, refs, strict: bool, create_graph: bool, stage: str) -> tuple:
    """Zeros where no gradient arrived (an error in strict mode)."""
    import tensorplug as tp

    res = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_FILL_MESSAGES[stage].format(i=i))
            g = tp.zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of input {i}. This is not allowed"
                               " in strict mode when create_graph=True.")
        res.append(g)
    return tuple(res)


def _prepare_v(v, reference, is_reference_tuple, create_graph, fn_name, none_message):
    if v is not None:
        _, v = _as_tuple(v, "v", fn_name)
        v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
        _validate_v(v, reference, is_reference_tuple)
        return v
    if len(reference) != 1 or reference[0].numel() != 1:
        raise RuntimeError(none_message)
    return None


_V_NONE_FOR_INPUT = ("The vector v can only be None if the input to the user-provided function is a single Tensor with a"
                     " single element.")


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T J)``: the vector-Jacobian product at ``inputs``, shaped as the inputs.

    >>> import tensorplug as tp
    >>> out, g = tp.autograd.functional.vjp(lambda x: (x * x).sum(), tp.tensor([1.0, 2.0]))
    >>> g.tolist()
    [2.0, 4.0]
    """
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        is_outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", "vjp")
        _check_requires_grad(outputs, "outputs", strict=strict)
        v = _prepare_v(v, outputs, is_outputs_tuple, create_graph, "vjp",
                       "The vector v can only be None if the user-provided function returns a single Tensor with a single"
                       " element.")
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(outputs, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "back")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(result, is_inputs_tuple)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), J v)``: the Jacobian-vector product, shaped as the outputs, by the double-backward
    trick (the vjp of the vjp with respect to its cotangent), as PyTorch computes it."""
    import tensorplug as tp

    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        v = _prepare_v(v, inputs, is_inputs_tuple, create_graph, "jvp", _V_NONE_FOR_INPUT)
        is_outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", "jvp")
        _check_requires_grad(outputs, "outputs", strict=strict)
        grad_outputs = tuple(tp.zeros_like(out).requires_grad_(True) for out in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, grad_outputs, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict=strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(grad_inputs, grad_outputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, outputs, strict, create_graph, "back_trick")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(result, is_outputs_tuple)


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
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        is_outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", "jacobian")
        _check_requires_grad(outputs, "outputs", strict=strict)
        if vectorize and strict:
            raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are not supported"
                               " together. Please either set `strict=False` or `vectorize=False`.")
        # One backward per output element (vectorize=True computes the same rows the same way).
        jacobian_rows = []
        for i, out in enumerate(outputs):
            per_input = tuple([] for _ in inputs)
            flat = out.reshape(-1)
            for k in range(out.numel()):
                row = _autograd_grad((flat[k],), inputs, retain_graph=True, create_graph=create_graph)
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
        result = _grad_postprocess(tuple(jacobian_rows), create_graph)
        return _tuple_postprocess(result, (is_outputs_tuple, is_inputs_tuple))


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a function returning one element: for inputs i and j a tensor of shape
    ``inputs[i].shape + inputs[j].shape`` (a tensor for a single input, a tuple of tuples otherwise)."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise ValueError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def ensure_single_output_function(*inp):
        out = func(*inp)
        is_out_tuple, t_out = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(t_out, "outputs", strict=strict)
        if is_out_tuple or not isinstance(out, Tensor):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should contain a single element")
        return out.squeeze()

    def jac_func(*inp):
        if outer_jacobian_strategy == "forward-mode":
            inp = tuple(t.requires_grad_(True) for t in inp)
        jac = jacobian(ensure_single_output_function, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        return jac

    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict, vectorize=vectorize,
                   strategy=outer_jacobian_strategy)
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))


def _single_output(outputs, is_outputs_tuple, fn_name):
    if is_outputs_tuple or not isinstance(outputs[0], Tensor):
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if outputs[0].numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should contain a single element")


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T H)``: the vector-Hessian product of a function returning one element."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vhp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        v = _prepare_v(v, inputs, is_inputs_tuple, create_graph, "vhp", _V_NONE_FOR_INPUT)
        is_outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", "vhp")
        _check_requires_grad(outputs, "outputs", strict=strict)
        _single_output(outputs, is_outputs_tuple, "vhp")
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(jac, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(result, is_inputs_tuple)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), H v)``: the Hessian-vector product of a function returning one element, by the
    double-backward trick as PyTorch computes it (equal to ``vhp`` for twice-differentiable functions)."""
    import tensorplug as tp

    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hvp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        v = _prepare_v(v, inputs, is_inputs_tuple, create_graph, "hvp", _V_NONE_FOR_INPUT)
        is_outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", "hvp")
        _check_requires_grad(outputs, "outputs", strict=strict)
        _single_output(outputs, is_outputs_tuple, "hvp")
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        grad_jac = tuple(tp.zeros_like(inp).requires_grad_(True) for inp in inputs)
        double_back = _autograd_grad(jac, inputs, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict=strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(double_back, grad_jac, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back_trick")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(result, is_inputs_tuple)
