"""F.embedding_bag and nn.EmbeddingBag (issue 13), against PyTorch 2.13 and a NumPy loop."""
import numpy as np
import pytest

import tensorplug as tp
import tensorplug.nn as nn
import tensorplug.nn.functional as F

from nn_reference import TOL, to_numpy

INDEX = np.array([1, 2, 3, 4, 2, 2, 5, 9, 0, 4])
OFFSETS = np.array([0, 2, 2, 5, 9])


def _bags_reference(weight, index, offsets, mode, padding_idx=None, sample_weights=None):
    """One bag at a time in NumPy float64; padding entries skipped, empty bags zero."""
    ends = list(offsets[1:]) + [len(index)]
    out = np.zeros((len(offsets), weight.shape[1]))
    for b, (start, end) in enumerate(zip(offsets, ends)):
        keep = [k for k in range(start, end) if index[k] != padding_idx]
        if not keep:
            continue
        rows = weight[index[keep]]
        if sample_weights is not None:
            rows = rows * sample_weights[keep, None]
        out[b] = {"sum": rows.sum(0), "mean": rows.mean(0), "max": rows.max(0)}[mode]
    return out


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 2])
def test_matches_numpy_loop(mode, padding_idx):
    """Each bag's sum, mean or max equals the NumPy loop's, padding left out, empty bags zero."""
    weight = np.random.default_rng(0).standard_normal((10, 3))
    out = F.embedding_bag(tp.tensor(INDEX), tp.tensor(weight), tp.tensor(OFFSETS), mode=mode, padding_idx=padding_idx)
    expected = _bags_reference(weight, INDEX, OFFSETS, mode, padding_idx)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12)


def test_per_sample_weights_and_two_dimensional_input():
    """per_sample_weights scale rows in "sum"; a 2-D input is one bag per row; the module matches."""
    weight = np.random.default_rng(1).standard_normal((10, 4))
    scale = np.random.default_rng(2).standard_normal(len(INDEX))
    out = F.embedding_bag(tp.tensor(INDEX), tp.tensor(weight), tp.tensor(OFFSETS), mode="sum",
                          per_sample_weights=tp.tensor(scale))
    np.testing.assert_allclose(out.numpy(), _bags_reference(weight, INDEX, OFFSETS, "sum", None, scale), rtol=1e-12)
    square = INDEX.reshape(2, 5)
    bag = nn.EmbeddingBag.from_pretrained(tp.tensor(weight), mode="max")
    np.testing.assert_allclose(bag(tp.tensor(square)).numpy(), weight[square].max(1), rtol=1e-12)
    assert repr(nn.EmbeddingBag(10, 3, mode="sum", padding_idx=-1)) == "EmbeddingBag(10, 3, mode='sum', padding_idx=9)"


@pytest.mark.parametrize("call, error, message", [
    (lambda w: F.embedding_bag(tp.tensor([[1, 2]]), w, tp.tensor([0])), ValueError, "if input is 2D, then offsets has to be None"),
    (lambda w: F.embedding_bag(tp.tensor([1, 2]), w), ValueError, "offsets has to be a 1D Tensor but got None"),
    (lambda w: F.embedding_bag(tp.tensor([[[1]]]), w), ValueError, "input has to be 1D or 2D Tensor"),
    (lambda w: F.embedding_bag(tp.tensor([1, 2]), w, tp.tensor([0]), mode="min"), ValueError, "mode has to be one of"),
    (lambda w: F.embedding_bag(tp.tensor([1, 2]), w, tp.tensor([0]), per_sample_weights=tp.ones(2)),
     NotImplementedError, "only supported for mode='sum'"),
    (lambda w: F.embedding_bag(tp.tensor([1, 2]), w, tp.tensor([0]), mode="sum", per_sample_weights=tp.ones(3)),
     ValueError, "must have the same shape as the input"),
    (lambda w: F.embedding_bag(tp.tensor([1, 2]), w, tp.tensor([1])), RuntimeError, "offsets\\[0\\] has to be 0"),
    (lambda w: F.embedding_bag(tp.tensor([1, 2]), w, tp.tensor([0, 5])), RuntimeError, "can not be greater"),
    (lambda w: F.embedding_bag(tp.tensor([1, 30]), w, tp.tensor([0])), RuntimeError, "not in the valid range"),
    (lambda w: F.embedding_bag(tp.tensor([1, 2]), w, tp.tensor([0]), padding_idx=10), RuntimeError,
     "padding_idx must be within the number of embeddings"),
    (lambda w: F.embedding_bag(tp.tensor([1, 2]), w[0], tp.tensor([0])), ValueError, "weight has to be a 2D Tensor"),
])
def test_errors_as_pytorch(call, error, message):
    """Bad layouts, modes, offsets and indices raise PyTorch's exceptions."""
    with pytest.raises(error, match=message):
        call(tp.randn(10, 3))


