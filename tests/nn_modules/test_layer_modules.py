"""Layers (linear, conv, pooling, normalization, dropout, embedding) against torch.nn."""
import math

import numpy as np
import pytest

import tensorplug as tp
from module_parity import check_module, copy_torch_weights

torch = pytest.importorskip("torch")
nn = tp.nn


def randn(*shape):
    return np.random.randn(*shape)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("bias", [True, False])
def test_linear(dtype, bias):
    """Linear matches on batched, 1-D and 3-D inputs, with and without bias."""
    for shape in [(5, 4), (4,), (2, 3, 4)]:
        check_module(torch, nn.Linear(4, 3, bias=bias), torch.nn.Linear(4, 3, bias=bias), [randn(*shape)], dtype)


def test_bilinear():
    """Bilinear matches torch.nn.Bilinear."""
    check_module(torch, nn.Bilinear(3, 4, 5), torch.nn.Bilinear(3, 4, 5), [randn(6, 3), randn(6, 4)])


@pytest.mark.parametrize(
    "kwargs",
    [dict(), dict(stride=2, padding=1), dict(padding="same", dilation=2), dict(groups=2, bias=False),
     dict(padding=1, padding_mode="reflect"), dict(padding=(1, 2), padding_mode="circular"), dict(padding="valid")],
)
def test_conv2d(kwargs):
    """Conv2d matches for strides, padding (modes and strings), dilation, groups and no bias."""
    check_module(torch, nn.Conv2d(4, 6, 3, **kwargs), torch.nn.Conv2d(4, 6, 3, **kwargs), [randn(2, 4, 7, 8)])


def test_conv2d_unbatched_and_rectangular_kernel():
    """A (C, H, W) input and a (2, 3) kernel work as in torch."""
    check_module(torch, nn.Conv2d(3, 2, (2, 3)), torch.nn.Conv2d(3, 2, (2, 3)), [randn(3, 5, 6)])


@pytest.mark.parametrize("kwargs", [dict(), dict(stride=2, padding=2, dilation=2), dict(padding="same", padding_mode="replicate")])
def test_conv1d(kwargs):
    """Conv1d matches torch.nn.Conv1d."""
    check_module(torch, nn.Conv1d(3, 4, 3, **kwargs), torch.nn.Conv1d(3, 4, 3, **kwargs), [randn(2, 3, 9)])


@pytest.mark.parametrize("kwargs", [dict(), dict(stride=2, padding=1, output_padding=1), dict(groups=2, dilation=2)])
def test_conv_transpose2d(kwargs):
    """ConvTranspose2d matches, including output_padding, groups and dilation."""
    check_module(torch, nn.ConvTranspose2d(4, 6, 3, **kwargs), torch.nn.ConvTranspose2d(4, 6, 3, **kwargs), [randn(2, 4, 5, 5)])


def test_conv_transpose_output_size():
    """forward(x, output_size=...) picks the output padding as torch does."""
    tp_m, torch_m = nn.ConvTranspose2d(2, 3, 3, stride=2), torch.nn.ConvTranspose2d(2, 3, 3, stride=2)
    kwargs = {"tp": {"output_size": (10, 10)}, "torch": {"output_size": (10, 10)}}
    out, _ = check_module(torch, tp_m, torch_m, [randn(1, 2, 4, 4)], kwargs=kwargs)
    assert out[0].shape == (1, 3, 10, 10)
    check_module(torch, nn.ConvTranspose1d(2, 3, 3, stride=2), torch.nn.ConvTranspose1d(2, 3, 3, stride=2), [randn(1, 2, 5)])


@pytest.mark.parametrize(
    "tp_cls, torch_cls, args",
    [
        ("MaxPool2d", "MaxPool2d", (2,)), ("MaxPool2d", "MaxPool2d", (3, 2, 1)), ("AvgPool2d", "AvgPool2d", (2,)),
        ("AvgPool2d", "AvgPool2d", (3, 1, 1)), ("AdaptiveAvgPool2d", "AdaptiveAvgPool2d", ((2, 3),)),
        ("AdaptiveAvgPool2d", "AdaptiveAvgPool2d", (1,)), ("MaxPool1d", "MaxPool1d", (2,)),
        ("AvgPool1d", "AvgPool1d", (3, 2)), ("AdaptiveAvgPool1d", "AdaptiveAvgPool1d", (3,)),
        ("Flatten", "Flatten", ()), ("Flatten", "Flatten", (0, 1)), ("Identity", "Identity", ()),
        ("Unflatten", "Unflatten", (1, (1, 3))),
    ],
)
def test_shape_and_pooling_layers(tp_cls, torch_cls, args):
    """Pooling and reshaping layers match torch, values and gradients."""
    shape = (2, 3, 6) if tp_cls.endswith("1d") else (2, 3, 6, 7)
    check_module(torch, getattr(nn, tp_cls)(*args), getattr(torch.nn, torch_cls)(*args), [randn(*shape)])


