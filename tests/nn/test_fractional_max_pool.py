"""F.fractional_max_pool2d/3d and nn.FractionalMaxPool2d/3d against PyTorch 2.13: with the same
``_random_samples`` the outputs and indices are PyTorch's exactly, gradients too (issue 13)."""
import numpy as np
import pytest

import tensorplug as tp
import tensorplug.nn.functional as F

torch = pytest.importorskip("torch", reason="PyTorch 2.13 is the reference here (pip install torch==2.13.0)")


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


CASES = [
    (2, (2, 3, 9, 7), (2, 3), {"output_size": (4, 3)}),
    (2, (3, 10, 11), 3, {"output_size": (5, 6)}),
    (2, (1, 2, 8, 8), 2, {"output_ratio": (0.5, 0.5)}),
    (2, (1, 1, 5, 5), 2, {"output_size": 1}),
    (3, (2, 2, 6, 7, 8), (2, 2, 3), {"output_size": (3, 4, 5)}),
    (3, (2, 5, 6, 7), 2, {"output_ratio": (0.5, 0.7, 0.6)}),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("nd, shape, kernel, size", CASES)
def test_matches_torch_exactly_with_given_samples(device, nd, shape, kernel, size, dtype, rng):
    """Same samples, same windows: values and indices bit for bit, and the gradient."""
    x = rng.normal(size=shape).astype(dtype)
    n = shape[0] if len(shape) == nd + 2 else 1
    samples = rng.random((n, shape[-nd - 1], nd)).astype(dtype)
    xt = torch.tensor(x, requires_grad=True)
    expected, expected_idx = getattr(torch.nn.functional, f"fractional_max_pool{nd}d")(
        xt, kernel, **size, return_indices=True, _random_samples=torch.tensor(samples))
    xg = tp.tensor(x, device=device, requires_grad=True)
    got, got_idx = getattr(F, f"fractional_max_pool{nd}d")(
        xg, kernel, **size, return_indices=True, _random_samples=tp.tensor(samples, device=device))
    np.testing.assert_array_equal(got.detach().cpu().numpy(), expected.detach().numpy())
    np.testing.assert_array_equal(got_idx.cpu().numpy(), expected_idx.numpy())
    weights = rng.normal(size=tuple(expected.shape)).astype(dtype)
    (got * tp.tensor(weights, device=device)).sum().backward()
    (expected * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(xg.grad.cpu().numpy(), xt.grad.numpy(), rtol=1e-6)


def test_ties_and_nan_pick_as_torch():
    """Equal values: the first maximum; a NaN wins its window (the last NaN)."""
    x = np.array([[[[1.0, 1.0, 0.0, 2.0], [1.0, np.nan, 3.0, 3.0], [0.0, np.nan, 3.0, 3.0], [5.0, 5.0, 5.0, 5.0]]]],
                 dtype=np.float32)
    samples = np.array([[[0.3, 0.6]]], dtype=np.float32)
    expected = torch.nn.functional.fractional_max_pool2d(torch.tensor(x), 2, output_size=3, return_indices=True,
                                                         _random_samples=torch.tensor(samples))
    got = F.fractional_max_pool2d(tp.tensor(x), 2, output_size=3, return_indices=True, _random_samples=tp.tensor(samples))
    np.testing.assert_array_equal(got[0].numpy(), expected[0].numpy())
    np.testing.assert_array_equal(got[1].numpy(), expected[1].numpy())


def test_modules_and_own_samples():
    """The modules pool with drawn samples (tensorplug's generator: seeded, reproducible);
    each window's value is its maximum, which the indices name."""
    x = tp.randn(2, 3, 10, 12)
    pool = tp.nn.FractionalMaxPool2d(3, output_ratio=0.5, return_indices=True)
    tp.manual_seed(5)
    out, idx = pool(x)
    assert out.shape == (2, 3, 5, 6) and idx.dtype is tp.int64
    assert tp.equal(out, x.reshape(2, 3, -1).gather(2, idx.reshape(2, 3, -1)).reshape(out.shape))
    tp.manual_seed(5)
    assert tp.equal(pool(x)[0], out)
    out3 = tp.nn.FractionalMaxPool3d(2, output_size=(2, 3, 3))(tp.randn(1, 2, 5, 6, 6))
    assert out3.shape == (1, 2, 2, 3, 3)


@pytest.mark.parametrize("make, exc", [
    (lambda m: m.nn.FractionalMaxPool2d(2), ValueError),
    (lambda m: m.nn.FractionalMaxPool3d(2, output_ratio=(0.5, 1.0, 0.5)), ValueError),
    (lambda m: m.nn.FractionalMaxPool2d(2, output_size=2, output_ratio=0.5), ValueError),
    (lambda m: m.nn.functional.fractional_max_pool2d(m.ones(1, 1, 4, 4), 2), ValueError),
    (lambda m: m.nn.functional.fractional_max_pool2d(m.ones(1, 1, 4, 4), 2, output_ratio=(0.5, 0.5, 0.5)), ValueError),
    (lambda m: m.nn.functional.fractional_max_pool2d(m.ones(1, 1, 4, 4), 3, output_size=3,
                                                     _random_samples=m.zeros(1, 1, 2)), RuntimeError),
    (lambda m: m.nn.functional.fractional_max_pool3d(m.ones(1, 1, 4, 4, 4), 2, output_size=(2, 2, 4),
                                                     _random_samples=m.zeros(1, 1, 3)), RuntimeError),
    (lambda m: m.nn.functional.fractional_max_pool2d(m.ones(1, 1, 1, 4, 4), 2, output_size=2), RuntimeError),
    (lambda m: m.nn.functional.fractional_max_pool2d(m.ones(2, 1, 4, 4), 2, output_size=2,
                                                     _random_samples=m.zeros(1, 1, 2)), RuntimeError),
    (lambda m: m.nn.functional.fractional_max_pool2d(m.ones(1, 1, 4, 4), 2, output_size=2,
                                                     _random_samples=m.zeros(1, 2, 2)), RuntimeError),
    (lambda m: m.nn.functional.fractional_max_pool2d(m.ones(1, 1, 4, 4), 2, output_size=2,
                                                     _random_samples=m.zeros(1, 1, 3)), RuntimeError),
    (lambda m: m.nn.functional.fractional_max_pool2d(m.ones(1, 1, 4, 4), 2, output_size=2,
                                                     _random_samples=m.zeros(1, 1, 2, dtype=m.float64)), RuntimeError),
])
def test_errors_match_torch(make, exc):
    """PyTorch's exception types and messages."""
    with pytest.raises(exc) as expected:
        make(torch)
    with pytest.raises(exc) as got:
        make(tp)
    assert str(got.value) == str(expected.value)
