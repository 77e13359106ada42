"""tp.distributions.constraints, each distribution's arg_constraints/support, and argument
validation (messages, the event-shape and broadcast checks, set_default_validate_args), against
literal expectations and PyTorch 2.13 where installed (issue 13)."""
import math

import numpy as np
import pytest

import tensorplug as tp
from tensorplug import distributions as D
from tensorplug.distributions import constraints as C

NAMED = {  # name -> (repr, event_dim, is_discrete), as PyTorch 2.13 prints them
    "boolean": ("Boolean()", 0, True), "real": ("Real()", 0, False),
    "positive": ("GreaterThan(lower_bound=0.0)", 0, False), "nonnegative": ("GreaterThanEq(lower_bound=0.0)", 0, False),
    "unit_interval": ("Interval(lower_bound=0.0, upper_bound=1.0)", 0, False),
    "nonnegative_integer": ("IntegerGreaterThan(lower_bound=0)", 0, True),
    "positive_integer": ("IntegerGreaterThan(lower_bound=1)", 0, True),
    "simplex": ("Simplex()", 1, False), "one_hot": ("OneHot()", 1, True),
    "real_vector": ("IndependentConstraint(Real(), 1)", 1, False),
    "lower_cholesky": ("LowerCholesky()", 2, False), "lower_triangular": ("LowerTriangular()", 2, False),
    "corr_cholesky": ("CorrCholesky()", 2, False), "positive_definite": ("PositiveDefinite()", 2, False),
    "positive_semidefinite": ("PositiveSemidefinite()", 2, False), "square": ("Square()", 2, False),
    "symmetric": ("Symmetric()", 2, False),
}


@pytest.mark.parametrize("name", sorted(NAMED))
def test_named_constraints_print_and_shape_as_pytorch(name):
    """repr, event_dim and is_discrete of every ready-made constraint."""
    shown, event_dim, discrete = NAMED[name]
    constraint = getattr(C, name)
    assert (repr(constraint), constraint.event_dim, constraint.is_discrete) == (shown, event_dim, discrete)


def test_public_names_match_pytorch():
    torch = pytest.importorskip("torch")
    assert sorted(C.__all__) == sorted(torch.distributions.constraints.__all__)


def _bools(t):
    return t.cpu().numpy().tolist()


def test_checks_on_values():
    """check() answers per event: NaN is not real, integers, the simplex's tolerance, matrices."""
    t = tp.tensor
    assert _bools(C.real.check(t([1.0, math.nan, math.inf]))) == [True, False, True]
    assert _bools(C.positive.check(t([1.0, 0.0, -1.0]))) == [True, False, False]
    assert _bools(C.nonnegative.check(t([1.0, 0.0, -1.0]))) == [True, True, False]
    assert _bools(C.unit_interval.check(t([0.0, 1.0, 1.5]))) == [True, True, False]
    assert _bools(C.half_open_interval(0.0, 1.0).check(t([0.0, 1.0]))) == [True, False]
    assert _bools(C.greater_than(2).check(t([2.0, 3.0]))) == [False, True]
    assert _bools(C.greater_than_eq(2).check(t([2.0, 1.0]))) == [True, False]
    assert _bools(C.less_than(2).check(t([1.0, 2.0]))) == [True, False]
    assert _bools(C.boolean.check(t([0, 1, 2]))) == [True, True, False]
    assert _bools(C.nonnegative_integer.check(t([0.0, 1.5, -1.0, 3.0]))) == [True, False, False, True]
    assert _bools(C.integer_interval(0, 3).check(t([0, 3, 4]))) == [True, True, False]
    assert _bools(C.simplex.check(t([[0.5, 0.5], [0.2, 0.3], [1.5, -0.5]]))) == [True, False, False]
    assert _bools(C.one_hot.check(t([[0.0, 1.0], [1.0, 1.0]]))) == [True, False]
    assert _bools(C.multinomial(3).check(t([[1.0, 2.0], [2.0, 2.0]]))) == [True, False]
    assert _bools(C.real_vector.check(t([[1.0, 2.0], [1.0, math.nan]]))) == [True, False]
    assert _bools(C.independent(C.positive, 2).check(tp.ones(4, 2, 3))) == [True] * 4
    matrices = tp.stack([tp.eye(2), -tp.eye(2), tp.tensor([[1.0, 2.0], [0.0, 1.0]])])
    assert _bools(C.lower_cholesky.check(matrices)) == [True, False, False]
    assert _bools(C.lower_triangular.check(matrices)) == [True, True, False]
    assert _bools(C.symmetric.check(matrices)) == [True, True, False]
    assert _bools(C.positive_definite.check(matrices)) == [True, False, False]
    assert _bools(C.positive_definite.check(matrices[:2])) == [True, False]
    assert _bools(C.positive_semidefinite.check(tp.zeros(1, 2, 2))) == [True]
    assert _bools(C.corr_cholesky.check(tp.eye(3))) is True
    assert _bools(C.square.check(tp.ones(2, 3))) is False
    assert _bools(C.cat([C.real, C.positive], 0, [1, 2]).check(t([-1.0, 1.0, -1.0]))) == [True, True, False]
    assert _bools(C.stack([C.real, C.positive], 1).check(t([[-1.0, 1.0], [1.0, -1.0]]))) == [[True, True], [True, False]]
    with pytest.raises(ValueError, match=r"Expected value.dim\(\) >= 2 but got 1"):
        C.independent(C.real, 2).check(tp.ones(3))


