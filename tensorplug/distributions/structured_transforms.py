"""Transforms over whole vectors and matrices: IndependentTransform (an elementwise transform
whose rightmost dims form one event), ReshapeTransform, StickBreakingTransform and
SoftmaxTransform (onto the simplex), LowerCholeskyTransform and PositiveDefiniteTransform (onto
Cholesky factors and covariance matrices), CorrCholeskyTransform (onto Cholesky factors of
correlation matrices), CumulativeDistributionTransform (a distribution's
cdf), and CatTransform / StackTransform (other transforms on slices of one tensor), as
torch.distributions.transforms."""
from __future__ import annotations

import math

from ..frontend.factories import arange, eye, zeros
from ..frontend.index_factories import tril_indices
from ..frontend.ops.joining import cat, stack
from ..nn import functional as F
from . import constraints
from .transforms import Transform, sum_rightmost
from .utils import finfo_eps, finfo_tiny

__all__ = [
    "CatTransform", "CorrCholeskyTransform", "CumulativeDistributionTransform", "IndependentTransform",
    "LowerCholeskyTransform", "PositiveDefiniteTransform", "ReshapeTransform", "SoftmaxTransform",
    "StackTransform", "StickBreakingTransform",
]


class IndependentTransform(Transform):
    """``base_transform`` with its last ``reinterpreted_batch_ndims`` dimensions treated as one
    event: the same map, with log |det J| summed over those dimensions."""

    def __init__(self, base_transform: Transform, reinterpreted_batch_ndims: int, cache_size: int = 0):
        super().__init__(cache_size)
        self.base_transform = base_transform
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    @property
    def bijective(self):
        return self.base_transform.bijective

    @property
    def sign(self):
        return self.base_transform.sign

    @property
    def domain_event_dim(self):
        return self.base_transform.domain_event_dim + self.reinterpreted_batch_ndims

    @property
    def codomain_event_dim(self):
        return self.base_transform.codomain_event_dim + self.reinterpreted_batch_ndims

    @property
    def domain(self):
        return constraints.independent(self.base_transform.domain, self.reinterpreted_batch_ndims)

    @property
    def codomain(self):
        return constraints.independent(self.base_transform.codomain, self.reinterpreted_batch_ndims)

    def _same_parameters(self, other) -> bool:
        return (self.reinterpreted_batch_ndims == other.reinterpreted_batch_ndims
                and self.base_transform == other.base_transform)

    def _call(self, x):
        return self.base_transform(x)

    def _inverse(self, y):
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x, y):
        return sum_rightmost(self.base_transform.log_abs_det_jacobian(x, y), self.reinterpreted_batch_ndims)

    def forward_shape(self, shape) -> tuple:
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape) -> tuple:
        return self.base_transform.inverse_shape(shape)

    def __repr__(self) -> str:
        return f"IndependentTransform({self.base_transform!r}, {self.reinterpreted_batch_ndims})"


class StickBreakingTransform(Transform):
    """R^(K-1) onto the K-simplex, bijectively: each coordinate takes the fraction
    sigmoid(x_i - log(K-1-i)) of the stick left by the previous ones (the shift maps 0 to the
    simplex's centre), and the last coordinate takes what remains."""

    domain_event_dim = 1
    codomain_event_dim = 1

    def _codomain_per_element(self):
        return constraints.simplex

    @staticmethod
    def _shift(size: int, like):
        """log(K-1-i) for i < K-1 = size."""
        return (size - arange(size, dtype=like.dtype, device=like.device)).log()

    def _call(self, x):
        fractions = (x - self._shift(x.shape[-1], x)).sigmoid()
        remaining = (1 - fractions).cumprod(-1)
        # y_i = z_i * prod_{j<i} (1 - z_j), and the last coordinate is prod_j (1 - z_j).
        taken = F.pad(fractions, (0, 1), value=1.0)
        before = F.pad(remaining, (1, 0), value=1.0)
        return taken * before

    def _inverse(self, y):
        head = y[..., :-1]
        left_before = 1 - head.cumsum(-1) + head
        fractions = (head / left_before).clamp(min=finfo_tiny(y.dtype), max=1 - finfo_eps(y.dtype))
        return fractions.log() - (-fractions).log1p() + self._shift(head.shape[-1], y)

    def log_abs_det_jacobian(self, x, y):
        # Triangular Jacobian: dy_i/dx_i = y_i (1 - z_i), with log(1 - z) = logsigmoid(shifted) - shifted.
        shifted = x - self._shift(x.shape[-1], x)
        return (F.logsigmoid(shifted) - shifted + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape) -> tuple:
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return tuple(shape[:-1]) + (shape[-1] + 1,)

    def inverse_shape(self, shape) -> tuple:
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return tuple(shape[:-1]) + (shape[-1] - 1,)


