"""Sparse COO tensors, enough for graph networks and sparse embedding gradients:
``tp.sparse_coo_tensor``, ``Tensor.to_sparse``, ``tp.sparse.mm`` / ``tp.spmm``, ``sparse @ dense``,
and the gradient ``nn.Embedding(sparse=True)`` gives its weight (for ``optim.SparseAdam``).

A sparse tensor is its indices (sparse_dim x nnz, int64), values (nnz, *dense dims) and shape
(the sparse dims, then the dense ones). Every operation is a composite over the dense primitives
(``index_select``, ``index_add``, ``nonzero``), so it runs, and differentiates with respect to the
values and the dense operand, on every backend. Differences from PyTorch (docs/deviations.md): a
sparse tensor is its own class (``isinstance(s, tp.Tensor)`` is False; ``s.is_sparse`` and
``s.layout`` are there), with the operations listed here only; ``mm``, ``t`` and ``to_sparse``
take 2-d sparse matrices. PyTorch's deprecated typed constructors (``tp.sparse.FloatTensor(indices,
values, size)``, ...) are in ``_legacy``.
"""
from __future__ import annotations

from ..frontend import dtypes as _dt
from ..frontend.tensor import Tensor
from ._invariants import check_sparse_tensor_invariants

__all__ = ["SparseTensor", "sparse_coo_tensor", "mm", "spmm", "addmm", "sum", "softmax", "log_softmax", "to_sparse",
           "check_sparse_tensor_invariants", "sparse_coo", "strided", "FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "ByteTensor",
           "CharTensor", "ShortTensor", "IntTensor", "LongTensor"]

#: The layout objects of sparse COO tensors (``s.layout is tp.sparse_coo``) and of every other
#: tensor (``t.layout is tp.strided``).
sparse_coo = "torch.sparse_coo"
strided = "torch.strided"


