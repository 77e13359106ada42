"""tp.autograd.functional's jacobian, hessian, vjp, jvp, hvp and vhp against PyTorch 2.13 and NumPy
finite differences: values, result structures, create_graph and strict errors."""
import numpy as np
import pytest

import tensorplug as tp
from autograd_reference import as_numpy, torch_module

F = tp.autograd.functional
RNG = np.random.default_rng(13)


def numeric_jacobian(fn, x, eps=1e-6):
    """d fn(x) / d x by central differences: shape fn(x).shape + x.shape."""
    x = np.asarray(x, dtype=np.float64)
    out_shape = np.shape(fn(x))
    jac = np.zeros(out_shape + x.shape)
    for idx in np.ndindex(x.shape):
        plus, minus = x.copy(), x.copy()
        plus[idx] += eps
        minus[idx] -= eps
        jac[(Ellipsis,) + idx] = (np.asarray(fn(plus)) - np.asarray(fn(minus))) / (2 * eps)
    return jac


def two_inputs(lib):
    """f(x, y) -> (x * y.sum(), exp(x).sum()) in the given library."""
    return lambda x, y: (x * y.sum(), lib.exp(x).sum())


def test_jacobian_single_tensor_matches_finite_differences():
    """One tensor in and out: one tensor of shape out.shape + in.shape."""
    x = RNG.uniform(-1, 1, (2, 3))
    jac = F.jacobian(lambda t: tp.sin(t) * t.sum(), tp.tensor(x))
    assert isinstance(jac, tp.Tensor) and tuple(jac.shape) == (2, 3, 2, 3)
    np.testing.assert_allclose(as_numpy(jac), numeric_jacobian(lambda a: np.sin(a) * a.sum(), x), atol=1e-7)


def test_jacobian_structures_match_pytorch():
    """Tuple in or out gives a tuple; both give a tuple of tuples indexed [output][input]."""
    torch = torch_module()
    x, y = RNG.uniform(-1, 1, 3), RNG.uniform(-1, 1, 2)
    ours = F.jacobian(two_inputs(tp), (tp.tensor(x), tp.tensor(y)))
    ref = torch.autograd.functional.jacobian(two_inputs(torch), (torch.tensor(x), torch.tensor(y)))
    assert len(ours) == 2 and all(len(row) == 2 for row in ours)
    for row_ours, row_ref in zip(ours, ref):
        for a, b in zip(row_ours, row_ref):
            assert tuple(a.shape) == tuple(b.shape)
            np.testing.assert_allclose(as_numpy(a), b.numpy(), atol=1e-12)
    one_in = F.jacobian(lambda t: (t * 2, t.sum()), tp.tensor(x))
    assert isinstance(one_in, tuple) and len(one_in) == 2 and isinstance(one_in[0], tp.Tensor)
    one_out = F.jacobian(lambda a, b: a.sum() * b, (tp.tensor(x), tp.tensor(y)))
    assert isinstance(one_out, tuple) and tuple(one_out[0].shape) == (2, 3) and tuple(one_out[1].shape) == (2, 2)


def test_jacobian_of_an_unused_input_is_zero_and_strict_refuses_it():
    """strict=False fills zeros for an input the outputs ignore; strict=True raises PyTorch's error."""
    x, y = tp.ones(2), tp.ones(3)
    jac = F.jacobian(lambda a, b: a * 2, (x, y))
    assert as_numpy(jac[1]).tolist() == [[0, 0, 0], [0, 0, 0]]
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function is independent of input 1"):
        F.jacobian(lambda a, b: a * 2, (x, y), strict=True)
    with pytest.raises(RuntimeError, match="does not require gradients"):
        F.jacobian(lambda a: tp.ones(2), x, strict=True)