@pytest.mark.parametrize("options", [
    dict(mode="sum"), dict(mode="mean"), dict(mode="max"), dict(mode="mean", padding_idx=4),
    dict(mode="max", padding_idx=2), dict(mode="sum", include_last_offset=True),
    dict(mode="mean", include_last_offset=True), dict(mode="sum", per_sample_weights=True, padding_idx=5),
    dict(mode="sum", two_d=True), dict(mode="max", two_d=True, padding_idx=2),
], ids=str)
def test_matches_torch(options):
    """Values and gradients in the weight (and per_sample_weights) equal PyTorch's."""
    torch = pytest.importorskip("torch", reason="PyTorch is the reference; CI has none")
    options = dict(options)
    two_d = options.pop("two_d", False)
    with_weights = options.pop("per_sample_weights", False)
    rng = np.random.default_rng(3)
    weight = rng.standard_normal((10, 3))
    index = INDEX.reshape(2, 5) if two_d else INDEX
    offsets = None if two_d else OFFSETS
    scale = rng.standard_normal(index.shape) if with_weights else None
    grads = []
    for lib, fn in ((tp, F.embedding_bag), (torch, torch.nn.functional.embedding_bag)):
        w = lib.tensor(weight, requires_grad=True)
        s = lib.tensor(scale, requires_grad=True) if with_weights else None
        out = fn(lib.tensor(index), w, None if offsets is None else lib.tensor(offsets), per_sample_weights=s, **options)
        upstream = lib.tensor(np.arange(out.numel(), dtype=np.float64).reshape(tuple(out.shape)))
        (out * upstream).sum().backward()
        grads.append([to_numpy(out), to_numpy(w.grad)] + ([to_numpy(s.grad)] if with_weights else []))
    for got, want in zip(*grads):
        np.testing.assert_allclose(got, want, **TOL["float64"])


def test_module_matches_torch():
    """nn.EmbeddingBag with the same weight gives torch's output and weight gradient."""
    torch = pytest.importorskip("torch", reason="PyTorch is the reference; CI has none")
    weight = np.random.default_rng(4).standard_normal((10, 3)).astype(np.float32)
    results = []
    for lib in (tp, torch):
        bag = lib.nn.EmbeddingBag.from_pretrained(lib.tensor(weight), freeze=False, mode="mean", padding_idx=2)
        out = bag(lib.tensor(INDEX), lib.tensor(OFFSETS))
        out.sum().backward()
        results.append([to_numpy(out), to_numpy(bag.weight.grad)])
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, **TOL["float32"])


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_on_every_device(device, mode):
    """On each backend the bags and the weight gradient equal the CPU's."""
    weight = np.random.default_rng(5).standard_normal((10, 3))
    results = []
    for where in ("cpu", device):
        w = tp.tensor(weight, dtype=tp.float32, device=where, requires_grad=True)
        out = F.embedding_bag(tp.tensor(INDEX, device=where), w, tp.tensor(OFFSETS, device=where), mode=mode,
                              padding_idx=4)
        (out * tp.arange(3.0, device=where)).sum().backward()
        assert out.device.type == where
        results.append([out.detach().cpu().numpy(), w.grad.cpu().numpy()])
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# --- scale_grad_by_freq, sparse=True and the maxima PyTorch keeps -----------------------------------------
def _bag_call(lib, weight, index, offsets, sample_weights=None, **options):
    """(output, weight leaf, per_sample_weights leaf) after a backward of out * arange."""
    w = lib.tensor(weight, requires_grad=True)
    s = None if sample_weights is None else lib.tensor(sample_weights, requires_grad=True)
    out = lib.nn.functional.embedding_bag(lib.tensor(index), w, None if offsets is None else lib.tensor(offsets),
                                          per_sample_weights=s, **options)
    upstream = lib.tensor(np.arange(out.numel(), dtype=np.float64).reshape(tuple(out.shape)))
    (out * upstream).sum().backward()
    return out, w, s