class SparseTensor:
    """A sparse COO tensor: ``indices`` (sparse_dim, nnz) int64, ``values`` (nnz, *dense dims), ``shape``."""

    is_sparse = True
    layout = sparse_coo
    grad_fn = None  # never the output of a recorded op (its values may be)

    def __init__(self, indices: Tensor, values: Tensor, shape: tuple, coalesced: bool = False):
        self._indices_ = indices
        self._values_ = values
        self.shape = tuple(shape)
        self._coalesced = coalesced

    # --- PyTorch's accessors ---------------------------------------------------------------
    def indices(self) -> Tensor:
        if not self._coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
        return self._indices_

    def values(self) -> Tensor:
        if not self._coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call .coalesce() first")
        return self._values_

    def _indices(self) -> Tensor:
        """The indices as stored, coalesced or not."""
        return self._indices_

    def _values(self) -> Tensor:
        """The values as stored, coalesced or not."""
        return self._values_

    def _nnz(self) -> int:
        return self._indices_.shape[1]

    def sparse_dim(self) -> int:
        return self._indices_.shape[0]

    def dense_dim(self) -> int:
        return len(self.shape) - self.sparse_dim()

    @property
    def _shape(self) -> tuple:  # what the autograd engine compares with a leaf's shape
        return self.shape

    def size(self, dim=None):
        return self.shape if dim is None else self.shape[dim]

    def dim(self) -> int:
        return len(self.shape)

    @property
    def dtype(self):
        return self._values_.dtype

    @property
    def device(self):
        return self._values_.device

    @property
    def requires_grad(self) -> bool:
        return self._values_.requires_grad

    def requires_grad_(self, requires_grad: bool = True) -> "SparseTensor":
        self._values_.requires_grad_(requires_grad)
        return self

    def is_coalesced(self) -> bool:
        return self._coalesced

    # --- conversions -------------------------------------------------------------------------
    def _keys(self) -> Tensor:
        """Each entry's position in the sparse dims flattened row-major (int64, one per entry)."""
        keys = self._indices_[0]
        for d in range(1, self.sparse_dim()):
            keys = keys * self.shape[d] + self._indices_[d]
        return keys

    def _unravel(self, keys: Tensor) -> Tensor:
        rows = []
        for d in reversed(range(1, self.sparse_dim())):
            rows.append(keys % self.shape[d])
            keys = keys // self.shape[d]
        rows.append(keys)
        return _stack_rows(list(reversed(rows)))

    def coalesce(self) -> "SparseTensor":
        """Sorted, unique indices; values at repeated indices are summed."""
        if self._coalesced:
            return self
        unique, inverse = _unique_inverse(self._keys())
        summed = self._values_.new_zeros((unique.shape[0],) + tuple(self._values_.shape[1:]))
        summed = summed.index_add(0, inverse, self._values_)
        return SparseTensor(self._unravel(unique), summed, self.shape, coalesced=True)

    def to_dense(self) -> Tensor:
        sparse_shape = self.shape[:self.sparse_dim()]
        rows = 1
        for n in sparse_shape:
            rows *= n
        flat = self._values_.new_zeros((rows,) + tuple(self._values_.shape[1:]))
        flat = flat.index_add(0, self._keys(), self._values_)
        return flat.reshape(self.shape)

    def to(self, *args, **kwargs) -> "SparseTensor":
        return SparseTensor(self._indices_.to(*args, **{k: v for k, v in kwargs.items() if k == "device"})
                            if _moves_device(args, kwargs) else self._indices_,
                            self._values_.to(*args, **kwargs), self.shape, self._coalesced)

    def cpu(self) -> "SparseTensor":
        return self if self.device.type == "cpu" else self.to("cpu")

    def cuda(self, device=None) -> "SparseTensor":
        return self.to("cuda" if device is None else device)

    def float(self) -> "SparseTensor":
        return self.to(_dt.float32)

    def double(self) -> "SparseTensor":
        return self.to(_dt.float64)

    def sum(self, dim=None, dtype=None):
        """``tp.sparse.sum(self, dim, dtype)``, as PyTorch's ``Tensor.sum`` of a sparse tensor."""
        return sum(self, dim, dtype)

    def clone(self) -> "SparseTensor":
        return SparseTensor(self._indices_.clone(), self._values_.clone(), self.shape, self._coalesced)

    def detach(self) -> "SparseTensor":
        return SparseTensor(self._indices_, self._values_.detach(), self.shape, self._coalesced)

    def zero_(self) -> "SparseTensor":
        """No entries left (the shape stays), as PyTorch's zero_ of a sparse tensor."""
        self._indices_ = self._indices_[:, :0]
        self._values_ = self._values_[:0]
        self._coalesced = True
        return self

    def t(self) -> "SparseTensor":
        if len(self.shape) != 2 or self.sparse_dim() != 2:
            raise RuntimeError("t() expects a 2-D sparse tensor")
        return SparseTensor(_stack_rows([self._indices_[1], self._indices_[0]]), self._values_, self.shape[::-1])

    def transpose(self, dim0: int, dim1: int) -> "SparseTensor":
        """Two sparse dims swapped (their index rows and sizes); the entries stay where they are,
        so the result is uncoalesced, as PyTorch's."""
        ndim = len(self.shape)
        for d in (dim0, dim1):
            if not -ndim <= d < ndim:
                raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got {d})")
        dim0, dim1 = dim0 % ndim, dim1 % ndim
        if dim0 == dim1:
            return self
        if max(dim0, dim1) >= self.sparse_dim():
            raise NotImplementedError("transpose of a sparse tensor's dense dims is not supported (to_dense() first)")
        rows = [self._indices_[d] for d in range(self.sparse_dim())]
        rows[dim0], rows[dim1] = rows[dim1], rows[dim0]
        shape = list(self.shape)
        shape[dim0], shape[dim1] = shape[dim1], shape[dim0]
        return SparseTensor(_stack_rows(rows), self._values_, tuple(shape))

    # --- arithmetic ----------------------------------------------------------------------------
    def __add__(self, other):
        """sparse + sparse keeps every entry of both (uncoalesced, as PyTorch); sparse + dense is dense."""
        if isinstance(other, Tensor):
            return self.to_dense() + other
        if not isinstance(other, SparseTensor):
            return NotImplemented
        if other.shape != self.shape or other.sparse_dim() != self.sparse_dim():
            raise RuntimeError(f"add: sparse tensors of shapes {list(self.shape)} and {list(other.shape)} (sparse dims "
                               f"{self.sparse_dim()} and {other.sparse_dim()}) cannot be added")
        from ..frontend.ops.joining import cat

        return SparseTensor(cat([self._indices_, other._indices_], 1), cat([self._values_, other._values_], 0),
                            self.shape)

    __radd__ = __add__

    def __neg__(self) -> "SparseTensor":
        return SparseTensor(self._indices_, -self._values_, self.shape, self._coalesced)

    def __matmul__(self, other):
        return mm(self, other)

    def __mul__(self, scalar):
        if isinstance(scalar, Tensor) and scalar.dim() != 0:
            raise TypeError("sparse * tensor is not supported; multiply by a number, or use to_dense()")
        return SparseTensor(self._indices_, self._values_ * scalar, self.shape, self._coalesced)

    __rmul__ = __mul__
    mul = __mul__

    def __truediv__(self, scalar):
        if isinstance(scalar, Tensor) and scalar.dim() != 0:
            raise TypeError("sparse / tensor is not supported; divide by a number, or use to_dense()")
        return SparseTensor(self._indices_, self._values_ / scalar, self.shape, self._coalesced)

    div = __truediv__

    def __repr__(self) -> str:
        return (f"tensor(indices={self._indices_!r},\n       values={self._values_!r},\n       size={self.shape}, "
                f"nnz={self._nnz()}, layout=torch.sparse_coo)")


