"""tp.nn.utils helpers: skip_init, stateless.functional_call, clip_grads_with_norm_ and the
convolution weight memory formats, against NumPy and PyTorch 2.13."""
import numpy as np
import pytest

import tensorplug as tp

utils = tp.nn.utils


# --- skip_init ------------------------------------------------------------------------------

def test_skip_init_builds_without_drawing_random_numbers():
    """The module has its parameters' shapes, dtype and requires_grad, and no random number is
    drawn: the generator is where it was."""
    tp.manual_seed(7)
    expected_next = tp.rand(5).numpy()
    tp.manual_seed(7)
    layer = utils.skip_init(tp.nn.Linear, 4, 3, dtype=tp.float64)
    assert layer.weight.shape == (3, 4) and layer.bias.shape == (3,)
    assert layer.weight.dtype == tp.float64 and layer.weight.requires_grad
    np.testing.assert_array_equal(tp.rand(5).numpy(), expected_next)


def test_skip_init_leaves_initialization_working_afterwards():
    """Initialization runs again once skip_init returns (a later Linear is kaiming-uniform)."""
    utils.skip_init(tp.nn.Conv2d, 2, 3, 3)
    weight = tp.nn.Linear(100, 50).weight.detach().numpy()
    bound = 1 / np.sqrt(100)
    assert np.abs(weight).max() <= bound and weight.std() > bound / 3


def test_skip_init_passes_device_and_arguments(device):
    """Keyword arguments reach the constructor, device included."""
    layer = utils.skip_init(tp.nn.Embedding, 10, 4, padding_idx=0, device=device)
    assert layer.weight.device.type == device and layer.padding_idx == 0 and layer.weight.shape == (10, 4)


def test_skip_init_errors_as_pytorch():
    """A class that is not a Module, or one without a device argument, raises RuntimeError."""
    with pytest.raises(RuntimeError, match="Expected a Module; got <class 'int'>"):
        utils.skip_init(int)
    with pytest.raises(RuntimeError, match="Module must support a 'device' arg to skip initialization"):
        utils.skip_init(tp.nn.ReLU)
    torch = pytest.importorskip("torch")
    for cls in (int, torch.nn.ReLU):
        with pytest.raises(RuntimeError):
            torch.nn.utils.skip_init(cls)


# --- stateless.functional_call ----------------------------------------------------------------

def test_stateless_functional_call_warns_and_substitutes():
    """It warns as PyTorch does and runs the module with the given tensors (NumPy reference)."""
    layer = tp.nn.Linear(2, 3)
    weight = np.arange(6, dtype=np.float32).reshape(3, 2)
    x = np.array([[1.0, -2.0]], dtype=np.float32)
    with pytest.warns(FutureWarning, match="torch.func.functional_call"):
        out = utils.stateless.functional_call(layer, {"weight": tp.tensor(weight), "bias": tp.zeros(3)}, (tp.tensor(x),))
    np.testing.assert_allclose(out.detach().numpy(), x @ weight.T, rtol=1e-6)
    assert not np.array_equal(layer.weight.detach().numpy(), weight)


# --- clip_grads_with_norm_ --------------------------------------------------------------------

@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_grads_with_norm_scales_by_the_given_norm(max_norm):
    """Gradients are multiplied by min(1, max_norm / (total_norm + 1e-6)) (NumPy float64)."""
    grads = [np.random.randn(4).astype(np.float32), np.random.randn(2, 3).astype(np.float32)]
    params = [tp.nn.Parameter(tp.zeros(*g.shape)) for g in grads]
    for p, g in zip(params, grads):
        p.grad = tp.tensor(g)
    total = np.sqrt(sum((g.astype(np.float64) ** 2).sum() for g in grads))
    assert utils.clip_grads_with_norm_(params, max_norm, utils.get_total_norm([p.grad for p in params])) is None
    factor = min(1.0, max_norm / (total + 1e-6))
    for p, g in zip(params, grads):
        np.testing.assert_allclose(p.grad.numpy(), g * factor, rtol=1e-5)


