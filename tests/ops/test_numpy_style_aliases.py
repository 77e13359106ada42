"""NumPy's names PyTorch takes too (torch.arcsin, Tensor.fix_, torch.ravel...), found missing by a
probe of torch 2.13's namespace: each gives PyTorch's values, as a function, a method and, where
PyTorch has one, an in-place method."""
import numpy as np
import pytest

import tensorplug as tp
from device_params import torch_or_skip

DATA = np.array([[-0.9, -0.25, 0.0], [0.3, 0.5, 0.99]])


@pytest.mark.parametrize("name", ["absolute", "negative", "arcsin", "arccos", "arctan", "fix"])
def test_unary_aliases_match_pytorch(name):
    torch = torch_or_skip()
    expected = getattr(torch, name)(torch.tensor(DATA)).numpy()
    np.testing.assert_allclose(getattr(tp, name)(tp.tensor(DATA)).numpy(), expected, rtol=1e-15)
    np.testing.assert_allclose(getattr(tp.tensor(DATA), name)().numpy(), expected, rtol=1e-15)
    x = tp.tensor(DATA)
    assert getattr(x, name + "_")() is x
    np.testing.assert_allclose(x.numpy(), expected, rtol=1e-15)


def test_arctan2_matches_pytorch():
    torch = torch_or_skip()
    expected = torch.arctan2(torch.tensor(DATA), torch.tensor(DATA[::-1].copy())).numpy()
    np.testing.assert_allclose(tp.arctan2(tp.tensor(DATA), tp.tensor(DATA[::-1].copy())).numpy(), expected, rtol=1e-15)
    np.testing.assert_allclose(tp.tensor(DATA).arctan2(tp.tensor(DATA[::-1].copy())).numpy(), expected, rtol=1e-15)


def test_ravel_matches_pytorch():
    """A view of a contiguous tensor, a contiguous copy of a transposed one, (1,) for a scalar."""
    torch = torch_or_skip()
    for L in (torch, tp):
        rows = L.arange(6.0).reshape(2, 3)
        assert rows.ravel().data_ptr() == rows.data_ptr()
        flat = L.ravel(rows.t())
        assert flat.is_contiguous() and flat.tolist() == [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
        assert tuple(L.ravel(L.tensor(3.0)).shape) == (1,)
