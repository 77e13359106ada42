"""Out-of-place writes at indices, and their in-place methods: ``index_copy``, ``index_fill``,
``index_put``, ``masked_scatter``, ``put``, ``fill``, the diagonal write behind
``Tensor.fill_diagonal_``; and the index queries ``nonzero_static`` and ``isin``.

Each is a composite over scatter, gather and where, so the gradient reaches both the tensor
written into (zero where it was overwritten) and the values written. Index values are checked
once before any kernel runs (one host read), so every backend raises the same IndexError.
"""
from __future__ import annotations

from .. import dtypes as _dt
from ..shapes import broadcast_shapes, normalize_dim
from ..meta_device import has_values
from ..tensor import Tensor, empty_tensor
from ._common import check_index_range, check_same_device, is_number, on_common_device
from ._pointwise_args import check_tensor, inplace_variant, result_dtype_of
from .elementwise import COMPARE, where
from .out_rehearsal import rehearse_out

__all__ = ["index_copy", "index_fill", "index_put", "masked_scatter", "put", "fill", "nonzero_static", "isin"]


def _check_vector_index(op: str, input: Tensor, index) -> None:
    check_tensor(op, index, "index")
    if index._dtype is not _dt.int64:
        raise RuntimeError(f"{op}(): Expected a long tensor for index, but got {index._dtype.name}")
    if index.ndim > 1:
        raise IndexError(f"{op}(): Index is supposed to be a vector")
    check_same_device(op, input, index)


def _along(index: Tensor, dim: int, shape: tuple) -> Tensor:
    """``index`` (one entry per slice) placed along ``dim`` and expanded to ``shape``."""
    view = [1] * len(shape)
    view[dim] = index.numel()
    return index.reshape(view).expand(*shape)


def index_copy(input, dim, index, source, *, out=None) -> Tensor:
    """``input`` with the slices ``source[..., i, ...]`` written at ``index[i]`` along ``dim``.

    >>> tp.index_copy(tp.zeros(3), 0, tp.tensor([2]), tp.tensor([5.0])).tolist()
    [0.0, 0.0, 5.0]
    """
    if out is not None:
        rehearse_out(index_copy, locals())
    from ._common import write_out
    from .indexing import scatter

    op = "index_copy_"
    check_tensor(op, input)
    check_tensor(op, source, "source")
    _check_vector_index(op, input, index)
    check_same_device(op, input, source)
    if source._dtype is not input._dtype:
        raise RuntimeError(f"{op}(): self and source expected to have the same dtype, but got (self) "
                           f"{input._dtype.name} and (source) {source._dtype.name}")
    target = input.reshape(1) if input.ndim == 0 else input
    values = source.reshape(1) if source.ndim == 0 else source
    d = normalize_dim(op, dim, target.ndim)
    if values.ndim != target.ndim:
        raise IndexError(f"{op}(): When source and destination are not scalars, their dimensionality must match. Source "
                         f"dimensionality ({source.ndim}), destination dimensionality ({input.ndim})")
    if values._shape[d] != index.numel():
        raise IndexError(f"{op}(): Number of indices ({index.numel()}) should be equal to source.size(dim) "
                         f"({values._shape[d]})")
    for k, (a, b) in enumerate(zip(target._shape, values._shape)):
        if k != d and a != b:
            raise RuntimeError(f"{op}(): Source/destination tensor must have same slice shapes. Destination slice "
                               f"shape: {a} at dimension {k} and source slice shape: {b} at dimension {k}.")
    check_index_range(op, index, target._shape[d], d)
    result = scatter(target, d, _along(index.reshape(-1), d, values._shape), values)
    return write_out("index_copy", out, result.reshape(input._shape))


def index_fill(input, dim, index, value) -> Tensor:
    """``input`` with the slices at ``index`` along ``dim`` set to ``value`` (a number or a 0-d
    tensor; negative indices count from the end).

    >>> tp.index_fill(tp.zeros(2, 3), 1, tp.tensor([0, -1]), 7.0).tolist()
    [[7.0, 0.0, 7.0], [7.0, 0.0, 7.0]]
    """
    from ..factories import zeros

    op = "index_fill_"
    check_tensor(op, input)
    if isinstance(index, Tensor) and index._dtype is not _dt.int64:  # PyTorch's IndexError, not the RuntimeError below
        raise IndexError(f"{op}(): Expected dtype int64 for index, but got {index._dtype.name}")
    _check_vector_index(op, input, index)
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with {value.ndim} "
                               f"dimension(s).")
        input, value = on_common_device(op, input, value)
        value = value.to(input._dtype)
    elif not is_number(value):
        raise TypeError(f"{op}(): argument 'value' must be Number or Tensor, not {type(value).__name__}")
    target = input.reshape(1) if input.ndim == 0 else input
    d = normalize_dim(op, dim, target.ndim)
    size = target._shape[d]
    index = index.reshape(-1)
    check_index_range(op, where(COMPARE["lt"](index, 0), index + size, index), size, d)
    chosen = zeros(size, dtype=_dt.bool, device=input._device)
    chosen[index] = True
    shape = [1] * target.ndim
    shape[d] = size
    return where(chosen.reshape(shape), value, target).reshape(input._shape)


