"""out= for sum, mean, prod, cumsum and cumprod (issue 16): the result is computed in out's
dtype (the input converted first), out is resized with PyTorch's warning, and dtype= must match
out's dtype exactly. Values against NumPy float64; accept/refuse, dtypes and values against
PyTorch 2.13 where it is installed."""
import warnings

import numpy as np
import pytest

import tensorplug as tp
from device_params import every_device, torch_or_skip


@pytest.mark.parametrize("device", every_device())
@pytest.mark.parametrize("op", ["sum", "mean", "prod"])
@pytest.mark.parametrize("keepdim", [False, True])
def test_reduction_into_out_matches_numpy(device, op, keepdim, rng):
    """sum/mean/prod(x, dim, keepdim, out=o) write NumPy's float64 values into o and return o."""
    values = rng.uniform(-2, 2, (3, 4))
    out = tp.zeros(4 if not keepdim else (1, 4), dtype=tp.float64, device=device)
    returned = getattr(tp, op)(tp.tensor(values, device=device), 0, keepdim, out=out)
    assert returned is out
    expected = getattr(np, op)(values, axis=0, keepdims=keepdim)
    np.testing.assert_allclose(out.cpu().numpy(), expected, rtol=1e-12)


@pytest.mark.parametrize("device", every_device())
@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_scan_into_out_matches_numpy(device, op, rng):
    """cumsum/cumprod(x, dim, out=o) into a zero-element o: o takes the input's shape, no warning."""
    values = rng.uniform(-2, 2, (3, 4))
    out = tp.empty(0, dtype=tp.float64, device=device)
    getattr(tp, op)(tp.tensor(values, device=device), 1, out=out)
    assert out.shape == (3, 4)
    np.testing.assert_allclose(out.cpu().numpy(), getattr(np, op)(values, axis=1), rtol=1e-12)


@pytest.mark.parametrize("device", every_device())
def test_out_dtype_decides_the_computation(device):
    """The input is converted to out's dtype before reducing: 0.5 + 0.6 into int64 is 0, not 1."""
    x = tp.tensor([0.5, 0.6], device=device)
    out = tp.empty((), dtype=tp.int64, device=device)
    assert tp.sum(x, 0, out=out).item() == 0
    scanned = tp.empty(2, dtype=tp.int64, device=device)
    assert tp.cumsum(x, 0, out=scanned).tolist() == [0, 0]


@pytest.mark.parametrize("device", every_device())
def test_out_of_another_shape_is_resized_with_a_warning(device):
    """A wrongly shaped out= that held elements is resized to the result's shape, with a warning."""
    out = tp.zeros(5, device=device)
    with pytest.warns(UserWarning, match="resized"):
        tp.sum(tp.ones(2, 3, device=device), 0, out=out)
    assert out.shape == (3,) and out.tolist() == [2.0, 2.0, 2.0]


def test_non_contiguous_out_keeps_its_strides():
    """An out= of the right shape is written in place, whatever its strides."""
    out = tp.empty(2, 3).t()
    tp.cumsum(tp.ones(3, 2), 0, out=out)
    assert out.stride() == (1, 3)
    assert out.tolist() == [[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]]


def test_errors():
    """dtype= must equal out's dtype; mean refuses an integer out; prod's out= needs a dim; scans
    have no bool kernel."""
    x = tp.ones(2, 3)
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float64, but got float32"):
        tp.sum(x, 0, dtype=tp.float64, out=tp.empty(3))
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type int64"):
        tp.mean(x, 0, out=tp.empty(3, dtype=tp.int64))
    with pytest.raises(RuntimeError, match="could not infer output dtype"):
        tp.mean(tp.ones(2, dtype=tp.int64), 0, out=tp.empty(()))
    with pytest.raises(TypeError, match="dim"):
        tp.prod(x, out=tp.empty(()))
    with pytest.raises(NotImplementedError, match="bool"):
        tp.cumsum(tp.tensor([1, 2]), 0, out=tp.empty(2, dtype=tp.bool))
    with pytest.raises(TypeError, match="argument 'out' must be Tensor"):
        tp.cumprod(x, 0, out=[1.0])


