"""Probe batch (b): torch.distributed in one process (world size 1), as training scripts set it up
for a single-GPU or CPU run: init through environment variables, a file or TCP address or a
store; rank and size queries; every collective; DistributedSampler; DDP on one rank."""
import contextlib
import datetime
import os
import socket
import tempfile

import numpy as np

from probe_common import data, linear_weights


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(port=None):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port or _free_port()), RANK="0", WORLD_SIZE="1",
                      LOCAL_RANK="0")


@contextlib.contextmanager
def _group(torch, **options):
    dist = torch.distributed
    _env()
    dist.init_process_group(backend=options.pop("backend", "gloo"), **options)
    try:
        yield dist
    finally:
        dist.destroy_process_group()


def _error(call):
    try:
        call()
    except Exception as error:  # the kind of error is what the idiom checks
        return type(error).__name__
    return "no error"


# --- availability and init ---------------------------------------------------------------------

def probe_is_available(torch):
    return torch.distributed.is_available()


def probe_is_initialized_before(torch):
    return torch.distributed.is_initialized()


def probe_backend_availability_calls(torch):
    d = torch.distributed
    return isinstance(d.is_gloo_available(), bool), isinstance(d.is_nccl_available(), bool), isinstance(d.is_mpi_available(), bool)


def probe_is_torchelastic_launched(torch):
    return torch.distributed.is_torchelastic_launched()


def probe_init_env_gloo(torch):
    with _group(torch) as dist:
        return dist.is_initialized(), dist.get_rank(), dist.get_world_size()


def probe_init_env_explicit_rank_world(torch):
    with _group(torch, rank=0, world_size=1) as dist:
        return dist.get_rank(), dist.get_world_size()


def probe_init_env_method_string(torch):
    with _group(torch, init_method="env://") as dist:
        return dist.get_world_size()


def probe_init_tcp(torch):
    dist = torch.distributed
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{_free_port()}", rank=0, world_size=1)
    out = dist.get_rank(), dist.get_world_size()
    dist.destroy_process_group()
    return out


def probe_init_file(torch):
    dist = torch.distributed
    path = tempfile.mktemp()
    dist.init_process_group("gloo", init_method=f"file://{path}", rank=0, world_size=1)
    out = dist.get_world_size()
    dist.destroy_process_group()
    return out


def probe_init_filestore(torch):
    dist = torch.distributed
    store = dist.FileStore(tempfile.mktemp(), 1)
    dist.init_process_group("gloo", store=store, rank=0, world_size=1)
    out = dist.get_rank(), dist.get_world_size()
    dist.destroy_process_group()
    return out


def probe_init_tcpstore(torch):
    dist = torch.distributed
    store = dist.TCPStore("127.0.0.1", _free_port(), 1, True)
    dist.init_process_group("gloo", store=store, rank=0, world_size=1)
    out = dist.get_world_size()
    dist.destroy_process_group()
    return out


def probe_tcpstore_set_get(torch):
    store = torch.distributed.TCPStore("127.0.0.1", _free_port(), 1, True, timeout=datetime.timedelta(seconds=30))
    store.set("key", "value")
    store.add("counter", 2)
    return store.get("key"), store.add("counter", 3)


def probe_hashstore(torch):
    store = torch.distributed.HashStore()
    store.set("a", b"1")
    return store.get("a"), store.num_keys()


def probe_filestore_set_get(torch):
    store = torch.distributed.FileStore(tempfile.mktemp(), 1)
    store.set("x", "1")
    return store.get("x")


def probe_init_timeout(torch):
    with _group(torch, timeout=datetime.timedelta(minutes=5)) as dist:
        return dist.get_world_size()


def probe_init_backend_none(torch):
    _env()
    dist = torch.distributed
    dist.init_process_group()
    out = dist.get_world_size()
    dist.destroy_process_group()
    return out


def probe_init_device_backend_string(torch):
    with _group(torch, backend="cpu:gloo,cuda:nccl") as dist:
        return dist.get_world_size()


def probe_get_backend(torch):
    with _group(torch) as dist:
        return dist.get_backend()


