"""Names old and new PyTorch scripts reach for, as PyTorch 2.13 answers them (issue 13):
``autograd.Variable``, ``Tensor.apply_``, ``WeightedRandomSampler``, ``nn.attention.sdpa_kernel``
and ``backends.cuda.sdp_kernel``; against torch where it is installed."""
import warnings

import numpy as np
import pytest

import tensorplug as tp

try:
    import torch
except ImportError:  # the reference; tensorplug itself does not need it
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch (the reference) is not installed: pip install torch==2.13.0")


def test_variable_makes_leaves_and_every_tensor_is_one():
    data = tp.arange(3.0)
    v = tp.autograd.Variable(data, requires_grad=True)
    assert v.requires_grad and v.is_leaf and isinstance(v, tp.Tensor)
    assert isinstance(data, tp.autograd.Variable) and not isinstance(3.0, tp.autograd.Variable)
    (v * v).sum().backward()
    assert v.grad.tolist() == [0.0, 2.0, 4.0]
    v.data.add_(1)
    assert data.tolist() == [1.0, 2.0, 3.0]  # the same data
    assert not tp.autograd.Variable(data).requires_grad
    with pytest.warns(UserWarning, match="volatile was removed"):
        tp.autograd.Variable(data, volatile=True)


def test_apply_maps_cpu_elements_in_place_in_any_layout():
    t = tp.arange(6.0).view(2, 3).t()  # not contiguous
    assert t.apply_(lambda x: x * x + 1) is t
    np.testing.assert_array_equal(t.numpy(), (np.arange(6.0).reshape(2, 3).T ** 2) + 1)
    with pytest.raises(RuntimeError, match="Can't call apply_"):
        tp.ones(2, requires_grad=True).apply_(lambda x: x)


@needs_torch
def test_weighted_random_sampler_matches_torch_rules():
    sampler = tp.utils.data.WeightedRandomSampler([0.0, 1.0, 0.0], 6, generator=tp.Generator().manual_seed(0))
    assert list(sampler) == [1] * 6 and len(sampler) == 6 and sampler.weights.dtype is tp.float64
    counts = np.bincount(list(tp.utils.data.WeightedRandomSampler([1.0, 3.0], 4000)), minlength=2)
    assert abs(counts[1] / 4000 - 0.75) < 0.03
    without = list(tp.utils.data.WeightedRandomSampler([1.0, 1.0, 1.0], 3, replacement=False))
    assert sorted(without) == [0, 1, 2]
    for lib in (tp, torch):
        with pytest.raises(ValueError, match="num_samples should be a positive integer value"):
            lib.utils.data.WeightedRandomSampler([1.0], 0)
        with pytest.raises(ValueError, match="weights should be a 1d sequence"):
            lib.utils.data.WeightedRandomSampler([[1.0, 2.0]], 2)
        with pytest.raises(RuntimeError, match="cannot sample n_sample > prob_dist.size"):
            list(lib.utils.data.WeightedRandomSampler([1.0, 1.0], 3, replacement=False))
    loader = tp.utils.data.DataLoader(list(range(3)), batch_size=2, sampler=tp.utils.data.WeightedRandomSampler([0, 0, 1.0], 4))
    assert [batch.tolist() for batch in loader] == [[2, 2], [2, 2]]


@needs_torch
def test_sdpa_kernel_sets_the_switches_for_its_block():
    from tensorplug.nn.attention import SDPBackend, sdpa_kernel

    assert {m.name: int(m) for m in SDPBackend} == {n: int(v) for n, v in torch.nn.attention.SDPBackend.__members__.items()}
    cuda = tp.backends.cuda
    with sdpa_kernel([SDPBackend.MATH]):
        assert cuda.math_sdp_enabled() and not cuda.flash_sdp_enabled() and not cuda.mem_efficient_sdp_enabled()
        q = tp.randn(1, 2, 3, 4)
        out = tp.nn.functional.scaled_dot_product_attention(q, q, q)  # still computes
        assert out.shape == (1, 2, 3, 4)
    assert cuda.flash_sdp_enabled() and cuda.math_sdp_enabled()
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        assert cuda.flash_sdp_enabled() and not cuda.math_sdp_enabled()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with cuda.sdp_kernel(enable_flash=False):
            assert not cuda.flash_sdp_enabled() and cuda.math_sdp_enabled()
    assert caught and caught[0].category is FutureWarning
    assert cuda.flash_sdp_enabled()


def test_older_size_names():
    """ndimension() and nelement(), PyTorch's older spellings of dim() and numel()."""
    t = tp.ones(2, 3, 4)
    assert t.ndimension() == t.dim() == 3
    assert t.nelement() == t.numel() == 24
    assert tp.tensor(5.0).ndimension() == 0
