"""Fractional max pooling (Graham, 2014): ``F.fractional_max_pool2d`` / ``3d``, composite over
``gather`` and ``argmax`` (gradients flow through the gather to each window's maximum).

Window starts follow PyTorch 2.13's ATen kernel exactly: along a dim of input size L, output size
O and kernel K, with the plane's sample u in [0, 1) and ``alpha = (L - K) / (O - 1)`` (computed
in the input's dtype), window i < O - 1 starts at ``int((i + u) * alpha) - int(u * alpha)`` and
the last at ``L - K``. So with ``_random_samples`` given the result equals PyTorch's; without
it the samples are drawn with ``tp.rand`` from tensorplug's generator (seeded by
``tp.manual_seed``), so they differ from PyTorch's draws. In a window the first maximum wins,
except that a NaN wins over everything (the last NaN of the window), as in PyTorch.
"""
from __future__ import annotations

import math

import numpy as np

from ..frontend import dtypes as _dt
from ..frontend.factories import arange, rand
from ..frontend.tensor import Tensor
from ._conv import ntuple

__all__ = ["fractional_max_pool2d", "fractional_max_pool3d", "fractional_max_pool2d_with_indices",
           "fractional_max_pool3d_with_indices"]

_DIM_NAMES = {2: ("height", "width"), 3: ("time", "height", "width")}


def _window_starts(samples: Tensor, size: int, out: int, kernel: int) -> Tensor:
    """int64 ``(N, C, out)``: each window's first input position along one dim."""
    n, c = samples._shape
    if out == 0:
        return samples.new_zeros((n, c, 0), dtype=_dt.int64)
    last = samples.new_full((n, c, 1), size - kernel, dtype=_dt.int64)
    if out == 1:
        return last
    # alpha in the input's dtype, as the kernel computes it (bfloat16 has no NumPy type: float32).
    np_type = np.float64 if samples._dtype is _dt.float64 else np.float16 if samples._dtype is _dt.float16 else np.float32
    alpha = float(np_type(size - kernel) / np_type(out - 1))
    steps = arange(out - 1, dtype=samples._dtype, device=samples._device)
    u = samples.unsqueeze(-1)
    starts = ((steps + u) * alpha).long() - (u * alpha).long()
    from ..frontend.ops.joining import cat

    return cat([starts, last], -1)


def _fractional_max_pool(nd: int, input, kernel_size, output_size, output_ratio, _random_samples):
    op = f"fractional_max_pool{nd}d"
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if output_size is None and output_ratio is None:
        raise ValueError(f"{op} requires specifying either an output_size or an output_ratio")
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{op}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: {list(input.shape)}")
    spatial = input._shape[-nd:]
    if output_size is None:
        if isinstance(output_ratio, (tuple, list)) and len(output_ratio) > nd:
            raise ValueError(f"{op} requires output_ratio to either be a single Int or tuple of Ints.")
        ratio = tuple(output_ratio) if isinstance(output_ratio, (tuple, list)) else (output_ratio,) * nd
        output_size = [int(s * r) for s, r in zip(spatial, ratio)]
    kernel = ntuple(op, "kernel_size", kernel_size, nd)
    out = ntuple(op, "output_size", output_size, nd)
    x = input if input.ndim == nd + 2 else input.unsqueeze(0)
    n, c = x._shape[:2]
    samples = _random_samples
    if samples is None:
        samples = rand(n, c, nd, dtype=input._dtype, device=input._device)
    if samples._dtype is not input._dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    if samples.ndim != 3:
        raise RuntimeError(f"Expect _random_samples to be 3D, got {samples.ndim}D")
    if samples._shape[0] < n:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    if samples._shape[1] != c:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if samples._shape[2] != nd:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {nd}; got {samples._shape[2]}.")
    prefix = op if nd == 2 else f"{op}_out"
    for name, size, o, k in zip(_DIM_NAMES[nd], spatial, out, kernel):
        if o + k - 1 > size:
            raise RuntimeError(f"{prefix}(): pool {name} {k} too large relative to input {name} {size}")
    # PyTorch's samples run (width, height) for 2-d and (time, height, width) for 3-d.
    which = [nd - 1 - i for i in range(nd)] if nd == 2 else list(range(nd))
    # flat[n, c, o_0, ..., o_{nd-1}, k_0, ..., k_{nd-1}]: the plane offset of each window element.
    flat = None
    stride = 1
    for i in reversed(range(nd)):
        starts = _window_starts(samples[:n, :, which[i]], spatial[i], out[i], kernel[i])
        positions = starts.unsqueeze(-1) + arange(kernel[i], device=input._device)
        shape = [n, c] + [1] * (2 * nd)
        shape[2 + i], shape[2 + nd + i] = out[i], kernel[i]
        term = positions.reshape(shape) * stride
        flat = term if flat is None else flat + term
        stride *= spatial[i]
    outputs, window = math.prod(out), math.prod(kernel)
    flat = flat.expand((n, c) + tuple(out) + tuple(kernel)).reshape(n, c, outputs, window)
    plane = x.reshape(n, c, stride)
    values = plane.gather(2, flat.reshape(n, c, outputs * window)).reshape(n, c, outputs, window)
    if outputs and window:
        nan = values.isnan()
        last_nan = (window - 1) - nan.flip(-1).long().argmax(-1, keepdim=True)
        pick = last_nan.where(nan.any(-1, keepdim=True), values.argmax(-1, keepdim=True))
        indices = flat.gather(-1, pick).squeeze(-1)
    else:
        indices = flat.new_zeros((n, c, outputs))
    result = plane.gather(2, indices).reshape((n, c) + tuple(out))
    indices = indices.reshape((n, c) + tuple(out))
    if input.ndim == nd + 1:
        result, indices = result.squeeze(0), indices.squeeze(0)
    return result, indices


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                                       _random_samples=None):
    """:func:`fractional_max_pool2d` returning ``(output, indices)``."""
    return _fractional_max_pool(2, input, kernel_size, output_size, output_ratio, _random_samples)


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """2-D fractional max pooling of ``(N, C, H, W)`` or ``(C, H, W)``: windows of
    ``kernel_size`` at pseudo-random, increasing starts giving ``output_size`` (or
    ``int(size * output_ratio)``) outputs per dim. ``_random_samples`` ``(N, C, 2)`` in [0, 1),
    of the input's dtype, fixes the starts (PyTorch's exactly); without it they are drawn from
    tensorplug's generator. With ``return_indices``, also the flat index of each maximum within
    its ``H x W`` plane (for ``max_unpool2d``).
    """
    result, indices = _fractional_max_pool(2, input, kernel_size, output_size, output_ratio, _random_samples)
    return (result, indices) if return_indices else result


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                                       _random_samples=None):
    """:func:`fractional_max_pool3d` returning ``(output, indices)``."""
    return _fractional_max_pool(3, input, kernel_size, output_size, output_ratio, _random_samples)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """3-D fractional max pooling of ``(N, C, T, H, W)`` or ``(C, T, H, W)``, as
    :func:`fractional_max_pool2d` with ``_random_samples`` ``(N, C, 3)`` (time, height, width)."""
    result, indices = _fractional_max_pool(3, input, kernel_size, output_size, output_ratio, _random_samples)
    return (result, indices) if return_indices else result
