"""``vmap``: map a function over a batch dimension of its arguments.

PyTorch batches every op inside the function (one call on the whole batch); here the function
runs once per batch element, on that element's slices, and the results are stacked. The values
are the same for functions without side effects, and every function works (no op needs a batching
rule), but the cost grows with the batch size (docs/deviations.md).
"""
from __future__ import annotations

import functools
from typing import Any, Callable

from ..frontend.tensor import Tensor
from ._pytree import broadcast_prefix, tree_flatten, tree_unflatten

__all__ = ["vmap"]


def _check_dims(dims, name: str) -> None:
    leaves, _ = tree_flatten(dims)
    for d in leaves:
        if d is not None and (not isinstance(d, int) or isinstance(d, bool)):
            raise ValueError(f"vmap: {name} must be an int, None or a (nested) tuple, list or dict of them, got {dims!r}")


def _in_dims_per_leaf(in_dims, args: tuple) -> list:
    if isinstance(in_dims, int) or in_dims is None:
        return [in_dims] * len(tree_flatten(args)[0])
    if not isinstance(in_dims, tuple):
        raise ValueError(f"vmap(f, in_dims={in_dims!r}, ...): expected `in_dims` to be int or a (potentially nested) "
                         f"tuple matching the structure of inputs, got: {type(in_dims)}.")
    if len(in_dims) != len(args):
        raise ValueError(f"vmap(f, in_dims={in_dims!r}, ...)(<inputs>): in_dims is not compatible with the structure of "
                         f"`inputs`. in_dims has structure {tree_flatten(in_dims)[1]!r} but inputs has structure "
                         f"{tree_flatten(args)[1]!r}.")
    return broadcast_prefix(in_dims, args, f"vmap(f, in_dims={in_dims!r}, ...)(<inputs>)")


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None) -> Callable[..., Any]:
    """A function that maps ``func`` over dimension ``in_dims`` of its arguments and stacks the
    results at ``out_dims``.

    ``in_dims`` is an int or None for every argument, or a tuple with one entry per positional
    argument, each an int, None (not mapped) or a nested tuple/list/dict matching that argument.
    ``out_dims`` is an int, or one per output in the output's structure. Keyword arguments are
    not mapped. ``randomness="same"`` gives every element the same random numbers; "different"
    and "error" give each its own (tensorplug does not detect random ops to raise for "error").
    ``chunk_size`` is accepted: elements run one at a time whatever it is.

    >>> import tensorplug as tp
    >>> tp.func.vmap(tp.dot)(tp.ones(3, 2), tp.ones(3, 2)).tolist()
    [2.0, 2.0, 2.0]
    """
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size < 1):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")
    _check_dims(in_dims, "in_dims")
    _check_dims(out_dims, "out_dims")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        import tensorplug as tp

        flat_args, args_spec = tree_flatten(args)
        dims = _in_dims_per_leaf(in_dims, args)
        sizes = []
        for i, (arg, d) in enumerate(zip(flat_args, dims)):
            if d is None:
                continue
            if not isinstance(arg, Tensor):
                raise ValueError(f"vmap(f, in_dims={in_dims!r}, ...)(<inputs>): Got in_dim={d} for an input but the input "
                                 f"is of type {type(arg)}. We cannot vmap over non-Tensor arguments, please use None as "
                                 "the respective in_dim")
            if arg.dim() == 0 or not -arg.dim() <= d < arg.dim():
                raise ValueError(f"vmap(f, in_dims={in_dims!r}, ...)(<inputs>): Got in_dim={d} for some input, but that "
                                 f"input is a Tensor of dimensionality {arg.dim()} so expected in_dim to satisfy "
                                 f"-{arg.dim()} <= in_dim < {arg.dim()}.")
            sizes.append(arg.shape[d])
            dims[i] = d % arg.dim()
        if not sizes:
            raise ValueError(f"vmap(f, in_dims={in_dims!r}, ...)(<inputs>): Got in_dims={in_dims!r} but none of the inputs "
                             "are Tensors to map over (every in_dim is None).")
        if len(set(sizes)) != 1:
            raise ValueError(f"vmap(f, in_dims={in_dims!r}, ...)(<inputs>): Expected all tensors to have the same size in "
                             f"the mapped dimension, got sizes {sizes} for the mapped dimension")
        batch = sizes[0]
        if batch == 0:
            raise RuntimeError("vmap: a mapped dimension of size 0 is not supported (the function runs once per element)")
        rng_state = tp.get_rng_state() if randomness == "same" else None
        results, out_spec = [], None
        for b in range(batch):
            if rng_state is not None:
                tp.set_rng_state(rng_state)
            sliced = [arg if d is None else arg.select(d, b) for arg, d in zip(flat_args, dims)]
            output = func(*tree_unflatten(sliced, args_spec), **kwargs)
            flat_out, spec = tree_flatten(output)
            for o in flat_out:
                if not isinstance(o, Tensor):
                    raise ValueError(f"vmap({getattr(func, '__name__', 'f')}, ...): `{getattr(func, '__name__', 'f')}` "
                                     f"must only return Tensors, got type {type(o)}. Did you mean to set out_dims= to None "
                                     "for output?")
            if out_spec is not None and spec != out_spec:
                raise ValueError("vmap: the function returned outputs of different structures for different batch elements")
            out_spec = spec
            results.append(flat_out)
        if out_dims is None or isinstance(out_dims, int):
            output_dims = [out_dims] * len(results[0])
        else:
            output_dims = broadcast_prefix(out_dims, tree_unflatten(results[0], out_spec), f"vmap(f, ..., out_dims={out_dims!r})")
        stacked = []
        for k, d in enumerate(output_dims):
            if d is None:
                stacked.append(results[0][k])
                continue
            ndim = results[0][k].dim() + 1
            if not -ndim <= d < ndim:
                raise ValueError(f"vmap: out_dim={d} is out of range for an output of {ndim - 1} dims (expected "
                                 f"-{ndim} <= out_dim < {ndim})")
            stacked.append(tp.stack([r[k] for r in results], d % ndim))
        return tree_unflatten(stacked, out_spec)

    return wrapper
