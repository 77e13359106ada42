"""Stochastic weight averaging and exponential moving averages of a model's weights, with
``torch.optim.swa_utils``' names and semantics.

``AveragedModel`` keeps a copy of a module whose parameters (and, with ``use_buffers``, buffers)
are averaged over the models passed to ``update_parameters``: an equal-weight running mean by
default (SWA), or any rule given as ``avg_fn`` (one tensor at a time) or ``multi_avg_fn`` (lists of
tensors, one device and dtype per call). ``SWALR`` anneals each group's learning rate to a
constant ``swa_lr``; ``update_bn`` recomputes BatchNorm running statistics for the averaged
weights with one pass over the data.

>>> import tensorplug as tp
>>> model = tp.nn.Linear(2, 1)
>>> ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.9))
>>> ema.update_parameters(model)
>>> int(ema.n_averaged)
1
"""
from __future__ import annotations

import copy
import math
from typing import Callable

from ..frontend import dtypes as _dt
from ..frontend.autograd import no_grad
from ..frontend.factories import tensor
from ..frontend.tensor import Tensor
from ..nn.instancenorm import _InstanceNorm
from ..nn.layers import _BatchNorm
from ..nn.module import Module
from .lr_scheduler import LRScheduler, _per_group
from .optimizer import Optimizer

__all__ = ["AveragedModel", "SWALR", "update_bn", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn", "get_ema_avg_fn",
           "get_swa_avg_fn"]


# --- averaging rules ---------------------------------------------------------------------------------
def _check_decay(decay: float) -> None:
    # Written so that NaN passes (every comparison with it is False), as PyTorch lets it through.
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")


def _running_mean(averaged: Tensor, current: Tensor, count) -> Tensor:
    """The mean of ``count`` tensors (``averaged``) and one more (``current``)."""
    correction = (current - averaged) / (count + 1)
    return averaged + correction


def get_ema_multi_avg_fn(decay: float = 0.999) -> Callable:
    """An in-place exponential moving average over lists: ema = decay * ema + (1 - decay) * current."""
    _check_decay(decay)

    @no_grad()
    def move_towards(averaged_list, current_list, _count=None):
        for averaged, current in zip(averaged_list, current_list):
            if averaged.dtype.is_floating_point or averaged.dtype.is_complex:
                averaged.lerp_(current, 1 - decay)
            else:  # integer buffers (BatchNorm's batch count): the same average, rounded by copy_
                averaged.copy_(averaged * decay + current * (1 - decay))

    return move_towards


def get_swa_multi_avg_fn() -> Callable:
    """An in-place equal-weight running mean over lists: avg += (current - avg) / (n + 1)."""

    @no_grad()
    def fold_in(averaged_list, current_list, count):
        for averaged, current in zip(averaged_list, current_list):
            averaged.copy_(_running_mean(averaged, current, count))

    return fold_in


def get_ema_avg_fn(decay: float = 0.999) -> Callable:
    """The exponential moving average of one tensor: returns decay * ema + (1 - decay) * current."""
    _check_decay(decay)

    @no_grad()
    def moved_towards(averaged, current, count):
        return (1 - decay) * current + decay * averaged

    return moved_towards


def get_swa_avg_fn() -> Callable:
    """The running mean of one tensor: returns avg + (current - avg) / (n + 1)."""

    @no_grad()
    def folded_in(averaged, current, count):
        return _running_mean(averaged, current, count)

    return folded_in


def _by_device_and_dtype(averaged: list, current: list) -> list:
    """(averaged, current) list pairs, one per (device, dtype) of the averaged tensors, in
    first-seen order; the current tensors take their partner's dtype."""
    batches: dict = {}
    for mine, theirs in zip(averaged, current):
        mine_list, their_list = batches.setdefault((str(mine.device), mine.dtype), ([], []))
        mine_list.append(mine)
        their_list.append(theirs.to(mine.dtype))
    return list(batches.values())


