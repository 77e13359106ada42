"""Normalization against PyTorch: batch_norm, layer_norm, group_norm, instance_norm, normalize,
cosine_similarity."""
import numpy as np
import pytest

import tensorplug as tp
import tensorplug.nn.functional as F
from nn_reference import check

torch = pytest.importorskip("torch")
TF = torch.nn.functional


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 5), (2, 3, 4, 5)], ids=str)
def test_batch_norm_training_updates_running_stats(dtype, shape):
    """Training: batch statistics, gradients for input/weight/bias, running stats updated in place."""
    x = np.random.randn(*shape) * 2 + 1
    w, b = np.random.randn(3), np.random.randn(3)
    rm, rv = np.random.randn(3).astype(dtype), (np.random.rand(3) + 0.5).astype(dtype)
    ours = (tp.tensor(rm), tp.tensor(rv))
    theirs = (torch.tensor(rm), torch.tensor(rv))
    check(
        torch,
        lambda a, ww, bb: F.batch_norm(a, *ours, ww, bb, training=True, momentum=0.3, eps=1e-3),
        lambda a, ww, bb: TF.batch_norm(a, *theirs, ww, bb, training=True, momentum=0.3, eps=1e-3),
        [x, w, b], dtype, noncontiguous=True,
    )
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-5)


def test_batch_norm_eval_and_no_affine():
    x = np.random.randn(4, 3, 2)
    rm, rv = np.random.randn(3), np.random.rand(3) + 0.5
    check(
        torch,
        lambda a, m, v: F.batch_norm(a, m, v),
        lambda a, m, v: TF.batch_norm(a, m, v),
        [x, rm, rv], grad_args=(0,),
    )
    check(torch, lambda a: F.batch_norm(a, None, None, training=True), lambda a: TF.batch_norm(a, None, None, training=True), [x])


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_explicit_derivative_matches_decomposition(training):
    op = F._normalization._batch_norm
    x, w, b = np.random.randn(5, 3, 4), np.random.randn(3), np.random.randn(3)
    leaves = [[tp.tensor(v, requires_grad=True) for v in (x, w, b)] for _ in range(2)]
    stats = [(tp.zeros(3, dtype=tp.float64), tp.ones(3, dtype=tp.float64) * 2) for _ in range(2)]
    g = tp.tensor(np.random.randn(5, 3, 4))

    def run(fn, leaf, stat):
        return fn(leaf[0], stat, leaf[1], leaf[2], training, 0.1, 1e-5)

    (run(op, leaves[0], stats[0]) * g).sum().backward()
    (run(op.op.decomposition, leaves[1], stats[1]) * g).sum().backward()
    for a, c in zip(*leaves):
        np.testing.assert_allclose(a.grad.numpy(), c.grad.numpy(), rtol=1e-9, atol=1e-12)
    assert tp.autograd.gradcheck(
        lambda t, ww: F.batch_norm(t, None, None, ww, training=True),
        (tp.tensor(np.random.randn(4, 2), requires_grad=True), tp.tensor(np.random.randn(2), requires_grad=True)),
    )


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("normalized", [(5,), (4, 5)], ids=str)
def test_layer_norm_matches_torch(dtype, normalized):
    x = np.random.randn(3, 4, 5) * 3
    w, b = np.random.randn(*normalized), np.random.randn(*normalized)
    check(
        torch,
        lambda a, ww, bb: F.layer_norm(a, normalized, ww, bb, eps=1e-4),
        lambda a, ww, bb: TF.layer_norm(a, normalized, ww, bb, eps=1e-4),
        [x, w, b], dtype, noncontiguous=True,
    )
    check(torch, lambda a: F.layer_norm(a, normalized), lambda a: TF.layer_norm(a, normalized), [x], dtype)


def test_layer_norm_explicit_derivative_matches_decomposition():
    op = F._normalization._layer_norm
    x, w, b = np.random.randn(3, 4), np.random.randn(4), np.random.randn(4)
    leaves = [[tp.tensor(v, requires_grad=True) for v in (x, w, b)] for _ in range(2)]
    g = tp.tensor(np.random.randn(3, 4))
    (op(leaves[0][0], (4,), leaves[0][1], leaves[0][2], 1e-5) * g).sum().backward()
    (op.op.decomposition(leaves[1][0], (4,), leaves[1][1], leaves[1][2], 1e-5) * g).sum().backward()
    for a, c in zip(*leaves):
        np.testing.assert_allclose(a.grad.numpy(), c.grad.numpy(), rtol=1e-9, atol=1e-12)
    assert tp.autograd.gradcheck(lambda t: F.layer_norm(t, (3,)), (tp.tensor(np.random.randn(2, 3), requires_grad=True),))


