"""The key-value stores (HashStore, FileStore, TCPStore, PrefixStore): PyTorch 2.13's semantics
in one process, checked against torch when it is installed, and shared between real processes
(plain subprocesses and mpiexec ranks)."""
import datetime
import importlib.util
import multiprocessing
import os
import shutil
import subprocess
import sys
import threading

import pytest

import tensorplug.distributed as dist

try:
    import torch.distributed as torch_dist
except ImportError:  # the reference; the stores do not need it
    torch_dist = None

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "scripts", "stores.py")
SHORT = datetime.timedelta(seconds=0.3)


def _make(kind, lib, tmp_path):
    if kind == "hash":
        return lib.HashStore()
    if kind == "file":
        return lib.FileStore(str(tmp_path / f"store-{lib.__name__}"), 1)
    if kind == "tcp":
        return lib.TCPStore("127.0.0.1", 0, 1, True, timeout=datetime.timedelta(seconds=5))
    return lib.PrefixStore("pre", lib.HashStore())


def _session(store, torch_filestore=False):
    """A sequence of calls whose answers PyTorch documents; returned for comparison. PyTorch's
    FileStore has no queues and lists its internal key (torch_filestore leaves those out)."""
    out = []
    store.set("a", "x")
    store.set("b", b"bytes")
    out += [store.get("a"), store.get("b"), store.add("n", 3), store.add("n", -1), store.get("n")]
    out += [store.compare_set("a", "x", "y"), store.compare_set("a", "wrong", "z"), store.get("a")]
    out += [store.compare_set("new", "", "v"), store.compare_set("absent", "nonempty", "v"), store.check(["absent"])]
    out += [store.check(["a", "n"]), store.check(["a", "zz"])]
    store.append("ap", "1")
    store.append("ap", "2")
    store.multi_set(["m1", "m2"], ["1", b"2"])
    out += [store.get("ap"), store.multi_get(["m1", "m2", "a"])]
    before = store.num_keys()
    out += [store.delete_key("a"), store.delete_key("a"), before - store.num_keys()]
    if torch_filestore:
        return out
    out += [sorted(store.list_keys())]
    store.queue_push("q", "first")
    store.queue_push("q", "second")
    out += [store.queue_len("q"), store.queue_pop("q"), store.queue_len("q")]
    store.set_timeout(SHORT)
    out += [store.timeout]
    return out


EXPECTED = [b"x", b"bytes", 3, 2, b"2", b"y", b"y", b"y", b"v", b"nonempty", False, True, False, b"12",
            [b"1", b"2", b"y"], True, False, 1, ["ap", "b", "m1", "m2", "n", "new"], 2, b"first", 1, SHORT]


@pytest.mark.parametrize("kind", ["hash", "file", "tcp", "prefix"])
def test_store_semantics(kind, tmp_path):
    expected = list(EXPECTED)
    if kind == "file":
        expected[16] = True  # PyTorch's FileStore.delete_key answers True even for a missing key
    assert _session(_make(kind, dist, tmp_path)) == expected


@pytest.mark.skipif(torch_dist is None, reason="PyTorch (the reference) is not installed: pip install torch==2.13.0")
@pytest.mark.parametrize("kind", ["hash", "file", "tcp", "prefix"])
def test_store_semantics_match_torch(kind, tmp_path):
    ours, theirs = _make(kind, dist, tmp_path), _make(kind, torch_dist, tmp_path)
    assert _session(ours, kind == "file") == _session(theirs, kind == "file")
    # num_keys counts each store kind's own bookkeeping key as PyTorch's does.
    assert ours.num_keys() == theirs.num_keys()
    assert ours.has_extended_api() == theirs.has_extended_api()


@pytest.mark.parametrize("kind", ["hash", "file", "tcp", "prefix"])
def test_blocking_calls_time_out_with_dist_store_error(kind, tmp_path):
    store = _make(kind, dist, tmp_path)
    store.set_timeout(SHORT)
    assert issubclass(dist.DistStoreError, RuntimeError)
    with pytest.raises(dist.DistStoreError, match="wait timeout after 300ms, keys: missing"):
        store.get("missing")
    with pytest.raises(dist.DistStoreError, match="timeout after 100ms"):
        store.wait(["missing"], datetime.timedelta(seconds=0.1))
    with pytest.raises(dist.QueueEmptyError, match="queue is empty"):
        store.queue_pop("empty", block=False)


@pytest.mark.parametrize("kind", ["hash", "tcp"])
def test_get_returns_when_another_thread_sets_the_key(kind, tmp_path):
    store = _make(kind, dist, tmp_path)
    other = store.clone()
    timer = threading.Timer(0.2, lambda: other.set("late", "here"))
    timer.start()
    assert store.get("late") == b"here"
    timer.join()


