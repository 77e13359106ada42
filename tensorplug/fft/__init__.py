"""tp.fft: discrete Fourier transforms with PyTorch's names, arguments and results.

Every transform is one of three ops (``fft_c2c``, ``fft_r2c``, ``fft_c2r``, in
tensorplug.fft._ops) applied to ``view_as_real`` pairs, so they run on every device and are
differentiable; ``n``/``s`` trim or zero-pad the input first, with ordinary (differentiable) ops.
``norm`` is ``"backward"`` (the default: no scaling forward, 1/n inverse), ``"ortho"``
(1/sqrt(n) both ways) or ``"forward"`` (1/n forward, none inverse).

>>> tp.fft.fft(tp.tensor([1.0, 0.0, 0.0, 0.0])).tolist()
[(1+0j), (1+0j), (1+0j), (1+0j)]
"""
from __future__ import annotations

import operator
from collections.abc import Sequence

from ..frontend import dtypes as _dt
from ..frontend.autocast_hook import autocast_function
from ..frontend.complex import conj, view_as_complex, view_as_real
from ..frontend.ops._numpy_names import axis_as_dim
from ..frontend.shapes import normalize_dim
from ..frontend.tensor import Tensor
from ._ops import fft_c2c, fft_c2r, fft_r2c

__all__ = [
    "fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn",
    "irfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift", "hfft2", "ihfft2", "hfftn", "ihfftn",
]

_NORMS = (None, "backward", "ortho", "forward")


def _normalization(op: str, norm, forward: bool) -> int:
    """PyTorch's norm_from_string: 0 no scaling, 1 by 1/sqrt(n), 2 by 1/n."""
    if norm not in _NORMS:
        raise ValueError(f"{op}(): Invalid normalization mode: {norm!r} (expected 'backward', 'ortho' or 'forward')")
    if norm == "ortho":
        return 1
    if norm is None or norm == "backward":
        return 0 if forward else 2
    return 2 if forward else 0


def _check_input(op: str, input) -> None:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input._dtype in (_dt.float16, _dt.bfloat16):
        raise RuntimeError(f"{op}(): Unsupported dtype {input._dtype.name}: FFTs take float32, float64, complex64 "
                           f"and complex128 (integers and bool are converted to the default dtype)")


def _real_input(op: str, input: Tensor) -> Tensor:
    """``input`` as a floating tensor for the real-input transforms (rfft, ihfft)."""
    if input._dtype.is_complex:
        raise RuntimeError(f"{op}(): expects a real input tensor, but got {input._dtype.name}")
    return input if input._dtype.is_floating_point else input.to(_dt.get_default_dtype())


def _complex_input(input: Tensor) -> Tensor:
    """``input`` as a complex tensor (a real one gets a zero imaginary part)."""
    if input._dtype.is_complex:
        return input
    x = input if input._dtype.is_floating_point else input.to(_dt.get_default_dtype())
    return x.to(x._dtype.to_complex())


def _dims_and_sizes(op: str, input: Tensor, s, dim, default_all: bool = True) -> tuple[tuple, list]:
    """The transformed dims (non-negative) and the signal size along each (None: keep)."""
    ndim = input.ndim
    if s is not None:
        s = [operator.index(n) for n in ([s] if isinstance(s, int) else s)]
    if dim is None:
        if s is None:
            dims = tuple(range(ndim)) if default_all else tuple(range(max(ndim - 2, 0), ndim))
        else:
            if len(s) > ndim:
                raise RuntimeError(f"{op}(): Got shape with {len(s)} values but input tensor only has {ndim} "
                                   f"dimensions.")
            dims = tuple(range(ndim - len(s), ndim))
    else:
        dims = tuple(normalize_dim(op, d, ndim) for d in ([dim] if isinstance(dim, int) else dim))
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"{op}(): FFT dims must be unique, got {list(dims)}")
        if s is not None and len(s) != len(dims):
            raise RuntimeError(f"{op}(): When given, dim and shape arguments must have the same length (got s={s}, "
                               f"dim={list(dims)})")
    if not input._shape and dims:
        raise IndexError(f"{op}(): Dimension specified as {dims[0]} but tensor has no dimensions")
    sizes = [None] * len(dims) if s is None else [None if n == -1 else n for n in s]
    for n in sizes:
        if n is not None and n < 1:
            raise RuntimeError(f"{op}(): Invalid number of data points ({n}) specified")
    return dims, sizes


