"""biject_to / transform_to and the transforms they build (IndependentTransform,
StickBreakingTransform, SoftmaxTransform, LowerCholeskyTransform, Softplus/Power/Abs): outputs
inside the constraint, exact inverses, log |det J| against NumPy float64 finite differences, and
PyTorch 2.13's choices and values where installed (issue 13)."""
import numpy as np
import pytest

import tensorplug as tp
from tensorplug import distributions as D
from tensorplug.distributions import biject_to, constraints as C, transform_to
from distribution_helpers import to_numpy as _np, assert_close as _close

BIJECTIONS = {
    "real": C.real, "positive": C.positive, "greater_than": C.greater_than(2.0), "less_than": C.less_than(1.0),
    "unit_interval": C.unit_interval, "interval": C.interval(-1.0, 3.0), "nonnegative": C.nonnegative,
    "half_open_interval": C.half_open_interval(0.0, 2.0), "independent": C.independent(C.positive, 1),
}


@pytest.mark.parametrize("name", sorted(BIJECTIONS))
def test_bijections_land_inside_and_invert(name):
    constraint = BIJECTIONS[name]
    x = tp.tensor(np.linspace(-3, 3, 12).reshape(3, 4))
    t = biject_to(constraint)
    y = t(x)
    assert bool(constraint.check(y).all())
    _close(t.inv(y), _np(x), rtol=1e-9)
    # Elementwise maps: log |dy/dx| by central differences of the same map in float64.
    h = 1e-6
    slope = (_np(t(x + h)) - _np(t(x - h))) / (2 * h)
    expected = np.log(np.abs(slope))
    if name == "independent":
        expected = expected.sum(-1)
    np.testing.assert_allclose(_np(t.log_abs_det_jacobian(x, y)), expected, rtol=1e-6, atol=1e-8)
    assert transform_to(constraint) == t or repr(transform_to(constraint)) == repr(t)


def _stick_breaking_numpy(x):
    k = x.shape[-1] + 1
    z = 1 / (1 + np.exp(-(x - np.log(k - 1 - np.arange(k - 1)))))
    y, left = [], 1.0
    for zi in z:
        y.append(zi * left)
        left = left * (1 - zi)
    return np.array(y + [left])


def test_stick_breaking():
    """Onto the simplex; 0 goes to its centre; the inverse is exact; log |det J| of the map onto
    the first K-1 coordinates equals NumPy's finite-difference Jacobian determinant."""
    t = biject_to(C.simplex)
    assert isinstance(t, D.StickBreakingTransform)
    x = np.array([0.3, -1.0, 2.0])
    y = t(tp.tensor(x))
    _close(y, _stick_breaking_numpy(x))
    assert bool(C.simplex.check(y)) and y.shape == (4,)
    _close(t(tp.zeros(3, dtype=tp.float64)), np.full(4, 0.25))
    _close(t.inv(y), x, rtol=1e-9)
    h = 1e-6
    jacobian = np.stack([(_stick_breaking_numpy(x + h * e)[:-1] - _stick_breaking_numpy(x - h * e)[:-1]) / (2 * h)
                         for e in np.eye(3)], 1)
    _close(t.log_abs_det_jacobian(tp.tensor(x), y), np.linalg.slogdet(jacobian)[1], rtol=1e-7)
    assert t.forward_shape((5, 3)) == (5, 4) and t.inverse_shape((5, 4)) == (5, 3)


def test_transform_to_non_bijective():
    """The simplex through softmax, Cholesky factors through an exponentiated diagonal."""
    x = np.array([[0.3, -1.0, 2.0], [0.0, 0.0, 0.0]])
    y = transform_to(C.simplex)(tp.tensor(x))
    _close(y, np.exp(x) / np.exp(x).sum(-1, keepdims=True))
    m = np.array([[0.5, 9.0], [-2.0, -1.0]])
    factor = transform_to(C.lower_cholesky)(tp.tensor(m))
    _close(factor, np.array([[np.exp(0.5), 0.0], [-2.0, np.exp(-1.0)]]))
    assert bool(C.lower_cholesky.check(factor))
    with pytest.raises(NotImplementedError, match="Cannot transform LowerCholesky constraints"):
        biject_to(C.lower_cholesky)
    with pytest.raises(NotImplementedError, match="Cannot transform Boolean constraints"):
        biject_to(C.boolean)


