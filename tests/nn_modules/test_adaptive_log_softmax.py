"""nn.AdaptiveLogSoftmaxWithLoss: parameters and state_dict keys as PyTorch's; forward (output,
loss), log_prob, predict and gradients against a NumPy float64 reference of the adaptive softmax
and against PyTorch 2.13 with the same weights, on every backend; PyTorch's errors."""
import numpy as np
import pytest

import tensorplug as tp

IN, N_CLASSES, CUTOFFS, DIV = 16, 20, [4, 9, 15], 2.0


def _model(head_bias=True, device="cpu", dtype=tp.float32, seed=0):
    """A model with random weights from NumPy (so that the references can read them)."""
    model = tp.nn.AdaptiveLogSoftmaxWithLoss(IN, N_CLASSES, CUTOFFS, div_value=DIV, head_bias=head_bias)
    rng = np.random.default_rng(seed)
    with tp.no_grad():
        for p in model.parameters():
            p.copy_(tp.tensor(rng.standard_normal(p.shape) * 0.5, dtype=p.dtype))
    return model.to(device=device, dtype=dtype)


def _weights(model) -> dict:
    return {name: value.detach().cpu().numpy().astype(np.float64) for name, value in model.state_dict().items()}


def _log_softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=1, keepdims=True))


def _ref_log_prob(w: dict, x: np.ndarray) -> np.ndarray:
    """Every class's log-probability in float64: the shortlist from the head, cluster k's classes
    as head[cluster k] + log_softmax of the two-layer tail projection."""
    x = x.astype(np.float64)
    head = x @ w["head.weight"].T + w.get("head.bias", 0.0)
    head_lp = _log_softmax(head)
    shortlist = CUTOFFS[0]
    columns = [head_lp[:, :shortlist]]
    for k in range(len(CUTOFFS)):
        tail = x @ w[f"tail.{k}.0.weight"].T @ w[f"tail.{k}.1.weight"].T
        columns.append(_log_softmax(tail) + head_lp[:, shortlist + k:shortlist + k + 1])
    return np.concatenate(columns, axis=1)


def _data(rows=9, seed=1):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, IN)).astype(np.float32)
    # Targets in every part: shortlist, each cluster, both ends.
    target = np.array([0, 3, 4, 8, 9, 14, 15, 19, 2][:rows])
    return x, target


def test_parameters_and_sizes_follow_pytorch():
    """head, tail.k.0 and tail.k.1 with the sizes PyTorch gives (hidden in_features // div ** (k+1))."""
    model = tp.nn.AdaptiveLogSoftmaxWithLoss(IN, N_CLASSES, CUTOFFS, div_value=DIV, head_bias=True)
    shapes = [(name, p.shape) for name, p in model.named_parameters()]
    assert shapes == [("head.weight", (7, 16)), ("head.bias", (7,)), ("tail.0.0.weight", (8, 16)), ("tail.0.1.weight", (5, 8)),
                      ("tail.1.0.weight", (4, 16)), ("tail.1.1.weight", (6, 4)), ("tail.2.0.weight", (2, 16)),
                      ("tail.2.1.weight", (5, 2))]
    assert (model.cutoffs, model.shortlist_size, model.n_clusters, model.head_size) == ([4, 9, 15, 20], 4, 3, 7)
    torch = pytest.importorskip("torch")
    theirs = torch.nn.AdaptiveLogSoftmaxWithLoss(IN, N_CLASSES, CUTOFFS, div_value=DIV, head_bias=True)
    assert [(n, tuple(p.shape)) for n, p in theirs.named_parameters()] == shapes
    assert list(theirs.state_dict()) == list(model.state_dict())
    assert (theirs.cutoffs, theirs.shortlist_size, theirs.n_clusters, theirs.head_size) == (
        model.cutoffs, model.shortlist_size, model.n_clusters, model.head_size)