def test_dependent_constraints():
    """dependent cannot check; dependent_property is a property on instances and a dependent
    constraint on the class."""
    assert C.is_dependent(C.dependent) and not C.is_dependent(C.real)
    with pytest.raises(ValueError, match="Cannot determine validity of dependent constraint"):
        C.dependent.check(tp.ones(1))
    with pytest.raises(NotImplementedError, match="event_dim cannot be determined statically"):
        C.dependent.event_dim
    assert C.dependent(is_discrete=True, event_dim=1).event_dim == 1

    class Holder:
        @C.dependent_property(is_discrete=False, event_dim=0)
        def support(self):
            return C.positive

    assert C.is_dependent(Holder.support) and Holder.support.event_dim == 0
    assert repr(Holder.support) == "DependentProperty()" and Holder().support is C.positive


def _examples():
    """One instance of every distribution, made in tensorplug."""
    return {
        "Normal": D.Normal(tp.zeros(2), tp.ones(2)), "Laplace": D.Laplace(0.0, 1.0),
        "Bernoulli": D.Bernoulli(probs=tp.tensor([0.3])), "Categorical": D.Categorical(probs=tp.tensor([0.2, 0.8])),
        "OneHotCategorical": D.OneHotCategorical(probs=tp.tensor([0.2, 0.8])), "Uniform": D.Uniform(0.0, 2.0),
        "MultivariateNormal": D.MultivariateNormal(tp.zeros(2), tp.eye(2)), "Exponential": D.Exponential(1.0),
        "Poisson": D.Poisson(2.0), "Gamma": D.Gamma(2.0, 1.0), "Beta": D.Beta(2.0, 3.0),
        "Dirichlet": D.Dirichlet(tp.ones(3)),
        "Independent": D.Independent(D.Normal(tp.zeros(3), tp.ones(3)), 1),
        "MixtureSameFamily": D.MixtureSameFamily(D.Categorical(probs=tp.ones(2) / 2), D.Normal(tp.zeros(2), 1.0)),
        "TransformedDistribution": D.TransformedDistribution(D.Normal(0.0, 1.0), [D.ExpTransform()]),
    }


@pytest.mark.parametrize("name", sorted(_examples()))
def test_distribution_constraints_match_pytorch(name):
    """arg_constraints, support, has_rsample and has_enumerate_support print as PyTorch's for the
    same distribution."""
    torch = pytest.importorskip("torch")
    TD = torch.distributions
    theirs = {
        "Normal": TD.Normal(torch.zeros(2), torch.ones(2)), "Laplace": TD.Laplace(0.0, 1.0),
        "Bernoulli": TD.Bernoulli(probs=torch.tensor([0.3])), "Categorical": TD.Categorical(torch.tensor([0.2, 0.8])),
        "OneHotCategorical": TD.OneHotCategorical(torch.tensor([0.2, 0.8])), "Uniform": TD.Uniform(0.0, 2.0),
        "MultivariateNormal": TD.MultivariateNormal(torch.zeros(2), torch.eye(2)), "Exponential": TD.Exponential(1.0),
        "Poisson": TD.Poisson(2.0), "Gamma": TD.Gamma(2.0, 1.0), "Beta": TD.Beta(2.0, 3.0),
        "Dirichlet": TD.Dirichlet(torch.ones(3)),
        "Independent": TD.Independent(TD.Normal(torch.zeros(3), torch.ones(3)), 1),
        "MixtureSameFamily": TD.MixtureSameFamily(TD.Categorical(torch.ones(2) / 2), TD.Normal(torch.zeros(2), 1.0)),
        "TransformedDistribution": TD.TransformedDistribution(TD.Normal(0.0, 1.0), [TD.ExpTransform()]),
    }[name]
    ours = _examples()[name]

    def shown(constraints):
        # Tensor bounds print differently in the two libraries; the constraint kinds must agree.
        return {key: repr(value).split("(")[0] for key, value in constraints.items()}

    assert shown(ours.arg_constraints) == shown(theirs.arg_constraints)
    assert repr(ours.support).split("(tensor")[0] == repr(theirs.support).split("(tensor")[0]
    assert ours.support.event_dim == theirs.support.event_dim
    assert ours.support.is_discrete == theirs.support.is_discrete
    assert (ours.has_rsample, ours.has_enumerate_support) == (theirs.has_rsample, theirs.has_enumerate_support)