FREQUENCY_CASES = [
    dict(mode="sum"), dict(mode="mean"), dict(mode="sum", padding_idx=2), dict(mode="mean", padding_idx=4),
    dict(mode="sum", per_sample_weights=True), dict(mode="sum", per_sample_weights=True, padding_idx=5),
    dict(mode="mean", include_last_offset=True), dict(mode="sum", two_d=True), dict(mode="mean", two_d=True),
]


def _case(options):
    options = dict(options)
    two_d = options.pop("two_d", False)
    with_weights = options.pop("per_sample_weights", False)
    rng = np.random.default_rng(6)
    weight = rng.standard_normal((10, 3))
    index = INDEX.reshape(2, 5) if two_d else INDEX
    scale = rng.standard_normal(index.shape) if with_weights else None
    return weight, index, None if two_d else OFFSETS, scale, options


@pytest.mark.parametrize("options", FREQUENCY_CASES, ids=str)
def test_scale_grad_by_freq_divides_each_row_by_its_count(options):
    """The weight gradient is PyTorch's unscaled one with each row divided by how often its index
    occurs in the input; values and the per_sample_weights gradient are PyTorch's. (PyTorch 2.13's
    CPU kernel divides some rows by another index's count, pytorch/pytorch#190063, so its unscaled
    gradient is the reference.)"""
    torch = pytest.importorskip("torch", reason="PyTorch is the reference; CI has none")
    weight, index, offsets, scale, options = _case(options)
    out, w, s = _bag_call(tp, weight, index, offsets, scale, scale_grad_by_freq=True, **options)
    ref_out, ref_w, ref_s = _bag_call(torch, weight, index, offsets, scale, **options)
    counts = np.bincount(index.reshape(-1), minlength=10)
    expected = to_numpy(ref_w.grad) / np.maximum(counts, 1)[:, None]
    np.testing.assert_allclose(to_numpy(out), to_numpy(ref_out), **TOL["float64"])
    np.testing.assert_allclose(to_numpy(w.grad), expected, **TOL["float64"])
    if scale is not None:
        np.testing.assert_allclose(to_numpy(s.grad), to_numpy(ref_s.grad), **TOL["float64"])


def test_scale_grad_by_freq_where_pytorch_cpu_is_right_equals_it():
    """Where every index of a run of equal sorted indices sits at a position whose index has the
    same count, PyTorch 2.13's CPU kernel gives the right answer, and tensorplug gives the same."""
    torch = pytest.importorskip("torch", reason="PyTorch is the reference; CI has none")
    weight = np.random.default_rng(7).standard_normal((6, 2))
    index, offsets = np.array([3, 1, 3, 1, 5, 5]), np.array([0, 2, 3])
    for mode in ("sum", "mean"):
        ours = _bag_call(tp, weight, index, offsets, mode=mode, scale_grad_by_freq=True)[1]
        theirs = _bag_call(torch, weight, index, offsets, mode=mode, scale_grad_by_freq=True)[1]
        np.testing.assert_allclose(to_numpy(ours.grad), to_numpy(theirs.grad), **TOL["float64"])


