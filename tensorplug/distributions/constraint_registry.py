"""``biject_to`` and ``transform_to``: the transform that carries unconstrained real values into
a constraint's set, as torch.distributions.constraint_registry (what variational inference uses
to optimise a positive or simplex-valued parameter through an unconstrained one).

``biject_to(c)`` is a bijection (so log_abs_det_jacobian is defined and the inverse is exact);
``transform_to(c)`` need only land inside c (the simplex through a softmax, Cholesky factors
through an exponentiated diagonal, covariance matrices as L L^T of those). Both are registries:
``register(ConstraintType, factory)`` adds a constraint kind, looked up by the constraint's exact type.

>>> from tensorplug.distributions import constraints
>>> biject_to(constraints.unit_interval)
SigmoidTransform()
"""
from __future__ import annotations

from . import constraints
from .structured_transforms import (CatTransform, CorrCholeskyTransform, IndependentTransform, LowerCholeskyTransform,
                                    PositiveDefiniteTransform, SoftmaxTransform, StackTransform, StickBreakingTransform)
from .transforms import AffineTransform, ComposeTransform, ExpTransform, SigmoidTransform, Transform, identity_transform

__all__ = ["ConstraintRegistry", "biject_to", "transform_to"]


class ConstraintRegistry:
    """Constraint type -> factory(constraint) -> Transform."""

    def __init__(self):
        self._registry = {}

    def register(self, constraint, factory=None):
        """Register ``factory`` for a Constraint subclass (or an instance's type); without a
        factory, a decorator."""
        if factory is None:
            return lambda fn: self.register(constraint, fn)
        kind = constraint if isinstance(constraint, type) else type(constraint)
        if not issubclass(kind, constraints.Constraint):
            raise TypeError(f"Expected constraint to be either a Constraint subclass or instance, but got {constraint}")
        self._registry[kind] = factory
        return factory

    def __call__(self, constraint) -> Transform:
        """The registered transform into ``constraint``; NotImplementedError for an unknown kind."""
        factory = self._registry.get(type(constraint))
        if factory is None:
            raise NotImplementedError(f"Cannot transform {type(constraint).__name__} constraints")
        return factory(constraint)


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()


def _to_real(constraint):
    return identity_transform


def _to_independent(registry):
    def factory(constraint):
        inner = registry(constraint.base_constraint)
        return IndependentTransform(inner, constraint.reinterpreted_batch_ndims)
    return factory


def _to_slices(registry):
    def for_cat(constraint):
        return CatTransform([registry(c) for c in constraint.cseq], constraint.dim, constraint.lengths)

    def for_stack(constraint):
        return StackTransform([registry(c) for c in constraint.cseq], constraint.dim)

    return for_cat, for_stack


def _above(constraint):
    # x -> lower_bound + exp(x); PyTorch composes even for a bound of 0.
    return ComposeTransform([ExpTransform(), AffineTransform(constraint.lower_bound, 1)])


def _below(constraint):
    return ComposeTransform([ExpTransform(), AffineTransform(constraint.upper_bound, -1)])


def _between(constraint):
    low, high = constraint.lower_bound, constraint.upper_bound
    unit = isinstance(low, (int, float)) and low == 0 and isinstance(high, (int, float)) and high == 1
    if unit:
        return SigmoidTransform()
    return ComposeTransform([SigmoidTransform(), AffineTransform(low, high - low)])


for _registry in (biject_to, transform_to):
    _registry.register(constraints.Real, _to_real)
    _registry.register(constraints.IndependentConstraint, _to_independent(_registry))
    _registry.register(constraints.GreaterThan, _above)
    _registry.register(constraints.GreaterThanEq, _above)
    _registry.register(constraints.LessThan, _below)
    _registry.register(constraints.Interval, _between)
    _registry.register(constraints.HalfOpenInterval, _between)
    _registry.register(constraints.Cat, _to_slices(_registry)[0])
    _registry.register(constraints.Stack, _to_slices(_registry)[1])

biject_to.register(constraints.Simplex, lambda constraint: StickBreakingTransform())
for _registry in (biject_to, transform_to):
    _registry.register(constraints.CorrCholesky, lambda constraint: CorrCholeskyTransform())
transform_to.register(constraints.Simplex, lambda constraint: SoftmaxTransform())
transform_to.register(constraints.LowerCholesky, lambda constraint: LowerCholeskyTransform())
transform_to.register(constraints.PositiveDefinite, lambda constraint: PositiveDefiniteTransform())
