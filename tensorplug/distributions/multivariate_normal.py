"""MultivariateNormal: the Gaussian over vectors, with a mean and a covariance given as the
covariance matrix, the precision matrix or the lower Cholesky factor of the covariance."""
from __future__ import annotations

import math

from ..frontend.factories import eye, randn
from ..frontend.shapes import broadcast_shapes
from ..frontend.tensor import Tensor
from .. import linalg
from ..linalg._aliases import cholesky_inverse
from . import constraints
from .distribution import Distribution
from .location_scale import MeanAndModeAtLoc


def _precision_to_scale_tril(precision: Tensor) -> Tensor:
    """The lower Cholesky factor of precision^-1 without inverting the precision: the Cholesky
    factor of the flipped matrix, flipped back, is an upper factor U with P = U U^T, so
    L = U^-T is lower triangular with L L^T = P^-1."""
    flipped = linalg.cholesky(precision.flip((-2, -1)))
    upper_inverse = flipped.flip((-2, -1)).mT
    identity = eye(precision.shape[-1], dtype=precision.dtype, device=precision.device)
    return linalg.solve_triangular(upper_inverse, identity, upper=False)


class MultivariateNormal(MeanAndModeAtLoc, Distribution):
    """The multivariate Gaussian with mean ``loc`` (..., n) and exactly one of
    ``covariance_matrix``, ``precision_matrix`` or ``scale_tril`` (..., n, n), batch dims
    broadcast, as torch.distributions.MultivariateNormal; ``rsample`` is differentiable.

    >>> import tensorplug as tp
    >>> d = MultivariateNormal(tp.zeros(2), covariance_matrix=tp.eye(2))
    >>> round(d.log_prob(tp.zeros(2)).item(), 6)
    -1.837877
    """

    arg_constraints = {"loc": constraints.real_vector, "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        if not isinstance(loc, Tensor) or loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        if (covariance_matrix is not None) + (precision_matrix is not None) + (scale_tril is not None) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        given, name = next((m, n) for m, n in ((scale_tril, "scale_tril"), (covariance_matrix, "covariance_matrix"),
                                               (precision_matrix, "precision_matrix")) if m is not None)
        if given.dim() < 2:
            raise ValueError(f"{name} matrix must be at least two-dimensional, with optional leading batch dimensions")
        batch_shape = broadcast_shapes(tuple(given.shape[:-2]), tuple(loc.shape[:-1]))
        n = loc.shape[-1]
        self.loc = loc.expand(batch_shape + (n,))
        self._given = (name, given)
        super().__init__(batch_shape, (n,), validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        else:
            self._unbroadcasted_scale_tril = (linalg.cholesky(covariance_matrix) if covariance_matrix is not None
                                              else _precision_to_scale_tril(precision_matrix))

    def _parameters(self) -> dict:
        name, given = self._given
        return {"loc": self.loc, name: given}

    def _matrix_shape(self) -> tuple:
        return self._batch_shape + self._event_shape + self._event_shape

    @property
    def scale_tril(self) -> Tensor:
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @property
    def covariance_matrix(self) -> Tensor:
        L = self._unbroadcasted_scale_tril
        return (L @ L.mT).expand(self._matrix_shape())

    @property
    def precision_matrix(self) -> Tensor:
        return cholesky_inverse(self._unbroadcasted_scale_tril).expand(self._matrix_shape())

    @property
    def variance(self) -> Tensor:
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(self._batch_shape + self._event_shape)

    def rsample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        eps = randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + (self._unbroadcasted_scale_tril @ eps.unsqueeze(-1)).squeeze(-1)

    def _half_log_det(self) -> Tensor:
        return self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value) -> Tensor:
        self._check_sample(value)
        diff = value - self.loc
        L = self._unbroadcasted_scale_tril
        # The Mahalanobis term |L^-1 (x - mu)|^2, L broadcast against the value's batch dims.
        whitened = linalg.solve_triangular(L, diff.unsqueeze(-1), upper=False).squeeze(-1)
        mahalanobis = whitened.pow(2).sum(-1)
        n = self._event_shape[0]
        return -0.5 * (n * math.log(2 * math.pi) + mahalanobis) - self._half_log_det()

    def entropy(self) -> Tensor:
        n = self._event_shape[0]
        entropy = 0.5 * n * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return entropy.expand(self._batch_shape) if self._batch_shape else entropy
