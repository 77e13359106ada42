"""Helpers shared by the distributions, with torch.distributions.utils' names: broadcasting
parameters, moving between probabilities and logits without producing infinities, packing the
lower triangle of matrices into vectors, and ``lazy_property`` for parameters computed on first use."""
from __future__ import annotations

import numpy as np

from ..frontend import dtypes as _dt
from ..frontend.factories import tensor
from ..frontend.tensor import Tensor


def finfo_eps(dtype) -> float:
    """Machine epsilon of a floating dtype (numpy's finfo; bfloat16 has 8 mantissa bits)."""
    return 2.0 ** -7 if dtype == _dt.bfloat16 else float(np.finfo(dtype.name).eps)


def finfo_tiny(dtype) -> float:
    """The smallest positive normal value of a floating dtype (bfloat16 shares float32's exponent)."""
    return 2.0 ** -126 if dtype == _dt.bfloat16 else float(np.finfo(dtype.name).tiny)


def finfo_min(dtype) -> float:
    """The most negative finite value of a floating dtype."""
    return -3.3895313892515355e38 if dtype == _dt.bfloat16 else float(np.finfo(dtype.name).min)


def broadcast_all(*values):
    """Tensors broadcast to one shape; Python numbers become tensors of the others' dtype and device
    (the default dtype when every value is a number)."""
    tensors = [value for value in values if isinstance(value, Tensor)]
    if not tensors and not all(isinstance(value, (int, float)) for value in values):
        raise ValueError("Input arguments must all be instances of numbers.Number or Tensor.")
    if tensors:
        from ..frontend.ops._common import check_same_device

        # Mixed devices would otherwise surface later, inside some kernel.
        check_same_device("broadcast_all", *tensors)
    like = tensors[0] if tensors else None
    made = [value if isinstance(value, Tensor) else
            tensor(float(value), dtype=like.dtype if like is not None and like.dtype.is_floating_point else None,
                   device=like.device if like is not None else None)
            for value in values]
    from ..frontend.views import broadcast_tensors

    return broadcast_tensors(*made)


def clamp_inside_unit(value: Tensor) -> Tensor:
    """value kept inside [tiny, 1 - eps] of its dtype: off 0 and 1, so that log(value) and log(1 - value)
    stay finite."""
    return value.clamp(min=finfo_tiny(value.dtype), max=1 - finfo_eps(value.dtype))


def clamp_probs(probs: Tensor) -> Tensor:
    """Probabilities kept inside (eps, 1 - eps), so that their logarithms stay finite."""
    eps = finfo_eps(probs.dtype)
    return probs.clamp(min=eps, max=1 - eps)


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    """Softmax over the last dimension, or the sigmoid for a binary (Bernoulli) logit."""
    from ..nn import functional as F

    return logits.sigmoid() if is_binary else F.softmax(logits, dim=-1)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    """log(p), or log(p) - log(1 - p) for a binary probability, of clamped probabilities."""
    clamped = clamp_probs(probs)
    return clamped.log() - (-clamped).log1p() if is_binary else clamped.log()


# Euler-Mascheroni constant (the mean of a standard Gumbel draw).
euler_constant = 0.5772156649015329


def log_beta(a: Tensor, b: Tensor) -> Tensor:
    """log B(a, b) = log Gamma(a) + log Gamma(b) - log Gamma(a + b), the Beta family's normalizer."""
    return a.lgamma() + b.lgamma() - (a + b).lgamma()


class lazy_property:  # noqa: N801  (PyTorch's name)
    """A property computed on first access and then stored on the instance, so later reads cost
    nothing (distributions use it for probs computed from logits, and the reverse)."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__
        self.__name__ = wrapped.__name__

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


def _lower_count(size: int, diag: int) -> int:
    """How many entries of a size x size matrix lie on or below diagonal `diag`."""
    return sum(max(0, min(size, row + diag + 1)) for row in range(size))


def vec_to_tril_matrix(vec: Tensor, diag: int = 0) -> Tensor:
    """The matrices whose entries on or below diagonal `diag` are vec's last dimension, row by row."""
    from ..frontend.factories import zeros
    from ..frontend.index_factories import tril_indices

    count = vec.shape[-1]
    size = 1
    while _lower_count(size, diag) < count:
        size += 1
    if _lower_count(size, diag) != count:
        raise ValueError(f"The size of last dimension is {count} which cannot be expressed as the lower "
                         "triangular part of a square D x D matrix.")
    rows, cols = tril_indices(size, size, diag, device=vec.device)
    matrix = zeros(tuple(vec.shape[:-1]) + (size, size), dtype=vec.dtype, device=vec.device)
    matrix[..., rows, cols] = vec
    return matrix


def tril_matrix_to_vec(mat: Tensor, diag: int = 0) -> Tensor:
    """The entries of mat on or below diagonal `diag`, row by row, as its last dimension."""
    from ..frontend.index_factories import tril_indices

    size = mat.shape[-1]
    rows, cols = tril_indices(size, size, diag, device=mat.device)
    return mat[..., rows, cols]
