"""``tp.distributions.constraints``: the sets that parameters and samples of distributions live in,
with PyTorch's names (torch.distributions.constraints).

A constraint answers ``check(value)`` with a bool tensor over the value's batch (its last
``event_dim`` dimensions are one event and reduce to one answer), says whether its values are
discrete (``is_discrete``), and prints as PyTorch prints it, since argument checks quote it in
their messages. Lower-case names are the ready-made constraints (``real``, ``positive``, ...) or
the classes that build one from bounds (``interval(0, 1)``, ``independent(real, 1)``).

>>> import tensorplug as tp
>>> positive.check(tp.tensor([1.0, -1.0])).tolist()
[True, False]
"""
from __future__ import annotations

import functools
import operator

from ..frontend.tensor import Tensor

__all__ = [
    "Constraint", "boolean", "cat", "corr_cholesky", "dependent", "dependent_property", "greater_than",
    "greater_than_eq", "independent", "integer_interval", "interval", "half_open_interval", "is_dependent",
    "less_than", "lower_cholesky", "lower_triangular", "MixtureSameFamilyConstraint", "multinomial",
    "nonnegative", "nonnegative_integer", "one_hot", "positive", "positive_semidefinite", "positive_definite",
    "positive_integer", "real", "real_vector", "simplex", "square", "stack", "symmetric", "unit_interval",
]

# How far a simplex's sum, or a correlation factor's row norm, may be from 1 and still count.
_SUM_TOLERANCE = 1e-6


def _is_whole(value: Tensor) -> Tensor:
    """True where a value is an integer (every element of an integer or bool tensor is)."""
    if value.dtype.is_floating_point:
        return value == value.floor()
    return value == value


def _all_over_last(valid: Tensor, dims: int) -> Tensor:
    """`valid` reduced with `all` over its last `dims` dimensions."""
    for _ in range(dims):
        valid = valid.all(-1)
    return valid


class Constraint:
    """A set of values: ``check(value)`` says, per event, whether the value is inside it."""

    is_discrete = False
    event_dim = 0

    def check(self, value: Tensor) -> Tensor:
        """A bool tensor of value's shape without its last ``event_dim`` dimensions."""
        raise NotImplementedError(f"{type(self).__name__} does not implement check")

    def _arguments(self) -> dict:
        """name -> value of what the constraint was built from, as its repr shows them."""
        return {}

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={value}" for name, value in self._arguments().items())
        return f"{type(self).__name__}({shown})"


class Dependent(Constraint):
    """A placeholder for a set that depends on other parameters (Uniform's ``low < high``):
    argument checks skip it, and it cannot check values itself."""

    def __init__(self, *, is_discrete=None, event_dim=None):
        self._is_discrete, self._event_dim = is_discrete, event_dim

    @property
    def is_discrete(self):
        if self._is_discrete is None:
            raise NotImplementedError(".is_discrete cannot be determined statically")
        return self._is_discrete

    @property
    def event_dim(self):
        if self._event_dim is None:
            raise NotImplementedError(".event_dim cannot be determined statically")
        return self._event_dim

    def __call__(self, *, is_discrete=None, event_dim=None) -> "Dependent":
        """A dependent constraint that states whether it is discrete and its event_dim."""
        return Dependent(is_discrete=is_discrete, event_dim=event_dim)

    def check(self, value):
        raise ValueError("Cannot determine validity of dependent constraint")


class DependentProperty(property, Dependent):
    """A property whose value is a constraint computed from the instance (``support`` of Uniform),
    and which, read on the class, is a dependent constraint; use as ``@dependent_property`` or
    ``@dependent_property(is_discrete=..., event_dim=...)``."""

    def __init__(self, fn=None, *, is_discrete=None, event_dim=None):
        property.__init__(self, fn)
        Dependent.__init__(self, is_discrete=is_discrete, event_dim=event_dim)

    def __call__(self, fn) -> "DependentProperty":
        """Decorating a method: the same flags, with fn computing the constraint."""
        return DependentProperty(fn, is_discrete=self._is_discrete, event_dim=self._event_dim)

    def __repr__(self) -> str:
        return "DependentProperty()"


