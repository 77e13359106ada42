"""F.gumbel_softmax (issue 13): soft and hard samples, their distribution and straight-through gradient, on every backend."""
import numpy as np
import pytest

import tensorplug as tp
import tensorplug.nn.functional as F


def test_soft_samples_are_distributions(device):
    """Soft samples are positive and sum to 1 along dim, for any dim and tau."""
    logits = tp.tensor(np.random.default_rng(0).standard_normal((4, 5, 6)), dtype=tp.float32, device=device)
    for dim, tau in ((-1, 1.0), (1, 0.3), (0, 5.0)):
        y = F.gumbel_softmax(logits, tau=tau, dim=dim).cpu().numpy()
        assert (y >= 0).all()
        np.testing.assert_allclose(y.sum(axis=dim), 1.0, rtol=1e-5)


def test_hard_samples_follow_the_softmax_probabilities(device):
    """Hard samples are one-hot, drawn with softmax(logits)'s probabilities, and pass the soft gradient."""
    tp.manual_seed(0)
    probs = np.array([0.2, 0.5, 0.3])
    logits = tp.tensor(np.log(probs), dtype=tp.float32, device=device).expand(20000, 3).contiguous().requires_grad_()
    y = F.gumbel_softmax(logits, tau=0.5, hard=True)
    values = y.detach().cpu().numpy()
    assert set(np.unique(values)) <= {0.0, 1.0} and (values.sum(1) == 1).all()
    np.testing.assert_allclose(values.mean(0), probs, atol=0.02)  # ~5 standard errors
    (y * tp.arange(3.0, device=device)).sum().backward()
    assert np.isfinite(logits.grad.cpu().numpy()).all() and np.abs(logits.grad.cpu().numpy()).sum() > 0


def test_eps_is_deprecated():
    """A non-default eps warns, as in PyTorch, and changes nothing."""
    with pytest.warns(UserWarning, match="eps"):
        F.gumbel_softmax(tp.zeros(2, 3), eps=1e-5)
