"""``tp.stft`` and ``tp.istft`` (and the Tensor methods), with PyTorch 2.13's arguments, checks
and results, as composites over tp.fft, ``unfold`` and ``fold``: every device that has those
has them, and they differentiate through them.

stft: the signal padded by ``n_fft // 2`` at both ends (``center``, ``pad_mode``), cut into
frames of ``n_fft`` every ``hop_length`` samples, each multiplied by the window (``win_length``
long, zero-padded to ``n_fft`` around its centre), then transformed (``rfft`` for a one-sided
real result): ``(n_fft // 2 + 1, n_frames)`` per signal. istft: the inverse transform of each
frame times the window, overlapped and added, divided by the overlapped squared window (which
must stay above 1e-11: PyTorch's "window overlap add min" error), and trimmed.
"""
from __future__ import annotations

import warnings

from ..frontend.complex import complex as make_complex, view_as_real
from ..frontend.tensor import Tensor

__all__ = ["stft", "istft"]

_warned: set[str] = set()


def _warn_once(key: str, message: str) -> None:
    """PyTorch gives these warnings once per process."""
    if key not in _warned:
        _warned.add(key)
        warnings.warn(message, UserWarning, stacklevel=3)


def _describe(op: str, input, n_fft, hop_length, win_length, window, extra: str) -> str:
    shape = list(input.shape)
    window_text = "None" if window is None else f"tensor{list(window.shape)}"
    return (f"{op}(tensor{shape} {input.dtype.name}, n_fft={n_fft}, hop_length={hop_length}, "
            f"win_length={win_length}, window={window_text}{extra})")


def _padded_window(window, win_length: int, n_fft: int, like: Tensor):
    """The window (ones when None) zero-padded to n_fft around its centre, as PyTorch pads it."""
    from ..frontend.factories import ones
    from ..nn.functional import pad

    if window is None:
        real_dtype = like.dtype._part if like.dtype._part is not None else like.dtype
        window = ones(win_length, dtype=real_dtype, device=like.device)
    left = (n_fft - win_length) // 2
    return window if win_length == n_fft else pad(window, (left, n_fft - win_length - left))


def _check_lengths(op: str, describe, n_fft, hop_length, win_length, window) -> None:
    if n_fft <= 0:
        raise RuntimeError(f"{describe}: expected 0 < n_fft, but got n_fft={n_fft}")
    if hop_length <= 0:
        raise RuntimeError(f"{describe}: expected hop_length > 0, but got hop_length={hop_length}")
    if not 0 < win_length <= n_fft:
        raise RuntimeError(f"{describe}: expected 0 < win_length <= n_fft, but got win_length={win_length}")
    if window is not None and (window.ndim != 1 or window.shape[0] != win_length):
        raise RuntimeError(f"{describe}: expected a 1D window tensor of size equal to win_length={win_length}, "
                           f"but got window with size {list(window.shape)}")


def stft(input: Tensor, n_fft: int, hop_length: int | None = None, win_length: int | None = None, window=None,
         center: bool = True, pad_mode: str = "reflect", normalized: bool = False, onesided: bool | None = None,
         return_complex: bool | None = None, align_to_window: bool | None = None) -> Tensor:
    """The short-time Fourier transform of a 1-D signal or a (batch, time) batch of them."""
    from . import fft, rfft
    from ..nn.functional import pad

    hop_length = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    describe = _describe("stft", input, n_fft, hop_length, win_length, window,
                         f", normalized={int(bool(normalized))}, onesided={onesided}, return_complex={return_complex}")
    complex_input = input.is_complex() or (window is not None and window.is_complex())
    if return_complex is None:
        if not complex_input:
            raise RuntimeError("stft requires the return_complex parameter be given for real inputs, and will further "
                               "require that return_complex=True in a future PyTorch release.")
        return_complex = True
    if not return_complex:
        if complex_input:
            raise RuntimeError("stft requires the return_complex parameter be given for complex inputs "
                               "(return_complex=False is not supported for them)")
        _warn_once("return_complex", "stft with return_complex=False is deprecated. In a future pytorch release, stft "
                   "will return complex tensors for all inputs, and return_complex=False will raise an error.\nNote: "
                   "you can still call torch.view_as_real on the complex output to recover the old return format.")
    if input.ndim not in (1, 2):
        raise RuntimeError(f"{describe}: expected a 1D or 2D tensor")
    if not (input.dtype.is_floating_point or input.is_complex()):
        raise RuntimeError(f"{describe}: expected a tensor of floating point or complex values")
    _check_lengths("stft", describe, n_fft, hop_length, win_length, window)
    if align_to_window is not None and center:
        raise RuntimeError(f"{describe}: stft align_to_window should only be set when center = false")
    if window is None:
        _warn_once("stft_window", "A window was not provided. A rectangular window will be applied,which is known to "
                   "cause spectral leakage. Other windows such as torch.hann_window or torch.hamming_window are "
                   "recommended to reduce spectral leakage.To suppress this warning and use a rectangular window, "
                   "explicitly set `window=torch.ones(n_fft, device=<device>)`.")
    signals = input if input.ndim == 2 else input.unsqueeze(0)
    if center:
        half = n_fft // 2
        if pad_mode != "constant" and signals.shape[-1] <= half:
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, but "
                               f"got: padding ({half}, {half}) at dimension 2 of input {[1, *signals.shape]}")
        signals = pad(signals.unsqueeze(1), (half, half), mode=pad_mode).squeeze(1)
    elif align_to_window:
        offset = (n_fft - win_length) // 2
        signals = signals[..., offset:]
    if signals.shape[-1] < n_fft:
        raise RuntimeError(f"{describe}: expected 0 < n_fft <= {signals.shape[-1]}, but got n_fft={n_fft}")
    frames = signals.unfold(-1, n_fft, hop_length)  # (batch, frames, n_fft)
    if window is not None or win_length != n_fft:
        frames = frames * _padded_window(window, win_length, n_fft, input)
    one_sided = (not complex_input) if onesided is None else onesided
    if one_sided and complex_input:
        raise RuntimeError(f"{describe}: Cannot have onesided output if window or input is complex")
    spectrum = rfft(frames, dim=-1) if one_sided else fft(frames, dim=-1)
    if normalized:
        spectrum = spectrum * (n_fft ** -0.5)
    spectrum = spectrum.transpose(-1, -2)  # (batch, freq, frames)
    if input.ndim == 1:
        spectrum = spectrum.squeeze(0)
    return spectrum if return_complex else view_as_real(spectrum.contiguous())