def test_registering_a_new_kind():
    registry = D.constraint_registry.ConstraintRegistry()

    @registry.register(C.GreaterThan)
    def _shifted_softplus(constraint):
        return D.ComposeTransform([D.SoftplusTransform(), D.AffineTransform(constraint.lower_bound, 1.0)])

    y = registry(C.greater_than(1.0))(tp.tensor([-5.0, 0.0, 5.0], dtype=tp.float64))
    _close(y, 1.0 + np.log1p(np.exp([-5.0, 0.0, 5.0])))
    with pytest.raises(TypeError, match="Constraint subclass or instance"):
        registry.register(int, _shifted_softplus)


def test_elementwise_transforms():
    """Softplus (inverse without overflow), Power and Abs, with their domains."""
    x = np.array([-30.0, -1.0, 0.5, 40.0])
    t = D.SoftplusTransform()
    y = t(tp.tensor(x))
    _close(y, np.logaddexp(0, x))
    _close(t.inv(y), x, rtol=1e-9)
    _close(t.log_abs_det_jacobian(tp.tensor(x), y), -np.logaddexp(0, -x))
    p = D.PowerTransform(tp.tensor(2.5, dtype=tp.float64))
    v = np.array([0.5, 2.0])
    _close(p(tp.tensor(v)), v ** 2.5)
    _close(p.log_abs_det_jacobian(tp.tensor(v), p(tp.tensor(v))), np.log(2.5 * v ** 1.5))
    assert repr(p.domain) == "GreaterThan(lower_bound=0.0)" and repr(D.AbsTransform().codomain) == repr(C.positive)
    assert _np(D.AbsTransform()(tp.tensor([-2.0, 3.0]))).tolist() == [2.0, 3.0]


def test_matches_torch():
    torch = pytest.importorskip("torch")
    TD = torch.distributions
    pairs = [(C.positive, TD.constraints.positive), (C.interval(-1.0, 3.0), TD.constraints.interval(-1.0, 3.0)),
             (C.unit_interval, TD.constraints.unit_interval), (C.simplex, TD.constraints.simplex),
             (C.independent(C.positive, 1), TD.constraints.independent(TD.constraints.positive, 1)),
             (C.less_than(1.0), TD.constraints.less_than(1.0))]
    x = np.array([[0.3, -1.0, 2.0]])
    for ours, theirs in pairs:
        for registry, torch_registry in ((biject_to, TD.biject_to), (transform_to, TD.transform_to)):
            a, b = registry(ours), torch_registry(theirs)
            assert type(a).__name__ == type(b).__name__
            _close(a(tp.tensor(x)), b(torch.tensor(x)).numpy())
            if registry is biject_to:
                _close(a.log_abs_det_jacobian(tp.tensor(x), a(tp.tensor(x))),
                       b.log_abs_det_jacobian(torch.tensor(x), b(torch.tensor(x))).numpy())


