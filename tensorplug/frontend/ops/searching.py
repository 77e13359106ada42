"""Binary search over sorted boundaries: ``searchsorted`` and ``bucketize``, composite.

For each value the result counts the boundaries below it (``side="left"``: ``< value``;
``side="right"``: ``<= value``), which is the insertion index that keeps the boundaries sorted.
No backend needs a search kernel: small problems compare every value with every boundary and
sum; large ones sort the values together with the boundaries (the ``sort`` primitive), where a
value's position in the merged order minus its rank among the values is its count. The second
way costs O((N + M) log(N + M)) time and memory instead of O(N * M).

NaN values get the index past the last boundary, as PyTorch's binary search gives them. NaN
boundaries count as larger than every value (where ``sort`` puts them); PyTorch's answer there
depends on the search path and is not reproduced.
"""
from __future__ import annotations

from .. import dtypes as _dt
from ..shapes import numel_of
from ..tensor import Tensor
from ..views import reshape, unsqueeze
from ._common import check_same_device, is_number, write_out
from ._composite import composite
from .out_rehearsal import rehearse_out

__all__ = ["searchsorted", "bucketize"]

#: Above this many value-boundary pairs the merged sort replaces the all-pairs comparison.
PAIRWISE_LIMIT = 1 << 20


def _count_pairwise(boundaries: Tensor, values: Tensor, right: bool) -> Tensor:
    below = unsqueeze(boundaries, 1) <= unsqueeze(values, 2) if right else unsqueeze(boundaries, 1) < unsqueeze(values, 2)
    return below.sum(-1)


def _positions(order: Tensor) -> Tensor:
    """The inverse permutation of each row of ``order``: where each element landed."""
    from ..factories import arange

    rank = arange(order._shape[-1], device=order._device).expand(*order._shape)
    return order.new_zeros(order._shape).scatter(-1, order, rank)


def _count_by_merging(boundaries: Tensor, values: Tensor, right: bool) -> Tensor:
    from .joining import cat
    from .sorting import _sort

    n, m = boundaries._shape[-1], values._shape[-1]
    # A stable sort keeps the concatenation's order among equal keys: values placed first land
    # before equal boundaries (left), placed last they land after them (right).
    merged = cat([boundaries, values], -1) if right else cat([values, boundaries], -1)
    landed = _positions(_sort(merged, 1, False, True)[1])
    landed = landed[:, n:] if right else landed[:, :m]
    return landed - _positions(_sort(values, 1, False, True)[1])


@composite("searchsorted")
def _searchsorted(boundaries: Tensor, values: Tensor, right: bool, out_int32: bool) -> Tensor:
    """``boundaries`` (B, N) and ``values`` (B, M), already of one dtype: counts (B, M)."""
    from .elementwise import UNARY, where

    rows, n = boundaries._shape
    m = values._shape[1]
    if rows * n * m <= PAIRWISE_LIMIT:
        counts = _count_pairwise(boundaries, values, right)
    else:
        counts = _count_by_merging(boundaries, values, right)
    if values._dtype.is_floating_point:
        counts = where(UNARY["isnan"](values), n, counts)
    return counts.to(_dt.int32 if out_int32 else _dt.int64)


def _common_dtype(op: str, boundaries: Tensor, values: Tensor) -> _dt.dtype:
    dtype = _dt.promote_types(boundaries._dtype, values._dtype)
    if dtype is _dt.bool:
        raise RuntimeError(f"{op}(): not implemented for 'Bool' (boundaries {boundaries._dtype.name}, values {values._dtype.name})")
    return dtype


def _resolve_side(side, right: bool) -> bool:
    if side is None:
        return bool(right)
    if side not in ("left", "right"):
        raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
    if right and side == "left":
        raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of left while right was True")
    return side == "right"


def _check_sorter(sorter, boundaries: Tensor) -> None:
    if not isinstance(sorter, Tensor):
        raise TypeError(f"searchsorted(): argument 'sorter' must be Tensor, not {type(sorter).__name__}")
    if sorter._dtype is not _dt.int64:
        raise RuntimeError(f"torch.searchsorted(): sorter must be a tensor of long dtype but got dtype {sorter._dtype.name}")
    if sorter._shape != boundaries._shape:
        raise RuntimeError(f"torch.searchsorted(): boundary and sorter must have the same size, but got boundary tensor "
                           f"{list(boundaries._shape)} and got sorter tensor {list(sorter._shape)}")
    check_same_device("searchsorted", boundaries, sorter)
    n = boundaries._shape[-1]
    if sorter.numel() and (int(sorter.min().item()) < 0 or int(sorter.max().item()) >= n):
        raise RuntimeError(f"torch.searchsorted(): sorter index out of range (boundary size {n})")


