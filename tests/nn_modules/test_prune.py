"""tp.nn.utils.prune: masks against a NumPy float64 reference and against PyTorch 2.13, the
reparametrization (weight_orig, weight_mask, forward pre-hook), iterative pruning, remove and errors.

Values come from a normal distribution, so magnitudes and channel norms have no ties (where the
two libraries' topk may choose different entries; see the module docstring)."""
import copy
import math

import numpy as np
import pytest

import tensorplug as tp
from tensorplug.nn.utils import prune


def _linear(weight: np.ndarray, bias: np.ndarray | None = None, lib=tp):
    layer = lib.nn.Linear(weight.shape[1], weight.shape[0], bias=bias is not None)
    with lib.no_grad():
        layer.weight.copy_(lib.tensor(weight))
        if bias is not None:
            layer.bias.copy_(lib.tensor(bias))
    return layer


def _torch_prune():
    """PyTorch and its prune module (imported on its own: torch.nn.utils does not import it)."""
    torch = pytest.importorskip("torch")
    return torch, pytest.importorskip("torch.nn.utils.prune")


def _weights(shape=(6, 8), seed=0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# --- NumPy references ---------------------------------------------------------------------------

def _count(amount, available):
    return amount if isinstance(amount, int) else round(amount * available)


def _ref_l1(scores: np.ndarray, mask: np.ndarray, amount) -> np.ndarray:
    """Prune, among the entries ``mask`` keeps, the ``amount`` of smallest |score|."""
    mask = mask.astype(np.float64).copy()
    live = np.flatnonzero(mask.reshape(-1) == 1)
    order = np.argsort(np.abs(scores.astype(np.float64).reshape(-1)[live]), kind="stable")
    flat = mask.reshape(-1)
    flat[live[order[:_count(amount, live.size)]]] = 0
    return mask


def _ref_ln(scores: np.ndarray, mask: np.ndarray, amount, n, dim) -> np.ndarray:
    """Prune, among the channels along ``dim`` not wholly pruned, the ``amount`` of smallest n-norm."""
    scores = np.moveaxis(scores.astype(np.float64), dim, 0).reshape(scores.shape[dim], -1)
    channel_mask = np.moveaxis(mask.astype(np.float64), dim, 0).reshape(mask.shape[dim], -1)
    live = np.flatnonzero(np.abs(channel_mask).sum(axis=1) != 0)
    if n == "fro":
        n = 2
    norms = np.linalg.norm(scores[live], ord=n, axis=1)
    pruned = live[np.argsort(norms, kind="stable")[:_count(amount, live.size)]]
    keep = np.ones(mask.shape[dim])
    keep[pruned] = 0
    shape = [1] * mask.ndim
    shape[dim] = -1
    return mask.astype(np.float64) * keep.reshape(shape)


# --- the reparametrization -------------------------------------------------------------------

def test_l1_unstructured_reparametrizes_as_pytorch():
    """weight_orig is the original Parameter, weight_mask a buffer, weight = orig * mask; the
    forward and the gradient of weight_orig see the pruned weight (NumPy float64)."""
    w, b = _weights(), np.random.default_rng(1).standard_normal(6).astype(np.float32)
    layer = _linear(w, b)
    original = layer.weight
    assert prune.l1_unstructured(layer, "weight", amount=0.25) is layer
    expected_mask = _ref_l1(w, np.ones_like(w), 0.25)
    assert layer.weight_orig is original
    assert [name for name, _ in layer.named_parameters()] == ["bias", "weight_orig"]
    assert [name for name, _ in layer.named_buffers()] == ["weight_mask"]
    assert list(layer.state_dict()) == ["bias", "weight_orig", "weight_mask"]
    assert not layer.weight_mask.requires_grad
    np.testing.assert_array_equal(layer.weight_mask.numpy(), expected_mask)
    assert int((layer.weight_mask == 0).sum().item()) == round(0.25 * 48)
    np.testing.assert_array_equal(layer.weight.detach().numpy(), w * expected_mask)

    x = np.random.default_rng(2).standard_normal((3, 8)).astype(np.float32)
    out = layer(tp.tensor(x))
    np.testing.assert_allclose(out.detach().numpy(), x.astype(np.float64) @ (w * expected_mask).T + b, rtol=1e-5, atol=1e-5)
    out.sum().backward()
    np.testing.assert_allclose(original.grad.numpy(), expected_mask * x.sum(axis=0), rtol=1e-5, atol=1e-6)


def test_the_hook_recomputes_the_weight_each_forward():
    """An update of weight_orig reaches the next forward, still masked."""
    w = _weights()
    layer = prune.l1_unstructured(_linear(w), "weight", amount=10)
    with tp.no_grad():
        layer.weight_orig.add_(1.0)
    layer(tp.zeros(1, 8))
    np.testing.assert_allclose(layer.weight.detach().numpy(), (w + 1.0) * layer.weight_mask.numpy(), rtol=1e-6)


@pytest.mark.parametrize("amount", [0, 1, 7, 48, 0.0, 0.1, 0.5, 1.0])
def test_l1_unstructured_masks(amount):
    """The count pruned and which entries, against NumPy; and the same mask as PyTorch."""
    w = _weights()
    layer = prune.l1_unstructured(_linear(w), "weight", amount=amount)
    np.testing.assert_array_equal(layer.weight_mask.numpy(), _ref_l1(w, np.ones_like(w), amount))
    torch, torch_prune = _torch_prune()
    theirs = torch_prune.l1_unstructured(_linear(w, lib=torch), "weight", amount=amount)
    np.testing.assert_array_equal(layer.weight_mask.numpy(), theirs.weight_mask.numpy())


def test_fractions_round_as_python():
    """amount=0.5 of 5 entries prunes round(2.5) = 2, as PyTorch."""
    layer = prune.l1_unstructured(_linear(_weights((1, 5))), "weight", amount=0.5)
    assert int((layer.weight_mask == 0).sum().item()) == 2


@pytest.mark.parametrize("n", [1, 2, 3, math.inf, -math.inf, "fro"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_ln_structured_masks(n, dim):
    """Whole channels along dim go, those of smallest n-norm (NumPy), as in PyTorch."""
    w = _weights((6, 8))
    layer = prune.ln_structured(_linear(w), "weight", amount=0.5, n=n, dim=dim)
    np.testing.assert_array_equal(layer.weight_mask.numpy(), _ref_ln(w, np.ones_like(w), 0.5, n, dim % 2))
    torch, torch_prune = _torch_prune()
    theirs = torch_prune.ln_structured(_linear(w, lib=torch), "weight", amount=0.5, n=n, dim=dim)
    np.testing.assert_array_equal(layer.weight_mask.numpy(), theirs.weight_mask.numpy())


def test_ln_structured_on_a_conv_weight():
    """Filters of a 4-d conv weight (dim 0) pruned by their L2 norm over the other three dims."""
    conv = tp.nn.Conv2d(3, 8, 3)
    w = conv.weight.detach().numpy().copy()
    prune.ln_structured(conv, "weight", amount=3, n=2, dim=0)
    np.testing.assert_array_equal(conv.weight_mask.numpy(), _ref_ln(w, np.ones_like(w), 3, 2, 0))


def test_iterative_pruning_composes_over_what_is_kept():
    """A second pruning acts on the entries (channels) the first kept; the hook becomes a
    PruningContainer holding both; the masks equal NumPy's composition and PyTorch's."""
    w = _weights()
    steps = [("l1_unstructured", {"amount": 0.3}), ("ln_structured", {"amount": 2, "n": 1, "dim": 0}),
             ("l1_unstructured", {"amount": 5}), ("ln_structured", {"amount": 0.5, "n": 2, "dim": 1}),
             ("l1_unstructured", {"amount": 0.5})]
    layer = _linear(w)
    mask = np.ones_like(w, dtype=np.float64)
    for name, kwargs in steps:
        getattr(prune, name)(layer, "weight", **kwargs)
        if name == "l1_unstructured":
            mask = _ref_l1(w * mask, mask, kwargs["amount"])
        else:
            mask = _ref_ln(w * mask, mask, kwargs["amount"], kwargs["n"], kwargs["dim"])
        np.testing.assert_array_equal(layer.weight_mask.numpy(), mask)
    hooks = list(layer._forward_pre_hooks.values())
    assert len(hooks) == 1 and isinstance(hooks[0], prune.PruningContainer)
    assert [type(m).__name__ for m in hooks[0]] == ["L1Unstructured", "LnStructured", "L1Unstructured", "LnStructured",
                                                    "L1Unstructured"]
    assert len(hooks[0]) == 5 and hooks[0][1].dim == 0
    torch, torch_prune = _torch_prune()
    theirs = _linear(w, lib=torch)
    for name, kwargs in steps:
        getattr(torch_prune, name)(theirs, "weight", **kwargs)
    np.testing.assert_array_equal(layer.weight_mask.numpy(), theirs.weight_mask.numpy())


def test_importance_scores_choose_instead_of_the_weight():
    """With importance_scores the mask follows the scores, not the weight's magnitudes."""
    w = _weights()
    scores = _weights(seed=5)
    layer = prune.l1_unstructured(_linear(w), "weight", amount=12, importance_scores=tp.tensor(scores))
    np.testing.assert_array_equal(layer.weight_mask.numpy(), _ref_l1(scores, np.ones_like(w), 12))
    layer = prune.ln_structured(_linear(w), "weight", amount=2, n=1, dim=0, importance_scores=tp.tensor(scores))
    np.testing.assert_array_equal(layer.weight_mask.numpy(), _ref_ln(scores, np.ones_like(w), 2, 1, 0))


def test_random_unstructured_prunes_the_count_at_random():
    """The number of zeros is the amount; another seed picks other entries; pruning again
    prunes among the survivors."""
    layer = prune.random_unstructured(_linear(_weights()), "weight", amount=0.25)
    first = layer.weight_mask.numpy().copy()
    assert (first == 0).sum() == 12 and set(np.unique(first)) <= {0.0, 1.0}
    tp.manual_seed(123)
    other = prune.random_unstructured(_linear(_weights()), "weight", amount=0.25).weight_mask.numpy()
    assert (other == 0).sum() == 12 and not np.array_equal(first, other)
    prune.random_unstructured(layer, "weight", amount=6)
    second = layer.weight_mask.numpy()
    assert (second == 0).sum() == 18 and np.all(second[first == 0] == 0)


@pytest.mark.parametrize("dim", [0, 1])
def test_random_structured_prunes_whole_channels(dim):
    """Whole channels along dim go, as many as the amount; a second round among the rest."""
    layer = prune.random_structured(_linear(_weights()), "weight", amount=0.5, dim=dim)
    mask = np.moveaxis(layer.weight_mask.numpy(), dim, 0)
    channel_sums = mask.sum(axis=1)
    assert set(channel_sums) <= {0.0, float(mask.shape[1])}
    assert (channel_sums == 0).sum() == round(0.5 * mask.shape[0])
    prune.random_structured(layer, "weight", amount=1, dim=dim)
    again = np.moveaxis(layer.weight_mask.numpy(), dim, 0).sum(axis=1)
    assert (again == 0).sum() == round(0.5 * mask.shape[0]) + 1 and np.all(again[channel_sums == 0] == 0)


def test_custom_from_mask_and_identity():
    """custom_from_mask prunes where the mask is 0 (and-ed with an earlier mask); identity keeps all."""
    w = _weights((2, 3))
    layer = prune.identity(_linear(w), "weight")
    np.testing.assert_array_equal(layer.weight_mask.numpy(), np.ones((2, 3)))
    np.testing.assert_array_equal(layer.weight.detach().numpy(), w)
    custom = np.array([[1, 0, 1], [0, 1, 1]], dtype=np.float32)
    prune.custom_from_mask(layer, "weight", tp.tensor(custom))
    np.testing.assert_array_equal(layer.weight.detach().numpy(), w * custom)
    prune.custom_from_mask(layer, "weight", tp.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]]))
    np.testing.assert_array_equal(layer.weight_mask.numpy(), [[1, 0, 0], [0, 1, 1]])


