"""Activations, softmax and dropout against PyTorch."""
import numpy as np
import pytest

import tensorplug as tp
import tensorplug.nn.functional as F
from nn_reference import check

torch = pytest.importorskip("torch")
TF = torch.nn.functional

ACTIVATIONS = {
    "relu": {}, "relu6": {}, "leaky_relu": {"negative_slope": 0.2}, "elu": {"alpha": 0.7}, "selu": {}, "celu": {"alpha": 1.5},
    "gelu": {}, "silu": {}, "mish": {}, "softplus": {"beta": 2.0, "threshold": 5.0}, "hardtanh": {"min_val": -0.5, "max_val": 2.0},
    "hardsigmoid": {}, "hardswish": {}, "sigmoid": {}, "tanh": {}, "logsigmoid": {}, "softsign": {}, "tanhshrink": {},
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("noncontiguous", [False, True])
def test_activation_matches_torch(name, dtype, noncontiguous):
    """Values and gradients of each activation equal PyTorch's (random inputs, wide range)."""
    x = np.random.randn(3, 5) * 4
    kwargs = ACTIVATIONS[name]
    check(torch, lambda a: getattr(F, name)(a, **kwargs), lambda a: getattr(TF, name)(a, **kwargs), [x], dtype, noncontiguous)


def test_gelu_tanh_and_large_inputs():
    """gelu's tanh approximation, and softplus/elu/mish stay finite (values and grads) for huge inputs."""
    x = np.array([-80.0, -3.0, -0.5, 0.0, 0.5, 3.0, 80.0])
    check(torch, lambda a: F.gelu(a, approximate="tanh"), lambda a: TF.gelu(a, approximate="tanh"), [x])
    for name in ("softplus", "elu", "mish", "silu", "logsigmoid"):
        big = np.array([-1000.0, -50.0, 0.0, 50.0, 1000.0])
        check(torch, getattr(F, name), getattr(TF, name), [big])


def test_relu_gradient_at_zero_is_zero():
    """As in PyTorch, relu's gradient at exactly 0 is 0 (hardtanh's at its bounds too)."""
    check(torch, F.relu, TF.relu, [np.array([-1.0, 0.0, 2.0])])
    check(torch, F.relu6, TF.relu6, [np.array([-1.0, 0.0, 3.0, 6.0, 7.0])])


def test_threshold_glu_softmin():
    x = np.random.randn(4, 6)
    check(torch, lambda a: F.threshold(a, 0.1, 20.0), lambda a: TF.threshold(a, 0.1, 20.0), [x])
    check(torch, lambda a: F.glu(a, 1), lambda a: TF.glu(a, 1), [x])
    check(torch, lambda a: F.softmin(a, 0), lambda a: TF.softmin(a, 0), [x])


def test_inplace_variants():
    """relu_/leaky_relu_/elu_ and inplace=True write into their input and return it."""
    for fn, ref in ((F.relu_, TF.relu_), (F.leaky_relu_, TF.leaky_relu_), (F.elu_, TF.elu_)):
        x = np.random.randn(7)
        a, b = tp.tensor(x), torch.tensor(x)
        assert fn(a) is a
        ref(b)
        np.testing.assert_allclose(a.numpy(), b.numpy())
    a = tp.tensor([-1.0, 1.0])
    assert F.relu(a, inplace=True) is a and a.tolist() == [0.0, 1.0]
    a.relu_()
    assert a.tolist() == [0.0, 1.0]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_matches_torch(fn, dim, dtype):
    """softmax/log_softmax over each dim, non-contiguous input, huge logits stay finite."""
    x = np.random.randn(3, 4, 5) * 3
    x[0, 0, 0] = 1000.0
    check(torch, lambda a: getattr(F, fn)(a, dim), lambda a: getattr(TF, fn)(a, dim), [x], dtype, noncontiguous=True)


def test_softmax_dtype_scalar_and_methods():
    """dtype= casts first; 0-d input; Tensor.softmax / log_softmax methods."""
    x = np.random.randn(2, 3).astype(np.float32)
    out = F.softmax(tp.tensor(x), 1, dtype=tp.float64)
    assert out.dtype == tp.float64
    np.testing.assert_allclose(out.numpy(), TF.softmax(torch.tensor(x), 1, dtype=torch.float64).numpy(), rtol=1e-12)
    assert F.softmax(tp.tensor(3.0), 0).item() == 1.0
    assert F.log_softmax(tp.tensor(3.0), 0).item() == 0.0
    np.testing.assert_allclose(tp.tensor(x).log_softmax(-1).numpy(), torch.tensor(x).log_softmax(-1).numpy(), rtol=1e-5)
    with pytest.warns(UserWarning, match="Implicit dimension"):
        F.softmax(tp.tensor(x))


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_softmax_explicit_derivative_matches_decomposition(fn):
    """The registered derivative gives the gradient that the decomposition's primitives give."""
    op = getattr(F._activations, "_" + fn)
    x = np.random.randn(4, 6)
    a, b = tp.tensor(x, requires_grad=True), tp.tensor(x, requires_grad=True)
    g = tp.tensor(np.random.randn(4, 6))
    (op(a, 1) * g).sum().backward()
    (op.op.decomposition(b, 1) * g).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-10, atol=1e-12)
    assert tp.autograd.gradcheck(lambda t: op(t, 1), (tp.tensor(np.random.randn(3, 4), requires_grad=True),))


def test_softmax_second_order():
    """Backward of the explicit derivative is itself differentiable (create_graph)."""
    x = tp.tensor(np.random.randn(2, 3), requires_grad=True)
    assert tp.autograd.gradgradcheck(lambda t: F.log_softmax(t, 1), (x,))


def test_softmax_errors():
    with pytest.raises(IndexError, match="Dimension out of range"):
        F.softmax(tp.ones(3), dim=2)
    with pytest.raises(RuntimeError, match="softmax"):
        F.softmax(tp.ones(3, dtype=tp.int64), dim=0)
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
        F.gelu(tp.ones(3), approximate="x")


def test_dropout():
    """Kept elements are scaled by 1/(1-p), about p are zeroed; eval mode and p=0 are identity."""
    x = tp.ones(20000)
    y = F.dropout(x, 0.3)
    values = y.numpy()
    kept = values[values != 0]
    np.testing.assert_allclose(kept, 1 / 0.7, rtol=1e-6)
    assert abs((values == 0).mean() - 0.3) < 0.02
    assert F.dropout(x, 0.3, training=False) is x
    assert F.dropout(x, 0.0) is x
    assert F.dropout(x, 1.0).sum().item() == 0.0
    w = tp.ones(1000, requires_grad=True)
    out = F.dropout(w, 0.5)
    out.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), out.detach().numpy())
    channels = F.dropout2d(tp.ones(2, 50, 3, 3), 0.5).numpy()
    assert np.all(channels.min(axis=(2, 3)) == channels.max(axis=(2, 3)))
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        F.dropout(x, 1.5)


def test_dropout_is_seeded():
    tp.manual_seed(3)
    a = F.dropout(tp.ones(50), 0.5).numpy()
    tp.manual_seed(3)
    assert np.array_equal(a, F.dropout(tp.ones(50), 0.5).numpy())
