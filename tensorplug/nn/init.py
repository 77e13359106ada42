"""``tp.nn.init``: fill tensors in place with PyTorch's initialization schemes.

Every function runs under ``no_grad``, changes its argument in place and returns it, and draws
from tensorplug's generator (``tp.manual_seed`` makes it repeatable). The schemes differ only in
the distribution (uniform or normal) and in how its spread follows from the tensor's fans and a
nonlinearity's gain, so each public function states that spread and hands the filling to
``_fill``.

>>> import tensorplug as tp
>>> w = tp.nn.init.xavier_uniform_(tp.empty(3, 5))
>>> bool((w.abs() <= (6 / 8) ** 0.5).all())
True
"""
from __future__ import annotations

import math
import warnings
from typing import NamedTuple

import numpy as np

from ..frontend import dtypes
from ..frontend.autograd import no_grad
from ..frontend.factories import eye as _identity_matrix
from ..frontend.factories import from_numpy, randperm
from ..frontend.tensor import Tensor

__all__ = [
    "calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_", "dirac_",
    "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_", "sparse_",
    "uniform", "normal", "constant", "eye", "dirac", "xavier_uniform", "xavier_normal", "kaiming_uniform",
    "kaiming_normal", "orthogonal", "sparse",
]

# The gain that keeps activations' variance steady through each nonlinearity (leaky_relu's depends
# on its slope and is computed in calculate_gain).
_FIXED_GAINS = {
    "linear": 1.0, "sigmoid": 1.0, "tanh": 5.0 / 3, "relu": math.sqrt(2.0), "selu": 3.0 / 4,
    **{name: 1.0 for name in ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                              "conv_transpose3d")},
}
_DEFAULT_LEAKY_SLOPE = 0.01


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for a nonlinearity (as torch.nn.init.calculate_gain)."""
    fixed = _FIXED_GAINS.get(nonlinearity)
    if fixed is not None:
        return fixed
    if nonlinearity != "leaky_relu":
        raise ValueError(f"Unsupported nonlinearity {nonlinearity}")
    slope = _DEFAULT_LEAKY_SLOPE if param is None else param
    # bool is an int subclass, but a slope of True is a caller's mistake.
    if isinstance(slope, bool) or not isinstance(slope, (int, float)):
        raise ValueError(f"negative_slope {param} not a valid number")
    return math.sqrt(2.0 / (1.0 + slope * slope))


class Fans(NamedTuple):
    """How many inputs feed one output unit (fan_in) and how many outputs one input feeds."""

    fan_in: int
    fan_out: int


def fans(tensor: Tensor) -> Fans:
    """A weight's fans: dims 1 and 0 times the size of the receptive field (dims 2 onwards)."""
    if tensor.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive_field = math.prod(tensor.shape[2:])
    return Fans(tensor.shape[1] * receptive_field, tensor.shape[0] * receptive_field)


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    # Scripts (and layers.py) call this private name directly, so it stays.
    return tuple(fans(tensor))


def _fan_for_mode(tensor: Tensor, mode: str) -> int:
    chosen = mode.lower()
    if chosen not in Fans._fields:
        raise ValueError(f"Mode {chosen} not supported, please use one of {list(Fans._fields)}")
    return getattr(fans(tensor), chosen)


def _fill(tensor: Tensor, distribution: str, spread: float, generator) -> Tensor:
    """Fill with U(-spread, spread) or N(0, spread^2)."""
    with no_grad():
        if distribution == "uniform":
            return tensor.uniform_(-spread, spread, generator=generator)
        return tensor.normal_(0.0, spread, generator=generator)


def _warn_if_empty(tensor: Tensor) -> bool:
    """True (after PyTorch's warning) when there is nothing to initialize."""
    if tensor.numel() != 0:
        return False
    warnings.warn("Initializing zero-element tensors is a no-op", UserWarning, stacklevel=3)
    return True


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator=None) -> Tensor:
    """Fill with U(a, b)."""
    with no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    """Fill with N(mean, std^2)."""
    with no_grad():
        return tensor.normal_(mean, std, generator=generator)


