"""Run under mpiexec -n 2: FullyShardedDataParallel. Each rank holds half of the flat parameters
(43 elements: padded to 44, 22 per rank) and trains on half of every batch with SGD and
momentum; the full model (state_dict) must equal NumPy float64 SGD on the whole batch, for
FULL_SHARD (parameters gathered again in backward) and SHARD_GRAD_OP, and with mixed precision
(float32 shards computing in float64 or bfloat16) NumPy's SGD on float32 weights."""
import gc

import numpy as np

import tensorplug as tp
import tensorplug.distributed as dist
from tensorplug import nn
from tensorplug.distributed.fsdp import FullyShardedDataParallel as FSDP, MixedPrecision, ShardingStrategy

from tanh_net import numpy_gradients  # this folder is on sys.path when a script runs

IN, HIDDEN, OUT, BATCH, LR, MOMENTUM, STEPS = 4, 5, 3, 8, 0.1, 0.9, 3
NAMES = ["0.weight", "0.bias", "2.weight", "2.bias"]


def data(step):
    rng = np.random.default_rng(70 + step)
    return rng.standard_normal((BATCH, IN)), rng.standard_normal((BATCH, OUT))


def numpy_sgd(weights, dtype=np.float64):
    """SGD with momentum on the whole batch, the weights and the update in ``dtype``, the
    gradients computed in float64 from them (and from inputs rounded to ``dtype``)."""
    weights, buffers = [w.astype(dtype) for w in weights], None
    norms = []
    for step in range(STEPS):
        x, t = data(step)
        grads = [g.astype(dtype) for g in numpy_gradients(*weights, x.astype(dtype), t)]
        norms.append(np.sqrt(sum((g ** 2).sum() for g in grads)))
        buffers = grads if buffers is None else [dtype(MOMENTUM) * b + g for b, g in zip(buffers, grads)]
        weights = [w - dtype(LR) * b for w, b in zip(weights, buffers)]
    return weights, norms