def _moves_device(args, kwargs) -> bool:
    if "device" in kwargs:
        return True
    return any(not isinstance(a, _dt.dtype) for a in args)


def _stack_rows(rows: list) -> Tensor:
    from ..frontend.ops.joining import stack

    return stack(rows, 0)


def _unique_inverse(keys: Tensor) -> tuple:
    from .. import unique

    return unique(keys, sorted=True, return_inverse=True)


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None, pin_memory: bool = False,
                      requires_grad: bool = False, check_invariants=None, is_coalesced=None) -> SparseTensor:
    """A sparse COO tensor with ``values[k]`` at ``indices[:, k]`` (repeated indices add up): as
    many sparse dims as ``indices`` has rows, then the dense dims of ``values[k]``. ``pin_memory``
    is accepted as the dense factories accept it (host memory needs no pinning here)."""
    from ..frontend.factories import tensor as make

    if not isinstance(pin_memory, bool):
        raise TypeError(f"sparse_coo_tensor(): argument 'pin_memory' must be bool, not {type(pin_memory).__name__}")

    indices = indices if isinstance(indices, Tensor) else make(indices, dtype=_dt.int64, device=device)
    values = values if isinstance(values, Tensor) else make(values, dtype=dtype, device=device)
    if dtype is not None and values.dtype != dtype:
        values = values.to(dtype)
    if device is not None:
        indices, values = indices.to(device), values.to(device)
    if indices.dtype != _dt.int64:
        raise RuntimeError(f"sparse_coo_tensor: indices must be an int64 tensor, got {indices.dtype}")
    if indices.dim() != 2 or indices.shape[0] < 1:
        raise RuntimeError(f"sparse_coo_tensor: indices must be of shape (sparse_dim, nnz) with sparse_dim >= 1, got "
                           f"{list(indices.shape)}")
    if values.dim() < 1 or values.shape[0] != indices.shape[1]:
        raise RuntimeError(f"sparse_coo_tensor: indices hold {indices.shape[1]} entries but values have shape "
                           f"{list(values.shape)}")
    sparse_dim, nnz = indices.shape
    if size is None:
        size = tuple(int(indices[d].max()) + 1 if nnz else 0 for d in range(sparse_dim)) + tuple(values.shape[1:])
    size = tuple(size)
    if len(size) != sparse_dim + values.dim() - 1 or size[sparse_dim:] != tuple(values.shape[1:]):
        raise RuntimeError(f"sparse_coo_tensor: size {list(size)} does not match {sparse_dim} sparse dims and values of "
                           f"shape {list(values.shape)}")
    if nnz:
        low = int(indices.min())
        high = [int(indices[d].max()) for d in range(sparse_dim)]
        if low < 0 or any(h >= n for h, n in zip(high, size)):
            raise RuntimeError(f"sparse_coo_tensor: indices out of range for size {list(size)} (min {low}, max "
                               f"{high})")
    if requires_grad:
        values = values.detach().requires_grad_(True)
    result = SparseTensor(indices, values, size)
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
    if len(sparse.shape) != 2 or sparse.sparse_dim() != 2 or sparse.shape[1] != dense.shape[0]:
        raise RuntimeError(f"sparse.mm: shapes {list(sparse.shape)} and {list(dense.shape)} cannot be multiplied")
    rows, cols = sparse._indices_[0], sparse._indices_[1]
    contributions = sparse._values_.unsqueeze(1) * dense.index_select(0, cols)
    out = dense.new_zeros((sparse.shape[0], dense.shape[1]))
    return out.index_add(0, rows, contributions)


