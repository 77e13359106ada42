"""Drawing category indices from weights: ``multinomial``, composite over the uniform random
primitive, so it uses tensorplug's generators (``manual_seed`` makes it reproducible, and the
same seed draws the same indices on every device).

With replacement, each draw is an inverse-CDF lookup: the first category whose cumulative
weight reaches ``u * total`` for a uniform ``u`` in (0, 1] (``searchsorted`` on the cumulative
weights, so a zero-weight category is never drawn). Without replacement, PyTorch's method:
divide each weight by an Exp(1) draw and keep the ``num_samples`` largest keys (the
exponential race gives the order in which categories would be drawn one at a time).
"""
from __future__ import annotations

import operator

from .. import dtypes as _dt
from ..meta_device import has_values
from ..tensor import Tensor
from ._common import write_out
from .out_rehearsal import rehearse_out

__all__ = ["multinomial"]

MAX_CATEGORIES = 1 << 24


def _uniform(shape: tuple, like: Tensor, generator) -> Tensor:
    from ..factories import uniform_
    from ..tensor import empty_tensor

    # Draws in at least float32: float16 would round many draws to the same value.
    dtype = _dt.float64 if like._dtype is _dt.float64 else _dt.float32
    return uniform_(empty_tensor(shape, dtype, like._device), generator=generator)


def _with_replacement(probs: Tensor, num_samples: int, generator) -> Tensor:
    from .searching import searchsorted

    cumulative = probs.cumsum(-1)
    total = cumulative[:, -1:]
    draws = (1 - _uniform((probs._shape[0], num_samples), cumulative, generator)) * total
    # Rounding can leave the last cumulative weight a hair below a draw of exactly u = 1.
    return searchsorted(cumulative, draws).clamp_max(probs._shape[1] - 1)


def _without_replacement(probs: Tensor, num_samples: int, generator) -> Tensor:
    from .elementwise import where

    exponential = -(1 - _uniform(probs._shape, probs, generator)).log()  # Exp(1): 1 - u lies in (0, 1]
    # A zero weight keeps key -1 (last) even when its exponential draw is exactly 0 (0 / 0).
    keys = where(probs > 0, probs.to(exponential._dtype) / exponential, -1.0)
    return keys.topk(num_samples, -1).indices


def _check(input, num_samples: int) -> None:
    if not isinstance(input, Tensor):
        raise TypeError(f"multinomial(): argument 'input' must be Tensor, not {type(input).__name__}")
    if not input._dtype.is_floating_point:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: {input._dtype.name}")
    if input.ndim not in (1, 2):
        raise RuntimeError(f"multinomial(): prob_dist must be 1 or 2 dim (got {input.ndim} dims)")
    if num_samples <= 0:
        raise RuntimeError(f"multinomial(): cannot sample n_sample <= 0 samples (got {num_samples})")
    if input._shape[-1] > MAX_CATEGORIES:
        raise RuntimeError(f"multinomial(): number of categories cannot exceed 2^24 (got {input._shape[-1]})")


def multinomial(input, num_samples, replacement=False, *, generator=None, out=None) -> Tensor:
    """``num_samples`` category indices per row of ``input`` (1-D, or 2-D: one row per
    distribution), drawn with probabilities proportional to the row's non-negative weights;
    ``replacement=False`` never draws a category twice in a row. int64 results.

    >>> g = tp.Generator().manual_seed(0)
    >>> tp.multinomial(tp.tensor([0.0, 1.0, 0.0]), 2, replacement=True, generator=g).tolist()
    [1, 1]
    """
    if out is not None:
        rehearse_out(multinomial, locals())
    num_samples = operator.index(num_samples)
    _check(input, num_samples)
    if generator is not None and generator.device.type != input._device.type:
        raise RuntimeError(f"multinomial(): expected a '{input._device.type}' generator, got one for "
                           f"'{generator.device.type}'")
    categories = input._shape[-1]
    if not replacement and num_samples > categories:
        raise RuntimeError(f"multinomial(): cannot sample n_sample > prob_dist.size(-1) samples without replacement "
                           f"({num_samples} > {categories})")
    from ..autograd import no_grad

    if categories == 0:
        raise RuntimeError("multinomial(): invalid multinomial distribution (sum of probabilities <= 0)")
    with no_grad():
        probs = input.reshape(-1, categories)
        if probs.numel() and has_values(probs):  # meta probabilities have no values to check
            # One read-back covers both checks, as PyTorch's CPU kernel makes them.
            from .elementwise import UNARY

            bad = ((probs < 0) | ~UNARY["isfinite"](probs)).any()
            smallest_total = probs.sum(-1).min()
            if bool(bad.item()):
                raise RuntimeError("multinomial(): probability tensor contains either `inf`, `nan` or element < 0")
            if float(smallest_total.item()) <= 0:
                raise RuntimeError("multinomial(): invalid multinomial distribution (sum of probabilities <= 0)")
        if probs._shape[0] == 0:
            from ..factories import empty

            result = empty(0, num_samples, dtype=_dt.int64, device=input._device)
        elif replacement:
            result = _with_replacement(probs, num_samples, generator)
        else:
            result = _without_replacement(probs, num_samples, generator)
    if input.ndim == 1:
        result = result.reshape(num_samples)
    return write_out("multinomial", out, result, exact_dtype=True)  # int64 only, as PyTorch


#: Tensor methods this module provides: name -> function (attached by frontend.methods).
TENSOR_METHODS: dict = {"multinomial": multinomial}
