"""The 3-D (volumetric) layers of issue 13: conv3d, conv_transpose3d, the 3-D poolings, lp_pool3d,
max_unpool3d, dropout3d, their modules, the lazy layers, CircularPad and the top-level aliases,
against PyTorch 2.13 on every backend (values, indices, gradients, errors), plus float64 sums
written out in NumPy that need no PyTorch."""
import itertools
import warnings

import numpy as np
import pytest

import tensorplug as tp
from torch_reference import assert_same_error, compare, torch_or_skip

R = np.random.default_rng(13)


def f(*shape):
    return R.standard_normal(shape)


def F(lib):
    return lib.nn.functional


CASES = {
    "conv3d bias": (lambda L, x, w, b: F(L).conv3d(x, w, b), [f(2, 3, 5, 6, 4), f(4, 3, 2, 3, 2), f(4)]),
    "conv3d stride padding dilation": (lambda L, x, w: F(L).conv3d(x, w, None, (2, 1, 2), (1, 2, 0), (2, 1, 1)),
                                       [f(2, 3, 7, 6, 5), f(4, 3, 2, 3, 2)]),
    "conv3d groups": (lambda L, x, w: F(L).conv3d(x, w, stride=2, padding=1, groups=3), [f(1, 6, 5, 5, 5), f(3, 2, 3, 3, 3)]),
    "conv3d same even kernel": (lambda L, x, w: F(L).conv3d(x, w, padding="same", dilation=(1, 2, 1)),
                                [f(1, 2, 5, 5, 5), f(3, 2, 2, 3, 4)]),
    "conv3d valid": (lambda L, x, w: F(L).conv3d(x, w, padding="valid"), [f(1, 2, 3, 4, 5), f(2, 2, 3, 1, 2)]),
    "conv3d unbatched": (lambda L, x, w: F(L).conv3d(x, w), [f(2, 4, 4, 4), f(3, 2, 2, 2, 2)]),
    "conv3d empty batch": (lambda L, x, w: F(L).conv3d(x, w), [f(0, 2, 4, 4, 4), f(3, 2, 2, 2, 2)]),
    "conv_transpose3d bias": (lambda L, x, w, b: F(L).conv_transpose3d(x, w, b), [f(2, 3, 3, 4, 2), f(3, 2, 2, 3, 2), f(2)]),
    "conv_transpose3d geometry": (lambda L, x, w: F(L).conv_transpose3d(x, w, None, (2, 3, 1), (1, 0, 1), (1, 2, 0), 1, (1, 1, 2)),
                                  [f(2, 3, 3, 4, 4), f(3, 2, 3, 3, 2)]),
    "conv_transpose3d groups dilation": (lambda L, x, w: F(L).conv_transpose3d(
        x, w, stride=2, padding=1, output_padding=(0, 1, 1), groups=2, dilation=(2, 1, 1)), [f(1, 4, 3, 3, 3), f(4, 3, 3, 2, 2)]),
    "conv_transpose3d output_padding below dilation": (lambda L, x, w: F(L).conv_transpose3d(
        x, w, output_padding=1, dilation=2), [f(1, 2, 2, 3, 2), f(2, 1, 2, 2, 2)]),
    "conv_transpose3d unbatched": (lambda L, x, w: F(L).conv_transpose3d(x, w, stride=2), [f(2, 3, 3, 3), f(2, 1, 2, 2, 2)]),
    "conv_transpose3d empty batch": (lambda L, x, w: F(L).conv_transpose3d(x, w), [f(0, 2, 2, 2, 2), f(2, 1, 2, 2, 2)]),
    "max_pool3d": (lambda L, x: F(L).max_pool3d(x, 2), [f(2, 3, 4, 6, 5)]),
    "max_pool3d geometry ceil_mode": (lambda L, x: F(L).max_pool3d(
        x, (3, 2, 3), (2, 1, 2), (1, 1, 1), (1, 2, 1), ceil_mode=True, return_indices=True), [f(2, 2, 7, 6, 8)]),
    "max_pool3d ceil_mode last window": (lambda L, x: F(L).max_pool3d(x, 2, 2, 1, ceil_mode=True, return_indices=True),
                                         [f(1, 1, 4, 5, 6)]),
    "max_pool3d unbatched": (lambda L, x: F(L).max_pool3d(x, 2, return_indices=True), [f(2, 4, 4, 4)]),
    "max_pool3d ties": (lambda L, x: F(L).max_pool3d(x.round(), 2, 1, 1, return_indices=True), [f(1, 2, 4, 4, 4)]),
    "max_pool3d empty batch": (lambda L, x: F(L).max_pool3d(x, 2, return_indices=True), [f(0, 2, 4, 4, 4)]),
    "avg_pool3d": (lambda L, x: F(L).avg_pool3d(x, 2), [f(2, 3, 4, 6, 5)]),
    "avg_pool3d geometry ceil_mode": (lambda L, x: F(L).avg_pool3d(x, (3, 2, 3), (2, 1, 2), (1, 1, 1), ceil_mode=True),
                                      [f(2, 2, 7, 6, 8)]),
    "avg_pool3d count_include_pad False": (lambda L, x: F(L).avg_pool3d(
        x, (3, 2, 3), (2, 1, 2), (1, 1, 1), ceil_mode=True, count_include_pad=False), [f(2, 2, 7, 6, 8)]),
    "avg_pool3d divisor_override": (lambda L, x: F(L).avg_pool3d(x, 3, 2, 1, divisor_override=5), [f(1, 2, 5, 6, 7)]),
    "avg_pool3d unbatched": (lambda L, x: F(L).avg_pool3d(x, (1, 2, 2)), [f(2, 3, 4, 4)]),
    "avg_pool3d empty batch": (lambda L, x: F(L).avg_pool3d(x, 2), [f(0, 2, 4, 4, 4)]),
    "adaptive_avg_pool3d": (lambda L, x: F(L).adaptive_avg_pool3d(x, (2, 3, None)), [f(2, 3, 5, 7, 4)]),
    "adaptive_avg_pool3d unbatched": (lambda L, x: F(L).adaptive_avg_pool3d(x, 2), [f(3, 5, 3, 4)]),
    "adaptive_max_pool3d": (lambda L, x: F(L).adaptive_max_pool3d(x, (2, 3, 3), True), [f(2, 3, 5, 7, 4)]),
    "adaptive_max_pool3d growing": (lambda L, x: F(L).adaptive_max_pool3d(x, (4, 3, 5), True), [f(3, 3, 2, 4)]),
    "adaptive_max_pool3d ties": (lambda L, x: F(L).adaptive_max_pool3d(x.round(), 2, True), [f(1, 2, 5, 5, 5)]),
    # PyTorch's backward refuses an empty output, so only the values are compared.
    "adaptive_max_pool3d empty output": (lambda L, x: F(L).adaptive_max_pool3d(x.detach(), (2, None, 0), True),
                                         [f(1, 2, 3, 4, 5)]),
    "lp_pool3d": (lambda L, x: F(L).lp_pool3d(x, 2, (2, 1, 2)), [f(2, 2, 4, 3, 4)]),
    "lp_pool3d odd p ceil_mode": (lambda L, x: F(L).lp_pool3d(x.abs() + 0.1, 3, 2, ceil_mode=True), [f(2, 3, 5, 5)]),
    "dropout3d eval": (lambda L, x: F(L).dropout3d(x, 0.5, training=False), [f(2, 3, 2, 2, 2)]),
    "tp.conv3d": (lambda L, x, w: L.conv3d(x, w, padding=1), [f(1, 2, 3, 3, 3), f(2, 2, 3, 3, 3)]),
    "tp.conv_transpose3d": (lambda L, x, w: L.conv_transpose3d(x, w, stride=2), [f(1, 2, 2, 2, 2), f(2, 1, 2, 2, 2)]),
    "tp.max_pool3d": (lambda L, x: L.max_pool3d(x, 2), [f(1, 2, 4, 4, 4)]),
    "tp.max_pool1d": (lambda L, x: L.max_pool1d(x, 2), [f(1, 2, 6)]),
    "tp.avg_pool1d": (lambda L, x: L.avg_pool1d(x, 3, padding=1), [f(1, 2, 6)]),
    "tp.adaptive_avg_pool1d": (lambda L, x: L.adaptive_avg_pool1d(x, 4), [f(1, 2, 6)]),
    "tp.adaptive_max_pool1d": (lambda L, x: L.adaptive_max_pool1d(x, 4), [f(1, 2, 6)]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_matches_pytorch(case, device):
    """Values, indices and gradients as PyTorch's, inputs on ``device``."""
    torch = torch_or_skip()
    fn, arrays = CASES[case]
    with tp.device(device), warnings.catch_warnings():
        # PyTorch warns that padding="same" with an even kernel copies the input.
        warnings.filterwarnings("ignore", "Using padding='same'", UserWarning)
        compare(torch, fn, arrays, device, rtol=1e-8, atol=1e-10)


def _conv3d_reference(x, w, stride, padding):
    """Cross-correlation as the definition's sum, in float64 NumPy."""
    x = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in padding])
    n, _, d, h, wd = x.shape
    o, _, kd, kh, kw = w.shape
    out = [(size - k) // s + 1 for size, k, s in zip((d, h, wd), (kd, kh, kw), stride)]
    result = np.zeros((n, o, *out))
    for i, j, k in itertools.product(*(range(size) for size in out)):
        patch = x[:, :, i * stride[0]:i * stride[0] + kd, j * stride[1]:j * stride[1] + kh, k * stride[2]:k * stride[2] + kw]
        result[:, :, i, j, k] = np.tensordot(patch, w, axes=([1, 2, 3, 4], [1, 2, 3, 4]))
    return result


def test_conv3d_and_its_transpose_against_the_definition(device):
    """conv3d is the windowed sum; conv_transpose3d is its adjoint (<conv(x), y> = <x, convT(y)>),
    both in float64 without PyTorch."""
    x, w = f(2, 3, 5, 4, 6), f(4, 3, 3, 2, 3)
    got = F(tp).conv3d(tp.tensor(x, device=device), tp.tensor(w, device=device), stride=(2, 1, 2), padding=(1, 0, 1))
    expected = _conv3d_reference(x, w, (2, 1, 2), (1, 0, 1))
    np.testing.assert_allclose(got.cpu().numpy(), expected, rtol=1e-12, atol=1e-12)
    y = f(*expected.shape)
    back = F(tp).conv_transpose3d(tp.tensor(y, device=device), tp.tensor(w, device=device), stride=(2, 1, 2),
                                  padding=(1, 0, 1), output_padding=(0, 0, 1))
    assert back.shape == x.shape
    np.testing.assert_allclose((back.cpu().numpy() * x).sum(), (expected * y).sum(), rtol=1e-12)


def test_max_pool3d_indices_round_trip_through_max_unpool3d(device):
    """max_unpool3d puts each maximum back at the flat index max_pool3d gave (PyTorch's values and
    gradient); MaxPool3d/MaxUnpool3d modules do the same."""
    torch = torch_or_skip()
    x = f(2, 2, 4, 6, 5)
    results = {}
    for L in (tp, torch):
        dev = {"device": device} if L is tp else {}
        pooled, indices = F(L).max_pool3d(L.tensor(x, **dev), 2, return_indices=True)
        source = pooled.detach().requires_grad_(True)
        out = L.nn.MaxUnpool3d(2)(source, indices, output_size=(4, 6, 5))
        weights = L.tensor(np.arange(out.numel()).reshape(tuple(out.shape)) % 7, dtype=out.dtype, **dev)
        (out * weights).sum().backward()
        results[L] = (out.detach().cpu().numpy(), source.grad.cpu().numpy(), indices.cpu().numpy())
    for ours, theirs in zip(results[tp], results[torch]):
        np.testing.assert_allclose(ours, theirs)
    with pytest.raises(RuntimeError, match="Found an invalid max index: 64"):
        F(tp).max_unpool3d(tp.ones(1, 1, 2, 2, 2, device=device), tp.full((1, 1, 2, 2, 2), 64, device=device), 2)


def test_pooling_of_integer_and_infinite_inputs(device):
    """max_pool3d takes integer input; a window of -inf alone names its first element inside the
    input (never the padding), as PyTorch's (values from PyTorch 2.13)."""
    x = tp.arange(64, device=device).reshape(1, 1, 4, 4, 4)
    assert F(tp).max_pool3d(x, 2).flatten().tolist() == [21, 23, 29, 31, 53, 55, 61, 63]
    inf = tp.full((1, 1, 3, 3, 3), float("-inf"), device=device)
    values, indices = F(tp).max_pool3d(inf, 2, 2, 1, return_indices=True)
    assert indices.flatten().tolist() == [0, 1, 3, 4, 9, 10, 12, 13]
    assert np.isneginf(values.cpu().numpy()).all()
    # The same rule in 2-D, where a dilated window's first inside element is not at 0 (the
    # decomposition used to name the padding, and max_pool3d's gather then raised).
    flat = F(tp).max_pool2d(tp.full((1, 1, 3, 5), float("-inf"), device=device), 3, 2, 1, dilation=2, return_indices=True)[1]
    assert flat.flatten().tolist() == [6, 6]


def test_dropout3d_drops_whole_channels(device):
    """Training-mode dropout3d zeroes whole (sample, channel) volumes and scales the rest;
    unbatched input gets one mask per channel; other ranks warn as PyTorch's."""
    y = F(tp).dropout3d(tp.ones(4, 50, 2, 2, 3, device=device), 0.5).cpu().numpy()
    volumes = y.reshape(4, 50, -1)
    assert ((volumes == 0).all(-1) | (volumes == 2).all(-1)).all()
    assert 0 < (volumes[:, :, 0] == 0).mean() < 1
    z = tp.nn.Dropout3d(0.5)(tp.ones(50, 2, 2, 2, device=device)).cpu().numpy().reshape(50, -1)
    assert ((z == 0).all(-1) | (z == 2).all(-1)).all()
    with pytest.warns(UserWarning, match="Received a 3-D input to dropout3d"):
        F(tp).dropout3d(tp.ones(3, 4, 5, device=device), 0.5)
    kept = tp.ones(2, 3, 2, 2, 2, device=device)
    assert F(tp).dropout3d(kept, 0.5, training=False) is kept


def test_modules_match_pytorch():
    """The 3-D modules and CircularPad compute what PyTorch's do, with its parameters,
    state_dict keys, initialization bounds and repr."""
    torch = torch_or_skip()
    x = inputs = f(2, 4, 4, 5, 6).astype(np.float32)
    modules = [
        lambda nn: nn.MaxPool3d(2), lambda nn: nn.MaxPool3d((3, 2, 2), 2, 1, ceil_mode=True),
        lambda nn: nn.AvgPool3d(2), lambda nn: nn.AvgPool3d(3, 2, 1, count_include_pad=False),
        lambda nn: nn.AdaptiveAvgPool3d((2, None, 3)), lambda nn: nn.AdaptiveMaxPool3d(2),
        lambda nn: nn.LPPool3d(2, 2), lambda nn: nn.Dropout3d(0.3), lambda nn: nn.BatchNorm3d(4),
        lambda nn: nn.InstanceNorm3d(4, affine=True), lambda nn: nn.CircularPad3d(1),
        lambda nn: nn.CircularPad3d((1, 0, 2, 1, 0, 3)), lambda nn: nn.MaxUnpool3d(2),
        (lambda nn: nn.CircularPad2d((1, 2, 0, 1)), x[0]), (lambda nn: nn.CircularPad1d(2), x[0, 0]),
    ]
    for item in modules:
        make, x = item if isinstance(item, tuple) else (item, inputs)
        ours, theirs = make(tp.nn).eval(), make(torch.nn).eval()
        assert repr(ours) == repr(theirs)
        assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
        if isinstance(ours, tp.nn.MaxUnpool3d):
            continue
        np.testing.assert_allclose(ours(tp.tensor(x)).detach().numpy(), theirs(torch.tensor(x)).detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
    x = inputs
    for make in (lambda nn: nn.Conv3d(4, 6, (3, 2, 3), (2, 1, 1), (1, 0, 2), groups=2),
                 lambda nn: nn.Conv3d(4, 2, 3, padding="same", padding_mode="circular", bias=False),
                 lambda nn: nn.ConvTranspose3d(4, 3, 2, stride=2, output_padding=1, dilation=(1, 2, 1))):
        ours, theirs = make(tp.nn), make(torch.nn)
        assert repr(ours) == repr(theirs)
        assert {k: tuple(v.shape) for k, v in ours.state_dict().items()} == {
            k: tuple(v.shape) for k, v in theirs.state_dict().items()}
        bound = 1 / np.sqrt(np.prod(theirs.weight.shape[1:]))  # kaiming_uniform(a=sqrt(5)) of the fan-in
        assert np.abs(ours.weight.detach().numpy()).max() <= bound
        ours.load_state_dict({k: tp.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
        np.testing.assert_allclose(ours(tp.tensor(x)).detach().numpy(), theirs(torch.tensor(x)).detach().numpy(),
                                   rtol=1e-4, atol=1e-5)


def test_lazy_layers_materialize_on_the_first_call(device):
    """LazyConv3d, LazyConvTranspose*d, LazyBatchNorm*d and LazyInstanceNorm*d read their channels
    from the first call, keep their parameters' identity and become the eager layer, with
    PyTorch's reprs and defaults."""
    conv = tp.nn.LazyConv3d(4, 3, padding=1, device=device)
    assert repr(conv) == "LazyConv3d(0, 4, kernel_size=(3, 3, 3), stride=(1, 1, 1), padding=(1, 1, 1))"
    weight = conv.weight
    assert conv(tp.ones(2, 3, 4, 4, 4, device=device)).shape == (2, 4, 4, 4, 4)
    assert type(conv) is tp.nn.Conv3d and conv.weight is weight and weight.shape == (4, 3, 3, 3, 3)
    for nd in (1, 2, 3):
        up = getattr(tp.nn, f"LazyConvTranspose{nd}d")(6, 2, stride=2, groups=3, device=device)
        out = up(tp.ones((1, 3) + (2,) * nd, device=device))
        assert type(up) is getattr(tp.nn, f"ConvTranspose{nd}d") and up.weight.shape == (3, 2) + (2,) * nd
        assert out.shape == (1, 6) + (4,) * nd
    norm = tp.nn.LazyBatchNorm3d(device=device)
    assert repr(norm) == "LazyBatchNorm3d(0, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)"
    assert sorted(norm.state_dict()) == ["bias", "num_batches_tracked", "running_mean", "running_var", "weight"]
    norm(tp.randn(2, 5, 2, 2, 2, device=device))
    assert type(norm) is tp.nn.BatchNorm3d and norm.running_mean.shape == (5,) and norm.num_batches_tracked.item() == 1
    instance = tp.nn.LazyInstanceNorm2d(device=device)
    instance(tp.randn(3, 4, 4, device=device))  # unbatched: the channels are the first dim
    assert type(instance) is tp.nn.InstanceNorm2d and instance.num_features == 3 and instance.affine
    with pytest.raises(ValueError, match="divisible by groups"):
        tp.nn.LazyConvTranspose2d(4, 3, groups=2)(tp.ones(1, 3, 5, 5))


ERRORS = [
    (lambda L: F(L).conv3d(L.ones(3, 4, 4), L.ones(2, 3, 2, 2, 2)), RuntimeError, "Expected 4D \\(unbatched\\) or 5D \\(batched\\) input to conv3d"),
    (lambda L: F(L).conv3d(L.ones(1, 3, 4, 4, 4), L.ones(2, 3, 5, 2, 2)), RuntimeError, "Kernel size can't be greater than actual input size"),
    (lambda L: F(L).conv3d(L.ones(1, 3, 4, 4, 4), L.ones(2, 2, 2, 2, 2)), RuntimeError, "expected input\\[1, 3, 4, 4, 4\\] to have 2 channels"),
    (lambda L: F(L).conv3d(L.ones(1, 3, 4, 4, 4), L.ones(2, 3, 2, 2, 2), stride=(1, 1)), RuntimeError, "a list of 3 values"),
    (lambda L: F(L).conv3d(L.ones(1, 3, 4, 4, 4), L.ones(2, 3, 2, 2, 2), stride=2, padding="same"), RuntimeError,
     "padding='same' is not supported for strided convolutions"),
    (lambda L: F(L).conv_transpose3d(L.ones(1, 3, 4, 4, 4), L.ones(3, 2, 2, 2, 2), stride=2, output_padding=2), RuntimeError,
     "output padding must be smaller than either stride or dilation"),
    (lambda L: F(L).conv_transpose3d(L.ones(1, 4, 4, 4, 4), L.ones(3, 2, 2, 2, 2)), RuntimeError, "to have 3 channels, but got 4"),
    (lambda L: F(L).max_pool3d(L.ones(2, 3, 5, 6, 7), 2, padding=2), RuntimeError, "pad should be at most half of effective kernel size"),
    (lambda L: F(L).max_pool3d(L.ones(1, 1, 5, 5, 5), 3, padding=2, dilation=2), RuntimeError,
     "pad should be smaller than or equal to half of kernel size"),
    (lambda L: F(L).max_pool3d(L.ones(1, 1, 5, 5, 5), (2, 2)), RuntimeError, "kernel_size must either be a single int, or a tuple of three ints"),
    (lambda L: F(L).max_pool3d(L.ones(3, 5, 6), 2), RuntimeError, "non-empty 4D or 5D \\(batch mode\\) tensor expected for input"),
    (lambda L: F(L).max_pool3d(L.ones(1, 1, 1, 1, 1), 3), RuntimeError, "Output size is too small"),
    (lambda L: F(L).max_pool3d(L.ones(1, 1, 5, 5, 5), 2, stride=-1), RuntimeError, "stride should be greater than zero"),
    (lambda L: F(L).max_pool3d(L.ones(1, 1, 5, 5, 5), 2, stride=0), RuntimeError, "stride should not be zero"),
    (lambda L: F(L).max_pool3d(L.ones(1, 1, 5, 5, 5), 2, dilation=0), RuntimeError, "dilation should be greater than zero"),
    (lambda L: F(L).avg_pool3d(L.ones(1, 1, 5, 5, 5), 2, divisor_override=0), RuntimeError, "divisor must be not zero"),
    (lambda L: F(L).avg_pool3d(L.ones(1, 1, 2, 2, 2), 3, padding=1), RuntimeError, "smaller than kernel size"),
    (lambda L: F(L).adaptive_avg_pool3d(L.ones(1, 1, 0, 5, 5), 2), RuntimeError, "adaptive_avg_pool3d"),
    (lambda L: F(L).adaptive_max_pool3d(L.ones(3, 5, 6), 3), RuntimeError, "Expected 4D or 5D tensor"),
    (lambda L: F(L).max_unpool3d(L.ones(1, 1, 2, 2, 2), L.zeros(1, 1, 2, 2, 2, dtype=L.int64), 2, output_size=(9, 9, 9)),
     ValueError, "invalid output_size"),
    (lambda L: L.nn.BatchNorm3d(3)(L.ones(2, 3, 4, 4)), (ValueError, RuntimeError), "5D input|\\[N, 3, D, H, W\\]"),
    (lambda L: L.nn.CircularPad1d(1)(L.ones(2, 3, 4, 5)), ValueError, "expected 2D or 3D input"),
    (lambda L: L.nn.CircularPad1d(3)(L.ones(2, 3, 2)), RuntimeError, "Padding value causes wrapping around more than once"),
]


@pytest.mark.parametrize("index", range(len(ERRORS)))
def test_errors_match_pytorch(index, device):
    """Bad input raises PyTorch's exception and words before any kernel runs, on every device."""
    torch = torch_or_skip()
    call, error, words = ERRORS[index]
    with tp.device(device):
        assert_same_error(torch, call, error, words)
