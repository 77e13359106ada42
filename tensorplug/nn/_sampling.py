"""Spatial sampling for ``tp.nn.functional``: ``grid_sample`` and ``affine_grid`` (the spatial
transformer's two halves).

Both are composites over gather and arithmetic, so every backend has them and autograd
differentiates them in the input (through gather's scatter-add) and in the grid or theta
(through the interpolation weights).
"""
from __future__ import annotations

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


def _tap(flat: Tensor, rows: Tensor, cols: Tensor, height: int, width: int) -> Tensor:
    """``flat`` (N, C, H * W) read at integer (rows, cols) of shape (N, P); 0 outside the image."""
    inside = (rows >= 0) & (rows < height) & (cols >= 0) & (cols < width)
    index = rows.clamp(0, height - 1) * width + cols.clamp(0, width - 1)
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
            term = _tap(flat, rows, cols, height, width) * (wx[i] * wy[j])
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
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(
            "nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or 'reflection', "
            f"but got: '{padding_mode}'"
        )
    align = _align(align_corners)
    if input.ndim == 5:
        raise NotImplementedError("grid_sample(): 5-D (volumetric) input is not supported yet; 4-D input is")
    if input.ndim != 4 or grid.ndim != 4:
        raise RuntimeError(
            f"grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, but got input with "
            f"sizes {list(input._shape)} and grid with sizes {list(grid._shape)}"
        )
    if input._shape[0] != grid._shape[0]:
        raise RuntimeError(
            f"grid_sampler(): expected grid and input to have same batch size, but got input with sizes "
            f"{list(input._shape)} and grid with sizes {list(grid._shape)}"
        )
    if grid._shape[-1] != 2:
        raise RuntimeError(
            f"grid_sampler(): expected grid to have size 2 in last dimension, but got grid with sizes {list(grid._shape)}"
        )
    if input._dtype is not grid._dtype:
        raise RuntimeError(
            f"grid_sampler(): expected input and grid to have the same dtype, but got {input._dtype.name} and {grid._dtype.name}"
        )
    if input._device != grid._device:
        raise RuntimeError(f"grid_sampler(): expected input and grid on the same device, but got {input._device} and {grid._device}")
    if not input._dtype.is_floating_point:
        raise RuntimeError(f"grid_sampler(): expected a floating-point input, got {input._dtype.name}")
    n, c, height, width = input._shape
    out_h, out_w = grid._shape[1:3]
    if any(s == 0 for s in (height, width)) and n * c * out_h * out_w:
        raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial dimensions, but got {list(input._shape)}")
    points = grid.reshape(n, out_h * out_w, 2)
    flat = input.reshape(n, c, height * width)
    if mode == "bicubic":
        return _bicubic(flat, points, height, width, padding_mode, align).reshape(n, c, out_h, out_w)
    x = _source_coordinates(points[..., 0], width, padding_mode, align)
    y = _source_coordinates(points[..., 1], height, padding_mode, align)
    if mode == "nearest":
        # round() is half-to-even, as PyTorch's nearbyint; nearest sampling has no grid gradient.
        cols, rows = x.detach().round().long(), y.detach().round().long()
        out = _tap(flat, rows, cols, height, width)
        if grid.requires_grad:
            # PyTorch gives the grid a zero gradient (not none): add an exact 0 that depends on it.
            finite = where(points.isfinite(), points, 0.0)
            out = out + ((finite - finite.detach()) * 0).sum(-1).unsqueeze(1)
    else:
        x0, y0 = x.detach().floor(), y.detach().floor()
        dx, dy = (x - x0).unsqueeze(1), (y - y0).unsqueeze(1)
        c0, r0 = x0.long(), y0.long()
        out = (
            _tap(flat, r0, c0, height, width) * ((1 - dx) * (1 - dy))
            + _tap(flat, r0, c0 + 1, height, width) * (dx * (1 - dy))
            + _tap(flat, r0 + 1, c0, height, width) * ((1 - dx) * dy)
            + _tap(flat, r0 + 1, c0 + 1, height, width) * (dx * dy)
        )
    return out.reshape(n, c, out_h, out_w)


def _base_coordinates(steps: int, align_corners: bool) -> np.ndarray:
    if steps <= 1:
        return np.zeros(max(steps, 0))
    values = np.linspace(-1.0, 1.0, steps)
    return values if align_corners else values * (steps - 1) / steps


def affine_grid(theta, size, align_corners=None):
    """The (N, H, W, 2) sampling grid of the 2-D affine maps ``theta`` (N, 2, 3) for an output of
    ``size`` (N, C, H, W), for ``grid_sample``; differentiable in ``theta``."""
    check_tensor("affine_grid", theta)
    align = _align(align_corners)
    if not theta._dtype.is_floating_point:
        raise ValueError(f"Expected theta to have floating point type, but got {theta._dtype}")
    size = tuple(int(s) for s in size)
    if len(size) == 5:
        raise NotImplementedError("affine_grid(): 3-D affine grids (5-D size) are not supported yet; 2-D ones are")
    if len(size) != 4:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, respectively. Got size {size}.")
    if theta.ndim != 3 or theta._shape[1:] != (2, 3):
        raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {size}. Got {list(theta._shape)}.")
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    n, _, height, width = size
    if theta._shape[0] != n:
        raise RuntimeError(f"affine_grid(): theta holds {theta._shape[0]} matrices but size asks for a batch of {n}")
    xs, ys = _base_coordinates(width, align), _base_coordinates(height, align)
    base = np.stack([np.broadcast_to(xs, (height, width)), np.broadcast_to(ys[:, None], (height, width)),
                     np.ones((height, width))], axis=-1)
    base = tensor(base.reshape(1, height * width, 3), dtype=theta._dtype, device=theta._device)
    return (base @ theta.transpose(1, 2)).reshape(n, height, width, 2)
