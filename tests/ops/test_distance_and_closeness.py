"""cdist, isclose, allclose and equal: NumPy float64 references on every backend, PyTorch 2.13
for gradients, dtypes and errors (issue 13)."""
import math

import numpy as np
import pytest

import tensorplug as tp
from device_params import every_device, torch_or_skip

P_VALUES = [0.0, 1.0, 2.0, 3.0, 0.5, math.inf]
MODES = ["use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist"]


def _cdist_reference(x1, x2, p):
    diff = np.abs(x1[..., :, None, :] - x2[..., None, :, :])
    if p == 0:
        return (diff != 0).sum(-1).astype(np.float64)
    if math.isinf(p):
        return diff.max(-1)
    return (diff ** p).sum(-1) ** (1 / p)


@pytest.mark.parametrize("device", every_device())
@pytest.mark.parametrize("p", P_VALUES)
def test_cdist_matches_numpy(device, p, rng):
    """Every p (0, 1, 2, fractional, inf) and every compute mode, with batch dims that
    broadcast and more than 25 rows (where PyTorch switches to the matrix product)."""
    x1 = rng.normal(size=(2, 30, 4))
    x2 = rng.normal(size=(1, 7, 4))
    x2[0, 0] = x1[0, 0]  # one zero distance
    expected = _cdist_reference(x1, x2, p)
    a, b = tp.tensor(x1, device=device), tp.tensor(x2, device=device)
    for mode in MODES:
        got = tp.cdist(a, b, p, mode)
        assert got.shape == (2, 30, 7) and got.dtype is tp.float64
        np.testing.assert_allclose(got.cpu().numpy(), expected, rtol=1e-9, atol=1e-7)


@pytest.mark.parametrize("device", every_device())
def test_cdist_float32_and_empty(device, rng):
    """float32 stays float32; empty row sets and zero columns give zeros of the right shape."""
    x1, x2 = rng.normal(size=(5, 3)), rng.normal(size=(4, 3))
    got = tp.cdist(tp.tensor(x1, dtype=tp.float32, device=device), tp.tensor(x2, dtype=tp.float32, device=device))
    assert got.dtype is tp.float32
    np.testing.assert_allclose(got.cpu().numpy(), _cdist_reference(x1, x2, 2), rtol=1e-5, atol=1e-5)
    assert tp.cdist(tp.zeros(0, 3, device=device), tp.ones(2, 3, device=device)).shape == (0, 2)
    assert tp.cdist(tp.zeros(2, 0, device=device), tp.ones(3, 0, device=device), p=1).tolist() == [[0.0] * 3] * 2


@pytest.mark.parametrize("p", P_VALUES)
@pytest.mark.parametrize("mode", MODES)
def test_cdist_gradients_match_torch(p, mode, rng):
    """Gradients to both inputs equal PyTorch's, including a zero distance (gradient 0, not
    NaN) and ties for p=inf."""
    torch = torch_or_skip()
    x1 = rng.normal(size=(2, 27, 3))
    x2 = rng.normal(size=(2, 5, 3))
    x2[:, 0] = x1[:, 0]
    x1[0, 1, 1] = x1[0, 1, 0] + (x2[0, 1, 0] - x2[0, 1, 1])  # |diff| ties on two coordinates
    weights = rng.normal(size=(2, 27, 5))
    ours = [tp.tensor(x, requires_grad=True) for x in (x1, x2)]
    theirs = [torch.tensor(x, requires_grad=True) for x in (x1, x2)]
    (tp.cdist(*ours, p=p, compute_mode=mode) * tp.tensor(weights)).sum().backward()
    (torch.cdist(*theirs, p=p, compute_mode=mode) * torch.tensor(weights)).sum().backward()
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-7, atol=1e-9)


def test_cdist_errors_match_torch():
    """PyTorch's checks: dims, dtypes, columns, negative p, compute_mode."""
    torch_or_skip()
    for call, exc, message in [
        (lambda: tp.cdist(tp.tensor([1.0, 2.0]), tp.ones(1, 2)), RuntimeError, "at least 2D tensors, X1 got: 1D"),
        (lambda: tp.cdist(tp.tensor([[1, 2]]), tp.tensor([[1, 2]])), RuntimeError, "floating-point dtypes, X1 got: int64"),
        (lambda: tp.cdist(tp.ones(1, 2), tp.ones(1, 3)), RuntimeError, "same number of columns. X1: 2 X2: 3"),
        (lambda: tp.cdist(tp.ones(1, 2), tp.ones(1, 2), p=-1), RuntimeError, "non-negative p values"),
        (lambda: tp.cdist(tp.ones(1, 2), tp.ones(1, 2, dtype=tp.float64)), RuntimeError, "same dtype"),
        (lambda: tp.cdist(tp.ones(1, 2), tp.ones(1, 2), compute_mode="foo"), ValueError, "foo is not a valid value"),
        (lambda: tp.cdist(tp.ones(2, 1, 2), tp.ones(3, 1, 2)), RuntimeError, "cdist"),
    ]:
        with pytest.raises(exc, match=message):
            call()


