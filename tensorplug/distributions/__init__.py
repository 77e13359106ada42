"""``tp.distributions``: probability distributions with sampling, log-densities and entropies, and
the KL divergences between them, with PyTorch's names and semantics (torch.distributions), as
composites over tensorplug ops, so they run on every device and differentiate through autograd.

What exists: Distribution, Categorical, OneHotCategorical, Normal, MultivariateNormal, Bernoulli, Uniform,
Exponential, Laplace, Poisson, Gamma (with its cdf), Chi2, Beta, Dirichlet, Independent, MixtureSameFamily, TransformedDistribution (with the transforms module),
kl_divergence, register_kl, and the constraints module (every distribution's ``arg_constraints``
and ``support``; parameters and log_prob values are checked against them unless
``validate_args=False``).
Random draws come from tensorplug's generator (Philox): the same seed gives the same samples on
every device, but not PyTorch's samples.
"""
from . import constraints
from .bernoulli import Bernoulli
from .beta import Beta
from .categorical import Categorical
from .chi2 import Chi2
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exponential import Exponential
from .gamma import Gamma
from .independent import Independent
from .kl import kl_divergence, register_kl
from .laplace import Laplace
from .mixture_same_family import MixtureSameFamily
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .one_hot_categorical import OneHotCategorical
from .poisson import Poisson
from . import transforms
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, ComposeTransform, ExpTransform, SigmoidTransform, TanhTransform, Transform
from .uniform import Uniform

__all__ = [
    "Bernoulli", "Categorical", "Distribution", "Exponential", "Independent", "Laplace", "MultivariateNormal", "Normal",
    "OneHotCategorical", "Poisson", "Uniform", "kl_divergence", "register_kl",
    "TransformedDistribution", "Transform", "ExpTransform", "AffineTransform", "SigmoidTransform", "TanhTransform",
    "ComposeTransform", "transforms", "Gamma", "Beta", "Dirichlet",
    "MixtureSameFamily", "constraints", "Chi2",
]
