"""NumPy's spellings `axis` and `keepdims` on the reductions, as PyTorch's argument parser accepts
them (`counts / counts.sum(1, keepdims=True)`, Karpathy's makemore lectures)."""
import numpy as np
import pytest

import tensorplug as tp
from device_params import every_device, torch_or_skip

# tensorplug name -> the NumPy float64 reference (called with axis= and keepdims=).
REDUCTIONS = {
    "sum": np.sum,
    "mean": np.mean,
    "prod": np.prod,
    "amax": np.max,
    "amin": np.min,
    "nansum": np.nansum,
    "nanmean": np.nanmean,
    "std": lambda a, axis, keepdims: np.std(a, axis=axis, keepdims=keepdims, ddof=1),
    "var": lambda a, axis, keepdims: np.var(a, axis=axis, keepdims=keepdims, ddof=1),
    "logsumexp": lambda a, axis, keepdims: np.log(np.sum(np.exp(a), axis=axis, keepdims=keepdims)),
    "all": lambda a, axis, keepdims: np.all(a > 0, axis=axis, keepdims=keepdims),
    "any": lambda a, axis, keepdims: np.any(a > 0.5, axis=axis, keepdims=keepdims),
    "argmax": np.argmax,
    "argmin": np.argmin,
    "quantile": lambda a, axis, keepdims: np.quantile(a, 0.25, axis=axis, keepdims=keepdims),
}
# Ops returning (values, indices): name -> the NumPy reference of the values.
VALUE_INDEX_REDUCTIONS = {
    "max": np.max,
    "min": np.min,
    "median": np.median,  # the reduced dims below have odd lengths: the lower median is the median
    "kthvalue": lambda a, axis, keepdims: np.take(np.sort(a, axis=axis), [1] if keepdims else 1, axis=axis),  # k=2
}


def _values(rng):
    """A (3, 5) float64 array with distinct values, positive (for `all`)."""
    return rng.permutation(15).reshape(3, 5) / 7.0 + 0.1


def _input_for(name, values):
    return values > 0 if name == "all" else values > 0.5 if name == "any" else values


def _call(name, x, form, **kwargs):
    args = (0.25,) if name == "quantile" else (2,) if name == "kthvalue" else ()
    if form == "method":
        return getattr(x, name)(*args, **kwargs)
    return getattr(tp, name)(x, *args, **kwargs)