def test_jacobian_create_graph_is_differentiable():
    """With create_graph the Jacobian requires grad and its derivative is the second derivative."""
    x = tp.tensor([0.5, -1.0], requires_grad=True)
    jac = F.jacobian(lambda t: t ** 3, x, create_graph=True)
    assert jac.requires_grad
    (g,) = tp.autograd.grad(jac.sum(), x)
    np.testing.assert_allclose(as_numpy(g), 6 * np.array([0.5, -1.0]))
    assert not F.jacobian(lambda t: t ** 3, x).requires_grad


def test_jacobian_vectorize_and_forward_mode_follow_pytorch():
    """vectorize=True gives the same values; forward mode needs vectorize=True and refuses create_graph and strict."""
    x = tp.tensor([1.0, 2.0])
    expected = as_numpy(F.jacobian(tp.exp, x))
    np.testing.assert_allclose(as_numpy(F.jacobian(tp.exp, x, vectorize=True)), expected)
    np.testing.assert_allclose(as_numpy(F.jacobian(tp.exp, x, vectorize=True, strategy="forward-mode")), expected)
    with pytest.raises(NotImplementedError, match="only implemented for `vectorize=True`"):
        F.jacobian(tp.exp, x, strategy="forward-mode")
    with pytest.raises(NotImplementedError, match="create_graph=True"):
        F.jacobian(tp.exp, x, create_graph=True, vectorize=True, strategy="forward-mode")
    with pytest.raises(RuntimeError, match="`strict=True` and `vectorized=True`"):
        F.jacobian(tp.exp, x, strict=True, vectorize=True)
    with pytest.raises(ValueError, match="forward-mode"):
        F.jacobian(tp.exp, x, strategy="sideways")


def test_inputs_must_be_tensors():
    """A non-tensor input raises PyTorch's TypeError."""
    with pytest.raises(TypeError, match="must be either a Tensor or a tuple of Tensors"):
        F.jacobian(lambda a: a, [1.0, 2.0])


def test_hessian_matches_pytorch_for_two_inputs():
    """hessian of a scalar function of two inputs: a tuple of tuples of shape in_i.shape + in_j.shape."""
    torch = torch_module()
    x, y = RNG.uniform(-1, 1, 2), RNG.uniform(-1, 1, 3)

    def fn(lib):
        return lambda a, b: (a.sum() ** 2) * lib.sin(b).sum() + (a ** 3).sum()

    ours = F.hessian(fn(tp), (tp.tensor(x), tp.tensor(y)))
    ref = torch.autograd.functional.hessian(fn(torch), (torch.tensor(x), torch.tensor(y)))
    for row_ours, row_ref in zip(ours, ref):
        for a, b in zip(row_ours, row_ref):
            assert tuple(a.shape) == tuple(b.shape)
            np.testing.assert_allclose(as_numpy(a), b.numpy(), atol=1e-12)
    single = F.hessian(lambda a: (a ** 3).sum(), tp.tensor(x))
    np.testing.assert_allclose(as_numpy(single), np.diag(6 * x))
    with pytest.raises(RuntimeError, match="should contain a single element"):
        F.hessian(lambda a: a ** 2, tp.tensor(x))


def test_hessian_strict_refuses_a_linear_function():
    """A linear function's Jacobian does not depend on the input: strict mode says so."""
    with pytest.raises(RuntimeError, match="jacobian of the user-provided function with respect to input 0"):
        F.hessian(lambda a: (a * 2).sum(), tp.ones(2), strict=True)


