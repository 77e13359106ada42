"""``tp.optim.lr_scheduler``: learning-rate schedules with ``torch.optim.lr_scheduler``'s names,
arguments and rates.

How it hangs together:

- ``LRScheduler`` does the bookkeeping every schedule shares: ``initial_lr`` and ``base_lrs``,
  ``last_epoch``, the step count, the rates last written (``get_last_lr()``), the warnings, and
  the state dict. ``get_lr()`` is one loop over the param groups asking the subclass for one
  group's rate (``_rate_for``); writing the rates into the groups is another, ``_write_rates``.
- Most schedules move the rate by a factor from one epoch to the next (``_Recursive``: StepLR,
  ExponentialLR, LinearLR, ...): they only say what that factor is (``_epoch_factor``). This
  recursive form is what PyTorch computes, so the rates agree with it to the last bit, and it
  composes with other changes to the rates (a second scheduler on the same optimizer, a manual
  edit). ``step(epoch)`` (deprecated) uses the schedule's closed form (``_closed_form``) instead.
- Schedules that compute the rate afresh each step (LambdaLR, CyclicLR, OneCycleLR,
  CosineAnnealingWarmRestarts) define ``_rate_for`` from the base rate; the cycling ones also
  move momentum (or Adam's beta1) against the rate.
- ``SequentialLR`` and ``ChainedScheduler`` compose schedulers of one optimizer;
  ``ReduceLROnPlateau`` reacts to a metric instead of following a schedule.

>>> import tensorplug as tp
>>> opt = tp.optim.SGD([tp.zeros(1, requires_grad=True)], lr=0.1)
>>> sched = StepLR(opt, step_size=2, gamma=0.5)
>>> for _ in range(4):
...     opt.step(); sched.step()
>>> sched.get_last_lr()
[0.025]
"""
from __future__ import annotations

import functools
import math
import numbers
import types
import warnings
import weakref
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Callable, NamedTuple

from .optimizer import Optimizer

__all__ = [
    "LRScheduler", "LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR", "LinearLR", "ExponentialLR",
    "SequentialLR", "ChainedScheduler", "PolynomialLR", "CosineAnnealingLR", "ReduceLROnPlateau", "CyclicLR",
    "CosineAnnealingWarmRestarts", "OneCycleLR",
]

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where possible. "
    "Please use `scheduler.step()` to step the scheduler. During the deprecation, if epoch is different from "
    "None, the closed form is used instead of the new chainable form, where available."
)


# --- argument checks ----------------------------------------------------------------------------

def _check_optimizer(optimizer: Any) -> None:
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")


def _check_fraction(value: float, message: str, *, zero_allowed: bool = True) -> None:
    """Raise ``ValueError(message)`` unless ``value`` is in [0, 1] ((0, 1] without ``zero_allowed``)."""
    below = value <= 0 if not zero_allowed else value < 0
    if below or value > 1.0:
        raise ValueError(message)


def _positive_int(name: str, value: Any) -> int:
    """``value``, checked to be an integer above zero (a step or epoch count)."""
    if not isinstance(value, int) or value <= 0:
        raise ValueError(f"Expected positive integer {name}, but got {value}")
    return value


def _per_group(name: str, optimizer: Optimizer, value: Any) -> list:
    """One value per param group: a list or tuple is checked for its length, anything else repeated."""
    count = len(optimizer.param_groups)
    if not isinstance(value, (list, tuple)):
        return [value] * count
    if len(value) != count:
        raise ValueError(
            f"{name} must have the same length as optimizer.param_groups. "
            f"{name} has {len(value)} values, param_groups has {count}."
        )
    return list(value)


# --- state of the callables a scheduler holds ---------------------------------------------------

def _callable_state(fn: Callable | None) -> dict | None:
    """What a state dict keeps of a function the user handed in: a callable object's attributes;
    nothing for a plain function or lambda, which is code rather than state."""
    if fn is None or isinstance(fn, types.FunctionType):
        return None
    attributes = getattr(fn, "__dict__", None)
    return None if attributes is None else dict(attributes)


def _restore_callable_state(fn: Callable | None, saved: dict | None) -> None:
    if saved is not None:
        vars(fn).update(saved)


# --- noticing optimizer.step() ------------------------------------------------------------------

class _StepRecorder:
    """Takes the place of ``optimizer.step``: runs the optimizer's own step and remembers that it
    ran, so that a scheduler stepped before its optimizer can say so (that order skips the first
    rate of the schedule)."""

    def __init__(self, optimizer: Optimizer) -> None:
        # The plain function and a weak reference, not the bound method: the bound method would
        # hold the optimizer, which holds this object, and keep both alive in a cycle.
        self._function = optimizer.step.__func__
        self._owner = weakref.ref(optimizer)
        self.has_run = False
        functools.update_wrapper(self, self._function)

    def __call__(self, *args, **kwargs):
        self.has_run = True
        return self._function(self._owner(), *args, **kwargs)

    @classmethod
    def install(cls, optimizer: Optimizer) -> None:
        """Put a recorder on ``optimizer`` unless an earlier scheduler did."""
        if not isinstance(optimizer.step, cls):
            optimizer.step = cls(optimizer)


