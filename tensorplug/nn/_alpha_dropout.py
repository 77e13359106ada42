"""Alpha dropout, the dropout of self-normalizing networks (SELU): dropped elements take SELU's
negative saturation value instead of 0, and an affine correction keeps the mean and variance
(Klambauer et al. 2017, as PyTorch): ``a * (x * keep + alpha' * (1 - keep)) + b`` with
``alpha' = -scale * alpha``, ``a = ((1 - p) (1 + p alpha'^2))^(-1/2)``, ``b = -a alpha' p``.
``feature_alpha_dropout`` drops whole channels."""
from __future__ import annotations

from ..frontend.ops import copying
from ._activations import _SELU_ALPHA, _SELU_SCALE, _dropout_any, check_tensor

__all__ = ["alpha_dropout", "feature_alpha_dropout"]

_SATURATION = -_SELU_ALPHA * _SELU_SCALE


def _drop(source, p: float, mask_shape: tuple):
    if p == 1:
        return source * 0.0
    from ..frontend.factories import rand

    keep = copying.to_dtype(rand(mask_shape, dtype=source._dtype, device=source._device) >= p, source._dtype)
    a = ((1 - p) * (1 + p * _SATURATION ** 2)) ** -0.5
    b = -a * _SATURATION * p
    return (source * keep + (1 - keep) * _SATURATION) * a + b


def _alpha_dropout(op: str, input, p, training, inplace, mask_shape):
    return _dropout_any(op, input, p, training, inplace, mask_shape, _drop)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Alpha dropout of each element with probability ``p`` (identity unless ``training``)."""
    return _alpha_dropout("alpha_dropout", input, p, training, inplace, getattr(input, "_shape", ()))


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Alpha dropout of whole channels (dim 1 of a batched (N, C, ...) input)."""
    check_tensor("feature_alpha_dropout", input)
    if input.ndim < 2:
        raise RuntimeError(f"feature_alpha_dropout: Expected an input of at least 2 dimensions, got {input.ndim}")
    mask_shape = input._shape[:2] + (1,) * (input.ndim - 2)
    return _alpha_dropout("feature_alpha_dropout", input, p, training, inplace, mask_shape)
