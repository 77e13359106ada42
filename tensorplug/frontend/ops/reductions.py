"""Reductions and scans: the ``reduce`` and ``scan`` primitives and the functions built on them.

Kernels receive an output with the input's ndim and size 1 on each reduced dim; the frontend
drops those dims afterwards unless ``keepdim``.
"""
from __future__ import annotations

from collections import namedtuple

from ... import _hotpath
from ...dispatcher import Operator, local_state
from .. import dtypes as _dt
from ..autograd.graph import set_history
from ..shapes import contiguous_strides, normalize_dim, normalize_dims, numel_of
from ..tensor import Tensor, empty_tensor, make_tensor
from ..views import expand, reshape, squeeze
from ._common import check_cast, keyset, write_out
from ._composite import composite
from ._numpy_names import dim_keywords, required_dim
from .copying import clone, to_dtype
from ..autocast_hook import autocast_function
from .out_rehearsal import rehearse_out

__all__ = [
    "sum", "prod", "amax", "amin", "all", "any", "argmax", "argmin", "mean", "max", "min", "cumsum", "cumprod", "nansum",
    "nanmean",
]

_builtin_sum, _builtin_max, _builtin_min = sum, max, min

REDUCE = {name: Operator(name, differentiable=name in ("sum", "prod", "amax", "amin")) for name in
          ("sum", "prod", "amax", "amin", "all", "any", "argmax", "argmin")}
SCAN = {name: Operator(name) for name in ("cumsum", "cumprod")}

_all_dims = tuple(tuple(range(n)) for n in range(9))

# max(dim)'s and min(dim)'s results, named as PyTorch's return types (torch.return_types.max).
_NAMED_RESULT = {op: namedtuple(op, ["values", "indices"]) for op in ("max", "min")}


def _check_tensor(op: str, input) -> None:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")


def _reduce(op: str, input: Tensor, dim, keepdim: bool, out_dtype: _dt.dtype, *, needs_elements: bool = False) -> Tensor:
    _check_tensor(op, input)
    shape = input._shape
    # As in PyTorch, an empty dim list reduces over every dim.
    ndim = len(shape)
    if dim is None or dim == ():
        dims = _all_dims[ndim] if ndim < len(_all_dims) else tuple(range(ndim))
    elif dim.__class__ is int and -ndim <= dim < ndim:
        dims = (dim % ndim,)  # one valid dim (a bias gradient's sum(0)): nothing to sort or check
    else:
        dims = normalize_dims(op, dim, ndim) or tuple(range(ndim))
    if needs_elements:
        empty = [d for d in dims if shape[d] == 0] if dims else ([0] if numel_of(shape) == 0 else [])
        if empty:
            raise IndexError(f"{op}(): Expected reduction dim {empty[0]} to have non-zero size (input shape {list(shape)}).")
    if not shape:  # a 0-d tensor: reduce its one element, so the kernel still converts the dtype
        x = reshape(input, (1,))
        out = empty_tensor((1,), out_dtype, input._device)
        REDUCE[op].lookup(keyset(x))(out, x, (0,))
        return reshape(out, ())
    every_dim = len(dims) == ndim
    if every_dim:
        kept = (1,) * ndim
    elif len(dims) == 1:  # a bias gradient's sum(0): no generator to resume per dim
        kept = shape[:dims[0]] + (1,) + shape[dims[0] + 1:]
    else:
        kept = tuple([1 if d in dims else s for d, s in enumerate(shape)])
    out = empty_tensor(kept, out_dtype, input._device)
    keys = (input._keys | local_state.include) & local_state.mask
    reduction = REDUCE[op]
    (reduction.table.get(keys) or reduction.lookup(keys))(out, input, dims)
    if keepdim:
        return out
    if every_dim:
        return _as_scalar(out)
    if out.grad_fn is None:
        return _squeezed(out, shape, dims)
    return squeeze(out, dims)


