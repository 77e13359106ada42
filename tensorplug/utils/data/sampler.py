"""Samplers: which dataset indices a DataLoader reads, in which order, and how they form batches.

Every random sampler draws lazily: nothing is taken from a generator until the first index is
asked for, and each draw happens at the same point of the stream on every run, so a seeded
generator (or ``tp.manual_seed`` for the default one) fixes the whole order, epoch after epoch.
"""
from __future__ import annotations

import itertools
from typing import Iterator, Sized

from ...frontend import dtypes as _dt
from ...frontend.random import Generator

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler",
           "randperm"]

#: How many indices RandomSampler(replacement=True) draws from its generator at a time: small
#: enough that num_samples may exceed memory, large enough that a draw is not per index.
_DRAW_CHUNK = 32


def randperm(n: int, generator: Generator | None = None):
    """A random permutation of ``range(n)`` as an int64 tensor, drawn from ``generator``."""
    from ...frontend.factories import rand

    # The order that sorts n float64 uniforms is a uniform permutation; a tie (vanishingly rare)
    # keeps position order, so the result is still a function of the generator's state.
    return rand(n, generator=generator, dtype=_dt.float64).argsort()


def _seeded_from_default() -> Generator:
    """A new generator whose seed is one draw from the default generator: what a sampler given
    no generator uses for one epoch, so ``tp.manual_seed`` decides its order."""
    from ...frontend.factories import empty

    return Generator().manual_seed(int(empty((), dtype=_dt.int64).random_().item()))


def batch_count(samples: int, batch_size: int, drop_last: bool) -> int:
    """How many batches of ``batch_size`` ``samples`` make (a short last one unless ``drop_last``)."""
    whole, rest = divmod(samples, batch_size)
    return whole + (1 if rest and not drop_last else 0)


def _is_positive_int(value, allow_bool: bool) -> bool:
    """PyTorch's test for a count: RandomSampler's accepts True (a bool is an int), the others not."""
    if isinstance(value, bool) and not allow_bool:
        return False
    return isinstance(value, int) and value > 0


def _require_flag(name: str, value, error: type[Exception] = ValueError) -> None:
    """A True/False argument must be a bool (PyTorch's rule and message; 1 and 0 are refused)."""
    if type(value) is not bool:
        raise error(f"{name} should be a boolean value, but got {name}={value}")


class Sampler:
    """Base class: an iterable of dataset indices (or of index lists, for batch samplers)."""

    def __init__(self, data_source=None) -> None:
        pass  # the argument is accepted for subclasses written against PyTorch's base

    def __iter__(self) -> Iterator:
        raise NotImplementedError


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __len__(self) -> int:
        return len(self.data_source)

    def __iter__(self) -> Iterator[int]:
        yield from range(len(self.data_source))


class RandomSampler(Sampler):
    """A random order of the indices (or ``num_samples`` drawn with replacement), from
    ``generator`` when given, else from a generator seeded by the default one."""

    def __init__(self, data_source: Sized, replacement: bool = False, num_samples: int | None = None, generator=None) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self.generator = generator
        self._requested_samples = num_samples
        _require_flag("replacement", replacement, TypeError)
        if not _is_positive_int(self.num_samples, allow_bool=True):
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        """``num_samples`` as given, else the length of the data source (read on each call)."""
        if self._requested_samples is None:
            return len(self.data_source)
        return self._requested_samples

    def __len__(self) -> int:
        return self.num_samples

    def __iter__(self) -> Iterator[int]:
        # A generator function: the generator is chosen (and the default one drawn from) at the
        # first index, not when iter() is called.
        source = _seeded_from_default() if self.generator is None else self.generator
        draw = self._with_replacement if self.replacement else self._permutations
        yield from draw(len(self.data_source), source)

    def _with_replacement(self, population: int, source: Generator) -> Iterator[int]:
        from ...frontend.factories import randint

        # Chunked, so that num_samples=10**10 starts at once and never sits in memory.
        for start in range(0, self.num_samples, _DRAW_CHUNK):
            count = min(_DRAW_CHUNK, self.num_samples - start)
            yield from randint(0, population, (count,), generator=source).tolist()

    def _permutations(self, population: int, source: Generator) -> Iterator[int]:
        # Whole permutations until num_samples is reached, the last one cut short. That last
        # permutation is drawn even when nothing of it is needed, which fixes where the
        # generator stands for the next epoch.
        whole, rest = divmod(self.num_samples, population)
        for take in itertools.chain(itertools.repeat(population, whole), [rest]):
            yield from randperm(population, source).tolist()[:take]


class SubsetRandomSampler(Sampler):
    """The given indices in a random order."""

    def __init__(self, indices, generator=None) -> None:
        self.indices = indices
        self.generator = generator

    def __len__(self) -> int:
        return len(self.indices)

    def __iter__(self) -> Iterator[int]:
        # Drawn at the first index (a generator function), from the default generator if none.
        order = randperm(len(self.indices), self.generator).tolist()
        yield from map(self.indices.__getitem__, order)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices drawn from ``[0, len(weights))`` with probabilities proportional to
    ``weights`` (with replacement by default), from ``generator`` when given; PyTorch's rules: the
    weights a 1-d sequence (held as float64), ``num_samples`` a positive int, and without
    replacement no more samples than positive weights."""

    def __init__(self, weights, num_samples: int, replacement: bool = True, generator=None) -> None:
        from ...frontend.factories import as_tensor

        if not _is_positive_int(num_samples, allow_bool=False):
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        _require_flag("replacement", replacement)
        as_float64 = as_tensor(weights, dtype=_dt.float64)
        if as_float64.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(as_float64.shape)}")
        self.weights = as_float64
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __len__(self) -> int:
        return self.num_samples

    def __iter__(self) -> Iterator[int]:
        from ...frontend.ops.sampling import multinomial

        # One multinomial call per epoch, made at the first index.
        yield from multinomial(self.weights, self.num_samples, self.replacement, generator=self.generator).tolist()


class BatchSampler(Sampler):
    """Group another sampler's indices into lists of ``batch_size`` (the last one shorter unless
    ``drop_last``)."""

    def __init__(self, sampler, batch_size: int, drop_last: bool) -> None:
        if not _is_positive_int(batch_size, allow_bool=False):
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        _require_flag("drop_last", drop_last)
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __len__(self) -> int:
        return batch_count(len(self.sampler), self.batch_size, self.drop_last)

    def __iter__(self) -> Iterator[list[int]]:
        indices = iter(self.sampler)
        while True:
            batch = list(itertools.islice(indices, self.batch_size))
            if len(batch) == self.batch_size:
                yield batch
                continue
            if batch and not self.drop_last:
                yield batch
            return  # a short batch means the sampler has run out
