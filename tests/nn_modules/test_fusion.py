"""tp.nn.utils.fusion: batch norm folded into the convolution or linear layer before it, against
a NumPy float64 reference of conv -> bn and linear -> bn in eval mode, and against PyTorch 2.13."""
import numpy as np
import pytest

import tensorplug as tp
from tensorplug.nn.utils import fusion


def _set(tensor, values):
    with tp.no_grad():
        tensor.copy_(tp.tensor(values, dtype=tensor.dtype))


def _eval_bn(bn, rng, affine=True):
    """Random running statistics (and affine parameters) so that the folding is not trivial."""
    channels = bn.num_features
    _set(bn.running_mean, rng.standard_normal(channels))
    _set(bn.running_var, rng.uniform(0.5, 2.0, channels))
    if affine:
        _set(bn.weight, rng.standard_normal(channels))
        _set(bn.bias, rng.standard_normal(channels))
    return bn.eval()


def _ref_bn(y: np.ndarray, bn, channel_axis: int) -> np.ndarray:
    """Eval-mode batch norm of ``y`` in float64."""
    shape = [1] * y.ndim
    shape[channel_axis] = -1
    mean = bn.running_mean.numpy().astype(np.float64).reshape(shape)
    var = bn.running_var.numpy().astype(np.float64).reshape(shape)
    out = (y - mean) / np.sqrt(var + bn.eps)
    if bn.weight is not None:
        out = out * bn.weight.detach().numpy().astype(np.float64).reshape(shape) + bn.bias.detach().numpy().reshape(shape)
    return out