@pytest.mark.parametrize("form", ["function", "method"])
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@pytest.mark.parametrize("axis,keepdims", [(1, True), (0, False), (-1, None)])
def test_reductions_take_axis_and_keepdims(name, axis, keepdims, form, rng):
    """`axis=` and `keepdims=` give NumPy's float64 result (shape and values)."""
    values = _values(rng)
    x = tp.tensor(values)
    kwargs = {"axis": axis} if keepdims is None else {"axis": axis, "keepdims": keepdims}
    result = _call(name, _input_for(name, x), form, **kwargs)
    expected = REDUCTIONS[name](values, axis=axis, keepdims=bool(keepdims))
    assert result.shape == np.shape(expected)
    np.testing.assert_allclose(result.numpy(), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", sorted(VALUE_INDEX_REDUCTIONS))
@pytest.mark.parametrize("keepdims", [True, False])
def test_value_index_reductions_take_axis_and_keepdims(name, keepdims, rng):
    """max, min, median, kthvalue: values as NumPy's, indices pointing at them."""
    values = _values(rng)
    x = tp.tensor(values)
    result = _call(name, x, "method", axis=0, keepdims=keepdims)
    expected = VALUE_INDEX_REDUCTIONS[name](values, axis=0, keepdims=keepdims)
    np.testing.assert_allclose(result.values.numpy(), expected, rtol=1e-12)
    indices = result.indices.numpy()
    picked = np.take_along_axis(values, indices if keepdims else indices[None, :], axis=0)
    np.testing.assert_allclose(picked.reshape(np.shape(expected)), expected, rtol=1e-12)


def test_the_other_reductions_take_the_numpy_names(rng):
    """var_mean, std_mean, aminmax, nanmedian, mode, nanquantile and count_nonzero (`axis` only)."""
    values = _values(rng)
    x = tp.tensor(values)
    var, mean = tp.var_mean(x, axis=1, keepdims=True)
    np.testing.assert_allclose(var.numpy(), np.var(values, axis=1, ddof=1, keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(mean.numpy(), np.mean(values, axis=1, keepdims=True), rtol=1e-12)
    std, mean = tp.std_mean(x, axis=0)
    np.testing.assert_allclose(std.numpy(), np.std(values, axis=0, ddof=1), rtol=1e-12)
    low, high = tp.aminmax(x, axis=1, keepdims=True)
    np.testing.assert_array_equal(low.numpy(), values.min(1, keepdims=True))
    np.testing.assert_array_equal(high.numpy(), values.max(1, keepdims=True))
    np.testing.assert_allclose(x.nanmedian(axis=0).values.numpy(), np.median(values, axis=0), rtol=1e-12)
    np.testing.assert_allclose(x.nanquantile(0.5, axis=1, keepdims=True).numpy(),
                               np.quantile(values, 0.5, axis=1, keepdims=True), rtol=1e-12)
    repeated = tp.tensor([[1, 2, 2], [3, 3, 0]])
    assert repeated.mode(axis=1, keepdims=True).values.tolist() == [[2], [3]]
    assert tp.count_nonzero(repeated, axis=1).tolist() == np.count_nonzero(repeated.numpy(), axis=1).tolist()


@pytest.mark.parametrize("device", every_device())
def test_makemore_normalisation_on_every_device(device, rng):
    """`counts / counts.sum(1, keepdims=True)`: rows that sum to 1, as NumPy's."""
    logits = rng.standard_normal((4, 27))
    counts = tp.tensor(logits, dtype=tp.float32, device=device).exp()
    probs = counts / counts.sum(1, keepdims=True)
    expected = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    np.testing.assert_allclose(probs.cpu().numpy(), expected, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(counts.mean(axis=0).cpu().numpy(), np.exp(logits).mean(0), rtol=1e-5)


def test_both_spellings_of_one_argument_are_refused():
    """`dim` and `axis` together (or `keepdim` and `keepdims`) raise TypeError naming the op, as
    PyTorch raises TypeError; a misspelled keyword is still refused."""
    x = tp.ones(2, 3)
    with pytest.raises(TypeError, match=r"sum\(\).*'dim' and 'axis'"):
        x.sum(1, axis=0)
    with pytest.raises(TypeError, match=r"mean\(\).*'keepdim' and 'keepdims'"):
        tp.mean(x, 1, True, keepdims=True)
    with pytest.raises(TypeError, match=r"kthvalue\(\).*'dim' and 'axis'"):
        x.kthvalue(1, 0, axis=1)
    with pytest.raises(TypeError, match="axiss"):
        x.sum(axiss=1)


def test_numpy_names_match_pytorch(rng):
    """The same calls give PyTorch's shapes and values, and fail where PyTorch's fail."""
    torch = torch_or_skip()
    values = _values(rng)
    calls = [
        lambda lib, x: x.sum(1, keepdims=True),
        lambda lib, x: x.mean(axis=0),
        lambda lib, x: lib.amax(x, axis=(0, 1), keepdims=True),
        lambda lib, x: x.max(axis=1, keepdims=True).values,
        lambda lib, x: x.std(axis=1, correction=0, keepdims=True),
        lambda lib, x: lib.var_mean(x, axis=1, keepdims=True)[0],
        lambda lib, x: lib.count_nonzero(x, axis=1),
        lambda lib, x: x.logsumexp(axis=1),
        lambda lib, x: x.sum(1, axis=1),
        lambda lib, x: x.sum(1, True, keepdims=True),
    ]
    for call in calls:
        outcomes = []
        for lib in (tp, torch):
            try:
                outcomes.append(np.asarray(call(lib, lib.tensor(values)).tolist()))
            except TypeError:
                outcomes.append("TypeError")
        ours, theirs = outcomes
        if isinstance(theirs, str):
            assert ours == theirs
        else:
            np.testing.assert_allclose(ours, theirs, rtol=1e-12)
