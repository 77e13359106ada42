"""Sparse COO tensors, enough for graph networks: ``tp.sparse_coo_tensor``, ``Tensor.to_sparse``,
``tp.sparse.mm`` / ``tp.spmm`` and ``sparse @ dense``.

A sparse tensor is its indices (2 x nnz, int64), values (nnz, ...) and dense shape. Every
operation is a composite over the dense primitives (``index_select``, ``index_add``, ``nonzero``),
so it runs, and differentiates with respect to the values and the dense operand, on every
backend. Differences from PyTorch (docs/deviations.md): a sparse tensor is its own class
(``isinstance(s, tp.Tensor)`` is False; ``s.is_sparse`` and ``s.layout`` are there), and only
2-d sparse matrices with dense trailing dims on their values are supported.
"""
from __future__ import annotations

from ..frontend import dtypes as _dt
from ..frontend.tensor import Tensor

__all__ = ["SparseTensor", "sparse_coo_tensor", "mm", "spmm", "to_sparse", "sparse_coo"]

#: The layout object of sparse COO tensors (``s.layout is tp.sparse_coo``).
sparse_coo = "torch.sparse_coo"


class SparseTensor:
    """A sparse COO matrix: ``indices`` (2, nnz) int64, ``values`` (nnz, *dense dims), ``shape``."""

    is_sparse = True
    layout = sparse_coo

    def __init__(self, indices: Tensor, values: Tensor, shape: tuple, coalesced: bool = False):
        self._indices = indices
        self._values = values
        self.shape = tuple(shape)
        self._coalesced = coalesced

    # --- PyTorch's accessors ---------------------------------------------------------------
    def indices(self) -> Tensor:
        if not self._coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
        return self._indices

    def values(self) -> Tensor:
        if not self._coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call .coalesce() first")
        return self._values

    def _nnz(self) -> int:
        return self._indices.shape[1]

    def size(self, dim=None):
        return self.shape if dim is None else self.shape[dim]

    def dim(self) -> int:
        return len(self.shape)

    @property
    def dtype(self):
        return self._values.dtype

    @property
    def device(self):
        return self._values.device

    @property
    def requires_grad(self) -> bool:
        return self._values.requires_grad

    def is_coalesced(self) -> bool:
        return self._coalesced

    # --- conversions -------------------------------------------------------------------------
    def coalesce(self) -> "SparseTensor":
        """Sorted, unique indices; values at repeated indices are summed."""
        if self._coalesced:
            return self
        rows, cols = self._indices[0], self._indices[1]
        keys = rows * self.shape[1] + cols
        unique, inverse = _unique_inverse(keys)
        summed = self._values.new_zeros((unique.shape[0],) + tuple(self._values.shape[1:]))
        summed = summed.index_add(0, inverse, self._values)
        indices = _stack_rows(unique // self.shape[1], unique % self.shape[1])
        return SparseTensor(indices, summed, self.shape, coalesced=True)

    def to_dense(self) -> Tensor:
        rows, cols = self._indices[0], self._indices[1]
        flat = self._values.new_zeros((self.shape[0] * self.shape[1],) + tuple(self._values.shape[1:]))
        flat = flat.index_add(0, rows * self.shape[1] + cols, self._values)
        return flat.reshape(self.shape)

    def to(self, *args, **kwargs) -> "SparseTensor":
        return SparseTensor(self._indices.to(*args, **{k: v for k, v in kwargs.items() if k == "device"})
                            if _moves_device(args, kwargs) else self._indices,
                            self._values.to(*args, **kwargs), self.shape, self._coalesced)

    def t(self) -> "SparseTensor":
        if len(self.shape) != 2:
            raise RuntimeError("t() expects a 2-D sparse tensor")
        return SparseTensor(_stack_rows(self._indices[1], self._indices[0]), self._values, self.shape[::-1])

    def __matmul__(self, other):
        return mm(self, other)

    def __mul__(self, scalar):
        if isinstance(scalar, Tensor):
            raise TypeError("sparse * tensor is not supported; multiply by a number, or use to_dense()")
        return SparseTensor(self._indices, self._values * scalar, self.shape, self._coalesced)

    __rmul__ = __mul__

    def __repr__(self) -> str:
        return (f"tensor(indices={self._indices!r},\n       values={self._values!r},\n       size={self.shape}, "
                f"nnz={self._nnz()}, layout=torch.sparse_coo)")


def _moves_device(args, kwargs) -> bool:
    if "device" in kwargs:
        return True
    return any(not isinstance(a, _dt.dtype) for a in args)


def _stack_rows(a: Tensor, b: Tensor) -> Tensor:
    from ..frontend.ops.joining import stack

    return stack([a, b], 0)


def _unique_inverse(keys: Tensor) -> tuple:
    from .. import unique

    return unique(keys, sorted=True, return_inverse=True)


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None, requires_grad: bool = False,
                      check_invariants=None, is_coalesced=None) -> SparseTensor:
    """A sparse COO matrix with ``values[k]`` at ``indices[:, k]`` (repeated indices add up)."""
    from ..frontend.factories import tensor as make

    indices = indices if isinstance(indices, Tensor) else make(indices, dtype=_dt.int64, device=device)
    values = values if isinstance(values, Tensor) else make(values, dtype=dtype, device=device)
    if dtype is not None and values.dtype != dtype:
        values = values.to(dtype)
    if device is not None:
        indices, values = indices.to(device), values.to(device)
    if indices.dtype != _dt.int64:
        raise RuntimeError(f"sparse_coo_tensor: indices must be an int64 tensor, got {indices.dtype}")
    if indices.dim() != 2 or indices.shape[0] != 2:
        raise NotImplementedError(f"sparse_coo_tensor: only 2-d sparse matrices are supported (indices of shape "
                                  f"(2, nnz)); got indices of shape {list(indices.shape)}")
    if values.dim() < 1 or values.shape[0] != indices.shape[1]:
        raise RuntimeError(f"sparse_coo_tensor: indices hold {indices.shape[1]} entries but values have shape "
                           f"{list(values.shape)}")
    nnz = indices.shape[1]
    if size is None:
        size = tuple(int(indices[d].max()) + 1 if nnz else 0 for d in range(2))
    size = tuple(size)
    if len(size) != 2 + values.dim() - 1:
        raise RuntimeError(f"sparse_coo_tensor: size {list(size)} does not match 2 sparse dims and values of shape "
                           f"{list(values.shape)}")
    if nnz:
        low, high = int(indices.min()), [int(indices[d].max()) for d in range(2)]
        if low < 0 or high[0] >= size[0] or high[1] >= size[1]:
            raise RuntimeError(f"sparse_coo_tensor: indices out of range for size {list(size)} (min {low}, max "
                               f"{high})")
    if requires_grad:
        values = values.detach().requires_grad_(True)
    result = SparseTensor(indices, values, size[:2] + tuple(values.shape[1:]))
    return result.coalesce() if is_coalesced else result


