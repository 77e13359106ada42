"""Datasets: the map-style and iterable bases, and the ways to build one dataset from others
(TensorDataset, Subset, ConcatDataset, ChainDataset, StackDataset, random_split)."""
from __future__ import annotations

import bisect
import itertools
import math
from typing import Iterable, Iterator, Sequence

from ...frontend.tensor import Tensor

__all__ = [
    "Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset", "ChainDataset", "StackDataset",
    "random_split",
]


class Dataset:
    """A map-style dataset: ``__getitem__(index)`` and usually ``__len__``."""

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: "Dataset") -> "ConcatDataset":
        """``a + b`` reads a's samples, then b's."""
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset read as a stream: ``__iter__``. With workers, each worker iterates its own copy
    (use ``get_worker_info()`` inside ``__iter__`` to split the stream)."""

    def __iter__(self) -> Iterator:
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other: "IterableDataset") -> "ChainDataset":
        """``a + b`` streams a's samples, then b's."""
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Samples are tuples of the tensors' rows: ``TensorDataset(x, y)[i] == (x[i], y[i])``."""

    def __init__(self, *tensors: Tensor) -> None:
        if len({column.shape[0] for column in tensors}) > 1:
            raise ValueError("Size mismatch between tensors")
        self.tensors = tensors

    def __len__(self) -> int:
        return self.tensors[0].shape[0]

    def __getitem__(self, index):
        return tuple(column[index] for column in self.tensors)


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``, in that order."""

    def __init__(self, dataset: Dataset, indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, position):
        # A list of positions (a batch) reaches the dataset as one list of its own indices, so a
        # dataset that reads batches at once still does.
        if isinstance(position, list):
            return self.dataset[list(map(self.indices.__getitem__, position))]
        return self.dataset[self.indices[position]]


class ConcatDataset(Dataset):
    """Map-style datasets one after another."""

    def __init__(self, datasets) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("datasets should not be an empty iterable")
        if any(isinstance(part, IterableDataset) for part in self.datasets):
            raise ValueError("ConcatDataset does not support IterableDataset")
        #: Where each part ends, counted in samples of the whole: [len(d0), len(d0) + len(d1), ...].
        self.cumulative_sizes = list(itertools.accumulate(len(part) for part in self.datasets))

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        total = len(self)
        if idx < -total:
            raise ValueError("absolute value of index should not exceed dataset length")
        position = idx + total if idx < 0 else idx
        # The first part that ends after `position` holds it (empty parts end where the one
        # before them ends, so they are never chosen).
        part = bisect.bisect_right(self.cumulative_sizes, position)
        part_start = self.cumulative_sizes[part - 1] if part > 0 else 0
        return self.datasets[part][position - part_start]


class ChainDataset(IterableDataset):
    """Streams one after another, read lazily: each epoch iterates every part in turn."""

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        # Kept as a list so that every epoch (and len()) sees every part; PyTorch keeps the
        # iterable as given, so a generator there yields its parts once.
        self.datasets = list(datasets)
        # PyTorch finds a map-style part only when the chain is read, with an AssertionError;
        # a wrong part is the caller's mistake, so it is named here, before any epoch starts.
        for position, part in enumerate(self.datasets):
            if not isinstance(part, IterableDataset):
                raise TypeError(
                    f"ChainDataset only supports IterableDataset, but part {position} is {type(part).__name__}")

    def __iter__(self) -> Iterator:
        for part in self.datasets:
            yield from part

    def __len__(self) -> int:
        # A part without __len__ raises Python's TypeError, as in PyTorch.
        return sum(len(part) for part in self.datasets)


class StackDataset(Dataset):
    """Datasets of one length read side by side: sample i is the tuple of each positional
    dataset's sample i, or the dict of each keyword dataset's, as ``StackDataset(x=a, y=b)[i]``."""

    datasets: tuple | dict

    def __init__(self, *args: Dataset, **kwargs: Dataset) -> None:
        if args and kwargs:
            raise ValueError(
                "Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) like input/output, "
                "but both types are given.")
        if not args and not kwargs:
            raise ValueError("At least one dataset should be passed")
        self.datasets = args if args else kwargs
        parts = args if args else kwargs.values()
        lengths = [len(part) for part in parts]
        if len(set(lengths)) > 1:
            raise ValueError(f"Size mismatch between datasets: lengths {lengths}")
        self._length = lengths[0]

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {name: part[index] for name, part in self.datasets.items()}
        return tuple(part[index] for part in self.datasets)

    def __getitems__(self, indices: list) -> list:
        """The samples at ``indices`` in one call: a part that reads batches (``__getitems__``)
        reads its share at once, the others one index at a time."""
        if isinstance(self.datasets, dict):
            columns = {name: self._read_batch(part, indices) for name, part in self.datasets.items()}
            return [dict(zip(columns, row)) for row in zip(*columns.values())]
        columns = [self._read_batch(part, indices) for part in self.datasets]
        return list(zip(*columns))

    @staticmethod
    def _read_batch(part: Dataset, indices: list) -> list:
        read_many = getattr(part, "__getitems__", None)
        if read_many is None:
            return [part[index] for index in indices]
        samples = read_many(indices)
        if len(samples) != len(indices):
            raise ValueError(f"Nested dataset's output size mismatch. Expected {len(indices)}, got {len(samples)}")
        return samples


def _lengths_from_fractions(total: int, fractions: Sequence[float]) -> list[int]:
    """Floor each fraction of ``total``; the samples left over go one each to the first subsets,
    round-robin (PyTorch's rule)."""
    for position, fraction in enumerate(fractions):
        if not 0 <= fraction <= 1:
            raise ValueError(f"Fraction at index {position} is not between 0 and 1")
    lengths = [math.floor(total * fraction) for fraction in fractions]
    for extra in range(total - sum(lengths)):
        lengths[extra % len(lengths)] += 1
    return lengths


def random_split(dataset: Dataset, lengths: Sequence, generator=None) -> list[Subset]:
    """Split ``dataset`` into non-overlapping random subsets of the given lengths, or fractions
    summing to 1 (the remainder of flooring goes one by one to the first subsets), as PyTorch."""
    from .sampler import randperm

    requested = sum(lengths)
    # Lengths are fractions when they add up to 1 (within rounding) and not beyond it.
    if requested <= 1 and math.isclose(requested, 1):
        lengths = _lengths_from_fractions(len(dataset), lengths)
    if sum(lengths) != len(dataset):
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    shuffled = randperm(len(dataset), generator).tolist()
    ends = list(itertools.accumulate(lengths))
    return [Subset(dataset, shuffled[end - length:end]) for length, end in zip(lengths, ends)]
