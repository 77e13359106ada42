"""tp.nn.init: gains, fans, distributions, in place and outside autograd."""
import math

import numpy as np
import pytest

import tensorplug as tp

init = tp.nn.init


def test_calculate_gain_matches_torch():
    """Gains equal torch's for every nonlinearity."""
    torch = pytest.importorskip("torch")
    for name, param in [("linear", None), ("conv2d", None), ("sigmoid", None), ("tanh", None), ("relu", None),
                        ("leaky_relu", None), ("leaky_relu", 0.2), ("selu", None)]:
        assert init.calculate_gain(name, param) == pytest.approx(torch.nn.init.calculate_gain(name, param))
    with pytest.raises(ValueError, match="Unsupported nonlinearity"):
        init.calculate_gain("swish")


def test_in_place_under_no_grad():
    """Initializers change the parameter in place, return it and record no graph."""
    w = tp.nn.Parameter(tp.empty(64, 32))
    for fn in (init.xavier_uniform_, init.xavier_normal_, init.kaiming_uniform_, init.kaiming_normal_, init.trunc_normal_,
               init.orthogonal_, init.zeros_, init.ones_, init.eye_):
        assert fn(w) is w and w.grad_fn is None and w.requires_grad


@pytest.mark.parametrize("shape", [(200, 300), (64, 16, 3, 3)])
def test_distribution_bounds_and_moments(shape):
    """Uniform schemes stay within their bound; normal schemes have the expected std."""
    fan_in = shape[1] * int(np.prod(shape[2:]))
    fan_out = shape[0] * int(np.prod(shape[2:]))
    t = tp.empty(*shape)
    bound = math.sqrt(6 / (fan_in + fan_out))
    values = init.xavier_uniform_(t).numpy()
    assert np.abs(values).max() <= bound and np.abs(values).max() > 0.95 * bound
    assert init.xavier_normal_(t, gain=2.0).numpy().std() == pytest.approx(2 * math.sqrt(2 / (fan_in + fan_out)), rel=0.05)
    values = init.kaiming_uniform_(t, a=math.sqrt(5)).numpy()
    assert np.abs(values).max() <= 1 / math.sqrt(fan_in)
    std = init.kaiming_normal_(t, mode="fan_out", nonlinearity="relu").numpy().std()
    assert std == pytest.approx(math.sqrt(2 / fan_out), rel=0.05)
    values = init.trunc_normal_(t, mean=1.0, std=2.0, a=-1.0, b=2.0).numpy()
    assert values.min() >= -1.0 and values.max() <= 2.0
    values = init.uniform_(t, -3, -2).numpy()
    assert values.min() >= -3 and values.max() <= -2
    assert init.normal_(t, 5.0, 0.1).numpy().mean() == pytest.approx(5.0, abs=0.01)
    assert set(init.constant_(t, 0.25).numpy().ravel().tolist()) == {0.25}


def test_eye_dirac_and_orthogonal():
    """eye_ is the identity, dirac_ makes an identity convolution, orthogonal_ gives Q^T Q = I."""
    assert init.eye_(tp.empty(2, 3)).tolist() == [[1, 0, 0], [0, 1, 0]]
    x = tp.randn(1, 3, 5, 5)
    w = init.dirac_(tp.empty(3, 3, 3, 3))
    np.testing.assert_allclose(tp.nn.functional.conv2d(x, w, padding=1).numpy(), x.numpy(), atol=1e-6)
    q = init.orthogonal_(tp.empty(4, 6)).numpy()
    np.testing.assert_allclose(q @ q.T, np.eye(4), atol=1e-5)


def test_fan_errors_and_seeding():
    """Fans need 2-D tensors; the same seed gives the same initialization."""
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.xavier_uniform_(tp.empty(3))
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        init.kaiming_uniform_(tp.empty(3, 3), mode="fan_avg")
    tp.manual_seed(3)
    a = tp.nn.Linear(4, 4).weight.detach().numpy()
    tp.manual_seed(3)
    np.testing.assert_array_equal(a, tp.nn.Linear(4, 4).weight.detach().numpy())
