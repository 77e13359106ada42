"""Invertible maps between spaces, with the log |det J| that a change of variables needs:
ExpTransform, AffineTransform, SigmoidTransform, TanhTransform, SoftplusTransform, PowerTransform,
AbsTransform and ComposeTransform, as torch.distributions.transforms (importable as
``tp.distributions.transforms``; the transforms over vectors and matrices are in
structured_transforms.py).

A transform's ``domain`` and ``codomain`` are constraints (tp.distributions.constraints); how many
rightmost dimensions its Jacobian couples is also kept as ``domain_event_dim`` and
``codomain_event_dim`` (PyTorch's ``domain.event_dim`` and ``codomain.event_dim``).
"""
from __future__ import annotations

import math

from ..frontend.tensor import Tensor
from ..nn import functional as F
from . import constraints
from .utils import finfo_eps, finfo_tiny

__all__ = [
    "AbsTransform", "AffineTransform", "CatTransform", "ComposeTransform", "CorrCholeskyTransform",
    "CumulativeDistributionTransform", "ExpTransform", "IndependentTransform", "LowerCholeskyTransform",
    "PositiveDefiniteTransform", "PowerTransform", "ReshapeTransform", "SigmoidTransform",
    "SoftmaxTransform", "SoftplusTransform", "StackTransform", "StickBreakingTransform", "TanhTransform",
    "Transform", "identity_transform",
]


def sum_rightmost(value, dims: int):
    """value summed over its last `dims` dimensions (unchanged for 0 or a Python number)."""
    if dims <= 0 or not isinstance(value, Tensor):
        return value
    return value.reshape(tuple(value.shape[:value.dim() - dims]) + (-1,)).sum(-1)


def _sign_of(factor):
    """The sign of a number or, elementwise, of a tensor (the ``sign`` of a map that scales by it)."""
    if isinstance(factor, (int, float)):
        return 1 if factor > 0 else -1 if factor < 0 else 0
    return factor.sign()


def _same_value(mine, theirs) -> bool:
    """Whether two parameters, numbers or tensors, are equal (for a transform's ==)."""
    if isinstance(mine, Tensor) or isinstance(theirs, Tensor):
        return mine is theirs or bool((mine == theirs).all())
    return mine == theirs


class Transform:
    """An invertible map ``y = t(x)``: subclasses give ``_call``, ``_inverse`` and
    ``log_abs_det_jacobian``. With ``cache_size=1`` the last (x, y) pair is remembered, so that
    inverting a value the transform just produced returns the exact x (what SAC's tanh needs)."""

    bijective = True
    sign = 1
    domain_event_dim = 0
    codomain_event_dim = 0

    def __init__(self, cache_size: int = 0):
        if cache_size not in (0, 1):
            raise ValueError(f"cache_size must be 0 or 1, got {cache_size!r}")
        self._cache_size = cache_size
        self._cached = None  # (x, y) of the last call, when caching

    @property
    def event_dim(self) -> int:
        return max(self.domain_event_dim, self.codomain_event_dim)

    @property
    def domain(self) -> constraints.Constraint:
        """The constraint inputs satisfy (the real numbers, over domain_event_dim dimensions)."""
        return _over_event_dims(self._domain_per_element(), self.domain_event_dim)

    @property
    def codomain(self) -> constraints.Constraint:
        """The constraint outputs satisfy."""
        return _over_event_dims(self._codomain_per_element(), self.codomain_event_dim)

    def _domain_per_element(self) -> constraints.Constraint:
        return constraints.real

    def _codomain_per_element(self) -> constraints.Constraint:
        return constraints.real

    @property
    def inv(self) -> "Transform":
        """The inverse transform (it shares this one's cache)."""
        return _InverseTransform(self)

    def with_cache(self, cache_size: int = 1) -> "Transform":
        """This transform with the given cache size."""
        if cache_size == self._cache_size:
            return self
        raise NotImplementedError(f"{type(self).__name__}.with_cache is not implemented")

    def __call__(self, x):
        if self._cached is not None and self._cached[0] is x:
            return self._cached[1]
        y = self._call(x)
        if self._cache_size:
            self._cached = (x, y)
        return y

    def _inv_call(self, y):
        if self._cached is not None and self._cached[1] is y:
            return self._cached[0]
        x = self._inverse(y)
        if self._cache_size:
            self._cached = (x, y)
        return x

    def _call(self, x):
        raise NotImplementedError(f"{type(self).__name__} does not implement the forward map")

    def _inverse(self, y):
        raise NotImplementedError(f"{type(self).__name__} does not implement the inverse map")

    def log_abs_det_jacobian(self, x, y):
        """log |dy/dx| at the pair (x, y = t(x))."""
        raise NotImplementedError(f"{type(self).__name__} does not implement log_abs_det_jacobian")

    def forward_shape(self, shape) -> tuple:
        return tuple(shape)

    def inverse_shape(self, shape) -> tuple:
        return tuple(shape)

    def __eq__(self, other) -> bool:
        # Two transforms of one parameterless kind are the same map (KL of transformed pairs asks).
        return type(self) is type(other) and self._same_parameters(other)

    def _same_parameters(self, other) -> bool:
        return True

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def _over_event_dims(constraint, event_dim: int):
    """`constraint` made to span event_dim dimensions, as independent() does."""
    extra = event_dim - constraint.event_dim
    return constraints.independent(constraint, extra) if extra > 0 else constraint


