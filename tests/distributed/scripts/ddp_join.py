"""Run under mpiexec -n 2: DDP with uneven inputs under ``model.join()``. Rank r has 3 + 2r
batches; nobody hangs, and every rank ends with the parameters NumPy float64 computes for SGD
where each step's gradient is the sum of the training ranks' gradients divided by the initial
world size (or by the number of training ranks with divide_by_initial_world_size=False). Also
the generic Join with a Joinable of this file's own, and throw_on_early_termination."""
import numpy as np

import tensorplug as tp
import tensorplug.distributed as dist
from tensorplug import nn
from tensorplug.distributed.algorithms import Join, JoinHook, Joinable
from tensorplug.distributed.algorithms.ddp_comm_hooks import default_hooks
from tensorplug.nn.parallel import DistributedDataParallel as DDP

from tanh_net import numpy_gradients  # this folder is on sys.path when a script runs

IN, HIDDEN, OUT, ROWS, LR = 4, 5, 2, 3, 0.1


def batches(rank):
    rng = np.random.default_rng(50 + rank)
    return [(rng.standard_normal((ROWS, IN)), rng.standard_normal((ROWS, OUT))) for _ in range(3 + 2 * rank)]


def numpy_training(weights, size, divide_by_initial):
    weights = [w.copy() for w in weights]
    per_rank = [batches(r) for r in range(size)]
    for step in range(max(len(b) for b in per_rank)):
        training = [b[step] for b in per_rank if step < len(b)]
        grads = [numpy_gradients(*weights, x, t) for x, t in training]
        divisor = size if divide_by_initial else len(training)
        weights = [w - LR * sum(g[i] for g in grads) / divisor for i, w in enumerate(weights)]
    return weights


def train(rank, size, divide_by_initial, hook=None, seed=0):
    rng = np.random.default_rng(seed)
    start = [rng.standard_normal(s) for s in ((HIDDEN, IN), (HIDDEN,), (OUT, HIDDEN), (OUT,))]
    model = nn.Sequential(nn.Linear(IN, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, OUT)).to(tp.float64)
    with tp.no_grad():
        for p, w in zip(model.parameters(), start):
            p.copy_(tp.tensor(w))
    ddp = DDP(model, bucket_cap_mb=HIDDEN * IN * 8 / 2 ** 20)  # several buckets to shadow
    if hook is not None:
        ddp.register_comm_hook(None, hook)
    opt = tp.optim.SGD(ddp.parameters(), lr=LR)
    with ddp.join(divide_by_initial_world_size=divide_by_initial):
        for x, t in batches(rank):
            opt.zero_grad()
            ((ddp(tp.tensor(x)) - tp.tensor(t)) ** 2).mean().backward()
            opt.step()
    expected = numpy_training(start, size, divide_by_initial)
    for p, want in zip(ddp.module.parameters(), expected):
        assert np.allclose(p.detach().numpy(), want, rtol=1e-12, atol=1e-13), (divide_by_initial, p, want)


class Counter(Joinable):
    """A Joinable of its own: each step all-reduces how many items this rank processed."""

    def __init__(self):
        self.total = 0

    def step(self):
        Join.notify_join_context(self)
        seen = tp.tensor([1], dtype=tp.int64)
        dist.all_reduce(seen)
        self.total += int(seen.item())

    def join_hook(self, **kwargs):
        counter = self

        class Shadow(JoinHook):
            def main_hook(self):
                dist.all_reduce(tp.tensor([0], dtype=tp.int64))

            def post_hook(self, is_last_joiner):
                counter.last_joiner = is_last_joiner

        return Shadow()

    @property
    def join_device(self):
        return tp.device("cpu")

    @property
    def join_process_group(self):
        return None


def main():
    dist.init_process_group("gloo")
    rank, size = dist.get_rank(), dist.get_world_size()
    train(rank, size, divide_by_initial=True)
    train(rank, size, divide_by_initial=False, seed=1)
    train(rank, size, divide_by_initial=True, hook=default_hooks.allreduce_hook, seed=2)

    counter = Counter()
    with Join([counter]):
        for _ in range(2 + rank):
            counter.step()
    # Step i counts the ranks that had an i-th item: 2 + ... as NumPy would sum them.
    assert counter.total == sum(sum(1 for r in range(size) if i < 2 + r) for i in range(2 + rank)), counter.total
    assert counter.last_joiner == (rank == size - 1)

    outcome = "finished"
    try:
        with Join([Counter()], throw_on_early_termination=True) as join:
            for _ in range(1 + rank):
                join._joinables[0].step()
    except RuntimeError as exc:
        outcome = str(exc)
    expected = "exhausted all inputs" if rank == 0 else "Detected at least one rank that exhausted inputs"
    assert expected in outcome, outcome

    dist.barrier()
    dist.destroy_process_group()
    print(f"rank {rank}: DDP join OK", flush=True)


if __name__ == "__main__":
    main()
