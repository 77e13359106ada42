"""Samplers: sequential order, seeded random order, and batching."""
import pytest

import tensorplug as tp
from tensorplug.utils.data import BatchSampler, RandomSampler, SequentialSampler


def test_sequential():
    """SequentialSampler yields 0..n-1."""
    assert list(SequentialSampler(range(5))) == [0, 1, 2, 3, 4]


def test_random_sampler_seeded_permutation():
    """A seeded generator gives the same permutation; each epoch draws a new one."""
    a = RandomSampler(range(20), generator=tp.Generator().manual_seed(7))
    b = RandomSampler(range(20), generator=tp.Generator().manual_seed(7))
    first, second = list(a), list(a)
    assert first == list(b) and sorted(first) == list(range(20)) and first != second


def test_random_sampler_without_generator_follows_manual_seed():
    """Without a generator the order comes from the default generator, so tp.manual_seed fixes it."""
    tp.manual_seed(3)
    first = list(RandomSampler(range(10)))
    tp.manual_seed(3)
    assert list(RandomSampler(range(10))) == first


def test_random_sampler_replacement_and_num_samples():
    """replacement=True draws num_samples indices in range; num_samples > n without it repeats permutations."""
    drawn = list(RandomSampler(range(4), replacement=True, num_samples=50, generator=tp.Generator().manual_seed(0)))
    assert len(drawn) == 50 and set(drawn) <= {0, 1, 2, 3}
    longer = list(RandomSampler(range(4), num_samples=10, generator=tp.Generator().manual_seed(0)))
    assert len(longer) == 10 and sorted(longer[:4]) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="num_samples"):
        RandomSampler(range(4), num_samples=0)


@pytest.mark.parametrize("drop_last, expected", [(False, [[0, 1, 2], [3, 4, 5], [6]]), (True, [[0, 1, 2], [3, 4, 5]])])
def test_batch_sampler(drop_last, expected):
    """BatchSampler groups indices; drop_last drops the short tail; len agrees."""
    sampler = BatchSampler(SequentialSampler(range(7)), 3, drop_last)
    assert list(sampler) == expected and len(sampler) == len(expected)
    with pytest.raises(ValueError, match="batch_size"):
        BatchSampler(SequentialSampler(range(7)), 0, False)


def test_random_sampler_with_replacement_draws_lazily():
    """num_samples=10**10 with replacement yields its first indices at once (no up-front draw of
    every index), and the same generator seed gives the same stream."""
    def first(count, seed):
        sampler = RandomSampler(range(5), replacement=True, num_samples=10**10, generator=tp.Generator().manual_seed(seed))
        it = iter(sampler)
        return [next(it) for _ in range(count)]

    drawn = first(100, 4)
    assert len(RandomSampler(range(5), replacement=True, num_samples=10**10)) == 10**10
    assert set(drawn) == {0, 1, 2, 3, 4} and drawn == first(100, 4) and drawn != first(100, 5)
    short = list(RandomSampler(range(3), replacement=True, num_samples=70, generator=tp.Generator().manual_seed(0)))
    assert len(short) == 70 and set(short) <= {0, 1, 2}
