"""DistributedSampler: every rank gets a disjoint share, padded or trimmed as PyTorch's."""
import pytest

from tensorplug.utils.data import DistributedSampler


def _shares(n, replicas, **kw):
    return [list(DistributedSampler(range(n), num_replicas=replicas, rank=r, **kw)) for r in range(replicas)]


@pytest.mark.parametrize("n,replicas", [(10, 2), (10, 3), (7, 4), (3, 5), (0, 2)])
def test_unshuffled_shares_match_pytorch(n, replicas):
    """Without shuffling: rank r takes indices r, r + R, ... of the list padded with its first
    elements (PyTorch's documented rule); together the shares cover the dataset."""
    shares = _shares(n, replicas, shuffle=False)
    total = -(-n // replicas) * replicas
    padded = list(range(n)) + (list(range(n)) * replicas)[:total - n] if n else []
    assert shares == [padded[r:total:replicas] for r in range(replicas)]
    assert all(len(s) == -(-n // replicas) for s in shares)


@pytest.mark.parametrize("n,replicas", [(10, 3), (7, 4), (8, 2)])
def test_drop_last_trims_to_an_even_share(n, replicas):
    shares = _shares(n, replicas, shuffle=False, drop_last=True)
    per_rank = n // replicas
    assert all(len(s) == per_rank for s in shares)
    assert sorted(i for s in shares for i in s) == list(range(per_rank * replicas))


def test_shuffle_is_shared_by_ranks_and_changes_with_the_epoch():
    """Every rank draws the same permutation (seed + epoch), so the shares stay disjoint."""
    samplers = [DistributedSampler(range(20), num_replicas=2, rank=r, seed=5) for r in range(2)]
    first = [list(s) for s in samplers]
    assert sorted(first[0] + first[1]) == list(range(20))
    assert first == [list(s) for s in samplers]  # same epoch, same order
    for s in samplers:
        s.set_epoch(1)
    second = [list(s) for s in samplers]
    assert sorted(second[0] + second[1]) == list(range(20)) and second != first


def test_bad_rank_is_refused():
    with pytest.raises(ValueError, match="Invalid rank 2"):
        DistributedSampler(range(4), num_replicas=2, rank=2)
    with pytest.raises(ValueError, match="init_process_group"):
        DistributedSampler(range(4))
