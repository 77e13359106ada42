"""Top-level samplers: ``normal`` (tensor means and deviations), ``poisson`` and ``binomial``.

All draw from tensorplug's generators through the ``uniform_``/``normal_`` primitives, so a
seed reproduces them on every backend. Poisson and binomial counts use the classical exact
methods: inversion (walking the cumulative distribution) for small means, and Hormann's
transformed rejection with squeeze (PTRS for Poisson, BTRS for binomial, 1993) otherwise. Each
round draws for every element still pending; rejection rounds repeat only for the few rejected.
"""
from __future__ import annotations

from . import dtypes as _dt
from .autograd import no_grad
from .factories import empty, randn, rand_like
from .ops._common import check_same_device, is_number, write_out
from .ops.elementwise import UNARY, where
from .ops.special_functions import lgamma
from .shapes import broadcast_shapes, check_shape
from .tensor import Tensor
from .ops.out_rehearsal import rehearse_out

__all__ = ["normal", "poisson", "binomial"]

_INVERSION_LIMIT = 10.0  # below this mean, inversion needs few steps; above it, rejection


def normal(mean, std=1.0, size=None, *, generator=None, out=None, dtype=None, layout=None, device=None,
           pin_memory=False, requires_grad=False) -> Tensor:
    """Normal samples with the given means and standard deviations (tensors broadcast, or
    numbers with ``size``). As in PyTorch, the result passes no gradient to ``mean`` or ``std``.

    >>> tp.normal(tp.zeros(3), 1.0).shape
    (3,)
    """
    if out is not None:
        rehearse_out(normal, locals())
    tensors = [x for x in (mean, std) if isinstance(x, Tensor)]
    for name, x in (("mean", mean), ("std", std)):
        if not isinstance(x, Tensor) and not is_number(x):
            raise TypeError(f"normal(): argument '{name}' must be Tensor or float, not {type(x).__name__}")
    if not tensors:
        if size is None:
            raise TypeError("normal(): with a float mean and std, 'size' is required")
        if std < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
        shape = check_shape("normal", (size,) if isinstance(size, int) else tuple(size))
        sample = randn(*shape, generator=generator, dtype=dtype, device=device) * std + mean
        return write_out("normal", out, sample.requires_grad_(requires_grad) if requires_grad else sample)
    if size is not None:
        raise RuntimeError("normal(): 'size' is only for float mean and std; the tensors give the shape")
    check_same_device("normal", *tensors)
    for t in tensors:
        if not t._dtype.is_floating_point:
            raise NotImplementedError(f"normal(): not implemented for '{t._dtype.name}' (floating tensors only)")
    if isinstance(std, Tensor):
        if std.numel() and (std < 0).any().item():
            raise RuntimeError("normal expects all elements of std >= 0.0")
    elif std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    shape = broadcast_shapes(*(t._shape for t in tensors), op="normal")
    result_dtype = tensors[0]._dtype if len(tensors) == 1 else _dt.promote_types(tensors[0]._dtype, tensors[1]._dtype)
    with no_grad():
        z = randn(*shape, generator=generator, dtype=result_dtype, device=tensors[0]._device)
        sample = z * std + mean
    if any(t.requires_grad for t in tensors):
        # A graph node with zero gradients, as PyTorch's (its normal has no derivative).
        sample = where(sample == sample, sample, sum(t.sum() for t in tensors) * 0)
    return write_out("normal", out, sample)


def _check_rates(op: str, name: str, t) -> None:
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(t).__name__}")
    if not t._dtype.is_floating_point:
        raise NotImplementedError(f"{op}(): not implemented for '{t._dtype.name}' (floating tensors only)")


def _fill_by_rejection(shape, dtype, dev, propose):
    """Round after round, ``propose(pending) -> (accepted, values)`` for every element still
    pending, until none is; the accepted values are kept."""
    from .factories import zeros

    result = zeros(shape, dtype=dtype, device=dev)
    pending = zeros(shape, dtype=_dt.bool, device=dev) == 0
    while pending.any().item():
        accepted, values = propose(pending)
        taken = pending & accepted
        result = where(taken, values, result)
        pending = pending & ~taken
    return result


def _poisson_inversion(rate: Tensor, generator) -> Tensor:
    """Walk the cumulative distribution until it passes a uniform draw (mean < 10)."""
    u = rand_like(rate, generator=generator)
    k = rate * 0
    term = UNARY["exp"](-rate)
    cumulative = term
    pending = u > cumulative
    while pending.any().item():
        k = where(pending, k + 1, k)
        term = where(pending, term * rate / k, term)
        cumulative = where(pending, cumulative + term, cumulative)
        # Rounding can leave the sum a hair below 1: stop once the terms stop adding anything.
        pending = pending & (u > cumulative) & (term > 0)
    return k


