"""The Distribution base class: shapes, sampling without gradients, and argument checks."""
from __future__ import annotations

import warnings

from ..frontend.autograd.grad_mode import no_grad
from ..frontend.factories import rand
from ..frontend.tensor import Tensor
from . import constraints
from .utils import broadcast_all


class Distribution:
    """A family of probability distributions with batch_shape independent members, each over
    values of event_shape; as torch.distributions.Distribution.

    Checking arguments (``validate_args``) is on by default, as in PyTorch; it reads values back
    from the device, so it costs a synchronisation per check. Turn it off for a whole program with
    ``Distribution.set_default_validate_args(False)``.
    """

    has_rsample = False
    has_enumerate_support = False
    _validate_args = True
    # name -> constraint of each parameter; checked at construction when validating.
    arg_constraints: dict = {}
    # The parameters _broadcast_parameters stored, in the order repr and expand take them.
    _parameter_names: tuple = ()

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turn argument checks on or off for every distribution made without ``validate_args``."""
        if value not in (True, False):
            raise ValueError(f"set_default_validate_args expects True or False, got {value!r}")
        Distribution._validate_args = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape = tuple(batch_shape)
        self._event_shape = tuple(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            self._validate_parameters()

    def _broadcast_parameters(self, **given) -> tuple:
        """Store the given parameters as attributes, broadcast together (numbers become tensors),
        and return their common shape, which is the batch shape of the elementwise families."""
        for name, value in zip(given, broadcast_all(*given.values())):
            setattr(self, name, value)
        self._parameter_names = tuple(given)
        return tuple(getattr(self, self._parameter_names[0]).shape)

    def _validate_parameters(self) -> None:
        """Raise PyTorch's ValueError for a parameter outside its constraint. Parameters computed
        lazily from the one given (probs from logits) are not checked, as in PyTorch."""
        given = self._parameters()
        for name, constraint in self.arg_constraints.items():
            if constraints.is_dependent(constraint):
                continue
            value = given[name] if name in given else vars(self).get(name)
            if not isinstance(value, Tensor):
                continue
            if not bool(constraint.check(value).all()):
                raise ValueError(
                    f"Expected parameter {name} (Tensor of shape {tuple(value.shape)}) of distribution "
                    f"{self!r} to satisfy the constraint {constraint!r}, but found invalid values:\n{value}")

    @property
    def support(self):
        """The constraint every sample satisfies."""
        raise self._missing("support")

    @property
    def batch_shape(self) -> tuple:
        return self._batch_shape

    @property
    def event_shape(self) -> tuple:
        return self._event_shape

    def _extended_shape(self, sample_shape=()) -> tuple:
        if isinstance(sample_shape, int):
            sample_shape = (sample_shape,)
        return tuple(sample_shape) + self._batch_shape + self._event_shape

    def _uniform_draws(self, sample_shape, like: Tensor) -> Tensor:
        """Uniform draws in [0, 1) of the sample's full shape, in like's dtype and on its device
        (the input of sampling by the inverse cdf)."""
        return rand(self._extended_shape(sample_shape), dtype=like.dtype, device=like.device)

    def _missing(self, what: str):
        return NotImplementedError(f"{type(self).__name__} does not implement {what}")

    def sample(self, sample_shape=()) -> Tensor:
        """A sample of shape sample_shape + batch_shape + event_shape, outside the autograd graph."""
        with no_grad():
            return self.rsample(sample_shape)

    def sample_n(self, n: int) -> Tensor:
        """n samples (deprecated in PyTorch, which warns; use sample((n,)))."""
        warnings.warn("sample_n will be deprecated. Use .sample((n,)) instead", UserWarning, stacklevel=2)
        return self.sample((n,))

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """Every value of a discrete support, along a new leading dimension."""
        raise self._missing("enumerate_support")

    def _support_over_batch(self, values: Tensor, expand: bool) -> Tensor:
        """The support points `values` (one per index of their first dimension) with a dimension of
        size 1 per batch dimension, expanded over the batch when asked: what enumerate_support returns."""
        event = tuple(values.shape[1:])
        values = values.view((-1,) + (1,) * len(self._batch_shape) + event)
        return values.expand((-1,) + self._batch_shape + event) if expand else values

    def _get_checked_instance(self, cls, _instance=None):
        """A blank instance for a subclass's ``expand`` to fill (PyTorch's helper): refused for a
        subclass with its own __init__ and no expand of its own, which could not be filled correctly."""
        if _instance is None and type(self).__init__ is not cls.__init__:
            raise NotImplementedError(
                f"Subclass {type(self).__name__} of {cls.__name__} that defines a custom __init__ method "
                "must also define a custom .expand() method.")
        return type(self).__new__(type(self)) if _instance is None else _instance

    def rsample(self, sample_shape=()) -> Tensor:
        """A reparameterized sample: gradients flow to the parameters."""
        raise self._missing("rsample (it has no reparameterized sampling); use sample()")

    def log_prob(self, value) -> Tensor:
        raise self._missing("log_prob")

    def cdf(self, value) -> Tensor:
        raise self._missing("cdf")

    def icdf(self, value) -> Tensor:
        raise self._missing("icdf")

    def entropy(self) -> Tensor:
        raise self._missing("entropy")

    def perplexity(self) -> Tensor:
        return self.entropy().exp()

    @property
    def mean(self) -> Tensor:
        raise self._missing("mean")

    @property
    def mode(self) -> Tensor:
        raise self._missing("mode")

    @property
    def variance(self) -> Tensor:
        raise self._missing("variance")

    @property
    def stddev(self) -> Tensor:
        return self.variance.sqrt()

    def _parameters(self) -> dict:
        """name -> tensor of the parameters the distribution was made with (for repr and expand)."""
        return {name: getattr(self, name) for name in self._parameter_names}

    def expand(self, batch_shape, _instance=None):
        """The same distribution over a larger batch_shape (parameters broadcast, not copied)."""
        batch_shape = tuple(batch_shape)
        expanded = {}
        for name, value in self._parameters().items():
            trailing = tuple(value.shape)[len(self._batch_shape):]
            try:
                expanded[name] = value.expand(batch_shape + trailing)
            except (RuntimeError, ValueError) as error:
                raise ValueError(f"{type(self).__name__}.expand: batch_shape {tuple(self._batch_shape)} cannot be "
                                 f"expanded to {batch_shape} ({name} has shape {tuple(value.shape)})") from error
        return self._expanded_copy(**expanded)

    def _expanded_copy(self, *arguments, **parameters):
        """type(self)(*arguments, **parameters) built without checks (the parameters were checked
        when this one was made) and keeping this one's validate_args: the last step of expand."""
        new = type(self)(*arguments, **parameters, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}: {value if value.numel() == 1 else tuple(value.shape)}"
                          for name, value in self._parameters().items())
        return f"{type(self).__name__}({shown})"

    def _check_sample(self, value) -> None:
        """_validate_sample(value) when this distribution validates its arguments (the first step of
        log_prob and cdf)."""
        if self._validate_args:
            self._validate_sample(value)

    def _validate_sample(self, value) -> None:
        """Raise PyTorch's ValueError when value is not a tensor, does not end in event_shape, does
        not broadcast with batch_shape + event_shape, or lies outside the support."""
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        shape, event = tuple(value.shape), self._event_shape
        if shape[len(shape) - len(event):] != event:
            raise ValueError(f"The right-most size of value must match event_shape: {shape} vs {event}.")
        expected = self._batch_shape + event
        if any(have != want and have != 1 and want != 1 for have, want in zip(reversed(shape), reversed(expected))):
            raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: {shape} vs {expected}.")
        support = self.support
        if not bool(support.check(value).all()):
            raise ValueError(
                f"Expected value argument (Tensor of shape {shape}) to be within the support ({support!r}) "
                f"of the distribution {self!r}, but found invalid values:\n{value}")
