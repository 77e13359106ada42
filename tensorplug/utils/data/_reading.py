"""How one task of a DataLoader becomes one batch, in the main process or in a worker.

A task is what the loader's index sampler yields: a list of indices (with auto-batching) or one
index. A map-style dataset is indexed with it. A stream (IterableDataset) has no indices: its
task is a list of placeholders whose length is the number of samples to take, or a single
placeholder for one sample. The samples then go through ``collate_fn``.
"""
from __future__ import annotations

import itertools
from typing import Any, Callable

#: A reader turns a task into a batch; it raises StopIteration when a stream has no batch left.
Reader = Callable[[Any], Any]


def make_reader(dataset, *, stream: bool, batched: bool, collate_fn: Callable, drop_last: bool) -> Reader:
    """The reader for one epoch of ``dataset`` (for a stream this calls ``iter(dataset)``)."""
    if stream:
        return _StreamReader(iter(dataset), batched, collate_fn, drop_last)

    def read_indexed(task):
        if not batched:
            return collate_fn(dataset[task])
        # A dataset may read a whole batch at once (PyTorch's __getitems__ protocol).
        read_many = getattr(dataset, "__getitems__", None)
        samples = read_many(task) if read_many is not None else [dataset[index] for index in task]
        return collate_fn(samples)

    return read_indexed


class _StreamReader:
    """Takes ``len(task)`` samples (or one) from a stream per call."""

    def __init__(self, samples, batched: bool, collate_fn: Callable, drop_last: bool) -> None:
        self._samples = samples
        self._batched = batched
        self._collate_fn = collate_fn
        self._drop_last = drop_last
        self._exhausted = False

    def __call__(self, task):
        if self._exhausted:
            raise StopIteration
        if not self._batched:
            return self._collate_fn(next(self._samples))  # StopIteration ends the stream
        wanted = len(task)
        samples = list(itertools.islice(self._samples, wanted))
        # A short batch means the stream ended: no later call may ask it for more.
        self._exhausted = len(samples) < wanted
        if not samples or (self._exhausted and self._drop_last):
            raise StopIteration
        return self._collate_fn(samples)