def test_clip_grads_with_norm_matches_pytorch():
    """Same gradients as PyTorch given the same total norm; parameters without grads are skipped."""
    torch = pytest.importorskip("torch")
    g = np.random.randn(5).astype(np.float32)
    ours, theirs = tp.nn.Parameter(tp.zeros(5)), torch.nn.Parameter(torch.zeros(5))
    ours.grad, theirs.grad = tp.tensor(g), torch.tensor(g)
    utils.clip_grads_with_norm_([ours, tp.nn.Parameter(tp.zeros(2))], 0.3, tp.tensor(4.0))
    torch.nn.utils.clip_grads_with_norm_([theirs, torch.nn.Parameter(torch.zeros(2))], 0.3, torch.tensor(4.0))
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-6)
    assert utils.clip_grads_with_norm_([], 1.0, tp.tensor(1.0)) is None


# --- convolution weight memory formats ----------------------------------------------------------

def _model():
    return tp.nn.Sequential(tp.nn.Conv2d(2, 3, 3), tp.nn.Sequential(tp.nn.ConvTranspose2d(3, 2, 3)), tp.nn.Conv1d(2, 2, 1),
                            tp.nn.Conv3d(2, 2, 1))


def test_conv2d_weights_become_channels_last_in_place():
    """Every Conv2d/ConvTranspose2d weight, nested ones too, gets channels-last strides (PyTorch's
    for these shapes) and stays the same Parameter with the same values; others are untouched."""
    model = _model()
    first = model[0].weight
    values = first.detach().numpy().copy()
    assert utils.convert_conv2d_weight_memory_format(model, tp.channels_last) is model
    assert model[0].weight is first and first.requires_grad
    assert model[0].weight.stride() == (18, 1, 6, 2) and model[1][0].weight.stride() == (18, 1, 6, 2)
    assert model[0].weight.is_contiguous(memory_format=tp.channels_last)
    np.testing.assert_array_equal(first.detach().numpy(), values)
    assert model[2].weight.is_contiguous() and model[3].weight.stride() == (2, 1, 1, 1, 1)
    utils.convert_conv2d_weight_memory_format(model, tp.contiguous_format)
    assert model[0].weight.stride() == (18, 9, 3, 1)


def test_conv3d_weights_become_channels_last_3d():
    """convert_conv3d_weight_memory_format touches only the 3-d convolutions."""
    model = _model()
    utils.convert_conv3d_weight_memory_format(model, tp.channels_last_3d)
    assert model[3].weight.stride() == (2, 1, 2, 2, 2) and model[0].weight.is_contiguous()


def test_strides_match_pytorch():
    """The strides equal PyTorch's after the same conversion."""
    torch = pytest.importorskip("torch")
    ours, theirs = tp.nn.ConvTranspose2d(4, 6, (3, 2), groups=2), torch.nn.ConvTranspose2d(4, 6, (3, 2), groups=2)
    utils.convert_conv2d_weight_memory_format(ours, tp.channels_last)
    torch.nn.utils.convert_conv2d_weight_memory_format(theirs, torch.channels_last)
    assert ours.weight.stride() == theirs.weight.stride()


def test_memory_format_errors():
    """A format of the wrong rank, preserve_format and a non-format raise before any change."""
    conv = tp.nn.Conv2d(2, 3, 3)
    with pytest.raises(RuntimeError, match="required rank 5 tensor to use channels_last_3d format"):
        utils.convert_conv2d_weight_memory_format(conv, tp.channels_last_3d)
    with pytest.raises(RuntimeError, match="not preserve_format"):
        utils.convert_conv2d_weight_memory_format(conv, tp.preserve_format)
    with pytest.raises(TypeError, match="memory_format"):
        utils.convert_conv2d_weight_memory_format(conv, "channels_last")
    assert conv.weight.is_contiguous()


def test_channels_last_conv_gives_the_same_output(device):
    """A converted convolution computes what PyTorch's does with the same weights."""
    torch = pytest.importorskip("torch")
    conv = tp.nn.Conv2d(3, 4, 3, padding=1)
    theirs = torch.nn.Conv2d(3, 4, 3, padding=1)
    theirs.load_state_dict({k: torch.tensor(v.detach().numpy()) for k, v in conv.state_dict().items()})
    utils.convert_conv2d_weight_memory_format(conv.to(device), tp.channels_last)
    x = np.random.randn(2, 3, 5, 5).astype(np.float32)
    with torch.no_grad():
        expected = theirs(torch.tensor(x)).numpy()
    np.testing.assert_allclose(conv(tp.tensor(x, device=device)).detach().cpu().numpy(), expected, rtol=1e-4, atol=1e-5)