class SoftmaxTransform(Transform):
    """R^K onto the K-simplex by the softmax (not bijective: adding a constant changes nothing;
    the inverse is the logarithm)."""

    bijective = False
    domain_event_dim = 1
    codomain_event_dim = 1

    def _codomain_per_element(self):
        return constraints.simplex

    def _call(self, x):
        return F.softmax(x, dim=-1)

    def _inverse(self, y):
        return y.log()


class LowerCholeskyTransform(Transform):
    """Square matrices onto lower-triangular ones with a positive diagonal: the strictly lower
    part kept and the diagonal exponentiated (not bijective: the upper part is dropped)."""

    bijective = False
    domain_event_dim = 2
    codomain_event_dim = 2

    @property
    def codomain(self):
        return constraints.lower_cholesky

    def _call(self, x):
        return x.tril(-1) + x.diagonal(dim1=-2, dim2=-1).exp().diag_embed()

    def _inverse(self, y):
        return y.tril(-1) + y.diagonal(dim1=-2, dim2=-1).log().diag_embed()


class PositiveDefiniteTransform(Transform):
    """Square matrices onto positive definite ones: L L^T for L = LowerCholeskyTransform(x) (not
    bijective: the upper part of x is dropped)."""

    bijective = False
    domain_event_dim = 2
    codomain_event_dim = 2

    @property
    def codomain(self):
        return constraints.positive_definite

    def _call(self, x):
        factor = LowerCholeskyTransform()(x)
        return factor @ factor.mT

    def _inverse(self, y):
        from .. import linalg

        return LowerCholeskyTransform().inv(linalg.cholesky(y))


class ReshapeTransform(Transform):
    """The rightmost dims of shape ``in_shape`` reshaped to ``out_shape`` (the same number of
    elements); log |det J| is 0."""

    def __init__(self, in_shape, out_shape, cache_size: int = 0):
        self.in_shape, self.out_shape = tuple(in_shape), tuple(out_shape)
        if math.prod(self.in_shape) != math.prod(self.out_shape):
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size)

    @property
    def domain_event_dim(self):
        return len(self.in_shape)

    @property
    def codomain_event_dim(self):
        return len(self.out_shape)

    def _same_parameters(self, other) -> bool:
        return (self.in_shape, self.out_shape) == (other.in_shape, other.out_shape)

    def _call(self, x):
        batch = tuple(x.shape[:x.dim() - len(self.in_shape)])
        return x.reshape(batch + self.out_shape)

    def _inverse(self, y):
        batch = tuple(y.shape[:y.dim() - len(self.out_shape)])
        return y.reshape(batch + self.in_shape)

    def log_abs_det_jacobian(self, x, y):
        batch = tuple(x.shape[:x.dim() - len(self.in_shape)])
        return x.new_zeros(batch)

    def _resized(self, shape, old: tuple, new: tuple, direction: str) -> tuple:
        shape = tuple(shape)
        if len(shape) < len(old) or shape[len(shape) - len(old):] != old:
            raise ValueError(f"ReshapeTransform.{direction}: shape {shape} does not end in {old}")
        return shape[:len(shape) - len(old)] + new

    def forward_shape(self, shape) -> tuple:
        return self._resized(shape, self.in_shape, self.out_shape, "forward_shape")

    def inverse_shape(self, shape) -> tuple:
        return self._resized(shape, self.out_shape, self.in_shape, "inverse_shape")