SPARSE_CASES = [
    dict(mode="sum"), dict(mode="mean"), dict(mode="mean", padding_idx=2), dict(mode="sum", padding_idx=4),
    dict(mode="sum", per_sample_weights=True, padding_idx=2), dict(mode="sum", include_last_offset=True),
    dict(mode="mean", two_d=True, padding_idx=0),
]


@pytest.mark.parametrize("options", SPARSE_CASES, ids=str)
def test_sparse_gradient_matches_torch(options):
    """sparse=True: the weight gradient is a sparse COO tensor with PyTorch's indices, values (one
    entry per looked-up position but padding, uncoalesced) and shape; values and the
    per_sample_weights gradient are PyTorch's."""
    torch = pytest.importorskip("torch", reason="PyTorch is the reference; CI has none")
    weight, index, offsets, scale, options = _case(options)
    out, w, s = _bag_call(tp, weight, index, offsets, scale, sparse=True, **options)
    ref_out, ref_w, ref_s = _bag_call(torch, weight, index, offsets, scale, sparse=True, **options)
    g, ref = w.grad, ref_w.grad
    assert g.is_sparse and ref.is_sparse and g.is_coalesced() == ref.is_coalesced() and g.shape == tuple(ref.shape)
    assert g._indices().tolist() == ref._indices().tolist()
    np.testing.assert_allclose(to_numpy(g._values()), to_numpy(ref._values()), **TOL["float64"])
    np.testing.assert_allclose(to_numpy(out), to_numpy(ref_out), **TOL["float64"])
    if scale is not None:
        np.testing.assert_allclose(to_numpy(s.grad), to_numpy(ref_s.grad), **TOL["float64"])


def test_module_options_and_sparse_training_step():
    """nn.EmbeddingBag(sparse=True) and nn.EmbeddingBag(scale_grad_by_freq=True) train as
    PyTorch's: one SGD step moves the same rows by the same amounts (every index occurs twice,
    where PyTorch 2.13's CPU count lookup is right)."""
    torch = pytest.importorskip("torch", reason="PyTorch is the reference; CI has none")
    weight = np.random.default_rng(8).standard_normal((10, 4)).astype(np.float32)
    index, offsets = np.array([1, 2, 2, 7, 1, 7]), np.array([0, 2])
    results = []
    for lib in (tp, torch):
        sparse = lib.nn.EmbeddingBag.from_pretrained(lib.tensor(weight), freeze=False, mode="sum", sparse=True)
        scaled = lib.nn.EmbeddingBag.from_pretrained(lib.tensor(weight), freeze=False, mode="mean",
                                                     scale_grad_by_freq=True)
        for bag in (sparse, scaled):
            opt = lib.optim.SGD(bag.parameters(), lr=0.5)
            bag(lib.tensor(index), lib.tensor(offsets)).pow(2).sum().backward()
            opt.step()
        results.append([to_numpy(sparse.weight), to_numpy(scaled.weight)])
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, **TOL["float32"])
    assert not np.allclose(results[0][1], weight)


@pytest.mark.parametrize("options, error, message", [
    (dict(mode="max", sparse=True), ValueError, "max mode does not support sparse weights"),
    (dict(mode="max", scale_grad_by_freq=True), ValueError, "max mode does not support scaling the gradient"),
])
def test_max_mode_refuses_sparse_and_frequency_scaling(options, error, message):
    with pytest.raises(error, match=message):
        F.embedding_bag(tp.tensor([1, 2]), tp.randn(4, 3), tp.tensor([0]), **options)


