"""nn.Embedding(scale_grad_by_freq=True), F.embedding and torch.embedding's form: each row's
weight gradient is divided by how often its index occurs in the input, against PyTorch 2.13
(its non-bag embedding kernel counts correctly) and a NumPy loop on every device."""
import numpy as np
import pytest

import tensorplug as tp
import tensorplug.nn.functional as F

from nn_reference import TOL, to_numpy

INDEX = np.array([[1, 2, 4, 1], [4, 7, 1, 0]])


@pytest.mark.parametrize("options", [dict(), dict(padding_idx=1), dict(padding_idx=-3), dict(max_norm=1.0)], ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_module_matches_torch(options, dtype):
    """Output, weight gradient (and the weight max_norm renormalized) equal PyTorch's."""
    torch = pytest.importorskip("torch", reason="PyTorch is the reference; CI has none")
    weight = np.random.default_rng(0).standard_normal((8, 3)).astype(dtype)
    results = []
    for lib in (tp, torch):
        emb = lib.nn.Embedding.from_pretrained(lib.tensor(weight), freeze=False, scale_grad_by_freq=True, **options)
        out = emb(lib.tensor(INDEX))
        (out * lib.arange(24.0, dtype=getattr(lib, dtype)).reshape(2, 4, 3)).sum().backward()
        results.append([to_numpy(out), to_numpy(emb.weight.grad), to_numpy(emb.weight)])
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, **TOL[dtype])


def test_functional_forms_and_a_computed_weight():
    """F.embedding and tp.embedding (weight first) scale alike; a weight computed from a leaf
    passes the scaled gradient on."""
    torch = pytest.importorskip("torch", reason="PyTorch is the reference; CI has none")
    weight = np.random.default_rng(1).standard_normal((8, 2))
    grads = []
    for lib in (tp, torch):
        leaf = lib.tensor(weight, requires_grad=True)
        a = lib.nn.functional.embedding(lib.tensor(INDEX), leaf * 2, scale_grad_by_freq=True)
        b = lib.embedding(leaf, lib.tensor(INDEX[0]), 2, True)
        (a.pow(2).sum() + b.sum()).backward()
        grads.append(to_numpy(leaf.grad))
    np.testing.assert_allclose(grads[0], grads[1], **TOL["float64"])


def test_on_every_device(device):
    """Each row's gradient is the sum of its positions' gradients over its count (NumPy loop)."""
    weight = np.random.default_rng(2).standard_normal((8, 3))
    upstream = np.random.default_rng(3).standard_normal(INDEX.shape + (3,))
    w = tp.tensor(weight, dtype=tp.float32, device=device, requires_grad=True)
    out = F.embedding(tp.tensor(INDEX, device=device), w, padding_idx=7, scale_grad_by_freq=True)
    (out * tp.tensor(upstream, dtype=tp.float32, device=device)).sum().backward()
    flat, counts = INDEX.reshape(-1), np.bincount(INDEX.reshape(-1), minlength=8)
    expected = np.zeros_like(weight)
    for position, row in enumerate(flat):
        if row != 7:
            expected[row] += upstream.reshape(-1, 3)[position] / counts[row]
    np.testing.assert_allclose(w.grad.cpu().numpy(), expected, rtol=1e-5, atol=1e-6)
