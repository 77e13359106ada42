"""The nn.functional functions, modules and top-level aliases tensorplug added for issue 13:
values and gradients against PyTorch 2.13 on every backend, module behaviour (lazy layers,
parameters, repr), deprecation warnings and errors."""
import warnings

import numpy as np
import pytest

import tensorplug as tp
from torch_reference import assert_same_error, compare, torch_or_skip

R = np.random.default_rng(5)


def f(*shape):
    return R.standard_normal(shape)


def F(lib):
    return lib.nn.functional


CASES = {
    "prelu channels": (lambda L, x, w: F(L).prelu(x, w), [f(2, 3, 4), np.array([0.1, -0.2, 0.3])]),
    "prelu one": (lambda L, x, w: x.prelu(w), [f(5), np.array([0.25])]),
    "hardshrink": (lambda L, x: F(L).hardshrink(x, 0.3), [f(10)]),
    "softshrink": (lambda L, x: F(L).softshrink(x, 0.3), [f(10)]),
    "rrelu eval": (lambda L, x: F(L).rrelu(x), [f(10)]),
    "rms_norm": (lambda L, x, w: F(L).rms_norm(x, (3, 4), w), [f(2, 3, 4), f(3, 4)]),
    "rms_norm eps": (lambda L, x: F(L).rms_norm(x, (4,), eps=0.1), [f(2, 4) * 0.1]),
    "local_response_norm 3d": (lambda L, x: F(L).local_response_norm(x, 3, 0.1, 0.5, 2.0), [f(2, 5, 4)]),
    "local_response_norm 4d": (lambda L, x: F(L).local_response_norm(x, 2), [f(2, 4, 3, 3)]),
    "pdist": (lambda L, x: F(L).pdist(x), [f(5, 3)]),
    "pdist p1": (lambda L, x: F(L).pdist(x, 1), [f(4, 3)]),
    "pdist p3": (lambda L, x: F(L).pdist(x, 3), [f(4, 3)]),
    "channel_shuffle": (lambda L, x: F(L).channel_shuffle(x, 3), [f(2, 6, 2)]),
    "lp_pool1d": (lambda L, x: F(L).lp_pool1d(x, 2, 3, 2), [f(2, 3, 8)]),
    "lp_pool2d": (lambda L, x: F(L).lp_pool2d(x, 3, (2, 3), ceil_mode=True), [f(1, 2, 5, 7)]),
    "upsample_nearest": (lambda L, x: F(L).upsample_nearest(x, scale_factor=2), [f(1, 2, 3, 3)]),
    "upsample_bilinear": (lambda L, x: F(L).upsample_bilinear(x, size=(5, 4)), [f(1, 2, 3, 3)]),
    "cosine_embedding_loss": (lambda L, a, b: F(L).cosine_embedding_loss(a, b, L.tensor([1, -1, 1]), margin=0.2), [f(3, 4), f(3, 4)]),
    "cosine_embedding_loss 1d": (lambda L, a, b: F(L).cosine_embedding_loss(a, b, L.tensor(-1), reduction="sum"), [f(4), f(4)]),
    "hinge_embedding_loss": (lambda L, x: F(L).hinge_embedding_loss(x, L.tensor([1.0, -1.0, 1.0, -1.0]), 0.5, reduction="none"), [f(4)]),
    "margin_ranking_loss": (lambda L, a, b, t: F(L).margin_ranking_loss(a, b, t.sign(), margin=0.1), [f(6), f(6), f(6)]),
    "multi_margin_loss": (lambda L, x: F(L).multi_margin_loss(x, L.tensor([0, 2, 1])), [f(3, 4)]),
    "multi_margin_loss p2 weight": (lambda L, x, w: F(L).multi_margin_loss(x, L.tensor([0, 2, 1]), 2, 0.7, w.abs().detach()), [f(3, 4), f(4)]),
    "multi_margin_loss 1d": (lambda L, x: F(L).multi_margin_loss(x, L.tensor(1), reduction="none"), [f(4)]),
    "multilabel_margin_loss": (lambda L, x: F(L).multilabel_margin_loss(x, L.tensor([[3, 0, -1, 1], [1, 2, 3, -1]])), [f(2, 4)]),
    "multilabel_margin_loss repeated": (lambda L, x: F(L).multilabel_margin_loss(x, L.tensor([0, 0, -1, 2]), reduction="none"), [f(4)]),
    "multilabel_soft_margin_loss": (lambda L, x, y: F(L).multilabel_soft_margin_loss(x, (y > 0).double()), [f(3, 5), f(3, 5)]),
    "multilabel_soft_margin_loss weight": (lambda L, x, y, w: F(L).multilabel_soft_margin_loss(x, (y > 0).double(), w, reduction="sum"), [f(3, 5), f(3, 5), f(5)]),
    "gaussian_nll_loss": (lambda L, x, y, v: F(L).gaussian_nll_loss(x, y, v.abs()), [f(3, 4), f(3, 4), f(3, 4)]),
    "gaussian_nll_loss var per row": (lambda L, x, y, v: F(L).gaussian_nll_loss(x, y, v.abs(), full=True, reduction="sum"), [f(3, 4), f(3, 4), f(3)]),
    "gaussian_nll_loss eps": (lambda L, x, y, v: F(L).gaussian_nll_loss(x, y, v.abs() * 1e-8, reduction="none"), [f(3, 1), f(3, 1), f(3, 1)]),
    "triplet_margin_with_distance_loss": (lambda L, a, p, n: F(L).triplet_margin_with_distance_loss(a, p, n, swap=True), [f(4, 3), f(4, 3), f(4, 3)]),
    "triplet custom distance": (lambda L, a, p, n: F(L).triplet_margin_with_distance_loss(
        a, p, n, distance_function=lambda x, y: 1 - F(L).cosine_similarity(x, y), margin=0.5), [f(4, 3), f(4, 3), f(4, 3)]),
    "tp.softmax": (lambda L, x: L.softmax(x, 1), [f(2, 3)]),
    "tp.log_softmax dtype": (lambda L, x: L.log_softmax(x.float(), 0, L.float64), [f(2, 3)]),
    "tp.layer_norm": (lambda L, x, w, b: L.layer_norm(x, (3,), w, b), [f(2, 3), f(3), f(3)]),
    "tp.group_norm": (lambda L, x: L.group_norm(x, 2), [f(2, 4, 3)]),
    "tp.batch_norm": (lambda L, x, w, b: L.batch_norm(x, w, b, None, None, True, 0.1, 1e-5, False), [f(4, 3), f(3), f(3)]),
    "tp.instance_norm": (lambda L, x: L.instance_norm(x, None, None, None, None, True, 0.1, 1e-5, False), [f(2, 3, 5)]),
    "tp.embedding": (lambda L, w: L.embedding(w, L.tensor([[1, 4], [0, 1]]), 1), [f(5, 3)]),
    "tp.dropout eval": (lambda L, x: L.dropout(x, 0.5, False), [f(4)]),
    "tp.bilinear": (lambda L, a, b, w: L.bilinear(a, b, w), [f(2, 3), f(2, 4), f(5, 3, 4)]),
    "tp.conv1d": (lambda L, x, w: L.conv1d(x, w, padding=1), [f(1, 2, 5), f(3, 2, 3)]),
    "tp.conv_transpose2d": (lambda L, x, w: L.conv_transpose2d(x, w, stride=2), [f(1, 2, 3, 3), f(2, 3, 2, 2)]),
    "tp.prelu": (lambda L, x, w: L.prelu(x, w), [f(2, 3), np.array([0.2])]),
    "tp.selu": (lambda L, x: L.selu(x), [f(5)]),
    "tp.celu": (lambda L, x: L.celu(x, 2.0), [f(5)]),
    "tp.threshold": (lambda L, x: L.threshold(x, 0.1, 20.0), [f(5)]),
    "tp.relu_": (lambda L, x: L.relu_(x.clone()), [f(5)]),
    "tp.hardshrink": (lambda L, x: L.hardshrink(x), [f(5)]),
    "tp.pdist": (lambda L, x: L.pdist(x), [f(3, 2)]),
    "tp.cosine_similarity": (lambda L, a, b: L.cosine_similarity(a, b, 0), [f(3, 2), f(3, 2)]),
    "tp.pairwise_distance": (lambda L, a, b: L.pairwise_distance(a, b), [f(3, 2), f(3, 2)]),
    "tp.rms_norm": (lambda L, x: L.rms_norm(x, (2,)), [f(3, 2)]),
    "tp.pixel_shuffle": (lambda L, x: L.pixel_shuffle(x, 2), [f(1, 4, 2, 2)]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_matches_pytorch(case, device):
    """Values and gradients as PyTorch's, inputs on ``device``."""
    torch = torch_or_skip()
    fn, arrays = CASES[case]
    with tp.device(device), warnings.catch_warnings():
        warnings.filterwarnings("ignore", "`nn.functional.upsample", UserWarning)  # tested below
        compare(torch, fn, arrays, device, rtol=1e-8, atol=1e-10)


def test_max_unpool_inverts_max_pool_with_gradients():
    """max_unpool puts each maximum back where max_pool found it (PyTorch's values and
    gradient); a bad index raises PyTorch's error before writing."""
    torch = torch_or_skip()
    x = f(2, 3, 6, 5)
    for L in (tp, torch):
        pooled, indices = F(L).max_pool2d(L.tensor(x), 2, return_indices=True)
        source = pooled.detach().requires_grad_(True)
        out = F(L).max_unpool2d(source, indices, 2, output_size=(6, 5))
        (out * L.tensor(np.arange(out.numel()).reshape(tuple(out.shape)) % 7, dtype=out.dtype)).sum().backward()
        if L is tp:
            ours = (out.detach().numpy(), source.grad.numpy())
        else:
            np.testing.assert_allclose(ours[0], out.detach().numpy())
            np.testing.assert_allclose(ours[1], source.grad.numpy())
    got = F(tp).max_unpool1d(tp.tensor([[[1.0, 2.0]]]), tp.tensor([[[1, 3]]]), 2, output_size=[5])
    assert got.tolist() == [[[0.0, 1.0, 0.0, 2.0, 0.0]]]
    with pytest.raises(RuntimeError, match="Found an invalid max index: 16"):
        F(tp).max_unpool2d(tp.ones(1, 1, 2, 2), tp.tensor([[[[0, 3], [8, 16]]]]), 2)


def test_alpha_dropout_keeps_mean_and_variance(device):
    """Training-mode alpha dropout of standard normal SELU-like input keeps mean 0 and variance
    1 (its purpose); eval mode and p = 0 are the identity; channels drop together."""
    x = tp.randn(200000, device=device)
    y = tp.nn.functional.alpha_dropout(x, 0.3, training=True)
    assert abs(y.mean().item()) < 0.02 and abs(y.var().item() - 1) < 0.03
    assert tp.nn.functional.alpha_dropout(x, 0.3) is x
    z = tp.nn.functional.feature_alpha_dropout(tp.ones(4, 50, 3, device=device), 0.5, training=True)
    per_channel = z.cpu().numpy()
    assert (per_channel == per_channel[:, :, :1]).all()


def test_rrelu_training_slopes_lie_in_the_range():
    x = -tp.ones(10000)
    y = tp.nn.functional.rrelu(x, 0.1, 0.3, training=True)
    slopes = -y.numpy()
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3 and abs(slopes.mean() - 0.2) < 0.01


def test_lazy_layers_materialize_on_the_first_call(device):
    """LazyLinear/LazyConv*d read their input size from the first call, keep their parameters'
    identity (an optimizer made before trains them) and become the eager layer."""
    layer = tp.nn.LazyLinear(3).to(device)
    assert repr(layer) == "LazyLinear(in_features=0, out_features=3, bias=True)"
    optimizer = tp.optim.SGD(layer.parameters(), lr=0.1)
    weight = layer.weight
    out = layer(tp.ones(2, 5, device=device))
    assert type(layer) is tp.nn.Linear and layer.in_features == 5 and layer.weight is weight
    assert weight.shape == (3, 5) and out.shape == (2, 3)
    before = weight.detach().clone()
    out.sum().backward()
    optimizer.step()
    assert not np.allclose(before.cpu().numpy(), weight.detach().cpu().numpy())
    conv = tp.nn.LazyConv2d(4, 3, groups=2, device=device)
    assert conv(tp.ones(1, 6, 5, 5, device=device)).shape == (1, 4, 3, 3)
    assert type(conv) is tp.nn.Conv2d and conv.weight.shape == (4, 3, 3, 3)
    conv1 = tp.nn.LazyConv1d(2, 2)
    assert conv1(tp.ones(3, 7)).shape == (2, 6) and conv1.in_channels == 3
    with pytest.raises(ValueError, match="divisible by groups"):
        tp.nn.LazyConv2d(4, 3, groups=2)(tp.ones(1, 3, 5, 5))


def test_modules_match_pytorch():
    """Each new module computes what its functional form does with the same options, has
    PyTorch's parameters and state_dict keys, and its repr."""
    torch = torch_or_skip()
    x = f(2, 4, 3, 3).astype(np.float32)  # the modules' parameters are float32
    pairs = [
        (lambda nn: nn.PReLU(4, 0.1), [x]), (lambda nn: nn.Hardshrink(0.4), [x]), (lambda nn: nn.Softshrink(0.4), [x]),
        (lambda nn: nn.Softmax2d(), [x]), (lambda nn: nn.RMSNorm((3, 3), eps=1e-3), [x]),
        (lambda nn: nn.LocalResponseNorm(3), [x]), (lambda nn: nn.ChannelShuffle(2), [x]),
        (lambda nn: nn.LPPool2d(2, 2), [x]), (lambda nn: nn.LPPool1d(1, 3, 1), [x[0]]),
        (lambda nn: nn.CosineSimilarity(1), [x, x[::-1].copy()]), (lambda nn: nn.PairwiseDistance(1.0, keepdim=True), [x, x * 2]),
        (lambda nn: nn.RReLU(), [x]), (lambda nn: nn.AlphaDropout(0.2), [x]), (lambda nn: nn.FeatureAlphaDropout(0.2), [x]),
    ]
    for make, arrays in pairs:
        ours, theirs = make(tp.nn).eval(), make(torch.nn).eval()
        assert repr(ours) == repr(theirs)
        assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
        got = ours(*(tp.tensor(a) for a in arrays))
        expected = theirs(*(torch.tensor(a) for a in arrays))
        np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), rtol=1e-6, atol=1e-9)
    a, b, c = f(4, 3), f(4, 3), f(4, 3)
    losses = [
        (lambda nn: nn.CosineEmbeddingLoss(0.1), [a, b], [1, -1, 1, -1]),
        (lambda nn: nn.HingeEmbeddingLoss(0.5, reduction="sum"), [a], None),
        (lambda nn: nn.MarginRankingLoss(0.2), [a[:, 0], b[:, 0]], [1.0, -1.0, 1.0, 1.0]),
        (lambda nn: nn.MultiMarginLoss(margin=0.5), [a], [0, 2, 1, 1]),
        (lambda nn: nn.MultiLabelMarginLoss(), [a], [[0, -1, 1], [2, 1, -1], [1, 0, 2], [-1, 0, 1]]),
        (lambda nn: nn.MultiLabelSoftMarginLoss(), [a, (b > 0).astype(np.float64)], None),
        (lambda nn: nn.GaussianNLLLoss(full=True), [a, b, np.abs(c)], None),
        (lambda nn: nn.TripletMarginWithDistanceLoss(margin=0.5), [a, b, c], None),
    ]
    for make, arrays, target in losses:
        ours, theirs = make(tp.nn), make(torch.nn)
        ours_args = [tp.tensor(v) for v in arrays] + ([tp.tensor(target)] if target is not None else [])
        theirs_args = [torch.tensor(v) for v in arrays] + ([torch.tensor(target)] if target is not None else [])
        if isinstance(ours, tp.nn.HingeEmbeddingLoss):
            ours_args.append(tp.tensor(np.sign(b)))
            theirs_args.append(torch.tensor(np.sign(b)))
        np.testing.assert_allclose(ours(*ours_args).item(), theirs(*theirs_args).item(), rtol=1e-9)