@pytest.mark.parametrize("cls, shape", [("BatchNorm1d", (6, 3)), ("BatchNorm1d", (4, 3, 5)), ("BatchNorm2d", (4, 3, 5, 2))])
@pytest.mark.parametrize("momentum", [0.1, None])
def test_batch_norm_training_and_eval(cls, shape, momentum):
    """BatchNorm: training output, running statistics (momentum and cumulative average),
    num_batches_tracked, then eval output from the running statistics."""
    tp_m, torch_m = getattr(nn, cls)(3, momentum=momentum), getattr(torch.nn, cls)(3, momentum=momentum)
    with torch.no_grad():
        torch_m.weight.uniform_(0.5, 1.5)
        torch_m.bias.uniform_(-0.5, 0.5)
    for step in range(3):
        check_module(torch, tp_m, torch_m, [randn(*shape) + step])
        for name in ("running_mean", "running_var"):
            np.testing.assert_allclose(getattr(tp_m, name).numpy(), getattr(torch_m, name).numpy(), rtol=1e-9)
    assert tp_m.num_batches_tracked.item() == torch_m.num_batches_tracked.item() == 3
    tp_m.eval()
    torch_m.eval()
    check_module(torch, tp_m, torch_m, [randn(*shape)])


def test_batch_norm_without_affine_or_tracking():
    """affine=False has no parameters; track_running_stats=False normalizes by batch stats in eval."""
    m = nn.BatchNorm2d(3, affine=False, track_running_stats=False)
    assert list(m.parameters()) == [] and m.running_mean is None and list(m.state_dict()) == []
    m.eval()
    check_module(torch, m, torch.nn.BatchNorm2d(3, affine=False, track_running_stats=False).eval(), [randn(2, 3, 4, 4)])


@pytest.mark.parametrize("shape, normalized", [((2, 5), 5), ((2, 3, 4), (3, 4))])
def test_layer_norm(shape, normalized):
    """LayerNorm matches torch with non-trivial weight and bias."""
    tp_m, torch_m = nn.LayerNorm(normalized), torch.nn.LayerNorm(normalized)
    with torch.no_grad():
        torch_m.weight.normal_()
        torch_m.bias.normal_()
    check_module(torch, tp_m, torch_m, [randn(*shape)])
    check_module(torch, nn.LayerNorm(normalized, bias=False), torch.nn.LayerNorm(normalized, bias=False), [randn(*shape)])


def test_group_norm():
    """GroupNorm matches torch."""
    tp_m, torch_m = nn.GroupNorm(2, 4), torch.nn.GroupNorm(2, 4)
    with torch.no_grad():
        torch_m.weight.normal_()
    check_module(torch, tp_m, torch_m, [randn(3, 4, 5)])


def test_embedding_matches_and_padding_idx_is_zero_with_no_grad():
    """Embedding matches torch; the padding_idx row starts at zero and gets no gradient."""
    m = nn.Embedding(10, 4, padding_idx=2)
    assert m.weight[2].abs().sum().item() == 0
    assert m.weight.abs().sum().item() > 0
    indices = np.array([[1, 2, 3], [2, 9, 0]])
    check_module(torch, m, torch.nn.Embedding(10, 4, padding_idx=2), [indices])
    assert m.weight.grad[2].abs().sum().item() == 0
    assert nn.Embedding(5, 2, padding_idx=-1).padding_idx == 4


def test_embedding_from_pretrained():
    """from_pretrained uses the given weights, frozen by default."""
    weights = tp.randn(4, 3)
    m = nn.Embedding.from_pretrained(weights)
    assert not m.weight.requires_grad
    np.testing.assert_array_equal(m(tp.tensor([3])).numpy(), weights[3:4].numpy())


def test_dropout_train_and_eval():
    """Dropout zeroes about p of the elements and rescales the rest while training; eval is identity."""
    m = nn.Dropout(0.25)
    x = tp.ones(4000)
    y = m(x).numpy()
    assert set(np.unique(y).tolist()) <= {0.0, float(np.float32(1 / 0.75))}
    assert abs((y == 0).mean() - 0.25) < 0.03
    m.eval()
    assert m(x) is x or np.array_equal(m(x).numpy(), x.numpy())
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.Dropout(1.5)


def test_default_initializations_have_torch_bounds():
    """Linear and Conv2d weights lie within kaiming_uniform(a=sqrt(5)) bounds, biases within
    1/sqrt(fan_in); norm layers start at ones and zeros; Embedding is N(0, 1)."""
    lin = nn.Linear(50, 40)
    bound = 1 / math.sqrt(50)
    assert lin.weight.abs().max().item() <= bound and lin.bias.abs().max().item() <= bound
    assert lin.weight.abs().max().item() > 0.9 * bound
    conv = nn.Conv2d(4, 8, 3)
    bound = 1 / math.sqrt(4 * 9)
    assert conv.weight.abs().max().item() <= bound and conv.bias.abs().max().item() <= bound
    assert abs(conv.weight.detach().numpy().std() - bound / math.sqrt(3)) < 0.2 * bound
    bn = nn.BatchNorm1d(3)
    assert bn.weight.tolist() == [1, 1, 1] and bn.bias.tolist() == [0, 0, 0]
    assert bn.running_var.tolist() == [1, 1, 1] and bn.num_batches_tracked.dtype is tp.int64
    emb = nn.Embedding(1000, 10).weight.detach().numpy()
    assert abs(emb.std() - 1) < 0.05 and abs(emb.mean()) < 0.05


