"""Activation and loss modules against torch.nn."""
import numpy as np
import pytest

import tensorplug as tp
from module_parity import check_module

torch = pytest.importorskip("torch")
nn = tp.nn

ACTIVATIONS = [
    ("ReLU", ()), ("ReLU6", ()), ("LeakyReLU", (0.2,)), ("GELU", ()), ("GELU", ("tanh",)), ("SiLU", ()), ("ELU", (0.5,)),
    ("CELU", ()), ("SELU", ()), ("Tanh", ()), ("Sigmoid", ()), ("Softmax", (1,)), ("LogSoftmax", (-1,)),
    ("Softmin", (0,)), ("Softplus", (2.0, 10.0)), ("Mish", ()), ("Hardtanh", (-0.5, 0.5)), ("Hardswish", ()),
    ("Hardsigmoid", ()), ("LogSigmoid", ()), ("Softsign", ()), ("Tanhshrink", ()), ("Threshold", (0.1, 20.0)), ("GLU", ()),
]


@pytest.mark.parametrize("name, args", ACTIVATIONS)
def test_activation(name, args):
    """Each activation module matches torch's values, gradients and repr."""
    ours, theirs = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(ours) == repr(theirs)
    # torch's CPU hardsigmoid backward uses the float32 constant 1.0f / 6.0f even in float64.
    tol = dict(rtol=1e-7, atol=1e-9) if name == "Hardsigmoid" else None
    check_module(torch, ours, theirs, [np.random.randn(3, 4)], tol=tol)


def test_inplace_relu_repr_and_effect():
    """ReLU(inplace=True) changes its input and says so in its repr."""
    m = nn.ReLU(inplace=True)
    assert repr(m) == repr(torch.nn.ReLU(inplace=True))
    x = tp.tensor([-1.0, 2.0])
    m(x)
    assert x.tolist() == [0.0, 2.0]


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_regression_losses(reduction):
    """MSE, L1, SmoothL1 and Huber losses match torch for every reduction."""
    x, y = np.random.randn(4, 3), np.random.randn(4, 3)
    for name, kwargs in [("MSELoss", {}), ("L1Loss", {}), ("SmoothL1Loss", {"beta": 0.5}), ("HuberLoss", {"delta": 0.7})]:
        ours = getattr(nn, name)(reduction=reduction, **kwargs)
        theirs = getattr(torch.nn, name)(reduction=reduction, **kwargs)
        check_module(torch, ours, theirs, [x, y])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_classification_losses(reduction):
    """CrossEntropy (weights, ignore_index, label smoothing, probabilities), NLL, BCE and
    BCEWithLogits (weight, pos_weight) match torch."""
    logits, target = np.random.randn(5, 4), np.array([0, 3, 1, 1, 2])
    weight = np.random.rand(4) + 0.5
    check_module(torch, nn.CrossEntropyLoss(reduction=reduction), torch.nn.CrossEntropyLoss(reduction=reduction), [logits, target])
    ours = nn.CrossEntropyLoss(weight=tp.tensor(weight), ignore_index=1, reduction=reduction, label_smoothing=0.1)
    theirs = torch.nn.CrossEntropyLoss(weight=torch.tensor(weight), ignore_index=1, reduction=reduction, label_smoothing=0.1)
    check_module(torch, ours, theirs, [logits, target])
    probs = np.random.dirichlet(np.ones(4), size=5)
    check_module(torch, nn.CrossEntropyLoss(reduction=reduction), torch.nn.CrossEntropyLoss(reduction=reduction), [logits, probs])
    log_probs = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    check_module(torch, nn.NLLLoss(reduction=reduction), torch.nn.NLLLoss(reduction=reduction), [log_probs, target])
    p, t = 1 / (1 + np.exp(-np.random.randn(3, 4))), np.random.rand(3, 4)
    check_module(torch, nn.BCELoss(reduction=reduction), torch.nn.BCELoss(reduction=reduction), [p, t])
    w, pw = np.random.rand(4), np.random.rand(4) + 0.5
    ours = nn.BCEWithLogitsLoss(weight=tp.tensor(w), pos_weight=tp.tensor(pw), reduction=reduction)
    theirs = torch.nn.BCEWithLogitsLoss(weight=torch.tensor(w), pos_weight=torch.tensor(pw), reduction=reduction)
    check_module(torch, ours, theirs, [np.random.randn(3, 4), t])


def test_loss_weight_is_a_buffer():
    """Class weights are buffers: in the state_dict and moved by to()."""
    loss = nn.CrossEntropyLoss(weight=tp.ones(3))
    assert list(loss.state_dict()) == ["weight"]
    loss.double()
    assert loss.weight.dtype is tp.float64
    assert repr(loss) == "CrossEntropyLoss()"


def test_legacy_reduction_arguments_warn():
    """size_average/reduce map to a reduction with torch's deprecation warning."""
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        loss = nn.MSELoss(reduce=False)
    assert loss.reduction == "none"