def check_mixed_precision(param_dtype, reduce_dtype, tolerance, rank, size):
    """float32 shards (the optimizer's copy) computing in ``param_dtype``: forward sees the
    parameters and inputs in it, the optimizer float32 gradients; the model after three steps is
    NumPy's float32 SGD on float64 gradients, to ``tolerance``."""
    rng = np.random.default_rng(7)
    start = [rng.standard_normal(s) for s in ((HIDDEN, IN), (HIDDEN,), (OUT, HIDDEN), (OUT,))]
    model = nn.Sequential(nn.Linear(IN, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, OUT))
    with tp.no_grad():
        for p, w in zip(model.parameters(), start):
            p.copy_(tp.tensor(w))
    seen = []
    model[0].register_forward_hook(lambda m, inputs, out: seen.append((m.weight.dtype, inputs[0].dtype)))
    fsdp = FSDP(model, mixed_precision=MixedPrecision(param_dtype=param_dtype, reduce_dtype=reduce_dtype))
    opt = tp.optim.SGD(fsdp.parameters(), lr=LR, momentum=MOMENTUM)
    share = slice(rank * BATCH // size, (rank + 1) * BATCH // size)
    for step in range(STEPS):
        x, t = data(step)
        opt.zero_grad()
        out = fsdp(tp.tensor(x[share], dtype=tp.float32))
        assert out.dtype == param_dtype, out.dtype
        ((out.float() - tp.tensor(t[share], dtype=tp.float32)) ** 2).mean().backward()
        assert fsdp.flat_param_shard.grad.dtype == tp.float32, fsdp.flat_param_shard.grad.dtype
        opt.step()
    assert seen == [(param_dtype, param_dtype)] * STEPS, seen
    expected, _ = numpy_sgd(start, np.float32)
    state = fsdp.state_dict()
    for name, want in zip(NAMES, expected):
        assert state[name].dtype == tp.float32, (name, state[name].dtype)
        assert np.allclose(state[name].numpy(), want, rtol=tolerance, atol=tolerance), (name, state[name], want)


def check_buffer_dtype():
    """Buffers live in buffer_dtype; the state dict gives them back in their own dtype."""
    model = nn.Sequential(nn.Linear(IN, HIDDEN), nn.BatchNorm1d(HIDDEN))
    fsdp = FSDP(model, mixed_precision=MixedPrecision(param_dtype=tp.bfloat16, buffer_dtype=tp.bfloat16))
    assert model[1].running_mean.dtype == tp.bfloat16, model[1].running_mean.dtype
    fsdp(tp.ones(BATCH, IN))
    state = fsdp.state_dict()
    assert state["1.running_mean"].dtype == tp.float32 and state["1.num_batches_tracked"].dtype == tp.int64
    assert float(state["1.num_batches_tracked"]) == 1.0


def check(strategy, rank, size, **fsdp_args):
    """Trains on this rank's share of every batch (``rank`` of ``size``); ``fsdp_args`` pick the
    groups (hybrid sharding: shards over 2 ranks in every case here)."""
    frees = strategy in (ShardingStrategy.FULL_SHARD, ShardingStrategy.HYBRID_SHARD)
    rng = np.random.default_rng(7)
    start = [rng.standard_normal(s) for s in ((HIDDEN, IN), (HIDDEN,), (OUT, HIDDEN), (OUT,))]
    model = nn.Sequential(nn.Linear(IN, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, OUT)).to(tp.float64)
    with tp.no_grad():
        for p, w in zip(model.parameters(), start):
            p.copy_(tp.tensor(w))
    fsdp = FSDP(model, sharding_strategy=strategy, **fsdp_args)
    shards = list(fsdp.parameters())
    assert len(shards) == 1 and shards[0].numel() == 22, [s.shape for s in shards]
    opt = tp.optim.SGD(fsdp.parameters(), lr=LR, momentum=MOMENTUM)
    gathers = []
    gather = fsdp._all_gather
    fsdp._all_gather = lambda shard: gathers.append(gather(shard)) or gathers[-1]
    share = slice(rank * BATCH // size, (rank + 1) * BATCH // size)
    expected, norms = numpy_sgd(start)
    for step in range(STEPS):
        x, t = data(step)
        opt.zero_grad()
        loss = ((fsdp(tp.tensor(x[share])) - tp.tensor(t[share])) ** 2).mean()
        if frees:
            # Between forward and backward no tensor lives in the gathered parameters any more.
            storage = gathers[-1]._storage
            gathers[-1] = None
            gc.collect()
            assert not any(isinstance(o, tp.Tensor) and o._storage is storage for o in gc.get_objects())
        loss.backward()
        norm = fsdp.clip_grad_norm_(1e9)  # a bound never reached: the norm of the whole-batch gradient
        assert abs(float(norm) - norms[step]) < 1e-12 * norms[step], (float(norm), norms[step])
        opt.step()
    # FULL_SHARD drops the gathered parameters after forward and gathers them again in backward.
    assert len(gathers) == STEPS * (2 if frees else 1), (strategy, len(gathers))
    state = fsdp.state_dict()
    assert list(state) == NAMES, list(state)
    for name, want in zip(NAMES, expected):
        assert np.allclose(state[name].numpy(), want, rtol=1e-12, atol=1e-13), (strategy, name, state[name], want)
    # Between passes the module's names hold nothing: the full parameters exist only while needed.
    assert model[0].weight is None
    with fsdp.summon_full_params():
        assert np.allclose(model[2].bias.numpy(), expected[3], rtol=1e-12)
    # A full state dict loads back into the shards.
    fresh = nn.Sequential(nn.Linear(IN, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, OUT)).to(tp.float64)
    other = FSDP(fresh, sharding_strategy=strategy, **fsdp_args)
    other.load_state_dict(state)
    assert np.array_equal(other.flat_param_shard.detach().numpy(), fsdp.flat_param_shard.detach().numpy())


def main():
    dist.init_process_group("gloo")
    rank, size = dist.get_rank(), dist.get_world_size()
    assert size == 2
    for strategy in (ShardingStrategy.FULL_SHARD, ShardingStrategy.SHARD_GRAD_OP):
        check(strategy, rank, size)
    # float64 compute: the only roundings are the float32 shards and update (NumPy does the same).
    check_mixed_precision(tp.float64, None, 1e-6, rank, size)
    # bfloat16 compute, reduced in float32: bfloat16's 8 bits of precision.
    check_mixed_precision(tp.bfloat16, tp.float32, 3e-2, rank, size)
    check_buffer_dtype()
    # Hybrid sharding's default groups: the ranks of one host shard, one rank per replica group.
    check(ShardingStrategy.HYBRID_SHARD, rank, size)
    dist.destroy_process_group()
    print(f"rank {rank}: FSDP OK", flush=True)


if __name__ == "__main__":
    main()
