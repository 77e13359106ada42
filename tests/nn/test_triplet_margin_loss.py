"""F.triplet_margin_loss and nn.TripletMarginLoss (issue 13), against PyTorch 2.13 and NumPy."""
import numpy as np
import pytest

import tensorplug as tp
import tensorplug.nn as nn
import tensorplug.nn.functional as F

from nn_reference import TOL, make_pair, to_numpy


def _triplets(shape=(5, 4), seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape) for _ in range(3)]


def test_matches_numpy_float64_with_swap():
    """Per-sample losses equal max(d(a,p) - min(d(a,n), d(p,n)) + margin, 0) computed in NumPy."""
    a, p, n = _triplets()
    eps, margin = 1e-6, 1.5

    def dist(x, y):
        return np.sqrt(((x - y + eps) ** 2).sum(-1))

    expected = np.maximum(dist(a, p) - np.minimum(dist(a, n), dist(p, n)) + margin, 0.0)
    out = F.triplet_margin_loss(tp.tensor(a), tp.tensor(p), tp.tensor(n), margin=margin, swap=True, reduction="none")
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12)
    module = nn.TripletMarginLoss(margin=margin, swap=True)
    np.testing.assert_allclose(module(tp.tensor(a), tp.tensor(p), tp.tensor(n)).item(), expected.mean(), rtol=1e-12)


@pytest.mark.parametrize("call, error, message", [
    (lambda x: F.triplet_margin_loss(x, x, x[0]), RuntimeError, "same number of dimensions"),
    (lambda x: F.triplet_margin_loss(x, x, x, reduction="x"), ValueError, "x is not a valid value for reduction"),
    (lambda x: F.triplet_margin_loss(x, x, x, margin=0), ValueError, "margin must be greater than 0, got 0"),
    (lambda x: nn.TripletMarginLoss(margin=-1.0), ValueError, "expected margin to be greater than 0"),
])
def test_errors_as_pytorch(call, error, message):
    """Mismatched ranks, unknown reductions and non-positive margins raise as PyTorch's."""
    with pytest.raises(error, match=message):
        call(tp.randn(3, 4))


@pytest.mark.parametrize("options", [
    dict(), dict(margin=0.5, p=1, swap=True, reduction="sum"), dict(p=3.0, eps=1e-3, reduction="none"),
    dict(swap=True, reduction="none"),
], ids=str)
@pytest.mark.parametrize("shape", [(6, 5), (5,)], ids=str)
def test_matches_torch(options, shape):
    """Values and gradients in anchor, positive and negative equal PyTorch's (batched and unbatched)."""
    torch = pytest.importorskip("torch", reason="PyTorch is the reference; CI has none")
    pairs = [make_pair(torch, x, requires_grad=True) for x in _triplets(shape, seed=1)]
    out_a = F.triplet_margin_loss(*(pair[2] for pair in pairs), **options)
    out_b = torch.nn.functional.triplet_margin_loss(*(pair[3] for pair in pairs), **options)
    np.testing.assert_allclose(to_numpy(out_a), to_numpy(out_b), **TOL["float64"])
    out_a.sum().backward()
    out_b.sum().backward()
    for a, b, _, _ in pairs:
        np.testing.assert_allclose(to_numpy(a.grad), to_numpy(b.grad), **TOL["float64"])


def test_on_every_device(device):
    """On each backend the loss and its gradient equal the CPU's."""
    results = []
    for where in ("cpu", device):
        xs = [tp.tensor(x, dtype=tp.float32, device=where, requires_grad=True) for x in _triplets(seed=2)]
        loss = nn.TripletMarginLoss(margin=2.0, swap=True)(*xs)
        loss.backward()
        assert loss.device.type == where
        results.append([loss.item()] + [x.grad.cpu().numpy() for x in xs])
    for got, want in zip(results[1], results[0]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