def probe_destroy_then_not_initialized(torch):
    with _group(torch) as dist:
        pass
    return dist.is_initialized()


def probe_double_init_error(torch):
    with _group(torch) as dist:
        return _error(lambda: dist.init_process_group("gloo"))


def probe_get_rank_before_init_error(torch):
    return _error(lambda: torch.distributed.get_rank())


def probe_get_world_size_before_init_error(torch):
    return _error(lambda: torch.distributed.get_world_size())


def probe_main_process_helper(torch):
    dist = torch.distributed

    def is_main_process():
        return not (dist.is_available() and dist.is_initialized()) or dist.get_rank() == 0
    before = is_main_process()
    with _group(torch):
        inside = is_main_process()
    return before, inside


def probe_world_size_helper_uninitialized(torch):
    dist = torch.distributed
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def probe_local_rank_env(torch):
    _env()
    return int(os.environ["LOCAL_RANK"]), int(os.environ["WORLD_SIZE"])


def probe_group_world_attr(torch):
    with _group(torch) as dist:
        return dist.get_world_size(group=dist.group.WORLD)


def probe_get_global_rank(torch):
    with _group(torch) as dist:
        return dist.get_global_rank(dist.group.WORLD, 0)


def probe_get_process_group_ranks(torch):
    with _group(torch) as dist:
        return dist.get_process_group_ranks(dist.group.WORLD)


def probe_new_group(torch):
    with _group(torch) as dist:
        g = dist.new_group(ranks=[0])
        t = torch.ones(2)
        dist.all_reduce(t, group=g)
        return dist.get_rank(g), dist.get_world_size(g), t


def probe_new_group_default(torch):
    with _group(torch) as dist:
        g = dist.new_group()
        return dist.get_world_size(group=g)


def probe_get_node_local_rank(torch):
    _env()
    return torch.distributed.get_node_local_rank(fallback_rank=0)


# --- collectives --------------------------------------------------------------------------------

def probe_all_reduce_sum(torch):
    with _group(torch) as dist:
        t = data(torch, 3)
        dist.all_reduce(t)
        return t


def probe_all_reduce_op_keyword(torch):
    with _group(torch) as dist:
        t = data(torch, 3)
        dist.all_reduce(t, op=dist.ReduceOp.SUM, group=None, async_op=False)
        return t


def probe_all_reduce_max_min(torch):
    with _group(torch) as dist:
        a, b = data(torch, 3), data(torch, 3, seed=1)
        dist.all_reduce(a, op=dist.ReduceOp.MAX)
        dist.all_reduce(b, op=dist.ReduceOp.MIN)
        return a, b


def probe_all_reduce_product(torch):
    with _group(torch) as dist:
        t = data(torch, 3)
        dist.all_reduce(t, op=dist.ReduceOp.PRODUCT)
        return t


def probe_all_reduce_avg(torch):
    with _group(torch) as dist:
        t = data(torch, 3)
        return _error(lambda: dist.all_reduce(t, op=dist.ReduceOp.AVG)), t


def probe_all_reduce_then_divide(torch):
    with _group(torch) as dist:
        t = data(torch, 3)
        dist.all_reduce(t)
        t /= dist.get_world_size()
        return t


def probe_all_reduce_async(torch):
    with _group(torch) as dist:
        t = data(torch, 3)
        work = dist.all_reduce(t, async_op=True)
        work.wait()
        return t, work.is_completed()


def probe_all_reduce_int64(torch):
    with _group(torch) as dist:
        t = torch.tensor([1, 2, 3])
        dist.all_reduce(t)
        return t


def probe_all_reduce_float64(torch):
    with _group(torch) as dist:
        t = data(torch, 2, dtype="float64")
        dist.all_reduce(t)
        return t


def probe_all_reduce_scalar_tensor(torch):
    with _group(torch) as dist:
        loss = torch.tensor(2.5)
        dist.all_reduce(loss)
        return loss.item()


def probe_all_reduce_returns_none(torch):
    with _group(torch) as dist:
        return dist.all_reduce(torch.ones(1)) is None