def test_deprecated_upsample_functions_warn():
    with pytest.warns(UserWarning, match="upsample_nearest` is deprecated"):
        tp.nn.functional.upsample_nearest(tp.ones(1, 1, 2, 2), scale_factor=2)
    with pytest.warns(UserWarning, match="upsample_bilinear` is deprecated"):
        tp.nn.functional.upsample_bilinear(tp.ones(1, 1, 2, 2), scale_factor=2)


ERRORS = [
    (lambda L: F(L).prelu(L.ones(2, 3), L.tensor([0.1, 0.2])), RuntimeError, "Mismatch of parameter numbers"),
    (lambda L: F(L).softshrink(L.ones(2), -1), RuntimeError, "lambda must be in range"),
    (lambda L: F(L).rms_norm(L.ones(2, 3), (2,)), RuntimeError, "Given normalized_shape"),
    (lambda L: F(L).local_response_norm(L.ones(2, 3), 2), ValueError, "3D or higher"),
    (lambda L: F(L).cosine_embedding_loss(L.ones(2, 3, 1), L.ones(2, 3, 1), L.tensor([1, 1])), RuntimeError, "1D target tensor expects 2D input"),
    (lambda L: F(L).multi_margin_loss(L.ones(2, 3), L.tensor([0, 1]), p=3), ValueError, "only p == 1 and p == 2"),
    (lambda L: F(L).multi_margin_loss(L.ones(2, 3), L.tensor([0, 3])), RuntimeError, "target out of range"),
    (lambda L: F(L).multilabel_margin_loss(L.ones(2, 3), L.tensor([[0, -1], [2, 1]])), RuntimeError, "inconsistent target size"),
    (lambda L: F(L).gaussian_nll_loss(L.ones(2, 3), L.ones(2, 3), -L.ones(2, 3)), ValueError, "var has negative entry"),
    (lambda L: F(L).gaussian_nll_loss(L.ones(2, 3), L.ones(2, 3), L.ones(2, 2)), ValueError, "var is of incorrect size"),
    (lambda L: F(L).pdist(L.ones(3)), RuntimeError, "pdist only supports 2D tensors"),
    (lambda L: F(L).channel_shuffle(L.ones(1, 5, 1), 2), RuntimeError, "divisible by groups"),
    (lambda L: L.nn.Softmax2d()(L.ones(2, 3)), ValueError, "expected input to be 3D or 4D"),
    (lambda L: L.dropout(L.ones(2), 0.5), TypeError, None),
]