def _overlap_add(frames: Tensor, hop_length: int, length: int) -> Tensor:
    """frames (batch, n_frames, n_fft) added at every hop_length: (batch, length) real."""
    from ..nn.functional import fold

    n_fft = frames.shape[-1]
    summed = fold(frames.transpose(-1, -2), output_size=(1, length), kernel_size=(1, n_fft), stride=(1, hop_length))
    return summed.reshape(frames.shape[0], length)


def istft(input: Tensor, n_fft: int, hop_length: int | None = None, win_length: int | None = None, window=None,
          center: bool = True, normalized: bool = False, onesided: bool | None = None, length: int | None = None,
          return_complex: bool = False) -> Tensor:
    """The inverse of :func:`stft`: signals from a (freq, frames) or (batch, freq, frames) spectrum."""
    from . import ifft, irfft
    from ..frontend.factories import zeros

    hop_length = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    describe = _describe("istft", input, n_fft, hop_length, win_length, window,
                         f", center={int(bool(center))}, normalized={int(bool(normalized))}, onesided={onesided}, "
                         f"length={length}, return_complex={int(bool(return_complex))}")
    if not input.is_complex():
        raise RuntimeError("istft requires a complex-valued input tensor matching the output from stft with "
                           "return_complex=True.")
    if input.ndim not in (2, 3):
        raise RuntimeError(f"{describe}: expected a tensor with 2 or 3 dimensions of complex dtype, but got "
                           f"{input.ndim}")
    _check_lengths("istft", describe, n_fft, hop_length, win_length, window)
    if window is None:
        _warn_once("istft_window", "A window was not provided. A rectangular window will be applied.Please provide the "
                   "same window used by stft to make the inversion lossless.To suppress this warning and use a "
                   "rectangular window, explicitly set `window=torch.ones(n_fft, device=<device>)`.")
    spectra = input if input.ndim == 3 else input.unsqueeze(0)
    fft_size, n_frames = spectra.shape[-2], spectra.shape[-1]
    one_sided = (fft_size != n_fft) if onesided is None else onesided
    if one_sided and fft_size != n_fft // 2 + 1:
        raise RuntimeError(f"{describe}: expected the frequency dimension (3rd to the last) of the input tensor to "
                           f"match n_fft / 2 + 1 when onesided=True, but got {fft_size}")
    if not one_sided and fft_size != n_fft:
        raise RuntimeError(f"{describe}: expected the frequency dimension (3rd to the last) of the input tensor to "
                           f"match n_fft when onesided=False, but got {fft_size}")
    if n_frames < 1:
        raise RuntimeError(f"{describe}: expected at least one frame, but got {n_frames}")
    window_full = _padded_window(window, win_length, n_fft, input)
    if window_full.is_complex() and not return_complex:
        raise RuntimeError(f"{describe}: Complex windows are incompatible with return_complex=False")
    spectra = spectra.transpose(-1, -2)  # (batch, frames, freq)
    if normalized:
        spectra = spectra * (n_fft ** 0.5)
    if return_complex:
        if one_sided:
            raise RuntimeError(f"{describe}: cannot have onesided output if window or input is complex")
        frames = ifft(spectra, n=n_fft, dim=-1)
    else:
        if not one_sided:
            spectra = spectra[..., : n_fft // 2 + 1]
        frames = irfft(spectra, n=n_fft, dim=-1)
    frames = frames * window_full
    total = n_fft + hop_length * (n_frames - 1)
    if frames.is_complex():
        parts = view_as_real(frames)
        signal = make_complex(_overlap_add(parts[..., 0], hop_length, total),
                              _overlap_add(parts[..., 1], hop_length, total))
    else:
        signal = _overlap_add(frames, hop_length, total)
    squares = window_full.abs() ** 2 if window_full.is_complex() else window_full * window_full
    envelope = _overlap_add(squares.expand(1, n_frames, n_fft), hop_length, total)[0]
    start = n_fft // 2 if center else 0
    end = total - n_fft // 2 if center else total
    if length is not None:
        end = min(start + length, total)
    signal, envelope = signal[..., start:end], envelope[start:end]
    if envelope.numel() and float(envelope.abs().min().item()) < 1e-11:
        raise RuntimeError(f"{describe} window overlap add min: 1")
    signal = signal / envelope
    if length is not None and signal.shape[-1] < length:
        from ..frontend.ops.joining import cat

        signal = cat([signal, zeros(signal.shape[0], length - signal.shape[-1], dtype=signal.dtype,
                                    device=signal.device)], dim=-1)
    return signal.squeeze(0) if input.ndim == 2 else signal

