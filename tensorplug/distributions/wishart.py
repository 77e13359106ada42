"""Wishart: the distribution of sums of df outer products x x^T of Gaussian vectors with
covariance S, over positive definite p x p matrices (the conjugate prior of a Gaussian precision).

Draws use Bartlett's decomposition: X = L A A^T L^T with L the Cholesky factor of S and A lower
triangular, A_ii = sqrt(chi2(df - i)) and A_ij ~ N(0, 1) below the diagonal, so they are
differentiable in S and (through the Gamma draws, implicitly) in df.
"""
from __future__ import annotations

import math
import warnings

from ..frontend.factories import arange, randn
from ..frontend.shapes import broadcast_shapes
from ..frontend.tensor import Tensor
from ..frontend.ops.elementwise import where
from ..frontend.ops.zeta_functions import multigammaln
from .. import linalg
from ..linalg._aliases import cholesky_inverse
from . import constraints
from .exp_family import ExponentialFamily
from .multivariate_normal import _precision_to_scale_tril
from .standard_gamma import differentiable_standard_gamma
from .utils import broadcast_all


def _multidigamma(a: Tensor, p: int) -> Tensor:
    """sum_{i<p} digamma(a - i / 2), the derivative of multigammaln(a, p)."""
    return sum((a - i / 2).digamma() for i in range(p))


class Wishart(ExponentialFamily):
    """Wishart distributions with degrees of freedom ``df`` (> p - 1) and exactly one of
    ``covariance_matrix``, ``precision_matrix`` or ``scale_tril`` of the scale (..., p, p), batch
    dims broadcast, as torch.distributions.Wishart; ``rsample`` is differentiable.

    >>> import tensorplug as tp
    >>> Wishart(tp.tensor(3.0), covariance_matrix=tp.eye(2)).mean.tolist()
    [[3.0, 0.0], [0.0, 3.0]]
    """

    support = constraints.positive_definite
    has_rsample = True

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        given = [(name, m) for name, m in (("covariance_matrix", covariance_matrix),
                                           ("precision_matrix", precision_matrix), ("scale_tril", scale_tril))
                 if m is not None]
        if len(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        name, matrix = given[0]
        if not isinstance(matrix, Tensor) or matrix.dim() < 2:
            raise ValueError(f"{name} must be at least two-dimensional, with optional leading batch dimensions")
        p = matrix.shape[-1]
        if matrix.shape[-2] != p:
            raise ValueError(f"{name} must be a batch of square matrices, got shape {tuple(matrix.shape)}")
        (df,) = broadcast_all(df) if isinstance(df, Tensor) else broadcast_all(float(df))
        df = df.to(matrix.dtype)
        if bool((df <= p - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        if bool((df < p).any()):
            warnings.warn("Low df values detected. Singular samples are highly likely to occur for "
                          "ndim - 1 < df < ndim.", UserWarning, stacklevel=2)
        batch = broadcast_shapes(tuple(df.shape), tuple(matrix.shape[:-2]))
        self.df = df.expand(batch)
        self._given = (name, matrix)
        self._p = p
        super().__init__(batch, (p, p), validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)

    @property
    def arg_constraints(self):
        return {"covariance_matrix": constraints.positive_definite,
                "precision_matrix": constraints.positive_definite,
                "scale_tril": constraints.lower_cholesky,
                "df": constraints.greater_than(self._p - 1)}

    def _parameters(self) -> dict:
        name, matrix = self._given
        return {"df": self.df, name: matrix}

    def expand(self, batch_shape, _instance=None):
        batch_shape = tuple(batch_shape)
        name, matrix = self._given
        expanded_matrix = {name: matrix.expand(batch_shape + (self._p, self._p))}
        return self._expanded_copy(self.df.expand(batch_shape), **expanded_matrix)

    def _matrix_shape(self) -> tuple:
        return self._batch_shape + self._event_shape

    @property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return (L @ L.mT).expand(self._matrix_shape())

    @property
    def precision_matrix(self):
        return cholesky_inverse(self._unbroadcasted_scale_tril).expand(self._matrix_shape())

    def _df_matrix(self):
        return self.df.unsqueeze(-1).unsqueeze(-1)

    @property
    def mean(self):
        return self._df_matrix() * self.covariance_matrix

    @property
    def mode(self):
        excess = self._df_matrix() - self._p - 1
        return where(excess > 0, excess * self.covariance_matrix, math.nan)

    @property
    def variance(self):
        covariance = self.covariance_matrix
        diagonal = covariance.diagonal(dim1=-2, dim2=-1)
        return self._df_matrix() * (covariance.pow(2) + diagonal.unsqueeze(-1) * diagonal.unsqueeze(-2))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        batch = shape[:-2]
        p = self._p
        dtype, device = self.df.dtype, self.df.device
        # Bartlett: A_ii^2 ~ chi2(df - i) = 2 Gamma((df - i) / 2, 1); N(0, 1) below the diagonal.
        offsets = arange(p, dtype=dtype, device=device)
        halves = (0.5 * (self.df.unsqueeze(-1) - offsets)).expand(batch + (p,))
        diagonal = (2 * differentiable_standard_gamma(halves)).sqrt()
        noise = randn(batch + (p, p), dtype=dtype, device=device).tril(-1)
        factor = self._unbroadcasted_scale_tril @ (noise + diagonal.diag_embed())
        return factor @ factor.mT

    def log_prob(self, value):
        self._check_sample(value)
        p, df = self._p, self.df
        L = self._unbroadcasted_scale_tril
        log_det_scale = 2 * L.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        log_det_value = 2 * linalg.cholesky(value).diagonal(dim1=-2, dim2=-1).log().sum(-1)
        # tr(S^-1 X) = |L^-1 C|_F^2 with X = C C^T.
        shape = broadcast_shapes(tuple(L.shape[:-2]), tuple(value.shape[:-2]))
        whitened = linalg.solve_triangular(L.expand(shape + (p, p)), linalg.cholesky(value).expand(shape + (p, p)),
                                           upper=False)
        trace = whitened.pow(2).sum((-2, -1))
        return (0.5 * (df - p - 1) * log_det_value - 0.5 * trace - 0.5 * df * p * math.log(2)
                - 0.5 * df * log_det_scale - multigammaln(0.5 * df, p))

    def entropy(self):
        p, df = self._p, self.df
        log_det_scale = 2 * self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return (0.5 * (p + 1) * log_det_scale + 0.5 * p * (p + 1) * math.log(2) + multigammaln(0.5 * df, p)
                - 0.5 * (df - p - 1) * _multidigamma(0.5 * df, p) + 0.5 * df * p)

    @property
    def _natural_params(self):
        return (-0.5 * self.precision_matrix, 0.5 * (self.df - self._p - 1))

    def _log_normalizer(self, x, y):
        p = self._p
        # x = -S^-1 / 2 and y = (df - p - 1) / 2, so df / 2 = y + (p + 1) / 2 and log det S = -log det(-2 x):
        # A = (df / 2) (p log 2 + log det S) + multigammaln(df / 2, p).
        half_df = y + (p + 1) / 2
        log_det_scale = -linalg.slogdet(-2 * x)[1]
        return half_df * (p * math.log(2) + log_det_scale) + multigammaln(half_df, p)

    @property
    def _mean_carrier_measure(self):
        return 0
