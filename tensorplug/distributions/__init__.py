"""``tp.distributions``: probability distributions with sampling, log-densities and entropies, and
the KL divergences between them, with PyTorch's names and semantics (torch.distributions), as
composites over tensorplug ops, so they run on every device and differentiate through autograd.

What exists: Distribution, Categorical, Normal, MultivariateNormal, Bernoulli, Uniform, kl_divergence,
register_kl.
Random draws come from tensorplug's generator (Philox): the same seed gives the same samples on
every device, but not PyTorch's samples.
"""
from .bernoulli import Bernoulli
from .categorical import Categorical
from .distribution import Distribution
from .kl import kl_divergence, register_kl
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .uniform import Uniform

__all__ = [
    "Bernoulli", "Categorical", "Distribution", "MultivariateNormal", "Normal", "Uniform", "kl_divergence", "register_kl",
]
