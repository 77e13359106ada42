"""Spatial sampling for ``tp.nn.functional``: ``grid_sample`` and ``affine_grid`` (the spatial
transformer's two halves).

Both are composites over gather and arithmetic, so every backend has them and autograd
differentiates them in the input (through gather's scatter-add) and in the grid or theta
(through the interpolation weights).
"""
from __future__ import annotations

import itertools
import math
import warnings

import numpy as np

from ..frontend.factories import tensor
from ..frontend.ops.elementwise import where
from ..frontend.tensor import Tensor
from ._activations import check_tensor

__all__ = ["grid_sample", "affine_grid"]

_ALIGN_WARNING = (
    "Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. Please specify "
    "align_corners=True if the old behavior is desired. See the documentation of grid_sample for details."
)


def _align(align_corners) -> bool:
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, UserWarning, stacklevel=3)
        return False
    return bool(align_corners)


def _reflect(coord: Tensor, twice_low: int, twice_high: int) -> Tensor:
    """``coord`` folded back into [twice_low / 2, twice_high / 2] by repeated reflection."""
    if twice_low == twice_high:
        return coord * 0
    low = twice_low / 2
    span = (twice_high - twice_low) / 2
    distance = (coord - low).abs()
    extra = distance.fmod(span)
    flips = (distance / span).floor().detach()
    even = flips.fmod(2) == 0
    return where(even, extra + low, span - extra + low)


def _source_coordinates(coord: Tensor, size: int, padding_mode: str, align_corners: bool) -> Tensor:
    """Normalized [-1, 1] coordinates as pixel positions of a dim of ``size``, after padding_mode."""
    if align_corners:
        coord = (coord + 1) / 2 * (size - 1)
    else:
        coord = ((coord + 1) * size - 1) / 2
    if padding_mode == "border":
        coord = coord.clamp(0, size - 1)
    elif padding_mode == "reflection":
        coord = _reflect(coord, 0, 2 * (size - 1)) if align_corners else _reflect(coord, -1, 2 * size - 1)
        coord = coord.clamp(0, size - 1)
    return coord


def _tap(flat: Tensor, positions: list, sizes: tuple) -> Tensor:
    """``flat`` (N, C, prod(sizes)) read at integer ``positions`` (one (N, P) tensor per spatial
    dim, in the input's order); 0 outside the image."""
    inside = index = None
    stride = 1
    for pos, size in reversed(list(zip(positions, sizes))):
        ok = (pos >= 0) & (pos < size)
        inside = ok if inside is None else inside & ok
        term = pos.clamp(0, size - 1) * stride
        index = term if index is None else index + term
        stride *= size
    n, c = flat._shape[:2]
    values = flat.gather(2, index.unsqueeze(1).expand(n, c, index._shape[1]))
    return where(inside.unsqueeze(1), values, 0.0)


_CUBIC_A = -0.75  # the bicubic kernel's parameter, as PyTorch's (and OpenCV's)


def _cubic_weights(t: Tensor) -> list:
    """The 4 cubic-convolution weights of the taps at -1, 0, 1, 2 for a fraction ``t`` in [0, 1)."""
    a = _CUBIC_A

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _fold_tap(coord: Tensor, size: int, padding_mode: str, align_corners: bool) -> Tensor:
    """An integer tap position moved inside the image per padding_mode (zeros: left as is)."""
    if padding_mode == "border":
        return coord.clamp(0, size - 1)
    if padding_mode == "reflection":
        folded = _reflect(coord, 0, 2 * (size - 1)) if align_corners else _reflect(coord, -1, 2 * size - 1)
        return folded.clamp(0, size - 1)
    return coord


