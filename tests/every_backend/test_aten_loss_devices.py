"""PyTorch's top-level ATen loss forms (tp.kl_div, tp.binary_cross_entropy_with_logits, ...;
issue 13) on every backend: float32 values and gradients against torch's own functions."""
import numpy as np
import pytest

from torch_reference import compare, torch_or_skip


def _float32(*arrays):
    return [np.asarray(a, dtype=np.float32) for a in arrays]


@pytest.mark.parametrize("reduction", [0, 1, 2], ids=["none", "mean", "sum"])
def test_kl_div(device, reduction):
    """kl_div of log-probabilities against probabilities, with the input's and the target's gradients."""
    torch = torch_or_skip()
    rng = np.random.default_rng(0)
    arrays = _float32(np.log(rng.dirichlet(np.ones(5), 4)), rng.dirichlet(np.ones(5), 4))
    compare(torch, lambda lib, x, t: lib.kl_div(x, t, reduction), arrays, device=device)


@pytest.mark.parametrize("reduction", [0, 1, 2], ids=["none", "mean", "sum"])
def test_binary_cross_entropy_with_logits(device, reduction):
    """bce with logits, weight and pos_weight broadcast over the batch, with the input's and the target's gradients."""
    torch = torch_or_skip()
    rng = np.random.default_rng(1)
    arrays = _float32(rng.standard_normal((4, 3)), rng.random((4, 3)), rng.uniform(0.5, 2.0, 3), rng.uniform(0.5, 2.0, 3))
    compare(torch, lambda lib, x, t, w, pw: lib.binary_cross_entropy_with_logits(x, t, w.detach(), pw.detach(), reduction),
            arrays, device=device)


@pytest.mark.parametrize("reduction", [0, 1, 2], ids=["none", "mean", "sum"])
def test_cosine_embedding_loss(device, reduction):
    """cosine_embedding_loss of similar (1) and dissimilar (-1) pairs, with both inputs' gradients."""
    torch = torch_or_skip()
    rng = np.random.default_rng(2)
    arrays = _float32(rng.standard_normal((5, 3)), rng.standard_normal((5, 3)), [1, -1, 1, -1, -1])
    compare(torch, lambda lib, a, b, t: lib.cosine_embedding_loss(a, b, t.detach(), 0.1, reduction), arrays,
            device=device)
