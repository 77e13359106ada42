"""LowRankMultivariateNormal: a Gaussian over vectors whose covariance is a low-rank part plus a
diagonal, W W^T + diag(D), evaluated through the r x r capacitance matrix I + W^T D^-1 W
(Woodbury's identity and the matrix determinant lemma) instead of the n x n covariance."""
from __future__ import annotations

import math

from ..frontend.factories import eye, randn
from ..frontend.shapes import broadcast_shapes
from ..frontend.tensor import Tensor
from .. import linalg
from . import constraints
from .distribution import Distribution
from .location_scale import MeanAndModeAtLoc


class LowRankMultivariateNormal(MeanAndModeAtLoc, Distribution):
    """The Gaussian with mean ``loc`` (..., n) and covariance
    ``cov_factor @ cov_factor.mT + diag(cov_diag)`` (cov_factor (..., n, r), cov_diag (..., n)),
    batch dims broadcast, as torch.distributions.LowRankMultivariateNormal; ``rsample`` is differentiable.

    >>> import tensorplug as tp
    >>> d = LowRankMultivariateNormal(tp.zeros(2), tp.zeros(2, 1), tp.ones(2))
    >>> round(d.log_prob(tp.zeros(2)).item(), 6)
    -1.837877
    """

    arg_constraints = {"loc": constraints.real_vector, "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        if not isinstance(loc, Tensor) or loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        n = loc.shape[-1]
        if not isinstance(cov_factor, Tensor) or cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional leading batch dimensions")
        if cov_factor.shape[-2] != n:
            raise ValueError(f"cov_factor must be a batch of matrices with shape {n} x m")
        if not isinstance(cov_diag, Tensor) or cov_diag.dim() < 1 or cov_diag.shape[-1] != n:
            raise ValueError(f"cov_diag must be a batch of vectors with shape {(n,)}")
        rank = cov_factor.shape[-1]
        try:
            batch = broadcast_shapes(tuple(loc.shape[:-1]), tuple(cov_factor.shape[:-2]), tuple(cov_diag.shape[:-1]))
        except (RuntimeError, ValueError) as error:
            raise ValueError(f"Incompatible batch shapes: loc {tuple(loc.shape)}, "
                             f"cov_factor {tuple(cov_factor.shape)}, "
                             f"cov_diag {tuple(cov_diag.shape)}") from error
        self.loc = loc.expand(batch + (n,))
        self.cov_factor = cov_factor.expand(batch + (n, rank))
        self.cov_diag = cov_diag.expand(batch + (n,))
        # Kept at the parameters' own shapes, so that batch broadcasting copies nothing.
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        super().__init__(batch, (n,), validate_args=validate_args)
        self._capacitance_tril = linalg.cholesky(self._capacitance())

    def _parameters(self) -> dict:
        return {"loc": self.loc, "cov_factor": self.cov_factor, "cov_diag": self.cov_diag}

    def _capacitance(self) -> Tensor:
        """I + W^T D^-1 W (r x r)."""
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        scaled = W / D.unsqueeze(-1)
        rank = W.shape[-1]
        return eye(rank, dtype=W.dtype, device=W.device) + W.mT @ scaled

    def _matrix_shape(self) -> tuple:
        return self._batch_shape + self._event_shape + self._event_shape

    @property
    def variance(self):
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        return (W.pow(2).sum(-1) + D).expand(self._batch_shape + self._event_shape)

    def _dense_covariance(self) -> Tensor:
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        return W @ W.mT + D.diag_embed()

    @property
    def covariance_matrix(self):
        return self._dense_covariance().expand(self._matrix_shape())

    @property
    def _unbroadcasted_scale_tril(self):
        """The Cholesky factor of the dense covariance (what MultivariateNormal's KL formula reads)."""
        return linalg.cholesky(self._dense_covariance())

    @property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @property
    def precision_matrix(self):
        # Woodbury: D^-1 - D^-1 W C^-1 W^T D^-1, with C^-1 through its Cholesky factor.
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        inverse_diag = D.reciprocal()
        half = linalg.solve_triangular(self._capacitance_tril, (W * inverse_diag.unsqueeze(-1)).mT, upper=False)
        return (inverse_diag.diag_embed() - half.mT @ half).expand(self._matrix_shape())

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        rank = self._unbroadcasted_cov_factor.shape[-1]
        dtype, device = self.loc.dtype, self.loc.device
        eps_factor = randn(shape[:-1] + (rank,), dtype=dtype, device=device)
        eps_diag = randn(shape, dtype=dtype, device=device)
        low_rank = (self._unbroadcasted_cov_factor @ eps_factor.unsqueeze(-1)).squeeze(-1)
        return self.loc + low_rank + self._unbroadcasted_cov_diag.sqrt() * eps_diag

    def _log_det(self) -> Tensor:
        """log det(W W^T + D) = log det(C) + sum log D (the matrix determinant lemma)."""
        capacitance_half = self._capacitance_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return 2 * capacitance_half + self._unbroadcasted_cov_diag.log().sum(-1)

    def log_prob(self, value):
        self._check_sample(value)
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        diff = value - self.loc
        # Woodbury: x^T S^-1 x = x^T D^-1 x - |L_C^-1 W^T D^-1 x|^2.
        scaled = diff / D
        projected = (W.mT @ scaled.unsqueeze(-1))
        capacitance = self._capacitance_tril
        shape = broadcast_shapes(tuple(projected.shape[:-2]), tuple(capacitance.shape[:-2]))
        whitened = linalg.solve_triangular(capacitance.expand(shape + tuple(capacitance.shape[-2:])),
                                           projected.expand(shape + tuple(projected.shape[-2:])), upper=False)
        mahalanobis = (diff * scaled).sum(-1) - whitened.pow(2).sum((-2, -1))
        n = self._event_shape[0]
        return -0.5 * (n * math.log(2 * math.pi) + mahalanobis + self._log_det())

    def entropy(self):
        n = self._event_shape[0]
        entropy = 0.5 * (n * (1.0 + math.log(2 * math.pi)) + self._log_det())
        return entropy.expand(self._batch_shape) if self._batch_shape else entropy