class CumulativeDistributionTransform(Transform):
    """x onto [0, 1] through ``distribution.cdf`` (the probability integral transform); the
    inverse is its icdf, and log |det J| its log_prob."""

    sign = 1

    def __init__(self, distribution, cache_size: int = 0):
        super().__init__(cache_size)
        self.distribution = distribution

    @property
    def domain_event_dim(self):
        return len(self.distribution.event_shape)

    @property
    def domain(self):
        return self.distribution.support

    @property
    def codomain(self):
        return constraints.unit_interval

    def _same_parameters(self, other) -> bool:
        return self.distribution is other.distribution

    def _call(self, x):
        return self.distribution.cdf(x)

    def _inverse(self, y):
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        return self.distribution.log_prob(x)


def _matrix_size(count: int) -> int:
    """d with d (d - 1) / 2 == count; ValueError when there is none."""
    size = round((1 + math.sqrt(1 + 8 * count)) / 2)
    if size * (size - 1) // 2 != count:
        raise ValueError(f"CorrCholeskyTransform: the last dimension, {count}, is not d (d - 1) / 2 for any d")
    return size


class CorrCholeskyTransform(Transform):
    """Vectors of d (d - 1) / 2 reals onto Cholesky factors of d x d correlation matrices,
    bijectively: tanh gives the partial correlations z, placed below the diagonal row by row,
    and each row keeps unit length by stick-breaking, L_ij = z_ij sqrt(prod_{k<j} (1 - z_ik^2))
    and L_ii = sqrt(prod_{k<i} (1 - z_ik^2))."""

    domain_event_dim = 1
    codomain_event_dim = 2

    @property
    def codomain(self):
        return constraints.corr_cholesky

    @staticmethod
    def _below_diagonal(size: int, like):
        return tril_indices(size, size, -1, device=like.device)

    def _call(self, x):
        size = _matrix_size(x.shape[-1])
        rows, cols = self._below_diagonal(size, x)
        z = zeros(tuple(x.shape[:-1]) + (size, size), dtype=x.dtype, device=x.device)
        z[..., rows, cols] = x.tanh()
        # The share of each row's unit length left before column j: prod_{k<j} (1 - z_ik^2).
        left = F.pad((1 - z.pow(2)).cumprod(-1)[..., :-1], (1, 0), value=1.0)
        with_diagonal = z + eye(size, dtype=x.dtype, device=x.device)
        return with_diagonal * left.sqrt()

    def _left_before(self, y):
        """1 - sum_{k<j} L_ik^2, kept above 0."""
        used = F.pad(y.pow(2).cumsum(-1)[..., :-1], (1, 0), value=0.0)
        return (1 - used).clamp(min=finfo_tiny(y.dtype))

    def _inverse(self, y):
        size = y.shape[-1]
        rows, cols = self._below_diagonal(size, y)
        z = y / self._left_before(y).sqrt()
        bound = 1 - finfo_eps(y.dtype)
        return z[..., rows, cols].clamp(min=-bound, max=bound).atanh()

    def log_abs_det_jacobian(self, x, y):
        # Triangular Jacobian: dL_ij/dx_ij = (1 - z_ij^2) sqrt(left_ij) below the diagonal.
        size = y.shape[-1]
        rows, cols = self._below_diagonal(size, y)
        log_tanh_slope = 2.0 * (math.log(2.0) - x - F.softplus(-2.0 * x))
        log_left = self._left_before(y).log()[..., rows, cols]
        return (log_tanh_slope + 0.5 * log_left).sum(-1)

    def forward_shape(self, shape) -> tuple:
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        size = _matrix_size(shape[-1])
        return tuple(shape[:-1]) + (size, size)

    def inverse_shape(self, shape) -> tuple:
        if len(shape) < 2 or shape[-1] != shape[-2]:
            raise ValueError(f"CorrCholeskyTransform.inverse_shape: expected square matrices, got {tuple(shape)}")
        size = shape[-1]
        return tuple(shape[:-2]) + (size * (size - 1) // 2,)


class CatTransform(Transform):
    """``tseq[i]`` applied to the i-th consecutive slice (of ``lengths[i]``, 1 each by default)
    along ``dim``, the results concatenated there; each part must keep its slice's size."""

    def __init__(self, tseq, dim: int = 0, lengths=None, cache_size: int = 0):
        super().__init__(cache_size)
        self.transforms = list(tseq)
        if not all(isinstance(t, Transform) for t in self.transforms):
            raise TypeError("CatTransform expects a sequence of Transforms")
        self.lengths = [1] * len(self.transforms) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.transforms):
            raise ValueError(f"CatTransform: {len(self.transforms)} transforms but {len(self.lengths)} lengths")
        self.dim = dim

    @property
    def bijective(self):
        return all(t.bijective for t in self.transforms)

    @property
    def domain_event_dim(self):
        return max(t.domain_event_dim for t in self.transforms)

    @property
    def codomain_event_dim(self):
        return max(t.codomain_event_dim for t in self.transforms)

    @property
    def domain(self):
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @property
    def codomain(self):
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)

    def _same_parameters(self, other) -> bool:
        return (self.dim, self.lengths) == (other.dim, other.lengths) and self.transforms == other.transforms

    def _slices(self, value, name: str):
        """(transform, slice) pairs; ValueError when the lengths do not add up to the size along dim."""
        total = value.shape[self.dim]
        if sum(self.lengths) != total:
            raise ValueError(f"CatTransform: {name} has size {total} along dim {self.dim}, but the lengths "
                             f"{self.lengths} add up to {sum(self.lengths)}")
        start = 0
        for transform, length in zip(self.transforms, self.lengths):
            yield transform, value.narrow(self.dim, start, length)
            start += length

    def _call(self, x):
        return cat([t(piece) for t, piece in self._slices(x, "x")], self.dim)

    def _inverse(self, y):
        return cat([t.inv(piece) for t, piece in self._slices(y, "y")], self.dim)

    def log_abs_det_jacobian(self, x, y):
        event_dim = self.domain_event_dim
        pieces = []
        for (transform, x_piece), (_, y_piece) in zip(self._slices(x, "x"), self._slices(y, "y")):
            pieces.append(sum_rightmost(transform.log_abs_det_jacobian(x_piece, y_piece),
                                        event_dim - transform.domain_event_dim))
        # dim counted from the right of x: inside the event it was summed away, so the parts add up;
        # in the batch, the parts' terms sit side by side along it.
        from_right = self.dim - x.dim() if self.dim >= 0 else self.dim
        if from_right + event_dim < 0:
            return cat(pieces, from_right + event_dim)
        return sum(pieces)