def probe_all_reduce_noncontiguous(torch):
    with _group(torch) as dist:
        t = data(torch, 3, 4).t()
        return _error(lambda: dist.all_reduce(t)), t


def probe_reduce_op_names(torch):
    op = torch.distributed.ReduceOp
    return [str(x).split(".")[-1] for x in (op.SUM, op.MAX, op.MIN, op.PRODUCT)]


def probe_reduce_dict_pattern(torch):
    with _group(torch) as dist:
        losses = {"a": torch.tensor(1.0), "b": torch.tensor(3.0)}
        names = sorted(losses)
        values = torch.stack([losses[k] for k in names])
        dist.all_reduce(values)
        values /= dist.get_world_size()
        return {k: v for k, v in zip(names, values)}


def probe_broadcast(torch):
    with _group(torch) as dist:
        t = data(torch, 4)
        dist.broadcast(t, src=0)
        return t


def probe_broadcast_async(torch):
    with _group(torch) as dist:
        t = data(torch, 4)
        dist.broadcast(t, 0, async_op=True).wait()
        return t


def probe_reduce(torch):
    with _group(torch) as dist:
        t = data(torch, 3)
        dist.reduce(t, dst=0)
        return t


def probe_all_gather_list(torch):
    with _group(torch) as dist:
        t = data(torch, 3)
        out = [torch.zeros_like(t) for _ in range(dist.get_world_size())]
        dist.all_gather(out, t)
        return torch.cat(out)


def probe_all_gather_into_tensor(torch):
    with _group(torch) as dist:
        t = data(torch, 3)
        out = torch.empty(dist.get_world_size() * 3)
        dist.all_gather_into_tensor(out, t)
        return out


def probe_all_gather_into_tensor_stacked(torch):
    with _group(torch) as dist:
        t = data(torch, 2, 3)
        out = torch.empty(dist.get_world_size(), 2, 3)
        dist.all_gather_into_tensor(out, t)
        return out


def probe_all_gather_object(torch):
    with _group(torch) as dist:
        out = [None] * dist.get_world_size()
        dist.all_gather_object(out, {"acc": 0.5, "rank": dist.get_rank()})
        return out


def probe_broadcast_object_list(torch):
    with _group(torch) as dist:
        objs = [{"seed": 7}, "run-1"]
        dist.broadcast_object_list(objs, src=0)
        return objs


def probe_gather_object(torch):
    with _group(torch) as dist:
        out = [None]
        dist.gather_object("x", out, dst=0)
        return out


def probe_scatter_object_list(torch):
    with _group(torch) as dist:
        out = [None]
        dist.scatter_object_list(out, [{"k": 1}], src=0)
        return out


def probe_gather(torch):
    with _group(torch) as dist:
        t = data(torch, 3)
        out = [torch.empty(3)]
        dist.gather(t, gather_list=out, dst=0)
        return out


def probe_scatter(torch):
    with _group(torch) as dist:
        out = torch.empty(3)
        dist.scatter(out, scatter_list=[data(torch, 3)], src=0)
        return out


def probe_reduce_scatter_tensor(torch):
    with _group(torch) as dist:
        out = torch.empty(3)
        dist.reduce_scatter_tensor(out, data(torch, 3))
        return out


def probe_reduce_scatter_list(torch):
    with _group(torch) as dist:
        out = torch.empty(3)
        return _error(lambda: dist.reduce_scatter(out, [data(torch, 3)])), out


def probe_all_to_all_single(torch):
    with _group(torch) as dist:
        out = torch.empty(4)
        dist.all_to_all_single(out, data(torch, 4))
        return out


def probe_all_to_all(torch):
    with _group(torch) as dist:
        out = [torch.empty(2)]
        dist.all_to_all(out, [data(torch, 2)])
        return out


def probe_barrier(torch):
    with _group(torch) as dist:
        return dist.barrier() is None


def probe_barrier_async(torch):
    with _group(torch) as dist:
        work = dist.barrier(async_op=True)
        work.wait()
        return True


