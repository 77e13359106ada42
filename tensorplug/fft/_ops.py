"""The three FFT ops, on real tensors: complex data travels as ``view_as_real`` pairs.

* ``fft_c2c(x, dims, normalization, forward)``: complex to complex (``x`` and the result are
  (real, imag) pairs, the last dim of size 2);
* ``fft_r2c(x, dims, normalization, onesided)``: real to complex, the forward transform; with
  ``onesided`` only the first ``n // 2 + 1`` entries of the last dim in ``dims``;
* ``fft_c2r(x, dims, normalization, last_dim_size)``: onesided Hermitian complex to real, the
  inverse transform, ``last_dim_size`` long in the last dim of ``dims``.

``dims`` are non-negative dims of the complex tensor (the pairs' trailing dim is never among
them); ``normalization`` scales by 1 (0), 1/sqrt(n) (1) or 1/n (2), with n the product of the
signal sizes, as PyTorch's ``_fft_c2c``/``_fft_r2c``/``_fft_c2r``. Keeping the ops on real tensors
means they dispatch as any real op: their explicit derivative fills the Autograd slot and their
decomposition, NumPy's pocketfft on host arrays (a view on the CPU, a copy each way elsewhere),
every backend slot, until a backend registers a kernel of its own (cuFFT, clFFT, a vendor's):
docs/backend-contract.md lists them among the overridable ops.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..frontend import dtypes as _dt
from ..frontend.factories import from_numpy
from ..frontend.ops._composite import composite
from ..frontend.ops.copying import copy_from_numpy, to_numpy
from ..frontend.tensor import Tensor

__all__ = ["fft_c2c", "fft_r2c", "fft_c2r"]

# NumPy's norm= that scales as each normalization, for a forward and an inverse transform.
_NUMPY_NORM = {True: ("backward", "ortho", "forward"), False: ("forward", "ortho", "backward")}


def _host_complex(pairs: Tensor) -> np.ndarray:
    """A complex host array of ``pairs`` (real, imag) (a view of CPU memory where the layout allows)."""
    array = to_numpy(pairs)
    if array.strides[-1] != array.itemsize or any(s % (2 * array.itemsize) for s in array.strides[:-1]):
        array = np.ascontiguousarray(array)
    return array.view(np.complex64 if array.dtype == np.float32 else np.complex128)[..., 0]


def _device_pairs(result: np.ndarray, like: Tensor) -> Tensor:
    """A (real, imag) pairs tensor on ``like``'s device holding complex ``result``, in ``like``'s dtype."""
    part = like._dtype
    complex_type = np.complex64 if part is _dt.float32 else np.complex128
    pairs = np.ascontiguousarray(result, dtype=complex_type).view(part.numpy).reshape(result.shape + (2,))
    return _device_real(pairs, like)


def _device_real(result: np.ndarray, like: Tensor) -> Tensor:
    result = np.ascontiguousarray(result, dtype=like._dtype.numpy)
    if like._device.type == "cpu":
        return from_numpy(result)  # pocketfft's fresh result becomes the tensor's memory: no copy
    return copy_from_numpy(result, like._dtype, like._device)


# Below this many elements one thread is quicker than handing chunks to the pool.
_SPLIT_ELEMENTS = 1 << 16
_pool: ThreadPoolExecutor | None = None


def _host_transform(transform, array: np.ndarray, dims: tuple, **kwargs) -> np.ndarray:
    """``transform(array, axes=dims, **kwargs)``, split over ``tp.get_num_threads()`` threads
    along the longest dim that is not transformed (a batch of signals): pocketfft releases the
    GIL, and NumPy's runs one thread per call. Each signal is transformed exactly as in one call,
    so the values do not depend on the split."""
    import tensorplug as tp

    global _pool
    threads = tp.get_num_threads()
    batch = [d for d in range(array.ndim) if d not in dims and array.shape[d] > 1]
    if threads < 2 or not batch or array.size < _SPLIT_ELEMENTS:
        return transform(array, axes=dims, **kwargs)
    axis = max(batch, key=lambda d: array.shape[d])
    chunks = min(threads, array.shape[axis])
    bounds = [array.shape[axis] * i // chunks for i in range(chunks + 1)]
    if _pool is None:
        _pool = ThreadPoolExecutor(max_workers=max(threads, 2), thread_name_prefix="tensorplug-fft")
    parts = [_pool.submit(transform, array[(slice(None),) * axis + (slice(low, high),)], axes=dims, **kwargs)
             for low, high in zip(bounds[:-1], bounds[1:])]
    return np.concatenate([part.result() for part in parts], axis=axis)


def _sizes(shape: tuple, dims: tuple) -> tuple:
    return tuple(shape[d] for d in dims)


def _c2c_derivative(grad, args, output, kwargs, needs):
    _, dims, normalization, forward = args
    # The adjoint of a DFT is the DFT the other way round, scaled alike.
    return (fft_c2c(grad, dims, normalization, not forward),)


@composite("fft_c2c", derivative=_c2c_derivative)
def fft_c2c(input: Tensor, dims: tuple, normalization: int, forward: bool) -> Tensor:
    array = _host_complex(input)
    transform = np.fft.fftn if forward else np.fft.ifftn
    norm = _NUMPY_NORM[forward][normalization]
    result = _host_transform(transform, array, dims, norm=norm) if dims else array.copy()
    return _device_pairs(result, input)


def _r2c_derivative(grad, args, output, kwargs, needs):
    import tensorplug as tp

    input, dims, normalization, onesided = args
    if onesided:
        # The onesided result dropped the upper half of the last dim: its gradient there is 0.
        last = dims[-1]
        missing = input.shape[last] - grad.shape[last]
        if missing > 0:
            shape = list(grad.shape)
            shape[last] = missing
            grad = tp.cat([grad, tp.zeros(shape, dtype=grad.dtype, device=grad.device)], last)
    # x is real: its gradient is the real part of the adjoint (the inverse-direction DFT).
    return (fft_c2c(grad, dims, normalization, False).select(-1, 0),)


@composite("fft_r2c", derivative=_r2c_derivative)
def fft_r2c(input: Tensor, dims: tuple, normalization: int, onesided: bool) -> Tensor:
    array = to_numpy(input)
    norm = _NUMPY_NORM[True][normalization]
    result = _host_transform(np.fft.rfftn if onesided else np.fft.fftn, array, dims, norm=norm)
    return _device_pairs(result, input)


def _c2r_derivative(grad, args, output, kwargs, needs):
    import tensorplug as tp

    input, dims, normalization, last_dim_size = args
    # As PyTorch's fft_c2r_backward: the forward onesided transform of the gradient, with the
    # entries that stand for two conjugate-symmetric ones in the full signal counted twice.
    result = fft_r2c(grad, dims, normalization, True)
    last = dims[-1]
    kept = result.shape[last]
    doubled = last_dim_size - kept
    if doubled > 0:
        scale = np.ones(kept, dtype=np.float64)
        scale[1:1 + doubled] = 2.0
        shape = [1] * result.ndim
        shape[last] = kept
        result = result * tp.tensor(scale, dtype=result.dtype, device=result.device).reshape(shape)
    return (result,)


@composite("fft_c2r", derivative=_c2r_derivative)
def fft_c2r(input: Tensor, dims: tuple, normalization: int, last_dim_size: int) -> Tensor:
    array = _host_complex(input)
    sizes = _sizes(array.shape, dims)[:-1] + (last_dim_size,)
    result = _host_transform(np.fft.irfftn, array, dims, s=sizes, norm=_NUMPY_NORM[False][normalization])
    return _device_real(result, input)