class _InverseTransform(Transform):
    """The inverse of a transform, built by ``Transform.inv``."""

    def __init__(self, transform: Transform):
        super().__init__(transform._cache_size)
        self._inv = transform

    @property
    def sign(self):
        return self._inv.sign

    @property
    def domain_event_dim(self):
        return self._inv.codomain_event_dim

    @property
    def codomain_event_dim(self):
        return self._inv.domain_event_dim

    @property
    def inv(self):
        return self._inv

    def _same_parameters(self, other) -> bool:
        return self._inv == other._inv

    @property
    def domain(self):
        return self._inv.codomain

    @property
    def codomain(self):
        return self._inv.domain

    def __call__(self, x):
        return self._inv._inv_call(x)

    def _inv_call(self, y):
        return self._inv(y)

    def log_abs_det_jacobian(self, x, y):
        return -self._inv.log_abs_det_jacobian(y, x)

    def __repr__(self) -> str:
        return f"_InverseTransform({self._inv!r})"


class ExpTransform(Transform):
    """y = exp(x)."""

    def _codomain_per_element(self):
        return constraints.positive

    def _call(self, x):
        return x.exp()

    def _inverse(self, y):
        return y.log()

    def log_abs_det_jacobian(self, x, y):
        return x


class AffineTransform(Transform):
    """y = loc + scale * x, over events of ``event_dim`` rightmost dimensions."""

    def __init__(self, loc, scale, event_dim: int = 0, cache_size: int = 0):
        super().__init__(cache_size)
        self.loc, self.scale = loc, scale
        self._event_dim = event_dim

    @property
    def domain_event_dim(self):
        return self._event_dim

    @property
    def codomain_event_dim(self):
        return self._event_dim

    @property
    def sign(self):
        return _sign_of(self.scale)

    def _same_parameters(self, other) -> bool:
        return (self._event_dim == other._event_dim and _same_value(self.loc, other.loc)
                and _same_value(self.scale, other.scale))

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        if isinstance(self.scale, (int, float)):
            result = x.new_full(tuple(x.shape), math.log(abs(self.scale)))
        else:
            result = self.scale.abs().log().expand(tuple(x.shape)) if tuple(self.scale.shape) != tuple(x.shape) \
                else self.scale.abs().log()
        return sum_rightmost(result, self._event_dim)

    def forward_shape(self, shape) -> tuple:
        from ..frontend.shapes import broadcast_shapes

        return tuple(broadcast_shapes(tuple(shape), *(tuple(p.shape) for p in (self.loc, self.scale)
                                                      if isinstance(p, Tensor))))

    inverse_shape = forward_shape


class AbsTransform(Transform):
    """y = |x| (not invertible: the inverse returns the non-negative preimage)."""

    bijective = False

    def _codomain_per_element(self):
        return constraints.positive

    def _call(self, x):
        return x.abs()

    def _inverse(self, y):
        return y


class PowerTransform(Transform):
    """y = x ** exponent, on positive values."""

    def __init__(self, exponent, cache_size: int = 0):
        super().__init__(cache_size)
        self.exponent = exponent

    def _domain_per_element(self):
        return constraints.positive

    def _codomain_per_element(self):
        return constraints.positive

    @property
    def sign(self):
        return _sign_of(self.exponent)

    def _same_parameters(self, other) -> bool:
        return _same_value(self.exponent, other.exponent)

    def _call(self, x):
        return x.pow(self.exponent)

    def _inverse(self, y):
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x, y):
        return (self.exponent * y / x).abs().log()

    def forward_shape(self, shape) -> tuple:
        from ..frontend.shapes import broadcast_shapes

        exponent_shape = tuple(self.exponent.shape) if isinstance(self.exponent, Tensor) else ()
        return tuple(broadcast_shapes(tuple(shape), exponent_shape))

    inverse_shape = forward_shape