def probe_monitored_barrier(torch):
    with _group(torch) as dist:
        dist.monitored_barrier(timeout=datetime.timedelta(seconds=30))
        return True


def probe_work_get_future(torch):
    with _group(torch) as dist:
        t = data(torch, 2)
        fut = dist.all_reduce(t, async_op=True).get_future()
        fut.wait()
        return t


def probe_all_reduce_coalesced_via_flatten(torch):
    with _group(torch) as dist:
        grads = [data(torch, 2, 2), data(torch, 3, seed=1)]
        flat = torch.cat([g.reshape(-1) for g in grads])
        dist.all_reduce(flat)
        return flat


def probe_metric_sync_pattern(torch):
    with _group(torch) as dist:
        correct = torch.tensor([7.0, 10.0])
        dist.all_reduce(correct, op=dist.ReduceOp.SUM)
        return (correct[0] / correct[1]).item()


def probe_isend_irecv_self_none(torch):
    return callable(torch.distributed.isend) and callable(torch.distributed.irecv)


def probe_batch_isend_irecv_names(torch):
    d = torch.distributed
    return callable(d.batch_isend_irecv) and d.P2POp is not None


# --- DistributedSampler -------------------------------------------------------------------------

def probe_sampler_no_shuffle(torch):
    from torch.utils.data.distributed import DistributedSampler
    sampler = DistributedSampler(list(range(10)), num_replicas=1, rank=0, shuffle=False)
    return list(sampler), len(sampler)


def probe_sampler_shuffle_permutation(torch):
    from torch.utils.data.distributed import DistributedSampler
    sampler = DistributedSampler(list(range(10)), num_replicas=1, rank=0, shuffle=True, seed=0)
    return sorted(sampler), len(sampler)


def probe_sampler_set_epoch_changes_order(torch):
    from torch.utils.data.distributed import DistributedSampler
    sampler = DistributedSampler(list(range(50)), num_replicas=1, rank=0, seed=3)
    sampler.set_epoch(0)
    first = list(sampler)
    sampler.set_epoch(1)
    second = list(sampler)
    sampler.set_epoch(0)
    return first != second, first == list(sampler)


def probe_sampler_two_replicas_split(torch):
    from torch.utils.data.distributed import DistributedSampler
    a = list(DistributedSampler(list(range(7)), num_replicas=2, rank=0, shuffle=False))
    b = list(DistributedSampler(list(range(7)), num_replicas=2, rank=1, shuffle=False))
    return a, b


def probe_sampler_drop_last(torch):
    from torch.utils.data.distributed import DistributedSampler
    s = DistributedSampler(list(range(7)), num_replicas=2, rank=1, shuffle=False, drop_last=True)
    return list(s), len(s), s.num_samples, s.total_size


def probe_sampler_from_initialized_group(torch):
    from torch.utils.data.distributed import DistributedSampler
    with _group(torch):
        s = DistributedSampler(list(range(5)), shuffle=False)
        return list(s), s.num_replicas, s.rank


def probe_sampler_uninitialized_error(torch):
    from torch.utils.data.distributed import DistributedSampler
    return _error(lambda: DistributedSampler(list(range(5))))


def probe_sampler_bad_rank_error(torch):
    from torch.utils.data.distributed import DistributedSampler
    return _error(lambda: DistributedSampler(list(range(5)), num_replicas=2, rank=2))


def probe_sampler_in_dataloader(torch):
    from torch.utils.data import DataLoader, TensorDataset
    from torch.utils.data.distributed import DistributedSampler
    ds = TensorDataset(torch.arange(8.0))
    sampler = DistributedSampler(ds, num_replicas=2, rank=0, shuffle=False)
    loader = DataLoader(ds, batch_size=2, sampler=sampler)
    return [b[0] for b in loader]


def probe_sampler_epoch_loop(torch):
    from torch.utils.data import DataLoader
    from torch.utils.data.distributed import DistributedSampler
    ds = list(range(6))
    sampler = DistributedSampler(ds, num_replicas=1, rank=0, shuffle=True, seed=1)
    loader = DataLoader(ds, batch_size=3, sampler=sampler, shuffle=False)
    seen = []
    for epoch in range(2):
        sampler.set_epoch(epoch)
        seen.append(sorted(int(v) for b in loader for v in b))
    return seen


