"""Independent: treat the rightmost batch dimensions of a distribution as event dimensions."""
from __future__ import annotations

from . import constraints
from .distribution import Distribution
from .transforms import sum_rightmost


class Independent(Distribution):
    """``base_distribution`` with its last ``reinterpreted_batch_ndims`` batch dimensions made part
    of the event, so log_prob and entropy sum over them; as torch.distributions.Independent.

    >>> import tensorplug as tp
    >>> from tensorplug.distributions import Normal
    >>> Independent(Normal(tp.zeros(3), tp.ones(3)), 1).event_shape
    (3,)
    """

    arg_constraints: dict = {}

    @constraints.dependent_property
    def support(self):
        base = self.base_dist.support
        return constraints.independent(base, self.reinterpreted_batch_ndims) if self.reinterpreted_batch_ndims else base

    def __init__(self, base_distribution: Distribution, reinterpreted_batch_ndims: int, validate_args=None):
        batch = tuple(base_distribution.batch_shape)
        if reinterpreted_batch_ndims > len(batch):
            raise ValueError("Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), "
                             f"actual {reinterpreted_batch_ndims} vs {len(batch)}")
        self.base_dist = base_distribution
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims
        split = len(batch) - reinterpreted_batch_ndims
        super().__init__(batch[:split], batch[split:] + tuple(base_distribution.event_shape),
                         validate_args=validate_args)

    def __repr__(self) -> str:
        return f"Independent({self.base_dist!r}, {self.reinterpreted_batch_ndims})"

    @property
    def has_rsample(self):
        return self.base_dist.has_rsample

    @property
    def has_enumerate_support(self):
        # Enumerating a product of supports would grow exponentially; PyTorch refuses it too.
        return False if self.reinterpreted_batch_ndims > 0 else self.base_dist.has_enumerate_support

    def expand(self, batch_shape, _instance=None):
        batch_shape = tuple(batch_shape)
        moved = self._event_shape[:self.reinterpreted_batch_ndims]
        return Independent(self.base_dist.expand(batch_shape + moved), self.reinterpreted_batch_ndims,
                           validate_args=False)

    @property
    def mean(self):
        return self.base_dist.mean

    @property
    def mode(self):
        return self.base_dist.mode

    @property
    def variance(self):
        return self.base_dist.variance

    def sample(self, sample_shape=()):
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape=()):
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value):
        return sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self):
        return sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def enumerate_support(self, expand=True):
        if self.reinterpreted_batch_ndims > 0:
            raise NotImplementedError("Enumeration over cartesian product is not implemented")
        return self.base_dist.enumerate_support(expand=expand)
