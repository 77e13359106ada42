"""tp.distributed's names that need no process group (probe batch (b), issue 13): Backend,
the launcher queries, constants, and PyTorch's ValueError before init_process_group."""
import datetime
import inspect

import pytest

import tensorplug as tp
import tensorplug.distributed as dist

try:
    import torch
except ImportError:  # the reference; tensorplug itself does not need it
    torch = None


def test_backend_names_are_lowercase_strings():
    assert dist.Backend("GLOO") == "gloo" and isinstance(dist.Backend.NCCL, str)
    assert [dist.Backend.UNDEFINED, dist.Backend.MPI, dist.Backend.UCC] == ["undefined", "mpi", "ucc"]
    with pytest.raises(ValueError, match="Unknown backend"):
        dist.Backend("carrier-pigeon")


def test_launcher_queries_read_the_environment(monkeypatch):
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    monkeypatch.delenv("TORCHELASTIC_RUN_ID", raising=False)
    with pytest.raises(RuntimeError, match="LOCAL_RANK is not in the environment"):
        dist.get_node_local_rank()
    assert dist.get_node_local_rank(fallback_rank=3) == 3
    monkeypatch.setenv("LOCAL_RANK", "2")
    assert dist.get_node_local_rank(fallback_rank=3) == 2
    assert not dist.is_torchelastic_launched()
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "abc")
    assert dist.is_torchelastic_launched()


def test_constants_and_group_alias():
    from tensorplug.distributed import constants

    assert constants.default_pg_timeout == datetime.timedelta(minutes=30)
    assert dist.group is dist.GroupMember


@pytest.mark.parametrize("call", [dist.get_rank, dist.get_world_size, lambda: dist.all_reduce(tp.ones(1)),
                                  lambda: dist.gather(tp.ones(1)), lambda: dist.all_to_all_single(tp.ones(2), tp.ones(2))])
def test_before_init_is_a_value_error_as_in_torch(call):
    assert not dist.is_initialized()
    with pytest.raises(ValueError, match="has not been initialized"):
        call()


def test_ddp_and_sampler_before_init_are_value_errors():
    with pytest.raises(ValueError, match="init_process_group"):
        tp.nn.parallel.DistributedDataParallel(tp.nn.Linear(2, 2))
    with pytest.raises(ValueError, match="init_process_group"):
        tp.utils.data.distributed.DistributedSampler(range(4))


@pytest.mark.skipif(torch is None, reason="PyTorch (the reference) is not installed: pip install torch==2.13.0")
def test_error_kinds_and_backend_members_match_torch():
    for lib in (torch, tp):
        with pytest.raises(ValueError):
            lib.distributed.get_rank()
    members = [n for n in vars(torch.distributed.Backend) if n.isupper()]
    assert {n: getattr(dist.Backend, n) for n in members} == {n: getattr(torch.distributed.Backend, n) for n in members}
    with pytest.raises(ValueError, match="Invalid ``op``"):
        dist.P2POp(dist.all_reduce, tp.ones(1), 0)


def test_distributed_c10d_module_path_exposes_the_same_objects():
    from tensorplug.distributed import distributed_c10d

    for name in distributed_c10d.__all__:
        assert getattr(distributed_c10d, name) is getattr(dist, name), name
    assert distributed_c10d.Store is dist.HashStore.__mro__[1]


@pytest.mark.skipif(torch is None, reason="PyTorch (the reference) is not installed: pip install torch==2.13.0")
def test_distributed_c10d_names_exist_in_torch_and_small_queries_match():
    from tensorplug.distributed import distributed_c10d

    import torch.distributed.distributed_c10d as reference

    assert [n for n in distributed_c10d.__all__ if not hasattr(reference, n)] == []
    for op in ("SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR"):
        assert dist.supports_complex(getattr(dist.ReduceOp, op)) == reference.supports_complex(getattr(reference.ReduceOp, op))
    assert dist.is_backend_available("nccl") is False and dist.is_backend_available("carrier-pigeon") is False
    assert dist.is_ucc_available() is False and dist.default_pg_timeout == reference.default_pg_timeout
    assert issubclass(dist.QueueEmptyError, dist.DistStoreError) and issubclass(dist.DistNetworkError, dist.DistError)


def test_ddp_comm_hook_types_are_pytorchs():
    if torch is None:
        pytest.skip("PyTorch 2.13 is the reference here")
    from torch.distributed.algorithms import ddp_comm_hooks as theirs

    from tensorplug.distributed.algorithms import ddp_comm_hooks as ours

    assert list(ours.DDPCommHookType.__members__) == list(theirs.DDPCommHookType.__members__)
    assert (list(inspect.signature(ours.register_ddp_comm_hook).parameters)
            == list(inspect.signature(theirs.register_ddp_comm_hook).parameters))
    assert inspect.signature(ours.register_ddp_comm_hook).parameters["state"].default is None