def probe_sampler_attributes(torch):
    from torch.utils.data.distributed import DistributedSampler
    s = DistributedSampler(list(range(5)), num_replicas=1, rank=0, seed=11)
    return s.epoch, s.seed, s.shuffle, s.drop_last


# --- DDP ----------------------------------------------------------------------------------------

def _ddp(torch, **options):
    from torch.nn.parallel import DistributedDataParallel as DDP
    model = linear_weights(torch, torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1)))
    return DDP(model, **options)


def probe_ddp_forward_backward(torch):
    with _group(torch):
        model = _ddp(torch)
        out = model(data(torch, 5, 4))
        out.sum().backward()
        return out, model.module[0].weight.grad


def probe_ddp_training_step(torch):
    with _group(torch):
        model = _ddp(torch)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for i in range(2):
            opt.zero_grad()
            loss = model(data(torch, 5, 4, seed=i)).pow(2).mean()
            loss.backward()
            opt.step()
        return model.module[2].weight


def probe_ddp_state_dict_keys(torch):
    with _group(torch):
        model = _ddp(torch)
        return sorted(model.state_dict()), sorted(model.module.state_dict())


def probe_ddp_unwrap_pattern(torch):
    with _group(torch):
        model = _ddp(torch)
        raw = model.module if hasattr(model, "module") else model
        return type(raw).__name__


def probe_ddp_no_sync(torch):
    with _group(torch):
        model = _ddp(torch)
        with model.no_sync():
            model(data(torch, 2, 4)).sum().backward()
        model(data(torch, 2, 4, seed=1)).sum().backward()
        return model.module[0].weight.grad


def probe_ddp_device_ids_none(torch):
    with _group(torch):
        model = _ddp(torch, device_ids=None, output_device=None)
        return model(data(torch, 1, 4))


def probe_ddp_find_unused(torch):
    with _group(torch):
        model = _ddp(torch, find_unused_parameters=True)
        model(data(torch, 2, 4)).sum().backward()
        return model.module[0].bias.grad


def probe_ddp_options(torch):
    with _group(torch):
        model = _ddp(torch, broadcast_buffers=False, gradient_as_bucket_view=True, bucket_cap_mb=25, static_graph=False)
        model(data(torch, 2, 4)).sum().backward()
        return model.module[2].bias.grad


def probe_ddp_static_graph(torch):
    with _group(torch):
        model = _ddp(torch, static_graph=True)
        for _ in range(2):
            model(data(torch, 2, 4)).sum().backward()
        return model.module[2].bias.grad


def probe_ddp_without_group_error(torch):
    return _error(lambda: _ddp(torch))


def probe_ddp_isinstance_check(torch):
    with _group(torch):
        model = _ddp(torch)
        return isinstance(model, torch.nn.parallel.DistributedDataParallel), isinstance(model, torch.nn.Module)


def probe_ddp_train_eval(torch):
    with _group(torch):
        model = _ddp(torch)
        model.eval()
        a = model.training, model.module.training
        model.train()
        return a, model.module.training


def probe_ddp_save_module_state(torch):
    with _group(torch):
        model = _ddp(torch)
        state = model.module.state_dict()
        fresh = linear_weights(torch, torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1)), seed=5)
        fresh.load_state_dict(state)
        return fresh[0].weight


def probe_ddp_load_prefixed_state(torch):
    with _group(torch):
        model = _ddp(torch)
        state = {k.replace("module.", "", 1): v for k, v in model.state_dict().items()}
        return sorted(state)


def probe_ddp_with_batchnorm_buffers(torch):
    from torch.nn.parallel import DistributedDataParallel as DDP
    with _group(torch):
        net = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3))
        linear_weights(torch, net)
        model = DDP(net)
        model(data(torch, 6, 4))
        return net[1].running_mean


def probe_convert_sync_batchnorm(torch):
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4))
    net = torch.nn.SyncBatchNorm.convert_sync_batchnorm(net)
    return type(net[1]).__name__


