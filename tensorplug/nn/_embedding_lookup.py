"""The rows of an embedding table an input picks, with the weight gradients PyTorch gives
``F.embedding`` and ``F.embedding_bag`` when the plain lookup's gradient is not what it wants:

* ``sparse=True``: a sparse COO gradient (one entry per looked-up position, padding_idx left out,
  uncoalesced), as ``nn.Embedding(sparse=True)`` gives it to ``optim.SparseAdam`` and
  ``optim.SGD``. The gradient is sparse when the weight is a leaf (a parameter): ``.grad`` and
  ``autograd.grad`` then hold a :class:`tensorplug.sparse.SparseTensor`. A weight computed from
  other tensors gets a dense gradient, so that no backward formula ever receives a sparse tensor
  (PyTorch passes a sparse one through those formulas).
* ``scale_grad_by_freq=True``: each position's gradient divided by the number of times its index
  occurs in the whole input (the mini-batch), so a frequent word does not get a larger step than a
  rare one. With a sparse gradient PyTorch refuses it when the backward runs, and so does this.
"""
from __future__ import annotations

from ..frontend import dtypes as _dt
from ..frontend.autograd import Function
from ..frontend.ops import copying
from ..frontend.ops.elementwise import COMPARE
from ..frontend.tensor import Tensor

__all__ = ["embedding_lookup"]


class _EmbeddingLookup(Function):
    @staticmethod
    def forward(ctx, weight: Tensor, indices: Tensor, padding_idx, sparse: bool, scale_grad_by_freq: bool):
        ctx.indices, ctx.padding_idx = indices, padding_idx
        ctx.scale_grad_by_freq = scale_grad_by_freq
        ctx.weight_shape, ctx.sparse = tuple(weight.shape), sparse and weight.grad_fn is None
        ctx.refuse_scaling = sparse and scale_grad_by_freq
        return weight.index_select(0, indices)

    @staticmethod
    def backward(ctx, grad: Tensor):
        from ..sparse import SparseTensor

        if ctx.refuse_scaling:
            # PyTorch 2.13's message; its check also runs in the backward.
            raise RuntimeError("embedding_backward: scale_grad_by_freq not supported with sparse gradients")
        indices, values = ctx.indices, grad
        if ctx.scale_grad_by_freq:
            # Occurrences of each row, counted on the device (bincount would read the range back).
            ones = indices.new_ones(indices._shape)
            occurrences = indices.new_zeros(ctx.weight_shape[:1]).index_add(0, indices, ones)
            counts = occurrences.index_select(0, indices)
            values = values * (1 / copying.to_dtype(counts, values._dtype)).unsqueeze(1)
        if ctx.padding_idx is not None:
            kept = COMPARE["ne"](indices, ctx.padding_idx)
            indices, values = indices[kept], values[kept]
        if not ctx.sparse:
            return values.new_zeros(ctx.weight_shape).index_add(0, indices, values), None, None, None, None
        return SparseTensor(indices.unsqueeze(0), values, ctx.weight_shape), None, None, None, None


def embedding_lookup(weight: Tensor, indices: Tensor, padding_idx, sparse: bool, scale_grad_by_freq: bool) -> Tensor:
    """``weight[indices]`` for int64 ``indices`` of one dim, with the weight gradient described
    above (no gradient for row ``padding_idx``)."""
    if indices._dtype is not _dt.int64:
        raise TypeError(f"embedding_lookup: indices must be int64, got {indices._dtype.name}")
    return _EmbeddingLookup.apply(weight, indices, padding_idx, sparse, scale_grad_by_freq)
