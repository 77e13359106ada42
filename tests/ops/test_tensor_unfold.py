"""Tensor.unfold (sliding windows as a view) against PyTorch 2.13, the 0-d case included."""
import numpy as np
import pytest

import tensorplug as tp
from device_params import torch_or_skip


@pytest.mark.parametrize("shape, args", [((3, 4), (1, 2, 1)), ((3, 4), (0, 2, 2)), ((3, 4), (-1, 3, 2)),
                                         ((), (0, 1, 1)), ((), (-1, 0, 3))])
def test_unfold_matches_pytorch(shape, args):
    torch = torch_or_skip()
    data = np.arange(float(np.prod(shape))).reshape(shape)
    theirs = torch.tensor(data, requires_grad=True)
    ours = tp.tensor(data, requires_grad=True)
    expected, got = theirs.unfold(*args), ours.unfold(*args)
    assert got.shape == tuple(expected.shape) and got.stride() == expected.stride()
    np.testing.assert_array_equal(got.detach().numpy(), expected.detach().numpy())
    (expected * 2).sum().backward()
    (got * 2).sum().backward()
    np.testing.assert_array_equal(ours.grad.numpy(), theirs.grad.numpy())


def test_unfold_errors_match_pytorch():
    torch = torch_or_skip()
    for args in ((0, 2, 1), (1, 1, 1), (0, 1, 0)):
        with pytest.raises(Exception) as theirs:
            torch.tensor(3.0).unfold(*args)
        with pytest.raises(theirs.type):
            tp.tensor(3.0).unfold(*args)