def test_samples_lie_in_the_support():
    for name, d in _examples().items():
        assert bool(d.support.check(d.sample((5,))).all()), name


def test_validation_messages():
    """The value checks of log_prob: a non-tensor, the event shape, broadcasting, the support."""
    d = D.Dirichlet(tp.ones(2, 3))
    with pytest.raises(ValueError, match="The value argument to log_prob must be a Tensor"):
        D.Exponential(tp.tensor([1.0])).log_prob(1.0)
    with pytest.raises(ValueError, match=r"The right-most size of value must match event_shape: \(2, 2\) vs \(3,\)"):
        d.log_prob(tp.ones(2, 2))
    with pytest.raises(ValueError, match=r"Value is not broadcastable with batch_shape\+event_shape: \(4, 3\) vs \(2, 3\)"):
        d.log_prob(tp.ones(4, 3) / 3)
    with pytest.raises(ValueError, match=r"within the support \(GreaterThanEq\(lower_bound=0.0\)\)"):
        D.Exponential(tp.tensor([1.0])).cdf(tp.tensor([-1.0]))
    with pytest.raises(ValueError, match=r"within the support \(Real\(\)\)"):
        D.Normal(0.0, 1.0).cdf(tp.tensor(math.nan))
    with pytest.raises(ValueError, match=r"within the support \(MixtureSameFamilyConstraint\(Interval"):
        D.MixtureSameFamily(D.Categorical(probs=tp.ones(2) / 2),
                            D.Uniform(tp.tensor([0.0, 2.0]), tp.tensor([1.0, 3.0]))).log_prob(tp.tensor(0.5))
    with pytest.raises(ValueError, match=r"within the support \(GreaterThan\(lower_bound=0.0\)\)"):
        D.TransformedDistribution(D.Normal(0.0, 1.0), [D.ExpTransform()]).log_prob(tp.tensor(-1.0))
    with pytest.raises(ValueError, match=r"Expected parameter covariance_matrix .* PositiveDefinite\(\)"):
        D.MultivariateNormal(tp.zeros(2), -tp.eye(2))
    with pytest.raises(ValueError, match=r"Expected parameter scale_tril .* LowerCholesky\(\)"):
        D.MultivariateNormal(tp.zeros(2), scale_tril=tp.ones(2, 2))
    with pytest.raises(ValueError, match=r"Expected parameter concentration .* IndependentConstraint\(GreaterThan"):
        D.Dirichlet(tp.tensor([1.0, -1.0]))
    # Uniform(0, 1) has a closed support: its upper end is in it, with probability density 0.
    assert D.Uniform(0.0, 1.0).log_prob(tp.tensor(1.0)).item() == -math.inf


def test_set_default_validate_args_turns_checks_off():
    try:
        D.Distribution.set_default_validate_args(False)
        d = D.Normal(0.0, -1.0)  # not checked
        assert not d._validate_args
        assert np.isfinite(D.Exponential(1.0).log_prob(tp.tensor(-1.0)).item())
        assert D.Normal(0.0, 1.0, validate_args=True)._validate_args
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError, match="Expected parameter scale"):
        D.Normal(0.0, -1.0)
    with pytest.raises(ValueError):
        D.Distribution.set_default_validate_args("yes")


