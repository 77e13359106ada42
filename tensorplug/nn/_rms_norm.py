"""Root-mean-square normalization (``rms_norm``, Zhang and Sennrich 2019) and local response
normalization across channels (``local_response_norm``, AlexNet's): composites over reductions
and slices."""
from __future__ import annotations

from ..frontend import dtypes as _dt
from ..frontend.autocast_hook import autocast_function
from ..frontend.ops.elementwise import UNARY
from ._normalization import normalized_shape_of

__all__ = ["rms_norm", "local_response_norm"]


@autocast_function("rms_norm")
def rms_norm(input, normalized_shape, weight=None, eps=None):
    """``x / sqrt(mean(x^2) + eps) * weight`` over the last ``len(normalized_shape)`` dims;
    ``eps`` defaults to the dtype's machine epsilon, as in PyTorch.

    >>> [round(v, 4) for v in F.rms_norm(tp.tensor([[3.0, 4.0]]), (2,))[0].tolist()]  # rms = sqrt(12.5)
    [0.8485, 1.1314]
    """
    shape = normalized_shape_of("rms_norm", input, normalized_shape, weight)
    if not input._dtype.is_floating_point:
        raise RuntimeError(f"rms_norm(): expected a floating-point input, but got {input._dtype.name}")
    if eps is None:
        eps = _dt.finfo(input._dtype).eps
    dims = tuple(range(input.ndim - len(shape), input.ndim))
    out = input * UNARY["rsqrt"]((input * input).mean(dims, keepdim=True) + eps)
    return out * weight if weight is not None else out


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """Each element divided by ``(k + alpha * mean of the squares over size neighbouring
    channels) ** beta``; channels are dim 1 of an input of at least 3 dims, and the window is
    zero-padded by size // 2 before and (size - 1) // 2 after, as PyTorch's.

    >>> F.local_response_norm(tp.ones(1, 2, 1), 2).shape
    (1, 2, 1)
    """
    from ..frontend.ops.shaping import pad
    from ..frontend.views import slice_dim

    if input.ndim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.ndim} dimensions)")
    if input.numel() == 0:
        return input
    channels = input._shape[1]
    squares = input * input
    # Zero-pad the channel dim (pad's pairs run from the last dim backwards), then sum the size
    # shifted windows.
    padding = [0, 0] * (input.ndim - 2) + [size // 2, (size - 1) // 2]
    padded = pad(squares, padding)
    total = slice_dim(padded, 1, 0, channels, 1)
    for shift in range(1, size):
        total = total + slice_dim(padded, 1, shift, shift + channels, 1)
    return input / (total * (alpha / size) + k) ** beta