def test_global_unstructured_prunes_across_tensors():
    """The smallest magnitudes over all the tensors together go (NumPy), as in PyTorch."""
    w1, w2 = _weights((4, 5), seed=1), 0.3 * _weights((3, 4), seed=2)
    first, second = _linear(w1), _linear(w2)
    prune.l1_unstructured(second, "weight", amount=2)  # an earlier mask is respected
    earlier = second.weight_mask.numpy().copy()
    pairs = [(first, "weight"), (second, "weight")]
    prune.global_unstructured(pairs, pruning_method=prune.L1Unstructured, amount=0.4)
    scores = np.concatenate([w1.reshape(-1), (w2 * earlier).reshape(-1)])
    masks = np.concatenate([np.ones(20), earlier.reshape(-1)])
    expected = _ref_l1(scores, masks, 0.4)
    np.testing.assert_array_equal(first.weight_mask.numpy().reshape(-1), expected[:20])
    np.testing.assert_array_equal(second.weight_mask.numpy().reshape(-1), expected[20:])
    torch, torch_prune = _torch_prune()
    a, b = _linear(w1, lib=torch), _linear(w2, lib=torch)
    torch_prune.l1_unstructured(b, "weight", amount=2)
    torch_prune.global_unstructured([(a, "weight"), (b, "weight")], torch_prune.L1Unstructured, amount=0.4)
    np.testing.assert_array_equal(first.weight_mask.numpy(), a.weight_mask.numpy())
    np.testing.assert_array_equal(second.weight_mask.numpy(), b.weight_mask.numpy())


