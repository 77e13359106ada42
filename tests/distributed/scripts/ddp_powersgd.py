"""Run under mpiexec -n 2: DDP with the PowerSGD hooks. Each rank trains on its share of a
batch; NumPy float64 computes the whole batch's gradients. Where the rank r is the matrices' full
rank, the low-rank average is exact; a batch of one sample, the same on both ranks, has rank-1
weight gradients, which rank 1 gives exactly; below full rank, the gradient DDP leaves plus the
error a rank keeps for its next step is that rank's own gradient (error feedback loses nothing)."""

import numpy as np

import tensorplug as tp
import tensorplug.distributed as dist
from tensorplug import nn
from tensorplug.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as powerSGD
from tensorplug.nn.parallel import DistributedDataParallel as DDP

from tanh_net import numpy_gradients  # this folder is on sys.path when a script runs

IN, HIDDEN, OUT = 5, 7, 3


def model_and_weights(seed):
    rng = np.random.default_rng(seed)
    weights = [rng.standard_normal(s) for s in ((HIDDEN, IN), (HIDDEN,), (OUT, HIDDEN), (OUT,))]
    model = nn.Sequential(nn.Linear(IN, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, OUT)).to(tp.float64)
    with tp.no_grad():
        for p, w in zip(model.parameters(), weights):
            p.copy_(tp.tensor(w))
    return model, weights


def train(hook, state, steps, batch, same_data, rank, size, seed=3):
    """Runs ``steps`` DDP steps (gradients only, no update); yields (DDP's gradients, NumPy's)."""
    model, weights = model_and_weights(seed)
    ddp = DDP(model)
    ddp.register_comm_hook(state, hook)
    for step in range(steps):
        rng = np.random.default_rng(100 + step)
        x, t = rng.standard_normal((batch, IN)), rng.standard_normal((batch, OUT))
        share = slice(None) if same_data else slice(rank * batch // size, (rank + 1) * batch // size)
        ddp.zero_grad()
        ((ddp(tp.tensor(x[share])) - tp.tensor(t[share])) ** 2).mean().backward()
        yield [p.grad.numpy().copy() for p in model.parameters()], numpy_gradients(*weights, x, t)


def check_close(got, want, what):
    for g, w in zip(got, want):
        assert np.allclose(g, w, rtol=1e-10, atol=1e-12), (what, g, w)


def main():
    dist.init_process_group("gloo")
    rank, size = dist.get_rank(), dist.get_world_size()

    # Full rank (8 >= every matrix's smaller side), compression forced: exact from step 2 on.
    for hook in (powerSGD.powerSGD_hook, powerSGD.batched_powerSGD_hook):
        state = powerSGD.PowerSGDState(None, matrix_approximation_rank=8, start_powerSGD_iter=2, min_compression_rate=0)
        for step, (got, want) in enumerate(train(hook, state, 4, 8, False, rank, size)):
            check_close(got, want, (hook.__name__, step))
        assert state.iter == 4, state.iter  # one per step (the last bucket ends it)
        assert state.compression_stats()[2] > 0

    # One sample, the same on both ranks: rank-1 weight gradients, exact at rank 1.
    state = powerSGD.PowerSGDState(None, matrix_approximation_rank=1, start_powerSGD_iter=2, min_compression_rate=0,
                                   use_error_feedback=False)
    for got, want in train(powerSGD.powerSGD_hook, state, 4, 1, True, rank, size):
        check_close(got, want, "rank 1")

    # Below full rank: at the first compressed step (no earlier error), DDP's gradient plus the
    # error this rank keeps is this rank's own gradient: what the approximation missed is kept.
    state = powerSGD.PowerSGDState(None, matrix_approximation_rank=1, start_powerSGD_iter=2, min_compression_rate=0)
    results = list(train(powerSGD.powerSGD_hook, state, 3, 8, False, rank, size))
    got, average = results[2]
    model_weights = model_and_weights(3)[1]
    rng = np.random.default_rng(102)
    x, t = rng.standard_normal((8, IN)), rng.standard_normal((8, OUT))
    share = slice(rank * 8 // size, (rank + 1) * 8 // size)
    local = numpy_gradients(*model_weights, x[share], t[share])
    error = state.error_dict[0].numpy()
    flat = lambda grads: np.concatenate([g.ravel() for g in reversed(grads)])  # bucket order: last layer first
    assert not np.allclose(flat(got), flat(average)), "rank 1 should not be exact here"
    assert np.allclose(flat(got) + error, flat(local), rtol=1e-10, atol=1e-12), (flat(got) + error, flat(local))

    try:
        powerSGD.PowerSGDState(None, start_powerSGD_iter=1)
        raise AssertionError("start_powerSGD_iter=1 with error feedback must be refused")
    except ValueError as exc:
        assert "start_powerSGD_iter" in str(exc)
    dist.destroy_process_group()
    print(f"rank {rank}: PowerSGD OK", flush=True)


if __name__ == "__main__":
    main()