def _resize(x: Tensor, dims: tuple, sizes: list) -> Tensor:
    """``x`` trimmed or zero-padded to ``sizes`` along ``dims`` (None leaves a dim alone)."""
    import tensorplug as tp

    for d, n in zip(dims, sizes):
        if n is None or n == x._shape[d]:
            continue
        if n < x._shape[d]:
            x = x.narrow(d, 0, n)
        else:
            shape = list(x._shape)
            shape[d] = n - x._shape[d]
            x = tp.cat([x, tp.zeros(shape, dtype=x._dtype, device=x._device)], d)
    return x


@autocast_function("fft")
def _c2c(op: str, input, s, dim, norm, forward: bool, default_all: bool = True) -> Tensor:
    _check_input(op, input)
    dims, sizes = _dims_and_sizes(op, input, s, dim, default_all)
    normalization = _normalization(op, norm, forward)
    if not input._dtype.is_complex and forward:
        x = _real_input(op, input)  # a real signal: the full (two-sided) real-to-complex transform
        return view_as_complex(fft_r2c(_resize(x, dims, sizes), dims, normalization, False))
    pairs = _resize(view_as_real(_complex_input(input)), dims, sizes)
    return view_as_complex(fft_c2c(pairs, dims, normalization, forward))


@autocast_function("fft")
def _r2c(op: str, input, s, dim, norm, forward: bool, default_all: bool = True) -> Tensor:
    _check_input(op, input)
    x = _real_input(op, input)
    dims, sizes = _dims_and_sizes(op, x, s, dim, default_all)
    if not dims:
        raise RuntimeError(f"{op}(): must transform at least one axis")
    result = view_as_complex(fft_r2c(_resize(x, dims, sizes), dims, _normalization(op, norm, forward), True))
    return result if forward else conj(result)  # ihfft is the conjugate of the scaled rfft


@autocast_function("fft")
def _c2r(op: str, input, s, dim, norm, forward: bool, default_all: bool = True) -> Tensor:
    _check_input(op, input)
    dims, sizes = _dims_and_sizes(op, input, s, dim, default_all)
    if not dims:
        raise RuntimeError(f"{op}(): must transform at least one axis")
    z = _complex_input(input)
    last = sizes[-1] if sizes[-1] is not None else 2 * (z._shape[dims[-1]] - 1)
    if last < 1:
        raise RuntimeError(f"{op}(): Invalid number of data points ({last}) specified")
    sizes = sizes[:-1] + [last // 2 + 1]
    if forward:  # hfft: the Hermitian signal's forward transform is the inverse one of its conjugate
        z = conj(z)
    pairs = _resize(view_as_real(z), dims, sizes)
    return fft_c2r(pairs, dims, _normalization(op, norm, forward), last)


def _one_dim(n, dim):
    return (None if n is None else [n]), [dim]


def fft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, axis: int | None = None) -> Tensor:
    """The one-dimensional discrete Fourier transform of ``input`` along ``dim`` (a real input
    is taken as complex with zero imaginary part); ``n`` trims or zero-pads the signal first."""
    if axis is not None:
        dim = axis_as_dim("fft", dim, axis, -1)
    return _c2c("fft", input, *_one_dim(n, dim), norm, True)


def ifft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None,
         axis: int | None = None) -> Tensor:
    """The inverse of :func:`fft`."""
    if axis is not None:
        dim = axis_as_dim("ifft", dim, axis, -1)
    return _c2c("ifft", input, *_one_dim(n, dim), norm, False)


def fft2(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] = (-2, -1),
         norm: str | None = None, axis: int | Sequence[int] | None = None) -> Tensor:
    """The two-dimensional discrete Fourier transform (over the last two dims by default)."""
    if axis is not None:
        dim = axis_as_dim("fft2", dim, axis, (-2, -1))
    return _c2c("fft2", input, s, dim, norm, True)