def _standard_normal_cdf(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0,
                  generator=None) -> Tensor:
    """Fill with N(mean, std^2) restricted to [a, b], by inverting the normal CDF on a uniform draw."""
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. "
                      "The distribution of values may be incorrect.", stacklevel=2)
    # Draw u uniformly between the CDF's values at the bounds (mapped to erf's range [-1, 1]),
    # then x = mean + std * sqrt(2) * erfinv(u). The clamp catches erfinv's rounding at +-1.
    lower = 2.0 * _standard_normal_cdf((a - mean) / std) - 1.0
    upper = 2.0 * _standard_normal_cdf((b - mean) / std) - 1.0
    with no_grad():
        tensor.uniform_(lower, upper, generator=generator).erfinv_()
        return tensor.mul_(std * math.sqrt(2.0)).add_(mean).clamp_(min=a, max=b)


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with ``val``."""
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor: Tensor) -> Tensor:
    """Fill with ones."""
    return constant_(tensor, 1.0)


def zeros_(tensor: Tensor) -> Tensor:
    """Fill with zeros."""
    return constant_(tensor, 0.0)


def eye_(tensor: Tensor) -> Tensor:
    """Fill a 2-D tensor with the identity matrix."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    identity = _identity_matrix(*tensor.shape, dtype=tensor.dtype, device=tensor.device)
    with no_grad():
        return tensor.copy_(identity)


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fill a 3-, 4- or 5-D convolution weight so the convolution passes its input through."""
    if tensor.ndim not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    out_channels, in_channels, *kernel = tensor.shape
    if out_channels % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    per_group = out_channels // groups
    # Output channel g * per_group + c copies input channel c of its group, at the kernel's centre.
    # Built on the host in one piece: one transfer instead of a write per channel.
    channel = np.arange(min(per_group, in_channels))
    output_channel = (np.arange(groups)[:, None] * per_group + channel).ravel()
    identity = np.zeros(tensor.shape, dtype=np.float32)
    identity[(output_channel, np.tile(channel, groups), *(size // 2 for size in kernel))] = 1
    with no_grad():
        return tensor.copy_(from_numpy(identity))


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)) (Glorot and Bengio, 2010)."""
    std = gain * math.sqrt(2.0 / sum(fans(tensor)))
    return _fill(tensor, "uniform", math.sqrt(3.0) * std, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    return _fill(tensor, "normal", gain * math.sqrt(2.0 / sum(fans(tensor))), generator)


def _kaiming(tensor: Tensor, distribution: str, a: float, mode: str, nonlinearity: str, generator) -> Tensor:
    if _warn_if_empty(tensor):
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan_for_mode(tensor, mode))
    # A uniform distribution on (-s, s) has standard deviation s / sqrt(3).
    spread = std * math.sqrt(3.0) if distribution == "uniform" else std
    return _fill(tensor, distribution, spread, generator)


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                     generator=None) -> Tensor:
    """U(-bound, bound) with bound = gain * sqrt(3 / fan) (He et al., 2015)."""
    return _kaiming(tensor, "uniform", a, mode, nonlinearity, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                    generator=None) -> Tensor:
    """N(0, std^2) with std = gain / sqrt(fan) (He et al., 2015)."""
    return _kaiming(tensor, "normal", a, mode, nonlinearity, generator)


def orthogonal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """A (semi-)orthogonal matrix from the QR decomposition of a normal one (Saxe et al., 2013)."""
    from .. import linalg

    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    columns = tensor.numel() // rows
    # QR of the tall orientation gives orthonormal columns; a wide matrix is its transpose.
    tall = rows >= columns
    # The factorization needs float32 or float64; half-precision weights are drawn in float32.
    work_dtype = tensor.dtype if tensor.dtype in (dtypes.float32, dtypes.float64) else dtypes.float32
    gaussian = tensor.new_empty((rows, columns) if tall else (columns, rows), dtype=work_dtype)
    with no_grad():
        q, r = linalg.qr(gaussian.normal_(generator=generator))
        # Signs from R's diagonal make the result uniform over orthogonal matrices (Mezzadri 2007).
        q = q * r.diagonal().sign()
        if not tall:
            q = q.T
        return tensor.copy_((q * gain).reshape(tensor.shape))


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator=None) -> Tensor:
    """N(0, std^2) with ceil(sparsity * rows) entries of every column set to zero (Martens, 2010)."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, columns = tensor.shape
    zeros_per_column = math.ceil(sparsity * rows)
    with no_grad():
        tensor.normal_(0.0, std, generator=generator)
        for column in range(columns):
            dropped = randperm(rows, generator=generator, device=tensor.device)[:zeros_per_column]
            tensor[dropped, column] = 0
    return tensor


def _deprecated_alias(replacement):
    """The pre-underscore name PyTorch still accepts, warning as it does."""
    old_name = replacement.__name__[:-1]

    def alias(*args, **kwargs):
        warnings.warn(f"`nn.init.{old_name}` is now deprecated in favor of `nn.init.{replacement.__name__}`.",
                      FutureWarning, stacklevel=2)
        return replacement(*args, **kwargs)

    alias.__name__ = alias.__qualname__ = old_name
    alias.__doc__ = f"Deprecated: use ``{replacement.__name__}``."
    return alias


uniform = _deprecated_alias(uniform_)
normal = _deprecated_alias(normal_)
constant = _deprecated_alias(constant_)
eye = _deprecated_alias(eye_)
dirac = _deprecated_alias(dirac_)
xavier_uniform = _deprecated_alias(xavier_uniform_)
xavier_normal = _deprecated_alias(xavier_normal_)
kaiming_uniform = _deprecated_alias(kaiming_uniform_)
kaiming_normal = _deprecated_alias(kaiming_normal_)
orthogonal = _deprecated_alias(orthogonal_)
sparse = _deprecated_alias(sparse_)
