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


def test_dirac_with_groups_matches_numpy_reference(device):
    """dirac_ with groups: output channel g * (out / groups) + c passes input channel c of group g."""
    w = init.dirac_(tp.empty(6, 2, 3, 3, device=device), groups=2)
    expected = np.zeros((6, 2, 3, 3))
    for group in range(2):
        for channel in range(2):
            expected[group * 3 + channel, channel, 1, 1] = 1
    np.testing.assert_array_equal(w.cpu().numpy(), expected)
    with pytest.raises(ValueError, match="divisible by groups"):
        init.dirac_(tp.empty(4, 2, 3, 3), groups=3)


@pytest.mark.parametrize("shape,gain", [((7, 3), 1.0), ((3, 8), 2.0), ((4, 2, 3, 3), 0.5)])
def test_orthogonal_rows_or_columns_are_orthonormal(device, shape, gain):
    """The flattened weight has orthonormal columns (tall) or rows (wide), scaled by gain."""
    flat = init.orthogonal_(tp.empty(*shape, device=device), gain=gain).cpu().numpy().astype(np.float64)
    flat = flat.reshape(shape[0], -1)
    gram = flat.T @ flat if flat.shape[0] >= flat.shape[1] else flat @ flat.T
    np.testing.assert_allclose(gram, gain ** 2 * np.eye(gram.shape[0]), atol=1e-5)


def test_orthogonal_of_half_precision_weight():
    """float16 weights are drawn and factorized in float32, then rounded."""
    q = init.orthogonal_(tp.empty(5, 5, dtype=tp.float16))
    assert q.dtype == tp.float16
    values = q.numpy().astype(np.float64)
    np.testing.assert_allclose(values.T @ values, np.eye(5), atol=5e-3)


def test_sparse_zeroes_the_same_count_in_every_column(device):
    """sparse_ zeroes ceil(sparsity * rows) entries per column and draws the rest from N(0, std^2)."""
    w = init.sparse_(tp.empty(200, 30, device=device), sparsity=0.25, std=0.5).cpu().numpy()
    assert ((w == 0).sum(axis=0) == math.ceil(0.25 * 200)).all()
    assert w[w != 0].std() == pytest.approx(0.5, rel=0.1)
    with pytest.raises(ValueError, match="2 dimensions"):
        init.sparse_(tp.empty(3, 4, 5), 0.1)


def test_deprecated_names_warn_and_still_fill():
    """init.xavier_uniform (no underscore) and the others warn as PyTorch does, then initialize."""
    with pytest.warns(FutureWarning, match="nn.init.xavier_uniform_"):
        w = init.xavier_uniform(tp.empty(3, 5))
    assert np.abs(w.numpy()).max() <= math.sqrt(6 / 8)
    with pytest.warns(FutureWarning, match="nn.init.constant_"):
        assert init.constant(tp.empty(2), 3.0).tolist() == [3.0, 3.0]


def test_empty_tensor_and_distant_mean_warnings():
    """Kaiming on an empty tensor warns and leaves it; trunc_normal_ warns when mean is far from [a, b]."""
    with pytest.warns(UserWarning, match="zero-element tensors is a no-op"):
        assert init.kaiming_normal_(tp.empty(0, 3)).shape == (0, 3)
    with pytest.warns(UserWarning, match="more than 2 std"):
        values = init.trunc_normal_(tp.empty(100), mean=10.0, std=1.0, a=-2.0, b=2.0).numpy()
    assert values.min() >= -2.0 and values.max() <= 2.0


def test_leaky_relu_gain_and_bad_slope():
    """leaky_relu's gain is sqrt(2 / (1 + slope^2)); a bool slope is refused."""
    assert init.calculate_gain("leaky_relu", 0.2) == pytest.approx(math.sqrt(2 / 1.04))
    assert init.calculate_gain("leaky_relu") == pytest.approx(math.sqrt(2 / 1.0001))
    with pytest.raises(ValueError, match="not a valid number"):
        init.calculate_gain("leaky_relu", True)
