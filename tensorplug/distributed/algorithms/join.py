"""Uneven inputs: ``Join``, ``Joinable`` and ``JoinHook`` (``torch.distributed.algorithms.join``).

When ranks have different numbers of batches, a rank that runs out ("joins") would leave the
others waiting in their next collective. Inside ``with Join([model, ...]):`` every iteration
starts with one all-reduce counting the ranks that still train: each training rank adds 1 (from
``Join.notify_join_context``, which a Joinable calls before its own collectives), each joined
rank adds 0 from ``__exit__``, where it loops, running its joinables' ``main_hook`` to shadow the
collectives of one training iteration, until the count reaches 0. Then every rank runs the
``post_hook``s, told whether it was among the last to join.
"""
from __future__ import annotations

import abc

from ... import distributed as dist
from ...frontend import dtypes as _dt
from ...frontend.factories import tensor as _tensor

__all__ = ["Join", "Joinable", "JoinHook"]


class JoinHook:
    """What a Joinable does for a joined rank: ``main_hook()`` once per iteration the others still
    train (shadowing their collectives), ``post_hook(is_last_joiner)`` once everyone joined."""

    def main_hook(self) -> None:
        """Shadows one training iteration's collectives (nothing by default)."""

    def post_hook(self, is_last_joiner: bool) -> None:
        """Runs once every rank has joined (nothing by default)."""


class Joinable(abc.ABC):
    """A class whose per-iteration collectives a Join context can shadow: it gives ``join_hook``,
    ``join_device`` and ``join_process_group``, and calls ``Join.notify_join_context(self)``
    before its collectives of each iteration."""

    @abc.abstractmethod
    def join_hook(self, **kwargs) -> JoinHook:
        """The hook that shadows this object's collectives on a joined rank."""

    @property
    @abc.abstractmethod
    def join_device(self):
        """The device of the join context's own collectives."""

    @property
    @abc.abstractmethod
    def join_process_group(self):
        """The process group of the join context's own collectives (None: the world)."""


class Join:
    """``with Join(joinables, enable=True, throw_on_early_termination=False, **kwargs):`` lets
    ranks with fewer inputs finish early without the others hanging; ``kwargs`` go to every
    ``join_hook``."""

    def __init__(self, joinables: list, enable: bool = True, throw_on_early_termination: bool = False, **kwargs):
        if not joinables:
            raise ValueError("The join context manager requires at least one joinable")
        for j in joinables:
            if not isinstance(j, Joinable):
                raise TypeError(f"Join: {type(j).__name__} is not a Joinable (it must give join_hook, join_device "
                                "and join_process_group)")
        groups = {id(j.join_process_group) for j in joinables}
        if len(groups) > 1:
            raise ValueError("Using join context manager with multiple process groups")
        self._joinables = list(joinables)
        self._hooks = [j.join_hook(**kwargs) for j in joinables]
        self._enable = enable
        self._throw = throw_on_early_termination
        self._group = joinables[0].join_process_group
        self._rank = dist.get_rank(self._group)

    def __enter__(self) -> "Join":
        for position, j in enumerate(self._joinables):
            # Only the first joinable's notify runs the count: one all-reduce per iteration.
            j._join_context = (self, position == 0) if self._enable else None
        return self

    def __exit__(self, kind, value, traceback) -> None:
        try:
            if not self._enable or kind is not None:
                return  # an error inside the block propagates; the other ranks meet their own timeout
            if self._throw:
                self._count(1)  # tells the others, in their notify, that a rank ran out
                raise RuntimeError(f"Rank {self._rank} exhausted all inputs.")
            shadowed = 0
            while self._count(0) > 0:
                for hook in self._hooks:
                    hook.main_hook()
                shadowed += 1
            for hook in self._hooks:
                hook.post_hook(shadowed == 0)
        finally:
            for j in self._joinables:
                j._join_context = None

    def _count(self, mine: int) -> int:
        flag = _tensor([mine], dtype=_dt.int64)
        dist.all_reduce(flag, group=self._group)
        return int(flag.item())

    @staticmethod
    def notify_join_context(joinable: Joinable):
        """Called by ``joinable`` before its collectives of each iteration: counts this rank as
        still training (raises, with throw_on_early_termination, once another rank ran out).
        Returns the number of ranks still training, or None outside an enabled Join."""
        state = getattr(joinable, "_join_context", None)
        if state is None:
            return None
        context, is_first = state
        if not is_first:
            return None
        if context._throw:
            if context._count(0) > 0:
                raise RuntimeError("Detected at least one rank that exhausted inputs. Throwing across all ranks.")
            return dist.get_world_size(context._group)
        return context._count(1)