def _warn_about_step_order(optimizer: Optimizer) -> None:
    """At a scheduler's first ``step()``: warn if the optimizer has not stepped yet, or if its
    ``step`` was replaced since, so that it can no longer tell."""
    recorder = optimizer.step
    if not isinstance(recorder, _StepRecorder):
        warnings.warn(
            "Seems like `optimizer.step()` has been overridden after learning rate scheduler initialization. "
            "Please, make sure to call `optimizer.step()` before `lr_scheduler.step()`.",
            UserWarning,
            stacklevel=3,
        )
    elif not recorder.has_run:
        warnings.warn(
            "Detected call of `lr_scheduler.step()` before `optimizer.step()`. In PyTorch 1.1.0 and later, "
            "you should call them in the opposite order: `optimizer.step()` before `lr_scheduler.step()`.  "
            "Failure to do this will result in PyTorch skipping the first value of the learning rate schedule.",
            UserWarning,
            stacklevel=3,
        )


def _set_momentum(group: dict, value: float, use_beta1: bool) -> None:
    if use_beta1:
        group["betas"] = (value, *group["betas"][1:])
    else:
        group["momentum"] = value


def _start_momentum_cycle(optimizer: Optimizer, base_momentum: Any, max_momentum: Any,
                          fresh: bool) -> tuple[bool, list, list]:
    """For the schedules that cycle momentum against the rate: whether the optimizer's momentum
    is Adam's beta1, and the per-group bottoms and tops of the cycle. A fresh start records them
    in the groups and starts the momentum at its top (where the rate is lowest)."""
    defaults = optimizer.defaults
    if "momentum" not in defaults and "betas" not in defaults:
        raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` option enabled")
    use_beta1 = "betas" in defaults
    bottoms = _per_group("base_momentum", optimizer, base_momentum)
    tops = _per_group("max_momentum", optimizer, max_momentum)
    if fresh:
        for group, bottom, top in zip(optimizer.param_groups, bottoms, tops):
            _set_momentum(group, top, use_beta1)
            group["base_momentum"] = bottom
            group["max_momentum"] = top
    return use_beta1, bottoms, tops


# --- the base class -----------------------------------------------------------------------------

def _base_rates(optimizer: Optimizer, last_epoch: int) -> list:
    """Each group's ``initial_lr``: recorded from its ``lr`` on a fresh start; when resuming
    (``last_epoch`` given) it must be there already, as the schedule is measured from it."""
    groups = optimizer.param_groups
    if last_epoch == -1:
        for group in groups:
            group.setdefault("initial_lr", group["lr"])
    missing = [index for index, group in enumerate(groups) if "initial_lr" not in group]
    if missing:
        raise KeyError(
            f"param 'initial_lr' is not specified in param_groups[{missing[0]}] when resuming scheduler with "
            "last_epoch >= 0."
        )
    return [group["initial_lr"] for group in groups]


class LRScheduler:
    """Base of the schedulers: keeps ``last_epoch``, ``base_lrs`` and the rates last set, and
    writes each step's rates into the optimizer's param groups."""

    # A method (self, base_lr) -> the rate at ``last_epoch``, in the schedules that have a closed
    # form; ``step(epoch)`` uses it.
    _closed_form: Callable | None = None

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        self.base_lrs = _base_rates(optimizer, last_epoch)
        self.last_epoch = last_epoch
        _StepRecorder.install(optimizer)
        self._take_first_step()

    def _take_first_step(self) -> None:
        """The step a constructor takes to set epoch 0's rates (SequentialLR repeats it for the
        scheduler it starts with). ``_in_first_step`` is set meanwhile: the schedules that only
        scale the previous epoch's rate (ExponentialLR, PolynomialLR, ...) leave it as it is."""
        self._step_count = 0
        self._in_first_step = True
        try:
            self.step()
        finally:
            self._in_first_step = False

    def get_last_lr(self) -> list[float]:
        """The learning rates the last ``step()`` set, one per param group."""
        return self._last_lr

    def get_lr(self) -> list[float]:
        """The learning rate of each param group at epoch ``last_epoch``."""
        groups = self.optimizer.param_groups
        return [self._rate_for(index, group, base_lr)
                for index, (group, base_lr) in enumerate(zip(groups, self.base_lrs))]

    def _rate_for(self, index: int, group: dict, base_lr: float) -> float:
        """One param group's rate at ``last_epoch`` (the subclass's formula; a custom scheduler
        may override ``get_lr`` instead)."""
        raise NotImplementedError

    def step(self, epoch: int | None = None) -> None:
        """Move to the next epoch (or, deprecated, to ``epoch``) and set its learning rates."""
        if self._step_count == 1:  # the first step after the constructor's own
            _warn_about_step_order(self.optimizer)
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._advance(epoch)

    def _advance(self, epoch: int | None = None) -> None:
        """The step without its checks and warnings: SequentialLR restarts a scheduler at its
        milestone with ``_advance(0)``."""
        if epoch is None:
            self.last_epoch += 1
            rates = self.get_lr()
        else:
            self.last_epoch = epoch
            if self._closed_form is None:
                rates = self.get_lr()
            else:
                rates = [self._closed_form(base_lr) for base_lr in self.base_lrs]
        self._write_rates(rates)

    def _write_rates(self, rates: Iterable[float]) -> None:
        groups = self.optimizer.param_groups
        for group, rate in zip(groups, rates):
            group["lr"] = rate
        self._last_lr = [group["lr"] for group in groups]

    def state_dict(self) -> dict:
        """The scheduler's state (every attribute but the optimizer), for ``load_state_dict``."""
        return {name: self._pack(name, value) for name, value in vars(self).items() if name != "optimizer"}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore the state ``state_dict()`` returned."""
        for name, saved in state_dict.items():
            self._unpack(name, saved)

    def _pack(self, name: str, value: Any) -> Any:
        """How attribute ``name`` is written in the state dict (subclasses holding functions or
        other schedulers write those differently)."""
        return value

    def _unpack(self, name: str, saved: Any) -> None:
        vars(self)[name] = saved


class _LRScheduler(LRScheduler):
    """LRScheduler's name before PyTorch 2.0, which older custom schedulers still subclass."""


class _Recursive(LRScheduler):
    """A schedule stated as the factor that takes the previous epoch's rate to this epoch's.
    Subclasses define ``_epoch_factor()``; None there leaves the rate as it is."""

    def _epoch_factor(self) -> float | None:
        raise NotImplementedError

    def _rate_for(self, index: int, group: dict, base_lr: float) -> float:
        factor = self._epoch_factor()
        return group["lr"] if factor is None else group["lr"] * factor


# --- schedules given as functions of the epoch ----------------------------------------------------

class _LambdaScheduler(LRScheduler):
    """A schedule given by the user as one function of the epoch per param group (LambdaLR,
    MultiplicativeLR). The state dict keeps callable objects' attributes, not the functions."""

    def __init__(self, optimizer: Optimizer, lr_lambda: Callable | list, last_epoch: int = -1) -> None:
        _check_optimizer(optimizer)
        count = len(optimizer.param_groups)
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != count:
                raise ValueError(f"Expected {count} lr_lambdas, but got {len(lr_lambda)}")
            functions = list(lr_lambda)
        else:
            functions = [lr_lambda] * count
        for fn in functions:
            if not callable(fn):
                raise TypeError(f"lr_lambda should be a function, but got {type(fn).__name__}")
        self.lr_lambdas = functions
        super().__init__(optimizer, last_epoch)

    def _pack(self, name: str, value: Any) -> Any:
        if name == "lr_lambdas":
            return [_callable_state(fn) for fn in value]
        return value

    def _unpack(self, name: str, saved: Any) -> None:
        if name != "lr_lambdas":
            super()._unpack(name, saved)
            return
        for fn, fn_state in zip(self.lr_lambdas, saved):
            _restore_callable_state(fn, fn_state)


class LambdaLR(_LambdaScheduler):
    """``lr = base_lr * lr_lambda(epoch)`` (one function, or one per param group)."""

    def _rate_for(self, index: int, group: dict, base_lr: float) -> float:
        return base_lr * self.lr_lambdas[index](self.last_epoch)


class MultiplicativeLR(_LambdaScheduler):
    """``lr = lr * lr_lambda(epoch)`` each epoch (one function, or one per param group)."""

    def _rate_for(self, index: int, group: dict, base_lr: float) -> float:
        if self._in_first_step:
            return group["lr"]
        return group["lr"] * self.lr_lambdas[index](self.last_epoch)


# --- recursive schedules ------------------------------------------------------------------------

class StepLR(_Recursive):
    """Multiply the learning rate by ``gamma`` every ``step_size`` epochs."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1) -> None:
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def _epoch_factor(self) -> float | None:
        at_boundary = self.last_epoch != 0 and self.last_epoch % self.step_size == 0
        return self.gamma if at_boundary else None

    def _closed_form(self, base_lr: float) -> float:
        return base_lr * self.gamma ** (self.last_epoch // self.step_size)


class MultiStepLR(_Recursive):
    """Multiply the learning rate by ``gamma`` at each milestone epoch (twice at a milestone given
    twice)."""

    def __init__(self, optimizer: Optimizer, milestones: Iterable[int], gamma: float = 0.1,
                 last_epoch: int = -1) -> None:
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def _epoch_factor(self) -> float | None:
        repeats = self.milestones[self.last_epoch]
        return self.gamma**repeats if repeats else None

    def _closed_form(self, base_lr: float) -> float:
        passed = sum(repeats for epoch, repeats in self.milestones.items() if epoch <= self.last_epoch)
        return base_lr * self.gamma**passed


class ConstantLR(_Recursive):
    """Multiply the learning rate by ``factor`` until epoch ``total_iters``, then restore it."""

    def __init__(self, optimizer: Optimizer, factor: float = 1.0 / 3, total_iters: int = 5,
                 last_epoch: int = -1) -> None:
        _check_fraction(factor, "Constant multiplicative factor expected to be between 0 and 1.")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def _epoch_factor(self) -> float | None:
        if self.last_epoch == 0:
            return self.factor
        if self.last_epoch == self.total_iters:
            return 1.0 / self.factor  # undo the reduction
        return None

    def _closed_form(self, base_lr: float) -> float:
        reduced = self.last_epoch < self.total_iters
        return base_lr * (self.factor if reduced else self.factor + (1 - self.factor))


class LinearLR(_Recursive):
    """Scale the learning rate by a factor that moves linearly from ``start_factor`` to
    ``end_factor`` over ``total_iters`` epochs (the usual warmup before a decay, chained with
    ``SequentialLR``)."""

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3, end_factor: float = 1.0,
                 total_iters: int = 5, last_epoch: int = -1) -> None:
        _check_fraction(start_factor,
                        "Starting multiplicative factor expected to be greater than 0 and less or equal to 1.",
                        zero_allowed=False)
        _check_fraction(end_factor, "Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def _epoch_factor(self) -> float | None:
        epoch = self.last_epoch
        if epoch == 0:
            return self.start_factor
        if self._in_first_step or epoch > self.total_iters:
            return None
        # This epoch's scale over the previous epoch's, f(k) / f(k - 1) with f(k) = s + (e - s) k / T,
        # which is 1 + (e - s) / (T s + (k - 1) (e - s)).
        change = self.end_factor - self.start_factor
        return 1.0 + change / (self.total_iters * self.start_factor + (epoch - 1) * change)

    def _closed_form(self, base_lr: float) -> float:
        progress = min(self.total_iters, self.last_epoch)
        return base_lr * (self.start_factor + (self.end_factor - self.start_factor) * progress / self.total_iters)


class ExponentialLR(_Recursive):
    """Multiply the learning rate by ``gamma`` every epoch."""

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def _epoch_factor(self) -> float | None:
        return None if self._in_first_step else self.gamma

    def _closed_form(self, base_lr: float) -> float:
        return base_lr * self.gamma**self.last_epoch


class PolynomialLR(_Recursive):
    """Decay the learning rate as ``(1 - epoch / total_iters) ** power`` until ``total_iters``."""

    def __init__(self, optimizer: Optimizer, total_iters: int = 5, power: float = 1.0, last_epoch: int = -1) -> None:
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def _epoch_factor(self) -> float | None:
        epoch = self.last_epoch
        if self._in_first_step or epoch > self.total_iters:
            return None
        remaining_now = 1.0 - epoch / self.total_iters
        remaining_before = 1.0 - (epoch - 1) / self.total_iters
        return (remaining_now / remaining_before) ** self.power

    def _closed_form(self, base_lr: float) -> float:
        remaining = 1.0 - min(self.total_iters, self.last_epoch) / self.total_iters
        return base_lr * remaining**self.power


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing from the initial learning rate to ``eta_min`` over ``T_max`` epochs (SGDR's
    schedule without restarts); past ``T_max`` the cosine climbs back."""

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1) -> None:
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def _rate_for(self, index: int, group: dict, base_lr: float) -> float:
        if self._in_first_step:
            return group["lr"]
        epoch, period, floor = self.last_epoch, self.T_max, self.eta_min
        if self._step_count == 1 and epoch > 0:
            # Resumed at a later epoch and not stepped yet: no previous rate of this schedule.
            return self._closed_form(base_lr)
        if (epoch - 1 - period) % (2 * period) == 0:
            # The previous epoch was a trough (cosine -1): the ratio below would divide by zero,
            # so climb by the first epoch's drop instead.
            return group["lr"] + (base_lr - floor) * (1 - math.cos(math.pi / period)) / 2
        # The ratio of this epoch's height above eta_min to the previous epoch's.
        ratio = (1 + math.cos(math.pi * epoch / period)) / (1 + math.cos(math.pi * (epoch - 1) / period))
        return ratio * (group["lr"] - floor) + floor

    def _closed_form(self, base_lr: float) -> float:
        return self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2


# --- composing schedulers -------------------------------------------------------------------------

def _check_members(owner: str, schedulers: Sequence, what: str, optimizer: Any) -> None:
    """Check that ``owner`` can compose ``schedulers``: at least one, none a ReduceLROnPlateau
    (its ``step`` needs a metric), all on ``optimizer``."""
    if len(schedulers) == 0:
        raise ValueError(f"{owner} expects at least one {what}, but got no scheduler.")
    for index, scheduler in enumerate(schedulers):
        if not hasattr(scheduler, "optimizer"):
            raise TypeError(f"{owner} at index {index} should have `optimizer` as its attribute.")
        if isinstance(scheduler, ReduceLROnPlateau):
            raise ValueError(
                f"{owner} does not support `ReduceLROnPlateau` scheduler as it requires additional kwargs to be "
                f"specified when calling `step`, but got one at index {index} in the given schedulers sequence.")
        if scheduler.optimizer is not optimizer:
            raise ValueError(
                f"{owner} expects all schedulers to belong to the same optimizer, but got scheduler "
                f"{type(scheduler).__name__} at index {index} has {scheduler.optimizer}, which is different from "
                f"{type(optimizer).__name__}.")


def _leaf_schedulers(scheduler: Any) -> Iterator:
    """The schedulers inside ``scheduler``, through nested SequentialLR/ChainedScheduler."""
    if hasattr(scheduler, "_schedulers"):
        for member in scheduler._schedulers:
            yield from _leaf_schedulers(member)
    elif hasattr(scheduler, "last_epoch"):
        yield scheduler


class _SchedulerGroup(LRScheduler):
    """Schedulers of one optimizer composed into one (SequentialLR, ChainedScheduler); the state
    dict holds each member's state dict."""

    _schedulers: Sequence

    def _pack(self, name: str, value: Any) -> Any:
        if name == "_schedulers":
            return [member.state_dict() for member in value]
        return value

    def _unpack(self, name: str, saved: Any) -> None:
        if name != "_schedulers":
            super()._unpack(name, saved)
            return
        for member, member_state in zip(self._schedulers, saved):
            member.load_state_dict(member_state)


class SequentialLR(_SchedulerGroup):
    """Run ``schedulers`` one after another, switching at each epoch in ``milestones``: e.g. a
    ``LinearLR`` warmup, then ``CosineAnnealingLR`` from the base rate. A scheduler that takes
    over restarts at its epoch 0 (its closed form)."""

    def __init__(self, optimizer: Optimizer, schedulers: list, milestones: list, last_epoch: int = -1) -> None:
        _check_members("SequentialLR", schedulers, "scheduler", optimizer)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(
                "Sequential Schedulers expects number of schedulers provided to be one more than the number of "
                f"milestone points, but got number of schedulers {len(schedulers)} and the number of milestones to "
                f"be equal to {len(milestones)}")
        self.optimizer = optimizer
        self._schedulers, self._milestones = schedulers, milestones
        self.last_epoch = last_epoch + 1
        self._start_over()

    def _start_over(self) -> None:
        """Every member's constructor took a first step and changed the rates: go back to the
        initial rates and epochs, and replay only the first step of the member active at epoch 0."""
        self._write_rates(group["initial_lr"] for group in self.optimizer.param_groups)
        self.recursive_undo()
        active = self._schedulers[bisect_right(self._milestones, 0)]
        active._take_first_step()
        self._last_lr = active.get_last_lr()

    def recursive_undo(self, sched: Any = None) -> None:
        """Take back the constructor's step of every scheduler held (nested ones included)."""
        for leaf in _leaf_schedulers(self if sched is None else sched):
            leaf.last_epoch -= 1

    def step(self) -> None:
        """Advance one epoch: the member whose milestone this is restarts at its epoch 0, any
        other epoch steps the active member."""
        self.last_epoch += 1
        position = bisect_right(self._milestones, self.last_epoch)
        active = self._schedulers[position]
        takes_over = position > 0 and self._milestones[position - 1] == self.last_epoch
        if takes_over:
            active._advance(0)
        else:
            active.step()
        self._last_lr = active.get_last_lr()


class ChainedScheduler(_SchedulerGroup):
    """Step every scheduler in ``schedulers`` at each step, so that their changes compose (e.g. a
    ConstantLR warmup on top of ExponentialLR)."""

    def __init__(self, schedulers: Sequence[LRScheduler], optimizer: Optimizer | None = None) -> None:
        if optimizer is None and len(schedulers) > 0:
            optimizer = getattr(schedulers[0], "optimizer", None)
        _check_members("ChainedScheduler", schedulers, "scheduler to be chained", optimizer)
        self.optimizer = optimizer
        self._schedulers = schedulers
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def step(self) -> None:
        """Step each scheduler held, in order."""
        for member in self._schedulers:
            member.step()
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]


# --- reacting to a metric -----------------------------------------------------------------------

class ReduceLROnPlateau(LRScheduler):
    """Multiply the learning rate by ``factor`` once the metric handed to ``step(metric)`` has not
    improved (by ``threshold``, relative or absolute) for more than ``patience`` epochs; wait
    ``cooldown`` epochs after a reduction; never go below ``min_lr``."""

    def __init__(self, optimizer: Optimizer, mode: str = "min", factor: float = 0.1, patience: int = 10,
                 threshold: float = 1e-4, threshold_mode: str = "rel", cooldown: int = 0,
                 min_lr: float | list = 0, eps: float = 1e-8) -> None:
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        _check_optimizer(optimizer)
        count = len(optimizer.param_groups)
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != count:
                raise ValueError(f"expected {count} min_lrs, got {len(min_lr)}")
            floors, shared_floor = list(min_lr), None
        else:
            floors, shared_floor = [min_lr] * count, min_lr
        if mode not in ("min", "max"):
            raise ValueError(f"mode {mode} is unknown!")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(f"threshold mode {threshold_mode} is unknown!")
        self.optimizer = optimizer
        self.mode, self.factor, self.patience, self.cooldown = mode, factor, patience, cooldown
        self.threshold, self.threshold_mode, self.eps = threshold, threshold_mode, eps
        self.min_lrs, self.default_min_lr = floors, shared_floor
        self.last_epoch = 0
        self._last_lr = [group["lr"] for group in optimizer.param_groups]
        self._forget_history()

    @property
    def mode_worse(self) -> float:
        """The worst possible metric: where ``best`` starts."""
        return math.inf if self.mode == "min" else -math.inf

    @property
    def in_cooldown(self) -> bool:
        """Whether the scheduler is still waiting after a reduction."""
        return self.cooldown_counter > 0

    def _forget_history(self) -> None:
        self.best, self.num_bad_epochs, self.cooldown_counter = self.mode_worse, 0, 0

    def _improves(self, value: float) -> bool:
        """Whether ``value`` beats ``best`` by more than the threshold."""
        if self.threshold_mode == "rel":
            scale = 1.0 - self.threshold if self.mode == "min" else 1.0 + self.threshold
            target = self.best * scale
        else:
            target = self.best - self.threshold if self.mode == "min" else self.best + self.threshold
        return value < target if self.mode == "min" else value > target

    def step(self, metrics: Any, epoch: int | None = None) -> None:
        """Record one epoch's metric, reducing the rates when it has stalled for too long."""
        value = float(metrics)  # a 0-d tensor (a validation loss) reads as a number
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self.last_epoch = self.last_epoch + 1 if epoch is None else epoch
        improved = self._improves(value)
        if improved:
            self.best = value
        cooling_down = self.in_cooldown
        if cooling_down:
            self.cooldown_counter -= 1
        # Epochs in the cooldown after a reduction do not count against the metric.
        self.num_bad_epochs = 0 if improved or cooling_down else self.num_bad_epochs + 1
        if self.num_bad_epochs > self.patience:
            self._shrink_rates()
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def _floors(self) -> list:
        """``min_lrs``, extended to param groups added since construction when min_lr was one number."""
        count = len(self.optimizer.param_groups)
        if len(self.min_lrs) != count:
            if self.default_min_lr is None:
                raise RuntimeError(
                    f"The number of param groups in the `optimizer` ({count}) differs from when "
                    f"`ReduceLROnPlateau` was initialized ({len(self.min_lrs)}), usually due to a new param group "
                    "being added to the optimizer. Please modify the `min_lrs` field to match the length of the "
                    "`optimizer` param groups.")
            self.min_lrs = [self.default_min_lr] * count
        return self.min_lrs

    def _shrink_rates(self) -> None:
        for group, floor in zip(self.optimizer.param_groups, self._floors()):
            current = float(group["lr"])
            reduced = max(current * self.factor, floor)
            if current - reduced > self.eps:  # changes within eps are not worth making
                group["lr"] = reduced


# --- cyclical schedules -------------------------------------------------------------------------

# CyclicLR's built-in modes: the height of cycle (or iteration) x, as a fraction of the first.
_CYCLE_HEIGHTS: dict[str, Callable[[float, float], float]] = {
    "triangular": lambda x, gamma: 1.0,
    "triangular2": lambda x, gamma: 1 / 2.0 ** (x - 1),  # halved each cycle
    "exp_range": lambda x, gamma: gamma**x,
}


class CyclicLR(LRScheduler):
    """Cyclical learning rates (Smith, 2017): the rate climbs from ``base_lr`` to ``max_lr`` over
    ``step_size_up`` steps and back over ``step_size_down``, each cycle's height scaled by the
    mode (``triangular``: constant, ``triangular2``: halved per cycle, ``exp_range``: ``gamma **
    step``) or by ``scale_fn``; momentum (or Adam's beta1) cycles the opposite way. Step it once
    per batch."""

    def __init__(self, optimizer: Optimizer, base_lr: float | list, max_lr: float | list, step_size_up: int = 2000,
                 step_size_down: int | None = None, mode: str = "triangular", gamma: float = 1.0,
                 scale_fn: Callable | None = None, scale_mode: str = "cycle", cycle_momentum: bool = True,
                 base_momentum: float | list = 0.8, max_momentum: float | list = 0.9, last_epoch: int = -1) -> None:
        _check_optimizer(optimizer)
        fresh = last_epoch == -1
        bottoms = _per_group("base_lr", optimizer, base_lr)
        if fresh:
            for group, bottom in zip(optimizer.param_groups, bottoms):
                group["lr"] = bottom
        self.max_lrs = _per_group("max_lr", optimizer, max_lr)
        rise = float(step_size_up)
        fall = rise if step_size_down is None else float(step_size_down)
        self.total_size = rise + fall
        self.step_ratio = rise / self.total_size
        if scale_fn is None and mode not in _CYCLE_HEIGHTS:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode = mode
        self.gamma = gamma
        self._custom_height = scale_fn
        # A built-in mode decides what its height is a function of; a custom scale_fn keeps the
        # scale_mode given.
        if scale_fn is None:
            scale_mode = "iterations" if mode == "exp_range" else "cycle"
        self.scale_mode = scale_mode
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.use_beta1, self.base_momentums, self.max_momentums = _start_momentum_cycle(
                optimizer, base_momentum, max_momentum, fresh)
        super().__init__(optimizer, last_epoch)
        self.base_lrs = bottoms

    def scale_fn(self, x: float) -> float:
        """The cycle's height at ``x`` (the cycle number, or the iteration), relative to the first."""
        if self._custom_height is not None:
            return self._custom_height(x)
        return _CYCLE_HEIGHTS[self.mode](x, self.gamma)

    def _where_in_cycle(self) -> tuple[float, float]:
        """(how far up the cycle is, 0 at its bottom and 1 at its peak; the cycle's height)."""
        progress = 1.0 + self.last_epoch / self.total_size
        cycle = math.floor(progress)
        within = progress - cycle  # 0 -> 1 through the current cycle
        if within <= self.step_ratio:
            climbed = within / self.step_ratio
        else:
            climbed = (within - 1) / (self.step_ratio - 1)
        height = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        return climbed, height

    def _rate_for(self, index: int, group: dict, base_lr: float) -> float:
        climbed, height = self._where_in_cycle()
        if self.cycle_momentum:
            top, bottom = self.max_momentums[index], self.base_momentums[index]
            _set_momentum(group, top - (top - bottom) * climbed * height, self.use_beta1)
        return base_lr + (self.max_lrs[index] - base_lr) * climbed * height

    def _pack(self, name: str, value: Any) -> Any:
        return _callable_state(value) if name == "_custom_height" else value

    def _unpack(self, name: str, saved: Any) -> None:
        if name == "_custom_height":
            _restore_callable_state(self._custom_height, saved)
        else:
            super()._unpack(name, saved)


class CosineAnnealingWarmRestarts(LRScheduler):
    """SGDR: cosine annealing from the base rate to ``eta_min`` over ``T_0`` epochs, then again
    from the base rate over ``T_0 * T_mult``, ``T_0 * T_mult**2``, ... epochs."""

    def __init__(self, optimizer: Optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0,
                 last_epoch: int = -1) -> None:
        _positive_int("T_0", T_0)
        if not isinstance(T_mult, int) or T_mult < 1:
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, numbers.Real):
            raise ValueError(f"Expected float or int eta_min, but got {eta_min} of type {type(eta_min)}")
        self.T_0, self.T_mult, self.eta_min = T_0, T_mult, eta_min
        self.T_i = T_0  # the current period
        self.T_cur = last_epoch  # epochs since the last restart
        super().__init__(optimizer, last_epoch)

    def _rate_for(self, index: int, group: dict, base_lr: float) -> float:
        return self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2

    def step(self, epoch: float | None = None) -> None:
        """One epoch on (restarting when the period ends), or jump to ``epoch``, which may be a
        fraction (``epoch + i / iters_per_epoch`` steps the schedule within an epoch, as SGDR's
        authors do)."""
        if epoch is None and self.last_epoch >= 0:
            self.last_epoch += 1
            self.T_cur += 1
            if self.T_cur >= self.T_i:
                self.T_cur %= self.T_i
                self.T_i *= self.T_mult
        else:
            self._jump_to(0 if epoch is None else epoch)  # None: the constructor's step
        self._write_rates(self.get_lr())

    def _jump_to(self, epoch: float) -> None:
        if epoch < 0:
            raise ValueError(f"Expected non-negative epoch, but got {epoch}")
        if epoch < self.T_0:
            self.T_i, self.T_cur = self.T_0, epoch
        elif self.T_mult == 1:
            self.T_cur = epoch % self.T_0
        else:
            # Periods grow geometrically: restart n begins at T_0 (T_mult**n - 1) / (T_mult - 1).
            restarts = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
            restart_epoch = self.T_0 * (self.T_mult**restarts - 1) / (self.T_mult - 1)
            self.T_cur = epoch - restart_epoch
            self.T_i = self.T_0 * self.T_mult**restarts
        self.last_epoch = math.floor(epoch)


class _Phase(NamedTuple):
    """One stretch of the 1cycle schedule: it ends at ``end_step``, and moves the rate and the
    momentum between the param-group entries named."""

    end_step: float
    lr_from: str
    lr_to: str
    momentum_from: str
    momentum_to: str


def _one_cycle_length(total_steps: int | None, epochs: int | None, steps_per_epoch: int | None) -> int:
    if total_steps is not None:
        return _positive_int("total_steps", total_steps)
    if epochs is None or steps_per_epoch is None:
        raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
    return _positive_int("epochs", epochs) * _positive_int("steps_per_epoch", steps_per_epoch)


def _one_cycle_phases(total_steps: int, pct_start: float, three_phase: bool) -> tuple[_Phase, ...]:
    """Warm up to max_lr over pct_start of the steps; then anneal to min_lr (two phases), or come
    back down to initial_lr symmetrically before annealing to min_lr (three phases)."""
    warmup_end = pct_start * total_steps - 1
    last = total_steps - 1
    warmup = _Phase(warmup_end, "initial_lr", "max_lr", "max_momentum", "base_momentum")
    if not three_phase:
        return warmup, _Phase(last, "max_lr", "min_lr", "base_momentum", "max_momentum")
    cooldown = _Phase(2 * pct_start * total_steps - 2, "max_lr", "initial_lr", "base_momentum", "max_momentum")
    return warmup, cooldown, _Phase(last, "initial_lr", "min_lr", "max_momentum", "max_momentum")


class OneCycleLR(LRScheduler):
    """The 1cycle policy: warm up to ``max_lr``, then anneal far below the initial rate; momentum
    (or Adam's beta1) cycles the opposite way when ``cycle_momentum`` is set."""

    def __init__(self, optimizer: Optimizer, max_lr: float | list, total_steps: int | None = None,
                 epochs: int | None = None, steps_per_epoch: int | None = None, pct_start: float = 0.3,
                 anneal_strategy: str = "cos", cycle_momentum: bool = True, base_momentum: float | list = 0.85,
                 max_momentum: float | list = 0.95, div_factor: float = 25.0, final_div_factor: float = 1e4,
                 three_phase: bool = False, last_epoch: int = -1) -> None:
        _check_optimizer(optimizer)
        self.total_steps = _one_cycle_length(total_steps, epochs, steps_per_epoch)
        if not isinstance(pct_start, float) or pct_start < 0 or pct_start > 1:
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._phases = _one_cycle_phases(self.total_steps, pct_start, three_phase)
        self._anneal_strategy = anneal_strategy
        fresh = last_epoch == -1
        peaks = _per_group("max_lr", optimizer, max_lr)
        if fresh:
            for group, peak in zip(optimizer.param_groups, peaks):
                start = peak / div_factor
                group.update(initial_lr=start, max_lr=peak, min_lr=start / final_div_factor)
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.use_beta1 = _start_momentum_cycle(optimizer, base_momentum, max_momentum, fresh)[0]
        super().__init__(optimizer, last_epoch)

    def _anneal(self, start: float, end: float, pct: float) -> float:
        """The value ``pct`` of the way from ``start`` to ``end``, along a half cosine or a line."""
        if self._anneal_strategy == "linear":
            return start + (end - start) * pct
        return end + (start - end) / 2.0 * (1 + math.cos(math.pi * pct))

    def _current_phase(self) -> tuple[_Phase, float]:
        """The phase ``last_epoch`` falls in, and the step it began at (the last phase also takes
        the final step)."""
        began = 0.0
        for phase in self._phases[:-1]:
            if self.last_epoch <= phase.end_step:
                return phase, began
            began = phase.end_step
        return self._phases[-1], began

    def get_lr(self) -> list[float]:
        """The learning rate of each param group at step ``last_epoch`` (momentum moves with it)."""
        if self.last_epoch > self.total_steps:
            raise ValueError(
                f"Tried to step {self.last_epoch} times. The specified number of total steps is {self.total_steps}")
        return super().get_lr()

    def _rate_for(self, index: int, group: dict, base_lr: float) -> float:
        phase, began = self._current_phase()
        pct = (self.last_epoch - began) / (phase.end_step - began)
        if self.cycle_momentum:
            momentum = self._anneal(group[phase.momentum_from], group[phase.momentum_to], pct)
            _set_momentum(group, momentum, self.use_beta1)
        return self._anneal(group[phase.lr_from], group[phase.lr_to], pct)