def test_global_unstructured_with_importance_scores():
    """Scores given for a (module, name) pair replace its magnitudes in the global choice."""
    w1, w2 = _weights((2, 3), seed=1), _weights((2, 3), seed=2)
    first, second = _linear(w1), _linear(w2)
    scores = _weights((2, 3), seed=3)
    prune.global_unstructured([(first, "weight"), (second, "weight")], prune.L1Unstructured,
                              importance_scores={(first, "weight"): tp.tensor(scores)}, amount=5)
    expected = _ref_l1(np.concatenate([scores.reshape(-1), w2.reshape(-1)]), np.ones(12), 5)
    got = np.concatenate([first.weight_mask.numpy().reshape(-1), second.weight_mask.numpy().reshape(-1)])
    np.testing.assert_array_equal(got, expected)


def test_remove_makes_pruning_permanent():
    """After remove, weight is the former weight_orig Parameter holding orig * mask; the mask and
    the hook are gone; the state_dict is a plain Linear's again."""
    w = _weights()
    layer = prune.l1_unstructured(_linear(w), "weight", amount=20)
    original = layer.weight_orig
    mask = layer.weight_mask.numpy().copy()
    assert prune.is_pruned(tp.nn.Sequential(layer))
    assert prune.remove(layer, "weight") is layer
    assert layer.weight is original and isinstance(layer.weight, tp.nn.Parameter) and layer.weight.requires_grad
    np.testing.assert_array_equal(layer.weight.detach().numpy(), w * mask)
    assert list(layer.state_dict()) == ["weight"] and not layer._forward_pre_hooks
    assert not prune.is_pruned(layer)
    with pytest.raises(ValueError, match="has to be pruned before pruning can be removed"):
        prune.remove(layer, "weight")