def to_sparse(self: Tensor, sparse_dim=None) -> SparseTensor:
    """The nonzero elements of a 2-d tensor as a coalesced sparse COO matrix."""
    if self.dim() != 2:
        raise NotImplementedError(f"to_sparse: only 2-d tensors are supported, got {self.dim()}-d")
    indices = self.nonzero().t().contiguous()
    values = self[indices[0], indices[1]]
    return SparseTensor(indices, values, tuple(self.shape), coalesced=True)


def mm(sparse: SparseTensor, dense: Tensor) -> Tensor:
    """``sparse @ dense``: (n, m) sparse times (m, k) dense, differentiable in the sparse values
    and in ``dense``: out[r] += v * dense[c] for every stored (r, c, v)."""
    if not isinstance(sparse, SparseTensor):
        raise TypeError(f"sparse.mm: the first argument must be a sparse tensor, got {type(sparse).__name__}")
    if not isinstance(dense, Tensor) or dense.dim() != 2:
        raise TypeError("sparse.mm: the second argument must be a 2-d dense tensor")
    if len(sparse.shape) != 2 or sparse.shape[1] != dense.shape[0]:
        raise RuntimeError(f"sparse.mm: shapes {list(sparse.shape)} and {list(dense.shape)} cannot be multiplied")
    rows, cols = sparse._indices[0], sparse._indices[1]
    contributions = sparse._values.unsqueeze(1) * dense.index_select(0, cols)
    out = dense.new_zeros((sparse.shape[0], dense.shape[1]))
    return out.index_add(0, rows, contributions)


spmm = mm


def attach() -> None:
    Tensor.to_sparse = to_sparse
    Tensor.is_sparse = False