spmm = mm


def matmul(a, b, op: str = "matmul") -> Tensor:
    """``a @ b`` with one sparse operand, as ``tp.mm``/``tp.matmul`` give it: sparse @ dense
    (a 1-D dense vector too, for ``matmul``), or dense @ sparse computed as (b^T @ a^T)^T."""
    a_sparse, b_sparse = isinstance(a, SparseTensor), isinstance(b, SparseTensor)
    if a_sparse and b_sparse:
        raise NotImplementedError(f"{op}(): a product of two sparse tensors is not supported (to_dense() one of them)")
    dense = b if a_sparse else a
    if not isinstance(dense, Tensor):
        raise TypeError(f"{op}(): argument '{'other' if a_sparse else 'input'}' must be Tensor, not "
                        f"{type(dense).__name__}")
    if dense.dim() == 1 and op == "matmul":
        if a_sparse:
            return mm(a, dense.unsqueeze(1)).squeeze(1)
        return mm(b.t(), dense.unsqueeze(1)).squeeze(1)
    if dense.dim() != 2:
        raise RuntimeError(f"{op}(): a sparse operand needs a 2-D dense one, got {dense.dim()}-D")
    if a_sparse:
        return mm(a, b)
    return mm(b.t(), a.t()).t()


def addmm(mat: Tensor, mat1: SparseTensor, mat2: Tensor, *, beta=1.0, alpha=1.0) -> Tensor:
    """``beta * mat + alpha * (mat1 @ mat2)`` with ``mat1`` sparse (torch.sparse.addmm)."""
    product = mm(mat1, mat2)
    return (mat if beta == 1 else mat * beta) + (product if alpha == 1 else product * alpha)


def _softmax(input: SparseTensor, dim: int, dtype, log: bool, name: str) -> SparseTensor:
    """Softmax over ``dim`` of the stored entries only (absent entries count as -inf, as in
    PyTorch): the entries sharing every other sparse index form one group."""
    if not isinstance(input, SparseTensor):
        raise RuntimeError(f"sparse.{name}: expected a sparse COO tensor, got a strided {type(input).__name__}")
    ndim = len(input.shape)
    if not -ndim <= dim < ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got {dim})")
    dim %= ndim
    sparse_dim = input.sparse_dim()
    if dim >= sparse_dim:
        raise NotImplementedError(f"sparse.{name} over a dense dim is not supported (to_dense() first)")
    coalesced = input.coalesce()
    values = coalesced._values_ if dtype is None else coalesced._values_.to(dtype)
    if not values.dtype.is_floating_point:
        raise RuntimeError(f"sparse.{name}: expected a floating-point tensor, got {values.dtype.name}")
    group = None  # each entry's flat index over the sparse dims other than `dim`
    for d in range(sparse_dim):
        if d != dim:
            row = coalesced._indices_[d]
            group = row if group is None else group * input.shape[d] + row
    if group is None:  # a 1-D sparse tensor: one group
        group = coalesced._indices_[0] * 0
    groups = 1
    for d in range(sparse_dim):
        if d != dim:
            groups *= input.shape[d]
    shape = (groups,) + tuple(values.shape[1:])
    # The largest entry of each group is subtracted first (so exp cannot overflow); it is a
    # constant shift, which the softmax does not depend on, hence no gradient through it.
    spread = group.view((-1,) + (1,) * (values.dim() - 1)).expand(values.shape)
    maxima = values.new_full(shape, float("-inf")).scatter_reduce(0, spread, values.detach(), "amax")
    shifted = values - maxima.index_select(0, group)
    exps = shifted.exp()
    totals = values.new_zeros(shape).index_add(0, group, exps).index_select(0, group)
    result = shifted - totals.log() if log else exps / totals
    return SparseTensor(coalesced._indices_, result, input.shape, coalesced=True)


