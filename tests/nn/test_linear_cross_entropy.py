"""F.linear_cross_entropy and nn.LinearCrossEntropyLoss: the loss and its gradients against NumPy
float64 on every backend, through the reference path and in batch chunks, and against PyTorch 2.13
for its other forms (K-dimensional weights, probability targets, label smoothing, the module)."""
import warnings

import numpy as np
import pytest

import tensorplug as tp
from tests.torch_reference import torch_or_skip

N, IN, C = 7, 3, 5


def _data(rng):
    x, w, b = rng.standard_normal((N, IN)), rng.standard_normal((C, IN)), rng.standard_normal(C)
    target = rng.integers(0, C, N)
    target[2] = -100  # ignored
    return x, w, b, target, rng.uniform(0.5, 2.0, C)


def _reference(x, w, b, target, class_weight, reduction, upstream):
    """Loss and gradients (x, w, b) of the weighted cross entropy of x @ w.T + b, in float64."""
    logits = x @ w.T + b
    shifted = logits - logits.max(1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
    counted = target != -100
    safe = np.where(counted, target, 0)
    row_weight = class_weight[safe] * counted
    losses = -log_probs[np.arange(N), safe] * row_weight
    if reduction == "none":
        loss, coefficient = losses, upstream * row_weight
    elif reduction == "sum":
        loss, coefficient = losses.sum(), row_weight
    else:
        loss, coefficient = losses.sum() / row_weight.sum(), row_weight / row_weight.sum()
    one_hot = np.eye(C)[safe]
    grad_logits = coefficient[:, None] * (np.exp(log_probs) - one_hot)
    return loss, grad_logits @ w, grad_logits.T @ x, grad_logits.sum(0)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("chunk", [None, 2, "auto"], ids=["reference", "chunks-of-2", "auto"])
def test_loss_and_gradients_match_numpy(device, reduction, chunk):
    x, w, b, target, class_weight = _data(np.random.default_rng(1))
    upstream = np.random.default_rng(2).standard_normal(N)
    options = None if chunk is None else tp.nn.LinearCrossEntropyOptions(
        batch_chunk_size=None if chunk == "auto" else chunk)
    inputs = [tp.tensor(a, device=device, requires_grad=True) for a in (x, w, b)]
    loss = tp.nn.functional.linear_cross_entropy(
        inputs[0], inputs[1], tp.tensor(target, device=device), linear_bias=inputs[2],
        weight=tp.tensor(class_weight, device=device), reduction=reduction, options=options)
    loss.backward(tp.tensor(upstream, device=device) if reduction == "none" else None)
    expected = _reference(x, w, b, target, class_weight, reduction, upstream)
    np.testing.assert_allclose(loss.detach().cpu().numpy(), expected[0], rtol=1e-10, atol=1e-12)
    for got, want in zip(inputs, expected[1:]):
        np.testing.assert_allclose(got.grad.cpu().numpy(), want, rtol=1e-10, atol=1e-12)


def test_chunks_follow_the_aspect_ratio_rule():
    # next_pow2(ceil(rows / ceil(classes / in_features))) / N, at least one row
    options = tp.nn.LinearCrossEntropyOptions
    assert options().rows_per_chunk(8192, 128_000, 4096) == 256 // 2
    assert options(chunking_method="aspect_ratio").rows_per_chunk(100, 40, 8) == 32
    assert options(chunking_method=None).rows_per_chunk(100, 40, 8) == 100
    assert options(batch_chunk_size=3).rows_per_chunk(100, 40, 8) == 3
    assert options().rows_per_chunk(4, 1000, 2) == 1


@pytest.mark.parametrize("case", ["k_dim_bias", "probabilities", "smoothing", "vector"])
def test_other_forms_match_pytorch(case):
    torch = torch_or_skip()
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, IN))
    arrays = dict(
        k_dim_bias=(x, rng.standard_normal((C, 2, IN)), rng.integers(0, C, (4, 2)), rng.standard_normal((C, 2))),
        probabilities=(x, rng.standard_normal((C, IN)), rng.dirichlet(np.ones(C), 4), None),
        smoothing=(x, rng.standard_normal((C, IN)), rng.integers(0, C, 4), None),
        vector=(x[0], rng.standard_normal((C, IN)), np.array(3), rng.standard_normal(C)),
    )[case]
    extra = dict(label_smoothing=0.2) if case == "smoothing" else {}

    def run(lib, options):
        x, w, target, b = [None if a is None else lib.tensor(a) for a in arrays]
        x.requires_grad_(True), w.requires_grad_(True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # options the chunked path does not take fall back, warning
            loss = lib.nn.functional.linear_cross_entropy(x, w, target, linear_bias=b, options=options, **extra)
        loss.backward()
        return [t.detach().numpy() for t in (loss, x.grad, w.grad)]

    expected = run(torch, None)
    for options in (None, tp.nn.LinearCrossEntropyOptions(batch_chunk_size=2)):
        for got, want in zip(run(tp, options), expected):
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_fallback_from_the_chunked_path_warns():
    x, w = tp.randn(4, IN), tp.randn(C, IN)
    with pytest.warns(UserWarning, match="options.*ignored.*label_smoothing"):
        tp.nn.functional.linear_cross_entropy(x, w, tp.zeros(4, dtype=tp.int64), label_smoothing=0.1,
                                              options=tp.nn.LinearCrossEntropyOptions())


def test_module_matches_pytorch():
    torch = torch_or_skip()
    rng = np.random.default_rng(4)
    x, target = rng.standard_normal((4, IN)), rng.integers(0, C, (4, 2))

    def run(lib, **options):
        lib.manual_seed(0)
        module = lib.nn.LinearCrossEntropyLoss(IN, C, out_features=(2,), bias=True, reduction="sum",
                                               weight=lib.ones(C, dtype=lib.float64), dtype=lib.float64, **options)
        with lib.no_grad():
            module.linear.weight.copy_(lib.tensor(np.linspace(-1, 1, 2 * C * IN).reshape(2 * C, IN)))
            module.linear.bias.copy_(lib.tensor(np.linspace(1, -1, 2 * C)))
        loss = module(lib.tensor(x), lib.tensor(target))
        loss.backward()
        state = {k: tuple(v.shape) for k, v in module.state_dict().items()}
        return loss.item(), module.linear.weight.grad.numpy(), state, repr(module)

    theirs, ours = run(torch), run(tp)
    assert ours[0] == pytest.approx(theirs[0], rel=1e-12)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-10, atol=1e-12)
    assert ours[2:] == theirs[2:]


