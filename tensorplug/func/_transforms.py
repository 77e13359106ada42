"""``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``, ``jacfwd`` and ``hessian``: PyTorch's
torch.func transforms, computed with tensorplug's reverse-mode engine.

Each call differentiates with respect to fresh leaves made from the arguments. When an argument
already requires grad (it is a model's parameter, or the input of an enclosing transform) the
leaf is a view of it instead and the backward is recorded (``create_graph``), so transforms nest
(``jacrev(jacrev(f))``, ``grad(grad(f))``) and their results can be differentiated by ordinary
autograd, as in PyTorch. Forward mode (``jvp``, ``jacfwd``) is computed with reverse mode: ``jvp``
by the double-backward trick, ``jacfwd`` row by row as ``jacrev`` (docs/deviations.md).
"""
from __future__ import annotations

import functools

from ..frontend.autograd.functional import grad as _autograd_grad
from ..frontend.autograd.grad_mode import enable_grad, is_grad_enabled, set_grad_enabled
from ..frontend.tensor import Tensor
from ._pytree import tree_flatten, tree_map, tree_unflatten

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian"]


def _wrap_argnum(argnum, num_args: int) -> int:
    if not isinstance(argnum, int) or isinstance(argnum, bool):
        raise RuntimeError(f"argnum must be int, got: {type(argnum)}")
    if 0 <= argnum < num_args:
        return argnum
    if -num_args <= argnum < 0:
        return argnum + num_args
    raise RuntimeError(f"Got argnum={argnum}, but only {num_args} positional inputs")


def _normalize_argnums(argnums, num_args: int):
    if isinstance(argnums, int) and not isinstance(argnums, bool):
        return _wrap_argnum(argnums, num_args)
    if isinstance(argnums, tuple):
        if len(argnums) == 0:
            raise RuntimeError("argnums must be non-empty")
        if len(set(argnums)) != len(argnums):
            raise RuntimeError(f"argnums elements must be unique, got {argnums}")
        return tuple(_wrap_argnum(a, num_args) for a in argnums)
    raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")


class _Differentiation:
    """The leaves a transform differentiates with respect to, made from the selected arguments."""

    def __init__(self, args: tuple, argnums, api: str):
        self.argnums = _normalize_argnums(argnums, len(args)) if argnums is not None else None
        selected = args if self.argnums is None else (
            args[self.argnums] if isinstance(self.argnums, int) else tuple(args[i] for i in self.argnums))
        originals, self.spec = tree_flatten(selected)
        if not originals:
            raise RuntimeError(f"{api}: Expected the differentiated arguments to contain at least one Tensor.")
        for leaf in originals:
            if not isinstance(leaf, Tensor):
                raise RuntimeError(f"{api}: Expected the differentiated arguments to only contain Tensors, got {type(leaf)}")
            if not (leaf.dtype.is_floating_point or leaf.dtype.is_complex):
                raise RuntimeError(f"{api}: only Tensors of floating point or complex dtype can be differentiated, "
                                   f"got {leaf.dtype}")
        # Record the backward when something outside may differentiate the result (see the module).
        self.create_graph = is_grad_enabled() and any(leaf.requires_grad for leaf in originals)
        self.leaves = [leaf.view_as(leaf) if self.create_graph and leaf.requires_grad else leaf.detach().requires_grad_(True)
                       for leaf in originals]
        new_selected = tree_unflatten(self.leaves, self.spec)
        if self.argnums is None:
            self.args = new_selected
        elif isinstance(self.argnums, int):
            self.args = args[:self.argnums] + (new_selected,) + args[self.argnums + 1:]
        else:
            replaced = list(args)
            for i, value in zip(self.argnums, new_selected):
                replaced[i] = value
            self.args = tuple(replaced)

    def gradients(self, outputs, grad_outputs, retain_graph=None, create_graph=None) -> list:
        """d(outputs . grad_outputs)/d(leaf) for each leaf, zeros where nothing depends on it."""
        import tensorplug as tp

        create = self.create_graph if create_graph is None else create_graph
        pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o.requires_grad]
        found = [None] * len(self.leaves)
        if pairs:
            with set_grad_enabled(create or is_grad_enabled()):
                found = _autograd_grad([p[0] for p in pairs], self.leaves, [p[1] for p in pairs], allow_unused=True,
                                       retain_graph=retain_graph, create_graph=create)
        return [tp.zeros_like(leaf) if g is None else g for g, leaf in zip(found, self.leaves)]

    def unflatten(self, leaves):
        return tree_unflatten(leaves, self.spec)

    def finish(self, tree):
        """Detach the tensors of ``tree`` unless the backward was recorded for an outer differentiation."""
        if self.create_graph:
            return tree
        return tree_map(lambda t: t.detach() if isinstance(t, Tensor) else t, tree)


