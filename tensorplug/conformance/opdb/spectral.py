"""tp.fft: the transforms built on the fft_c2c, fft_r2c and fft_c2r ops, which a backend may
override with an FFT library of its own (docs/backend-contract.md). The database compares real
values, so complex inputs are given as (real, imag) pairs (a trailing dim of 2, read with
``view_as_complex``) and complex results are read back with ``view_as_real``; the gradient checks
then differentiate with respect to the pairs, which is PyTorch's complex gradient convention.
"""
from __future__ import annotations

import numpy as np

from ._core import Arg, ErrorCase, OpEntry, Sample

_DTYPES = ("float32", "float64")
_TOL = {"float32": (1e-4, 1e-4), "float64": (1e-10, 1e-10)}


def _tp():
    import tensorplug

    return tensorplug


def _complex_in(tp, pairs):
    return tp.view_as_complex(pairs.contiguous())


def _pairs_out(tp, z):
    return tp.view_as_real(z)


def _np_complex(pairs):
    return pairs[..., 0] + 1j * pairs[..., 1]


def _np_pairs(z):
    return np.stack([z.real, z.imag], -1)


def _c2c_entry(name, numpy_func):
    def call(tp, x, **kwargs):
        return _pairs_out(tp, getattr(tp.fft, name)(_complex_in(tp, x), **kwargs))

    def ref(x, **kwargs):
        return _np_pairs(numpy_func(_np_complex(x), **_numpy_kwargs(kwargs)))

    def samples(dtype):
        yield Sample((Arg((8, 2)),), name="one signal")
        yield Sample((Arg((3, 5, 2)),), {"dim": 0, "norm": "ortho"}, name="dim=0, ortho")
        yield Sample((Arg((4, 6, 2), layout="transposed"),), {"n": 9, "norm": "forward"}, name="transposed, padded, forward")
        yield Sample((Arg((2, 7, 2)),), {"n": 4}, name="trimmed")
        yield Sample((Arg((64, 128, 2)),), name="large", large=True)

    return OpEntry(f"fft.{name}", "spectral", ref, samples, dtypes=_DTYPES, call=call, tolerances=_TOL,
                   grad_samples=lambda: iter([Sample((Arg((2, 4, 2)),), {"n": 5}, name="padded")]))


def _numpy_kwargs(kwargs):
    out = dict(kwargs)
    if "dim" in out:
        dim = out.pop("dim")
        out["axes" if isinstance(dim, tuple) else "axis"] = dim
    return out


def _rfft_call(tp, x, **kwargs):
    return _pairs_out(tp, tp.fft.rfft(x, **kwargs))


def _rfft_ref(x, **kwargs):
    return _np_pairs(np.fft.rfft(x, **_numpy_kwargs(kwargs)))


def _rfft_samples(dtype):
    yield Sample((Arg((8,)),), name="even length")
    yield Sample((Arg((3, 7)),), {"norm": "ortho"}, name="odd length, ortho")
    yield Sample((Arg((5, 4), layout="strided"),), {"dim": 0, "n": 6}, name="strided, dim=0, padded")
    yield Sample((Arg((64, 256)),), name="large", large=True)


def _irfft_call(tp, x, **kwargs):
    return tp.fft.irfft(_complex_in(tp, x), **kwargs)


def _irfft_ref(x, **kwargs):
    return np.fft.irfft(_np_complex(x), **_numpy_kwargs(kwargs))


def _irfft_samples(dtype):
    yield Sample((Arg((5, 2)),), name="default length")
    yield Sample((Arg((3, 4, 2)),), {"n": 7, "norm": "forward"}, name="odd length, forward")
    yield Sample((Arg((4, 3, 2)),), {"dim": 0, "norm": "ortho"}, name="dim=0, ortho")


def _rfftn_call(tp, x, **kwargs):
    return _pairs_out(tp, tp.fft.rfftn(x, **kwargs))


def _rfftn_ref(x, s=None, dim=None, norm=None):
    axes = dim if dim is not None else tuple(range(x.ndim))
    return _np_pairs(np.fft.rfftn(x, s=s, axes=axes, norm=norm))


def _irfftn_call(tp, x, **kwargs):
    return tp.fft.irfftn(_complex_in(tp, x), **kwargs)


def _irfftn_ref(x, s=None, dim=None, norm=None):
    z = _np_complex(x)
    axes = dim if dim is not None else tuple(range(z.ndim))
    return np.fft.irfftn(z, s=s, axes=axes, norm=norm)


def _stft_call(tp, x, window, **kwargs):
    return _pairs_out(tp, tp.stft(x, window=window, return_complex=True, **kwargs))