def test_hash_store_counts_atomically_across_threads():
    store = dist.HashStore()
    threads = [threading.Thread(target=lambda: [store.add("c", 1) for _ in range(500)]) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.get("c") == b"2000"


def test_prefix_store_namespaces_keys():
    base = dist.HashStore()
    nested = dist.PrefixStore("a", dist.PrefixStore("b", base))
    nested.set("x", "1")
    assert base.list_keys() == ["b/a/x"] and nested.list_keys() == ["x"] and nested.get("x") == b"1"
    assert not dist.PrefixStore("a", base).check(["x"])
    assert nested.underlying_store.underlying_store is base


def test_bad_arguments_are_clear_errors(tmp_path):
    store = dist.HashStore()
    with pytest.raises(TypeError, match="keys must be str"):
        store.get(1)
    with pytest.raises(TypeError, match="values must be bytes or str"):
        store.set("k", 5)
    with pytest.raises(TypeError, match="timedelta"):
        store.set_timeout(5)
    store.set("text", "abc")
    with pytest.raises(ValueError, match="not an integer counter"):
        store.add("text", 1)
    with pytest.raises(ValueError, match="2 keys but 1 values"):
        store.multi_set(["a", "b"], ["1"])
    with pytest.raises(dist.DistNetworkError, match="master's port"):
        dist.TCPStore("127.0.0.1", 0, 1, False)
    not_ours = tmp_path / "other"
    not_ours.write_bytes(b"something else")
    with pytest.raises(ValueError, match="not a tensorplug FileStore file"):
        dist.FileStore(str(not_ours))


def test_tcp_store_master_waits_for_workers_and_clients_fail_clearly():
    with pytest.raises(dist.DistStoreError, match="1/3 clients joined"):
        dist.TCPStore("127.0.0.1", 0, 3, True, timeout=datetime.timedelta(seconds=0.5))
    master = dist.TCPStore("127.0.0.1", 0, 2, True, timeout=datetime.timedelta(seconds=5), wait_for_workers=False)
    assert master.num_keys() == 0 and master.port > 0 and master.host == "127.0.0.1"
    client = dist.TCPStore("127.0.0.1", master.port, 2, False, timeout=datetime.timedelta(seconds=5))
    assert master.num_keys() == 1 and master.list_keys() == []  # the joined-workers counter, as in PyTorch
    # A second master on the same port shares the server only with multi_tenant=True.
    tenant = dist.TCPStore("127.0.0.1", master.port, None, True, multi_tenant=True)
    client.set("k", "v")
    assert tenant.get("k") == b"v"
    port = master.port
    del master, tenant, client
    with pytest.raises(dist.DistNetworkError, match="timed out after 300ms while trying to connect"):
        dist.TCPStore("127.0.0.1", port, None, False, timeout=SHORT)


def test_file_and_tcp_stores_shared_by_plain_processes(tmp_path):
    """Three separate Python processes (not MPI) see each other's keys in both stores."""
    path = str(tmp_path / "store")
    procs = [subprocess.Popen([sys.executable, SCRIPT, "plain", path, str(r), "3"], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for r in range(3)]
    outputs = [p.communicate(timeout=120)[0] for p in procs]
    for r, (p, out) in enumerate(zip(procs, outputs)):
        assert p.returncode == 0, out
        for name in ("file", "tcp", "prefix"):
            assert f"rank {r}: {name} store OK" in out, out
    leaders = {line.split("(")[1] for out in outputs for line in out.splitlines() if "tcp store OK" in line}
    assert len(leaders) == 1  # every process agreed on who won compare_set


def _count_in_child(path, port, child):
    """A multiprocessing child: adds to counters in a FileStore and in the parent's TCPStore."""
    timeout = datetime.timedelta(seconds=30)
    stores = [dist.FileStore(path, 4, timeout), dist.TCPStore("127.0.0.1", port, None, False, timeout)]
    for store in stores:
        for _ in range(25):
            store.add("count", 1)
        store.set(f"child{child}", str(os.getpid()))


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs the fork start method")
def test_stores_shared_with_multiprocessing_children(tmp_path):
    """multiprocessing children see the parent's FileStore and TCPStore, and it sees theirs."""
    path = str(tmp_path / "store")
    parent_file = dist.FileStore(path, 4)
    master = dist.TCPStore("127.0.0.1", 0, None, True, timeout=datetime.timedelta(seconds=30))
    context = multiprocessing.get_context("fork")
    children = [context.Process(target=_count_in_child, args=(path, master.port, c)) for c in range(3)]
    for c in children:
        c.start()
    for store in (parent_file, master):
        for c in children:
            assert store.get(f"child{children.index(c)}") == str(c.pid).encode()
    for c in children:
        c.join(timeout=60)
        assert c.exitcode == 0
    assert parent_file.get("count") == b"75" and master.get("count") == b"75"


def _mpiexec():
    beside = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return beside if os.path.exists(beside) else shutil.which("mpiexec")


@pytest.mark.skipif(importlib.util.find_spec("mpi4py") is None or _mpiexec() is None,
                    reason="mpi4py and an MPI launcher are needed: pip install tensorplug[distributed]")
def test_file_and_tcp_stores_shared_by_mpiexec_ranks(tmp_path):
    out = subprocess.run([_mpiexec(), "-n", "2", sys.executable, SCRIPT, "mpi", str(tmp_path / "store")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    for r in range(2):
        for name in ("file", "tcp", "prefix"):
            assert f"rank {r}: {name} store OK" in out.stdout, out.stdout + out.stderr
        assert f"rank {r}: init_process_group with a store OK" in out.stdout, out.stdout + out.stderr


def test_init_process_group_checks_the_store_arguments():
    with pytest.raises(TypeError, match="store must be a tensorplug.distributed Store"):
        dist.init_process_group("gloo", store=object(), world_size=1, rank=0)
    with pytest.raises(ValueError, match="world_size must be positive if using store"):
        dist.init_process_group("gloo", store=dist.HashStore())
    assert not dist.is_initialized()