def test_state_dict_is_interchangeable_with_pytorch():
    """A pruned PyTorch layer's state_dict loads into a pruned tensorplug layer (and keys match)."""
    torch, torch_prune = _torch_prune()
    w = _weights()
    theirs = torch_prune.ln_structured(_linear(w, lib=torch), "weight", amount=2, n=2, dim=0)
    ours = prune.identity(tp.nn.Linear(8, 6, bias=False), "weight")
    state = {k: tp.tensor(v.numpy()) for k, v in theirs.state_dict().items()}
    assert list(state) == list(ours.state_dict())
    ours.load_state_dict(state)
    x = np.random.default_rng(3).standard_normal((2, 8)).astype(np.float32)
    np.testing.assert_allclose(ours(tp.tensor(x)).detach().numpy(), theirs(torch.tensor(x)).detach().numpy(), rtol=1e-5,
                               atol=1e-6)


def test_deepcopy_keeps_the_pruning():
    """A deep copy of a pruned module prunes its own copy of weight_orig."""
    layer = prune.l1_unstructured(_linear(_weights()), "weight", amount=10)
    twin = copy.deepcopy(layer)
    with tp.no_grad():
        twin.weight_orig.fill_(2.0)
    twin(tp.zeros(1, 8))
    np.testing.assert_array_equal(twin.weight.detach().numpy(), 2.0 * layer.weight_mask.numpy())


