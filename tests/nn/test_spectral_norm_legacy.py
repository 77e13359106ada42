"""The legacy nn.utils.spectral_norm / remove_spectral_norm (issue 13), against PyTorch 2.13 and NumPy."""
import numpy as np
import pytest

import tensorplug as tp
from tensorplug.nn.utils import remove_spectral_norm, spectral_norm


# (constructor arguments, input shape) per module kind; ConvTranspose takes dim=1 by default.
MODULES = {
    "Linear": ((3, 4), (5, 3)),
    "Conv2d": ((2, 3, 3), (2, 2, 5, 5)),
    "ConvTranspose2d": ((2, 3, 3), (2, 2, 4, 4)),
}


def _sigma(layer) -> float:
    """sigma = u . (W_mat v) with the layer's stored u and v, in float64 NumPy."""
    fn = next(h for h in layer._forward_pre_hooks.values() if isinstance(h, tp.nn.utils._spectral_norm.SpectralNorm))
    w = fn.reshape_weight_to_matrix(layer.weight_orig).detach().numpy()
    return float(layer.weight_u.numpy() @ w @ layer.weight_v.numpy())


@pytest.mark.parametrize("kind,dim", [("Linear", None), ("Conv2d", None), ("ConvTranspose2d", None), ("Conv2d", 1)])
def test_sigma_approaches_largest_singular_value(kind, dim):
    """After many training-mode power iterations sigma equals the largest singular value (float64)."""
    args, shape = MODULES[kind]
    layer = spectral_norm(getattr(tp.nn, kind)(*args).double(), n_power_iterations=200, dim=dim)
    rows = 1 if kind == "ConvTranspose2d" and dim is None else (dim or 0)
    w = np.moveaxis(layer.weight_orig.detach().numpy(), rows, 0)
    largest = np.linalg.svd(w.reshape(w.shape[0], -1), compute_uv=False)[0]
    layer(tp.zeros(shape, dtype=tp.float64))
    np.testing.assert_allclose(_sigma(layer), largest, rtol=1e-10)
    np.testing.assert_allclose(layer.weight.detach().numpy(), layer.weight_orig.detach().numpy() / largest, rtol=1e-9)


def test_u_and_v_start_normalized_with_pytorchs_shapes():
    """u has one entry per row of the weight matrix, v one per column; both have unit norm."""
    layer = spectral_norm(tp.nn.ConvTranspose2d(2, 3, 3))
    assert layer.weight_u.shape == (3,) and layer.weight_v.shape == (2 * 3 * 3,)
    np.testing.assert_allclose(np.linalg.norm(layer.weight_u.numpy()), 1.0, rtol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(layer.weight_v.numpy()), 1.0, rtol=1e-6)
    assert isinstance(layer.weight_orig, tp.nn.Parameter) and not layer.weight_u.requires_grad


def test_eval_mode_keeps_u_and_v():
    """In eval mode the forward divides by sigma from the stored u and v and leaves them unchanged."""
    layer = spectral_norm(tp.nn.Linear(3, 4).double()).eval()
    u, v = layer.weight_u.numpy().copy(), layer.weight_v.numpy().copy()
    layer(tp.zeros(2, 3, dtype=tp.float64))
    np.testing.assert_array_equal(layer.weight_u.numpy(), u)
    np.testing.assert_array_equal(layer.weight_v.numpy(), v)
    np.testing.assert_allclose(layer.weight.detach().numpy(), layer.weight_orig.detach().numpy() / _sigma(layer), rtol=1e-12)


def test_state_dict_errors_and_removal():
    """The state_dict holds weight_orig, weight_u and weight_v (no weight); a second hook, a bad
    n_power_iterations and removing a missing hook raise; removal restores one parameter."""
    layer = spectral_norm(tp.nn.Linear(3, 2))
    assert list(layer.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    with pytest.raises(RuntimeError, match="Cannot register two spectral_norm hooks on the same parameter weight"):
        spectral_norm(layer)
    with pytest.raises(ValueError, match="Expected n_power_iterations to be positive, but got n_power_iterations=0"):
        spectral_norm(tp.nn.Linear(3, 2), n_power_iterations=0)
    with pytest.raises(ValueError, match="`SpectralNorm` cannot be applied as parameter `bias` is None"):
        spectral_norm(tp.nn.Linear(3, 2, bias=False), name="bias")
    sigma = _sigma(layer)
    orig = layer.weight_orig.detach().numpy().copy()
    remove_spectral_norm(layer)
    assert isinstance(layer.weight, tp.nn.Parameter) and list(layer.state_dict()) == ["bias", "weight"]
    np.testing.assert_allclose(layer.weight.detach().numpy(), orig / sigma, rtol=1e-5)
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found in Linear"):
        remove_spectral_norm(layer)


@pytest.mark.parametrize("kind", list(MODULES))
@pytest.mark.parametrize("n_power_iterations", [1, 3])
def test_matches_torch(kind, n_power_iterations):
    """With PyTorch's u and v copied in, outputs, updated u/v and gradients of weight_orig and bias
    equal PyTorch's over three training steps, then in eval mode and after removal (float64)."""
    torch = pytest.importorskip("torch", reason="PyTorch is the reference; CI has none")
    args, shape = MODULES[kind]
    x = np.random.default_rng(3).standard_normal(shape)
    ref = torch.nn.utils.spectral_norm(getattr(torch.nn, kind)(*args).double(), n_power_iterations=n_power_iterations)
    layer = spectral_norm(getattr(tp.nn, kind)(*args).double(), n_power_iterations=n_power_iterations)
    with tp.no_grad():
        for name in ("weight_orig", "bias", "weight_u", "weight_v"):
            getattr(layer, name).copy_(tp.tensor(getattr(ref, name).detach().numpy()))
    results = []
    for lib, module in ((tp, layer), (torch, ref)):
        seen = []
        for _ in range(3):
            out = module(lib.tensor(x))
            (out ** 2).sum().backward()
            seen += [out.detach().numpy(), module.weight_u.numpy().copy(), module.weight_v.numpy().copy()]
            seen += [module.weight_orig.grad.numpy().copy(), module.bias.grad.numpy().copy()]
            with lib.no_grad():
                for p in module.parameters():
                    p.sub_(0.01 * p.grad)
                    p.grad = None
        module.eval()
        seen += [module(lib.tensor(x)).detach().numpy(), module.weight_u.numpy().copy()]
        lib.nn.utils.remove_spectral_norm(module)
        seen += [module.weight.detach().numpy()]
        results.append(seen)
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


def test_on_every_device(device):
    """On each backend the spectrally normalized layer gives the CPU's output, u and gradient."""
    rng = np.random.default_rng(4)
    weight, u, v, x = (rng.standard_normal(s) for s in ((4, 3), 4, 3, (5, 3)))
    results = []
    for where in ("cpu", device):
        layer = spectral_norm(tp.nn.Linear(3, 4, bias=False))
        with tp.no_grad():
            for name, value in (("weight_orig", weight), ("weight_u", u), ("weight_v", v)):
                getattr(layer, name).copy_(tp.tensor(value, dtype=tp.float32))
        layer = layer.to(where)
        out = layer(tp.tensor(x, dtype=tp.float32, device=where))
        out.sum().backward()
        assert out.device.type == where
        results.append([out.detach().cpu().numpy(), layer.weight_u.cpu().numpy(), layer.weight_orig.grad.cpu().numpy()])
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