def _ref_conv2d(x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    """A stride-1, unpadded, ungrouped 2-d convolution in float64."""
    windows = np.lib.stride_tricks.sliding_window_view(x.astype(np.float64), weight.shape[2:], axis=(2, 3))
    out = np.einsum("nchwij,ocij->nohw", windows, weight.astype(np.float64))
    return out if bias is None else out + bias.astype(np.float64).reshape(1, -1, 1, 1)


@pytest.mark.parametrize("conv_bias", [True, False])
@pytest.mark.parametrize("affine", [True, False])
def test_conv_bn_fusion_equals_conv_then_bn(conv_bias, affine):
    """The fused convolution gives bn(conv(x)) of the eval-mode pair (NumPy float64), its weight
    and bias are the folded ones, and the inputs are left as they were."""
    rng = np.random.default_rng(0)
    conv = tp.nn.Conv2d(3, 4, 3, bias=conv_bias).eval()
    bn = _eval_bn(tp.nn.BatchNorm2d(4, affine=affine), rng, affine)
    weight = conv.weight.detach().numpy().copy()
    bias = conv.bias.detach().numpy().copy() if conv_bias else None
    fused = fusion.fuse_conv_bn_eval(conv, bn)
    assert fused is not conv and conv.weight.detach().numpy().tolist() == weight.tolist()
    x = rng.standard_normal((2, 3, 6, 5)).astype(np.float32)
    expected = _ref_bn(_ref_conv2d(x, weight, bias), bn, 1)
    np.testing.assert_allclose(fused(tp.tensor(x)).detach().numpy(), expected, rtol=1e-4, atol=1e-5)
    assert isinstance(fused.weight, tp.nn.Parameter) and isinstance(fused.bias, tp.nn.Parameter)
    assert fused.weight.requires_grad and fused.bias.requires_grad == conv_bias


def test_transposed_conv_folds_along_dim_1():
    """transpose=True scales the weight's dim 1 (the output channels of a transposed convolution);
    the result equals PyTorch's fused layer and its conv -> bn."""
    torch = pytest.importorskip("torch")
    from torch.nn.utils import fusion as torch_fusion

    rng = np.random.default_rng(1)
    conv = tp.nn.ConvTranspose2d(3, 5, 3).eval()
    bn = _eval_bn(tp.nn.BatchNorm2d(5), rng)
    fused = fusion.fuse_conv_bn_eval(conv, bn, transpose=True)
    their_conv, their_bn = torch.nn.ConvTranspose2d(3, 5, 3).eval(), torch.nn.BatchNorm2d(5).eval()
    their_conv.load_state_dict({k: torch.tensor(v.detach().numpy()) for k, v in conv.state_dict().items()})
    their_bn.load_state_dict({k: torch.tensor(v.detach().numpy()) for k, v in bn.state_dict().items()})
    theirs = torch_fusion.fuse_conv_bn_eval(their_conv, their_bn, transpose=True)
    np.testing.assert_allclose(fused.weight.detach().numpy(), theirs.weight.detach().numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(fused.bias.detach().numpy(), theirs.bias.detach().numpy(), rtol=1e-6, atol=1e-6)
    x = rng.standard_normal((2, 3, 4, 4)).astype(np.float32)
    with torch.no_grad():
        expected = their_bn(their_conv(torch.tensor(x))).numpy()
    np.testing.assert_allclose(fused(tp.tensor(x)).detach().numpy(), expected, rtol=1e-4, atol=1e-5)


def test_fuse_conv_bn_weights_against_float64_and_pytorch():
    """The folded weight is w * gamma / sqrt(var + eps) per output channel and the bias
    (b - mean) * gamma / sqrt(var + eps) + beta; dtypes follow the convolution's."""
    rng = np.random.default_rng(2)
    w = rng.standard_normal((4, 2, 3, 3))
    b, mean, gamma, beta = (rng.standard_normal(4) for _ in range(4))
    var = rng.uniform(0.5, 2.0, 4)
    scale = gamma / np.sqrt(var + 1e-3)
    fused_w, fused_b = fusion.fuse_conv_bn_weights(tp.tensor(w), tp.tensor(b), tp.tensor(mean), tp.tensor(var), 1e-3,
                                                   tp.tensor(gamma), tp.tensor(beta))
    assert fused_w.dtype == tp.float64 and fused_b.dtype == tp.float64
    np.testing.assert_allclose(fused_w.detach().numpy(), w * scale.reshape(-1, 1, 1, 1), rtol=1e-13)
    np.testing.assert_allclose(fused_b.detach().numpy(), (b - mean) * scale + beta, rtol=1e-13)
    # No conv bias: a zero bias of the weight's dtype, which does not require grad (as PyTorch).
    _, no_bias = fusion.fuse_conv_bn_weights(tp.tensor(w), None, tp.tensor(mean, dtype=tp.float32),
                                             tp.tensor(var, dtype=tp.float32), 1e-3, None, None)
    assert no_bias.dtype == tp.float64 and not no_bias.requires_grad
    np.testing.assert_allclose(no_bias.detach().numpy(), -mean / np.sqrt(var + 1e-3), rtol=1e-6)
    torch = pytest.importorskip("torch")
    from torch.nn.utils import fusion as torch_fusion

    their_w, their_b = torch_fusion.fuse_conv_bn_weights(*(torch.tensor(a) for a in (w, b, mean, var)), 1e-3,
                                                         torch.tensor(gamma), torch.tensor(beta))
    np.testing.assert_allclose(fused_w.detach().numpy(), their_w.detach().numpy(), rtol=1e-14)
    np.testing.assert_allclose(fused_b.detach().numpy(), their_b.detach().numpy(), rtol=1e-14)


@pytest.mark.parametrize("linear_bias", [True, False])
@pytest.mark.parametrize("bn_features", [3, 1])
def test_linear_bn_fusion_equals_linear_then_bn(linear_bias, bn_features):
    """The fused linear layer gives bn(linear(x)) of the eval-mode pair (NumPy float64), with one
    batch-norm channel per output or a single shared one."""
    rng = np.random.default_rng(3)
    linear = tp.nn.Linear(4, 3, bias=linear_bias).eval()
    bn = _eval_bn(tp.nn.BatchNorm1d(bn_features), rng)
    weight = linear.weight.detach().numpy().astype(np.float64)
    y = rng.standard_normal((5, 4)).astype(np.float32)
    linear_out = y.astype(np.float64) @ weight.T
    if linear_bias:
        linear_out = linear_out + linear.bias.detach().numpy()
    fused = fusion.fuse_linear_bn_eval(linear, bn)
    assert fused.bias.shape == (3,) and fused.bias.requires_grad == linear_bias
    np.testing.assert_allclose(fused(tp.tensor(y)).detach().numpy(), _ref_bn(linear_out, bn, 1), rtol=1e-5, atol=1e-5)


def test_linear_bn_weights_match_pytorch():
    """fuse_linear_bn_weights gives PyTorch's values."""
    torch = pytest.importorskip("torch")
    from torch.nn.utils import fusion as torch_fusion

    rng = np.random.default_rng(4)
    w, b = rng.standard_normal((3, 4)), rng.standard_normal(3)
    mean, var, gamma, beta = rng.standard_normal(3), rng.uniform(0.5, 2, 3), rng.standard_normal(3), rng.standard_normal(3)
    ours = fusion.fuse_linear_bn_weights(*(tp.tensor(a) for a in (w, b, mean, var)), 1e-5, tp.tensor(gamma), tp.tensor(beta))
    theirs = torch_fusion.fuse_linear_bn_weights(*(torch.tensor(a) for a in (w, b, mean, var)), 1e-5, torch.tensor(gamma),
                                                 torch.tensor(beta))
    for a, t in zip(ours, theirs):
        np.testing.assert_allclose(a.detach().numpy(), t.detach().numpy(), rtol=1e-14)


def test_fusion_errors():
    """Training mode, a batch norm without running statistics and mismatched channels raise."""
    conv, bn = tp.nn.Conv2d(2, 3, 3), tp.nn.BatchNorm2d(3)
    with pytest.raises(ValueError, match="Fusion only for eval!"):
        fusion.fuse_conv_bn_eval(conv, bn)
    with pytest.raises(ValueError, match="running_mean and bn.running_var must not be None"):
        fusion.fuse_conv_bn_eval(conv.eval(), tp.nn.BatchNorm2d(3, track_running_stats=False).eval())
    with pytest.raises(ValueError, match="the batch norm has 4 channels"):
        fusion.fuse_conv_bn_eval(conv, tp.nn.BatchNorm2d(4).eval())
    with pytest.raises(ValueError, match="grouped transposed convolutions cannot be fused"):
        fusion.fuse_conv_bn_eval(tp.nn.ConvTranspose2d(4, 4, 3, groups=2).eval(), tp.nn.BatchNorm2d(4).eval(), transpose=True)
    with pytest.raises(ValueError, match="linear.out_features == bn.num_features or bn.num_features == 1"):
        fusion.fuse_linear_bn_eval(tp.nn.Linear(4, 3).eval(), tp.nn.BatchNorm1d(5).eval())
    with pytest.raises(ValueError, match="Fusion only for eval!"):
        fusion.fuse_linear_bn_eval(tp.nn.Linear(4, 3), tp.nn.BatchNorm1d(3).eval())


def test_exported_from_nn_utils():
    """The four functions are reachable as tp.nn.utils.<name>, as in PyTorch."""
    for name in ("fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights"):
        assert getattr(tp.nn.utils, name) is getattr(fusion, name)


def test_on_every_device(device):
    """The fused layers run on each backend and give the float64 reference of conv -> bn."""
    rng = np.random.default_rng(5)
    conv = tp.nn.Conv2d(2, 3, 2).eval()
    bn = _eval_bn(tp.nn.BatchNorm2d(3), rng)
    weight, bias = conv.weight.detach().numpy().copy(), conv.bias.detach().numpy().copy()
    fused = fusion.fuse_conv_bn_eval(conv.to(device), bn.to(device))
    assert fused.weight.device.type == device
    x = rng.standard_normal((1, 2, 4, 4)).astype(np.float32)
    expected = _ref_bn(_ref_conv2d(x, weight, bias), bn.cpu(), 1)
    np.testing.assert_allclose(fused(tp.tensor(x, device=device)).detach().cpu().numpy(), expected, rtol=1e-4, atol=1e-5)