def probe_ddp_join_context(torch):
    with _group(torch):
        model = _ddp(torch)
        with model.join():
            model(data(torch, 2, 4)).sum().backward()
        return model.module[2].bias.grad


def probe_ddp_register_comm_hook(torch):
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    with _group(torch) as dist:
        model = _ddp(torch)
        model.register_comm_hook(state=None, hook=default_hooks.allreduce_hook)
        model(data(torch, 2, 4)).sum().backward()
        return model.module[2].bias.grad


def probe_ddp_require_grad_sync_attr(torch):
    with _group(torch):
        model = _ddp(torch)
        return model.require_backward_grad_sync


def probe_ddp_clip_grad(torch):
    with _group(torch):
        model = _ddp(torch)
        model(data(torch, 4, 4)).sum().backward()
        return torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)


def probe_ddp_amp_autocast(torch):
    with _group(torch):
        model = _ddp(torch)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = model(data(torch, 2, 4))
        return out.dtype


def probe_ddp_parameters_count(torch):
    with _group(torch):
        model = _ddp(torch)
        return sum(p.numel() for p in model.parameters() if p.requires_grad)


def probe_data_parallel_single_device(torch):
    model = torch.nn.DataParallel(linear_weights(torch, torch.nn.Linear(4, 2)))
    return model(data(torch, 3, 4)), type(model.module).__name__


def probe_elastic_launch_env_read(torch):
    _env()
    rank = int(os.environ.get("RANK", -1))
    world = int(os.environ.get("WORLD_SIZE", 1))
    return rank, world, rank in (-1, 0)


def probe_distributed_launch_module(torch):
    import importlib
    return importlib.util.find_spec(torch.__name__ + ".distributed.run") is not None


def probe_fsdp_import(torch):
    from torch.distributed.fsdp import FullyShardedDataParallel  # noqa: F401
    return True


def probe_distributed_c10d_module(torch):
    from torch.distributed import distributed_c10d  # noqa: F401
    return hasattr(distributed_c10d, "is_initialized")


def probe_seed_per_rank(torch):
    with _group(torch) as dist:
        torch.manual_seed(1234 + dist.get_rank())
        np.random.seed(1234 + dist.get_rank())
        return dist.get_rank()


def probe_print_only_rank0(torch):
    with _group(torch) as dist:
        lines = []
        if dist.get_rank() == 0:
            lines.append("epoch 0")
        return lines


def probe_all_gather_variable_length_pattern(torch):
    with _group(torch) as dist:
        local = data(torch, 3)
        size = torch.tensor([local.numel()])
        sizes = [torch.zeros_like(size) for _ in range(dist.get_world_size())]
        dist.all_gather(sizes, size)
        biggest = int(max(s.item() for s in sizes))
        padded = torch.zeros(biggest)
        padded[: local.numel()] = local
        gathered = [torch.zeros(biggest) for _ in sizes]
        dist.all_gather(gathered, padded)
        return [g[: int(s.item())] for g, s in zip(gathered, sizes)]


def probe_broadcast_model_params(torch):
    with _group(torch) as dist:
        model = linear_weights(torch, torch.nn.Linear(3, 2))
        for p in model.parameters():
            dist.broadcast(p.data, src=0)
        return model.weight


def probe_average_gradients_manually(torch):
    with _group(torch) as dist:
        model = linear_weights(torch, torch.nn.Linear(3, 2))
        model(data(torch, 4, 3)).sum().backward()
        size = float(dist.get_world_size())
        for p in model.parameters():
            dist.all_reduce(p.grad.data, op=dist.ReduceOp.SUM)
            p.grad.data /= size
        return model.weight.grad


def probe_group_member_constants(torch):
    d = torch.distributed
    return d.GroupMember.WORLD is d.group.WORLD


def probe_backend_constants(torch):
    return torch.distributed.Backend.GLOO, torch.distributed.Backend.NCCL


def probe_default_pg_timeout(torch):
    from torch.distributed import constants
    return isinstance(constants.default_pg_timeout, datetime.timedelta)
