"""In-place binary ops of a floating tensor and a Python number (``buf.mul_(0.9)``), which take a
fast path past binary_meta (issue 14), give PyTorch's values, dtypes, versions and errors."""
import numpy as np
import pytest

import tensorplug as tp
from tests.torch_reference import torch_or_skip

_OPS = ["add_", "sub_", "mul_", "div_", "pow_", "remainder_"]
# 16-bit results may differ from PyTorch's by a rounding of the 16-bit result.
_TOL = {"float32": 1e-6, "float64": 1e-12, "float16": 1e-3, "bfloat16": 8e-3}


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("number", [0.9, -3, 2, 0.0, float("nan")], ids=repr)
@pytest.mark.parametrize("op", _OPS)
def test_matches_torch(op, number, dtype):
    """Contiguous and transposed targets, int and float numbers, NaN included."""
    torch = torch_or_skip()
    if not hasattr(torch.Tensor, op):
        pytest.skip(f"PyTorch has no Tensor.{op}")
    values = np.random.default_rng(0).standard_normal((3, 4)) * 2
    for layout in (lambda t: t, lambda t: t.t()):
        ours = layout(tp.tensor(values, dtype=getattr(tp, dtype)).contiguous())
        theirs = layout(torch.tensor(values, dtype=getattr(torch, dtype)).contiguous())
        try:
            getattr(theirs, op)(number)
        except RuntimeError:
            with pytest.raises(RuntimeError):
                getattr(ours, op)(number)
            continue
        version = ours._version
        assert getattr(ours, op)(number) is ours
        assert ours._version > version
        assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
        np.testing.assert_allclose(ours.float().numpy(), theirs.float().numpy(), rtol=_TOL[dtype], atol=_TOL[dtype],
                                   equal_nan=True)


def test_integer_target_keeps_its_checks():
    """An int tensor times a float cannot be written back into it (the general path's error)."""
    with pytest.raises(RuntimeError):
        tp.ones(3, dtype=tp.int64).mul_(0.5)


def test_leaf_requiring_grad_refuses():
    """The autograd checks still run: a leaf that requires grad is not modified in place."""
    w = tp.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        w.mul_(0.5)
    with tp.no_grad():
        w.mul_(0.5)
    np.testing.assert_array_equal(w.detach().numpy(), [0.5, 0.5, 0.5])


def test_expanded_target_refuses():
    """A target with repeated elements (an expanded tensor) is refused, as in PyTorch."""
    with pytest.raises(RuntimeError):
        tp.ones(1).expand(3).mul_(2.0)


def test_recorded_in_graph():
    """On a non-leaf, the in-place op joins the graph: the gradient is PyTorch's."""
    x = tp.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    y.mul_(3.0).add_(1)
    (y * y).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2 * 4 * 3, 2 * 7 * 3])