def index_put(input, indices, values, accumulate=False) -> Tensor:
    """``input`` with ``values`` written (added, with ``accumulate``) at ``input[indices]``: the
    out-of-place ``index_put_``."""
    check_tensor("index_put", input)
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"index_put(): argument 'indices' must be tuple of Tensors, not {type(indices).__name__}")
    return input.clone().index_put_(tuple(indices), values, accumulate)


def _source_positions(mask: Tensor) -> Tensor:
    """For each True of the (row-major) mask, the position in the source it takes (0 elsewhere)."""
    flat = mask.reshape(-1).to(_dt.int64)
    return where(mask.reshape(-1), flat.cumsum(0) - 1, 0)


def masked_scatter(input, mask, source) -> Tensor:
    """``input`` with the elements where the bool ``mask`` (broadcast) is True replaced, in
    row-major order, by the first elements of ``source``.

    >>> tp.masked_scatter(tp.zeros(4), tp.tensor([True, False, True, False]), tp.tensor([1.0, 2.0])).tolist()
    [1.0, 0.0, 2.0, 0.0]
    """
    _check_operands("masked_scatter_", input, "mask", mask, source,
                    f"masked_scatter_: expected self and source to have same dtypes but got {_name(input)} and {_name(source)}")
    if mask._dtype is not _dt.bool:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype {mask._dtype.name}")
    shape = broadcast_shapes(input._shape, mask._shape, op="masked_scatter")
    full_mask = mask.expand(*shape)
    if has_values(full_mask):  # a meta mask has no ones to count: the result's shape is known without them
        count = int(full_mask.sum().item())
        if count > source.numel():
            raise RuntimeError("Number of elements of source < number of ones in mask")
        if count == 0:
            return input.expand(*shape).clone()
    from .indexing import gather

    taken = gather(source.reshape(-1), 0, _source_positions(full_mask)).reshape(shape)
    return where(full_mask, taken, input)


def _name(t) -> str:
    return t._dtype.name if isinstance(t, Tensor) else type(t).__name__


def _check_operands(op: str, input, where_name: str, where_tensor, source, dtype_message: str) -> None:
    """Three tensors on one device, ``source`` of ``input``'s dtype (``dtype_message`` else)."""
    check_tensor(op, input)
    check_tensor(op, where_tensor, where_name)
    check_tensor(op, source, "source")
    if source._dtype is not input._dtype:
        raise RuntimeError(dtype_message)
    check_same_device(op, input, where_tensor, source)


def put(input, index, source, accumulate=False) -> Tensor:
    """``input`` with ``source`` written (added, with ``accumulate``) at the flat positions
    ``index`` of the row-major ``input`` (negative ones count from the end).

    >>> tp.put(tp.zeros(2, 2), tp.tensor([3, -4]), tp.tensor([1.0, 2.0])).tolist()
    [[2.0, 0.0], [0.0, 1.0]]
    """
    from .indexing import scatter, scatter_add

    op = "put_"
    _check_operands(op, input, "index", index, source, f"{op}(): self and source expected to have the same dtype, but "
                    f"got self.dtype = {_name(input)} and source.dtype = {_name(source)}")
    if index._dtype is not _dt.int64:
        raise RuntimeError(f"{op}(): Expected a long tensor for index, but got {index._dtype.name}")
    if source.numel() != index.numel():
        raise RuntimeError(f"{op}(): Expected source and index to have the same number of elements, but got "
                           f"source.numel() = {source.numel()}, index.numel() = {index.numel()}")
    size = input.numel()
    flat_index = index.reshape(-1)
    wrapped = where(COMPARE["lt"](flat_index, 0), flat_index + size, flat_index)
    if index.numel():
        check_index_range(op, wrapped, size, 0)
    write = scatter_add if accumulate else scatter
    return write(input.reshape(-1), 0, wrapped, source.reshape(-1)).reshape(input._shape)


def fill(input, value) -> Tensor:
    """A new tensor shaped like ``input`` holding ``value`` (a number or a 0-d tensor). As in
    PyTorch it is a graph node: ``input`` gets a zero gradient, a tensor ``value`` the sum of the
    result's."""
    from ..factories import full, ones_like

    check_tensor("fill", input)
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value.ndim} dimensions.")
        input, value = on_common_device("fill", input, value)
        value = value.to(input._dtype)
    elif not is_number(value) and not isinstance(value, complex):
        raise TypeError(f"fill(): argument 'value' must be Number or Tensor, not {type(value).__name__}")
    else:
        value = full((), value, dtype=input._dtype, device=input._device)  # converted as fill_ converts
    return where(ones_like(input, dtype=_dt.bool), value, input)