def test_reprs_match_torch():
    """Layer reprs are torch's, character for character."""
    pairs = [
        (nn.Linear(3, 4, bias=False), torch.nn.Linear(3, 4, bias=False)),
        (nn.Conv2d(3, 8, 3, stride=2, padding=1, groups=1, bias=False), torch.nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False)),
        (nn.Conv2d(4, 4, 3, padding="same", padding_mode="reflect", groups=2), torch.nn.Conv2d(4, 4, 3, padding="same", padding_mode="reflect", groups=2)),
        (nn.ConvTranspose2d(3, 2, 3, stride=2, output_padding=1), torch.nn.ConvTranspose2d(3, 2, 3, stride=2, output_padding=1)),
        (nn.Conv1d(3, 2, 5, dilation=2), torch.nn.Conv1d(3, 2, 5, dilation=2)),
        (nn.MaxPool2d(2), torch.nn.MaxPool2d(2)), (nn.AvgPool2d(3, 1, 1), torch.nn.AvgPool2d(3, 1, 1)),
        (nn.AdaptiveAvgPool2d((1, 1)), torch.nn.AdaptiveAvgPool2d((1, 1))),
        (nn.BatchNorm2d(4, momentum=None), torch.nn.BatchNorm2d(4, momentum=None)),
        (nn.BatchNorm1d(4, bias=False), torch.nn.BatchNorm1d(4, bias=False)),
        (nn.LayerNorm(3, elementwise_affine=False), torch.nn.LayerNorm(3, elementwise_affine=False)),
        (nn.LayerNorm(5), torch.nn.LayerNorm(5)), (nn.GroupNorm(2, 4), torch.nn.GroupNorm(2, 4)),
        (nn.Dropout(0.1), torch.nn.Dropout(0.1)), (nn.Embedding(10, 3, padding_idx=0), torch.nn.Embedding(10, 3, padding_idx=0)),
        (nn.Flatten(), torch.nn.Flatten()), (nn.Unflatten(1, (2, 3)), torch.nn.Unflatten(1, (2, 3))),
        (nn.Identity(), torch.nn.Identity()), (nn.Bilinear(2, 3, 4), torch.nn.Bilinear(2, 3, 4)),
    ]
    for ours, theirs in pairs:
        assert repr(ours) == repr(theirs)


def test_wrong_input_shapes_name_the_layer():
    """A wrong input shape raises with the layer's description and the expected shape."""
    with pytest.raises(RuntimeError) as info:
        nn.Linear(784, 10)(tp.zeros(32, 100))
    assert str(info.value) == (
        "Linear(in_features=784, out_features=10, bias=True): expected input with last dimension 784, got shape [32, 100]"
    )
    with pytest.raises(RuntimeError, match=r"Conv2d\(3, 16, kernel_size=\(3, 3\).*expected input with 3 channels.*got shape \[8, 4, 32, 32\]"):
        nn.Conv2d(3, 16, 3)(tp.zeros(8, 4, 32, 32))
    with pytest.raises(RuntimeError, match=r"Conv1d\(2, 4.*got shape \[3, 8\]"):
        nn.Conv1d(2, 4, 3)(tp.zeros(3, 8))
    with pytest.raises(RuntimeError, match=r"BatchNorm2d\(3, .*expected input of shape \[N, 3, H, W\], got shape \[2, 3, 4\]"):
        nn.BatchNorm2d(3)(tp.zeros(2, 3, 4))
    with pytest.raises(RuntimeError, match=r"LayerNorm\(\(5,\).*got shape \[2, 4\]"):
        nn.LayerNorm(5)(tp.zeros(2, 4))
    with pytest.raises(RuntimeError, match=r"GroupNorm\(2, 4.*got shape \[2, 6\]"):
        nn.GroupNorm(2, 4)(tp.zeros(2, 6))
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)


def test_factory_kwargs_set_dtype():
    """dtype= makes float64 parameters and buffers."""
    m = nn.BatchNorm1d(3, dtype=tp.float64)
    assert m.weight.dtype is tp.float64 and m.running_mean.dtype is tp.float64
    assert nn.Linear(2, 2, dtype=tp.float64).weight.dtype is tp.float64


def test_module_copies_torch_state_dict_names():
    """Every layer's state_dict keys equal torch's, so checkpoints port by name."""
    pairs = [(nn.BatchNorm2d(3), torch.nn.BatchNorm2d(3)), (nn.Conv2d(2, 3, 3), torch.nn.Conv2d(2, 3, 3)),
             (nn.LayerNorm(3), torch.nn.LayerNorm(3)), (nn.Embedding(3, 2), torch.nn.Embedding(3, 2))]
    for ours, theirs in pairs:
        assert list(ours.state_dict()) == list(theirs.state_dict())
        copy_torch_weights(theirs, ours)
