"""``tp.distributions``: probability distributions with sampling, log-densities and entropies, and
the KL divergences between them, with PyTorch's names and semantics (torch.distributions), as
composites over tensorplug ops, so they run on every device and differentiate through autograd.

What exists: Distribution, ExponentialFamily; Normal, MultivariateNormal, LowRankMultivariateNormal, Uniform,
Exponential, Laplace, Gamma (with its cdf), Chi2, Beta, Dirichlet, LogNormal, HalfNormal, Cauchy,
HalfCauchy, StudentT, FisherSnedecor, Gumbel, Weibull, Pareto, GeneralizedPareto, InverseGamma,
Kumaraswamy, LogisticNormal, VonMises, ContinuousBernoulli, LKJCholesky, Wishart; Bernoulli, Categorical,
OneHotCategorical, OneHotCategoricalStraightThrough, Multinomial, Poisson, Geometric, Binomial,
NegativeBinomial; RelaxedBernoulli, RelaxedOneHotCategorical; Independent, MixtureSameFamily,
TransformedDistribution and the transforms; kl_divergence and register_kl; biject_to and
transform_to; and the constraints module (every distribution's ``arg_constraints`` and
``support``: parameters and log_prob values are checked against them unless
``validate_args=False``).
Random draws come from tensorplug's generator (Philox): the same seed gives the same samples on
every device, but not PyTorch's samples.
"""
from . import constraints
from . import transforms
from .bernoulli import Bernoulli
from .beta import Beta
from .binomial import Binomial
from .categorical import Categorical
from .cauchy import Cauchy
from .chi2 import Chi2
from .constraint_registry import biject_to, transform_to
from .continuous_bernoulli import ContinuousBernoulli
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .fishersnedecor import FisherSnedecor
from .gamma import Gamma
from .generalized_pareto import GeneralizedPareto
from .geometric import Geometric
from .gumbel import Gumbel
from .half_cauchy import HalfCauchy
from .half_normal import HalfNormal
from .independent import Independent
from .inverse_gamma import InverseGamma
from .kl import kl_divergence, register_kl
from .kumaraswamy import Kumaraswamy
from .laplace import Laplace
from .lkj_cholesky import LKJCholesky
from .log_normal import LogNormal
from .logistic_normal import LogisticNormal
from .lowrank_multivariate_normal import LowRankMultivariateNormal
from .mixture_same_family import MixtureSameFamily
from .multivariate_normal import MultivariateNormal
from .negative_binomial import NegativeBinomial
from .normal import Normal
from .multinomial import Multinomial
from .one_hot_categorical import OneHotCategorical, OneHotCategoricalStraightThrough
from .pareto import Pareto
from .poisson import Poisson
from .relaxed_bernoulli import LogitRelaxedBernoulli, RelaxedBernoulli
from .relaxed_categorical import ExpRelaxedCategorical, RelaxedOneHotCategorical
from .structured_transforms import (CatTransform, CorrCholeskyTransform, CumulativeDistributionTransform,
                                    IndependentTransform, LowerCholeskyTransform, PositiveDefiniteTransform,
                                    ReshapeTransform, SoftmaxTransform, StackTransform, StickBreakingTransform)
from .student_t import StudentT
from .transformed_distribution import TransformedDistribution
from .transforms import (AbsTransform, AffineTransform, ComposeTransform, ExpTransform, PowerTransform, SigmoidTransform,
                         SoftplusTransform, TanhTransform, Transform, identity_transform)
from .uniform import Uniform
from .von_mises import VonMises
from .weibull import Weibull
from .wishart import Wishart

__all__ = [
    "AbsTransform", "AffineTransform", "Bernoulli", "Beta", "Binomial", "Categorical", "CatTransform",
    "Cauchy", "Chi2", "ComposeTransform", "ContinuousBernoulli", "CorrCholeskyTransform",
    "CumulativeDistributionTransform", "Dirichlet", "Distribution", "Exponential", "ExponentialFamily",
    "ExpTransform", "FisherSnedecor", "Gamma", "GeneralizedPareto", "Geometric", "Gumbel", "HalfCauchy",
    "HalfNormal", "Independent", "IndependentTransform", "InverseGamma", "Kumaraswamy", "Laplace",
    "LKJCholesky", "LogisticNormal", "LogNormal", "LowerCholeskyTransform", "LowRankMultivariateNormal",
    "MixtureSameFamily", "Multinomial", "MultivariateNormal", "NegativeBinomial", "Normal",
    "OneHotCategorical", "OneHotCategoricalStraightThrough", "Pareto", "Poisson",
    "PositiveDefiniteTransform", "PowerTransform", "RelaxedBernoulli", "RelaxedOneHotCategorical",
    "ReshapeTransform", "SigmoidTransform", "SoftmaxTransform", "SoftplusTransform", "StackTransform",
    "StickBreakingTransform", "StudentT", "TanhTransform", "Transform", "TransformedDistribution",
    "Uniform", "VonMises", "Weibull", "Wishart", "biject_to", "constraints", "identity_transform",
    "kl_divergence", "register_kl", "transform_to", "transforms",
]
