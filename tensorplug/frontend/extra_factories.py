"""PyTorch's less common factories: ``range`` (deprecated), ``scalar_tensor``, ``empty_strided``
and the signal windows (``hann_window``, ``hamming_window``, ``blackman_window``,
``bartlett_window``, ``kaiser_window``).

Windows are computed in float64 on the host (a few values, once) and copied to the device in
the requested dtype, so they are the same on every backend.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from .tensor import resolve_device
from .factories import _finish, _factory_dtype, empty
from .factory_options import check_layout
from .ops.copying import copy_from_numpy
from .shapes import check_shape
from .tensor import Tensor
from .ops.out_rehearsal import rehearse_out

__all__ = [
    "range", "scalar_tensor", "empty_strided", "hann_window", "hamming_window", "blackman_window",
    "bartlett_window", "kaiser_window",
]

_builtin_range = range


def range(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None, requires_grad=False) -> Tensor:
    """Values from ``start`` to ``end`` *inclusive* in steps of ``step``, in the default float
    dtype; deprecated in PyTorch (it warns), use ``arange``.

    >>> import warnings; warnings.simplefilter("ignore")
    >>> tp.range(0, 2).tolist()
    [0.0, 1.0, 2.0]
    """
    if out is not None:
        rehearse_out(range, locals())
    warnings.warn(
        "torch.range is deprecated and will be removed in a future release because its behavior is inconsistent with "
        "Python's range builtin. Instead, use torch.arange, which produces values in [start, end).",
        UserWarning, stacklevel=2)
    if end is None:
        raise TypeError('range() missing 1 required positional arguments: "end"')
    check_layout("range", layout)
    values = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    start, end, step = values
    if step == 0:
        raise RuntimeError("range(): step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError(f"upper bound and larger bound inconsistent with step sign (start={start}, end={end}, "
                           f"step={step})")
    count = int(math.floor((end - start) / step)) + 1
    dtype = _factory_dtype(dtype)
    host = start + np.arange(count, dtype=np.float64 if dtype.is_floating_point else np.int64) * step
    result = _finish(copy_from_numpy(host, dtype, resolve_device(device)), requires_grad)
    if out is not None:
        from .ops._common import write_out

        return write_out("range", out, result)
    return result


def scalar_tensor(s, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A 0-d tensor holding the number ``s``, in the default float dtype unless ``dtype`` says.

    >>> tp.scalar_tensor(3).dtype
    tensorplug.float32
    """
    if isinstance(s, Tensor):
        s = s.item()
    if not isinstance(s, (bool, int, float, complex, np.number, np.bool_)):
        raise TypeError(f"scalar_tensor(): argument 's' must be Number, not {type(s).__name__}")
    dtype = _factory_dtype(dtype)
    return _finish(copy_from_numpy(np.asarray(s), dtype, resolve_device(device)), requires_grad)


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False) -> Tensor:
    """An uninitialized tensor of shape ``size`` with the given element strides (over one
    allocation large enough for the furthest element).

    >>> tp.empty_strided((2, 3), (1, 2)).stride()
    (1, 2)
    """
    shape = check_shape("empty_strided", tuple(size))
    stride = tuple(int(s) for s in stride)
    if len(stride) != len(shape):
        raise RuntimeError(f"dimensionality of sizes ({len(shape)}) must match dimensionality of strides ({len(stride)})")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"empty_strided(): strides must be non-negative, got {list(stride)}")
    extent = 0 if 0 in shape else 1 + sum((n - 1) * s for n, s in zip(shape, stride))
    base = empty(extent, dtype=dtype, device=device)
    return _finish(base.as_strided(shape, stride), requires_grad)


# --- windows ------------------------------------------------------------------------------------
def _window(op: str, length, periodic: bool, dtype, device, requires_grad: bool, symmetric) -> Tensor:
    """``symmetric(n)``, the n-point symmetric window in float64, as a tensor; a periodic window
    of length L is the symmetric one of L + 1 points without its last."""
    if isinstance(length, bool) or not isinstance(length, int):
        raise TypeError(f"{op}(): argument 'window_length' must be int, not {type(length).__name__}")
    dtype = _factory_dtype(dtype)
    if not dtype.is_floating_point:
        raise RuntimeError(f"{op} expects floating point dtypes, got: {dtype.name}")
    if length < 0:
        raise RuntimeError(f"{op} requires non-negative window_length, got window_length={length}")
    if length <= 1:
        values = np.ones(length)
    else:
        values = symmetric(length + 1)[:-1] if periodic else symmetric(length)
    return _finish(copy_from_numpy(values, dtype, resolve_device(device)), requires_grad)


def _check_options(op: str, layout, pin_memory) -> None:
    """The windows' layout= and pin_memory=, checked as the other factories check them."""
    check_layout(op, layout)
    if not isinstance(pin_memory, bool):
        raise TypeError(f"{op}(): argument 'pin_memory' must be bool, not {type(pin_memory).__name__}")


def _cosine_sum(*coefficients):
    """The generalized cosine window sum_k (-1)^k a_k cos(2 pi k n / (N - 1))."""
    def symmetric(n: int) -> np.ndarray:
        phase = 2 * np.pi * np.arange(n) / (n - 1)
        return sum((-1) ** k * a * np.cos(k * phase) for k, a in enumerate(coefficients))

    return symmetric


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False,
                requires_grad=False) -> Tensor:
    """The Hann window ``0.5 - 0.5 cos(2 pi n / (N - 1))`` (periodic: N = length + 1)."""
    _check_options("hann_window", layout, pin_memory)
    return _window("hann_window", window_length, periodic, dtype, device, requires_grad, _cosine_sum(0.5, 0.5))


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None, device=None,
                   pin_memory=False, requires_grad=False) -> Tensor:
    """The Hamming window ``alpha - beta cos(2 pi n / (N - 1))``."""
    _check_options("hamming_window", layout, pin_memory)
    return _window("hamming_window", window_length, periodic, dtype, device, requires_grad, _cosine_sum(alpha, beta))


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False,
                    requires_grad=False) -> Tensor:
    """The Blackman window ``0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))``."""
    _check_options("blackman_window", layout, pin_memory)
    return _window("blackman_window", window_length, periodic, dtype, device, requires_grad,
                   _cosine_sum(0.42, 0.5, 0.08))


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False,
                    requires_grad=False) -> Tensor:
    """The triangular Bartlett window ``1 - |2n / (N - 1) - 1|``."""
    _check_options("bartlett_window", layout, pin_memory)
    def symmetric(n: int) -> np.ndarray:
        return 1 - np.abs(2 * np.arange(n) / (n - 1) - 1)

    return _window("bartlett_window", window_length, periodic, dtype, device, requires_grad, symmetric)


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None,
                  pin_memory=False, requires_grad=False) -> Tensor:
    """The Kaiser window ``I0(beta sqrt(1 - (2n / (N - 1) - 1)^2)) / I0(beta)``."""
    _check_options("kaiser_window", layout, pin_memory)
    def symmetric(n: int) -> np.ndarray:
        ratio = 2 * np.arange(n) / (n - 1) - 1
        return np.i0(beta * np.sqrt(np.clip(1 - ratio * ratio, 0, None))) / np.i0(beta)

    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad, symmetric)
