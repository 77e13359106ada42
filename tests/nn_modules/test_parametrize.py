"""nn.utils.parametrize and nn.utils.parametrizations (weight_norm, spectral_norm) against
PyTorch 2.13 (issue 13)."""
import copy

import numpy as np
import pytest

import tensorplug as tp
from tensorplug.nn.utils import parametrizations, parametrize

torch = pytest.importorskip("torch", reason="PyTorch is the reference; CI has none")

WEIGHT = np.arange(12.0).reshape(4, 3) / 7 - 0.6
X = (np.arange(6.0).reshape(2, 3) / 5 - 0.3).tolist()


def _linear(lib, device=None):
    layer = lib.nn.Linear(3, 4)
    with torch.no_grad(), tp.no_grad():
        layer.weight.copy_(lib.tensor(WEIGHT, dtype=lib.float32))
        layer.bias.copy_(lib.tensor([0.1, -0.2, 0.3, 0.0], dtype=lib.float32))
    return layer if device is None else layer.to(device)


def _lower_halved(lib):
    class LowerHalved(lib.nn.Module):
        def forward(self, x):
            return x.triu() + x.tril(-1) * 0.5

    return LowerHalved()


def _scale(lib):
    class Scale(lib.nn.Module):
        def forward(self, x):
            return x * 2

        def right_inverse(self, x):
            return x / 2

    return Scale()


def _array(t):
    return np.asarray(t.detach().cpu().tolist())


def test_register_parametrization_matches_pytorch(device):
    """The parametrized weight, state_dict keys, class name and gradients are PyTorch's."""
    results = {}
    for lib, mod in ((torch, torch.nn.utils.parametrize), (tp, parametrize)):
        layer = _linear(lib) if lib is torch else _linear(lib, device)
        mod.register_parametrization(layer, "weight", _lower_halved(lib))
        x = lib.tensor(X, device=device) if lib is tp else lib.tensor(X)
        layer(x).square().sum().backward()
        results[lib.__name__] = (type(layer).__name__, list(layer.state_dict()), _array(layer.weight),
                                 _array(layer.parametrizations.weight.original.grad))
    theirs, ours = results["torch"], results["tensorplug"]
    assert ours[:2] == theirs[:2] == ("ParametrizedLinear", ["bias", "parametrizations.weight.original"])
    np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-6)
    np.testing.assert_allclose(ours[3], theirs[3], rtol=1e-5, atol=1e-6)


def test_right_inverse_assignment_and_chained_parametrizations():
    """Assigning to the weight stores right_inverse(value); a second parametrization applies after the first."""
    layer = _linear(tp)
    parametrize.register_parametrization(layer, "weight", _scale(tp))
    np.testing.assert_allclose(_array(layer.parametrizations.weight.original), WEIGHT / 2, rtol=1e-6)
    np.testing.assert_allclose(_array(layer.weight), WEIGHT, rtol=1e-6)
    layer.weight = tp.ones(4, 3)
    np.testing.assert_allclose(_array(layer.parametrizations.weight.original), 0.5)
    parametrize.register_parametrization(layer, "weight", _scale(tp))
    np.testing.assert_allclose(_array(layer.weight), 4 * 0.5)
    assert len(layer.parametrizations.weight) == 2


def test_remove_parametrizations_restores_plain_module():
    """remove_parametrizations leaves the parametrized value (or the original) as a plain parameter."""
    layer = _linear(tp)
    parametrize.register_parametrization(layer, "weight", _scale(tp))
    assert parametrize.is_parametrized(layer) and parametrize.is_parametrized(layer, "weight")
    assert not parametrize.is_parametrized(layer, "bias")
    assert parametrize.type_before_parametrizations(layer) is tp.nn.Linear
    parametrize.remove_parametrizations(layer, "weight")
    assert type(layer) is tp.nn.Linear and not parametrize.is_parametrized(layer)
    assert isinstance(layer.weight, tp.nn.Parameter) and list(layer.state_dict()) == ["bias", "weight"]  # PyTorch's order: re-registered last
    np.testing.assert_allclose(_array(layer.weight), WEIGHT, rtol=1e-6)
    parametrize.register_parametrization(layer, "weight", _scale(tp))
    parametrize.remove_parametrizations(layer, "weight", leave_parametrized=False)
    np.testing.assert_allclose(_array(layer.weight), WEIGHT / 2, rtol=1e-6)
    with pytest.raises(ValueError, match="does not have a parametrization on weight"):
        parametrize.remove_parametrizations(layer, "weight")


def test_errors_as_pytorch():
    """A shape-changing parametrization (without unsafe) and an unknown tensor name raise ValueError."""

    class Flatten(tp.nn.Module):
        def forward(self, x):
            return x.reshape(-1)

    with pytest.raises(ValueError, match="may not change the shape"):
        parametrize.register_parametrization(_linear(tp), "weight", Flatten())
    parametrize.register_parametrization(_linear(tp), "weight", Flatten(), unsafe=True)
    with pytest.raises(ValueError, match="does not have a parameter, a buffer, or a parametrized element"):
        parametrize.register_parametrization(_linear(tp), "nothing", Flatten())


def test_cached_computes_once():
    """Inside cached() the parametrization runs once per tensor; outside at every access."""
    calls = []

    class Counting(tp.nn.Module):
        def forward(self, x):
            calls.append(1)
            return x

    layer = parametrize.register_parametrization(_linear(tp), "weight", Counting())
    calls.clear()
    with parametrize.cached():
        assert layer.weight is layer.weight
    assert len(calls) == 1
    layer.weight, layer.weight
    assert len(calls) == 3