@pytest.mark.parametrize("bag", [F.embedding_bag, None])
def test_sparse_with_frequency_scaling_fails_in_backward_as_pytorch(bag):
    """PyTorch has no sparse frequency-scaled gradient: the forward runs, the backward raises."""
    w = tp.randn(4, 3, requires_grad=True)
    if bag is None:
        out = F.embedding(tp.tensor([1, 1, 2]), w, sparse=True, scale_grad_by_freq=True)
    else:
        out = bag(tp.tensor([1, 1, 2]), w, tp.tensor([0]), mode="sum", sparse=True, scale_grad_by_freq=True)
    with pytest.raises(RuntimeError, match="scale_grad_by_freq not supported with sparse gradients"):
        out.sum().backward()


NAN = float("nan")
MAX_CASES = {
    "ties_go_to_the_first": ([[1.0, 2.0], [1.0, 5.0], [0.0, 2.0]], [0, 1, 2, 1], [0, 3], {}),
    "ties_in_reverse_order": ([[1.0, 2.0], [1.0, 5.0], [0.0, 2.0]], [2, 1, 0, 1], [0, 3], {}),
    "one_row_twice": ([[1.0, 2.0], [1.0, 5.0], [0.0, 2.0]], [1, 1], [0], {}),
    "signed_zeros_and_an_empty_bag": ([[-0.0, 2.0], [0.0, 5.0], [0.0, 2.0]], [0, 1, 2, 1], [0, 2, 2, 4], {}),
    "nan_first_is_kept": ([[NAN, 2.0], [1.0, NAN], [0.0, 2.0]], [0, 1, 2], [0], {}),
    "nan_later_is_passed_over": ([[NAN, 2.0], [1.0, NAN], [0.0, 2.0]], [2, 1, 0], [0], {}),
    "padding_before_the_first": ([[1.0, 2.0], [1.0, 5.0], [0.0, 2.0]], [1, 0, 2, 1], [0, 3], dict(padding_idx=1)),
    "last_offset_included": ([[1.0, 2.0], [1.0, 5.0], [0.0, 2.0]], [0, 1, 2, 1], [0, 2, 2],
                             dict(include_last_offset=True)),
    "minus_infinity": ([[-np.inf, 2.0], [NAN, 5.0], [0.0, 2.0]], [0, 1], [0, 0], {}),
}


@pytest.mark.parametrize("case", list(MAX_CASES))
def test_max_mode_keeps_the_entry_pytorch_keeps(case):
    """"max" keeps, per bag and feature, the first of equal maxima (which takes the gradient) and
    a NaN only when it comes first in its bag, as PyTorch's kernels do."""
    torch = pytest.importorskip("torch", reason="PyTorch is the reference; CI has none")
    weight, index, offsets, options = MAX_CASES[case]
    out, w, _ = _bag_call(tp, np.array(weight), np.array(index), np.array(offsets), mode="max", **options)
    ref_out, ref_w, _ = _bag_call(torch, np.array(weight), np.array(index), np.array(offsets), mode="max", **options)
    np.testing.assert_array_equal(to_numpy(out), to_numpy(ref_out))
    assert np.signbit(to_numpy(out)).tolist() == np.signbit(to_numpy(ref_out)).tolist()
    np.testing.assert_array_equal(to_numpy(w.grad), to_numpy(ref_w.grad))


@pytest.mark.parametrize("options", [dict(mode="sum", sparse=True), dict(mode="mean", scale_grad_by_freq=True),
                                     dict(mode="max")], ids=str)
def test_gradient_options_on_every_device(device, options):
    """On each backend sparse and frequency-scaled gradients and the kept maxima equal the CPU's."""
    weight = np.random.default_rng(9).standard_normal((10, 3))
    weight[2] = weight[4]  # equal maxima in "max" mode
    results = []
    for where in ("cpu", device):
        w = tp.tensor(weight, dtype=tp.float32, device=where, requires_grad=True)
        out = F.embedding_bag(tp.tensor(INDEX, device=where), w, tp.tensor(OFFSETS, device=where), padding_idx=5,
                              **options)
        (out * tp.arange(3.0, device=where)).sum().backward()
        grad = w.grad.to_dense() if w.grad.is_sparse else w.grad
        results.append([out.detach().cpu().numpy(), grad.cpu().numpy()])
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
