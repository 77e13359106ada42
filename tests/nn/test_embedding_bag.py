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