def test_optimizer_trains_through_parametrized_weight():
    """SGD steps on the original of a parametrized weight give PyTorch's values."""
    results = {}
    for lib, mod in ((torch, torch.nn.utils.parametrize), (tp, parametrize)):
        layer = _linear(lib)
        mod.register_parametrization(layer, "weight", _lower_halved(lib))
        optimizer = lib.optim.SGD(layer.parameters(), lr=0.1, momentum=0.9)
        for _ in range(3):
            optimizer.zero_grad()
            layer(lib.tensor(X)).square().mean().backward()
            optimizer.step()
        results[lib.__name__] = _array(layer.weight)
    np.testing.assert_allclose(results["tensorplug"], results["torch"], rtol=1e-5, atol=1e-6)


def test_deepcopy_keeps_parametrization_and_pickle_refuses():
    """A deep copy is parametrized independently; pickling refuses with PyTorch's message."""
    import pickle

    layer = parametrize.register_parametrization(_linear(tp), "weight", _scale(tp))
    clone = copy.deepcopy(layer)
    clone.weight = tp.zeros(4, 3)
    np.testing.assert_allclose(_array(layer.weight), WEIGHT, rtol=1e-6)
    with pytest.raises(RuntimeError, match="only supported through state_dict"):
        pickle.dumps(layer)


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_matches_pytorch(device, dim):
    """original0 = g, original1 = v with PyTorch's shapes, values, state_dict keys and gradients."""
    results = {}
    for lib, mod in ((torch, torch.nn.utils.parametrizations), (tp, parametrizations)):
        layer = _linear(lib) if lib is torch else _linear(lib, device)
        mod.weight_norm(layer, dim=dim)
        x = lib.tensor(X, device=device) if lib is tp else lib.tensor(X)
        layer(x).square().sum().backward()
        wn = layer.parametrizations.weight
        results[lib.__name__] = (list(layer.state_dict()), _array(wn.original0), _array(layer.weight),
                                 _array(wn.original0.grad), _array(wn.original1.grad))
    theirs, ours = results["torch"], results["tensorplug"]
    assert ours[0] == theirs[0] == ["bias", "parametrizations.weight.original0", "parametrizations.weight.original1"]
    for a, b in zip(theirs[1:], ours[1:]):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


def test_weight_norm_remove_leaves_weight():
    """remove_parametrizations after weight_norm leaves one parameter holding g * v / ||v||."""
    layer = parametrizations.weight_norm(_linear(tp))
    parametrize.remove_parametrizations(layer, "weight")
    assert list(layer.state_dict()) == ["bias", "weight"]  # PyTorch's order: re-registered last
    np.testing.assert_allclose(_array(layer.weight), WEIGHT, rtol=1e-6)


@pytest.mark.parametrize("kind", ["Linear", "Conv2d", "ConvTranspose2d"])
def test_spectral_norm_matches_pytorch_from_the_same_u(device, kind):
    """With PyTorch's u and v copied in, training-mode steps (power iteration) and an eval-mode
    step (none) give PyTorch's weights, buffers and gradients."""
    args = {"Linear": (3, 4), "Conv2d": (2, 3, 3), "ConvTranspose2d": (2, 3, 3)}[kind]
    shape = {"Linear": (2, 3), "Conv2d": (1, 2, 5, 5), "ConvTranspose2d": (1, 2, 4, 4)}[kind]
    torch.manual_seed(0)
    ref = torch.nn.utils.parametrizations.spectral_norm(getattr(torch.nn, kind)(*args), n_power_iterations=2)
    ours = getattr(tp.nn, kind)(*args)
    with tp.no_grad():
        ours.weight.copy_(tp.tensor(ref.parametrizations.weight.original.detach().numpy()))
        ours.bias.copy_(tp.tensor(ref.bias.detach().numpy()))
    parametrizations.spectral_norm(ours, n_power_iterations=2)
    assert list(ours.state_dict()) == list(ref.state_dict())
    with tp.no_grad():
        for name in ("_u", "_v"):
            getattr(ours.parametrizations.weight[0], name).copy_(tp.tensor(getattr(ref.parametrizations.weight[0], name).numpy()))
    ours.to(device)
    x = np.linspace(-1, 1, int(np.prod(shape))).reshape(shape)
    for step in range(3):
        if step == 2:
            ref.eval(), ours.eval()
        ref.zero_grad(), ours.zero_grad()
        ref(torch.tensor(x, dtype=torch.float32)).square().sum().backward()
        ours(tp.tensor(x, dtype=tp.float32, device=device)).square().sum().backward()
        for a, b in ((ref.parametrizations.weight[0]._u, ours.parametrizations.weight[0]._u),
                     (ref.parametrizations.weight.original.grad, ours.parametrizations.weight.original.grad)):
            np.testing.assert_allclose(_array(b), _array(a), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(_array(ours.weight), _array(ref.weight), rtol=1e-4, atol=1e-6)


def test_spectral_norm_errors():
    """A dim out of range and a non-positive n_power_iterations raise PyTorch's errors."""
    with pytest.raises(IndexError, match="Dimension out of range"):
        parametrizations.spectral_norm(tp.nn.Linear(3, 4), dim=2)
    with pytest.raises(ValueError, match="Expected n_power_iterations to be positive"):
        parametrizations.spectral_norm(tp.nn.Linear(3, 4), n_power_iterations=0)
