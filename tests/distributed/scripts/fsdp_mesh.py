"""Run under mpiexec -n 4: a 2 x 2 DeviceMesh (replicate, shard) and hybrid sharding over it.
The mesh's groups, coordinates and sub-meshes are checked against the row-major layout, and
FSDP's HYBRID_SHARD and _HYBRID_SHARD_ZERO2 (shards over a row, replicas down a column, each of
the 4 ranks on a quarter of every batch) must end at NumPy float64's whole-batch SGD, as must
hybrid sharding given the groups as a pair."""

import tensorplug as tp
import tensorplug.distributed as dist
from tensorplug.distributed.device_mesh import DeviceMesh, init_device_mesh
from tensorplug.distributed.fsdp import ShardingStrategy

from fsdp import check  # the 2-rank script's training check (this script's folder is on sys.path)


def expect_error(kind, text, fn):
    try:
        fn()
    except kind as exc:
        assert text in str(exc), (text, str(exc))
        return
    raise AssertionError(f"expected {kind.__name__} with {text!r}")


def check_mesh(rank):
    mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("replicate", "shard"))
    row, column = divmod(rank, 2)
    assert mesh.shape == (2, 2) and mesh.ndim == 2 and mesh.size() == 4 and mesh.size(1) == 2
    assert mesh.mesh.tolist() == [[0, 1], [2, 3]] and mesh.mesh.dtype == tp.int32
    assert mesh.get_coordinate() == (row, column) and mesh.get_local_rank("shard") == column
    assert dist.get_process_group_ranks(mesh.get_group("shard")) == [2 * row, 2 * row + 1]
    assert dist.get_process_group_ranks(mesh.get_group(0)) == [column, column + 2]
    # A sub-mesh reuses its parent's group: a sum over it adds this rank's row.
    shard = mesh["shard"]
    assert shard.mesh.tolist() == [2 * row, 2 * row + 1] and shard.get_group() is mesh.get_group("shard")
    total = tp.tensor([float(rank)])
    dist.all_reduce(total, group=shard.get_group())
    assert total.item() == 4 * row + 1, total
    assert mesh["shard", "replicate"].mesh.tolist() == [[0, 2], [1, 3]]
    assert mesh["replicate", "shard"] is mesh
    assert DeviceMesh.from_group(mesh.get_group("shard"), "cpu") == shard.__class__("cpu", [2 * row, 2 * row + 1],
                                                                                   _groups=[shard.get_group()])
    expect_error(RuntimeError, "mesh_dim", lambda: mesh.get_group())
    expect_error(KeyError, "Invalid mesh_dim_names", lambda: mesh["tp"])
    expect_error(RuntimeError, "holds 6 ranks", lambda: init_device_mesh("cpu", (2, 3)))
    expect_error(RuntimeError, "with index is not supported", lambda: init_device_mesh("cpu:0", (4,)))
    expect_error(ValueError, "rank 1 appears in groups 0 and 1",
                 lambda: dist.new_subgroups_by_enumeration([[0, 1], [1, 2]]))
    return mesh


def main():
    dist.init_process_group("gloo")
    rank, size = dist.get_rank(), dist.get_world_size()
    assert size == 4
    mesh = check_mesh(rank)
    for strategy in (ShardingStrategy.HYBRID_SHARD, ShardingStrategy._HYBRID_SHARD_ZERO2):
        check(strategy, rank, size, device_mesh=mesh)
    groups = (mesh.get_group("shard"), mesh.get_group("replicate"))
    check(ShardingStrategy.HYBRID_SHARD, rank, size, process_group=groups)
    dist.destroy_process_group()
    print(f"rank {rank}: FSDP mesh OK", flush=True)


if __name__ == "__main__":
    main()