def test_bad_arguments_raise_as_in_pytorch():
    torch = torch_or_skip()
    x, w, t = np.ones((6, 4)), np.ones((5, 3)), np.zeros(6, dtype=np.int64)
    for lib in (torch, tp):
        with pytest.raises(RuntimeError, match=r"linear_weight last dimensions \(in_features\), got 4 and 3"):
            lib.nn.functional.linear_cross_entropy(lib.tensor(x), lib.tensor(w), lib.tensor(t))
        # (tensorplug's chunked path says the same; PyTorch's fails later, in a slice)
        for options in (None, lib.nn.LinearCrossEntropyOptions()) if lib is tp else (None,):
            with pytest.raises(ValueError, match=r"Expected input batch_size \(6\) to match target batch_size \(3\)"):
                lib.nn.functional.linear_cross_entropy(lib.tensor(x), lib.tensor(np.ones((5, 4))), lib.tensor(t[:3]),
                                                       options=options)
        with pytest.raises(ValueError, match="foo is not a valid value for reduction"):
            lib.nn.functional.linear_cross_entropy(lib.tensor(x), lib.tensor(np.ones((5, 4))), lib.tensor(t),
                                                   reduction="foo")
        for bad, message in ((dict(batch_chunk_size=0), "batch_chunk_size must be positive"),
                             (dict(acc_policy="fast"), "invalid acc_policy"),
                             (dict(chunking_method="rows:2"), "invalid chunking_method")):
            with pytest.raises(ValueError, match=message):
                lib.nn.LinearCrossEntropyOptions(**bad)
