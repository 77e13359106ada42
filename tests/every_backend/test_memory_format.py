"""Memory formats (issue 13): channels-last layouts, their strides and the ops that keep them, on every backend."""
import pickle

import numpy as np
import pytest

import tensorplug as tp
import tensorplug.nn.functional as F

try:
    import torch
except ImportError:  # CI has no torch
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed (the reference for strides)")


def _data(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_formats_are_named_singletons():
    """The four formats exist, print their names and pickle as themselves."""
    for fmt in (tp.contiguous_format, tp.channels_last, tp.channels_last_3d, tp.preserve_format):
        assert isinstance(fmt, tp.memory_format)
        assert pickle.loads(pickle.dumps(fmt)) is fmt
    assert repr(tp.channels_last) == "tensorplug.channels_last"


@needs_torch
@pytest.mark.parametrize("shape, fmt", [((2, 3, 4, 5), "channels_last"), ((1, 3, 1, 1), "channels_last"),
                                         ((2, 3, 4, 5, 6), "channels_last_3d")])
def test_strides_match_pytorch(device, shape, fmt):
    """contiguous, clone, empty, *_like and to(memory_format=) give PyTorch's strides and keep the values."""
    a = _data(shape)
    x, ref = tp.tensor(a, device=device), torch.tensor(a)
    tfmt, pfmt = getattr(tp, fmt), getattr(torch, fmt)
    y, ry = x.contiguous(memory_format=tfmt), ref.contiguous(memory_format=pfmt)
    assert y.stride() == ry.stride()
    np.testing.assert_array_equal(y.cpu().numpy(), a)
    assert y.is_contiguous(memory_format=tfmt)
    assert y.is_contiguous(memory_format=tp.contiguous_format) == ry.is_contiguous()
    assert y.clone().stride() == ry.clone().stride()
    assert tp.empty_like(y).stride() == torch.empty_like(ry).stride()
    assert tp.zeros_like(y, memory_format=tp.contiguous_format).stride() == ref.stride()
    assert x.clone(memory_format=tfmt).stride() == ref.clone(memory_format=pfmt).stride()
    assert tp.empty(*shape, memory_format=tfmt, device=device).stride() == torch.empty(*shape, memory_format=pfmt).stride()
    assert x.to(memory_format=tfmt).stride() == ref.to(memory_format=pfmt).stride()
    assert y.to(tp.float64).stride() == ry.to(torch.float64).stride()
    assert y.contiguous().stride() == ry.contiguous().stride()


def test_ops_on_channels_last_give_the_same_values(device):
    """Elementwise ops, reductions, conv2d, pooling and gradients see the same values in either layout."""
    a, w = _data((2, 3, 6, 5)), _data((4, 3, 3, 3), seed=1)
    x = tp.tensor(a, device=device)
    y = x.contiguous(memory_format=tp.channels_last)
    weight = tp.tensor(w, device=device)
    for f in (lambda t: t * 2 + 1, lambda t: t.sum(dim=1), lambda t: F.conv2d(t, weight, padding=1),
              lambda t: F.max_pool2d(t, 2), lambda t: t.permute(0, 2, 3, 1).reshape(2, -1)):
        np.testing.assert_allclose(f(y).cpu().numpy(), f(x).cpu().numpy(), rtol=1e-5, atol=1e-5)
    leaf = tp.tensor(a, device=device, requires_grad=True)
    (leaf.contiguous(memory_format=tp.channels_last) ** 2).sum().backward()
    np.testing.assert_allclose(leaf.grad.cpu().numpy(), 2 * a, rtol=1e-6)


def test_module_to_memory_format(device):
    """Module.to(memory_format=) relayouts the 4-d parameters only and keeps the module's outputs."""
    conv = tp.nn.Conv2d(3, 4, 3).to(device)
    x = tp.tensor(_data((2, 3, 5, 5)), device=device)
    before = conv(x).detach().cpu().numpy()
    assert conv.to(memory_format=tp.channels_last) is conv
    assert conv.weight.is_contiguous(memory_format=tp.channels_last) and not conv.weight.is_contiguous()
    assert conv.bias.is_contiguous()
    np.testing.assert_allclose(conv(x.to(memory_format=tp.channels_last)).detach().cpu().numpy(), before, rtol=1e-5, atol=1e-6)


def test_memory_format_errors():
    """PyTorch's errors: a format of the wrong rank, preserve_format where it means nothing, a non-format."""
    x = tp.zeros(2, 3, 4)
    for call in (lambda: x.contiguous(memory_format=tp.channels_last), lambda: x.clone(memory_format=tp.channels_last),
                 lambda: tp.empty(2, 3, 4, memory_format=tp.channels_last),
                 lambda: x.to(memory_format=tp.channels_last),
                 lambda: tp.zeros(2, 3, 4, 5).contiguous(memory_format=tp.channels_last_3d)):
        with pytest.raises(RuntimeError, match="required rank"):
            call()
    with pytest.raises(RuntimeError, match="preserve memory format"):
        tp.zeros(2, 3, 4, 5).transpose(2, 3).contiguous(memory_format=tp.preserve_format)
    with pytest.raises(TypeError, match="memory_format"):
        x.contiguous(memory_format="channels_last")
    assert not x.is_contiguous(memory_format=tp.channels_last)
    assert x.is_contiguous(memory_format=tp.contiguous_format)
