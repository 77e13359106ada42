"""``pdist``: the p-norm distances between every pair of rows of one matrix, in the condensed
order (row i against rows i+1, i+2, ... for each i), as scipy's pdist."""
from __future__ import annotations

from ..frontend.autocast_hook import autocast_function
from ..frontend.ops.indexing import index_select
from ._activations import check_tensor
from ._normalization import _vector_norm

__all__ = ["pdist"]


@autocast_function("pdist")
def pdist(input, p=2):
    """The p-norm distance of each pair of rows of an (N, M) input: N (N - 1) / 2 values. The
    gradient at a zero distance is 0, as PyTorch's.

    >>> F.pdist(tp.tensor([[0.0, 0.0], [3.0, 4.0], [0.0, 1.0]])).tolist()
    [5.0, 1.0, 4.242640495300293]
    """
    from ..frontend.index_factories import triu_indices

    check_tensor("pdist", input)
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if not input._dtype.is_floating_point:
        raise RuntimeError(f"pdist only supports floating-point dtypes, got: {input._dtype.name}")
    if not p >= 0:
        raise RuntimeError(f"pdist only supports non-negative p values (got {p})")
    rows = input._shape[0]
    pairs = triu_indices(rows, rows, 1, device=input._device)
    difference = index_select(input, 0, pairs[0]) - index_select(input, 0, pairs[1])
    if p == 0:
        return (difference != 0).sum(1).to(input._dtype)
    return _vector_norm(difference, float(p), 1).squeeze(1)
