"""Counting values into bins: ``bincount`` (one bin per integer), ``histc`` (equal-width bins
over a range) and ``histogram`` (equal-width or given bin edges, weights, densities), composite
over ``scatter_add`` (and ``searchsorted`` for the edges).

Both output shapes depend on the data or on a range taken from it, so each reads one or two
numbers back from the device (the largest index; the data's min and max when no range is
given), as PyTorch does.
"""
from __future__ import annotations

import math
import operator
from collections import namedtuple

from .. import dtypes as _dt
from ..meta_device import has_values, refuse_data_dependent
from ..tensor import Tensor
from ._common import check_same_device, write_out
from ._composite import composite
from .out_rehearsal import rehearse_out

__all__ = ["bincount", "histc", "histogram"]

histogram_result = namedtuple("histogram", ["hist", "bin_edges"])


@composite("bincount")
def _bincount(input: Tensor, weights, length: int, dtype: _dt.dtype) -> Tensor:
    from ..factories import zeros

    counts = zeros(length, dtype=dtype, device=input._device)
    if input._shape[0] == 0:
        return counts
    source = counts.new_ones(input._shape) if weights is None else weights.to(dtype)
    return counts.scatter_add(0, input.to(_dt.int64), source)


def _bincount_dtype(weights) -> _dt.dtype:
    # PyTorch keeps float32 weights in float32 and counts every other weight dtype in float64.
    if weights is None:
        return _dt.int64
    return _dt.float32 if weights._dtype is _dt.float32 else _dt.float64