def _search(op: str, boundaries, input, out_int32, right, out) -> Tensor:
    if not isinstance(boundaries, Tensor):
        raise TypeError(f"{op}(): argument 'sorted_sequence' must be Tensor, not {type(boundaries).__name__}")
    scalar = not isinstance(input, Tensor)
    if scalar:
        if not is_number(input):
            raise TypeError(f"{op}(): argument 'input' must be Tensor or Number, not {type(input).__name__}")
        if boundaries.ndim != 1:
            raise RuntimeError(f"torch.searchsorted(): input value can be a scalar only when boundaries tensor dimension is 1, "
                               f"but we got boundaries tensor dim({boundaries.ndim})")
        from ..factories import tensor

        input = tensor(input, device=boundaries._device)
    check_same_device(op, boundaries, input)
    if boundaries.ndim == 0:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should have positive dimension, but got 0 dimension")
    if boundaries.ndim > 1 and (input.ndim != boundaries.ndim or input._shape[:-1] != boundaries._shape[:-1]):
        raise RuntimeError(
            f"torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries tensor "
            f"and input value tensor must match, but we got boundaries tensor {list(boundaries._shape)} and input value "
            f"tensor {list(input._shape)}")
    dtype = _common_dtype(op, boundaries, input)
    n = boundaries._shape[-1]
    rows = numel_of(boundaries._shape[:-1])
    flat_boundaries = reshape(boundaries.to(dtype), (rows, n))
    if boundaries.ndim == 1:
        flat_values = reshape(input.to(dtype), (1, input.numel()))
    else:
        flat_values = reshape(input.to(dtype), (rows, input._shape[-1]))
    result = reshape(_searchsorted(flat_boundaries, flat_values, right, bool(out_int32)), input._shape)
    if out is not None and out._dtype is not result._dtype:
        raise RuntimeError(f"{op}(): output tensor's dtype is wrong, it can only be Int(int32) or Long(int64) depending on "
                           f"whether out_int32 flag is True, but we got output tensor's dtype {out._dtype.name} and "
                           f"out_int32 flag is {bool(out_int32)}")
    return write_out(op, out, result)


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None, out=None) -> Tensor:
    """Indices at which ``input``'s values would be inserted into ``sorted_sequence`` (sorted
    along its last dim) to keep it sorted. ``sorted_sequence`` is 1-D (searched for every
    value) or has ``input``'s leading dims (row by row). ``right=True`` (or ``side="right"``)
    gives the index after equal boundaries; ``sorter`` holds indices that sort an unsorted
    ``sorted_sequence``. int64 results, int32 with ``out_int32``.

    >>> tp.searchsorted(tp.tensor([1, 3, 5]), tp.tensor([3, 4])).tolist()
    [1, 2]
    """
    if out is not None:
        rehearse_out(searchsorted, locals())
    is_right = _resolve_side(side, right)
    if sorter is not None:
        if not isinstance(sorted_sequence, Tensor):
            raise TypeError(f"searchsorted(): argument 'sorted_sequence' must be Tensor, not {type(sorted_sequence).__name__}")
        _check_sorter(sorter, sorted_sequence)
        sorted_sequence = sorted_sequence.gather(-1, sorter)
    return _search("searchsorted", sorted_sequence, input, out_int32, is_right, out)


def bucketize(input, boundaries, *, out_int32=False, right=False, out=None) -> Tensor:
    """The bucket of each value of ``input`` among the sorted 1-D ``boundaries``:
    ``boundaries[i-1] < x <= boundaries[i]`` gives ``i`` (with ``right=True``:
    ``boundaries[i-1] <= x < boundaries[i]``).

    >>> tp.bucketize(tp.tensor([3, 4]), tp.tensor([1, 3, 5])).tolist()
    [1, 2]
    """
    if out is not None:
        rehearse_out(bucketize, locals())
    if not isinstance(boundaries, Tensor):
        raise TypeError(f"bucketize(): argument 'boundaries' must be Tensor, not {type(boundaries).__name__}")
    if boundaries.ndim != 1:
        raise RuntimeError(f"bucketize(): boundaries tensor must be 1 dimension, but got dim({boundaries.ndim})")
    return _search("bucketize", boundaries, input, out_int32, bool(right), out)
