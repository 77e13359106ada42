"""loss.backward()'s seed of one is filled once per device and dtype (issue 14): it must never
become a leaf's .grad, and a backward that writes into it must not change the next pass."""
import numpy as np
import pytest

import tensorplug as tp


def _grad(t) -> np.ndarray:
    return t.grad.cpu().numpy().astype(np.float64)


@pytest.mark.parametrize("dtype", [tp.float32, tp.float64])
def test_repeated_backward_accumulates_the_reference(device, dtype):
    a_np = np.array([1.5, -2.0, 3.0, 0.25])
    b_np = np.array([2.0, 0.5, -1.0, 4.0])
    a = tp.tensor(a_np, dtype=dtype, device=device, requires_grad=True)
    b = tp.tensor(b_np, dtype=dtype, device=device, requires_grad=True)
    for _ in range(3):
        (a * b).sum().backward()
    np.testing.assert_allclose(_grad(a), 3 * b_np, rtol=1e-6)
    np.testing.assert_allclose(_grad(b), 3 * a_np, rtol=1e-6)


def test_a_leaf_gradient_written_in_place_leaves_the_seed_alone(device):
    # clone's gradient is the seed itself: the leaf must get a copy, so scaling its .grad in
    # place cannot change what the next backward starts from.
    x = tp.tensor(2.0, device=device, requires_grad=True)
    x.clone().backward()
    x.grad.mul_(10)
    x.clone().backward()
    assert float(x.grad) == 11.0
    y = tp.tensor(3.0, device=device, requires_grad=True)
    (y * 2).backward()
    assert float(y.grad) == 2.0


def test_a_backward_that_writes_into_its_gradient_does_not_change_the_next_seed(device):
    class ScaleGradientInPlace(tp.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, grad):
            return grad.mul_(5)

    x = tp.tensor(1.0, device=device, requires_grad=True)
    ScaleGradientInPlace.apply(x).backward()
    assert float(x.grad) == 5.0
    z = tp.tensor(4.0, device=device, requires_grad=True)
    (z * 3).backward()
    assert float(z.grad) == 3.0


def test_torch_agrees_on_the_in_place_gradient_case():
    torch = pytest.importorskip("torch")

    class ScaleGradientInPlace(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, grad):
            return grad.mul_(5)

    x = torch.tensor(1.0, requires_grad=True)
    ScaleGradientInPlace.apply(x).backward()
    z = torch.tensor(4.0, requires_grad=True)
    (z * 3).backward()
    assert float(x.grad) == 5.0 and float(z.grad) == 3.0