class StackTransform(Transform):
    """``tseq[i]`` applied to index i along ``dim``, the results stacked there."""

    def __init__(self, tseq, dim: int = 0, cache_size: int = 0):
        super().__init__(cache_size)
        self.transforms = list(tseq)
        if not all(isinstance(t, Transform) for t in self.transforms):
            raise TypeError("StackTransform expects a sequence of Transforms")
        self.dim = dim

    @property
    def bijective(self):
        return all(t.bijective for t in self.transforms)

    @property
    def domain(self):
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @property
    def codomain(self):
        return constraints.stack([t.codomain for t in self.transforms], self.dim)

    def _same_parameters(self, other) -> bool:
        return self.dim == other.dim and self.transforms == other.transforms

    def _pieces(self, value, name: str):
        if value.shape[self.dim] != len(self.transforms):
            raise ValueError(f"StackTransform: {name} has size {value.shape[self.dim]} along dim {self.dim}, "
                             f"but there are {len(self.transforms)} transforms")
        return [(t, value.select(self.dim, i)) for i, t in enumerate(self.transforms)]

    def _call(self, x):
        return stack([t(piece) for t, piece in self._pieces(x, "x")], self.dim)

    def _inverse(self, y):
        return stack([t.inv(piece) for t, piece in self._pieces(y, "y")], self.dim)

    def log_abs_det_jacobian(self, x, y):
        terms = [t.log_abs_det_jacobian(x_piece, y_piece)
                 for (t, x_piece), (_, y_piece) in zip(self._pieces(x, "x"), self._pieces(y, "y"))]
        return stack(terms, self.dim)
