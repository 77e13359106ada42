"""tp.fft's transforms on every device against numpy.fft in float64 (and complex64/float32 inputs
against the same reference at single-precision tolerance)."""
import numpy as np
import pytest

import tensorplug as tp

NORMS = [None, "backward", "ortho", "forward"]


def _complex(shape, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def _real(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _close(ours, expected, rtol=1e-10):
    got = ours.cpu().numpy()
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=rtol * max(1.0, float(np.abs(expected).max(initial=0))))


# name -> (tp call, numpy call, input kind): every transform with its n/s/dim forms.
CASES = {
    "fft": (lambda f, x, norm: f.fft(x, norm=norm), lambda x, norm: np.fft.fft(x, norm=norm), "complex"),
    "fft_n_pad": (lambda f, x, norm: f.fft(x, n=9, dim=0, norm=norm), lambda x, norm: np.fft.fft(x, n=9, axis=0, norm=norm), "complex"),
    "fft_n_trim": (lambda f, x, norm: f.fft(x, n=3, norm=norm), lambda x, norm: np.fft.fft(x, n=3, norm=norm), "complex"),
    "fft_of_real": (lambda f, x, norm: f.fft(x, norm=norm), lambda x, norm: np.fft.fft(x, norm=norm), "real"),
    "ifft": (lambda f, x, norm: f.ifft(x, n=7, norm=norm), lambda x, norm: np.fft.ifft(x, n=7, norm=norm), "complex"),
    "ifft_of_real": (lambda f, x, norm: f.ifft(x, dim=0, norm=norm), lambda x, norm: np.fft.ifft(x, axis=0, norm=norm), "real"),
    "fft2": (lambda f, x, norm: f.fft2(x, norm=norm), lambda x, norm: np.fft.fft2(x, norm=norm), "complex"),
    "ifft2_s": (lambda f, x, norm: f.ifft2(x, s=(3, 8), norm=norm), lambda x, norm: np.fft.ifft2(x, s=(3, 8), norm=norm), "complex"),
    "fftn": (lambda f, x, norm: f.fftn(x, norm=norm), lambda x, norm: np.fft.fftn(x, norm=norm), "complex"),
    "fftn_dim": (lambda f, x, norm: f.fftn(x, dim=(0,), norm=norm), lambda x, norm: np.fft.fftn(x, axes=(0,), norm=norm), "complex"),
    "ifftn_s": (lambda f, x, norm: f.ifftn(x, s=(5, 4), dim=(1, 0), norm=norm),
                lambda x, norm: np.fft.ifftn(x, s=(5, 4), axes=(1, 0), norm=norm), "complex"),
    "rfft": (lambda f, x, norm: f.rfft(x, norm=norm), lambda x, norm: np.fft.rfft(x, norm=norm), "real"),
    "rfft_odd": (lambda f, x, norm: f.rfft(x, n=7, dim=0, norm=norm), lambda x, norm: np.fft.rfft(x, n=7, axis=0, norm=norm), "real"),
    "irfft": (lambda f, x, norm: f.irfft(x, norm=norm), lambda x, norm: np.fft.irfft(x, norm=norm), "complex"),
    "irfft_odd": (lambda f, x, norm: f.irfft(x, n=9, norm=norm), lambda x, norm: np.fft.irfft(x, n=9, norm=norm), "complex"),
    "rfft2": (lambda f, x, norm: f.rfft2(x, norm=norm), lambda x, norm: np.fft.rfft2(x, norm=norm), "real"),
    "irfft2": (lambda f, x, norm: f.irfft2(x, norm=norm), lambda x, norm: np.fft.irfft2(x, norm=norm), "complex"),
    "rfftn_s": (lambda f, x, norm: f.rfftn(x, s=(3, 5), norm=norm), lambda x, norm: np.fft.rfftn(x, s=(3, 5), axes=(0, 1), norm=norm), "real"),
    "irfftn_s": (lambda f, x, norm: f.irfftn(x, s=(4, 7), norm=norm),
                 lambda x, norm: np.fft.irfftn(x, s=(4, 7), axes=(0, 1), norm=norm), "complex"),
    "hfft": (lambda f, x, norm: f.hfft(x, norm=norm), lambda x, norm: np.fft.hfft(x, norm=norm), "complex"),
    "hfft_n": (lambda f, x, norm: f.hfft(x, n=5, dim=0, norm=norm), lambda x, norm: np.fft.hfft(x, n=5, axis=0, norm=norm), "complex"),
    "ihfft": (lambda f, x, norm: f.ihfft(x, norm=norm), lambda x, norm: np.fft.ihfft(x, norm=norm), "real"),
}


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_transform_matches_numpy(device, name, norm):
    """Each transform, in float64/complex128, equals numpy.fft's."""
    ours, reference, kind = CASES[name]
    x = _complex((4, 6), 1) if kind == "complex" else _real((4, 6), 1)
    result = ours(tp.fft, tp.tensor(x, dtype=tp.complex128 if kind == "complex" else tp.float64, device=device), norm)
    expected = reference(x, norm)
    assert result.dtype is (tp.complex128 if np.iscomplexobj(expected) else tp.float64)
    _close(result, expected)


@pytest.mark.parametrize("name", sorted(CASES))
def test_single_precision(device, name):
    """complex64/float32 inputs give complex64/float32 results within single precision."""
    ours, reference, kind = CASES[name]
    x = _complex((4, 6), 2) if kind == "complex" else _real((4, 6), 2)
    t = tp.tensor(x, dtype=tp.complex64 if kind == "complex" else tp.float32, device=device)
    result = ours(tp.fft, t, None)
    expected = reference(t.cpu().numpy().astype(np.complex128 if kind == "complex" else np.float64), None)
    assert result.dtype is (tp.complex64 if np.iscomplexobj(expected) else tp.float32)
    _close(result, expected, rtol=2e-5)


def test_integer_input_promotes(device):
    """Integer input is transformed as the default float dtype, as in PyTorch."""
    x = np.arange(8)
    result = tp.fft.fft(tp.tensor(x, device=device))
    assert result.dtype is tp.complex64
    _close(result, np.fft.fft(x), rtol=1e-5)
    assert tp.fft.rfft(tp.tensor(x, device=device)).dtype is tp.complex64


def test_roundtrips(device):
    """ifft(fft(x)) and irfft(rfft(x), n) give x back."""
    x = _real((3, 10), 3)
    t = tp.tensor(x, dtype=tp.float64, device=device)
    _close(tp.fft.ifft(tp.fft.fft(t)).real, x)
    _close(tp.fft.irfft(tp.fft.rfft(t), n=10), x)
    _close(tp.fft.irfftn(tp.fft.rfftn(t, norm="ortho"), s=(3, 10), norm="ortho"), x)


def test_noncontiguous_and_batched(device):
    """A transposed, sliced input over a middle dim."""
    x = _complex((3, 8, 5), 4)
    t = tp.tensor(x, dtype=tp.complex128, device=device).transpose(0, 2)[:, ::2]
    _close(tp.fft.fft(t, dim=1), np.fft.fft(x.transpose(2, 1, 0)[:, ::2], axis=1))


@pytest.mark.parametrize("n,d", [(1, 1.0), (6, 0.5), (7, 2.0)])
def test_frequencies(device, n, d):
    """fftfreq and rfftfreq as NumPy's."""
    _close(tp.fft.fftfreq(n, d, dtype=tp.float64, device=device), np.fft.fftfreq(n, d))
    _close(tp.fft.rfftfreq(n, d, dtype=tp.float64, device=device), np.fft.rfftfreq(n, d))
    assert tp.fft.fftfreq(n, device=device).dtype is tp.float32


@pytest.mark.parametrize("dim", [None, 0, (1,), (0, 1)])
def test_shifts(device, dim):
    """fftshift and ifftshift of real and complex tensors as NumPy's."""
    x = _complex((4, 5), 5)
    axes = dim if not isinstance(dim, int) else (dim,)
    t = tp.tensor(x, dtype=tp.complex128, device=device)
    _close(tp.fft.fftshift(t, dim), np.fft.fftshift(x, axes))
    _close(tp.fft.ifftshift(t.real, dim), np.fft.ifftshift(x.real, axes))
    _close(tp.fft.ifftshift(tp.fft.fftshift(t, dim), dim), x)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_large_batches_split_over_threads(threads):
    """Batches big enough to be split over threads give NumPy's values, whatever the count."""
    previous = tp.get_num_threads()
    tp.set_num_threads(threads)
    try:
        z = _complex((5, 40, 512), 6)
        t = tp.tensor(z, dtype=tp.complex128)
        _close(tp.fft.fft(t), np.fft.fft(z))
        _close(tp.fft.ifftn(t, dim=(0, 2)), np.fft.ifftn(z, axes=(0, 2)))
        _close(tp.fft.rfft(t.real, dim=1), np.fft.rfft(z.real, axis=1))
        _close(tp.fft.irfft(t, n=1000), np.fft.irfft(z, n=1000))
    finally:
        tp.set_num_threads(previous)