def _stft_ref(x, window, n_fft, hop_length):
    """Reflect-padded frames times the window, rfft'd, as (freq, frames) pairs; x 1-D or (B, T)."""
    signals = x.reshape(-1, x.shape[-1])
    spectra = []
    for signal in signals:
        padded = np.pad(signal, n_fft // 2, mode="reflect")
        count = 1 + (len(padded) - n_fft) // hop_length
        frames = np.stack([padded[i * hop_length:i * hop_length + n_fft] * window for i in range(count)])
        spectra.append(np.fft.rfft(frames, axis=-1).T)
    result = np.stack(spectra).reshape(x.shape[:-1] + spectra[0].shape)
    return _np_pairs(result)


def _stft_samples(dtype):
    yield Sample((Arg((40,)), Arg((8,), low=0.5, high=1.0, grad=False)), {"n_fft": 8, "hop_length": 2}, name="one signal")
    yield Sample((Arg((3, 30)), Arg((16,), low=0.5, high=1.0, grad=False)), {"n_fft": 16, "hop_length": 5},
                 name="batch, hop 5")


def _istft_call(tp, spectrum, window, **kwargs):
    return tp.istft(_complex_in(tp, spectrum), window=window, **kwargs)


def _istft_ref(spectrum, window, n_fft, hop_length, length=None):
    """Each frame's inverse rfft times the window, overlap-added, divided by the summed squared
    window, and the n_fft // 2 reflect padding of stft(center=True) cut off; spectrum (freq,
    frames) pairs, 1-D or batched."""
    z = _np_complex(spectrum)
    batch = z.reshape((-1,) + z.shape[-2:])
    frames = batch.shape[-1]
    total = n_fft + hop_length * (frames - 1)
    envelope = np.zeros(total)
    for i in range(frames):
        envelope[i * hop_length:i * hop_length + n_fft] += window ** 2
    signals = []
    for spectra in batch:
        signal = np.zeros(total)
        for i in range(frames):
            signal[i * hop_length:i * hop_length + n_fft] += np.fft.irfft(spectra[:, i], n=n_fft) * window
        start = n_fft // 2
        end = total - n_fft // 2 if length is None else start + length
        signals.append((signal / envelope)[start:end])
    return np.stack(signals).reshape(z.shape[:-2] + (-1,))


def _istft_samples(dtype):
    yield Sample((Arg((5, 9, 2)), Arg((8,), low=0.5, high=1.0, grad=False)), {"n_fft": 8, "hop_length": 2},
                 name="one signal")
    yield Sample((Arg((2, 9, 7, 2)), Arg((16,), low=0.5, high=1.0, grad=False)),
                 {"n_fft": 16, "hop_length": 4, "length": 20}, name="batch, hop 4, length")


def _bad_norm(device):
    tp = _tp()
    return tp.fft.fft(tp.ones(4, device=device), norm="half")


ENTRIES = [
    OpEntry("stft", "spectral", _stft_ref, _stft_samples, dtypes=_DTYPES, call=_stft_call, tolerances=_TOL,
            grad_samples=lambda: iter([Sample((Arg((20,)), Arg((8,), low=0.5, high=1.0, grad=False)),
                                              {"n_fft": 8, "hop_length": 4}, name="one signal")])),
    OpEntry("istft", "spectral", _istft_ref, _istft_samples, dtypes=_DTYPES, call=_istft_call, tolerances=_TOL,
            grad_samples=lambda: iter([Sample((Arg((5, 6, 2)), Arg((8,), low=0.5, high=1.0, grad=False)),
                                              {"n_fft": 8, "hop_length": 4}, name="one signal")])),
    _c2c_entry("fft", np.fft.fft),
    _c2c_entry("ifft", np.fft.ifft),
    OpEntry("fft.rfft", "spectral", _rfft_ref, _rfft_samples, dtypes=_DTYPES, call=_rfft_call, tolerances=_TOL,
            grad_samples=lambda: iter([Sample((Arg((2, 5)),), name="odd length")]),
            errors=(ErrorCase(_bad_norm, ValueError, r"Invalid normalization mode: 'half'", "bad norm"),)),
    OpEntry("fft.irfft", "spectral", _irfft_ref, _irfft_samples, dtypes=_DTYPES, call=_irfft_call, tolerances=_TOL,
            grad_samples=lambda: iter([Sample((Arg((2, 4, 2)),), {"n": 7}, name="odd length")])),
    OpEntry("fft.rfftn", "spectral", _rfftn_ref,
            lambda dtype: iter([Sample((Arg((3, 4)),), name="2-D"),
                                Sample((Arg((2, 3, 4)),), {"s": (4, 5), "dim": (0, 2)}, name="s and dim")]),
            dtypes=_DTYPES, call=_rfftn_call, tolerances=_TOL,
            grad_samples=lambda: iter([Sample((Arg((3, 4)),), name="2-D")])),
    OpEntry("fft.irfftn", "spectral", _irfftn_ref,
            lambda dtype: iter([Sample((Arg((3, 3, 2)),), name="2-D"),
                                Sample((Arg((2, 3, 4, 2)),), {"s": (4, 5), "dim": (0, 2)}, name="s and dim")]),
            dtypes=_DTYPES, call=_irfftn_call, tolerances=_TOL,
            grad_samples=lambda: iter([Sample((Arg((2, 3, 2)),), {"s": (3, 5)}, name="odd last size")])),
]