def _squeezed(out: Tensor, shape: tuple, dims: tuple) -> Tensor:
    """A fresh kept-dims result without its reduced dims, when no graph was recorded for it
    (below a derivative, in backward): the same elements and layout as squeeze's view, but not a
    view, so that a leaf's gradient (a bias's, summed over rows) becomes its .grad without a copy
    (issue 14). Nothing else refers to ``out``."""
    if len(dims) == 1:
        final = shape[:dims[0]] + shape[dims[0] + 1:]
    else:
        final = tuple([size for d, size in enumerate(shape) if d not in dims])
    return make_tensor(out._storage, final, contiguous_strides(final), out._offset, out._dtype, out._device,
                       out._version_ref)


def _as_scalar(out: Tensor) -> Tensor:
    """The 0-d result of a full reduction over the kernel's kept-dims output.

    It takes over the output's graph node instead of recording a view node of its own: dropping
    size-1 dims changes no element, and the 0-d gradient that comes back broadcasts over every
    reduction formula. One node fewer per loss.sum() or mean() is a tenth of a tiny backward.
    """
    result = make_tensor(out._storage, (), (), out._offset, out._dtype, out._device, out._version_ref)
    if out.grad_fn is not None:
        set_history(result, out.grad_fn)
    return result


# Kernels sum and multiply integers and bools into int64 (docs/backend-contract.md); a narrower
# dtype asked for wraps afterwards, which gives what its own arithmetic would (sums and products
# modulo 2**bits), and bool is "any nonzero" / "all nonzero" of the values converted to bool.
_NARROW_INTEGRALS = frozenset(d for d in _dt.all_dtypes if not d.is_floating_point and d is not _dt.int64)


def _sum_dtype(input: Tensor, dtype) -> tuple[Tensor, _dt.dtype]:
    if dtype is not None:
        return to_dtype(input, dtype), dtype
    if input._dtype.category < 2:  # bool and integers; floating and complex sum in their own dtype
        return input, _dt.int64
    return input, input._dtype


