"""Gradients through tp.fft: a real loss sum(w * view_as_real(f(x))) differentiated by autograd,
against central differences in float64 of the same loss over numpy.fft (always) and against
PyTorch 2.13 (where installed)."""
import numpy as np
import pytest

import tensorplug as tp


def _input(kind: str, seed: int):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((3, 6))
    return x + 1j * rng.standard_normal((3, 6)) if kind == "complex" else x


# name -> (tp/torch call, numpy call, input kind).
CASES = {
    "fft": (lambda f, x: f.fft(x, n=8, norm="ortho"), lambda x: np.fft.fft(x, n=8, norm="ortho"), "complex"),
    "fft_of_real": (lambda f, x: f.fft(x), lambda x: np.fft.fft(x), "real"),
    "ifft_trim": (lambda f, x: f.ifft(x, n=2, dim=0), lambda x: np.fft.ifft(x, n=2, axis=0), "complex"),
    "fft2": (lambda f, x: f.fft2(x, norm="forward"), lambda x: np.fft.fft2(x, norm="forward"), "complex"),
    "rfft_even": (lambda f, x: f.rfft(x), lambda x: np.fft.rfft(x), "real"),
    "rfft_odd": (lambda f, x: f.rfft(x, n=7, norm="ortho"), lambda x: np.fft.rfft(x, n=7, norm="ortho"), "real"),
    "rfftn": (lambda f, x: f.rfftn(x, s=(4, 5)), lambda x: np.fft.rfftn(x, s=(4, 5), axes=(0, 1)), "real"),
    "irfft": (lambda f, x: f.irfft(x), lambda x: np.fft.irfft(x), "complex"),
    "irfft_odd": (lambda f, x: f.irfft(x, n=9, norm="forward"), lambda x: np.fft.irfft(x, n=9, norm="forward"), "complex"),
    "irfft2": (lambda f, x: f.irfft2(x, s=(3, 5)), lambda x: np.fft.irfft2(x, s=(3, 5)), "complex"),
    "hfft": (lambda f, x: f.hfft(x, n=8), lambda x: np.fft.hfft(x, n=8), "complex"),
    "ihfft": (lambda f, x: f.ihfft(x, norm="ortho"), lambda x: np.fft.ihfft(x, norm="ortho"), "real"),
    "fftshift": (lambda f, x: f.fftshift(x * 2), lambda x: np.fft.fftshift(x * 2), "complex"),
}


def _weights(shape, seed=9):
    return np.random.default_rng(seed).standard_normal(shape)


def _as_pairs(values: np.ndarray) -> np.ndarray:
    return np.stack([values.real, values.imag], -1) if np.iscomplexobj(values) else values


def numeric_gradient(function, x: np.ndarray, weights: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """d/dRe + i d/dIm (d/dx for real x) of sum(weights * pairs(function(x))) by central differences."""
    grad = np.zeros_like(x)
    units = (1.0, 1j) if np.iscomplexobj(x) else (1.0,)
    for index in np.ndindex(x.shape):
        for unit in units:
            step = np.zeros_like(x)
            step[index] = eps * unit
            up = (weights * _as_pairs(function(x + step))).sum()
            down = (weights * _as_pairs(function(x - step))).sum()
            grad[index] += (up - down) / (2 * eps) * unit
    return grad


def _autograd(module, call, x, weights, **tensor_kwargs):
    t = module.tensor(x, requires_grad=True, **tensor_kwargs)
    y = call(module.fft, t)
    pairs = module.view_as_real(y.resolve_conj()) if y.is_complex() else y
    (pairs * module.tensor(weights, dtype=pairs.dtype, device=pairs.device)).sum().backward()
    return t.grad


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_matches_finite_differences(device, name):
    """Autograd's gradient equals float64 central differences of the NumPy transform."""
    call, reference, kind = CASES[name]
    x = _input(kind, 1)
    weights = _weights(_as_pairs(reference(x)).shape)
    dtype = tp.complex128 if kind == "complex" else tp.float64
    grad = _autograd(tp, call, x, weights, dtype=dtype, device=device)
    assert grad.dtype is dtype
    np.testing.assert_allclose(grad.cpu().numpy(), numeric_gradient(reference, x, weights), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_matches_pytorch(name):
    """The same gradient as PyTorch 2.13's."""
    torch = pytest.importorskip("torch", reason="PyTorch 2.13 is a reference here (pip install torch==2.13.0)")
    call, reference, kind = CASES[name]
    x = _input(kind, 2)
    weights = _weights(_as_pairs(reference(x)).shape)
    ours = _autograd(tp, call, x, weights)
    theirs = _autograd(torch, call, x, weights)
    np.testing.assert_allclose(ours.numpy(), theirs.resolve_conj().numpy(), rtol=1e-5, atol=1e-5)


def test_second_derivative_of_a_transform():
    """create_graph works through an FFT: the loss's Hessian-vector product against NumPy's."""
    x = tp.tensor(_input("real", 3), dtype=tp.float64, requires_grad=True)
    loss = tp.fft.rfft(x).abs().pow(2).sum()  # Parseval: a quadratic form in x
    (grad,) = tp.autograd.grad(loss, x, create_graph=True)
    (hvp,) = tp.autograd.grad(grad.sum(), x)
    # |rfft(x)|^2 summed is x^T M x with M symmetric; d/dx of sum(2 M x) is 2 M 1.
    ones = np.ones(6)
    quadratic = np.array([[np.sum(np.real(np.fft.rfft(e_i) * np.conj(np.fft.rfft(e_j)))) for e_j in np.eye(6)]
                          for e_i in np.eye(6)])
    np.testing.assert_allclose(hvp.numpy(), np.tile(2 * quadratic @ ones, (3, 1)), rtol=1e-10, atol=1e-10)
