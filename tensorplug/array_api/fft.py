"""The standard's ``fft`` extension, over ``tp.fft``.

The standard's signatures differ from PyTorch's in their keywords (``axis``/``axes`` for ``dim``,
positional-only ``x``) and in three rules, which this module applies before calling ``tp.fft``:

* ``n``/``s`` must be positive; an entry of ``s`` that is -1 keeps that axis's length
  (``irfftn``'s last one is ``2 * (m - 1)``, as for ``n=None``);
* ``s`` without ``axes`` transforms the last ``len(s)`` axes;
* the complex transforms (``fft``, ``ifft``, ``fftn``, ``ifftn``, ``hfft``) expect complex input
  and ``rfft``/``rfftn``/``ihfft`` real input (the standard's "should"); a real array given to a
  complex transform is taken as complex with zero imaginary part (tp's rule, which NumPy shares).

The result dtypes are the standard's: complex transforms keep the complex dtype, real-input ones
give the complex dtype of matching precision, ``irfft``/``irfftn``/``hfft`` the real one.
Everything runs on the array's device and is differentiable (docs/complex.md).
"""
from __future__ import annotations

import operator

from .. import fft as _fft
from ..frontend.device import canonical_device as _canonical_device
from ..frontend.tensor import Tensor
from . import _dtypes as d
from ._helpers import check_array, normalize_axis

__all__ = [
    "fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft", "fftfreq", "rfftfreq",
    "fftshift", "ifftshift",
]

_NORMS = ("backward", "ortho", "forward")


def _check(name: str, x, norm: str, kind: str | None) -> Tensor:
    check_array(x)
    if norm not in _NORMS:
        raise ValueError(f"{name}: norm must be one of {_NORMS}, got {norm!r}")
    if kind == "real" and x.dtype.category != 2:
        raise TypeError(f"{name} needs a real floating-point array, got {x.dtype!r}")
    if kind == "complex" and x.dtype.category < 2:
        raise TypeError(f"{name} needs a complex (or real) floating-point array, got {x.dtype!r}")
    return x


def _length(name: str, n) -> int | None:
    if n is None:
        return None
    n = operator.index(n)
    if n < 1:
        raise ValueError(f"{name}: n must be a positive integer, got {n}")
    return n


def _axes_and_sizes(name: str, x: Tensor, s, axes, last_from_input: bool = False):
    """The transformed axes and their output lengths, the standard's way (module docstring)."""
    if axes is None:
        axes = tuple(range(x.ndim)) if s is None else tuple(range(x.ndim - len(s), x.ndim))
    axes = tuple(normalize_axis(a, x.ndim) for a in axes)
    if len(set(axes)) != len(axes):
        raise ValueError(f"{name}: repeated axis in {axes!r}")
    if s is None:
        return axes, None
    if len(s) != len(axes):
        raise ValueError(f"{name}: s and axes must have the same length, got {s!r} and {axes!r}")
    sizes = []
    for i, (n, a) in enumerate(zip(s, axes)):
        n = operator.index(n)
        if n == -1:
            # the whole axis; irfftn's last output length then follows from the input's m
            n = 2 * (x.shape[a] - 1) if last_from_input and i == len(axes) - 1 else x.shape[a]
        elif n < 1:
            raise ValueError(f"{name}: every entry of s must be positive or -1, got {s!r}")
        sizes.append(n)
    return axes, sizes


def fft(x: Tensor, /, *, n=None, axis: int = -1, norm: str = "backward") -> Tensor:
    """The one-dimensional discrete Fourier transform along ``axis``."""
    return _fft.fft(_check("fft", x, norm, "complex"), _length("fft", n), axis, norm)


def ifft(x: Tensor, /, *, n=None, axis: int = -1, norm: str = "backward") -> Tensor:
    """The one-dimensional inverse discrete Fourier transform along ``axis``."""
    return _fft.ifft(_check("ifft", x, norm, "complex"), _length("ifft", n), axis, norm)