def _out_dtype(op: str, out, dtype) -> _dt.dtype:
    """The dtype a reduction or scan with ``out=`` computes in: ``dtype`` when given (``out``
    must then have it exactly), else ``out``'s own, as PyTorch infers it from the result."""
    if not isinstance(out, Tensor):
        raise TypeError(f"{op}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if dtype is None:
        return out._dtype
    if out._dtype is not dtype:
        raise RuntimeError(f"{op}(): Expected out tensor to have dtype {dtype.name}, but got {out._dtype.name} instead")
    return dtype


def sum(input, dim=None, keepdim=False, *, dtype=None, out=None, axis=None, keepdims=None) -> Tensor:
    """Sum over ``dim`` (all dims when None); integer and bool inputs sum to int64.

    With ``out=`` the sum is taken in ``out``'s dtype (the input is converted first), as in
    PyTorch: ``sum(float_tensor, 0, out=int64_tensor)`` adds the truncated values."""
    if out is not None:
        rehearse_out(sum, locals())
    if axis is not None or keepdims is not None:
        dim, keepdim = dim_keywords("sum", dim, axis, keepdim, keepdims)
    _check_tensor("sum", input)
    if out is not None:
        result = sum(input, dim, keepdim, dtype=_out_dtype("sum", out, dtype))
        return write_out("sum", out, result)
    x, out_dtype = _sum_dtype(input, dtype)
    if out_dtype in _NARROW_INTEGRALS:
        return to_dtype(_reduce("sum", x, dim, keepdim, _dt.int64), out_dtype)
    return _reduce("sum", x, dim, keepdim, out_dtype)


# `t.sum()` of a floating tensor (every loss) runs in C: the same steps as _reduce and _as_scalar
# for that one case (csrc/hotpath.cpp); every other call is the function above.
sum = _hotpath.FullReduction(sum, REDUCE["sum"].table, REDUCE["sum"].lookup,
                             frozenset((_dt.float16, _dt.bfloat16, _dt.float32, _dt.float64)))


@autocast_function("prod")
def prod(input, dim=None, keepdim=False, *, dtype=None, out=None, axis=None, keepdims=None) -> Tensor:
    """Product over ``dim`` (all dims when None); with ``out=``, over one ``dim`` in ``out``'s
    dtype, as :func:`sum`."""
    if out is not None:
        rehearse_out(prod, locals())
    if axis is not None or keepdims is not None:
        dim, keepdim = dim_keywords("prod", dim, axis, keepdim, keepdims)
    _check_tensor("prod", input)
    if out is not None:
        if dim is None:  # PyTorch's out= overload of prod takes one int dim
            raise TypeError("prod(): argument 'dim' must be int, not NoneType (out= needs a dim)")
        result = prod(input, dim, keepdim, dtype=_out_dtype("prod", out, dtype))
        return write_out("prod", out, result)
    x, out_dtype = _sum_dtype(input, dtype)
    if out_dtype in _NARROW_INTEGRALS:
        return to_dtype(_reduce("prod", x, dim, keepdim, _dt.int64), out_dtype)
    result = _reduce("prod", x, dim, keepdim, out_dtype)
    if not x._shape and x._dtype is out_dtype:
        # One element's product is itself, whose gradient is grad even at inf or 0 (PyTorch's
        # prod_backward of a 0-d input), not result / input.
        return clone(x)
    return result


def mean(input, dim=None, keepdim=False, *, dtype=None, out=None, axis=None, keepdims=None) -> Tensor:
    """Mean over ``dim`` (all dims when None) of a floating input, or of any input with a
    floating ``dtype``; with ``out=``, computed in ``out``'s dtype (which the result must be
    castable to, so not an integer one)."""
    if out is not None:
        rehearse_out(mean, locals())
    if axis is not None or keepdims is not None:
        dim, keepdim = dim_keywords("mean", dim, axis, keepdim, keepdims)
    _check_tensor("mean", input)
    in_dtype = input._dtype if dtype is None else dtype
    if in_dtype.category < 2:
        raise RuntimeError(
            f"mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. "
            f"Got: {in_dtype.name}"
        )
    if out is not None:
        target = _out_dtype("mean", out, dtype)
        check_cast("mean", in_dtype, target)
        return write_out("mean", out, mean(input, dim, keepdim, dtype=target))
    if dim is None:  # the mean of every element (a loss): no dims to normalize
        dims, count = None, numel_of(input._shape)
    else:
        dims = normalize_dims("mean", dim, input.ndim) or tuple(range(input.ndim))
        count = numel_of([input._shape[d] for d in dims])
    if in_dtype in (_dt.float16, _dt.bfloat16):
        # As PyTorch: the sum stays in float32 until divided (70,000 float16 twos summed to inf),
        # and a wider input goes to float32 directly, not through the 16-bit dtype (the mean of
        # float32 [1e20, -1e20, 3] in float16 is 1, not inf - inf).
        wide = to_dtype(input, _dt.float32)  # kernels reduce into their input's dtype (the contract)
        return to_dtype(_reduce("sum", wide, dims, keepdim, _dt.float32) / float(count), in_dtype)
    x = to_dtype(input, in_dtype)
    return _reduce("sum", x, dims, keepdim, x._dtype) / float(count)


def amax(input, dim=(), keepdim=False, *, axis=None, keepdims=None, out=None) -> Tensor:
    if out is not None:
        rehearse_out(amax, locals())
    if axis is not None or keepdims is not None:
        dim, keepdim = dim_keywords("amax", dim, axis, keepdim, keepdims, dim_default=())
    result = _reduce("amax", input, None if dim == () else dim, keepdim, input._dtype, needs_elements=True)
    return result if out is None else write_out("amax", out, result, exact_dtype=True)


def amin(input, dim=(), keepdim=False, *, axis=None, keepdims=None, out=None) -> Tensor:
    if out is not None:
        rehearse_out(amin, locals())
    if axis is not None or keepdims is not None:
        dim, keepdim = dim_keywords("amin", dim, axis, keepdim, keepdims, dim_default=())
    result = _reduce("amin", input, None if dim == () else dim, keepdim, input._dtype, needs_elements=True)
    return result if out is None else write_out("amin", out, result, exact_dtype=True)


def all(input, dim=None, keepdim=False, *, out=None, axis=None, keepdims=None) -> Tensor:
    """Whether every element (along ``dim``) is nonzero."""
    if out is not None:
        rehearse_out(all, locals())
    if axis is not None or keepdims is not None:
        dim, keepdim = dim_keywords("all", dim, axis, keepdim, keepdims)
    return _truth_out("all", out, _reduce("all", input, dim, keepdim, _dt.bool))


def any(input, dim=None, keepdim=False, *, out=None, axis=None, keepdims=None) -> Tensor:
    """Whether any element (along ``dim``) is nonzero."""
    if out is not None:
        rehearse_out(any, locals())
    if axis is not None or keepdims is not None:
        dim, keepdim = dim_keywords("any", dim, axis, keepdim, keepdims)
    return _truth_out("any", out, _reduce("any", input, dim, keepdim, _dt.bool))


def _truth_out(op: str, out, result: Tensor) -> Tensor:
    """all/any's out=: PyTorch writes their truth values into a bool or a uint8 tensor only (the
    two dtypes its own results take), converting between those two freely."""
    if out is None:
        return result
    if isinstance(out, Tensor):
        if out._dtype not in (_dt.bool, _dt.uint8):
            raise RuntimeError(f"{op}(): the result can only be written into a bool or uint8 out= tensor, but out has "
                               f"dtype {out._dtype.name}")
        if out._device is result._device:
            result = to_dtype(result, out._dtype)
    return write_out(op, out, result)


def _without_nan(op: str, input) -> Tensor:
    from .elementwise import UNARY, where

    _check_tensor(op, input)
    if not input._dtype.is_floating_point:
        return input
    return where(UNARY["isnan"](input), 0.0, input)


def _nansum_derivative(grad, args, output, kwargs, needs):
    """PyTorch's: grad times "not NaN" as a product, so a NaN element whose slice's gradient is
    infinite gets NaN (a nanmean over NaN alone divides by a count of 0), else 0."""
    from .elementwise import COMPARE

    input, dims, keepdim = args
    if not keepdim:
        grad = reshape(grad, tuple(1 if d in dims else s for d, s in enumerate(input._shape)))
    return (expand(grad, input._shape) * COMPARE["eq"](input, input),)


@composite("nansum", derivative=_nansum_derivative)
def _nansum(input: Tensor, dims: tuple, keepdim: bool) -> Tensor:
    return sum(_without_nan("nansum", input), dims, keepdim)


def nansum(input, dim=None, keepdim=False, *, dtype=None, out=None, axis=None, keepdims=None) -> Tensor:
    """Sum over ``dim`` with NaN counted as zero."""
    if out is not None:
        rehearse_out(nansum, locals())
    if axis is not None or keepdims is not None:
        dim, keepdim = dim_keywords("nansum", dim, axis, keepdim, keepdims)
    _check_tensor("nansum", input)
    if out is not None:
        # As sum's: computed in out's dtype (dtype=, when given, must be that dtype).
        return write_out("nansum", out, nansum(input, dim, keepdim, dtype=_out_dtype("nansum", out, dtype)))
    if not input._dtype.is_floating_point or (dtype is not None and not dtype.is_floating_point):
        return sum(_without_nan("nansum", input), dim, keepdim, dtype=dtype)
    x = input if dtype is None else to_dtype(input, dtype)
    dims = normalize_dims("nansum", dim, x.ndim) or tuple(range(x.ndim))
    return _nansum(x, dims, bool(keepdim))


def nanmean(input, dim=None, keepdim=False, *, dtype=None, out=None, axis=None, keepdims=None) -> Tensor:
    """Mean over ``dim`` of the non-NaN elements (NaN where a slice has none)."""
    if out is not None:
        rehearse_out(nanmean, locals())
    if axis is not None or keepdims is not None:
        dim, keepdim = dim_keywords("nanmean", dim, axis, keepdim, keepdims)
    from .elementwise import UNARY

    _check_tensor("nanmean", input)
    if out is not None:
        target = _out_dtype("nanmean", out, dtype)
        if not input._dtype.is_floating_point:
            raise RuntimeError(f"nanmean(): expected a float input tensor, but got {input._dtype.name}")
        if not target.is_floating_point:
            # PyTorch has no NaN-skipping sum for an integer or complex out= either.
            raise NotImplementedError(f"nanmean(): not implemented for an out= tensor of dtype {target.name} (input "
                                      f"{input._dtype.name}); pass a floating point out=")
        return write_out("nanmean", out, nanmean(input, dim, keepdim, dtype=target))
    x = input if dtype is None else to_dtype(input, dtype)
    if not x._dtype.is_floating_point:
        raise RuntimeError(f"nanmean(): expected a float input tensor, but got {x._dtype.name}")
    present = UNARY["logical_not"](UNARY["isnan"](x))
    count = sum(present, dim, keepdim)
    return nansum(x, dim, keepdim) / to_dtype(count, x._dtype)


def _arg_reduce(op: str, input, dim, keepdim: bool) -> Tensor:
    _check_tensor(op, input)
    if dim is None:
        flat = reshape(input, (-1,))
        if flat._shape[0] == 0:  # IndexError, as PyTorch raises for argmax/argmin
            raise IndexError(f"{op}(): Expected reduction dim to be specified for input.numel() == 0.")
        result = _reduce(op, flat, 0, False, _dt.int64, needs_elements=True)
        return reshape(result, (1,) * input.ndim) if keepdim else result
    d = normalize_dim(op, dim, input.ndim)
    return _reduce(op, input, d, keepdim, _dt.int64, needs_elements=True)


def argmax(input, dim=None, keepdim=False, *, axis=None, keepdims=None) -> Tensor:
    if axis is not None or keepdims is not None:
        dim, keepdim = dim_keywords("argmax", dim, axis, keepdim, keepdims)
    return _arg_reduce("argmax", input, dim, keepdim)


def argmin(input, dim=None, keepdim=False, *, axis=None, keepdims=None) -> Tensor:
    if axis is not None or keepdims is not None:
        dim, keepdim = dim_keywords("argmin", dim, axis, keepdim, keepdims)
    return _arg_reduce("argmin", input, dim, keepdim)


def _extreme(op: str, reducer: str, arg_op: str, input, dim, keepdim, other):
    from .elementwise import BINARY

    if isinstance(dim, Tensor) and other is None:
        return BINARY["maximum" if op == "max" else "minimum"](input, dim)
    if other is not None:
        return BINARY["maximum" if op == "max" else "minimum"](input, other)
    _check_tensor(op, input)
    if dim is None:
        if input.numel() == 0:
            raise RuntimeError(
                f"{op}(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim "
                f"with the 'dim' argument."
            )
        return _reduce(reducer, input, None, False, input._dtype, needs_elements=True)
    d = normalize_dim(op, dim, input.ndim)  # a bad dim names this op, not the helpers below
    if input.ndim and input._shape[d] == 0:
        raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size (input shape {list(input._shape)}).")
    # Values are gathered at the indices, so the gradient goes to the chosen element only
    # (as in PyTorch), not spread over ties like amax's.
    from .indexing import gather

    indices = _arg_reduce(arg_op, input, dim, True)
    values = gather(input, normalize_dim(op, dim, input.ndim), indices) if input.ndim else input.clone()
    if not keepdim and input.ndim:
        d = normalize_dim(op, dim, input.ndim)
        values, indices = squeeze(values, d), squeeze(indices, d)
    return _NAMED_RESULT[op](values, indices)


def max(input, dim=None, keepdim=False, *, other=None, axis=None, keepdims=None, out=None):
    """``max(input)``: the largest value; ``max(input, dim)``: (values, indices);
    ``max(input, other)``: the elementwise maximum."""
    if out is not None:
        rehearse_out(max, locals())
    if axis is not None or keepdims is not None:
        dim, keepdim = dim_keywords("max", dim, axis, keepdim, keepdims)
    result = _extreme("max", "amax", "argmax", input, dim, keepdim, other)
    return result if out is None else _extreme_out("max", out, result)


def min(input, dim=None, keepdim=False, *, other=None, axis=None, keepdims=None, out=None):
    if out is not None:
        rehearse_out(min, locals())
    if axis is not None or keepdims is not None:
        dim, keepdim = dim_keywords("min", dim, axis, keepdim, keepdims)
    result = _extreme("min", "amin", "argmin", input, dim, keepdim, other)
    return result if out is None else _extreme_out("min", out, result)


def _extreme_out(op: str, out, result):
    """``out=`` of max/min: one tensor for a single result, a (values, indices) pair with ``dim``."""
    if isinstance(result, Tensor):
        return write_out(op, out, result, exact_dtype=True)
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise TypeError(f"{op}(): with dim, out must be a (values, indices) pair of tensors")
    values = write_out(op, out[0], result[0], exact_dtype=True)
    return _NAMED_RESULT[op](values, write_out(op, out[1], result[1], exact_dtype=True))


def _scan(op: str, input, dim, dtype) -> Tensor:
    _check_tensor(op, input)
    x = input
    if dtype is not None:
        x = to_dtype(x, dtype)
    elif x._dtype.category < 2:  # bool and integers; floating and complex scan in their own dtype
        x = to_dtype(x, _dt.int64)
    if not x._shape:
        from .copying import clone

        return clone(x)
    d = normalize_dim(op, dim, x.ndim)
    out = empty_tensor(x._shape, x._dtype, x._device)
    if x._dtype is _dt.bool:  # dtype=bool (or a bool out=): no backend scans bools, nor PyTorch
        if out.numel():
            raise NotImplementedError(f"{op}(): not implemented for 'bool' (the dtype asked for, or out's)")
        return out
    SCAN[op].lookup(keyset(x))(out, x, d)
    return out


def _scan_out(op: str, input, dim, dtype, out) -> Tensor:
    """A scan into ``out=``: taken in ``out``'s dtype (see :func:`_out_dtype`), ``out`` resized to
    the input's shape."""
    _check_tensor(op, input)
    return write_out(op, out, _scan(op, input, dim, _out_dtype(op, out, dtype)))


def cumsum(input, dim=None, *, dtype=None, out=None, axis=None) -> Tensor:
    """Inclusive cumulative sum along ``dim``; integer and bool inputs give int64."""
    if out is not None:
        rehearse_out(cumsum, locals())
    if dim is None or axis is not None:
        dim = required_dim("cumsum", dim, axis)
    if out is not None:
        return _scan_out("cumsum", input, dim, dtype, out)
    return _scan("cumsum", input, dim, dtype)


def cumsum_(self, dim=None, *, dtype=None, axis=None) -> Tensor:
    """In place: ``self`` keeps its dtype (the sum is taken in ``dtype`` when given)."""
    if dim is None or axis is not None:
        dim = required_dim("cumsum_", dim, axis)
    from ._common import write_inplace

    _check_tensor("cumsum_", self)
    result = _scan("cumsum", self, dim, dtype if dtype is not None else self._dtype)
    return write_inplace("cumsum_", self, result)


def cumprod_(self, dim=None, *, dtype=None, axis=None) -> Tensor:
    if dim is None or axis is not None:
        dim = required_dim("cumprod_", dim, axis)
    from ._common import write_inplace

    _check_tensor("cumprod_", self)
    result = _scan("cumprod", self, dim, dtype if dtype is not None else self._dtype)
    return write_inplace("cumprod_", self, result)


def cumprod(input, dim=None, *, dtype=None, out=None, axis=None) -> Tensor:
    """Inclusive cumulative product along ``dim``; integer and bool inputs give int64."""
    if out is not None:
        rehearse_out(cumprod, locals())
    if dim is None or axis is not None:
        dim = required_dim("cumprod", dim, axis)
    if out is not None:
        return _scan_out("cumprod", input, dim, dtype, out)
    return _scan("cumprod", input, dim, dtype)