def test_forward_log_prob_and_predict_against_float64():
    """output is each row's target log-probability, loss their negated mean; log_prob every
    class's; predict the argmax (NumPy float64, computed in float64 here)."""
    model = _model(dtype=tp.float64)
    w = _weights(model)
    x, target = _data()
    expected = _ref_log_prob(w, x)
    out = model(tp.tensor(x, dtype=tp.float64), tp.tensor(target))
    assert out._fields == ("output", "loss") and type(out).__name__ == "_ASMoutput"
    np.testing.assert_allclose(out.output.detach().numpy(), expected[np.arange(len(target)), target], rtol=1e-12)
    np.testing.assert_allclose(out.loss.item(), -expected[np.arange(len(target)), target].mean(), rtol=1e-12)
    np.testing.assert_allclose(model.log_prob(tp.tensor(x, dtype=tp.float64)).detach().numpy(), expected, rtol=1e-12,
                               atol=1e-13)
    np.testing.assert_allclose(np.exp(expected).sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_array_equal(model.predict(tp.tensor(x, dtype=tp.float64)).numpy(), expected.argmax(axis=1))


def test_gradients_against_finite_differences():
    """The loss's gradient with respect to the input and the head and a tail weight equals
    central differences of the float64 reference loss."""
    model = _model(dtype=tp.float64)
    w = _weights(model)
    x, target = _data(rows=8)
    xt = tp.tensor(x, dtype=tp.float64, requires_grad=True)
    model(xt, tp.tensor(target)).loss.backward()

    def loss(weights, inputs):
        return -_ref_log_prob(weights, inputs)[np.arange(len(target)), target].mean()

    def numeric(array, evaluate):
        grad = np.zeros_like(array)
        for index in np.ndindex(array.shape):
            saved = array[index]
            array[index] = saved + 1e-6
            up = evaluate()
            array[index] = saved - 1e-6
            down = evaluate()
            array[index] = saved
            grad[index] = (up - down) / 2e-6
        return grad

    x64 = x.astype(np.float64)
    np.testing.assert_allclose(xt.grad.numpy(), numeric(x64, lambda: loss(w, x64)), rtol=1e-6, atol=1e-8)
    for name in ("head.weight", "tail.1.0.weight", "tail.2.1.weight"):
        got = model.get_parameter(name).grad.numpy()
        np.testing.assert_allclose(got, numeric(w[name], lambda: loss(w, x64)), rtol=1e-6, atol=1e-8)


def test_matches_pytorch_with_the_same_weights(device):
    """Outputs, loss, log_prob, predict and every gradient equal PyTorch's on each backend."""
    torch = pytest.importorskip("torch")
    ours = _model(device=device)
    theirs = torch.nn.AdaptiveLogSoftmaxWithLoss(IN, N_CLASSES, CUTOFFS, div_value=DIV, head_bias=True)
    theirs.load_state_dict({k: torch.tensor(v.detach().cpu().numpy()) for k, v in ours.state_dict().items()})
    x, target = _data()
    xp = tp.tensor(x, device=device, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    out_p, out_t = ours(xp, tp.tensor(target, device=device)), theirs(xt, torch.tensor(target))
    assert out_p.output.device.type == device
    np.testing.assert_allclose(out_p.output.detach().cpu().numpy(), out_t.output.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out_p.loss.item(), out_t.loss.item(), rtol=1e-6)
    out_p.loss.backward()
    out_t.loss.backward()
    np.testing.assert_allclose(xp.grad.cpu().numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-6)
    for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        np.testing.assert_allclose(p.grad.cpu().numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-6, err_msg=name)
    with torch.no_grad():
        np.testing.assert_allclose(ours.log_prob(tp.tensor(x, device=device)).detach().cpu().numpy(),
                                   theirs.log_prob(torch.tensor(x)).numpy(), rtol=1e-5, atol=1e-6)
        big = np.random.default_rng(3).standard_normal((40, IN)).astype(np.float32) * 3
        np.testing.assert_array_equal(ours.predict(tp.tensor(big, device=device)).cpu().numpy(),
                                      theirs.predict(torch.tensor(big)).numpy())


def test_predict_in_every_case():
    """predict equals log_prob(...).argmax(1) when every row, none or some rows pick a cluster
    from the head (NumPy float64)."""
    model = _model(head_bias=True, dtype=tp.float64)
    x = np.random.default_rng(4).standard_normal((12, IN))
    for shortlist_bias in (50.0, -50.0, 0.0):
        with tp.no_grad():
            model.head.bias[:CUTOFFS[0]] = shortlist_bias
        expected = _ref_log_prob(_weights(model), x).argmax(axis=1)
        np.testing.assert_array_equal(model.predict(tp.tensor(x)).numpy(), expected)


def test_unbatched_input_and_target():
    """A (in_features,) input with a 0-d target gives a 0-d output, as PyTorch."""
    model = _model(dtype=tp.float64)
    x, target = _data()
    out = model(tp.tensor(x[1], dtype=tp.float64), tp.tensor(target[1]))
    assert out.output.shape == () and out.loss.shape == ()
    expected = _ref_log_prob(_weights(model), x[1:2])[0, target[1]]
    np.testing.assert_allclose(out.output.item(), expected, rtol=1e-12)


def test_only_clusters_with_targets_are_evaluated():
    """With shortlist targets only, the tails take no part: their gradients stay None (as PyTorch)."""
    model = _model()
    x, _ = _data()
    model(tp.tensor(x), tp.tensor([0, 1, 2, 3, 0, 1, 2, 3, 0])).loss.backward()
    assert model.head.weight.grad is not None
    assert all(p.grad is None for p in model.tail.parameters())


def test_int32_targets_and_empty_batch():
    """int32 targets work; an empty batch gives an empty output and a NaN loss (as PyTorch)."""
    model = _model(dtype=tp.float64)
    x, target = _data()
    out = model(tp.tensor(x, dtype=tp.float64), tp.tensor(target, dtype=tp.int32))
    expected = _ref_log_prob(_weights(model), x)[np.arange(len(target)), target]
    np.testing.assert_allclose(out.output.detach().numpy(), expected, rtol=1e-12)
    empty = model(tp.zeros(0, IN, dtype=tp.float64), tp.zeros(0, dtype=tp.int64))
    assert empty.output.shape == (0,) and np.isnan(empty.loss.item())


_CUTOFF_RULE = "cutoffs should be a sequence of unique, positive integers sorted in an increasing order"


@pytest.mark.parametrize("cutoffs, message", [
    ([], "cutoffs should be a sequence of length larger than 0"),
    ([5, 3], _CUTOFF_RULE), ([0, 3], _CUTOFF_RULE), ([3, 10], _CUTOFF_RULE), ([3, 3], _CUTOFF_RULE), ([3.5], _CUTOFF_RULE),
])
def test_bad_cutoffs_raise_as_pytorch(cutoffs, message):
    """PyTorch's ValueError and message for each bad cutoffs."""
    with pytest.raises(ValueError, match=message):
        tp.nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs)
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError, match=message):
        torch.nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs)


