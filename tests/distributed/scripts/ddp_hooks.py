"""Run under mpiexec -n 2: DDP communication hooks. Each rank trains on its share of a batch;
the gradients DDP leaves must be the whole batch's, computed here in NumPy float64 (a two-layer
tanh network, mean squared error). The compressing hooks must give gradients that went through
16-bit floats: representable in that format, within its rounding of the exact average."""

import numpy as np

import tensorplug as tp
import tensorplug.distributed as dist
from tensorplug import nn
from tensorplug.distributed.algorithms.ddp_comm_hooks import default_hooks
from tensorplug.nn.parallel import DistributedDataParallel as DDP

from tanh_net import numpy_gradients  # this folder is on sys.path when a script runs

BATCH, IN, HIDDEN, OUT = 8, 5, 7, 3


def setup(rank, size, seed):
    rng = np.random.default_rng(seed)
    weights = [rng.standard_normal(s) for s in ((HIDDEN, IN), (HIDDEN,), (OUT, HIDDEN), (OUT,))]
    x, t = rng.standard_normal((BATCH, IN)), rng.standard_normal((BATCH, OUT))
    model = nn.Sequential(nn.Linear(IN, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, OUT)).to(tp.float64)
    with tp.no_grad():
        for p, w in zip(model.parameters(), weights):
            p.copy_(tp.tensor(w))
    shares = [slice(r * BATCH // size, (r + 1) * BATCH // size) for r in range(size)]
    # What each rank contributes to the average (its share's gradient / size), for the 16-bit bound.
    contributions = [[g / size for g in numpy_gradients(*weights, x[s], t[s])] for s in shares]
    share = shares[rank]
    return model, contributions, tp.tensor(x[share]), tp.tensor(t[share]), numpy_gradients(*weights, x, t)


def step(ddp, x, t):
    ((ddp(x) - t) ** 2).mean().backward()
    return [p.grad.numpy().astype(np.float64) for p in ddp.module.parameters()]


def representable(values, dtype):
    if dtype == "float16":
        return np.array_equal(values.astype(np.float16).astype(np.float64), values)
    bits = values.astype(np.float32).view(np.uint32)  # bfloat16 is float32 with 16 low bits zero
    return np.array_equal(values.astype(np.float32).astype(np.float64), values) and not np.any(bits & 0xFFFF)


def main():
    dist.init_process_group("gloo")
    rank, size = dist.get_rank(), dist.get_world_size()

    # allreduce_hook: what DDP does without a hook, exact in float64.
    model, _, x, t, expected = setup(rank, size, 1)
    ddp = DDP(model)
    ddp.register_comm_hook(state=None, hook=default_hooks.allreduce_hook)
    for got, want in zip(step(ddp, x, t), expected):
        assert np.allclose(got, want, rtol=1e-12, atol=1e-14), (got, want)
    try:
        ddp.register_comm_hook(None, default_hooks.allreduce_hook)
        raise AssertionError("a second register_comm_hook must fail")
    except RuntimeError as exc:
        assert "can only be called once" in str(exc)

    # The compressing hooks: close to the exact average, and every value went through 16 bits.
    for hook, dtype, eps in ((default_hooks.fp16_compress_hook, "float16", 2.0 ** -10),
                             (default_hooks.bf16_compress_hook, "bfloat16", 2.0 ** -7),
                             (default_hooks.fp16_compress_wrapper(default_hooks.allreduce_hook), "float16", 2.0 ** -10)):
        model, contributions, x, t, expected = setup(rank, size, 2)
        ddp = DDP(model)
        ddp.register_comm_hook(None, hook)
        for i, (got, want) in enumerate(zip(step(ddp, x, t), expected)):
            # Each rank's contribution rounds once to 16 bits (relative error <= eps/2), the sum once more.
            bound = eps / 2 * (sum(np.abs(c[i]) for c in contributions) + np.abs(want)) * 1.01 + 1e-300
            assert np.all(np.abs(got - want) <= bound), (dtype, got, want)
            assert representable(got, dtype), (dtype, got)

    # A hook of the user's: sees every bucket once per backward, in order, with the GradBucket API.
    model, _, x, t, expected = setup(rank, size, 3)
    ddp = DDP(model, bucket_cap_mb=HIDDEN * IN * 8 / 2 ** 20)  # several buckets
    calls = []

    def averaging_hook(state, bucket):
        grads, params = bucket.gradients(), bucket.parameters()
        assert [tuple(g.shape) for g in grads] == [tuple(p.shape) for p in params]
        assert bucket.buffer().numel() == sum(p.numel() for p in params)
        state.append((bucket.index(), bucket.is_last(), len(params)))
        work = dist.all_reduce(bucket.buffer(), async_op=True)
        return work.get_future().then(lambda done: done.value()[0] / size)

    ddp.register_comm_hook(calls, averaging_hook)
    for got, want in zip(step(ddp, x, t), expected):
        assert np.allclose(got, want, rtol=1e-12, atol=1e-14), (got, want)
    indices = [c[0] for c in calls]
    assert indices == list(range(len(calls))) and len(calls) > 1, calls
    assert [c[1] for c in calls] == [False] * (len(calls) - 1) + [True], calls
    assert sum(c[2] for c in calls) == 4

    # A hook that returns something other than a future is named in the error.
    model, _, x, t, _ = setup(rank, size, 4)
    ddp = DDP(model)
    ddp.register_comm_hook(None, lambda state, bucket: bucket.buffer())
    try:
        step(ddp, x, t)
        raise AssertionError("a hook that returns a tensor must fail")
    except TypeError as exc:
        assert "not a future" in str(exc), exc

    # The compressing hooks' sum moves 16-bit words and adds in 16 bits: exactly NumPy's float16 sum.
    from tensorplug.distributed.half_sum import start_sum16

    parts = [np.random.default_rng(10 + r).standard_normal(33).astype(np.float16) for r in range(size)]
    packed = tp.tensor(parts[rank])
    assert packed.dtype == tp.float16
    start_sum16(None, packed).get_future().wait()
    exact16 = parts[0]
    for part in parts[1:]:
        exact16 = (exact16.astype(np.float32) + part.astype(np.float32)).astype(np.float16)
    assert np.array_equal(packed.numpy(), exact16), (packed.numpy(), exact16)
    packed = tp.tensor(parts[rank].astype(np.float32)).to(tp.bfloat16)
    start_sum16(None, packed).wait()
    summed = packed.to(tp.float64).numpy()
    want = sum(p.astype(np.float64) for p in parts)
    assert np.all(np.abs(summed - want) <= 2.0 ** -7 * (sum(np.abs(p.astype(np.float64)) for p in parts))), summed
    assert representable(summed, "bfloat16")

    dist.destroy_process_group()
    print(f"rank {rank}: DDP hooks OK", flush=True)




if __name__ == "__main__":
    main()