@pytest.mark.parametrize("name", ["vjp", "jvp", "hvp", "vhp"])
def test_products_match_pytorch(name):
    """Each product returns (func(inputs), product) with PyTorch's values and structure."""
    torch = torch_module()
    x, y = RNG.uniform(-1, 1, 3), RNG.uniform(-1, 1, 3)
    if name == "vjp":
        def fn(lib):
            return lambda a, b: (a * b, lib.exp(a))
        v = (RNG.uniform(-1, 1, 3), RNG.uniform(-1, 1, 3))
    else:
        def fn(lib):
            return (lambda a, b: (a * b, lib.exp(a))) if name == "jvp" else (lambda a, b: (a ** 2 * lib.sin(b)).sum())
        v = (RNG.uniform(-1, 1, 3), RNG.uniform(-1, 1, 3))
    ours = getattr(F, name)(fn(tp), (tp.tensor(x), tp.tensor(y)), tuple(tp.tensor(a) for a in v))
    ref = getattr(torch.autograd.functional, name)(fn(torch), (torch.tensor(x), torch.tensor(y)),
                                                   tuple(torch.tensor(a) for a in v))
    ours_flat = [ours[0]] if isinstance(ours[0], tp.Tensor) else list(ours[0])
    ref_flat = [ref[0]] if isinstance(ref[0], torch.Tensor) else list(ref[0])
    ours_flat += list(ours[1])
    ref_flat += list(ref[1])
    assert len(ours_flat) == len(ref_flat)
    for a, b in zip(ours_flat, ref_flat):
        assert tuple(a.shape) == tuple(b.shape) and not a.requires_grad
        np.testing.assert_allclose(as_numpy(a), b.detach().numpy(), atol=1e-12)


def test_single_tensor_products_and_v_checks():
    """A single tensor gives a single tensor; v=None needs one element; a v of the wrong shape is refused."""
    x = tp.tensor([1.0, 2.0])
    out, g = F.vjp(lambda t: (t * t).sum(), x)
    assert isinstance(g, tp.Tensor) and as_numpy(g).tolist() == [2.0, 4.0] and out.item() == 5.0
    out, jv = F.jvp(lambda t: t * t, x, tp.tensor([1.0, 0.0]))
    assert as_numpy(jv).tolist() == [2.0, 0.0]
    with pytest.raises(RuntimeError, match="v can only be None if the user-provided function returns"):
        F.vjp(lambda t: t * t, x)
    with pytest.raises(RuntimeError, match="v has invalid size: should be"):
        F.vjp(lambda t: t * t, x, tp.ones(3))
    with pytest.raises(RuntimeError, match="v is a tuple of invalid length"):
        F.jvp(lambda a, b: a * b, (x, x), (tp.ones(2),))
    with pytest.raises(RuntimeError, match="should return a single Tensor"):
        F.hvp(lambda t: (t.sum(), t.sum()), x, tp.ones(2))


def test_vjp_create_graph_and_strict():
    """create_graph keeps the product differentiable; strict names the input the output ignores."""
    x = tp.tensor([1.0, 2.0], requires_grad=True)
    _, g = F.vjp(lambda t: (t ** 3).sum(), x, create_graph=True)
    (gg,) = tp.autograd.grad(g.sum(), x)
    assert as_numpy(gg).tolist() == [6.0, 12.0]
    with pytest.raises(RuntimeError, match="independent of input 1"):
        F.vjp(lambda a, b: a.sum(), (tp.ones(2), tp.ones(2)), strict=True)


def test_hvp_equals_vhp_and_finite_differences(device):
    """On each device: H v from hvp and vhp equals the finite-difference derivative of the gradient along v."""
    x, v = RNG.uniform(-1, 1, 3), RNG.uniform(-1, 1, 3)
    fn = lambda t: (t ** 2 * t.sum()).sum()  # noqa: E731
    xt, vt = tp.tensor(x, dtype=tp.float32, device=device), tp.tensor(v, dtype=tp.float32, device=device)
    _, hv = F.hvp(fn, xt, vt)
    _, vh = F.vhp(fn, xt, vt)
    assert hv.device.type == device

    def gradient(a):
        return 2 * a * a.sum() + (a ** 2).sum()

    expected = numeric_jacobian(gradient, x) @ v
    np.testing.assert_allclose(hv.cpu().numpy(), expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(vh.cpu().numpy(), expected, rtol=1e-4, atol=1e-5)
    jac = F.jacobian(lambda t: t * t.sum(), xt)
    np.testing.assert_allclose(jac.cpu().numpy(), numeric_jacobian(lambda a: a * a.sum(), x), rtol=1e-4, atol=1e-5)