def bincount(input, weights=None, minlength=0) -> Tensor:
    """How often each non-negative integer occurs in the 1-D ``input`` (or the sum of its
    ``weights``): a tensor of length ``max(input) + 1``, at least ``minlength``.

    >>> tp.bincount(tp.tensor([1, 2, 2])).tolist()
    [0, 1, 2]
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"bincount(): argument 'input' must be Tensor, not {type(input).__name__}")
    minlength = operator.index(minlength)
    if minlength < 0:
        raise RuntimeError(f"bincount(): minlength should be >= 0, got {minlength}")
    if input.ndim != 1 or input._dtype.category != 1:
        raise RuntimeError(f"bincount only supports 1-d non-negative integral inputs (got a {input.ndim}-d "
                           f"{input._dtype.name} tensor)")
    if weights is not None:
        if not isinstance(weights, Tensor):
            raise TypeError(f"bincount(): argument 'weights' must be Tensor, not {type(weights).__name__}")
        if weights.ndim != 1 or weights._shape[0] != input._shape[0]:
            raise RuntimeError(f"bincount(): weights should be 1-d and have the same length as input (input "
                               f"{list(input._shape)}, weights {list(weights._shape)})")
        check_same_device("bincount", input, weights)
    refuse_data_dependent("bincount()", input)  # its length is max(input) + 1
    length = minlength
    if input._shape[0]:
        if int(input.min().item()) < 0:
            raise RuntimeError("bincount only supports 1-d non-negative integral inputs (found a negative value)")
        length = max(length, int(input.max().item()) + 1)
    return _bincount(input, weights, length, _bincount_dtype(weights))



@composite("histc")
def _histc(input: Tensor, bins: int, low: float, high: float) -> Tensor:
    from ..factories import tensor, zeros
    from .elementwise import UNARY, where

    dtype = input._dtype
    # PyTorch maps a value to its bin by one division in the input's precision (float for
    # float16/bfloat16); doing the same puts values near a bin edge in the same bin.
    compute = dtype if dtype in (_dt.float32, _dt.float64) else _dt.float32
    left = tensor(low, dtype=dtype, device=input._device).to(compute)
    right = tensor(high, dtype=dtype, device=input._device).to(compute)
    values = input.reshape(-1).to(compute)
    inside = (values >= left) & (values <= right)  # False for NaN
    position = UNARY["trunc"]((values - left) * bins / (right - left)).to(_dt.int64)
    # The last bin includes its right edge.
    position = where(inside, position.clamp(0, bins - 1), 0)
    return zeros(bins, dtype=dtype, device=input._device).scatter_add(0, position, inside.to(dtype))


def histc(input, bins=100, min=0, max=0, *, out=None) -> Tensor:
    """A histogram of ``input`` in ``bins`` equal-width bins over ``[min, max]`` (the data's
    range when ``min == max``); values outside the range, and NaN, are not counted.

    >>> tp.histc(tp.tensor([1.0, 2.0, 1.0]), bins=4, min=0, max=3).tolist()
    [0.0, 2.0, 1.0, 0.0]
    """
    if out is not None:
        rehearse_out(histc, locals())
    if not isinstance(input, Tensor):
        raise TypeError(f"histc(): argument 'input' must be Tensor, not {type(input).__name__}")
    if not input._dtype.is_floating_point:
        raise RuntimeError(f"histc(): not implemented for '{input._dtype.name}' (a floating-point input is needed)")
    bins = operator.index(bins)
    if bins <= 0:
        raise RuntimeError(f"histc(): bins must be > 0, but got {bins}")
    low, high = float(min), float(max)
    if low > high:
        raise RuntimeError(f"histc(): max must be larger than min (min={low}, max={high})")
    if low == high and input.numel() and has_values(input):  # a meta tensor has no range: its bins are all it has
        low, high = float(input.min().item()), float(input.max().item())
    if not (math.isfinite(low) and math.isfinite(high)):
        raise RuntimeError(f"histc(): range of [{low:g}, {high:g}] is not finite")
    if low == high:
        low, high = low - 1, high + 1
    return write_out("histc", out, _histc(input, bins, low, high))


def _histogram_edges(op: str, input: Tensor, bins, range) -> Tensor:
    """The bin edges: ``bins`` itself when it is a tensor, else ``bins + 1`` equally spaced
    edges over ``range`` (the data's min and max without one; widened by 1/2 each way when the
    two ends meet, as PyTorch)."""
    from ..factories import linspace

    if isinstance(bins, Tensor):
        if bins.ndim != 1:
            raise RuntimeError(f"{op}: bins tensor should have one dimension, but got {bins.ndim} dimensions")
        if bins._dtype is not input._dtype:
            raise RuntimeError(f"{op}: input tensor and bins tensors should have the same dtype, but got input with "
                               f"dtype {input._dtype.name} and bins with dtype {bins._dtype.name}")
        check_same_device(op, input, bins)
        if bins._shape[0] < 2:
            raise RuntimeError(f"{op}: bins must be > 0, but got {bins._shape[0] - 1}")
        return bins
    count = operator.index(bins)
    if count <= 0:
        raise RuntimeError(f"{op}: bins must be > 0, but got {count}")
    if range is not None:
        low, high = (float(v) for v in range)
    elif input.numel() and has_values(input):
        low, high = float(input.min().item()), float(input.max().item())
    else:  # no values (a meta tensor: only the shapes, which do not depend on the range)
        low, high = 0.0, 1.0
    if not (math.isfinite(low) and math.isfinite(high)):
        raise RuntimeError(f"{op}: range [{low:g}, {high:g}] is not finite")
    if low > high:
        raise RuntimeError(f"{op}: min should not exceed max, but got min {low:g} max {high:g}")
    if low == high:
        low, high = low - 0.5, high + 0.5
    return linspace(low, high, count + 1, dtype=input._dtype, device=input._device)


def histogram(input, bins, *, range=None, weight=None, density: bool = False, out=None) -> tuple:  # noqa: A002
    """``(hist, bin_edges)``: counts (or summed ``weight``, or a density with ``density``) of
    ``input``'s values in ``bins`` equal-width bins over ``range``, or between the edges ``bins``;
    each bin holds its left edge, the last its right edge too.

    >>> tp.histogram(tp.tensor([1.0, 2.0, 1.0]), bins=2, range=(0.0, 2.0)).hist.tolist()
    [0.0, 3.0]
    """
    if out is not None:
        rehearse_out(histogram, locals())
    from ..factories import zeros
    from .elementwise import where
    from .searching import searchsorted

    op = "histogram()"
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}: argument 'input' must be Tensor, not {type(input).__name__}")
    if not input._dtype.is_floating_point:
        raise RuntimeError(f"{op}: not implemented for '{input._dtype.name}' (a floating-point input is needed)")
    if weight is not None:
        if not isinstance(weight, Tensor):
            raise TypeError(f"{op}: argument 'weight' must be Tensor, not {type(weight).__name__}")
        if weight._shape != input._shape:
            raise RuntimeError(f"{op}: weight should have the same shape as input, but got input with shape "
                               f"{list(input._shape)} and weight with shape {list(weight._shape)}")
        if weight._dtype is not input._dtype:
            raise RuntimeError(f"{op}: input tensor and weight tensor should have the same dtype, but got "
                               f"input({input._dtype.name}) and weight({weight._dtype.name})")
        check_same_device(op, input, weight)
    edges = _histogram_edges(op, input, bins, range)
    count = edges._shape[0] - 1
    values = input.reshape(-1)
    # The bin of x is the last edge <= x; the rightmost edge closes the last bin.
    position = searchsorted(edges, values, right=True) - 1
    inside = (values >= edges[0]) & (values <= edges[-1])  # False for NaN
    position = where(inside, position.clamp(0, count - 1), 0)
    amounts = inside.to(input._dtype) if weight is None else where(inside, weight.reshape(-1), 0.0)
    hist = zeros(count, dtype=input._dtype, device=input._device).scatter_add(0, position, amounts)
    if density:
        widths = edges[1:] - edges[:-1]
        hist = hist / (hist.sum() * widths)
    if out is not None:
        hist_out, edges_out = out
        hist = write_out("histogram", hist_out, hist)
        edges = write_out("histogram", edges_out, edges)
    return histogram_result(hist, edges)


#: Tensor methods this module provides: name -> function (attached by frontend.methods).
TENSOR_METHODS: dict = {"bincount": bincount, "histc": histc, "histogram": histogram}
