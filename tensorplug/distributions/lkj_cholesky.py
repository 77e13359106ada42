"""LKJCholesky: the Lewandowski-Kurowicka-Joe distribution over correlation matrices, given by
their lower Cholesky factors L; the matrix density is proportional to det(L L^T)^(concentration - 1).

Draws follow the onion method in Cholesky form (Lewandowski, Kurowicka and Joe 2009): row k of L
(k = 1 .. d-1) is (sqrt(y) u, sqrt(1 - y)) with u uniform on the unit sphere of R^k and
y ~ Beta(k / 2, beta_k), beta_k = concentration + (d - 1 - k) / 2. The same construction gives
the density: each row contributes
(1 - y)^(beta_k - 1) Gamma(k/2 + beta_k) / (pi^(k/2) Gamma(beta_k)) with 1 - y = L_kk^2.
"""
from __future__ import annotations

import math

from ..frontend.autograd.grad_mode import no_grad
from ..frontend.factories import arange, randn
from ..nn import functional as F
from . import constraints
from .beta import Beta
from .distribution import Distribution


class LKJCholesky(Distribution):
    """Cholesky factors of ``dim`` x ``dim`` correlation matrices with ``concentration`` eta
    (1: uniform over correlation matrices; larger: closer to the identity), as
    torch.distributions.LKJCholesky (no rsample).

    >>> import tensorplug as tp
    >>> LKJCholesky(3, 1.0).sample().shape
    (3, 3)
    """

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim: int, concentration=1.0, validate_args=None):
        if not isinstance(dim, int) or dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}.")
        self.dim = dim
        batch_shape = self._broadcast_parameters(concentration=concentration)
        super().__init__(batch_shape, (dim, dim), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded_copy(self.dim, self.concentration.expand(tuple(batch_shape)))

    def _row_concentrations(self):
        """(k / 2, beta_k) for the rows k = 1 .. d-1, batch + (d-1,)."""
        eta = self.concentration
        rows = arange(1, self.dim, dtype=eta.dtype, device=eta.device)
        return rows / 2, eta.unsqueeze(-1) + (self.dim - 1 - rows) / 2

    def sample(self, sample_shape=()):
        if isinstance(sample_shape, int):
            sample_shape = (sample_shape,)
        shape = tuple(sample_shape) + self._batch_shape
        eta = self.concentration
        with no_grad():
            first, second = self._row_concentrations()
            y = Beta(first.expand(shape + (self.dim - 1,)), second.expand(shape + (self.dim - 1,)),
                     validate_args=False).sample()
            # Row 0 is (1, 0, ...): no off-diagonal part.
            y = F.pad(y, (1, 0), value=0.0)
            directions = randn(shape + (self.dim, self.dim), dtype=eta.dtype, device=eta.device).tril(-1)
            lengths = directions.pow(2).sum(-1, keepdim=True).sqrt()
            directions = directions / lengths.clamp(min=1e-30)
            below = directions * y.sqrt().unsqueeze(-1)
            return below + (1 - y).clamp(min=0.0).sqrt().diag_embed()

    def log_prob(self, value):
        self._check_sample(value)
        first, second = self._row_concentrations()
        rows = arange(1, self.dim, dtype=value.dtype, device=value.device)
        diagonal = value.diagonal(dim1=-2, dim2=-1)[..., 1:]
        # 2 (beta_k - 1) = 2 (eta - 1) + d - 1 - k.
        unnormalized = ((2 * (second - 1)) * diagonal.log()).sum(-1)
        log_normalizer = ((first + second).lgamma() - second.lgamma() - rows / 2 * math.log(math.pi)).sum(-1)
        return unnormalized + log_normalizer