def _bicubic(flat: Tensor, points: Tensor, height: int, width: int, padding_mode: str, align: bool) -> Tensor:
    """Bicubic sampling: 4 x 4 taps around each point, padding applied to each tap (PyTorch's order)."""
    coords = []
    for k, size in ((0, width), (1, height)):
        v = points[..., k]
        coords.append((v + 1) / 2 * (size - 1) if align else ((v + 1) * size - 1) / 2)
    x, y = coords
    x0, y0 = x.detach().floor(), y.detach().floor()
    wx, wy = _cubic_weights((x - x0).unsqueeze(1)), _cubic_weights((y - y0).unsqueeze(1))
    out = None
    for j in range(4):
        rows = _fold_tap(y0 + (j - 1), height, padding_mode, align).round().long()
        for i in range(4):
            cols = _fold_tap(x0 + (i - 1), width, padding_mode, align).round().long()
            term = _tap(flat, [rows, cols], (height, width)) * (wx[i] * wy[j])
            out = term if out is None else out + term
    return out


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """``input`` (N, C, H, W) sampled at ``grid`` (N, OH, OW, 2) of normalized (x, y) positions,
    -1 and 1 being the image's edges (``align_corners=False``) or its corner pixels' centres
    (``True``). ``mode``: ``"bilinear"``, ``"nearest"`` or ``"bicubic"``; ``padding_mode``:
    ``"zeros"``, ``"border"`` or ``"reflection"``. Differentiable in ``input`` and (bilinear,
    bicubic) ``grid``.
    """
    check_tensor("grid_sample", input)
    check_tensor("grid_sample", grid)
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(
            f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: '{mode}'"
        )
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(
            "nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or 'reflection', "
            f"but got: '{padding_mode}'"
        )
    align = _align(align_corners)
    if input.ndim not in (4, 5) or grid.ndim != input.ndim:
        raise RuntimeError(
            f"grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, but got input with "
            f"sizes {list(input._shape)} and grid with sizes {list(grid._shape)}"
        )
    if input._shape[0] != grid._shape[0]:
        raise RuntimeError(
            f"grid_sampler(): expected grid and input to have same batch size, but got input with sizes "
            f"{list(input._shape)} and grid with sizes {list(grid._shape)}"
        )
    nd = input.ndim - 2
    if grid._shape[-1] != nd:
        raise RuntimeError(
            f"grid_sampler(): expected grid to have size {nd} in last dimension, but got grid with sizes {list(grid._shape)}"
        )
    if mode == "bicubic" and nd == 3:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if input._dtype is not grid._dtype:
        raise RuntimeError(
            f"grid_sampler(): expected input and grid to have the same dtype, but got {input._dtype.name} and {grid._dtype.name}"
        )
    if input._device != grid._device:
        raise RuntimeError(
            f"grid_sampler(): expected input and grid on the same device, but got {input._device} and {grid._device}"
        )
    if not input._dtype.is_floating_point:
        raise RuntimeError(f"grid_sampler(): expected a floating-point input, got {input._dtype.name}")
    n, c = input._shape[:2]
    sizes, out_sizes = input._shape[2:], grid._shape[1:-1]
    if 0 in sizes and n * c * math.prod(out_sizes):
        raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial dimensions, but got {list(input._shape)}")
    points = grid.reshape(n, math.prod(out_sizes), nd)
    flat = input.reshape(n, c, math.prod(sizes))
    if mode == "bicubic":
        return _bicubic(flat, points, sizes[0], sizes[1], padding_mode, align).reshape(n, c, *out_sizes)
    # The grid's last dim holds (x, y[, z]): x indexes the input's last dim, so reverse the order.
    coords = [_source_coordinates(points[..., nd - 1 - k], size, padding_mode, align) for k, size in enumerate(sizes)]
    if mode == "nearest":
        # round() is half-to-even, as PyTorch's nearbyint; nearest sampling has no grid gradient.
        out = _tap(flat, [v.detach().round().long() for v in coords], sizes)
        if grid.requires_grad:
            # PyTorch gives the grid a zero gradient (not none): add an exact 0 that depends on it.
            finite = where(points.isfinite(), points, 0.0)
            out = out + ((finite - finite.detach()) * 0).sum(-1).unsqueeze(1)
    else:
        lows = [v.detach().floor() for v in coords]
        fractions = [(v - low).unsqueeze(1) for v, low in zip(coords, lows)]
        starts = [low.long() for low in lows]
        out = None
        for corner in itertools.product((0, 1), repeat=nd):
            weight = None
            for offset, fraction in zip(corner, fractions):
                factor = fraction if offset else 1 - fraction
                weight = factor if weight is None else weight * factor
            term = _tap(flat, [start + offset for start, offset in zip(starts, corner)], sizes) * weight
            out = term if out is None else out + term
    return out.reshape(n, c, *out_sizes)


def _base_coordinates(steps: int, align_corners: bool) -> np.ndarray:
    if steps <= 1:
        return np.zeros(max(steps, 0))
    values = np.linspace(-1.0, 1.0, steps)
    return values if align_corners else values * (steps - 1) / steps


def affine_grid(theta, size, align_corners=None):
    """The sampling grid of the affine maps ``theta`` for ``grid_sample``: (N, 2, 3) matrices
    and an output ``size`` (N, C, H, W) give an (N, H, W, 2) grid; (N, 3, 4) and (N, C, D, H, W)
    give (N, D, H, W, 3). Differentiable in ``theta``."""
    check_tensor("affine_grid", theta)
    align = _align(align_corners)
    if not theta._dtype.is_floating_point:
        raise ValueError(f"Expected theta to have floating point type, but got {theta._dtype}")
    size = tuple(int(s) for s in size)
    if len(size) not in (4, 5):
        raise NotImplementedError(
            f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, respectively. Got size {size}."
        )
    nd = len(size) - 2
    if theta.ndim != 3 or theta._shape[1:] != (nd, nd + 1):
        raise ValueError(
            f"Expected a batch of {nd}D affine matrices of shape Nx{nd}x{nd + 1} for size {size}. Got {list(theta._shape)}."
        )
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    n, spatial = size[0], size[2:]
    if align and min(spatial) == 1:
        warnings.warn(
            "Since version 1.3.0, affine_grid behavior has changed for unit-size grids when align_corners=True. This is "
            "not an intended use case of affine_grid. See the documentation of affine_grid for details.", stacklevel=2
        )
    if theta._shape[0] != n:
        raise RuntimeError(f"affine_grid(): theta holds {theta._shape[0]} matrices but size asks for a batch of {n}")
    # Each output point as (x, y[, z], 1): x runs along the last dim, y the one before, z the first.
    axes = np.meshgrid(*[_base_coordinates(steps, align) for steps in spatial], indexing="ij")
    base = np.stack(list(reversed(axes)) + [np.ones(spatial)], axis=-1)
    base = tensor(base.reshape(1, math.prod(spatial), nd + 1), dtype=theta._dtype, device=theta._device)
    return (base @ theta.transpose(1, 2)).reshape(n, *spatial, nd)
