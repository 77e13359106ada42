"""Gradients through complex tensors follow PyTorch's convention: for a real loss L of z = x + iy,
z.grad is dL/dx + i dL/dy. References: central differences in float64 of a NumPy function of
the same expression (always), and PyTorch 2.13 (where installed)."""
import numpy as np
import pytest

import tensorplug as tp
from complex_gradients import numeric_gradient


def _values(shape, seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


# name -> (tensorplug/torch expression, NumPy expression) of a real loss of complex z.
CASES = {
    "mul_conj": (lambda L, z: (z * z.conj()).real.sum(), lambda z: (z * np.conj(z)).real.sum()),
    "div": (lambda L, z: (z / (z + 2)).imag.sum(), lambda z: (z / (z + 2)).imag.sum()),
    "abs": (lambda L, z: (z * (1 - 2j)).abs().sum(), lambda z: np.abs(z * (1 - 2j)).sum()),
    "angle": (lambda L, z: (z * z).angle().sum(), lambda z: np.angle(z * z).sum()),
    "view_as_real": (lambda L, z: (L.view_as_real(z - 1j) ** 2).sum(), lambda z: ((z - 1j).real ** 2 + (z - 1j).imag ** 2).sum()),
    "sum_mean": (lambda L, z: (z.sum(0) * z.mean(1)[0]).real.sum(), lambda z: (z.sum(0) * z.mean(1)[0]).real.sum()),
    "broadcast": (lambda L, z: (z[:1] * z).imag.sum(), lambda z: (z[:1] * z).imag.sum()),
    "transpose": (lambda L, z: (z.T * 3j).real.sum(), lambda z: (z.T * 3j).real.sum()),
    "exp_log": (lambda L, z: (z.exp() + (z * 2).log()).imag.sum(), lambda z: (np.exp(z) + np.log(z * 2)).imag.sum()),
    "matmul": (lambda L, z: (z @ z.T).real.sum(), lambda z: (z @ z.T).real.sum()),
    "where_index": (lambda L, z: L.where(z.real > 0, z * 2j, z)[L.tensor([1, 0, 1])].real.sum(),
                    lambda z: np.where(z.real > 0, z * 2j, z)[[1, 0, 1]].real.sum()),
    "sgn": (lambda L, z: L.sgn(z * (1 + 1j)).imag.sum(), lambda z: (z * (1 + 1j) / np.abs(z * (1 + 1j))).imag.sum()),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_matches_finite_differences(device, name):
    """The complex gradient equals NumPy central differences of the same loss (float64)."""
    expression, reference = CASES[name]
    z = _values((2, 3), 7)
    t = tp.tensor(z, dtype=tp.complex128, device=device, requires_grad=True)
    expression(tp, t).backward()
    assert t.grad.dtype is tp.complex128
    np.testing.assert_allclose(t.grad.cpu().numpy(), numeric_gradient(reference, z), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_matches_pytorch(name):
    """The same gradient as PyTorch 2.13's."""
    torch = pytest.importorskip("torch", reason="PyTorch 2.13 is a reference here (pip install torch==2.13.0)")
    expression, _ = CASES[name]
    z = _values((2, 3), 8)
    ours = tp.tensor(z, requires_grad=True)
    theirs = torch.tensor(z, dtype=torch.complex64, requires_grad=True)
    expression(tp, ours).backward()
    expression(torch, theirs).backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.resolve_conj().numpy(), rtol=1e-5, atol=1e-5)


def test_abs_gradient_at_zero_is_zero(device):
    """|z| at 0 has gradient 0 (PyTorch's sgn(0)), not NaN."""
    t = tp.zeros(3, dtype=tp.complex64, device=device, requires_grad=True)
    t.abs().sum().backward()
    assert t.grad.tolist() == [0j, 0j, 0j]


def test_complex_and_polar_gradients(device):
    """tp.complex and tp.polar pass gradients to their real inputs."""
    re = tp.tensor([1.0, 2.0], dtype=tp.float64, device=device, requires_grad=True)
    im = tp.tensor([0.5, -1.0], dtype=tp.float64, device=device, requires_grad=True)
    (tp.complex(re, im) * (2 + 3j)).imag.sum().backward()
    # Im((re + i im)(2 + 3i)) = 3 re + 2 im
    assert re.grad.tolist() == [3.0, 3.0] and im.grad.tolist() == [2.0, 2.0]
    r = tp.tensor([2.0], dtype=tp.float64, device=device, requires_grad=True)
    theta = tp.tensor([0.3], dtype=tp.float64, device=device, requires_grad=True)
    tp.polar(r, theta).real.sum().backward()  # r cos(theta)
    np.testing.assert_allclose(r.grad.cpu().numpy(), [np.cos(0.3)])
    np.testing.assert_allclose(theta.grad.cpu().numpy(), [-2.0 * np.sin(0.3)])


def test_backward_needs_a_real_loss():
    """An implicit gradient needs a real scalar, as in PyTorch."""
    t = tp.tensor([1 + 1j], requires_grad=True)
    with pytest.raises(RuntimeError, match="real scalar"):
        (t * 2).sum().backward()


def test_inplace_on_complex_leaf_is_refused():
    """An in-place op on a complex leaf that requires grad raises, as for real leaves."""
    t = tp.tensor([1 + 1j], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        t.mul_(2)


def test_inplace_on_complex_intermediate():
    """An in-place op on a non-leaf complex tensor rebases its history (gradient as PyTorch's)."""
    t = tp.tensor([1 + 2j, -1j], dtype=tp.complex128, requires_grad=True)
    u = t * 1
    u.mul_(u)  # u = t^2
    u.real.sum().backward()  # d Re(t^2) = 2 conj(t) in PyTorch's convention
    np.testing.assert_allclose(t.grad.numpy(), 2 * np.conj([1 + 2j, -1j]))


def test_unsupported_op_names_itself():
    """An op with no complex kernel raises before any backend runs, naming the op or dtype."""
    z = tp.tensor([1 + 1j])
    with pytest.raises(TypeError, match="sign.*complex64"):
        tp.sign(z)  # PyTorch refuses it too (sgn is the complex sign)
    with pytest.raises(NotImplementedError, match="amax: not implemented for complex tensors"):
        z.amax()  # (complex numbers have no order; PyTorch refuses it too)