def test_other_construction_errors():
    """cutoffs that are not a sequence, and a div_value that is not positive, raise clearly."""
    with pytest.raises(TypeError, match="cutoffs must be a sequence"):
        tp.nn.AdaptiveLogSoftmaxWithLoss(8, 10, 5)
    with pytest.raises(ValueError, match="div_value must be positive"):
        tp.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3], div_value=0)


@pytest.mark.parametrize("input_shape, target, message", [
    ((4, 16), [0, 1, 2, 3, 4], "Input and target should have the same size in the batch dimension."),
    ((4, 16, 2), [0, 1, 2, 3], "1D target tensor expects 2D input tensors, but found inputs with size"),
    ((4, 16), 3, "0D target tensor expects 1D input tensors, but found inputs with size"),
    ((4, 16), [[1], [2], [3], [4]], "0D or 1D target tensor expected, multi-target not supported"),
    ((4, 16), [0, 1, 2, 20], r"Target values should be in \[0, 19\], but values in range \[0, 20\] were found."),
    ((4, 16), [0, -1, 2, 19], r"Target values should be in \[0, 19\], but values in range \[-1, 19\] were found."),
])
def test_forward_errors_as_pytorch(input_shape, target, message):
    """PyTorch's RuntimeError and message for each bad input/target pair."""
    x = np.zeros(input_shape, dtype=np.float32)
    with pytest.raises(RuntimeError, match=message):
        _model()(tp.tensor(x), tp.tensor(target))
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError, match=message):
        torch.nn.AdaptiveLogSoftmaxWithLoss(IN, N_CLASSES, CUTOFFS, div_value=DIV)(torch.tensor(x), torch.tensor(target))


def test_other_input_errors():
    """Float targets, a wrong feature count and non-matrix inputs to log_prob/predict raise clearly."""
    model = _model()
    with pytest.raises(RuntimeError, match="target must hold class indices"):
        model(tp.zeros(2, IN), tp.tensor([0.0, 1.0]))
    with pytest.raises(RuntimeError, match="expected input with 16 features"):
        model(tp.zeros(2, 5), tp.tensor([0, 1]))
    with pytest.raises(RuntimeError, match=r"log_prob\(\): expected a 2-D input"):
        model.log_prob(tp.zeros(IN))
    with pytest.raises(RuntimeError, match=r"predict\(\): expected a 2-D input"):
        model.predict(tp.zeros(2, 3, IN))


def test_reset_parameters_draws_new_weights():
    """reset_parameters re-initializes head and tails as at construction (kaiming-uniform bounds)."""
    model = _model()
    before = _weights(model)
    model.reset_parameters()
    after = _weights(model)
    for name in before:
        assert not np.array_equal(before[name], after[name]), name
    assert np.abs(after["head.weight"]).max() <= 1 / np.sqrt(IN)
