"""F.*_with_indices (PyTorch's pooling names that always return indices) and F.celu_, found
missing by a probe against PyTorch 2.13."""
import numpy as np
import pytest

import tensorplug as tp


@pytest.mark.parametrize("name, shape, args, kwargs", [
    ("max_pool1d_with_indices", (1, 2, 7), (3, 2), {"return_indices": False}),
    ("max_pool2d_with_indices", (1, 2, 5, 6), (2, None, 1, 1, True, False), {}),  # return_indices by position
    ("max_pool3d_with_indices", (1, 1, 4, 4, 5), (2,), {}),
    ("adaptive_max_pool1d_with_indices", (2, 7), (3,), {"return_indices": False}),
    ("adaptive_max_pool2d_with_indices", (1, 2, 5, 6), (3, False), {}),
    ("adaptive_max_pool3d_with_indices", (1, 1, 4, 4, 5), ((2, 3, 2),), {}),
])
def test_with_indices_poolings_match_pytorch(name, shape, args, kwargs):
    """(output, indices) whatever return_indices says, as in PyTorch."""
    torch = pytest.importorskip("torch", reason="PyTorch 2.13 is the reference here")
    data = np.random.default_rng(0).standard_normal(shape)
    theirs = getattr(torch.nn.functional, name)(torch.tensor(data), *args, **kwargs)
    ours = getattr(tp.nn.functional, name)(tp.tensor(data), *args, **kwargs)
    assert isinstance(ours, tuple) and len(ours) == 2
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_celu_in_place_matches_pytorch():
    torch = pytest.importorskip("torch", reason="PyTorch 2.13 is the reference here")
    for L in (torch, tp):
        for function in (L.nn.functional.celu_, L.celu_):
            x = L.tensor([-1.0, 0.5, -3.0])
            assert function(x, 2.0) is x
            np.testing.assert_allclose(x.numpy(), np.where([True, False, True], 2.0 * np.expm1(np.array([-1.0, 0.5, -3.0]) / 2.0), 0.5))
