"""NumPy's spellings `axis` and `keepdims` on the reductions and the other ops with a `dim`, as
PyTorch's argument parser accepts them (`counts / counts.sum(1, keepdims=True)`, Karpathy's
makemore lectures; `torch.cat(parts, axis=1)`, `x.softmax(axis=-1)`)."""
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


# --- `axis` on the other ops with a `dim` (those PyTorch binds natively; issue 13) -----------
def _softmax_ref(a, axis):
    shifted = np.exp(a - a.max(axis=axis, keepdims=True))
    return shifted / shifted.sum(axis=axis, keepdims=True)


def _cosine_ref(a, b, axis):
    return (a * b).sum(axis) / (np.linalg.norm(a, axis=axis) * np.linalg.norm(b, axis=axis))


# label -> (the call, in terms of a library `lib` and two (3, 5) tensors `x`, `y`; its NumPy
# float64 reference in terms of the arrays `a`, `b`). Results are compared as lists of arrays.
AXIS_CALLS = {
    "cat": (lambda lib, x, y: lib.cat([x, y], axis=1), lambda a, b: np.concatenate([a, b], axis=1)),
    "concat": (lambda lib, x, y: lib.concat([x, y], axis=0), lambda a, b: np.concatenate([a, b], axis=0)),
    "concatenate dim=": (lambda lib, x, y: lib.concatenate([x, y], dim=1), lambda a, b: np.concatenate([a, b], 1)),
    "stack": (lambda lib, x, y: lib.stack([x, y], axis=-1), lambda a, b: np.stack([a, b], axis=-1)),
    "softmax": (lambda lib, x, y: lib.softmax(x, axis=1), lambda a, b: _softmax_ref(a, 1)),
    "Tensor.softmax": (lambda lib, x, y: x.softmax(axis=0), lambda a, b: _softmax_ref(a, 0)),
    "log_softmax": (lambda lib, x, y: lib.log_softmax(x, axis=0), lambda a, b: np.log(_softmax_ref(a, 0))),
    "Tensor.log_softmax": (lambda lib, x, y: x.log_softmax(axis=-1, dtype=lib.float64),
                           lambda a, b: np.log(_softmax_ref(a, -1))),
    "special.softmax": (lambda lib, x, y: lib.special.softmax(x, axis=1), lambda a, b: _softmax_ref(a, 1)),
    "special.log_softmax": (lambda lib, x, y: lib.special.log_softmax(x, axis=1),
                            lambda a, b: np.log(_softmax_ref(a, 1))),
    "cumsum": (lambda lib, x, y: lib.cumsum(x, axis=1), lambda a, b: np.cumsum(a, axis=1)),
    "Tensor.cumprod": (lambda lib, x, y: x.cumprod(axis=0), lambda a, b: np.cumprod(a, axis=0)),
    "Tensor.cumsum_": (lambda lib, x, y: x.clone().cumsum_(axis=0), lambda a, b: np.cumsum(a, axis=0)),
    "Tensor.cumprod_": (lambda lib, x, y: x.clone().cumprod_(axis=1), lambda a, b: np.cumprod(a, axis=1)),
    "cummax": (lambda lib, x, y: lib.cummax(x, axis=1).values, lambda a, b: np.maximum.accumulate(a, axis=1)),
    "Tensor.cummin": (lambda lib, x, y: x.cummin(axis=0).values, lambda a, b: np.minimum.accumulate(a, axis=0)),
    "logcumsumexp": (lambda lib, x, y: lib.logcumsumexp(x, axis=1), lambda a, b: np.logaddexp.accumulate(a, axis=1)),
    "sort": (lambda lib, x, y: lib.sort(x, axis=0, descending=True).values, lambda a, b: -np.sort(-a, axis=0)),
    "Tensor.argsort": (lambda lib, x, y: x.argsort(axis=0), lambda a, b: np.argsort(a, axis=0, kind="stable")),
    "topk": (lambda lib, x, y: x.topk(2, axis=0).values, lambda a, b: -np.sort(-a, axis=0)[:2]),
    "squeeze": (lambda lib, x, y: lib.squeeze(x[None], axis=0), lambda a, b: np.squeeze(a[None], axis=0)),
    "Tensor.unsqueeze": (lambda lib, x, y: x.unsqueeze(axis=1), lambda a, b: np.expand_dims(a, 1)),
    "unsqueeze": (lambda lib, x, y: lib.unsqueeze(x, axis=-1), lambda a, b: np.expand_dims(a, -1)),
    "chunk": (lambda lib, x, y: x.chunk(2, axis=1), lambda a, b: [a[:, :3], a[:, 3:]]),
    "unbind": (lambda lib, x, y: lib.unbind(x, axis=1), lambda a, b: [a[:, i] for i in range(5)]),
    "tensor_split": (lambda lib, x, y: x.tensor_split(3, axis=1), lambda a, b: np.array_split(a, 3, axis=1)),
    "diff": (lambda lib, x, y: lib.diff(x, axis=0), lambda a, b: np.diff(a, axis=0)),
    "repeat_interleave": (lambda lib, x, y: x.repeat_interleave(2, axis=0), lambda a, b: np.repeat(a, 2, axis=0)),
    "take_along_dim": (lambda lib, x, y: lib.take_along_dim(x, x.argsort(1), axis=1),
                       lambda a, b: np.take_along_axis(a, np.argsort(a, 1), axis=1)),
    "cross": (lambda lib, x, y: x.cross(y, axis=0), lambda a, b: np.cross(a, b, axis=0)),
    "linalg.cross": (lambda lib, x, y: lib.linalg.cross(x, y, axis=0), lambda a, b: np.cross(a, b, axis=0)),
    "trapezoid": (lambda lib, x, y: lib.trapezoid(x, axis=0), lambda a, b: ((a[1:] + a[:-1]) / 2).sum(0)),
    "trapz": (lambda lib, x, y: lib.trapz(x, axis=1), lambda a, b: ((a[:, 1:] + a[:, :-1]) / 2).sum(1)),
    "cumulative_trapezoid": (lambda lib, x, y: lib.cumulative_trapezoid(x, axis=0),
                             lambda a, b: np.cumsum((a[1:] + a[:-1]) / 2, axis=0)),
    "cosine_similarity": (lambda lib, x, y: lib.cosine_similarity(x, y, axis=0), lambda a, b: _cosine_ref(a, b, 0)),
    "F.cosine_similarity": (lambda lib, x, y: lib.nn.functional.cosine_similarity(x, y, axis=1),
                            lambda a, b: _cosine_ref(a, b, 1)),
    "F.pairwise_distance keepdims": (lambda lib, x, y: lib.nn.functional.pairwise_distance(x, y, keepdims=True),
                                     lambda a, b: np.linalg.norm(a - b + 1e-6, axis=-1, keepdims=True)),
    "linalg.vector_norm": (lambda lib, x, y: lib.linalg.vector_norm(x, axis=1, keepdims=True),
                           lambda a, b: np.linalg.norm(a, axis=1, keepdims=True)),
    "linalg.norm": (lambda lib, x, y: lib.linalg.norm(x, 1, axis=0), lambda a, b: np.abs(a).sum(0)),
    "linalg.matrix_norm": (lambda lib, x, y: lib.linalg.matrix_norm(x, axis=(1, 0), keepdims=True),
                           lambda a, b: np.linalg.norm(a, keepdims=True)),
    "fft.fft": (lambda lib, x, y: lib.fft.fft(x, axis=0), lambda a, b: np.fft.fft(a, axis=0)),
    "fft.rfft": (lambda lib, x, y: lib.fft.rfft(x, axis=1), lambda a, b: np.fft.rfft(a, axis=1)),
    "fft.irfft": (lambda lib, x, y: lib.fft.irfft(lib.fft.rfft(x, axis=0), 3, axis=0), lambda a, b: a),
    "fft.hfft": (lambda lib, x, y: lib.fft.hfft(x, axis=0), lambda a, b: np.fft.hfft(a, axis=0)),
    "fft.fft2": (lambda lib, x, y: lib.fft.fft2(x, axis=(1, 0)), lambda a, b: np.fft.fft2(a, axes=(1, 0))),
    "fft.rfftn": (lambda lib, x, y: lib.fft.rfftn(x, axis=(0,)), lambda a, b: np.fft.rfftn(a, axes=(0,))),
    "fft.fftshift": (lambda lib, x, y: lib.fft.fftshift(x, axis=1), lambda a, b: np.fft.fftshift(a, axes=1)),
}