def test_group_and_instance_norm_match_torch():
    x = np.random.randn(2, 6, 3, 4)
    w, b = np.random.randn(6), np.random.randn(6)
    check(torch, lambda a, ww, bb: F.group_norm(a, 3, ww, bb), lambda a, ww, bb: TF.group_norm(a, 3, ww, bb), [x, w, b], noncontiguous=True)
    check(torch, lambda a, ww, bb: F.instance_norm(a, weight=ww, bias=bb), lambda a, ww, bb: TF.instance_norm(a, weight=ww, bias=bb), [x, w, b])


@pytest.mark.parametrize("p", [1.0, 2.0, 3.0])
def test_normalize_and_cosine_similarity(p):
    x = np.random.randn(4, 5)
    x[1] = 0.0  # a zero vector: finite value and gradient
    check(torch, lambda a: F.normalize(a, p=p, dim=1), lambda a: TF.normalize(a, p=p, dim=1), [x])
    y = np.random.randn(4, 5)
    check(torch, lambda a, b: F.cosine_similarity(a, b), lambda a, b: TF.cosine_similarity(a, b), [x, y], noncontiguous=True)
    check(torch, lambda a, b: F.cosine_similarity(a, b, dim=0), lambda a, b: TF.cosine_similarity(a, b, dim=0), [x, y[:1]])


def test_normalization_errors():
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[5\], expected input with shape \[\*, 5\], but got input of size\[3, 4\]"):
        F.layer_norm(tp.randn(3, 4), (5,))
    with pytest.raises(RuntimeError, match="running_mean should contain 4 elements not 5"):
        F.batch_norm(tp.randn(3, 4), tp.zeros(5), tp.ones(5))
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        F.batch_norm(tp.randn(1, 4), None, None, training=True)
    with pytest.raises(RuntimeError, match="Expected number of channels in input to be divisible by num_groups"):
        F.group_norm(tp.randn(3, 4), 3)


EDGE_ROWS = [
    [float("nan"), 1.0, 2.0],  # NaN propagates (it was swallowed into a norm of 0)
    [float("inf"), 1.0, 0.0],
    [3e38, 3e38, 1.0],  # squares overflow in float32, as in PyTorch's kernel
    [1e-30, 1e-30, 0.0],  # squares underflow to a norm of 0, as there
    [0.0, 0.0, 0.0],
    [1.5, -2.0, 0.5],
]


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_vector_norms_at_edge_values_match_pytorch(dtype):
    """normalize, pairwise_distance and cosine_similarity compute their norms as PyTorch's kernel
    does (issue 16): float32 accumulates in float32 (16-bit floats in float32), a norm over one
    element is |x|, NaN propagates; gradients too (cosine_similarity's values only)."""
    rows = np.array(EDGE_ROWS, dtype=np.float64)
    if dtype == "float16":
        rows = np.clip(rows, -6e4, 6e4)
    calls = {
        "normalize": lambda L, a, b: L.nn.functional.normalize(a, dim=-1),
        "normalize over one element": lambda L, a, b: L.nn.functional.normalize(a[:, :1], dim=-1),
        "pairwise_distance": lambda L, a, b: L.nn.functional.pairwise_distance(a, b),
        "pairwise_distance over one element": lambda L, a, b: L.nn.functional.pairwise_distance(a[:, :1], b[:, :1]),
        "cosine_similarity": lambda L, a, b: L.nn.functional.cosine_similarity(a, b, dim=-1),
    }
    for name, call in calls.items():
        results = []
        for L in (torch, tp):
            a = L.tensor(rows, dtype=getattr(L, dtype), requires_grad=dtype != "float16")
            b = L.tensor(rows[::-1].copy() * 0.5, dtype=getattr(L, dtype))
            value = call(L, a, b)
            grad = None
            if a.requires_grad and name != "cosine_similarity":
                (value * L.linspace(-1.0, 2.0, value.numel(), dtype=value.dtype).reshape(value.shape)).sum().backward()
                grad = a.grad.double().numpy()
            results.append((value.detach().double().numpy(), grad))
        (expected, expected_grad), (got, got_grad) = results
        np.testing.assert_allclose(got, expected, rtol=2e-3 if dtype == "float16" else 1e-6, err_msg=name)
        if expected_grad is not None:
            np.testing.assert_allclose(got_grad, expected_grad, rtol=1e-5, atol=1e-6, err_msg=name + " gradient")