def _fill_diagonal(input, fill_value, wrap=False) -> Tensor:
    """``input`` with its main diagonal set to ``fill_value``: the out-of-place half of
    ``Tensor.fill_diagonal_`` (PyTorch has no function form). A tall matrix's diagonal restarts
    one row below its end with ``wrap``."""
    from ..factories import arange, zeros

    op = "fill_diagonal_"
    check_tensor(op, input)
    if input.ndim < 2:
        raise RuntimeError(f"{op}(): dimensions must larger than 1 (got a {input.ndim}-d tensor of shape "
                           f"{tuple(input._shape)})")
    if input.ndim > 2 and len(set(input._shape)) != 1:
        raise RuntimeError(f"{op}(): all dimensions of input must be of equal length (got shape {tuple(input._shape)})")
    if isinstance(fill_value, Tensor):
        if fill_value.ndim != 0:
            raise RuntimeError(f"{op}(): fill_value must be a number or a 0-d tensor, got a tensor of shape "
                               f"{tuple(fill_value._shape)}")
        fill_value = fill_value.item()
    if not is_number(fill_value) and not isinstance(fill_value, complex):
        raise TypeError(f"{op}(): argument 'fill_value' (position 1) must be Number, not {type(fill_value).__name__}")
    # In the row-major flattening, consecutive diagonal elements are one step of every dimension
    # apart: 1 + n + n^2 + ... for a cube, columns + 1 for a matrix (which is also where a tall
    # matrix's wrapped diagonal continues).
    columns = input._shape[-1]
    step = sum(columns ** k for k in range(input.ndim)) if input.ndim > 2 else columns + 1
    numel = input.numel()
    if wrap and input.ndim == 2:
        count = (numel + step - 1) // step if numel else 0
    else:
        count = min(input._shape)
    chosen = zeros(numel, dtype=_dt.bool, device=input._device)
    if count:
        chosen[arange(count, device=input._device) * step] = True
    value = _scalar_like(fill_value, input)
    return where(chosen.reshape(input._shape), value, input)


def _scalar_like(value, like: Tensor) -> Tensor:
    """``value`` as a 0-d tensor of ``like``'s dtype and device, converted as ``fill_`` converts."""
    from ..factories import full

    return full((), value, dtype=like._dtype, device=like._device)


def nonzero_static(input, *, size, fill_value=-1) -> Tensor:
    """The (size, ndim) indices of the first ``size`` nonzero elements, padded with rows of
    ``fill_value`` when there are fewer (a fixed shape, whatever the values).

    >>> tp.nonzero_static(tp.tensor([0, 3, 0]), size=2).tolist()
    [[1], [-1]]
    """
    from ..factories import full
    from .indexing import nonzero
    from .joining import cat

    check_tensor("nonzero_static", input)
    if size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be an non-negative integer, but got {size}")
    if not has_values(input):  # the shape is (size, ndim) whatever the values
        return empty_tensor((size, input.ndim), _dt.int64, input._device)
    found = nonzero(input)
    if found._shape[0] >= size:
        return found[:size].clone()
    padding = full((size - found._shape[0], input.ndim), fill_value, dtype=_dt.int64, device=input._device)
    return cat([found, padding], 0)


def isin(elements, test_elements, *, assume_unique=False, invert=False) -> Tensor:
    """True where an element of ``elements`` appears in ``test_elements`` (either may be a
    number); False where ``invert``. NaN is in nothing.

    >>> tp.isin(tp.tensor([1, 2, 3]), tp.tensor([2, 5])).tolist()
    [False, True, False]
    """
    from ..factories import tensor
    from .searching import searchsorted
    from .sorting import sort

    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin(): expected at least one Tensor argument")
    dev = (elements if isinstance(elements, Tensor) else test_elements)._device
    dtype = result_dtype_of(elements, test_elements)
    a, b = (x.to(dtype) if isinstance(x, Tensor) else tensor(x, dtype=dtype, device=dev) for x in (elements, test_elements))
    check_same_device("isin", a, b)
    if b.numel() == 0:
        found = COMPARE["ne"](a, a) & COMPARE["eq"](a, a)  # all False, in a's shape
    else:
        candidates = sort(b.reshape(-1)).values
        # Where each element would sit among the sorted candidates; it is in them when the
        # candidate there equals it.
        position = searchsorted(candidates, a.reshape(-1)).clamp_max(candidates.numel() - 1)
        found = COMPARE["eq"](candidates[position], a.reshape(-1)).reshape(a._shape)
    return ~found if invert else found


#: Tensor methods this module provides: name -> function (attached by frontend.methods).
TENSOR_METHODS: dict = {
    "index_copy": lambda self, dim, index, source: index_copy(self, dim, index, source),
    "index_fill": index_fill, "index_put": index_put, "masked_scatter": masked_scatter, "put": put,
    "nonzero_static": nonzero_static,
    "index_copy_": inplace_variant(lambda self, dim, index, source: index_copy(self, dim, index, source), "index_copy_"),
    "index_fill_": inplace_variant(index_fill),
    "masked_scatter_": inplace_variant(masked_scatter),
    "put_": inplace_variant(put),
    "fill_diagonal_": inplace_variant(_fill_diagonal, "fill_diagonal_"),
}