def test_expand_keeps_the_validation_flag():
    assert not D.Normal(0.0, 1.0, validate_args=False).expand((3,))._validate_args
    with pytest.raises(ValueError, match="within the support"):
        D.Exponential(1.0).expand((2,)).log_prob(tp.tensor([-1.0, 1.0]))


def test_transform_domains():
    """Transforms name the constraints of their inputs and outputs."""
    assert repr(D.ExpTransform().codomain) == "GreaterThan(lower_bound=0.0)"
    assert repr(D.ExpTransform().inv.domain) == "GreaterThan(lower_bound=0.0)"
    assert repr(D.SigmoidTransform().codomain) == "Interval(lower_bound=0.0, upper_bound=1.0)"
    assert repr(D.TanhTransform().codomain) == "Interval(lower_bound=-1.0, upper_bound=1.0)"
    assert repr(D.AffineTransform(0.0, 2.0, event_dim=1).domain) == "IndependentConstraint(Real(), 1)"
    chain = D.ComposeTransform([D.AffineTransform(0.0, 2.0), D.ExpTransform()])
    assert repr(chain.domain) == "Real()" and repr(chain.codomain) == "GreaterThan(lower_bound=0.0)"


def test_every_name_of_torch_distributions():
    """tp.distributions has every public name torch.distributions 2.13 has."""
    torch = pytest.importorskip("torch")
    assert set(torch.distributions.__all__) <= set(D.__all__)
    assert all(hasattr(D, name) for name in D.__all__)


def test_distribution_helpers_for_subclasses():
    """sample_n warns as PyTorch's does; enumerate_support is refused where the support is not
    discrete; _get_checked_instance gives a blank instance to a subclass's expand."""
    d = D.Normal(tp.zeros(2), tp.ones(2))
    with pytest.warns(UserWarning, match=r"sample_n will be deprecated. Use .sample\(\(n,\)\) instead"):
        assert d.sample_n(3).shape == (3, 2)
    with pytest.raises(NotImplementedError, match="Normal does not implement enumerate_support"):
        d.enumerate_support()

    class Shifted(D.Normal):
        def __init__(self, loc, validate_args=None):
            super().__init__(loc, tp.ones_like(loc), validate_args=validate_args)

    with pytest.raises(NotImplementedError, match="must also define a custom .expand"):
        Shifted(tp.zeros(2))._get_checked_instance(D.Normal)
    blank = d._get_checked_instance(D.Normal)
    assert type(blank) is D.Normal and blank is not d


def test_utils_names():
    """torch.distributions.utils' helpers: the lower triangle packed row by row (any diagonal),
    lazy_property computing once, and the Euler constant."""
    from tensorplug.distributions import utils

    packed = utils.vec_to_tril_matrix(tp.arange(1.0, 7.0))
    assert _bools(packed == tp.tensor([[1.0, 0, 0], [2, 3, 0], [4, 5, 6]])) == [[True] * 3] * 3
    assert utils.tril_matrix_to_vec(packed).tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    below = utils.vec_to_tril_matrix(tp.arange(1.0, 4.0), diag=-1)
    assert below.tolist() == [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [2.0, 3.0, 0.0]]
    assert utils.tril_matrix_to_vec(below, diag=-1).tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(ValueError, match="cannot be expressed as the lower triangular part"):
        utils.vec_to_tril_matrix(tp.arange(5.0))
    assert math.isclose(utils.euler_constant, 0.5772156649015329)
    calls = []

    class Holder:
        @utils.lazy_property
        def value(self):
            calls.append(1)
            return 42

    holder = Holder()
    assert holder.value == 42 and holder.value == 42 and len(calls) == 1


def test_every_module_path_of_torch_distributions():
    """`from torch.distributions.<module> import ...` works with tensorplug for every module."""
    torch = pytest.importorskip("torch")
    import importlib
    import pkgutil

    for module in pkgutil.iter_modules(torch.distributions.__path__):
        ours = importlib.import_module(f"tensorplug.distributions.{module.name}")
        theirs = importlib.import_module(f"torch.distributions.{module.name}")
        public = [name for name in getattr(theirs, "__all__", []) if not name.startswith("_")]
        assert all(hasattr(ours, name) for name in public), module.name


def test_parameters_on_two_devices_are_refused():
    """Parameters on different devices raise at construction, naming both devices."""
    from distribution_helpers import usable_device

    other = usable_device("npdev")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        D.Gamma(tp.ones(2), tp.ones(2, device=other))
