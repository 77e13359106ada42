"""``F.embedding(..., sparse=True)``: the rows of the weight an input picks, with a sparse COO
gradient for the weight (one entry per looked-up position, padding_idx left out, uncoalesced), as
PyTorch's ``nn.Embedding(sparse=True)`` gives it to ``optim.SparseAdam`` and ``optim.SGD``.

The gradient is sparse when the weight is a leaf (a parameter): ``.grad`` and ``autograd.grad``
then hold a :class:`tensorplug.sparse.SparseTensor`. A weight computed from other tensors gets a
dense gradient, so that no backward formula ever receives a sparse tensor (PyTorch passes a sparse
one through those formulas).
"""
from __future__ import annotations

from ..frontend.autograd import Function
from ..frontend.ops.elementwise import COMPARE
from ..frontend.tensor import Tensor

__all__ = ["sparse_embedding"]


class _SparseEmbedding(Function):
    @staticmethod
    def forward(ctx, weight: Tensor, indices: Tensor, padding_idx):
        ctx.indices, ctx.padding_idx = indices, padding_idx
        ctx.weight_shape, ctx.sparse = tuple(weight.shape), weight.grad_fn is None
        return weight.index_select(0, indices)

    @staticmethod
    def backward(ctx, grad: Tensor):
        from ..sparse import SparseTensor

        indices, values = ctx.indices, grad
        if ctx.padding_idx is not None:
            kept = COMPARE["ne"](indices, ctx.padding_idx)
            indices, values = indices[kept], values[kept]
        if not ctx.sparse:
            return values.new_zeros(ctx.weight_shape).index_add(0, indices, values), None, None
        return SparseTensor(indices.unsqueeze(0), values, ctx.weight_shape), None, None


def sparse_embedding(weight: Tensor, indices: Tensor, padding_idx) -> Tensor:
    """``weight[indices]`` for int64 ``indices`` of one dim, whose weight gradient is sparse (see above)."""
    return _SparseEmbedding.apply(weight, indices, padding_idx)