def fftn(x: Tensor, /, *, s=None, axes=None, norm: str = "backward") -> Tensor:
    """The n-dimensional discrete Fourier transform over ``axes`` (all by default)."""
    axes, sizes = _axes_and_sizes("fftn", _check("fftn", x, norm, "complex"), s, axes)
    return _fft.fftn(x, sizes, axes, norm)


def ifftn(x: Tensor, /, *, s=None, axes=None, norm: str = "backward") -> Tensor:
    """The n-dimensional inverse discrete Fourier transform over ``axes`` (all by default)."""
    axes, sizes = _axes_and_sizes("ifftn", _check("ifftn", x, norm, "complex"), s, axes)
    return _fft.ifftn(x, sizes, axes, norm)


def rfft(x: Tensor, /, *, n=None, axis: int = -1, norm: str = "backward") -> Tensor:
    """The transform of a real signal: the ``n // 2 + 1`` non-negative frequency terms."""
    return _fft.rfft(_check("rfft", x, norm, "real"), _length("rfft", n), axis, norm)


def irfft(x: Tensor, /, *, n=None, axis: int = -1, norm: str = "backward") -> Tensor:
    """The inverse of :func:`rfft`: a real signal of length ``n`` (``2 * (m - 1)`` by default)."""
    return _fft.irfft(_check("irfft", x, norm, "complex"), _length("irfft", n), axis, norm)


def rfftn(x: Tensor, /, *, s=None, axes=None, norm: str = "backward") -> Tensor:
    """The n-dimensional transform of a real signal (the last axis halved, as :func:`rfft`)."""
    axes, sizes = _axes_and_sizes("rfftn", _check("rfftn", x, norm, "real"), s, axes)
    return _fft.rfftn(x, sizes, axes, norm)


def irfftn(x: Tensor, /, *, s=None, axes=None, norm: str = "backward") -> Tensor:
    """The inverse of :func:`rfftn`."""
    axes, sizes = _axes_and_sizes("irfftn", _check("irfftn", x, norm, "complex"), s, axes, last_from_input=True)
    return _fft.irfftn(x, sizes, axes, norm)


def hfft(x: Tensor, /, *, n=None, axis: int = -1, norm: str = "backward") -> Tensor:
    """The transform of a signal with Hermitian symmetry (given by its first half): a real result
    of length ``n`` (``2 * (m - 1)`` by default)."""
    return _fft.hfft(_check("hfft", x, norm, "complex"), _length("hfft", n), axis, norm)


def ihfft(x: Tensor, /, *, n=None, axis: int = -1, norm: str = "backward") -> Tensor:
    """The inverse of :func:`hfft` for a real signal."""
    return _fft.ihfft(_check("ihfft", x, norm, "real"), _length("ihfft", n), axis, norm)


def _frequency_dtype(name: str, dtype):
    if dtype is None:
        return d.default_float()
    d.check_dtype(dtype)
    if dtype.category != 2:
        raise TypeError(f"{name}: dtype must be a real floating-point dtype, got {dtype!r}")
    return dtype


def fftfreq(n: int, /, *, d: float = 1.0, dtype=None, device=None) -> Tensor:
    """The sample frequencies of an ``n``-point transform with sample spacing ``d``."""
    dev = None if device is None else _canonical_device(device)
    return _fft.fftfreq(_length("fftfreq", n), d, dtype=_frequency_dtype("fftfreq", dtype), device=dev)


def rfftfreq(n: int, /, *, d: float = 1.0, dtype=None, device=None) -> Tensor:
    """The sample frequencies of :func:`rfft` for ``n`` points: ``n // 2 + 1`` of them."""
    dev = None if device is None else _canonical_device(device)
    return _fft.rfftfreq(_length("rfftfreq", n), d, dtype=_frequency_dtype("rfftfreq", dtype), device=dev)


def fftshift(x: Tensor, /, *, axes=None) -> Tensor:
    """``x`` with the zero-frequency term moved to the centre of ``axes`` (all by default)."""
    return _fft.fftshift(check_array(x), axes)


def ifftshift(x: Tensor, /, *, axes=None) -> Tensor:
    """The inverse of :func:`fftshift`."""
    return _fft.ifftshift(check_array(x), axes)
