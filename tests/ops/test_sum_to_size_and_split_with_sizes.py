"""Tensor.sum_to_size and Tensor.split_with_sizes (missing before; found by a probe of torch
2.13's Tensor methods), against PyTorch."""
import numpy as np
import pytest

import tensorplug as tp
from device_params import torch_or_skip

DATA = np.arange(6.0).reshape(2, 3)


@pytest.mark.parametrize("size", [(1, 3), ((2, 1),), (3,), (2, 3), (1, 1), ((3, 3),), (1, 1, 3), (4,)])
def test_sum_to_size_matches_pytorch(size):
    torch = torch_or_skip()
    try:
        expected = torch.tensor(DATA).sum_to_size(*size)
    except RuntimeError as error:
        with pytest.raises(RuntimeError, match="is not expandable to size") as ours:
            tp.tensor(DATA).sum_to_size(*size)
        assert str(ours.value) == str(error)
        return
    ours = tp.tensor(DATA).sum_to_size(*size)
    assert ours.shape == tuple(expected.shape)
    np.testing.assert_array_equal(ours.numpy(), expected.numpy())


def test_sum_to_size_of_its_own_shape_is_the_tensor():
    t = tp.tensor(DATA)
    assert t.sum_to_size(2, 3) is t


def test_split_with_sizes_matches_pytorch():
    torch = torch_or_skip()
    for sizes, dim in (([1, 2], 1), ([2], 0)):
        ours = tp.tensor(DATA).split_with_sizes(sizes, dim)
        theirs = torch.tensor(DATA).split_with_sizes(split_sizes=sizes, dim=dim)
        assert [p.tolist() for p in ours] == [p.tolist() for p in theirs]
    with pytest.raises(RuntimeError, match="sum exactly to 3"):
        tp.tensor(DATA).split_with_sizes([1, 1], 1)