class SoftplusTransform(Transform):
    """y = log(1 + exp(x)); the inverse log(exp(y) - 1) is written y + log(-expm1(-y)), which
    neither overflows for large y nor cancels for small y."""

    def _codomain_per_element(self):
        return constraints.positive

    def _call(self, x):
        return F.softplus(x)

    def _inverse(self, y):
        return y + (-(-y).expm1()).log()

    def log_abs_det_jacobian(self, x, y):
        return -F.softplus(-x)


def _squash_into_unit_interval(value):
    """Keep a probability strictly inside (0, 1) in its dtype, so logit and log stay finite."""
    return value.clamp(min=finfo_tiny(value.dtype), max=1 - finfo_eps(value.dtype))


class SigmoidTransform(Transform):
    """y = 1 / (1 + exp(-x)), kept strictly inside (0, 1)."""

    def _codomain_per_element(self):
        return constraints.unit_interval

    def _call(self, x):
        return _squash_into_unit_interval(x.sigmoid())

    def _inverse(self, y):
        y = _squash_into_unit_interval(y)
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x, y):
        return -F.softplus(-x) - F.softplus(x)


class TanhTransform(Transform):
    """y = tanh(x); log |det J| is computed as 2 (log 2 - x - softplus(-2x)), which stays finite
    where 1 - tanh(x)^2 rounds to 0 (large |x|, as squashed Gaussian policies reach)."""

    def _codomain_per_element(self):
        return constraints.interval(-1.0, 1.0)

    def _call(self, x):
        return x.tanh()

    def _inverse(self, y):
        return y.atanh()

    def log_abs_det_jacobian(self, x, y):
        return 2.0 * (math.log(2.0) - x - F.softplus(-2.0 * x))


class ComposeTransform(Transform):
    """The transforms in ``parts`` applied in order (an empty list is the identity)."""

    def __init__(self, parts: list, cache_size: int = 0):
        super().__init__(cache_size)
        self.parts = list(parts)

    @property
    def domain_event_dim(self):
        return max((p.domain_event_dim for p in self.parts), default=0)

    @property
    def codomain_event_dim(self):
        return max((p.codomain_event_dim for p in self.parts), default=0)

    @property
    def domain(self):
        if not self.parts:
            return constraints.real
        return _over_event_dims(self.parts[0].domain, self.domain_event_dim)

    @property
    def codomain(self):
        if not self.parts:
            return constraints.real
        return _over_event_dims(self.parts[-1].codomain, self.codomain_event_dim)

    @property
    def sign(self):
        sign = 1
        for part in self.parts:
            sign = sign * part.sign
        return sign

    @property
    def inv(self):
        return ComposeTransform([part.inv for part in reversed(self.parts)])

    def _same_parameters(self, other) -> bool:
        return self.parts == other.parts

    def _call(self, x):
        for part in self.parts:
            x = part(x)
        return x

    def _inverse(self, y):
        for part in reversed(self.parts):
            y = part.inv(y)
        return y

    def log_abs_det_jacobian(self, x, y):
        if not self.parts:
            return x.new_zeros(tuple(x.shape)) if isinstance(x, Tensor) else 0.0
        total = 0
        for index, part in enumerate(self.parts):
            # The last part's output is y itself, so its cached inverse matches.
            following = y if index == len(self.parts) - 1 else part(x)
            total = total + sum_rightmost(part.log_abs_det_jacobian(x, following),
                                          self.domain_event_dim - part.domain_event_dim)
            x = following
        return total

    def forward_shape(self, shape) -> tuple:
        for part in self.parts:
            shape = part.forward_shape(shape)
        return tuple(shape)

    def inverse_shape(self, shape) -> tuple:
        for part in reversed(self.parts):
            shape = part.inverse_shape(shape)
        return tuple(shape)

    def __repr__(self) -> str:
        inner = ",\n    ".join(repr(part) for part in self.parts)
        return f"ComposeTransform(\n    {inner}\n)"


# The identity map (an empty composition), as PyTorch names it.
identity_transform = ComposeTransform([])

# The transforms over vectors and matrices live in their own module; importable from here too, as
# in PyTorch (that module needs Transform above, so it comes last).
from .structured_transforms import (CatTransform, CorrCholeskyTransform, CumulativeDistributionTransform,  # noqa: E402
                                    IndependentTransform, LowerCholeskyTransform, PositiveDefiniteTransform,
                                    ReshapeTransform, SoftmaxTransform, StackTransform, StickBreakingTransform)
