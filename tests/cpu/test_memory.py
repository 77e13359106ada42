"""The CPU caching allocator: memory returns when the last reference dies, and is reused."""
import gc

import pytest

import tensorplug as tp

MB = 1 << 20


def stats():
    gc.collect()
    return tp.cpu.memory_stats()


@pytest.fixture(autouse=True)
def _clean_cache():
    """Start and end every test with an empty cache."""
    gc.collect()
    tp.cpu.empty_cache()
    yield
    gc.collect()
    tp.cpu.empty_cache()


def test_memory_stats_keys():
    """memory_stats reports allocated and reserved bytes, and the helpers agree with it."""
    s = stats()
    assert {"allocated_bytes", "reserved_bytes"} <= set(s)
    assert s["reserved_bytes"] >= s["allocated_bytes"] >= 0
    assert tp.cpu.memory_allocated() == s["allocated_bytes"]
    assert tp.cpu.memory_reserved() == s["reserved_bytes"]


def test_storage_returns_when_the_last_tensor_dies():
    """allocated_bytes grows by a tensor's size and drops back at `del`; reserved keeps the block."""
    before = stats()
    t = tp.empty(MB, dtype=tp.float32)  # 4 MiB
    during = stats()
    assert during["allocated_bytes"] - before["allocated_bytes"] >= 4 * MB
    del t
    after = tp.cpu.memory_stats()  # no gc.collect(): reference counting alone must free it
    assert after["allocated_bytes"] == before["allocated_bytes"]
    assert after["reserved_bytes"] >= before["reserved_bytes"] + 4 * MB


def test_empty_cache_releases_reserved_memory():
    """empty_cache() gives cached, unused blocks back: reserved drops to what is allocated."""
    before = stats()
    t = tp.empty(MB, dtype=tp.float32)
    del t
    cached = stats()["reserved_bytes"]
    tp.cpu.empty_cache()
    released = stats()
    assert released["reserved_bytes"] <= cached - 4 * MB
    assert released["reserved_bytes"] <= before["reserved_bytes"]


def test_freed_block_is_reused():
    """A tensor of the same size made after a free reuses the cached block (reserved stays flat)."""
    t = tp.empty(MB, dtype=tp.float32)
    del t
    reserved = stats()["reserved_bytes"]
    u = tp.empty(MB, dtype=tp.float32)
    assert stats()["reserved_bytes"] == reserved
    del u


def test_no_growth_over_repeated_operations():
    """1000 `a + b` calls leave allocated and reserved bytes where one call leaves them."""
    a = tp.ones(1000)
    b = tp.ones(1000)
    c = a + b
    d = (c * 2).sum()
    del c, d
    first = stats()
    for _ in range(1000):
        c = a + b
        d = (c * 2).sum()
        del c, d
    last = stats()
    assert last["allocated_bytes"] == first["allocated_bytes"]
    assert last["reserved_bytes"] <= first["reserved_bytes"]


def test_no_growth_over_repeated_views_and_indexing():
    """Views, casts and advanced indexing in a loop do not leak."""
    t = tp.arange(1000.0).view(10, 100)
    r = t.t()[::2][tp.tensor([0, 3])].double().sum()
    del r
    first = stats()
    for _ in range(300):
        r = t.t()[::2][tp.tensor([0, 3])].double().sum()
        del r
    assert stats()["allocated_bytes"] == first["allocated_bytes"]


def test_views_keep_the_storage_alive():
    """A view keeps its base's storage allocated after the base's name is gone."""
    before = stats()["allocated_bytes"]
    t = tp.arange(MB, dtype=tp.int32)
    v = t[10:20]
    allocated = stats()["allocated_bytes"]
    del t
    assert stats()["allocated_bytes"] == allocated
    churn = [tp.full((MB,), 7, dtype=tp.int32) for _ in range(3)]  # would overwrite a freed block
    assert v.tolist() == list(range(10, 20))
    del churn, v
    assert stats()["allocated_bytes"] == before


def test_numpy_view_keeps_the_storage_alive():
    """An array from .numpy() keeps the storage allocated; it is freed when the array dies too."""
    before = stats()["allocated_bytes"]
    t = tp.arange(MB, dtype=tp.int32)
    n = t.numpy()
    del t
    assert stats()["allocated_bytes"] > before
    assert int(n[12345]) == 12345
    del n
    assert stats()["allocated_bytes"] == before


def test_failed_operation_does_not_leak():
    """An op that raises (broadcast mismatch, division by zero) leaves no allocation behind."""
    a, b = tp.ones(100, dtype=tp.int64), tp.zeros(100, dtype=tp.int64)
    first = stats()["allocated_bytes"]
    for _ in range(50):
        with pytest.raises(ZeroDivisionError):
            a // b
        with pytest.raises(RuntimeError):
            a + tp.ones(3, dtype=tp.int64)
    assert stats()["allocated_bytes"] == first


def test_huge_allocation_failure_leaves_stats_consistent():
    """A failed huge allocation raises and does not change the statistics."""
    first = stats()
    with pytest.raises((RuntimeError, MemoryError)):
        tp.empty(2**40)
    after = stats()
    assert after["allocated_bytes"] == first["allocated_bytes"]
    assert after["reserved_bytes"] == first["reserved_bytes"]
