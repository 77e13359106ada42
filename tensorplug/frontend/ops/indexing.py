"""Indexing: ``t[...]`` and ``t[...] = v`` with PyTorch's basic and advanced rules, and the
``index`` primitive family (gather, scatter_, index_get, index_put_).

Basic indices (ints, slices, None, Ellipsis) make views. Advanced indices (integer tensors or
lists, bool masks) are broadcast together; the indexed dims are moved to the front so that the
``index_get``/``index_put_`` kernels only ever index leading dims, and the result dims go where
NumPy puts them (in place of the first indexed dim when those dims are adjacent, else first).
"""
from __future__ import annotations

import operator

import numpy as np

from ...dispatcher import Operator
from .. import dtypes as _dt
from ..shapes import broadcast_shapes, normalize_dim
from ..meta_device import has_values, refuse_data_dependent
from ..tensor import Tensor, empty_tensor
from ..views import expand, permute, reshape, select, slice_dim, unsqueeze
from ._common import (
    bump_version, check_exact_dtype, check_index_range, check_no_internal_overlap, check_no_overlap, check_same_device, is_number, keyset,
    warn_if_expanded, write_out,
)
from .copying import copy_, fill_, number_for, to_dtype
from .out_rehearsal import rehearse_out

__all__ = ["getitem", "setitem", "gather", "scatter", "scatter_", "scatter_add", "index_select", "nonzero", "argwhere", "take"]

GATHER = Operator("gather")
SCATTER = Operator("scatter_")
INDEX_GET = Operator("index_get")
INDEX_PUT = Operator("index_put_")

# The integer dtypes an index tensor may have (bool and uint8 are masks): PyTorch's int64 and
# int32. int8 and int16 are refused as there; so are uint16/32/64, whose large values would read
# as negative int64 indices.
_INDEX_DTYPES = (_dt.int64, _dt.int32)


def _as_index_tensor(value, dev) -> Tensor:
    from ..factories import tensor

    if isinstance(value, Tensor):
        return value
    return tensor(value, device=dev)


def _zero_index(count: int, dev) -> Tensor:
    """``count`` int64 zeros: index 0 of a new size-1 dim, repeated (or not taken at all)."""
    return fill_(empty_tensor((count,), _dt.int64, dev), 0)


def _as_index_item(item):
    """A NumPy array or scalar, or a ``range``, as PyTorch reads it: an array as an index tensor
    (a bool array as a mask), a 0-d array or NumPy scalar as the number, a range as its list."""
    if isinstance(item, range):
        return list(item)
    if isinstance(item, np.ndarray):
        if item.ndim == 0:
            return bool(item) if item.dtype == np.bool_ else item.item()
        from ..factories import tensor

        return tensor(item)
    if isinstance(item, np.bool_):
        return bool(item)
    return item


