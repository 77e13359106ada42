"""Run under mpiexec -n 2: gather, scatter (and their object forms), all_to_all(_single),
reduce_scatter over a list, monitored_barrier, batch_isend_irecv, Work.get_future, the renamed
all_gather_single/reduce_scatter_single and the group queries, against NumPy references of what
each rank contributed (probe batch (b), issue 13)."""
import warnings

import numpy as np

import tensorplug as tp
import tensorplug.distributed as dist


def contribution(rank, shape):
    return np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) * 10 + rank


def same(t, expected, what):
    got = t.cpu().numpy().astype(np.float64)
    if got.shape != np.shape(expected) or not np.array_equal(got, expected):
        raise AssertionError(f"{what}: got {got.tolist()}, expected {np.asarray(expected).tolist()}")


def main():
    dist.init_process_group("gloo")
    rank, size = dist.get_rank(), dist.get_world_size()
    assert size == 2 and dist.get_backend() == "gloo"
    assert dist.group.WORLD is dist.GroupMember.WORLD is not None
    assert dist.get_process_group_ranks(dist.group.WORLD) == [0, 1] and dist.get_global_rank(None, 1) == 1
    assert dist.is_gloo_available() and dist.Backend("GLOO") == dist.Backend.GLOO == "gloo"

    mine = tp.tensor(contribution(rank, (2, 3)))
    bucket = [tp.zeros(2, 3, dtype=tp.float64) for _ in range(size)] if rank == 1 else None
    dist.gather(mine, gather_list=bucket, dst=1)
    if rank == 1:
        for r in range(size):
            same(bucket[r], contribution(r, (2, 3)), "gather")

    received = tp.zeros(4)
    parts = [tp.tensor(contribution(r, (4,)) + 100).float() for r in range(size)] if rank == 0 else None
    dist.scatter(received, scatter_list=parts, src=0)
    same(received, contribution(rank, (4,)) + 100, "scatter")

    objects = [None, None] if rank == 0 else None
    dist.gather_object({"rank": rank}, objects, dst=0)
    if rank == 0:
        assert objects == [{"rank": 0}, {"rank": 1}], objects
    out = [None]
    dist.scatter_object_list(out, [f"to {r}" for r in range(size)] if rank == 1 else None, src=1)
    assert out == [f"to {rank}"], out

    # all_to_all_single, equal blocks: rank r's block j goes to rank j as its block r.
    send = tp.tensor(contribution(rank, (4, 2)))
    got = tp.empty(4, 2, dtype=tp.float64)
    dist.all_to_all_single(got, send)
    expected = np.concatenate([contribution(r, (4, 2))[2 * rank:2 * rank + 2] for r in range(size)])
    same(got, expected, "all_to_all_single")
    # uneven splits: rank 0 sends 1 row to itself and 3 to rank 1; rank 1 sends 2 and 2.
    splits = {0: [1, 3], 1: [2, 2]}
    receive_rows = [splits[r][rank] for r in range(size)]
    got = tp.empty(sum(receive_rows), 2, dtype=tp.float64)
    work = dist.all_to_all_single(got, send, output_split_sizes=receive_rows, input_split_sizes=splits[rank],
                                  async_op=True)
    work.wait()
    pieces = []
    for r in range(size):
        start = sum(splits[r][:rank])
        pieces.append(contribution(r, (4, 2))[start:start + splits[r][rank]])
    same(got, np.concatenate(pieces), "all_to_all_single with splits")

    inputs = [tp.tensor(contribution(rank, (j + 1,))) for j in range(size)]
    outputs = [tp.empty(rank + 1, dtype=tp.float64) for _ in range(size)]
    dist.all_to_all(outputs, inputs)
    for r in range(size):
        same(outputs[r], contribution(r, (rank + 1,)), "all_to_all")

    block = tp.empty(3, dtype=tp.float64)
    dist.reduce_scatter(block, [tp.tensor(contribution(rank, (3,)) + j) for j in range(size)])
    same(block, sum(contribution(r, (3,)) + rank for r in range(size)), "reduce_scatter")

    gathered = tp.empty(size * 3, dtype=tp.float64)
    dist.all_gather_single(gathered, tp.tensor(contribution(rank, (3,))))
    same(gathered, np.concatenate([contribution(r, (3,)) for r in range(size)]), "all_gather_single")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dist.all_gather_into_tensor(gathered, tp.tensor(contribution(rank, (3,))))
        dist.reduce_scatter_tensor(block, tp.tensor(contribution(rank, (6,))))
    assert [w.category for w in caught] == [FutureWarning, FutureWarning], caught
    same(block, sum(contribution(r, (6,))[3 * rank:3 * rank + 3] for r in range(size)), "reduce_scatter_tensor")

    summed = tp.tensor(contribution(rank, (2,)))
    future = dist.all_reduce(summed, async_op=True).get_future()
    doubled = future.then(lambda f: f.value()[0] * 2)
    assert future.wait()[0] is summed
    same(summed, contribution(0, (2,)) + contribution(1, (2,)), "all_reduce future")
    same(doubled.wait(), 2 * (contribution(0, (2,)) + contribution(1, (2,))), "chained future")

    peer = 1 - rank
    incoming = tp.empty(3, dtype=tp.float64)
    ops = [dist.P2POp(dist.isend, tp.tensor(contribution(rank, (3,))), peer), dist.P2POp(dist.irecv, incoming, peer)]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    same(incoming, contribution(peer, (3,)), "batch_isend_irecv")

    dist.monitored_barrier()
    dist.destroy_process_group()
    print(f"rank {rank}: rooted and exchange OK", flush=True)


if __name__ == "__main__":
    main()