def test_methods_on_plain_tensors():
    """prune() on a tensor multiplies by the method's mask; PruningContainer takes methods."""
    t = tp.tensor([[0.5, -3.0, 0.125], [2.0, -0.25, 1.0]])
    np.testing.assert_array_equal(prune.L1Unstructured(amount=2).prune(t).numpy(), [[0.5, -3.0, 0.0], [2.0, 0.0, 1.0]])
    # Row L1 norms 3.625 and 3.25: the second row goes.
    np.testing.assert_array_equal(prune.LnStructured(amount=1, n=1, dim=0).prune(t).numpy(), [[0.5, -3.0, 0.125], [0, 0, 0]])
    scores = tp.tensor([[9.0, 9.0, 9.0], [0.0, 9.0, 9.0]])
    np.testing.assert_array_equal(prune.L1Unstructured(1).prune(t, importance_scores=scores).numpy(),
                                  [[0.5, -3.0, 0.125], [0.0, -0.25, 1.0]])
    container = prune.PruningContainer(prune.L1Unstructured(1))
    container.add_pruning_method(prune.L1Unstructured(2))
    assert len(container) == 2
    # The last method prunes the 2 smallest among the kept entries 0.5, -3, 2, -0.25, 1.
    mask = container.compute_mask(t, tp.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]]))
    np.testing.assert_array_equal(mask.numpy(), [[0, 1, 0], [1, 0, 1]])


# --- errors -----------------------------------------------------------------------------------

@pytest.mark.parametrize("amount, error, message", [
    (-1, ValueError, "amount=-1 should either be a float in the range"),
    (1.5, ValueError, "amount=1.5 should either be a float in the range"),
    ("a", TypeError, "Invalid type for amount: a"),
    (True, TypeError, "Invalid type for amount"),
    (49, ValueError, "amount=49 should be smaller than the number of parameters to prune=48"),
])
def test_bad_amounts_raise_and_leave_the_module_alone(amount, error, message):
    """A bad amount raises before the module changes (PyTorch's messages)."""
    layer = _linear(_weights())
    with pytest.raises(error, match=message):
        prune.l1_unstructured(layer, "weight", amount=amount)
    assert [name for name, _ in layer.named_parameters()] == ["weight"] and not layer._forward_pre_hooks


def test_a_failed_second_pruning_keeps_the_first():
    """A pruning that raises leaves an already pruned module with its hook and mask."""
    layer = prune.l1_unstructured(_linear(_weights()), "weight", amount=40)
    mask = layer.weight_mask.numpy().copy()
    with pytest.raises(ValueError, match="amount=9 should be smaller than the number of parameters to prune=8"):
        prune.l1_unstructured(layer, "weight", amount=9)
    hooks = list(layer._forward_pre_hooks.values())
    assert len(hooks) == 1 and isinstance(hooks[0], prune.L1Unstructured)
    np.testing.assert_array_equal(layer.weight_mask.numpy(), mask)


def test_structured_errors():
    """Structured pruning needs a multidimensional tensor and a dim inside it; too many channels raise."""
    layer = tp.nn.Linear(4, 3)
    with pytest.raises(ValueError, match="Structured pruning can only be applied to multidimensional tensors"):
        prune.ln_structured(layer, "bias", amount=1, n=2, dim=0)
    with pytest.raises(IndexError, match="Invalid index 2 for tensor of size"):
        prune.ln_structured(layer, "weight", amount=1, n=2, dim=2)
    with pytest.raises(IndexError, match="Invalid index -3"):
        prune.random_structured(layer, "weight", amount=1, dim=-3)
    with pytest.raises(ValueError, match="amount=5 should be smaller than the number of parameters to prune=3"):
        prune.random_structured(layer, "weight", amount=5, dim=0)
    with pytest.raises(ValueError, match="n must be a number"):
        prune.LnStructured(amount=1, n="nuc")
    assert [name for name, _ in layer.named_parameters()] == ["weight", "bias"]


