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
import itertools
import math
from typing import Callable

from ..frontend import dtypes as _dt
from ..frontend.autograd import no_grad
from ..frontend.factories import tensor
from ..nn.instancenorm import _InstanceNorm
from ..nn.layers import _BatchNorm
from ..nn.module import Module
from .lr_scheduler import LRScheduler, _per_group
from .optimizer import Optimizer

__all__ = ["AveragedModel", "SWALR", "update_bn", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn", "get_ema_avg_fn",
           "get_swa_avg_fn"]


def _is_inexact(t) -> bool:
    return t.dtype.is_floating_point or t.dtype.is_complex


def get_ema_multi_avg_fn(decay: float = 0.999) -> Callable:
    """An in-place exponential moving average over lists: ema = decay * ema + (1 - decay) * current."""
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")

    @no_grad()
    def ema_update(ema_param_list, current_param_list, _num_averaged=None):
        for ema, current in zip(ema_param_list, current_param_list):
            if _is_inexact(ema):
                ema.lerp_(current, 1 - decay)
            else:
                ema.copy_(ema * decay + current * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn() -> Callable:
    """An in-place equal-weight running mean over lists: avg += (current - avg) / (n + 1)."""

    @no_grad()
    def swa_update(averaged_param_list, current_param_list, num_averaged):
        for averaged, current in zip(averaged_param_list, current_param_list):
            averaged.copy_(averaged + (current - averaged) / (num_averaged + 1))

    return swa_update


def get_ema_avg_fn(decay: float = 0.999) -> Callable:
    """The exponential moving average of one tensor: returns decay * ema + (1 - decay) * current."""
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")

    @no_grad()
    def ema_update(ema_param, current_param, num_averaged):
        return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn() -> Callable:
    """The running mean of one tensor: returns avg + (current - avg) / (n + 1)."""

    @no_grad()
    def swa_update(averaged_param, current_param, num_averaged):
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


class AveragedModel(Module):
    """A deep copy of ``model`` whose weights ``update_parameters`` averages.

    ``avg_fn(averaged, current, num_averaged)`` returns one averaged tensor; ``multi_avg_fn`` updates
    lists in place; with neither, the SWA running mean. The first update copies the model. Without
    ``use_buffers`` the buffers are copied from the model on every update (BatchNorm statistics are
    then usually recomputed with :func:`update_bn`); with it, buffers are averaged as parameters.
    """

    def __init__(self, model: Module, device=None, avg_fn: Callable | None = None,
                 multi_avg_fn: Callable | None = None, use_buffers: bool = False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", tensor(0, dtype=_dt.int64, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def _averaged_tensors(self, model: Module) -> tuple:
        if self.use_buffers:
            mine = itertools.chain(self.module.parameters(), self.module.buffers())
            theirs = itertools.chain(model.parameters(), model.buffers())
        else:
            mine, theirs = self.parameters(), model.parameters()
        return list(mine), list(theirs)

    def update_parameters(self, model: Module) -> None:
        """Fold ``model``'s current weights into the average and count it."""
        mine, theirs = self._averaged_tensors(model)
        averaged = [p.detach() for p in mine]
        current = [p.detach().to(a.device) for p, a in zip(theirs, averaged)]
        first = int(self.n_averaged.item()) == 0
        with no_grad():
            if first:
                for a, c in zip(averaged, current):
                    a.copy_(c)
            elif self.avg_fn is not None:
                for a, c in zip(averaged, current):
                    a.copy_(self.avg_fn(a, c, self.n_averaged.to(a.device)))
            else:
                update = self.multi_avg_fn if self.multi_avg_fn is not None else get_swa_multi_avg_fn()
                for group_averaged, group_current in _grouped_by_device_and_dtype(averaged, current):
                    update(group_averaged, group_current, self.n_averaged.to(group_averaged[0].device))
            if not self.use_buffers:
                # Buffers are not averaged: keep them in step with the model's.
                for mine_buffer, model_buffer in zip(self.module.buffers(), model.buffers()):
                    mine_buffer.detach().copy_(model_buffer.detach().to(mine_buffer.device))
            self.n_averaged += 1


def _grouped_by_device_and_dtype(averaged: list, current: list) -> list:
    """Pairs of lists, one pair per (device, dtype) of the averaged tensors, in first-seen order."""
    groups: dict = {}
    for a, c in zip(averaged, current):
        pair = groups.setdefault((str(a.device), a.dtype), ([], []))
        pair[0].append(a)
        pair[1].append(c.to(a.dtype))
    return list(groups.values())


@no_grad()
def update_bn(loader, model: Module, device=None) -> None:
    """Recompute the BatchNorm running statistics of ``model`` with one pass over ``loader``.

    Each batch (or its first element, when the loader yields tuples or lists) is moved to
    ``device`` when one is given; the statistics become the cumulative average over the batches.
    """
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm) and not isinstance(module, _InstanceNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    for input in loader:
        if isinstance(input, (list, tuple)):
            input = input[0]
        if device is not None:
            input = input.to(device)
        model(input)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's learning rate from its value to ``swa_lr`` over ``anneal_epochs``
    steps (cosine or linear), then hold it there."""

    def __init__(self, optimizer: Optimizer, swa_lr, anneal_epochs: int = 10, anneal_strategy: str = "cos",
                 last_epoch: int = -1):
        for swa_lr_value, group in zip(_per_group("swa_lr", optimizer, swa_lr), optimizer.param_groups):
            group["swa_lr"] = swa_lr_value
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._anneal_strategy = anneal_strategy
        if isinstance(anneal_epochs, bool) or not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    def _anneal(self, t: float) -> float:
        if self._anneal_strategy == "linear":
            return t
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr: float, swa_lr: float, alpha: float) -> float:
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self) -> list:
        # The step count, not last_epoch, measures the annealing, as PyTorch's; the rate before
        # this step is undone to the schedule's start, so that other schedulers may chain.
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self._anneal(prev_t)
        groups = self.optimizer.param_groups
        prev_lrs = [self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha) for group in groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self._anneal(t)
        return [group["swa_lr"] * alpha + lr * (1 - alpha) for group, lr in zip(groups, prev_lrs)]