class AveragedModel(Module):
    """A deep copy of ``model`` whose weights ``update_parameters`` averages.

    ``avg_fn(averaged, current, num_averaged)`` returns one averaged tensor; ``multi_avg_fn`` updates
    lists in place; with neither, the SWA running mean. The first update copies the model. Without
    ``use_buffers`` the buffers are copied from the model on every update (BatchNorm statistics are
    then usually recomputed with :func:`update_bn`); with it, buffers are averaged as parameters.
    """

    def __init__(self, model: Module, device=None, avg_fn: Callable | None = None,
                 multi_avg_fn: Callable | None = None, use_buffers: bool = False) -> None:
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        super().__init__()
        copied = copy.deepcopy(model)
        self.module = copied if device is None else copied.to(device)
        # A buffer, so that it is saved with the averaged weights and moves with the module.
        self.register_buffer("n_averaged", tensor(0, dtype=_dt.int64, device=device))
        self.avg_fn, self.multi_avg_fn, self.use_buffers = avg_fn, multi_avg_fn, use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def _tracked(self, module: Module) -> list[Tensor]:
        """The tensors of ``module`` that are averaged, detached, in a fixed order."""
        tensors = list(module.parameters())
        if self.use_buffers:
            tensors += list(module.buffers())
        return [t.detach() for t in tensors]

    def _fold(self, averaged: list, current: list) -> None:
        """Apply the averaging rule, ``n_averaged`` models being in ``averaged`` so far."""
        if self.avg_fn is not None:
            for mine, theirs in zip(averaged, current):
                mine.copy_(self.avg_fn(mine, theirs, self.n_averaged.to(mine.device)))
            return
        rule = self.multi_avg_fn if self.multi_avg_fn is not None else get_swa_multi_avg_fn()
        for mine_list, their_list in _by_device_and_dtype(averaged, current):
            rule(mine_list, their_list, self.n_averaged.to(mine_list[0].device))

    def update_parameters(self, model: Module) -> None:
        """Fold ``model``'s current weights into the average and count it."""
        averaged = self._tracked(self.module)
        current = [theirs.to(mine.device) for mine, theirs in zip(averaged, self._tracked(model))]
        with no_grad():
            if self.n_averaged.item() == 0:
                for mine, theirs in zip(averaged, current):
                    mine.copy_(theirs)
            else:
                self._fold(averaged, current)
            if not self.use_buffers:
                # Buffers are not averaged: they follow the model's.
                for mine, theirs in zip(self.module.buffers(), model.buffers()):
                    mine.detach().copy_(theirs.detach().to(mine.device))
            self.n_averaged += 1


# --- BatchNorm statistics ----------------------------------------------------------------------------
@no_grad()
def update_bn(loader, model: Module, device=None) -> None:
    """Recompute the BatchNorm running statistics of ``model`` with one pass over ``loader``.

    Each batch (or its first element, when the loader yields tuples or lists) is moved to
    ``device`` when one is given; the statistics become the cumulative average over the batches.
    """
    norms = [m for m in model.modules() if isinstance(m, _BatchNorm) and not isinstance(m, _InstanceNorm)]
    if not norms:
        return
    kept_momenta = [norm.momentum for norm in norms]
    for norm in norms:
        norm.reset_running_stats()
        norm.momentum = None  # None: a cumulative average instead of an exponential one
    mode = model.training
    model.train()
    for batch in loader:
        inputs = batch[0] if isinstance(batch, (list, tuple)) else batch
        model(inputs if device is None else inputs.to(device))
    for norm, momentum in zip(norms, kept_momenta):
        norm.momentum = momentum
    model.train(mode)


# --- the learning-rate schedule ----------------------------------------------------------------------
def _cosine_progress(fraction: float) -> float:
    return (1 - math.cos(math.pi * fraction)) / 2


def _linear_progress(fraction: float) -> float:
    return fraction


_ANNEALING = {"cos": _cosine_progress, "linear": _linear_progress}


def _undo_annealing(rate: float, target: float, weight: float) -> float:
    """The starting rate that ``weight`` of the way towards ``target`` gives ``rate``."""
    if weight == 1:
        return target
    return (rate - weight * target) / (1 - weight)


class SWALR(LRScheduler):
    """Anneal each group's learning rate from its value to ``swa_lr`` over ``anneal_epochs``
    steps (cosine or linear), then hold it there."""

    def __init__(self, optimizer: Optimizer, swa_lr, anneal_epochs: int = 10, anneal_strategy: str = "cos",
                 last_epoch: int = -1) -> None:
        targets = _per_group("swa_lr", optimizer, swa_lr)
        for group, target in zip(optimizer.param_groups, targets):
            group["swa_lr"] = target
        if anneal_strategy not in tuple(_ANNEALING):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        if isinstance(anneal_epochs, bool) or not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        # The strategy is kept by name: scheduler state dicts hold plain data.
        self._anneal_strategy = anneal_strategy
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @property
    def anneal_func(self) -> Callable[[float], float]:
        """How far towards swa_lr the rate is (0 to 1) at a fraction (0 to 1) of the annealing."""
        return _ANNEALING[self._anneal_strategy]

    def _fraction_done(self, steps: int) -> float:
        return min(1.0, max(0.0, steps / max(1, self.anneal_epochs)))

    def get_lr(self) -> list:
        # The step count, not last_epoch, measures the annealing, as PyTorch's; each group's
        # current rate is traced back to the schedule's start, so that other schedulers may chain.
        steps = self._step_count - 1
        if self.anneal_epochs == 0:
            steps = max(1, steps)  # no annealing: swa_lr from the first step on
        weight_before = self.anneal_func(self._fraction_done(steps - 1))
        weight_now = self.anneal_func(self._fraction_done(steps))
        rates = []
        for group in self.optimizer.param_groups:
            start = _undo_annealing(group["lr"], group["swa_lr"], weight_before)
            rates.append(group["swa_lr"] * weight_now + start * (1 - weight_now))
        return rates
