"""Run under mpiexec -n 2: DistributedDataParallel with each rank training on half of every batch
ends with the parameters of one process training on the whole batch (MLP and CNN, 5 steps)."""
import sys

import numpy as np

import tensorplug as tp
import tensorplug.distributed as dist
import tensorplug.nn.functional as F
from tensorplug import nn
from tensorplug.nn.parallel import DistributedDataParallel as DDP
from tensorplug.utils.data import DistributedSampler


def mlp():
    return nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 4))


def cnn():
    # No BatchNorm: its batch statistics are per replica under DDP (as in PyTorch without
    # SyncBatchNorm), so half batches would not match one whole batch.
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(4, 6, 3, stride=2),
                         nn.ReLU(), nn.Flatten(), nn.Linear(6, 4))


def data(kind, step):
    rng = np.random.default_rng(100 + step)
    x = rng.standard_normal((8, 12) if kind == "mlp" else (8, 1, 8, 8)).astype(np.float32)
    y = rng.integers(0, 4, size=8)
    return tp.tensor(x), tp.tensor(y)


def train(model, kind, rank, size, steps=5, bucket_cap_mb=None):
    opt = tp.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for step in range(steps):
        x, y = data(kind, step)
        share = slice(rank * 8 // size, (rank + 1) * 8 // size)
        opt.zero_grad()
        F.cross_entropy(model(x[share]), y[share]).backward()
        opt.step()
    return model


def check(kind, rank, size, **kw):
    tp.manual_seed(rank)  # different initial weights on purpose: DDP must broadcast rank 0's
    model = mlp() if kind == "mlp" else cnn()
    start = [p.detach().clone() for p in model.parameters()]
    everyone = [None] * size
    dist.all_gather_object(everyone, [p.numpy().copy() for p in start])
    ddp = DDP(model, **kw)
    train(ddp, kind, rank, size)
    # Reference: one process, the whole batch, from rank 0's initial weights.
    reference = mlp() if kind == "mlp" else cnn()
    with tp.no_grad():
        for p, w in zip(reference.parameters(), everyone[0]):
            p.copy_(tp.tensor(w))
    train(reference, kind, 0, 1)
    worst = max(float((p - q).abs().max()) for p, q in zip(model.parameters(), reference.parameters()))
    return worst


def main():
    dist.init_process_group("mpi")
    rank, size = dist.get_rank(), dist.get_world_size()
    worst = check("mlp", rank, size)
    assert worst < 1e-5, f"mlp: max parameter difference {worst}"
    worst_small = check("mlp", rank, size, bucket_cap_mb=0.0005)  # many buckets
    assert worst_small < 1e-5, f"mlp with small buckets: {worst_small}"
    # no_sync: two accumulated local steps then one synced equal the full-batch gradient sum.
    tp.manual_seed(0)
    model = DDP(mlp())
    x, y = data("mlp", 0)
    share = slice(rank * 4, (rank + 1) * 4)
    with model.no_sync():
        F.cross_entropy(model(x[share]), y[share]).backward()
    local = [p.grad.clone() for p in model.parameters()]
    F.cross_entropy(model(x[share]), y[share]).backward()
    everyone = [None] * size
    dist.all_gather_object(everyone, [g.numpy() for g in local])
    for p, *gs in zip(model.parameters(), *everyone):
        np.testing.assert_allclose(p.grad.numpy(), sum(2 * g for g in gs) / size, rtol=1e-5, atol=1e-6)
    # Unused parameters: an error naming them, or zeros with find_unused_parameters.
    class TwoHeads(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(3, 2), nn.Linear(3, 2)

        def forward(self, x):
            return self.a(x)

    try:
        DDP(TwoHeads())(tp.ones(2, 3)).sum().backward()
        raise AssertionError("an unused parameter went unnoticed")
    except RuntimeError as exc:
        assert "b.weight" in str(exc) and "find_unused_parameters=True" in str(exc), exc
    model = DDP(TwoHeads(), find_unused_parameters=True)
    model(tp.ones(2, 3) * (rank + 1)).sum().backward()
    assert float(model.module.b.weight.grad.abs().sum()) == 0.0
    np.testing.assert_allclose(model.module.a.weight.grad.numpy(), np.full((2, 3), 3.0), rtol=1e-6)  # mean of 2,4
    # DistributedSampler picks the world from the process group.
    sampler = DistributedSampler(range(10), shuffle=False)
    assert list(sampler) == list(range(rank, 10, 2))
    worst_cnn = check("cnn", rank, size)
    assert worst_cnn < 1e-5, f"cnn: max parameter difference {worst_cnn}"
    print(f"rank {rank}: DDP OK (mlp {worst:.2e}, small buckets {worst_small:.2e}, cnn {worst_cnn:.2e})")
    sys.stdout.flush()
    dist.destroy_process_group()


main()