def _as_arrays(result):
    """A tensor, or a tuple of tensors, as a list of NumPy arrays (complex ones from the FFTs)."""
    parts = result if isinstance(result, (tuple, list)) else [result]
    return [np.asarray(part.tolist()) for part in parts]


def _operands(rng):
    """Two (3, 5) float64 arrays of distinct values (no ties for sort, cummax or argsort)."""
    return rng.permutation(15).reshape(3, 5) / 4.0 - 1.5, rng.permutation(15).reshape(3, 5) / 3.0 + 0.25


@pytest.mark.parametrize("label", sorted(AXIS_CALLS))
def test_axis_on_ops_with_a_dim(label, rng):
    """`axis=` gives NumPy's float64 result, shape and values (`dim=` for concatenate, whose own
    name is `axis`; `keepdims=` for pairwise_distance and the norms; NumPy's `axes=` for the
    multi-dim FFTs)."""
    a, b = _operands(rng)
    call, reference = AXIS_CALLS[label]
    ours = _as_arrays(call(tp, tp.tensor(a), tp.tensor(b)))
    expected = reference(a, b)
    expected = [np.asarray(part) for part in (expected if isinstance(expected, list) else [expected])]
    assert [part.shape for part in ours] == [part.shape for part in expected]
    for got, want in zip(ours, expected):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("label", sorted(AXIS_CALLS))
