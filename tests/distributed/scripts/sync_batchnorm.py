"""Run under mpiexec -n 2: SyncBatchNorm with each rank holding part of every batch (uneven parts,
channels of very different scales) gives what BatchNorm gives on the whole batch in one process:
outputs, input and parameter gradients (the parameters' summed over the ranks, as DDP then
averages them), running statistics; convert_sync_batchnorm keeps parameters and buffers."""
import sys

import numpy as np

import tensorplug as tp
import tensorplug.distributed as dist
from tensorplug import nn


def main():
    dist.init_process_group("mpi")
    rank, size = dist.get_rank(), dist.get_world_size()
    rng = np.random.default_rng(0)  # the same whole batch on every rank
    scales = np.array([1.0, 1e3, 1e-3], dtype=np.float64).reshape(1, 3, 1, 1)
    whole = rng.standard_normal((7, 3, 4, 5)) * scales + 5.0 * scales
    grad_out = rng.standard_normal(whole.shape)
    cut = [0, 3, 7]  # rank 0 holds 3 samples, rank 1 holds 4
    mine = slice(cut[rank], cut[rank + 1])

    reference = nn.BatchNorm2d(3, dtype=tp.float64)
    with tp.no_grad():
        reference.weight.copy_(tp.tensor([0.5, 2.0, -1.0], dtype=tp.float64))
        reference.bias.copy_(tp.tensor([0.1, -0.2, 0.3], dtype=tp.float64))
    model = nn.SyncBatchNorm.convert_sync_batchnorm(nn.Sequential(nn.BatchNorm2d(3, dtype=tp.float64)))
    assert isinstance(model[0], nn.SyncBatchNorm), type(model[0])
    model[0].load_state_dict(reference.state_dict())

    x_all = tp.tensor(whole, requires_grad=True)
    y_all = reference(x_all)
    y_all.backward(tp.tensor(grad_out))
    x = tp.tensor(whole[mine], requires_grad=True)
    y = model(x)
    y.backward(tp.tensor(grad_out[mine]))

    np.testing.assert_allclose(y.detach().numpy(), y_all.detach().numpy()[mine], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(x.grad.numpy(), x_all.grad.numpy()[mine], rtol=1e-9, atol=1e-12)
    for name in ("weight", "bias"):
        local = getattr(model[0], name).grad.clone()
        dist.all_reduce(local)
        np.testing.assert_allclose(local.numpy(), getattr(reference, name).grad.numpy(), rtol=1e-10, atol=1e-10)
    for name in ("running_mean", "running_var"):
        np.testing.assert_allclose(getattr(model[0], name).numpy(), getattr(reference, name).numpy(), rtol=1e-12,
                                   atol=1e-12)
    assert int(model[0].num_batches_tracked) == 1
    model.eval()  # eval: the running statistics, no communication
    np.testing.assert_allclose(model(tp.tensor(whole[mine])).detach().numpy(),
                               reference.eval()(tp.tensor(whole)).detach().numpy()[mine], rtol=1e-12, atol=1e-12)
    print(f"rank {rank}: SyncBatchNorm OK")
    sys.stdout.flush()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
