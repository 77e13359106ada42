"""TransformedDistribution: a base distribution pushed through a chain of invertible transforms."""
from __future__ import annotations

from ..frontend.autograd.grad_mode import no_grad
from . import constraints
from .distribution import Distribution
from .transforms import ComposeTransform, Transform, sum_rightmost


class TransformedDistribution(Distribution):
    """The law of ``transforms[-1](...transforms[0](x))`` for x drawn from ``base_distribution``,
    as torch.distributions.TransformedDistribution: log_prob by the change of variables, rsample
    when the base has it. (Mean, variance and entropy have no general formula and raise.)

    >>> import tensorplug as tp
    >>> from tensorplug.distributions import Normal
    >>> from tensorplug.distributions.transforms import ExpTransform
    >>> round(TransformedDistribution(Normal(0.0, 1.0), [ExpTransform()]).log_prob(tp.tensor(1.0)).item(), 6)
    -0.918939
    """

    arg_constraints: dict = {}

    @constraints.dependent_property
    def support(self):
        if not self.transforms:
            return self.base_dist.support
        codomain = self.transforms[-1].codomain
        extra = len(self._event_shape) - codomain.event_dim
        return constraints.independent(codomain, extra) if extra > 0 else codomain

    def __init__(self, base_distribution: Distribution, transforms, validate_args=None):
        if isinstance(transforms, Transform):
            transforms = [transforms]
        elif not isinstance(transforms, list) or not all(isinstance(t, Transform) for t in transforms):
            raise ValueError(f"transforms must be a Transform or a list of Transforms, got {transforms!r}")
        self.base_dist = base_distribution
        self.transforms = transforms
        chain = ComposeTransform(transforms)
        base_shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        base_event_dim = len(base_distribution.event_shape)
        if len(base_shape) < chain.domain_event_dim:
            raise ValueError(f"base_distribution needs at least {chain.domain_event_dim} dims but got {base_shape}")
        shape = chain.forward_shape(base_shape)
        # A transform that couples more dimensions than the base's events makes those part of the event.
        event_dim = chain.codomain_event_dim + max(base_event_dim - chain.domain_event_dim, 0)
        split = len(shape) - event_dim
        super().__init__(shape[:split], shape[split:], validate_args=validate_args)

    def __repr__(self) -> str:
        return f"TransformedDistribution({self.base_dist!r}, {self.transforms!r})"

    @property
    def has_rsample(self):
        return self.base_dist.has_rsample

    def expand(self, batch_shape, _instance=None):
        batch_shape = tuple(batch_shape)
        shape = batch_shape + self._event_shape
        for transform in reversed(self.transforms):
            shape = transform.inverse_shape(shape)
        base_batch = shape[:len(shape) - len(self.base_dist.event_shape)]
        return TransformedDistribution(self.base_dist.expand(base_batch), self.transforms, validate_args=False)

    def sample(self, sample_shape=()):
        with no_grad():
            x = self.base_dist.sample(sample_shape)
            for transform in self.transforms:
                x = transform(x)
            return x

    def rsample(self, sample_shape=()):
        x = self.base_dist.rsample(sample_shape)
        for transform in self.transforms:
            x = transform(x)
        return x

    def log_prob(self, value):
        self._check_sample(value)
        event_dim = len(self._event_shape)
        log_prob = 0.0
        y = value
        for transform in reversed(self.transforms):
            x = transform.inv(y)
            event_dim += transform.domain_event_dim - transform.codomain_event_dim
            log_prob = log_prob - sum_rightmost(transform.log_abs_det_jacobian(x, y),
                                                event_dim - transform.domain_event_dim)
            y = x
        return log_prob + sum_rightmost(self.base_dist.log_prob(y), event_dim - len(self.base_dist.event_shape))

    def _monotone_sign(self):
        sign = 1
        for transform in self.transforms:
            sign = sign * transform.sign
        if not isinstance(sign, int) and not bool(((sign == 1) | (sign == -1)).all()):
            raise NotImplementedError("cdf and icdf need monotone transforms with a known sign")
        return sign

    def cdf(self, value):
        """The base's cdf at the preimage, flipped where the chain is decreasing."""
        sign = self._monotone_sign()
        for transform in reversed(self.transforms):
            value = transform.inv(value)
        probability = self.base_dist.cdf(value)
        return probability if isinstance(sign, int) and sign == 1 else sign * (probability - 0.5) + 0.5

    def icdf(self, value):
        sign = self._monotone_sign()
        if not (isinstance(sign, int) and sign == 1):
            value = sign * (value - 0.5) + 0.5
        x = self.base_dist.icdf(value)
        for transform in self.transforms:
            x = transform(x)
        return x


class NamedTransformedDistribution(TransformedDistribution):
    """A named family defined as a transform of another (LogNormal, InverseGamma, Kumaraswamy,
    LogisticNormal, the relaxed families): it prints and expands by its own parameters, not as a
    generic transformed distribution."""

    __repr__ = Distribution.__repr__
    expand = Distribution.expand