def _split_aux(output, has_aux: bool, api: str):
    if not has_aux:
        return output, None
    if not (isinstance(output, tuple) and len(output) == 2):
        raise RuntimeError(f"{api}: output of function f should be a tuple: (output, aux) if has_aux is True")
    return output


def grad_and_value(func, argnums=0, has_aux=False):
    """A function returning ``(gradient, value)`` of ``func``, which returns a 0-d tensor: the
    gradient has the structure of ``args[argnums]`` (a tuple of them for a tuple of argnums);
    with ``has_aux``, ``func`` returns ``(value, aux)`` and the result is ``(gradient, (value, aux))``."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        api = "grad_and_value(f)(*args)"
        with enable_grad():
            diff = _Differentiation(args, argnums, api)
            output, aux = _split_aux(func(*diff.args, **kwargs), has_aux, api)
            if not isinstance(output, Tensor):
                raise RuntimeError(f"{api}: Expected f(*args) to return a Tensor, got {type(output)}")
            if output.dim() != 0:
                raise RuntimeError(f"{api}: Expected f(*args) to return a scalar Tensor, got tensor with {output.dim()} dims."
                                   " Maybe you wanted to use the vjp or jacrev APIs instead?")
            grads = diff.unflatten(diff.gradients([output], [None]))
        value = diff.finish(output)
        if has_aux:
            return diff.finish(grads), (value, diff.finish(aux))
        return diff.finish(grads), value

    return wrapper


def grad(func, argnums=0, has_aux=False):
    """A function computing the gradient of ``func`` (which returns a 0-d tensor) with respect to
    ``args[argnums]``; with ``has_aux``, ``(gradient, aux)``.

    >>> import tensorplug as tp
    >>> tp.func.grad(lambda x: (x ** 3).sum())(tp.tensor([1.0, 2.0])).tolist()
    [3.0, 12.0]
    """
    both = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        gradients, value = both(*args, **kwargs)
        return (gradients, value[1]) if has_aux else gradients

    return wrapper


def vjp(func, *primals, has_aux=False):
    """``(func(*primals), vjp_fn)`` (and ``aux`` with ``has_aux``): ``vjp_fn(cotangents)`` returns a
    tuple with one gradient per primal; the cotangents have the structure of the output. It may be
    called many times."""
    api = "vjp(f, *primals)"
    with enable_grad():
        diff = _Differentiation(primals, None, api)
        output, aux = _split_aux(func(*diff.args), has_aux, api)
        flat_out, out_spec = tree_flatten(output)
        if len(flat_out) == 0 or (len(flat_out) == 1 and flat_out[0] is None):
            raise RuntimeError(f"{api}: Expected f to be a function that has non-empty output (got output = {flat_out})")
        for o in flat_out:
            if not isinstance(o, Tensor):
                raise RuntimeError(f"{api}: expected f(*primals) to return only tensors, got unsupported type {type(o)}")
            if not (o.dtype.is_floating_point or o.dtype.is_complex):
                raise RuntimeError(f"vjp(f, ...): All outputs of f must be floating-point or complex Tensors, got Tensor "
                                   f"with dtype {o.dtype}")

    def vjp_fn(cotangents, retain_graph=True, create_graph=None):
        flat_ct, ct_spec = tree_flatten(cotangents)
        if ct_spec != out_spec:
            raise RuntimeError("Expected pytree structure of cotangents to be the same as pytree structure of outputs to "
                               f"the function. cotangents: {ct_spec!r}, primal output: {out_spec!r}")
        for i, (ct, o) in enumerate(zip(flat_ct, flat_out)):
            if not isinstance(ct, Tensor) or tuple(ct.shape) != tuple(o.shape):
                shape = tuple(ct.shape) if isinstance(ct, Tensor) else type(ct).__name__
                raise RuntimeError(f"vjp_fn: cotangent {i} has shape {shape}, the output has {tuple(o.shape)}")
        create = create_graph
        if create is None:
            create = diff.create_graph or (is_grad_enabled() and any(ct.requires_grad for ct in flat_ct))
        grads = diff.gradients(flat_out, flat_ct, retain_graph=retain_graph, create_graph=create)
        result = diff.unflatten(grads)
        return result if create else tree_map(lambda t: t.detach(), result)

    if has_aux:
        return diff.finish(output), vjp_fn, diff.finish(aux)
    return diff.finish(output), vjp_fn


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """``(func(*primals), J @ tangents)`` (and ``aux`` with ``has_aux``); ``primals`` and ``tangents``
    are tuples of the same structure. Computed by the double-backward trick (the vjp of a vjp with
    respect to its cotangent), which gives forward mode's values with reverse mode."""
    import tensorplug as tp

    api = "jvp(f, primals, tangents)"
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{api}: Expected primals to be a tuple. E.g. it should be valid to call f(*primals).")
    flat_tangents, tangents_spec = tree_flatten(tangents)
    if tree_flatten(primals)[1] != tangents_spec:
        raise RuntimeError(f"{api}: Expected primals and tangents to have the same python structure. For example, if "
                           "primals is a tuple of 3 tensors, tangents also must be. Got primals with structure "
                           f"{tree_flatten(primals)[1]!r} and tangents with structure {tangents_spec!r}")
    with enable_grad():
        diff = _Differentiation(primals, None, api)
        for leaf, tangent in zip(diff.leaves, flat_tangents):
            if not isinstance(tangent, Tensor) or tuple(tangent.shape) != tuple(leaf.shape):
                raise RuntimeError(f"{api}: Expected primals and tangents to have the same shapes, got "
                                   f"{tuple(leaf.shape)} and {getattr(tangent, 'shape', type(tangent))}")
        output, aux = _split_aux(func(*diff.args), has_aux, api)
        flat_out, out_spec = tree_flatten(output)
        for o in flat_out:
            if not isinstance(o, Tensor):
                raise RuntimeError(f"{api}: expected f(*args) to return only tensors, got unsupported type {type(o)}")
        if strict and not any(o.requires_grad for o in flat_out):
            raise RuntimeError("jvp(f, primals, tangents, strict=True): The output of f is independent of the inputs. "
                               "This is not allowed with strict=True.")
        # u -> J^T u is linear in u; its vjp with the tangents is J @ tangents.
        dummies = [tp.zeros_like(o).requires_grad_(True) for o in flat_out]
        vjp_values = diff.gradients(flat_out, dummies, retain_graph=True, create_graph=True)
        create = diff.create_graph or (is_grad_enabled() and any(t.requires_grad for t in flat_tangents))
        pairs = [(v, t) for v, t in zip(vjp_values, flat_tangents) if v.requires_grad]
        found = [None] * len(dummies)
        if pairs:
            found = _autograd_grad([p[0] for p in pairs], dummies, [p[1] for p in pairs], allow_unused=True,
                                   create_graph=create)
        tangents_out = [tp.zeros_like(o) if g is None else g for g, o in zip(found, flat_out)]
    tangents_out = tree_unflatten(tangents_out if create else [t.detach() for t in tangents_out], out_spec)
    if has_aux:
        return diff.finish(output), tangents_out, diff.finish(aux)
    return diff.finish(output), tangents_out