def dependent_property(fn=None, *, is_discrete=None, event_dim=None) -> DependentProperty:
    """Decorator for a constraint-valued property that depends on the instance."""
    return DependentProperty(fn, is_discrete=is_discrete, event_dim=event_dim)


def is_dependent(constraint) -> bool:
    """True for a dependent constraint (argument checks skip those)."""
    return isinstance(constraint, Dependent)


class _Wrapping(Constraint):
    """A constraint built on ``base_constraint``: discrete when it is, with its event dimensions
    and ``_added_event_dims`` more."""

    _added_event_dims = 0

    def __init__(self, base_constraint: Constraint, builder: str):
        if not isinstance(base_constraint, Constraint):
            raise TypeError(f"{builder} expects a Constraint, got {type(base_constraint).__name__}")
        self.base_constraint = base_constraint

    @property
    def is_discrete(self):
        return self.base_constraint.is_discrete

    @property
    def event_dim(self):
        return self.base_constraint.event_dim + self._added_event_dims


class IndependentConstraint(_Wrapping):
    """``base`` with its last ``reinterpreted_batch_ndims`` dimensions made part of each event."""

    def __init__(self, base_constraint: Constraint, reinterpreted_batch_ndims: int):
        super().__init__(base_constraint, "independent")
        if not isinstance(reinterpreted_batch_ndims, int) or reinterpreted_batch_ndims < 0:
            raise ValueError(f"independent expects a non-negative int, got {reinterpreted_batch_ndims!r}")
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    @property
    def _added_event_dims(self):
        return self.reinterpreted_batch_ndims

    def check(self, value):
        valid = self.base_constraint.check(value)
        if valid.dim() < self.reinterpreted_batch_ndims:
            raise ValueError(f"Expected value.dim() >= {self.event_dim} but got {value.dim()}")
        return _all_over_last(valid, self.reinterpreted_batch_ndims)

    def __repr__(self) -> str:
        return f"IndependentConstraint({self.base_constraint!r}, {self.reinterpreted_batch_ndims})"


class MixtureSameFamilyConstraint(_Wrapping):
    """The support of a mixture: a value must lie in every component's support (the components
    are the rightmost batch dimension of ``base_constraint``'s bounds)."""

    def __init__(self, base_constraint: Constraint):
        super().__init__(base_constraint, "MixtureSameFamilyConstraint")

    def check(self, value):
        # The value gets a component dimension, is checked against every component, and must pass all.
        valid = self.base_constraint.check(value.unsqueeze(-1 - self.event_dim))
        return valid.all(-1)

    def __repr__(self) -> str:
        return f"MixtureSameFamilyConstraint({self.base_constraint!r})"


class Boolean(Constraint):
    """The values 0 and 1."""

    is_discrete = True

    def check(self, value):
        return (value == 0) | (value == 1)


class OneHot(Constraint):
    """Vectors of zeros with a single one."""

    is_discrete = True
    event_dim = 1

    def check(self, value):
        binary = ((value == 0) | (value == 1)).all(-1)
        return binary & (value.sum(-1) == 1)


class _Bounded(Constraint):
    """Values above a lower bound, below an upper bound, or between both: the one check behind the
    interval-like constraints. A subclass says how each bound it has compares (strict or not) and,
    by being discrete, that its values must also be whole."""

    # operator.gt or operator.ge where there is a lower bound, operator.lt or operator.le for an upper one.
    _lower_test = None
    _upper_test = None

    def _arguments(self):
        # Only the bounds the subclass takes exist as attributes, and the repr shows exactly those.
        return {name: value for name, value in vars(self).items() if name.endswith("_bound")}

    def check(self, value):
        answers = [_is_whole(value)] if self.is_discrete else []
        if self._lower_test is not None:
            answers.append(self._lower_test(value, self.lower_bound))
        if self._upper_test is not None:
            answers.append(self._upper_test(value, self.upper_bound))
        return functools.reduce(operator.and_, answers)


