"""The legacy nn.utils.weight_norm / remove_weight_norm (issue 13), against PyTorch 2.13 and NumPy."""
import numpy as np
import pytest

import tensorplug as tp
from tensorplug.nn.utils import remove_weight_norm, weight_norm


DEPRECATED = pytest.mark.filterwarnings("ignore:`torch.nn.utils.weight_norm` is deprecated:FutureWarning")


def test_warns_as_deprecated():
    """weight_norm warns with PyTorch's FutureWarning."""
    with pytest.warns(FutureWarning, match="parametrizations.weight_norm"):
        weight_norm(tp.nn.Linear(3, 2))


@DEPRECATED
@pytest.mark.parametrize("dim", [0, 1, 2, -2, None])
def test_weight_is_g_times_direction_in_float64(dim):
    """g starts as ||v|| over all dims but ``dim``; the forward uses g * v / ||v|| (NumPy float64)."""
    conv = tp.nn.Conv1d(2, 4, 3).double()
    v = conv.weight.detach().numpy().copy()
    weight_norm(conv, dim=dim)
    axes = None if dim is None else tuple(k for k in range(3) if k != dim % 3)
    norm = np.sqrt((v ** 2).sum(axis=axes, keepdims=axes is not None))
    np.testing.assert_allclose(conv.weight_g.detach().numpy(), norm, rtol=1e-12)
    with tp.no_grad():
        conv.weight_g.mul_(2.0)
    x = np.random.default_rng(0).standard_normal((1, 2, 5))
    out = conv(tp.tensor(x))
    np.testing.assert_allclose(conv.weight.detach().numpy(), 2 * v, rtol=1e-12)
    assert out.shape == (1, 4, 3)


@DEPRECATED
def test_state_dict_errors_and_removal():
    """The state_dict holds name_g/name_v; a second hook and removing a missing one raise; removal
    restores one parameter holding the current weight."""
    layer = weight_norm(tp.nn.Linear(3, 2))
    assert list(layer.state_dict()) == ["bias", "weight_g", "weight_v"]
    with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks on the same parameter weight"):
        weight_norm(layer)
    with tp.no_grad():
        layer.weight_g.fill_(1.0)
    remove_weight_norm(layer)
    assert isinstance(layer.weight, tp.nn.Parameter) and list(layer.state_dict()) == ["bias", "weight"]
    np.testing.assert_allclose(np.linalg.norm(layer.weight.detach().numpy(), axis=1), [1.0, 1.0], rtol=1e-6)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found in Linear"):
        remove_weight_norm(layer)


@DEPRECATED
@pytest.mark.parametrize("dim", [0, 1, None])
def test_matches_torch(dim):
    """Outputs and the gradients of weight_g, weight_v and bias equal PyTorch's over two steps."""
    torch = pytest.importorskip("torch", reason="PyTorch is the reference; CI has none")
    rng = np.random.default_rng(1)
    weight, bias, x = rng.standard_normal((4, 3)), rng.standard_normal(4), rng.standard_normal((5, 3))
    results = []
    for lib in (tp, torch):
        layer = lib.nn.Linear(3, 4).double()
        with lib.no_grad():
            layer.weight.copy_(lib.tensor(weight))
            layer.bias.copy_(lib.tensor(bias))
        lib.nn.utils.weight_norm(layer, dim=dim)
        seen = []
        for _ in range(2):
            out = layer(lib.tensor(x))
            (out ** 2).sum().backward()
            seen += [out.detach().numpy()] + [p.grad.numpy().copy() for p in (layer.weight_g, layer.weight_v, layer.bias)]
            with lib.no_grad():
                for p in layer.parameters():
                    p.sub_(0.01 * p.grad)
                    p.grad = None
        results.append(seen)
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9)


@DEPRECATED
def test_on_every_device(device):
    """On each backend the reparameterized layer gives the CPU's output and gradients."""
    rng = np.random.default_rng(2)
    weight, x = rng.standard_normal((4, 3)), rng.standard_normal((5, 3))
    results = []
    for where in ("cpu", device):
        layer = tp.nn.Linear(3, 4, bias=False)
        with tp.no_grad():
            layer.weight.copy_(tp.tensor(weight, dtype=tp.float32))
        layer = weight_norm(layer.to(where))
        out = layer(tp.tensor(x, dtype=tp.float32, device=where))
        out.sum().backward()
        assert out.device.type == where
        results.append([out.detach().cpu().numpy(), layer.weight_g.grad.cpu().numpy(), layer.weight_v.grad.cpu().numpy()])
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