@pytest.mark.parametrize("device", every_device())
def test_isclose_matches_numpy(device, rng):
    """Float values near each other, infinities and NaN with and without equal_nan, with
    broadcasting, as np.isclose (the same formula)."""
    a = rng.normal(size=(4, 6))
    b = a + rng.normal(size=(4, 6)) * np.array([0.0, 1e-9, 1e-6, 1e-5, 1e-3, 1.0])
    a[0, :3] = [np.inf, -np.inf, np.nan]
    b[0, :3] = [np.inf, np.inf, np.nan]
    x, y = tp.tensor(a, device=device), tp.tensor(b, device=device)
    for kwargs in ({}, {"rtol": 1e-3, "atol": 0.0}, {"equal_nan": True}, {"rtol": 0.0, "atol": 0.0}):
        got = tp.isclose(x, y, **kwargs)
        assert got.dtype is tp.bool
        np.testing.assert_array_equal(got.cpu().numpy(), np.isclose(a, b, **kwargs))
    row = tp.tensor(b[1], device=device)
    np.testing.assert_array_equal(tp.isclose(x, row).cpu().numpy(), np.isclose(a, b[1]))
    assert tp.allclose(x[1:], x[1:] + 1e-9) and not tp.allclose(x[1:], y[1:])
    assert tp.allclose(x, x, equal_nan=True) and not tp.allclose(x, x)


@pytest.mark.parametrize("device", every_device())
def test_equal_compares_shape_and_values(device):
    """Same shape and values: True (across dtypes, as PyTorch); another shape, another value or
    NaN: False."""
    x = tp.tensor([1, 2, 3], device=device)
    assert tp.equal(x, tp.tensor([1.0, 2.0, 3.0], device=device)) and x.equal(x.clone())
    assert not tp.equal(x, tp.tensor([1, 2], device=device))
    assert not tp.equal(x, tp.tensor([1, 2, 4], device=device))
    assert not tp.equal(tp.tensor([float("nan")], device=device), tp.tensor([float("nan")], device=device))
    assert tp.equal(tp.zeros(0, 2, device=device), tp.zeros(0, 2, device=device))


def test_isclose_integer_and_bool_match_torch():
    """Integer and bool operands follow PyTorch's dtype rules (integers with a float tolerance,
    bools in the default float dtype); results equal PyTorch's."""
    torch = torch_or_skip()
    cases = [([1, 2, 10], [1, 3, 12], {"rtol": 0.5}), ([1, 2], [1, 3], {}), ([True, False], [False, False], {"atol": 1}),
             ([5, 7], [5, 8], {"rtol": 0.0, "atol": 0.0})]
    for a, b, kwargs in cases:
        ours = tp.isclose(tp.tensor(a), tp.tensor(b), **kwargs).tolist()
        assert ours == torch.isclose(torch.tensor(a), torch.tensor(b), **kwargs).tolist()
        assert tp.allclose(tp.tensor(a), tp.tensor(b), **kwargs) == torch.allclose(torch.tensor(a), torch.tensor(b), **kwargs)
    assert tp.equal(tp.tensor([True]), tp.tensor([1])) == torch.equal(torch.tensor([True]), torch.tensor([1]))


def test_closeness_errors():
    """Different dtypes, negative tolerances, shapes that do not broadcast and non-tensors raise."""
    for call, exc, message in [
        (lambda: tp.isclose(tp.ones(1), tp.ones(1, dtype=tp.float64)), RuntimeError, "float32 did not match float64"),
        (lambda: tp.isclose(tp.ones(1), tp.ones(1), rtol=-1), RuntimeError, "rtol must be greater than or equal to zero"),
        (lambda: tp.allclose(tp.ones(1), tp.ones(1), atol=-1), RuntimeError, "atol must be greater than or equal to zero"),
        (lambda: tp.isclose(tp.ones(2), tp.ones(3)), RuntimeError, "isclose"),
        (lambda: tp.isclose(tp.ones(1), 1.0), TypeError, "argument 'other' must be Tensor"),
        (lambda: tp.equal(tp.ones(1), 1), TypeError, "argument 'other' must be Tensor"),
    ]:
        with pytest.raises(exc, match=message):
            call()
