"""nn.utils.parametrize against NumPy float64 and PyTorch's documented behaviour, without
PyTorch installed (test_parametrize.py compares with PyTorch itself where it is)."""
import copy
import pickle

import numpy as np
import pytest

import tensorplug as tp
from tensorplug.nn.utils import parametrize

WEIGHT = np.arange(12.0).reshape(4, 3) / 7 - 0.6
X = np.arange(6.0).reshape(2, 3) / 5 - 0.3


def _linear(device="cpu"):
    layer = tp.nn.Linear(3, 4)
    with tp.no_grad():
        layer.weight.copy_(tp.tensor(WEIGHT, dtype=tp.float32))
        layer.bias.zero_()
    return layer.to(device)


class LowerHalved(tp.nn.Module):
    """W -> triu(W) + tril(W, -1) / 2, a linear map with a known gradient."""

    def forward(self, w):
        return w.triu() + w.tril(-1) * 0.5


class Doubled(tp.nn.Module):
    def forward(self, w):
        return w * 2

    def right_inverse(self, w):
        return w / 2


class SumOfTwo(tp.nn.Module):
    """Stores two tensors whose sum is the weight: right_inverse returns a pair."""

    def forward(self, a, b):
        return a + b

    def right_inverse(self, w):
        return w * 0.25, w * 0.75


def _np(t):
    return np.asarray(t.detach().cpu().tolist(), dtype=np.float64)


def _halving_mask(shape):
    return np.where(np.triu(np.ones(shape)) > 0, 1.0, 0.5)


def test_value_gradient_and_state_dict(device):
    layer = parametrize.register_parametrization(_linear(device), "weight", LowerHalved())
    assert type(layer).__name__ == "ParametrizedLinear"
    assert parametrize.type_before_parametrizations(layer) is tp.nn.Linear
    assert list(layer.state_dict()) == ["bias", "parametrizations.weight.original"]
    mask = _halving_mask(WEIGHT.shape)
    np.testing.assert_allclose(_np(layer.weight), WEIGHT * mask, rtol=1e-6)
    layer(tp.tensor(X, dtype=tp.float32, device=device)).sum().backward()
    # d(sum(x @ (W*mask).T))/dW = mask * column sums of x, broadcast over the rows.
    expected = mask * X.sum(0)[None, :]
    np.testing.assert_allclose(_np(layer.parametrizations.weight.original.grad), expected, rtol=1e-6)


def test_assignment_goes_through_right_inverse_and_keeps_the_parameter():
    layer = parametrize.register_parametrization(_linear(), "weight", Doubled())
    original = layer.parametrizations.weight.original
    np.testing.assert_allclose(_np(original), WEIGHT / 2, rtol=1e-6)
    layer.weight = tp.ones(4, 3)
    assert layer.parametrizations.weight.original is original
    np.testing.assert_allclose(_np(original), np.full((4, 3), 0.5))
    np.testing.assert_allclose(_np(layer.weight), np.ones((4, 3)))


def test_chain_applies_in_registration_order():
    layer = parametrize.register_parametrization(_linear(), "weight", Doubled())
    parametrize.register_parametrization(layer, "weight", LowerHalved())
    np.testing.assert_allclose(_np(layer.weight), WEIGHT * _halving_mask(WEIGHT.shape), rtol=1e-6)


def test_sequence_right_inverse_stores_several_tensors():
    layer = parametrize.register_parametrization(_linear(), "weight", SumOfTwo())
    keys = [k for k in layer.state_dict() if k.startswith("parametrizations")]
    assert keys == ["parametrizations.weight.original0", "parametrizations.weight.original1"]
    np.testing.assert_allclose(_np(layer.parametrizations.weight.original0), WEIGHT * 0.25, rtol=1e-6)
    np.testing.assert_allclose(_np(layer.weight), WEIGHT, rtol=1e-6)
    with pytest.raises(ValueError, match="Cannot leave unparametrized"):
        parametrize.remove_parametrizations(layer, "weight", leave_parametrized=False)
    parametrize.remove_parametrizations(layer, "weight")
    assert isinstance(layer.weight, tp.nn.Parameter)
    np.testing.assert_allclose(_np(layer.weight), WEIGHT, rtol=1e-6)


@pytest.mark.parametrize("leave", [True, False])
def test_remove_restores_plain_class(leave):
    layer = parametrize.register_parametrization(_linear(), "weight", Doubled())
    original = layer.parametrizations.weight.original
    parametrize.remove_parametrizations(layer, "weight", leave_parametrized=leave)
    assert type(layer) is tp.nn.Linear and not parametrize.is_parametrized(layer)
    assert layer.weight is original
    np.testing.assert_allclose(_np(layer.weight), WEIGHT if leave else WEIGHT / 2, rtol=1e-6)
    assert list(layer.state_dict()) == ["bias", "weight"]  # re-registered last, as in PyTorch
    with pytest.raises(ValueError, match="does not have a parametrization on weight"):
        parametrize.remove_parametrizations(layer, "weight")


