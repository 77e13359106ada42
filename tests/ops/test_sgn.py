"""tp.sgn, Tensor.sgn and sgn_ (issue 13): the sign of real tensors, as PyTorch 2.13's sgn, on
every backend; values against NumPy, dtypes, errors and gradients against PyTorch."""
import math

import numpy as np
import pytest

import tensorplug as tp
from device_params import every_device, torch_or_skip

VALUES = [-3.5, -0.0, 0.0, 2.0, math.inf, -math.inf, math.nan, 1e-40]


@pytest.mark.parametrize("device", every_device())
def test_sgn_matches_numpy_sign_with_nan_as_zero(device):
    """sgn is -1, 0 or 1 per element, and 0 at NaN (sign's rule), in the input's dtype."""
    x = tp.tensor(VALUES, dtype=tp.float64, device=device)
    result = tp.sgn(x)
    assert result.dtype is tp.float64
    expected = np.nan_to_num(np.sign(np.array(VALUES)), nan=0.0)
    np.testing.assert_array_equal(result.cpu().numpy(), expected)
    np.testing.assert_array_equal(x.sgn().cpu().numpy(), expected)


@pytest.mark.parametrize("device", every_device())
@pytest.mark.parametrize("dtype", ["int64", "bool", "float32"])
def test_sgn_in_place_keeps_the_tensor(device, dtype):
    """sgn_ writes the signs into the tensor itself and returns it."""
    x = tp.tensor([-2, 0, 5], device=device).to(getattr(tp, dtype))
    expected = np.sign(x.cpu().numpy().astype(np.int64)).astype(x.cpu().numpy().dtype)
    assert x.sgn_() is x
    np.testing.assert_array_equal(x.cpu().numpy(), expected)


def test_sgn_follows_pytorch():
    """Result dtypes, out= rules, errors and the (zero) gradient are PyTorch's."""
    torch = torch_or_skip()
    for L in (tp, torch):
        assert L.sgn(L.tensor([True, False])).dtype == L.bool
        assert L.sgn(L.tensor([3, 0], dtype=L.uint8)).tolist() == [1, 0]
        with pytest.raises(RuntimeError):
            L.sgn(L.tensor([1.0]), out=L.empty(1, dtype=L.float64))  # out must have the input's dtype
        with pytest.raises(TypeError):
            L.sgn([1.0, 2.0])
        with pytest.raises(RuntimeError):
            L.zeros(1).expand(3).sgn_()
    x = tp.tensor([-3.0, 0.0, math.nan], requires_grad=True)
    tp.sgn(x).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]
