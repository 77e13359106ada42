"""Samplers: which indices a DataLoader reads, in which order, and how they group into batches."""
from __future__ import annotations

from typing import Iterator, Sized

from ...frontend import dtypes as _dt
from ...frontend.random import Generator

#: How many indices RandomSampler(replacement=True) draws from its generator at a time.
_REPLACEMENT_CHUNK = 32

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler",
           "randperm"]


def randperm(n: int, generator: Generator | None = None):
    """A random permutation of ``range(n)`` as an int64 tensor, drawn from ``generator``."""
    from ...frontend.factories import rand

    # Sorting float64 uniforms gives a uniform permutation (ties are vanishingly rare and only
    # break by position, deterministically).
    return rand(n, generator=generator, dtype=_dt.float64).argsort()


def _fresh_generator() -> Generator:
    """A generator seeded from the default one, as PyTorch's samplers make when given none."""
    from ...frontend.factories import empty

    seed = int(empty((), dtype=_dt.int64).random_().item())
    return Generator().manual_seed(seed)


class Sampler:
    """Base class: an iterable of dataset indices (or of index lists, for batch samplers)."""

    def __init__(self, data_source=None) -> None:
        pass

    def __iter__(self) -> Iterator:
        raise NotImplementedError


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random order of the indices (or ``num_samples`` drawn with replacement), from
    ``generator`` when given, else from a generator seeded by the default one."""

    def __init__(self, data_source: Sized, replacement: bool = False, num_samples: int | None = None, generator=None) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        from ...frontend.factories import randint

        n = len(self.data_source)
        generator = self.generator if self.generator is not None else _fresh_generator()
        if self.replacement:
            # Draw lazily, a chunk at a time (as PyTorch does): num_samples may be far larger
            # than memory (RandomSampler(..., replacement=True, num_samples=10**10)).
            remaining = self.num_samples
            while remaining > 0:
                count = min(_REPLACEMENT_CHUNK, remaining)
                yield from randint(0, n, (count,), generator=generator).tolist()
                remaining -= count
            return
        for _ in range(self.num_samples // n):
            yield from randperm(n, generator).tolist()
        yield from randperm(n, generator).tolist()[: self.num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order."""

    def __init__(self, indices, generator=None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        for i in randperm(len(self.indices), self.generator).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class BatchSampler(Sampler):
    """Group another sampler's indices into lists of ``batch_size`` (the last one shorter unless
    ``drop_last``)."""

    def __init__(self, sampler, batch_size: int, drop_last: bool) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        batch = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices drawn from ``[0, len(weights))`` with probabilities proportional to
    ``weights`` (with replacement by default), from ``generator`` when given; PyTorch's rules: the
    weights a 1-d sequence (held as float64), ``num_samples`` a positive int, and without
    replacement no more samples than positive weights."""

    def __init__(self, weights, num_samples: int, replacement: bool = True, generator=None) -> None:
        from ...frontend.factories import as_tensor

        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        weights_tensor = as_tensor(weights, dtype=_dt.float64)
        if weights_tensor.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(weights_tensor.shape)}")
        self.weights = weights_tensor
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        from ...frontend.ops.sampling import multinomial

        drawn = multinomial(self.weights, self.num_samples, self.replacement, generator=self.generator)
        yield from drawn.tolist()

    def __len__(self) -> int:
        return self.num_samples