class _Above(_Bounded):
    """A constraint with a lower bound only."""

    def __init__(self, lower_bound):
        self.lower_bound = lower_bound


class _Below(_Bounded):
    """A constraint with an upper bound only."""

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound


class _Between(_Bounded):
    """A constraint with both bounds."""

    def __init__(self, lower_bound, upper_bound):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound


class IntegerInterval(_Between):
    """Integers in [lower_bound, upper_bound]."""

    is_discrete = True
    _lower_test, _upper_test = operator.ge, operator.le


class IntegerLessThan(_Below):
    """Integers at most upper_bound."""

    is_discrete = True
    _upper_test = operator.le


class IntegerGreaterThan(_Above):
    """Integers at least lower_bound."""

    is_discrete = True
    _lower_test = operator.ge


class Real(Constraint):
    """The extended real line: everything but NaN."""

    def check(self, value):
        return value == value


class GreaterThan(_Above):
    """Values strictly above lower_bound."""

    _lower_test = operator.gt


class GreaterThanEq(_Above):
    """Values at or above lower_bound."""

    _lower_test = operator.ge


class LessThan(_Below):
    """Values strictly below upper_bound."""

    _upper_test = operator.lt


class Interval(_Between):
    """The closed interval [lower_bound, upper_bound]."""

    _lower_test, _upper_test = operator.ge, operator.le


class HalfOpenInterval(Interval):
    """The interval [lower_bound, upper_bound), open at the top."""

    _upper_test = operator.lt


class Simplex(Constraint):
    """Non-negative vectors summing to 1 (within 1e-6)."""

    event_dim = 1

    def check(self, value):
        return (value >= 0).all(-1) & ((value.sum(-1) - 1).abs() < _SUM_TOLERANCE)


class Multinomial(Constraint):
    """Count vectors (non-negative) whose total is at most upper_bound."""

    is_discrete = True
    event_dim = 1

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, value):
        return (value >= 0).all(-1) & (value.sum(-1) <= self.upper_bound)


class LowerTriangular(Constraint):
    """Square matrices with zeros above the diagonal."""

    event_dim = 2

    def check(self, value):
        return _all_over_last(value.tril() == value, 2)


class LowerCholesky(Constraint):
    """Lower-triangular matrices with a positive diagonal (Cholesky factors)."""

    event_dim = 2

    def check(self, value):
        diagonal = value.diagonal(dim1=-2, dim2=-1)
        return _all_over_last(value.tril() == value, 2) & (diagonal > 0).all(-1)


class CorrCholesky(Constraint):
    """Cholesky factors of correlation matrices: lower Cholesky, each row of unit length."""

    event_dim = 2

    def check(self, value):
        row_norms = value.pow(2).sum(-1).sqrt()
        tolerance = 10 * _SUM_TOLERANCE * value.shape[-1]
        unit_rows = ((row_norms - 1).abs() <= tolerance).all(-1)
        return LowerCholesky().check(value) & unit_rows


def _square_answer(value: Tensor, answer: bool) -> Tensor:
    """`answer` for every matrix in value's batch."""
    return value.new_full(tuple(value.shape[:-2]), answer).bool()


class Square(Constraint):
    """Square matrices."""

    event_dim = 2

    def check(self, value):
        return _square_answer(value, value.shape[-2] == value.shape[-1])


class Symmetric(Square):
    """Square matrices equal to their transpose (within 1e-6)."""

    def check(self, value):
        if value.shape[-2] != value.shape[-1]:
            return _square_answer(value, False)
        close = (value - value.mT).abs() <= 1e-6 + 1e-5 * value.mT.abs()
        return _all_over_last(close, 2)