def _jacobian(func, argnums, has_aux: bool, api: str):
    import tensorplug as tp

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with enable_grad():
            diff = _Differentiation(args, argnums, api)
            output, aux = _split_aux(func(*diff.args, **kwargs), has_aux, api)
            flat_out, out_spec = tree_flatten(output)
            for o in flat_out:
                if not isinstance(o, Tensor):
                    raise RuntimeError(f"{api}: Expected f to return only Tensors, got {type(o)}")
            per_output = []
            for o in flat_out:
                rows = [[] for _ in diff.leaves]
                flat = o.reshape(-1)
                for k in range(o.numel()):
                    for collected, g in zip(rows, diff.gradients([flat[k]], [None], retain_graph=True)):
                        collected.append(g)
                blocks = []
                for collected, leaf in zip(rows, diff.leaves):
                    shape = tuple(o.shape) + tuple(leaf.shape)
                    if collected:
                        blocks.append(tp.stack(collected, 0).reshape(shape))
                    else:
                        blocks.append(tp.zeros(shape, dtype=leaf.dtype, device=leaf.device))
                per_output.append(diff.unflatten(blocks))
            jac = diff.finish(tree_unflatten(per_output, out_spec))
        if has_aux:
            return jac, diff.finish(aux)
        return jac

    return wrapper


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """A function computing the Jacobian of ``func`` with respect to ``args[argnums]``: for each
    output tensor (in the output's structure) and each differentiated tensor (in the argument's
    structure), a tensor of shape ``output.shape + input.shape``. ``chunk_size`` is accepted; rows
    are computed one by one whatever its value."""
    if chunk_size is not None and chunk_size <= 0:
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")
    return _jacobian(func, argnums, has_aux, "jacrev(f, argnums)")


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """As ``jacrev`` (the same values and structure); computed with reverse mode, not forward mode."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")
    return _jacobian(func, argnums, has_aux, "jacfwd(f, argnums)")


def hessian(func, argnums=0):
    """``jacfwd(jacrev(func, argnums), argnums)``: second derivatives, of shape
    ``output.shape + input.shape + input.shape``."""
    return jacfwd(jacrev(func, argnums), argnums)