def test_other_errors():
    """Scores of another shape, a missing tensor, global pruning's arguments, containers."""
    layer = tp.nn.Linear(4, 3)
    with pytest.raises(ValueError, match="importance_scores should have the same shape as parameter weight"):
        prune.l1_unstructured(layer, "weight", 1, importance_scores=tp.ones(2))
    with pytest.raises(AttributeError):
        prune.l1_unstructured(layer, "nope", 1)
    with pytest.raises(TypeError, match="parameters is not an Iterable"):
        prune.global_unstructured(5, prune.L1Unstructured, amount=2)
    with pytest.raises(TypeError, match="importance_scores must be of type dict"):
        prune.global_unstructured([(layer, "weight")], prune.L1Unstructured, importance_scores=[], amount=2)
    with pytest.raises(TypeError, match='Only "unstructured" PRUNING_TYPE supported'):
        prune.global_unstructured([(layer, "weight")], prune.LnStructured, amount=2, n=2, dim=0)
    with pytest.raises(ValueError, match="default_mask shape"):
        prune.custom_from_mask(layer, "weight", tp.ones(2))
    with pytest.raises(TypeError, match="is not a BasePruningMethod subclass"):
        prune.PruningContainer(5)
    bias_method = prune.l1_unstructured(tp.nn.Linear(4, 3), "bias", 1)._forward_pre_hooks
    container = prune.PruningContainer(next(iter(bias_method.values())))
    with pytest.raises(ValueError, match="Can only add pruning methods acting on the parameter named 'bias'"):
        container.add_pruning_method(prune.L1Unstructured.apply(tp.nn.Linear(2, 2), "weight", 1))
    with pytest.raises(TypeError, match="abstract"):
        prune.BasePruningMethod()
    with pytest.raises(AttributeError, match="has not been applied"):
        prune.Identity().apply_mask(layer)


def test_matches_pytorch_error_types():
    """The errors above are the exception types PyTorch raises for the same calls (where it raises
    no AssertionError; docs/deviations.md)."""
    torch, torch_prune = _torch_prune()
    cases = [
        lambda p, lib: p.l1_unstructured(lib.nn.Linear(4, 3), "weight", amount=-1),
        lambda p, lib: p.l1_unstructured(lib.nn.Linear(4, 3), "weight", amount="a"),
        lambda p, lib: p.l1_unstructured(lib.nn.Linear(4, 3), "weight", amount=13),
        lambda p, lib: p.ln_structured(lib.nn.Linear(4, 3), "bias", 1, 2, 0),
        lambda p, lib: p.ln_structured(lib.nn.Linear(4, 3), "weight", 1, 2, 2),
        lambda p, lib: p.remove(lib.nn.Linear(4, 3), "weight"),
        lambda p, lib: p.global_unstructured(5, p.L1Unstructured, amount=2),
    ]
    for case in cases:
        with pytest.raises(Exception) as theirs:
            case(torch_prune, torch)
        with pytest.raises(theirs.type):
            case(prune, tp)


def test_on_every_device(device):
    """Masks, the pruned forward and the masked gradient on each backend equal NumPy's."""
    w = _weights()
    layer = _linear(w).to(device)
    prune.l1_unstructured(layer, "weight", amount=0.3)
    prune.ln_structured(layer, "weight", amount=1, n=2, dim=0)
    prune.random_unstructured(layer, "weight", amount=3)
    mask = layer.weight_mask.cpu().numpy()
    expected = _ref_ln(w * _ref_l1(w, np.ones_like(w), 0.3), _ref_l1(w, np.ones_like(w), 0.3), 1, 2, 0)
    assert np.all(mask[expected == 0] == 0) and (mask == 0).sum() == (expected == 0).sum() + 3
    assert layer.weight_mask.device.type == device
    x = np.random.default_rng(4).standard_normal((2, 8)).astype(np.float32)
    out = layer(tp.tensor(x, device=device))
    out.sum().backward()
    np.testing.assert_allclose(layer.weight_orig.grad.cpu().numpy(), mask * x.sum(axis=0), rtol=1e-5, atol=1e-6)
    prune.remove(layer, "weight")
    np.testing.assert_allclose(layer.weight.detach().cpu().numpy(), w * mask, rtol=1e-6)
