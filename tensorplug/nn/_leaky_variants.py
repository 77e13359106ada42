"""Leaky ReLUs whose negative slope is learned (``prelu``: one slope per channel, or one for
all) or random (``rrelu``: drawn uniformly from [lower, upper] per element while training, their
mean otherwise)."""
from __future__ import annotations

from ..frontend.ops import copying
from ..frontend.ops.elementwise import where
from ._activations import _inplace, check_floating, check_tensor, leaky_relu
from ..frontend.autocast_hook import autocast_function

__all__ = ["prelu", "rrelu", "rrelu_"]


@autocast_function("prelu")
def prelu(input, weight):
    """``x`` where positive, ``weight * x`` elsewhere; ``weight`` has one slope, or one per
    channel (dim 1 of ``input``).

    >>> F.prelu(tp.tensor([[-1.0, 2.0]]), tp.tensor([0.25])).tolist()
    [[-0.25, 2.0]]
    """
    check_tensor("prelu", input)
    check_tensor("prelu", weight, "weight")
    channels = input._shape[1] if input.ndim >= 2 else 1
    count = weight.numel()
    if count != 1 and count != channels:
        raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = {count} "
                           f"and channel size = {channels}.")
    if weight.ndim > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.ndim}")
    slope = weight.reshape(()) if count == 1 else weight.reshape((channels,) + (1,) * (input.ndim - 2))
    return where(input > 0, input, slope * input)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Randomized leaky ReLU: while training each negative element gets its own slope, drawn
    from U(lower, upper) with ``tp.rand``; otherwise the slope is ``(lower + upper) / 2``."""
    check_floating("rrelu", input)
    if lower > upper:
        raise ValueError(f"Lower bound should be less than or equal to the upper bound (got {lower} and {upper})")
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)
    from ..frontend.factories import rand

    source = copying.inplace_source(input) if inplace else input
    slopes = rand(source._shape, dtype=source._dtype, device=source._device) * (upper - lower) + lower
    result = where(source >= 0, source, source * slopes)
    return _inplace(input, result) if inplace else result


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return rrelu(input, lower, upper, training, inplace=True)