@pytest.mark.parametrize("index", range(len(ERRORS)))
def test_errors_match_pytorch(index):
    torch = torch_or_skip()
    call, error, words = ERRORS[index]
    assert_same_error(torch, call, error, words)


@pytest.mark.parametrize("make,shape", [("LazyLinear(3)", (2, 4)), ("LazyConv2d(4, 3)", (1, 2, 5, 5)),
                                        ("LazyBatchNorm1d()", (4, 3))])
def test_lazy_placeholders_are_uninitialized_until_the_first_input_as_pytorch(make, shape):
    torch = pytest.importorskip("torch", reason="PyTorch 2.13 is the reference for the lazy placeholders' classes")
    kinds = []
    for lib in (tp, torch):
        module = eval(f"lib.nn.{make}")
        named = lambda: list(module.named_parameters()) + list(module.named_buffers())
        before = [(n, type(t).__name__, lib.nn.parameter.is_lazy(t)) for n, t in named()]
        assert module.has_uninitialized_params()
        module(lib.ones(*shape))
        after = [(n, type(t).__name__, tuple(t.shape)) for n, t in named()]
        kinds.append((type(module).__name__, before, after))
    assert kinds[0] == kinds[1]
    weight = tp.nn.LazyLinear(3).weight
    assert isinstance(weight, tp.nn.Parameter) and isinstance(weight, tp.nn.UninitializedParameter)
    assert repr(weight) == "<UninitializedParameter>"
