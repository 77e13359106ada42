"""``Tensor.fill_diagonal_`` (SimCLR-style code masks self-similarity with it): values against
NumPy's ``fill_diagonal`` (float64, an independent reference), the wrapped diagonal of tall
matrices, cubes, dtype conversion, the gradient through a non-leaf, and PyTorch's errors."""
import numpy as np
import pytest

import tensorplug as tp
from device_params import every_device, torch_or_skip
from torch_reference import assert_same_error

R = np.random.default_rng(5)


def _numpy_filled(array, value, wrap=False):
    expected = array.copy()
    np.fill_diagonal(expected, value, wrap=wrap)
    return expected


@pytest.mark.parametrize("device", every_device())
@pytest.mark.parametrize("shape, wrap", [((4, 4), False), ((7, 3), False), ((7, 3), True), ((3, 5), True),
                                         ((3, 3, 3), False), ((2, 2, 2, 2), False), ((1, 6), False), ((0, 3), True)])
def test_fill_diagonal_matches_numpy(device, shape, wrap):
    array = R.standard_normal(shape)
    t = tp.tensor(array, device=device)
    returned = t.fill_diagonal_(-9e15, wrap=wrap)
    assert returned is t
    np.testing.assert_array_equal(t.cpu().numpy(), _numpy_filled(array, -9e15, wrap))


@pytest.mark.parametrize("device", every_device())
def test_fill_diagonal_converts_the_value_to_the_tensor_dtype(device):
    ints = tp.zeros(3, 3, dtype=tp.int64, device=device).fill_diagonal_(2.7)
    np.testing.assert_array_equal(ints.cpu().numpy(), _numpy_filled(np.zeros((3, 3), np.int64), 2))
    flags = tp.zeros(2, 2, dtype=tp.bool, device=device).fill_diagonal_(True)
    assert flags.cpu().numpy().tolist() == [[True, False], [False, True]]
    from_tensor = tp.zeros(2, 2, device=device).fill_diagonal_(tp.tensor(-float("inf"), device=device))
    assert from_tensor.cpu().numpy().tolist() == [[-np.inf, 0.0], [0.0, -np.inf]]


@pytest.mark.parametrize("device", every_device())
def test_fill_diagonal_gradient_is_zero_on_the_overwritten_diagonal(device):
    x = tp.tensor(R.standard_normal((3, 4)), device=device, requires_grad=True)
    y = x * 2
    y.fill_diagonal_(0.0)
    upstream = R.standard_normal((3, 4))
    y.backward(tp.tensor(upstream, device=device))
    np.testing.assert_allclose(x.grad.cpu().numpy(), _numpy_filled(2 * upstream, 0.0), rtol=1e-12)


def test_fill_diagonal_errors_as_pytorch():
    torch = torch_or_skip()
    assert_same_error(torch, lambda L: L.zeros(3).fill_diagonal_(1), RuntimeError, "dimensions must larger than 1")
    assert_same_error(torch, lambda L: L.zeros(2, 3, 2).fill_diagonal_(1), RuntimeError,
                      "all dimensions of input must be of equal length")
    assert_same_error(torch, lambda L: L.zeros(2, 2).fill_diagonal_("a"), TypeError, "must be Number, not str")
    assert_same_error(torch, lambda L: L.zeros(2, 2, requires_grad=True).fill_diagonal_(1), RuntimeError,
                      "leaf Variable that requires grad")