def ifft2(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] = (-2, -1),
          norm: str | None = None, axis: int | Sequence[int] | None = None) -> Tensor:
    """The inverse of :func:`fft2`."""
    if axis is not None:
        dim = axis_as_dim("ifft2", dim, axis, (-2, -1))
    return _c2c("ifft2", input, s, dim, norm, False)


def fftn(input: Tensor, s: Sequence[int] | None = None, dim: int | Sequence[int] | None = None,
         norm: str | None = None, axis: int | Sequence[int] | None = None) -> Tensor:
    """The N-dimensional discrete Fourier transform over ``dim`` (every dim, or the last
    ``len(s)``, by default), each dim trimmed or zero-padded to ``s``."""
    if axis is not None:
        dim = axis_as_dim("fftn", dim, axis, None)
    return _c2c("fftn", input, s, dim, norm, True)


def ifftn(input: Tensor, s: Sequence[int] | None = None, dim: int | Sequence[int] | None = None,
          norm: str | None = None, axis: int | Sequence[int] | None = None) -> Tensor:
    """The inverse of :func:`fftn`."""
    if axis is not None:
        dim = axis_as_dim("ifftn", dim, axis, None)
    return _c2c("ifftn", input, s, dim, norm, False)


def rfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None,
         axis: int | None = None) -> Tensor:
    """The Fourier transform of real ``input``: the ``n // 2 + 1`` non-negative frequencies."""
    if axis is not None:
        dim = axis_as_dim("rfft", dim, axis, -1)
    return _r2c("rfft", input, *_one_dim(n, dim), norm, True)


def irfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None,
          axis: int | None = None) -> Tensor:
    """The inverse of :func:`rfft`: a real signal of length ``n`` (default ``2 * (m - 1)``)."""
    if axis is not None:
        dim = axis_as_dim("irfft", dim, axis, -1)
    return _c2r("irfft", input, *_one_dim(n, dim), norm, False)


def rfft2(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] = (-2, -1),
          norm: str | None = None, axis: int | Sequence[int] | None = None) -> Tensor:
    """:func:`rfftn` over the last two dims."""
    if axis is not None:
        dim = axis_as_dim("rfft2", dim, axis, (-2, -1))
    return _r2c("rfft2", input, s, dim, norm, True)


def irfft2(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] = (-2, -1),
           norm: str | None = None, axis: int | Sequence[int] | None = None) -> Tensor:
    """The inverse of :func:`rfft2`."""
    if axis is not None:
        dim = axis_as_dim("irfft2", dim, axis, (-2, -1))
    return _c2r("irfft2", input, s, dim, norm, False)


def rfftn(input: Tensor, s: Sequence[int] | None = None, dim: int | Sequence[int] | None = None,
          norm: str | None = None, axis: int | Sequence[int] | None = None) -> Tensor:
    """The N-dimensional transform of real ``input``, onesided in the last transformed dim."""
    if axis is not None:
        dim = axis_as_dim("rfftn", dim, axis, None)
    return _r2c("rfftn", input, s, dim, norm, True)


def irfftn(input: Tensor, s: Sequence[int] | None = None, dim: int | Sequence[int] | None = None,
           norm: str | None = None, axis: int | Sequence[int] | None = None) -> Tensor:
    """The inverse of :func:`rfftn`; the last transformed dim gets ``s[-1]`` (default
    ``2 * (m - 1)``) real entries."""
    if axis is not None:
        dim = axis_as_dim("irfftn", dim, axis, None)
    return _c2r("irfftn", input, s, dim, norm, False)


def hfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None,
         axis: int | None = None) -> Tensor:
    """The transform of a Hermitian-symmetric signal given by its first half: a real result of
    length ``n`` (default ``2 * (m - 1)``)."""
    if axis is not None:
        dim = axis_as_dim("hfft", dim, axis, -1)
    return _c2r("hfft", input, *_one_dim(n, dim), norm, True)


def ihfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None,
          axis: int | None = None) -> Tensor:
    """The inverse of :func:`hfft`: the onesided inverse transform of real ``input``."""
    if axis is not None:
        dim = axis_as_dim("ihfft", dim, axis, -1)
    return _r2c("ihfft", input, *_one_dim(n, dim), norm, False)


def hfft2(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] = (-2, -1),
          norm: str | None = None) -> Tensor:
    """:func:`hfftn` over the last two dims."""
    return _c2r("hfft2", input, s, dim, norm, True)


def ihfft2(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] = (-2, -1),
           norm: str | None = None) -> Tensor:
    """:func:`ihfftn` over the last two dims."""
    return _r2c("ihfft2", input, s, dim, norm, False)


def hfftn(input: Tensor, s: Sequence[int] | None = None, dim: int | Sequence[int] | None = None,
          norm: str | None = None) -> Tensor:
    """The N-dimensional transform of a Hermitian-symmetric signal given by its onesided half
    in the last transformed dim: a real result (that dim ``s[-1]`` long, default ``2 * (m - 1)``)."""
    return _c2r("hfftn", input, s, dim, norm, True)


def ihfftn(input: Tensor, s: Sequence[int] | None = None, dim: int | Sequence[int] | None = None,
           norm: str | None = None) -> Tensor:
    """The inverse of :func:`hfftn`: the onesided N-dimensional inverse transform of real input."""
    return _r2c("ihfftn", input, s, dim, norm, False)


def fftfreq(n: int, d: float = 1.0, *, dtype: _dt.dtype | None = None, device=None,
            requires_grad: bool = False) -> Tensor:
    """The sample frequencies of an ``n``-point FFT with sample spacing ``d``:
    ``[0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1] / (d * n)``."""
    import tensorplug as tp

    n = _check_count("fftfreq", n)
    positive = tp.arange((n - 1) // 2 + 1, dtype=_dt.int64, device=device)
    negative = tp.arange(-(n // 2), 0, dtype=_dt.int64, device=device)
    result = (tp.cat([positive, negative]).to(dtype or _dt.get_default_dtype())) / (d * n)
    return result.requires_grad_(True) if requires_grad else result


def rfftfreq(n: int, d: float = 1.0, *, dtype: _dt.dtype | None = None, device=None,
             requires_grad: bool = False) -> Tensor:
    """The sample frequencies of :func:`rfft` for ``n`` points: ``[0, 1, ..., n // 2] / (d * n)``."""
    import tensorplug as tp

    n = _check_count("rfftfreq", n)
    result = tp.arange(n // 2 + 1, dtype=dtype or _dt.get_default_dtype(), device=device) / (d * n)
    return result.requires_grad_(True) if requires_grad else result


def _check_count(op: str, n) -> int:
    n = operator.index(n)
    if n < 1:
        raise RuntimeError(f"{op}(): n must be positive, got {n}")
    return n


def _shift(op: str, input, dim, sign: int) -> Tensor:
    import tensorplug as tp

    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    dims = tuple(range(input.ndim)) if dim is None else tuple(
        normalize_dim(op, d, input.ndim) for d in ([dim] if isinstance(dim, int) else dim))
    if not dims:
        return input.clone()
    shifts = [sign * (input._shape[d] // 2) for d in dims]
    if input._dtype.is_complex:  # rolled as (real, imag) pairs: the pairs' dim is never rolled
        return view_as_complex(tp.roll(view_as_real(input), shifts, dims))
    return tp.roll(input, shifts, dims)


def fftshift(input: Tensor, dim: int | Sequence[int] | None = None, axis: int | Sequence[int] | None = None) -> Tensor:
    """``input`` with the zero frequency moved to the centre of ``dim`` (every dim by default)."""
    if axis is not None:
        dim = axis_as_dim("fftshift", dim, axis, None)
    return _shift("fftshift", input, dim, 1)


def ifftshift(input: Tensor, dim: int | Sequence[int] | None = None, axis: int | Sequence[int] | None = None) -> Tensor:
    """The inverse of :func:`fftshift`."""
    if axis is not None:
        dim = axis_as_dim("ifftshift", dim, axis, None)
    return _shift("ifftshift", input, dim, -1)