def test_axis_on_ops_with_a_dim_matches_pytorch(label, rng):
    """The same calls in PyTorch 2.13 give the same shapes and values."""
    torch = torch_or_skip()
    a, b = _operands(rng)
    call, _ = AXIS_CALLS[label]
    ours = _as_arrays(call(tp, tp.tensor(a), tp.tensor(b)))
    theirs = _as_arrays(call(torch, torch.tensor(a), torch.tensor(b)))
    assert [part.shape for part in ours] == [part.shape for part in theirs]
    for got, want in zip(ours, theirs):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


# Calls PyTorch refuses with TypeError: both spellings of dim, no dim where one is required, and
# `axis` on functions PyTorch writes in Python (F.softmax, split, norm, unique).
REFUSED = {
    "cat dim and axis": (lambda lib, x: lib.cat([x, x], 1, axis=0), r"cat\(\).*'dim' and 'axis'"),
    "softmax dim and axis": (lambda lib, x: lib.softmax(x, 1, axis=0), r"softmax\(\).*'dim' and 'axis'"),
    "Tensor.cumsum dim and axis": (lambda lib, x: x.cumsum(1, axis=0), r"cumsum\(\).*'dim' and 'axis'"),
    "unsqueeze dim and axis": (lambda lib, x: x.unsqueeze(0, axis=1), r"unsqueeze\(\).*'dim' and 'axis'"),
    "sort dim and axis": (lambda lib, x: x.sort(0, axis=1), r"sort\(\).*'dim' and 'axis'"),
    "concatenate axis and dim": (lambda lib, x: lib.concatenate([x], 1, dim=0), r"concatenate\(\).*'dim' and 'axis'"),
    "vector_norm keepdim and keepdims": (lambda lib, x: lib.linalg.vector_norm(x, 2, 1, True, keepdims=True),
                                         r"vector_norm\(\).*'keepdim' and 'keepdims'"),
    "softmax without dim": (lambda lib, x: x.softmax(), r"softmax\(\).*'dim'.*required"),
    "cumsum without dim": (lambda lib, x: lib.cumsum(x), r"cumsum\(\).*'dim'.*required"),
    "unsqueeze without dim": (lambda lib, x: lib.unsqueeze(x), r"unsqueeze\(\).*'dim'.*required"),
    "F.softmax axis": (lambda lib, x: lib.nn.functional.softmax(x, axis=1), "axis"),
    "F.log_softmax axis": (lambda lib, x: lib.nn.functional.log_softmax(x, axis=1), "axis"),
    "split axis": (lambda lib, x: lib.split(x, 1, axis=1), "axis"),
    "norm axis": (lambda lib, x: lib.norm(x, axis=1), "axis"),
}


@pytest.mark.parametrize("label", sorted(REFUSED))
def test_refused_spellings(label):
    """TypeError naming the op and the clashing names, or Python's unexpected-keyword error."""
    call, message = REFUSED[label]
    with pytest.raises(TypeError, match=message):
        call(tp, tp.ones(2, 3))


@pytest.mark.parametrize("label", sorted(REFUSED))
def test_refused_spellings_match_pytorch(label):
    """PyTorch refuses each of these calls with TypeError too."""
    torch = torch_or_skip()
    call, _ = REFUSED[label]
    with pytest.raises(TypeError):
        call(torch, torch.ones(2, 3))


def test_axis_keeps_the_gradient(rng):
    """An op called with `axis` differentiates as with `dim`: d/dx sum(softmax(x) * w) against NumPy."""
    a, w = _operands(rng)
    x = tp.tensor(a, requires_grad=True)
    (x.softmax(axis=1) * tp.tensor(w)).sum().backward()
    s = _softmax_ref(a, 1)
    expected = s * (w - (s * w).sum(1, keepdims=True))
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-12, atol=1e-12)