class _EigenvalueBounded(Symmetric):
    """Symmetric matrices whose smallest eigenvalue passes ``_smallest_test`` against 0."""

    _smallest_test = None

    def check(self, value):
        symmetric = super().check(value)
        if value.shape[-2] != value.shape[-1]:
            return symmetric
        from .. import linalg

        # eigvalsh reads one triangle only, so the symmetry test is what rules out the others.
        return symmetric & self._smallest_test(linalg.eigvalsh(value).min(-1).values, 0)


class PositiveSemidefinite(_EigenvalueBounded):
    """Symmetric matrices with no negative eigenvalue."""

    _smallest_test = operator.ge


class PositiveDefinite(_EigenvalueBounded):
    """Symmetric matrices with positive eigenvalues."""

    _smallest_test = operator.gt


class _Joined(Constraint):
    """Constraints ``cseq`` applied to parts of a value along ``dim``: discrete when any is."""

    def __init__(self, cseq, dim: int, builder: str):
        self.cseq = list(cseq)
        if not all(isinstance(c, Constraint) for c in self.cseq):
            raise TypeError(f"{builder} expects a sequence of Constraints")
        self.dim = dim

    @property
    def is_discrete(self):
        return any(c.is_discrete for c in self.cseq)


class Cat(_Joined):
    """Constraints applied to consecutive slices of ``lengths`` along ``dim`` (a checked value is
    the concatenation of values of each)."""

    def __init__(self, cseq, dim: int = 0, lengths=None):
        super().__init__(cseq, dim, "cat")
        self.lengths = [1] * len(self.cseq) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.cseq):
            raise ValueError(f"cat: {len(self.cseq)} constraints but {len(self.lengths)} lengths")

    @property
    def event_dim(self):
        return max(c.event_dim for c in self.cseq)

    def check(self, value):
        from ..frontend.ops.joining import cat as _cat

        pieces, start = [], 0
        for constraint, length in zip(self.cseq, self.lengths):
            pieces.append(constraint.check(value.narrow(self.dim, start, length)))
            start += length
        return _cat(pieces, self.dim)


class Stack(_Joined):
    """One constraint per index along ``dim`` (a checked value stacks values of each)."""

    def __init__(self, cseq, dim: int = 0):
        super().__init__(cseq, dim, "stack")

    @property
    def event_dim(self):
        widest = max(c.event_dim for c in self.cseq)
        # A dim inside the event adds one event dimension.
        return widest + 1 if self.dim + widest < 0 else widest

    def check(self, value):
        from ..frontend.ops.joining import stack as _stack

        if value.shape[self.dim] != len(self.cseq):
            raise ValueError(f"stack constraint: {len(self.cseq)} constraints but dim {self.dim} of the value "
                             f"has size {value.shape[self.dim]}")
        return _stack([c.check(value.select(self.dim, i)) for i, c in enumerate(self.cseq)], self.dim)


# The ready-made constraints and the builders, under PyTorch's names.
dependent = Dependent()
boolean = Boolean()
one_hot = OneHot()
nonnegative_integer = IntegerGreaterThan(0)
positive_integer = IntegerGreaterThan(1)
integer_interval = IntegerInterval
real = Real()
real_vector = IndependentConstraint(real, 1)
positive = GreaterThan(0.0)
nonnegative = GreaterThanEq(0.0)
greater_than = GreaterThan
greater_than_eq = GreaterThanEq
less_than = LessThan
multinomial = Multinomial
unit_interval = Interval(0.0, 1.0)
interval = Interval
half_open_interval = HalfOpenInterval
simplex = Simplex()
lower_triangular = LowerTriangular()
lower_cholesky = LowerCholesky()
corr_cholesky = CorrCholesky()
square = Square()
symmetric = Symmetric()
positive_semidefinite = PositiveSemidefinite()
positive_definite = PositiveDefinite()
independent = IndependentConstraint
cat = Cat
stack = Stack
