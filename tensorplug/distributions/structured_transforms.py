"""Transforms over whole vectors and matrices: IndependentTransform (an elementwise transform
whose rightmost dims form one event), ReshapeTransform, StickBreakingTransform and
SoftmaxTransform (onto the simplex), LowerCholeskyTransform and PositiveDefiniteTransform (onto
Cholesky factors and covariance matrices), and CumulativeDistributionTransform (a distribution's
cdf), as torch.distributions.transforms."""
from __future__ import annotations

import math

from ..frontend.factories import arange
from ..nn import functional as F
from . import constraints
from .transforms import Transform, sum_rightmost
from .utils import finfo_eps, finfo_tiny

__all__ = ["CumulativeDistributionTransform", "IndependentTransform", "LowerCholeskyTransform",
           "PositiveDefiniteTransform", "ReshapeTransform", "SoftmaxTransform", "StickBreakingTransform"]


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
