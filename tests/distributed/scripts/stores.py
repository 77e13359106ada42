"""Several processes share a FileStore and a TCPStore. Run under ``mpiexec -n N stores.py mpi FILE``
(mpi4py only tells each process its rank: all communication goes through the stores) or as N
plain processes: ``stores.py plain FILE RANK N``. The TCPStore's master (rank 0) listens on a
port the OS picks and publishes it in the FileStore."""
import datetime
import sys

import tensorplug.distributed as dist

mode, path = sys.argv[1], sys.argv[2]
if mode == "mpi":
    from mpi4py import MPI

    rank, size = MPI.COMM_WORLD.Get_rank(), MPI.COMM_WORLD.Get_size()
else:
    rank, size = int(sys.argv[3]), int(sys.argv[4])

timeout = datetime.timedelta(seconds=60)
file_store = dist.FileStore(path, size)
file_store.set_timeout(timeout)
if rank == 0:
    tcp = dist.TCPStore("127.0.0.1", 0, size, True, timeout=timeout, wait_for_workers=False)
    file_store.set("tcp_port", str(tcp.port))
else:
    tcp = dist.TCPStore("127.0.0.1", int(file_store.get("tcp_port")), size, False, timeout=timeout)

for name, store in (("file", file_store), ("tcp", tcp), ("prefix", dist.PrefixStore("job", tcp))):
    # Every process publishes a key and reads everyone's (get blocks until the writer got there).
    store.set(f"hello/{rank}", f"from {rank}")
    seen = [store.get(f"hello/{r}") for r in range(size)]
    assert seen == [f"from {r}".encode() for r in range(size)], (name, seen)
    # add is atomic: 50 increments from each process.
    for _ in range(50):
        store.add("counter", 1)
    store.barrier("after-add", size, timeout)
    assert store.get("counter") == str(50 * size).encode(), (name, store.get("counter"))
    # compare_set from everyone on a missing key: exactly one process wins, all agree on whom.
    store.compare_set("leader", "", str(rank))
    store.append("arrivals", f"{rank};")
    store.barrier("after-race", size, timeout)
    leader = store.get("leader")
    assert leader in [str(r).encode() for r in range(size)], (name, leader)
    assert sorted(store.get("arrivals").decode().strip(";").split(";")) == [str(r) for r in range(size)]
    leaders = store.multi_get([f"hello/{r}" for r in range(size)])
    assert leaders == seen
    store.barrier("done", size, timeout)
    print(f"rank {rank}: {name} store OK (leader {leader.decode()})", flush=True)
# The master keeps serving until every client is done with it.
tcp.barrier("exit", size, timeout)

if mode == "mpi":
    # init_process_group(store=...) checks that every rank reached the same store, then runs on MPI.
    import tensorplug as tp

    dist.init_process_group("gloo", store=dist.PrefixStore("pg", tcp), world_size=size, rank=rank)
    total = tp.ones(1) * (rank + 1)
    dist.all_reduce(total)
    assert float(total) == size * (size + 1) / 2
    tcp.barrier("after-init", size, timeout)
    dist.destroy_process_group()
    print(f"rank {rank}: init_process_group with a store OK", flush=True)