def softmax(input: SparseTensor, dim: int, *, dtype=None) -> SparseTensor:
    """Softmax over ``dim`` of the stored entries (absent ones count as -inf): a sparse graph
    attention's normalisation over each node's neighbours."""
    return _softmax(input, dim, dtype, False, "softmax")


def log_softmax(input: SparseTensor, dim: int, *, dtype=None) -> SparseTensor:
    """Log of ``sparse.softmax``, over the stored entries only."""
    return _softmax(input, dim, dtype, True, "log_softmax")


def sum(input: SparseTensor, dim=None, dtype=None):  # noqa: A001 (PyTorch's name: torch.sparse.sum)
    """The sum of a sparse tensor's entries over ``dim`` (an int or a sequence; every dim if None).

    Summing every dim, or every sparse dim, gives a dense tensor (of the dense dims left), with
    ``Tensor.sum``'s dtype rule (integers and bool give int64); a sum that leaves sparse dims gives a
    coalesced sparse tensor whose values keep their dtype, as PyTorch's. ``dtype`` converts the
    values first. Differentiable in the values, e.g. a graph's degrees: ``sparse.sum(adj, dim=1)``.
    """
    if not isinstance(input, SparseTensor):
        raise RuntimeError(f"sparse.sum: expected a sparse COO tensor, got a strided {type(input).__name__}")
    values = input._values_ if dtype is None else input._values_.to(dtype)
    if dim is None:
        return values.sum()
    ndim = len(input.shape)
    dims = []
    for d in ([dim] if isinstance(dim, int) else list(dim)):
        if not -ndim <= d < ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got {d})")
        d = d % ndim
        if d in dims:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        dims.append(d)
    if not dims:
        return input if dtype is None else SparseTensor(input._indices_, values, input.shape, input._coalesced)
    sparse_dim = input.sparse_dim()
    dense_dims = [d - sparse_dim + 1 for d in dims if d >= sparse_dim]  # dims of `values`, after nnz
    if dense_dims:
        values = values.sum(dense_dims).to(values.dtype)
    kept = [d for d in range(sparse_dim) if d not in dims]
    if not kept:
        return values.sum(0)
    kept_shape = tuple(input.shape[d] for d in kept)
    dense_shape = tuple(n for d, n in enumerate(input.shape) if d >= sparse_dim and d not in dims)
    indices = input._indices_[kept] if len(kept) < sparse_dim else input._indices_
    result = SparseTensor(indices, values, kept_shape + dense_shape, input._coalesced and len(kept) == sparse_dim)
    return result.coalesce()


# The deprecated legacy constructors (tp.sparse.FloatTensor(indices, values, size), ...), after the
# class and sparse_coo_tensor they build on.
from ._legacy import (  # noqa: E402
    BFloat16Tensor, ByteTensor, CharTensor, DoubleTensor, FloatTensor, HalfTensor, IntTensor, LongTensor, ShortTensor,
)


def attach() -> None:
    Tensor.to_sparse = to_sparse
    Tensor.is_sparse = False
    Tensor.layout = strided