def test_other_instances_keep_their_class():
    parametrize.register_parametrization(_linear(), "weight", Doubled())
    assert type(_linear()) is tp.nn.Linear and not hasattr(tp.nn.Linear, "parametrizations")


def test_cached_computes_each_tensor_once():
    calls = []

    class Counting(tp.nn.Module):
        def forward(self, w):
            calls.append(1)
            return w

    layer = parametrize.register_parametrization(_linear(), "weight", Counting())
    calls.clear()
    with parametrize.cached():
        with parametrize.cached():
            assert layer.weight is layer.weight
        assert layer.weight is layer.weight
    assert len(calls) == 1
    layer.weight, layer.weight
    assert len(calls) == 3


def test_deepcopy_is_independent_and_pickle_refuses():
    layer = parametrize.register_parametrization(_linear(), "weight", Doubled())
    clone = copy.deepcopy(layer)
    clone.weight = tp.zeros(4, 3)
    np.testing.assert_allclose(_np(layer.weight), WEIGHT, rtol=1e-6)
    np.testing.assert_allclose(_np(clone.weight), np.zeros((4, 3)))
    with pytest.raises(RuntimeError, match="only supported through state_dict"):
        pickle.dumps(layer)


def test_errors_before_anything_changes():
    class Flatten(tp.nn.Module):
        def forward(self, w):
            return w.reshape(-1)

    class ToDouble(tp.nn.Module):
        def forward(self, w):
            return w.double()

    with pytest.raises(ValueError, match="may not change the shape"):
        parametrize.register_parametrization(_linear(), "weight", Flatten())
    with pytest.raises(ValueError, match="may not change the dtype"):
        parametrize.register_parametrization(_linear(), "weight", ToDouble())
    layer = parametrize.register_parametrization(_linear(), "weight", Doubled())
    with pytest.raises(ValueError, match="may not change the shape"):
        parametrize.register_parametrization(layer, "weight", Flatten())
    assert len(layer.parametrizations.weight) == 1
    parametrize.register_parametrization(_linear(), "weight", Flatten(), unsafe=True)
    with pytest.raises(ValueError, match="does not have a parameter, a buffer, or a parametrized element"):
        parametrize.register_parametrization(_linear(), "nothing", Flatten())
    plain = parametrize.register_parametrization(_linear(), "weight", LowerHalved())
    with pytest.raises(RuntimeError, match="does not implement right_inverse"):
        plain.weight = tp.ones(4, 3)


def test_transfer_shares_the_stored_tensors():
    source = parametrize.register_parametrization(_linear(), "weight", Doubled())
    target = parametrize.transfer_parametrizations_and_params(source, tp.nn.Linear(3, 4))
    assert target.parametrizations.weight.original is source.parametrizations.weight.original
    np.testing.assert_allclose(_np(target.weight), WEIGHT, rtol=1e-6)


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_against_numpy(dim):
    from tensorplug.nn.utils import parametrizations

    layer = parametrizations.weight_norm(_linear(), dim=dim)
    stored = layer.parametrizations.weight
    axes = None if dim is None else tuple(a for a in range(2) if a != dim)
    norms = np.sqrt((WEIGHT ** 2).sum(axis=axes, keepdims=dim is not None))
    np.testing.assert_allclose(_np(stored.original0), norms, rtol=1e-6)
    np.testing.assert_allclose(_np(stored.original1), WEIGHT, rtol=1e-6)
    np.testing.assert_allclose(_np(layer.weight), WEIGHT, rtol=1e-6)
    with tp.no_grad():
        stored.original0.mul_(3)
    np.testing.assert_allclose(_np(layer.weight), WEIGHT * 3, rtol=1e-5)


def test_spectral_norm_divides_by_the_largest_singular_value():
    from tensorplug.nn.utils import parametrizations

    tp.manual_seed(0)
    layer = parametrizations.spectral_norm(_linear())
    sigma = np.linalg.svd(WEIGHT, compute_uv=False)[0]
    for _ in range(3):
        value = _np(layer.weight)  # training mode: one more power iteration at each read
    np.testing.assert_allclose(value, WEIGHT / sigma, rtol=1e-4)
    np.testing.assert_allclose(np.linalg.svd(value, compute_uv=False)[0], 1.0, rtol=1e-4)
    assert sorted(k for k in layer.state_dict() if k.startswith("parametrizations")) == [
        "parametrizations.weight.0._u", "parametrizations.weight.0._v", "parametrizations.weight.original"]
