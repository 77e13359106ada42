"""tp.distributions.MultivariateNormal against PyTorch 2.13 (log_prob, entropy, moments, the three
ways of giving the covariance, gradients, argument checks) and against sample statistics."""
import numpy as np
import pytest

import tensorplug as tp
from tensorplug.distributions import MultivariateNormal
from distribution_helpers import DEVICES, usable_device as _device


def _torch():
    return pytest.importorskip("torch", reason="PyTorch 2.13 is the reference here (pip install torch==2.13.0)")


def _spd(shape, seed=0):
    x = np.random.default_rng(seed).standard_normal(shape)
    return x @ np.swapaxes(x, -1, -2) + shape[-1] * np.eye(shape[-1])


def _close(ours, theirs, rtol=1e-9):
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.detach().cpu().numpy(), theirs.detach().numpy(), rtol=rtol, atol=1e-10)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("given", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_matches_torch(device, given):
    """log_prob (values with extra sample dims), entropy, mean, variance and the three matrices
    equal PyTorch's, with gradients for loc and the matrix, on every device."""
    torch = _torch()
    device = _device(device)
    cov = _spd((2, 3, 3))
    matrix = {"covariance_matrix": cov, "precision_matrix": np.linalg.inv(cov),
              "scale_tril": np.linalg.cholesky(cov)}[given]
    loc = np.random.default_rng(1).standard_normal(3)
    value = np.random.default_rng(2).standard_normal((4, 2, 3))
    ours_loc, ours_m = (tp.tensor(a, dtype=tp.float64, device=device, requires_grad=True) for a in (loc, matrix))
    theirs_loc, theirs_m = (torch.tensor(a, requires_grad=True) for a in (loc, matrix))
    ours = MultivariateNormal(ours_loc, **{given: ours_m})
    theirs = torch.distributions.MultivariateNormal(theirs_loc, **{given: theirs_m})
    assert ours.batch_shape == tuple(theirs.batch_shape) and ours.event_shape == tuple(theirs.event_shape)
    out_ours = ours.log_prob(tp.tensor(value, device=device))
    out_theirs = theirs.log_prob(torch.tensor(value))
    _close(out_ours, out_theirs)
    _close(ours.entropy(), theirs.entropy())
    for name in ("mean", "variance", "covariance_matrix", "precision_matrix", "scale_tril"):
        _close(getattr(ours, name), getattr(theirs, name), rtol=1e-8)
    (out_ours.sum() + ours.entropy().sum()).backward()
    (out_theirs.sum() + theirs.entropy().sum()).backward()
    _close(ours_loc.grad, theirs_loc.grad, rtol=1e-7)
    _close(ours_m.grad, theirs_m.grad, rtol=1e-7)


@pytest.mark.parametrize("device", DEVICES)
def test_rsample_moments_and_gradient(device):
    """Samples have the given mean and covariance; rsample differentiates to loc and scale_tril."""
    device = _device(device)
    cov = np.array([[2.0, 0.6], [0.6, 1.0]])
    loc = tp.tensor([1.0, -2.0], device=device, requires_grad=True)
    scale_tril = tp.tensor(np.linalg.cholesky(cov), dtype=tp.float32, device=device, requires_grad=True)
    d = MultivariateNormal(loc, scale_tril=scale_tril)
    samples = d.rsample((20000,))
    assert tuple(samples.shape) == (20000, 2)
    drawn = samples.detach().cpu().numpy().astype(np.float64)
    np.testing.assert_allclose(drawn.mean(0), [1.0, -2.0], atol=0.05)
    np.testing.assert_allclose(np.cov(drawn.T), cov, atol=0.08)
    samples.sum().backward()
    np.testing.assert_allclose(loc.grad.cpu().numpy(), [20000.0, 20000.0])
    assert scale_tril.grad is not None and d.sample((2,)).requires_grad is False


def test_argument_checks():
    """PyTorch's errors: one matrix exactly, shapes, and invalid matrices."""
    with pytest.raises(ValueError, match="Exactly one of covariance_matrix or precision_matrix or scale_tril"):
        MultivariateNormal(tp.zeros(2))
    with pytest.raises(ValueError, match="loc must be at least one-dimensional."):
        MultivariateNormal(tp.tensor(0.0), covariance_matrix=tp.eye(1))
    with pytest.raises(ValueError, match="covariance_matrix matrix must be at least two-dimensional"):
        MultivariateNormal(tp.zeros(2), covariance_matrix=tp.ones(2))
    with pytest.raises(ValueError, match="to satisfy the constraint PositiveDefinite"):
        MultivariateNormal(tp.zeros(2), covariance_matrix=-tp.eye(2))
    with pytest.raises(ValueError, match="to satisfy the constraint LowerCholesky"):
        MultivariateNormal(tp.zeros(2), scale_tril=tp.ones(2, 2))