def _cases(L):
    t = L.tensor
    return {
        "sum float into int64": lambda: L.sum(t([0.5, 0.6]), 0, out=L.empty((), dtype=L.int64)),
        "sum int into bool": lambda: L.sum(t([0, 3, 0]), 0, out=L.empty((), dtype=L.bool)),
        "prod int into bool": lambda: L.prod(t([2, 3]), 0, out=L.empty((), dtype=L.bool)),
        "sum wraps in int8": lambda: L.sum(t([100, 100]), 0, out=L.empty((), dtype=L.int8)),
        "sum of bools into uint8": lambda: L.sum(L.ones(300, dtype=L.bool), 0, out=L.empty((), dtype=L.uint8)),
        "sum float32 into float16": lambda: L.sum(t([1e20, -1e20]), 0, out=L.empty((), dtype=L.float16)),
        "sum float16 into float16":
            lambda: L.sum(t([6e4, 6e4, -6e4], dtype=L.float16), 0, out=L.empty((), dtype=L.float16)),
        "mean float32 into float16": lambda: L.mean(t([1e20, -1e20]), 0, out=L.empty((), dtype=L.float16)),
        "mean float16 into float32": lambda: L.mean(t([6e4, 6e4], dtype=L.float16), 0, out=L.empty(())),
        "mean with dtype float16": lambda: L.mean(t([1e20, -1e20, 3.0]), 0, dtype=L.float16),
        "mean float64 with dtype float32": lambda: L.mean(t([1e300, -1e300, 3.0], dtype=L.float64), 0, dtype=L.float32),
        "mean into int64": lambda: L.mean(t([1.0, 2.0]), 0, out=L.empty((), dtype=L.int64)),
        "mean of int64 into float": lambda: L.mean(t([1, 2]), 0, out=L.empty(())),
        "mean with dtype and out": lambda: L.mean(t([1, 2]), 0, dtype=L.float32, out=L.empty(())),
        "mean without dim": lambda: L.mean(t([1.0, 2.0]), out=L.empty(())),
        "mean of nothing": lambda: L.mean(L.ones(0), 0, out=L.empty(())),
        "sum dim=None": lambda: L.sum(t([1.0, 2.0]), dim=None, out=L.empty(())),
        "sum dtype mismatch": lambda: L.sum(L.ones(2), 0, dtype=L.float64, out=L.empty(())),
        "sum keepdim, two dims": lambda: L.sum(L.ones(2, 3, 4), (0, 2), True, out=L.empty(0)),
        "prod dim=None": lambda: L.prod(L.ones(2), dim=None, out=L.empty(())),
        "cumsum into bool": lambda: L.cumsum(t([1, 2]), 0, out=L.empty(2, dtype=L.bool)),
        "cumsum dtype bool": lambda: L.cumsum(t([1, 2]), 0, dtype=L.bool),
        "cumsum of bools into int64": lambda: L.cumsum(t([True, True]), 0, out=L.empty(2, dtype=L.int64)),
        "cumsum float32 into float16": lambda: L.cumsum(t([6e4, 6e4, -6e4]), 0, out=L.empty(3, dtype=L.float16)),
        "cumsum of 0-d": lambda: L.cumsum(t(2.0), 0, out=L.empty(5)),
        "cumsum bad dim": lambda: L.cumsum(L.ones(2), 3, out=L.empty(2)),
        "cumsum into its input": lambda: (lambda a: L.cumsum(a, 0, out=a))(L.ones(3)),
        "cumprod float into int64": lambda: L.cumprod(t([1.5, 2.0]), 0, out=L.empty(2, dtype=L.int64)),
    }


def _outcome(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = call()
        except Exception as exc:  # the outcome being compared
            return ("raised", type(exc).__name__), None
    resized = any("resized" in str(w.message) for w in caught)
    return ("value", str(value.dtype).split(".")[-1], tuple(value.shape), resized), value


def test_outcomes_match_pytorch():
    """Each case raises the exception type PyTorch raises, or gives its dtype, shape, resize warning
    and values."""
    torch = torch_or_skip()
    expected_cases = _cases(torch)
    for name, call in _cases(tp).items():
        got, got_value = _outcome(call)
        expected, expected_value = _outcome(expected_cases[name])
        assert got == expected, name
        if got_value is not None:
            np.testing.assert_allclose(got_value.double().numpy(), expected_value.double().numpy(), err_msg=name)