def test_reshape_cdf_and_positive_definite_transforms():
    """ReshapeTransform moves event dims (log |det J| = 0); the cdf transform is scipy's norm.cdf
    with log |det J| its logpdf; PositiveDefiniteTransform is L L^T of the exponentiated-diagonal factor."""
    stats = pytest.importorskip("scipy.stats")
    r = D.ReshapeTransform((2, 3), (6,))
    x = tp.tensor(np.arange(24.0).reshape(4, 2, 3))
    assert r(x).shape == (4, 6) and _np(r.inv(r(x))).tolist() == _np(x).tolist()
    assert _np(r.log_abs_det_jacobian(x, r(x))).tolist() == [0.0] * 4
    assert r.forward_shape((5, 2, 3)) == (5, 6) and r.inverse_shape((5, 6)) == (5, 2, 3)
    assert (r.domain.event_dim, r.codomain.event_dim) == (2, 1)
    with pytest.raises(ValueError, match="in_shape, out_shape have different numbers of elements"):
        D.ReshapeTransform((2, 3), (5,))
    c = D.CumulativeDistributionTransform(D.Normal(tp.tensor(0.5, dtype=tp.float64), tp.tensor(2.0, dtype=tp.float64)))
    v = np.array([-1.0, 0.5, 3.0])
    y = c(tp.tensor(v))
    _close(y, stats.norm(0.5, 2.0).cdf(v))
    _close(c.log_abs_det_jacobian(tp.tensor(v), y), stats.norm(0.5, 2.0).logpdf(v))
    _close(c.inv(y), v, rtol=1e-9)
    m = np.array([[0.5, 9.0], [-2.0, -1.0]])
    factor = np.array([[np.exp(0.5), 0.0], [-2.0, np.exp(-1.0)]])
    p = transform_to(C.positive_definite)
    _close(p(tp.tensor(m)), factor @ factor.T)
    assert bool(C.positive_definite.check(p(tp.tensor(m))))
    _close(p.inv(p(tp.tensor(m))), np.array([[0.5, 0.0], [-2.0, -1.0]]), rtol=1e-9)


def test_transforms_module_names():
    """Every transform PyTorch 2.13 has, importable from tp.distributions.transforms."""
    torch = pytest.importorskip("torch")
    assert set(torch.distributions.transforms.__all__) <= set(D.transforms.__all__)
    for name in D.transforms.__all__:
        assert hasattr(D.transforms, name)


def test_cat_and_stack_transforms():
    """Parts applied to slices (Cat) or indices (Stack): values, inverses and log |det J| from the
    parts' own formulas in NumPy; biject_to of cat/stack constraints builds them."""
    x = np.array([[0.3, -1.0, 2.0], [0.5, 0.1, -0.2]])
    sigmoid = 1 / (1 + np.exp(-x))
    log_sigmoid_slope = np.log(sigmoid * (1 - sigmoid))
    c = D.CatTransform([D.ExpTransform(), D.identity_transform, D.SigmoidTransform()], dim=1, lengths=[1, 1, 1])
    y = c(tp.tensor(x))
    _close(y, np.stack([np.exp(x[:, 0]), x[:, 1], sigmoid[:, 2]], 1))
    _close(c.inv(y), x, rtol=1e-9)
    # dim 1 is a batch dim here (event_dim 0): the parts' terms sit side by side.
    _close(c.log_abs_det_jacobian(tp.tensor(x), y), np.stack([x[:, 0], 0 * x[:, 1], log_sigmoid_slope[:, 2]], 1))
    c_event = D.CatTransform([D.IndependentTransform(D.ExpTransform(), 1),
                              D.IndependentTransform(D.SigmoidTransform(), 1)], dim=-1, lengths=[1, 2])
    _close(c_event.log_abs_det_jacobian(tp.tensor(x), c_event(tp.tensor(x))),
           x[:, 0] + log_sigmoid_slope[:, 1:].sum(-1))
    s = D.StackTransform([D.ExpTransform(), D.SigmoidTransform()], dim=0)
    y = s(tp.tensor(x))
    _close(y, np.stack([np.exp(x[0]), sigmoid[1]]))
    _close(s.inv(y), x, rtol=1e-9)
    _close(s.log_abs_det_jacobian(tp.tensor(x), y), np.stack([x[0], log_sigmoid_slope[1]]))
    with pytest.raises(ValueError, match="lengths"):
        c(tp.zeros(2, 4, dtype=tp.float64))
    t = biject_to(C.cat([C.real, C.positive], 0, [1, 2]))
    assert isinstance(t, D.CatTransform)
    assert bool(C.cat([C.real, C.positive], 0, [1, 2]).check(t(tp.tensor([-1.0, -2.0, 3.0]))).all())
    assert isinstance(transform_to(C.stack([C.real, C.positive], 0)), D.StackTransform)
