"""nn.SyncBatchNorm in one process (no process group: BatchNorm's results) and
convert_sync_batchnorm, against torch 2.13; tests/distributed runs it on two ranks."""
import numpy as np
import pytest

import tensorplug as tp
from tensorplug import nn

try:
    import torch
except ImportError:  # the reference; tensorplug itself does not need it
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch (the reference) is not installed: pip install torch==2.13.0")


@needs_torch
@pytest.mark.parametrize("shape", [(4, 3), (4, 3, 5), (2, 3, 4, 4), (2, 3, 2, 2, 2)])
def test_without_a_process_group_it_is_batchnorm(shape, device):
    x = np.random.default_rng(0).standard_normal(shape)
    ours = nn.SyncBatchNorm(3, dtype=tp.float64).to(device)
    theirs = torch.nn.SyncBatchNorm(3, dtype=torch.float64)
    xt, xp = torch.tensor(x, requires_grad=True), tp.tensor(x, device=device, requires_grad=True)
    theirs(xt).pow(2).sum().backward()
    ours(xp).pow(2).sum().backward()
    np.testing.assert_allclose(xp.grad.cpu().numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ours.running_var.cpu().numpy(), theirs.running_var.numpy(), rtol=1e-12)
    ours.eval()
    theirs.eval()
    np.testing.assert_allclose(ours(xp).detach().cpu().numpy(), theirs(xt).detach().numpy(), rtol=1e-12, atol=1e-12)


def test_checks_and_conversion():
    with pytest.raises(ValueError, match=r"expected at least 2D input \(got 1D input\)"):
        nn.SyncBatchNorm(3)(tp.ones(3))
    model = nn.Sequential(nn.Conv2d(1, 3, 3), nn.BatchNorm2d(3), nn.Sequential(nn.BatchNorm1d(4, affine=False)))
    model[1].weight.requires_grad_(False)
    with tp.no_grad():
        model[1].running_mean.fill_(0.5)
    model.eval()
    converted = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    assert isinstance(converted[1], nn.SyncBatchNorm) and isinstance(converted[2][0], nn.SyncBatchNorm)
    assert converted[1].weight is model[1].weight and not converted[1].weight.requires_grad
    assert float(converted[1].running_mean[0]) == 0.5 and not converted[1].training
    assert converted[2][0].weight is None and isinstance(converted[0], nn.Conv2d)
    assert nn.SyncBatchNorm.convert_sync_batchnorm(nn.BatchNorm1d(2)).num_features == 2
