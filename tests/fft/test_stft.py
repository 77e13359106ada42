"""tp.stft / tp.istft (and the Tensor methods) against PyTorch 2.13 and against NumPy's own
framing + FFT, on every device; PyTorch's argument errors; the round trip; gradients."""
import warnings

import numpy as np
import pytest

import tensorplug as tp

try:
    import torch
except ImportError:  # the reference; tensorplug itself does not need it
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch (the reference) is not installed: pip install torch==2.13.0")

rng = np.random.default_rng(7)
SIGNAL = rng.standard_normal(100)
BATCH = rng.standard_normal((3, 70))
WINDOW10 = rng.uniform(0.5, 1.0, 10)

# name -> stft keyword arguments (NumPy arrays become tensors of the library under test)
CASES = {
    "defaults": dict(n_fft=16, return_complex=True),
    "hop_short_window_uncentered": dict(n_fft=16, hop_length=5, win_length=10, window=WINDOW10, center=False,
                                        return_complex=True),
    "normalized_constant_pad": dict(n_fft=16, window=np.hanning(16), normalized=True, pad_mode="constant",
                                    return_complex=True),
    "two_sided": dict(n_fft=16, window=np.ones(16), onesided=False, return_complex=True),
    "odd_n_fft_real_pairs": dict(n_fft=15, hop_length=3, window=np.ones(15), return_complex=False),
    "replicate_pad_short_window": dict(n_fft=16, window=WINDOW10, win_length=10, pad_mode="replicate",
                                       return_complex=True),
}


def _args(kwargs, lib, device="cpu"):
    return {k: (lib.tensor(v, device=device) if lib is tp and isinstance(v, np.ndarray) else
                lib.from_numpy(v) if isinstance(v, np.ndarray) else v) for k, v in kwargs.items()}


def _numpy_stft(x, n_fft, hop, window):
    """Centered, reflect-padded frames times the window, rfft'd: (freq, frames)."""
    padded = np.pad(x, n_fft // 2, mode="reflect")
    count = 1 + (len(padded) - n_fft) // hop
    frames = np.stack([padded[i * hop:i * hop + n_fft] * window for i in range(count)])
    return np.fft.rfft(frames, axis=-1).T


def test_stft_matches_numpys_framing(device):
    window = np.hanning(16)
    got = tp.stft(tp.tensor(SIGNAL, device=device), 16, hop_length=4, window=tp.tensor(window, device=device),
                  return_complex=True)
    np.testing.assert_allclose(got.cpu().numpy(), _numpy_stft(SIGNAL, 16, 4, window), rtol=1e-12, atol=1e-12)


@needs_torch
@pytest.mark.parametrize("name", sorted(CASES))
def test_stft_matches_torch(name, device):
    kwargs = CASES[name]
    for signal in (SIGNAL, BATCH):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = torch.stft(torch.from_numpy(signal), **_args(kwargs, torch)).numpy()
            got = tp.tensor(signal, device=device).stft(**_args(kwargs, tp, device))
        assert got.shape == want.shape
        np.testing.assert_allclose(got.cpu().numpy(), want, rtol=1e-12, atol=1e-12)


@needs_torch
@pytest.mark.parametrize("window,hop,length", [(np.hanning(16), 4, None), (np.ones(16), 5, 70), (np.ones(16), 4, 75),
                                               (WINDOW10, 2, None)])
def test_istft_inverts_and_matches_torch(window, hop, length, device):
    win_length = len(window)
    spec = torch.stft(torch.from_numpy(BATCH), 16, hop_length=hop, win_length=win_length,
                      window=torch.from_numpy(window), return_complex=True)
    want = torch.istft(spec, 16, hop_length=hop, win_length=win_length, window=torch.from_numpy(window),
                       length=length).numpy()
    got = tp.istft(tp.tensor(spec.numpy(), device=device), 16, hop_length=hop, win_length=win_length,
                   window=tp.tensor(window, device=device), length=length).cpu().numpy()
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    n = min(70, got.shape[-1])
    np.testing.assert_allclose(got[:, :n], BATCH[:, :n], atol=1e-12)  # the round trip gives the signal back


def test_errors_are_pytorchs():
    """PyTorch 2.13's exceptions and messages (read from its runs), before any transform."""
    x = tp.tensor(SIGNAL)
    with pytest.raises(RuntimeError, match="stft requires the return_complex parameter be given for real inputs"):
        tp.stft(x, 16)
    with pytest.raises(RuntimeError, match="expected a 1D or 2D tensor"):
        tp.stft(tp.ones(2, 3, 50), 16, return_complex=True)
    with pytest.raises(RuntimeError, match="expected 0 < win_length <= n_fft"):
        tp.stft(x, 16, win_length=20, return_complex=True)
    with pytest.raises(RuntimeError, match="expected a 1D window tensor of size equal to win_length"):
        tp.stft(x, 16, window=tp.ones(8, dtype=tp.float64), return_complex=True)
    with pytest.raises(RuntimeError, match="Padding size should be less than the corresponding input dimension"):
        tp.stft(tp.ones(5), 16, window=tp.ones(16), return_complex=True)
    with pytest.raises(RuntimeError, match="window overlap add min"):
        uncentered = tp.stft(x, 16, window=tp.hann_window(16, dtype=tp.float64), center=False, return_complex=True)
        tp.istft(uncentered, 16, window=tp.hann_window(16, dtype=tp.float64), center=False)
    with pytest.raises(RuntimeError, match="istft requires a complex-valued input tensor"):
        tp.istft(tp.ones(9, 5), 16)
    with pytest.warns(UserWarning, match="return_complex=False is deprecated"):
        tp.fft._stft._warned.discard("return_complex")
        tp.stft(x, 16, window=tp.ones(16, dtype=tp.float64), return_complex=False)
    with pytest.warns(UserWarning, match="A window was not provided"):  # once per process, as PyTorch's
        tp.fft._stft._warned.discard("stft_window")
        tp.stft(x, 16, return_complex=True)


def test_gradients_through_stft_and_istft():
    window = tp.hann_window(8, dtype=tp.float64)
    signal = tp.tensor(rng.standard_normal(24), requires_grad=True)
    assert tp.autograd.gradcheck(lambda s: tp.view_as_real(tp.stft(s, 8, hop_length=2, window=window,
                                                                   return_complex=True)), (signal,))
    assert tp.autograd.gradcheck(lambda s: tp.istft(tp.stft(s, 8, hop_length=2, window=window, return_complex=True),
                                                    8, hop_length=2, window=window, length=24), (signal,))