def _apply_basic(t: Tensor, index):
    """Apply ints, slices, None and Ellipsis; return the view and [(dim, advanced index)]."""
    if not isinstance(index, tuple):
        index = (index,)
    index = tuple(_as_index_item(item) for item in index)
    # How many of t's dims the index uses up (a bool mask uses one per mask dim).
    consumed = sum(
        i.ndim if isinstance(i, Tensor) and i._dtype is _dt.bool else 1
        for i in index
        if i is not None and i is not Ellipsis and not isinstance(i, bool)
    )
    if sum(1 for i in index if i is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if consumed > t.ndim:
        raise IndexError(f"too many indices for tensor of dimension {t.ndim}")
    result, dim, advanced = t, 0, []
    for item in index:
        if item is Ellipsis:
            dim += t.ndim - consumed
        elif item is None:
            result = unsqueeze(result, dim)
            dim += 1
        elif isinstance(item, slice):
            result = slice_dim(result, dim, item.start, item.stop, item.step)
            dim += 1
        elif isinstance(item, bool) or (isinstance(item, Tensor) and item._dtype is _dt.bool and item.ndim == 0):
            # A scalar bool is a 0-d mask: a new dim of size 1 that True keeps and False empties.
            result = unsqueeze(result, dim)
            if isinstance(item, Tensor):
                refuse_data_dependent("indexing with a boolean mask", item)
            keep = bool(item) if isinstance(item, bool) else bool(item.item())
            advanced.append((dim, _zero_index(1 if keep else 0, t._device)))
            dim += 1
        elif isinstance(item, int) or (hasattr(item, "__index__") and not isinstance(item, Tensor)):
            size = result._shape[dim]
            i = operator.index(item)
            if not -size <= i < size:
                raise IndexError(f"index {i} is out of bounds for dimension {dim} with size {size}")
            result = select(result, dim, i)
        elif isinstance(item, (Tensor, list, tuple)):
            idx = _as_index_tensor(item, t._device)
            if idx._dtype is _dt.bool or idx._dtype is _dt.uint8:
                refuse_data_dependent("indexing with a boolean mask", idx)
                for k in range(idx.ndim):
                    if idx._shape[k] != result._shape[dim + k]:
                        raise IndexError(
                            f"The shape of the mask {list(idx._shape)} at index {k} does not match the shape of the "
                            f"indexed tensor {list(result._shape)} at index {dim + k}"
                        )
                for k, coordinate in enumerate(nonzero(idx, as_tuple=True)):
                    advanced.append((dim + k, coordinate))
                dim += idx.ndim
            elif idx._dtype not in _INDEX_DTYPES:
                # uint64 2**64 - 1 read as int64 would be -1, the last element: refused, as PyTorch
                # refuses every dtype but these.
                raise IndexError(f"tensors used as indices must be long, int, byte or bool tensors, "
                                 f"got {idx._dtype.name}")
            else:
                advanced.append((dim, idx))
                dim += 1
        else:
            raise IndexError(
                f"only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices "
                f"(got {type(item).__name__})"
            )
    return result, advanced


def _prepare_advanced(view: Tensor, advanced):
    """Move indexed dims first; return (permuted view, int64 indices of one shape, shape, where)."""
    dims = [d for d, _ in advanced]
    indices = [to_dtype(_index_on(view, idx), _dt.int64) for _, idx in advanced]
    shape = broadcast_shapes(*(i._shape for i in indices), op="index")
    indices = tuple(i if i._shape == shape else expand(i, shape) for i in indices)
    rest = [d for d in range(view.ndim) if d not in dims]
    order = dims + rest
    # An identity order keeps the tensor itself (not a view), so in-place writes stay simple.
    moved = view if order == list(range(view.ndim)) else permute(view, order)
    adjacent = dims == list(range(dims[0], dims[0] + len(dims)))
    return moved, indices, shape, (dims[0] if adjacent else 0)


def _index_on(view: Tensor, idx: Tensor) -> Tensor:
    """An index tensor on ``view``'s device: CPU indices are moved there, as PyTorch does
    (``x_cuda[torch.tensor([0, 1])]``); indices on another device are refused."""
    if idx._device is not view._device and idx._device.type == "cpu":
        return idx.to(view._device)
    check_same_device("index", view, idx)
    return idx


def _values_for(op: str, t: Tensor, values: Tensor):
    """The values an index_put_ writes into ``t``: in ``t``'s dtype, on its device. A 0-d CPU
    tensor joins as a number (as in arithmetic), or, when it requires grad, as a copy on ``t``'s
    device, through which its gradient flows back; any other tensor must be on ``t``'s device."""
    if values._device is not t._device and not values._shape and values._device.type == "cpu":
        if not values.requires_grad:
            return number_for(op, values.item(), t._dtype)
        values = values.to(t._device)
    check_same_device(op, t, values)
    return to_dtype(values, t._dtype)


def getitem(t: Tensor, index) -> Tensor:
    view, advanced = _apply_basic(t, index)
    if not advanced:
        return view
    moved, indices, shape, where = _prepare_advanced(view, advanced)
    out_shape = shape + moved._shape[len(indices):]
    out = empty_tensor(out_shape, t._dtype, t._device)
    INDEX_GET.lookup(keyset(moved, *indices))(out, moved, indices)
    if where:
        order = list(range(len(shape), len(shape) + where)) + list(range(len(shape))) + list(range(len(shape) + where, out.ndim))
        out = permute(out, order)
    return out


def setitem(t: Tensor, index, value) -> None:
    """``t[index] = value``, checked as PyTorch checks it before anything is written (issue 16): a
    target with repeated elements is refused by the copy (basic indices) or warned about (advanced
    ones), a value or index tensor sharing memory with the target is refused."""
    if index is False:  # PyTorch writes nothing for a lone False, not even broadcasting the value
        if not isinstance(value, Tensor) and not is_number(value):
            from ..factories import tensor

            tensor(value, dtype=t._dtype, device=t._device)  # still refuses what is no tensor data
        return
    if index is True:  # a lone True writes through a new leading dim, as None does (not index_put_)
        index = None
    if not has_values(t) and _is_mask(index) and (is_number(value) or isinstance(value, Tensor) and not value._shape):
        _fill_where_on_meta(t, index, value)
        return
    if isinstance(value, Tensor):
        value = _without_leading_ones(value)
    view, advanced = _apply_basic(t, index)
    if not advanced:
        if isinstance(value, Tensor):
            if value.numel() == view.numel():  # (a broadcast value repeats elements: PyTorch lets it pass)
                check_no_overlap("copy_", view, value, allow_same=True)
            copy_(view, value)
        elif is_number(value):
            fill_(view, value)
        else:
            from ..factories import tensor

            copy_(view, tensor(value, dtype=t._dtype, device=t._device))
        return
    warn_if_expanded("index_put_", view, stacklevel=3)
    if isinstance(value, Tensor):
        check_no_overlap("index_put_", view, value)
    for item in index if isinstance(index, tuple) else (index,):
        # (a 0-d integer tensor selects, as an int does, in PyTorch; a mask is replaced by new tensors)
        if isinstance(item, Tensor) and item.ndim and item._dtype is not _dt.bool:
            check_no_overlap("index_put_", view, item)
    moved, indices, shape, where = _prepare_advanced(view, advanced)
    target_shape = shape + moved._shape[len(indices):]
    if is_number(value):
        values = number_for("index_put_", value, t._dtype)
    else:
        from ..factories import tensor

        values = _values_for("index_put_", t, value if isinstance(value, Tensor) else tensor(value, device=t._device))
    if isinstance(values, Tensor):
        # values come in the layout t[index] has; bring the indexed dims first, like `moved`.
        k = len(shape)
        result_shape = target_shape[k:k + where] + target_shape[:k] + target_shape[k + where:]
        if values._shape != result_shape:
            values = expand(values, result_shape)
        if where:
            values = permute(values, list(range(where, where + k)) + list(range(where)) + list(range(where + k, values.ndim)))
    value_keys = (values,) if isinstance(values, Tensor) else ()
    INDEX_PUT.lookup(keyset(moved, *indices, *value_keys))(moved, indices, values, False)
    bump_version(t)


def _without_leading_ones(value: Tensor) -> Tensor:
    """``value`` viewed without its leading size-1 dims, as PyTorch's assignment reads it: a value
    may have more dims than the target when the extra ones have size 1 (``a[t] = row.reshape(1, -1)``
    into a 1-d ``a[t]``), while ``copy_`` alone refuses that."""
    leading = 0
    while leading < value.ndim and value._shape[leading] == 1:
        leading += 1
    return reshape(value, value._shape[leading:]) if leading else value


def _is_mask(index) -> bool:
    return isinstance(index, Tensor) and index._dtype is _dt.bool and index.ndim > 0


def _fill_where_on_meta(t: Tensor, mask: Tensor, value) -> None:
    """``t[mask] = value`` for a meta ``t`` and one value: where the mask holds is unknown (it has
    no values), but writing one value wherever it holds is ``masked_fill_``, whose result is
    ``t``'s metadata, recorded for autograd as PyTorch records the write."""
    from .shaping import masked_fill_

    leading = t._shape[:mask.ndim]
    if mask._shape != leading:
        raise IndexError(f"The shape of the mask {list(mask._shape)} does not match the shape of the indexed tensor "
                         f"{list(t._shape)}")
    masked_fill_(t, reshape(mask, mask._shape + (1,) * (t.ndim - mask.ndim)), value)


def index_put_(self: Tensor, indices, values, accumulate: bool = False) -> Tensor:
    """Write ``values`` at ``self[indices]`` (added when ``accumulate``); values and indices may not
    share memory with ``self``, and an expanded ``self`` is warned about, as in PyTorch."""
    indices = tuple(_as_index_tensor(i, self._device) for i in indices)
    warn_if_expanded("index_put_", self, stacklevel=2)
    if isinstance(values, Tensor):
        check_no_overlap("index_put_", self, values)
    for index in indices:
        check_no_overlap("index_put_", self, index)
    # Read as self[indices] reads them: a bool or uint8 mask stands for its coordinates, and an
    # index of a dtype PyTorch refuses (int8, int16, float) raises.
    view, advanced = _apply_basic(self, indices)
    moved, idx, shape, _ = _prepare_advanced(view, advanced)
    target_shape = shape + moved._shape[len(idx):]
    if isinstance(values, Tensor):
        values = _values_for("index_put_", self, values)
    else:
        values = number_for("index_put_", values, self._dtype)
    if isinstance(values, Tensor) and values._shape != target_shape:
        values = expand(values, target_shape)
    value_keys = (values,) if isinstance(values, Tensor) else ()
    INDEX_PUT.lookup(keyset(moved, *idx, *value_keys))(moved, idx, values, bool(accumulate))
    bump_version(self)
    return self


def _check_gather_args(op: str, input: Tensor, dim, index: Tensor) -> tuple:
    """The normalized dim and the index as int64 (the kernels' index dtype; PyTorch takes int32
    too), after PyTorch's checks."""
    if not isinstance(index, Tensor):
        raise TypeError(f"{op}(): argument 'index' must be Tensor, not {type(index).__name__}")
    if index._dtype is not _dt.int64 and index._dtype is not _dt.int32:
        raise RuntimeError(f"{op}(): Expected dtype int32/int64 for index, but got {index._dtype.name}")
    check_same_device(op, input, index)
    d = normalize_dim(op, dim, input.ndim)
    if index.ndim != input.ndim:
        raise RuntimeError(f"{op}(): Index tensor must have the same number of dimensions as input tensor ({index.ndim} vs {input.ndim})")
    if index.numel() == 0:
        return d, index  # nothing is read or written: PyTorch checks no sizes either
    for k, (si, sx) in enumerate(zip(index._shape, input._shape)):
        if k != d and si > sx:
            raise RuntimeError(f"{op}(): Size does not match at dimension {k} expected index {list(index._shape)} to be no larger than self {list(input._shape)} apart from dimension {d}")
    check_index_range(op, index, input._shape[d] if input.ndim else 1, d)
    return d, to_dtype(index, _dt.int64)


def gather(input: Tensor, dim, index: Tensor, *, sparse_grad=False, out=None) -> Tensor:
    if out is not None:
        rehearse_out(gather, locals())
    if out is not None:
        return write_out("gather", out, gather(input, dim, index, sparse_grad=sparse_grad), exact_dtype=True)
    d, index = _check_gather_args("gather", input, dim, index)
    if index.numel() == 0:
        # Nothing to read, whatever the index's sizes: an empty view of input (so that autograd
        # still connects the result to input, with a zero gradient).
        return reshape(slice_dim(reshape(input, (-1,)), 0, 0, 0, 1), index._shape)
    out = empty_tensor(index._shape, input._dtype, input._device)
    GATHER.lookup(keyset(input, index))(out, input, d, index)
    return out


def scatter_(self: Tensor, dim, index: Tensor, src=None, *, value=None, reduce=None) -> Tensor:
    d, index = _check_gather_args("scatter_", self, dim, index)
    source = value if src is None else src
    if reduce not in (None, "add", "multiply"):
        raise RuntimeError(f"scatter_(): reduce argument must be either add or multiply, got {reduce!r}")
    check_no_internal_overlap("scatter_", self)
    check_no_overlap("scatter_", self, index)
    if isinstance(source, Tensor):
        check_no_overlap("scatter_", self, source)
    if isinstance(source, Tensor):
        check_same_device("scatter_", self, source)
        if index.numel() and (source.ndim != self.ndim or any(si > ss for si, ss in zip(index._shape, source._shape))):
            raise RuntimeError(f"scatter_(): Expected index {list(index._shape)} to be no larger than src {list(source._shape)}")
        source = to_dtype(source, self._dtype)
        from ..views import as_strided

        source = as_strided(source, index._shape, source._stride, source._offset)
    elif not is_number(source) and not isinstance(source, complex):
        raise TypeError("scatter_(): src must be a Tensor or a number")
    else:
        source = number_for("scatter_", source, self._dtype)
    if index.numel() == 0:
        return self  # nothing to write (and no sizes to check, as in PyTorch)
    if reduce == "multiply":
        # PyTorch's older spelling of scatter_reduce_(..., "prod") (every value sent to a place
        # multiplies it, self included); the kernels here only add.
        from .scatter_reduce import scatter_reduce_

        if not isinstance(source, Tensor):
            source = fill_(empty_tensor(index._shape, self._dtype, self._device), source)
        return scatter_reduce_(self, d, index, source, "prod")
    source_keys = (source,) if isinstance(source, Tensor) else ()
    SCATTER.lookup(keyset(self, index, *source_keys))(self, d, index, source, reduce)
    bump_version(self)
    return self


def scatter(input: Tensor, dim, index: Tensor, src=None, *, value=None, reduce=None) -> Tensor:
    return scatter_(input.clone(), dim, index, src, value=value, reduce=reduce)


def scatter_add(input: Tensor, dim, index: Tensor, src: Tensor) -> Tensor:
    return scatter_(input.clone(), dim, index, src, reduce="add")


def index_select(input: Tensor, dim, index: Tensor, *, out=None) -> Tensor:
    if out is not None:
        rehearse_out(index_select, locals())
    if out is not None:
        return write_out("index_select", out, index_select(input, dim, index), exact_dtype=True)
    if not isinstance(index, Tensor) or index.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    if index._dtype not in (_dt.int64, _dt.int32):
        raise RuntimeError(f"index_select(): Expected dtype int32/int64 for index, but got {index._dtype.name}")
    d = normalize_dim("index_select", dim, input.ndim)
    idx = to_dtype(reshape(index, (-1,)), _dt.int64)
    check_index_range("index_select", idx, input._shape[d] if input.ndim else 1, d)
    return getitem(input, (slice(None),) * d + (idx,))


def take(input: Tensor, index: Tensor) -> Tensor:
    if isinstance(index, Tensor) and index._dtype is not _dt.int64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got {index._dtype.name}")
    return getitem(reshape(input, (-1,)), index)


def nonzero(input: Tensor, *, out=None, as_tuple: bool = False):
    """Coordinates of the non-zero elements, in row-major order.

    Composite: positions come from a cumulative sum of the mask, and each non-zero element
    scatters its flat index to its position; a backend needs no dedicated kernel.
    """
    if out is not None:
        rehearse_out(nonzero, locals())
        if as_tuple:
            raise RuntimeError("nonzero(): out= is not supported with as_tuple=True (the result is a tuple of tensors)")
        # Indices are int64 and only int64: PyTorch refuses any other out= dtype. Checked before
        # computing, which the rehearsal cannot do here (the result's shape depends on values).
        check_exact_dtype("nonzero", out, _dt.int64)
        return write_out("nonzero", out, nonzero(input))
    from ..factories import arange
    from .elementwise import BINARY, COMPARE, where
    from .reductions import cumsum

    refuse_data_dependent("nonzero()", input)
    flat = reshape(input, (-1,))
    mask = COMPARE["ne"](flat, 0) if flat._dtype is not _dt.bool else flat
    positions = BINARY["sub"](cumsum(mask, 0), 1)
    count = int(positions[-1].item()) + 1 if flat._shape[0] else 0
    slots = fill_(empty_tensor((count + 1,), _dt.int64, input._device), 0)
    target = where(mask, positions, count)
    scatter_(slots, 0, target, arange(flat._shape[0], device=input._device))
    flat_indices = slots[:count]
    coords, remaining = [], flat_indices
    for size in reversed(input._shape):
        coords.append(BINARY["remainder"](remaining, size) if size else remaining)
        remaining = BINARY["floor_divide"](remaining, size) if size else remaining
    coords.reverse()
    if as_tuple:
        return tuple(coords) if input.ndim else (flat_indices,)
    from .joining import stack

    return stack(coords, 1) if coords else empty_tensor((count, 0), _dt.int64, input._device)


def argwhere(input: Tensor) -> Tensor:
    """The coordinates of the non-zero elements, one row each, in row-major order (``nonzero``
    as one ``(count, ndim)`` int64 tensor; a 0-d input gives ``(1, 0)`` or ``(0, 0)``).

    >>> tp.argwhere(tp.tensor([[1, 0], [0, 2]])).tolist()
    [[0, 0], [1, 1]]
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"argwhere(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    refuse_data_dependent("argwhere()", input)
    return nonzero(input)