def _poisson_rejection(rate: Tensor, generator) -> Tensor:
    """PTRS (Hormann 1993) for means of at least 10."""
    rate = where(rate >= _INVERSION_LIMIT, rate, _INVERSION_LIMIT)
    root = UNARY["sqrt"](rate)
    log_rate = UNARY["log"](rate)
    b = 0.931 + 2.53 * root
    a = -0.059 + 0.02483 * b
    inverse_alpha = 1.1239 + 1.1328 / (b - 3.4)
    vr = 0.9277 - 3.6224 / (b - 2)

    def propose(pending):
        u = rand_like(rate, generator=generator) - 0.5
        v = rand_like(rate, generator=generator)
        us = 0.5 - UNARY["abs"](u)
        k = UNARY["floor"]((2 * a / us + b) * u + rate + 0.43)
        quick = (us >= 0.07) & (v <= vr)
        possible = (k >= 0) & ~((us < 0.013) & (v > us))
        safe_k = where(k >= 0, k, 0.0)
        bound = -rate + safe_k * log_rate - lgamma(safe_k + 1)
        exact = UNARY["log"](v * inverse_alpha / (a / (us * us) + b)) <= bound
        return quick | (possible & exact), k

    return _fill_by_rejection(rate._shape, rate._dtype, rate._device, propose)


def poisson(input, generator=None) -> Tensor:
    """Poisson counts with the rates in ``input`` (floating, non-negative), as floats of its
    dtype.

    >>> tp.poisson(tp.zeros(2)).tolist()
    [0.0, 0.0]
    """
    _check_rates("poisson", "input", input)
    with no_grad():
        if input.numel() and ((input < 0) | UNARY["isnan"](input)).any().item():
            raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
        if input.numel() == 0:
            return input.clone()
        rate = input.detach()
        small = rate < _INVERSION_LIMIT
        result = _poisson_inversion(where(small, rate, 0.0), generator)
        if not small.all().item():
            result = where(small, result, _poisson_rejection(rate, generator))
    return result


def _binomial_inversion(n: Tensor, p: Tensor, generator) -> Tensor:
    """Walk the cumulative distribution (n * p < 10, p <= 1/2)."""
    u = rand_like(p, generator=generator)
    q = 1 - p
    k = p * 0
    term = UNARY["exp"](n * UNARY["log1p"](-p))  # q ** n
    cumulative = term
    pending = (u > cumulative) & (k < n)
    ratio = p / q
    while pending.any().item():
        k = where(pending, k + 1, k)
        term = where(pending, term * ratio * (n - k + 1) / k, term)
        cumulative = where(pending, cumulative + term, cumulative)
        pending = pending & (u > cumulative) & (k < n) & (term > 0)
    return k


def _binomial_rejection(n: Tensor, p: Tensor, generator) -> Tensor:
    """BTRS (Hormann 1993) for n * p >= 10, p <= 1/2."""
    q = 1 - p
    spq = UNARY["sqrt"](n * p * q)
    b = 1.15 + 2.53 * spq
    a = -0.0873 + 0.0248 * b + 0.01 * p
    c = n * p + 0.5
    vr = 0.92 - 4.2 / b
    alpha = (2.83 + 5.1 / b) * spq
    log_odds = UNARY["log"](p / q)
    m = UNARY["floor"]((n + 1) * p)
    h = lgamma(m + 1) + lgamma(n - m + 1)

    def propose(pending):
        u = rand_like(p, generator=generator) - 0.5
        v = rand_like(p, generator=generator)
        us = 0.5 - UNARY["abs"](u)
        k = UNARY["floor"]((2 * a / us + b) * u + c)
        inside = (k >= 0) & (k <= n)
        quick = inside & (us >= 0.07) & (v <= vr)
        safe_k = where(inside, k, 0.0)
        bound = h - lgamma(safe_k + 1) - lgamma(n - safe_k + 1) + (safe_k - m) * log_odds
        exact = inside & (UNARY["log"](v * alpha / (a / (us * us) + b)) <= bound)
        return quick | exact, k

    return _fill_by_rejection(p._shape, p._dtype, p._device, propose)


def binomial(count, prob, generator=None) -> Tensor:
    """Binomial counts of successes in ``count`` trials of probability ``prob`` (floating
    tensors of one dtype, broadcast), as floats.

    >>> tp.binomial(tp.tensor([5.0]), tp.tensor([1.0])).tolist()
    [5.0]
    """
    if isinstance(count, Tensor) and not count._dtype.is_floating_point:
        raise ValueError(f"binomial only supports floating-point dtypes for count, got: {count._dtype.name}")
    _check_rates("binomial", "count", count)
    _check_rates("binomial", "prob", prob)
    check_same_device("binomial", count, prob)
    if count._dtype is not prob._dtype:
        raise RuntimeError(f"Found dtype {prob._dtype.name} but expected {count._dtype.name}")
    shape = broadcast_shapes(count._shape, prob._shape, op="binomial")
    with no_grad():
        n, p = count.detach().expand(*shape), prob.detach().expand(*shape)
        if n.numel() and ((n < 0) | (p < 0) | (p > 1) | UNARY["isnan"](p)).any().item():
            raise RuntimeError("binomial(): expected count >= 0 and 0 <= prob <= 1")
        if n.numel() == 0:
            return empty(shape, dtype=count._dtype, device=count._device)
        n = UNARY["floor"](n)
        flipped = p > 0.5
        small_p = where(flipped, 1 - p, p)  # sample the rarer outcome, then flip back
        small = n * small_p < _INVERSION_LIMIT
        result = _binomial_inversion(n, where(small, small_p, 0.0), generator)
        if not small.all().item():
            safe_n = where(small, 100.0, n)
            safe_p = where(small, 0.5, small_p)
            result = where(small, result, _binomial_rejection(safe_n, safe_p, generator))
        result = where(small_p == 0, 0.0, result)
        return where(flipped, n - result, result)
