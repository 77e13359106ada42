"""Tensor.bernoulli_ on every backend: a number or a broadcast tensor of probabilities, the
frequencies they give, the dtype kept, PyTorch's errors (issue 13: timm's DropPath)."""
import numpy as np
import pytest

import tensorplug as tp
from device_params import every_device

DRAWS = 4000


@pytest.mark.parametrize("device", every_device())
@pytest.mark.parametrize("dtype", [tp.float32, tp.int64, tp.bool])
def test_number_probability_fills_in_place(device, dtype):
    """bernoulli_(p) returns self, keeps its dtype and shape, and holds ones at about rate p."""
    x = tp.empty(DRAWS, dtype=dtype, device=device)
    assert x.bernoulli_(0.3) is x and x.dtype is dtype and x.shape == (DRAWS,)
    values = x.cpu().numpy().astype(np.float64)
    assert set(np.unique(values)) <= {0.0, 1.0}
    assert abs(values.mean() - 0.3) <= 4 * np.sqrt(0.3 * 0.7 / DRAWS)
    assert (tp.empty(5, device=device).bernoulli_(1.0).cpu().numpy() == 1).all()
    assert (tp.empty(5, device=device).bernoulli_(0).cpu().numpy() == 0).all()
    assert 0.4 < tp.empty(DRAWS, device=device).bernoulli_().mean().item() < 0.6  # p defaults to 0.5


@pytest.mark.parametrize("device", every_device())
def test_tensor_probability_broadcasts(device):
    """A tensor p broadcasts to self's shape: rows of p = 0 stay 0, rows of p = 1 are all 1."""
    x = tp.empty(2, 3, device=device).bernoulli_(tp.tensor([[0.0], [1.0]], device=device))
    assert x.cpu().tolist() == [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]]
    # stochastic depth: a keep mask of shape (batch, 1, 1), scaled by 1 / keep
    mask = tp.ones(4, 5, 6, device=device).new_empty((4, 1, 1)).bernoulli_(0.75).div_(0.75)
    assert mask.shape == (4, 1, 1) and np.isin(mask.cpu().numpy(), np.float32([0.0, 1.0 / 0.75])).all()


@pytest.mark.parametrize("device", every_device())
def test_seeded_draws_repeat(device):
    """The same seed gives the same mask (tensorplug's generator, as every random op)."""
    tp.manual_seed(7)
    first = tp.empty(64, device=device).bernoulli_(0.5).cpu().tolist()
    tp.manual_seed(7)
    assert tp.empty(64, device=device).bernoulli_(0.5).cpu().tolist() == first


@pytest.mark.parametrize("device", every_device())
def test_errors(device):
    """p outside [0, 1], a p that does not broadcast, and a leaf that requires grad are refused."""
    with pytest.raises(RuntimeError, match=r"expects p to be in \[0, 1\], but got p=1.5"):
        tp.empty(3, device=device).bernoulli_(1.5)
    with pytest.raises(RuntimeError, match=r"\[0, 1\]"):
        tp.empty(3, device=device).bernoulli_(tp.tensor([0.5, 2.0, 0.1], device=device))
    with pytest.raises(RuntimeError):
        tp.empty(2, 3, device=device).bernoulli_(tp.ones(4, device=device))
    with pytest.raises(RuntimeError, match="leaf"):
        tp.zeros(3, device=device, requires_grad=True).bernoulli_(0.5)
