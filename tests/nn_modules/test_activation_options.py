"""Activation modules' options: constructors, signatures and reprs as PyTorch's (checked against
written-out expectations, and against torch.nn where it is installed)."""
import inspect

import numpy as np
import pytest

import tensorplug as tp


# PyTorch 2.13's reprs, written out so the check runs without PyTorch.
_EXPECTED_REPRS = [
    (lambda nn: nn.ReLU(True), "ReLU(inplace=True)"),
    (lambda nn: nn.LeakyReLU(0.2, True), "LeakyReLU(negative_slope=0.2, inplace=True)"),
    (lambda nn: nn.CELU(0.5), "CELU(alpha=0.5)"),
    (lambda nn: nn.GELU("tanh"), "GELU(approximate='tanh')"),
    (lambda nn: nn.Softplus(), "Softplus(beta=1.0, threshold=20.0)"),
    (lambda nn: nn.Hardtanh(), "Hardtanh(min_val=-1.0, max_val=1.0)"),
    (lambda nn: nn.Threshold(0.1, 20), "Threshold(threshold=0.1, value=20)"),
    (lambda nn: nn.Softmax(), "Softmax(dim=None)"),
    (lambda nn: nn.RReLU(0.1, 0.3, True), "RReLU(lower=0.1, upper=0.3, inplace=True)"),
    (lambda nn: nn.Softshrink(0.3), "Softshrink(0.3)"),
    (lambda nn: nn.ReLU6(True), "ReLU6(inplace=True)"),
    (lambda nn: nn.Tanh(), "Tanh()"),
]


@pytest.mark.parametrize("make,expected", _EXPECTED_REPRS)
def test_activation_reprs(make, expected):
    """Each activation module prints its options as PyTorch does (inplace only when True)."""
    assert repr(make(tp.nn)) == expected


def test_activation_constructor_signatures():
    """Options bind positionally and by name as PyTorch's constructors take them; a subclass with
    its own constructor keeps its own signature; ReLU6 is a Hardtanh clamped to [0, 6]."""
    assert str(inspect.signature(tp.nn.LeakyReLU)).startswith("(negative_slope=0.01, inplace=False)")
    assert tp.nn.Threshold(value=3, threshold=1.0).value == 3
    with pytest.raises(TypeError, match="Threshold.*value"):
        tp.nn.Threshold(0.1)
    with pytest.raises(TypeError, match="ReLU.*too many"):
        tp.nn.ReLU(True, 3)

    class Scaled(tp.nn.ReLU):
        def __init__(self, factor):
            super().__init__(inplace=False)
            self.factor = factor

    assert list(inspect.signature(Scaled).parameters) == ["factor"]
    six = tp.nn.ReLU6()
    assert isinstance(six, tp.nn.Hardtanh) and (six.min_val, six.max_val) == (0.0, 6.0)
    np.testing.assert_array_equal(six(tp.tensor([-1.0, 3.0, 9.0])).numpy(), [0.0, 3.0, 6.0])


def test_activation_signatures_match_torch():
    """Parameter names and defaults equal torch.nn's for every activation module both have."""
    torch = pytest.importorskip("torch")
    for name in tp.nn.activation.__all__:
        theirs = getattr(torch.nn, name, None)
        if theirs is None or name == "PReLU":
            continue
        ours_params = inspect.signature(getattr(tp.nn, name)).parameters
        their_params = inspect.signature(theirs).parameters
        if any(p.kind is p.VAR_POSITIONAL for p in their_params.values()):
            continue  # no constructor of its own there (Module's *args, **kwargs)
        assert [(p.name, p.default) for p in ours_params.values()] == \
            [(p.name, p.default) for p in their_params.values()], name
