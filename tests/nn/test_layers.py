"""linear, bilinear, embedding, one_hot, pad, attention and distances against PyTorch."""
import numpy as np
import pytest

import tensorplug as tp
import tensorplug.nn.functional as F
from nn_reference import check

torch = pytest.importorskip("torch")
TF = torch.nn.functional


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_linear_and_bilinear(dtype):
    x, w, b = np.random.randn(2, 3, 4), np.random.randn(5, 4), np.random.randn(5)
    check(torch, F.linear, TF.linear, [x, w, b], dtype, noncontiguous=True)
    check(torch, F.linear, TF.linear, [x[0, 0], w], dtype)
    x1, x2, wb, bb = np.random.randn(3, 4), np.random.randn(3, 2), np.random.randn(5, 4, 2), np.random.randn(5)
    check(torch, F.bilinear, TF.bilinear, [x1, x2, wb, bb], dtype)


def test_linear_error():
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(3x4 and 3x5\)"):
        F.linear(tp.randn(3, 4), tp.randn(5, 3))


def test_embedding_padding_idx_and_max_norm():
    w = np.random.randn(6, 3)
    idx = np.array([[0, 2, 5], [2, 2, 1]])
    check(torch, lambda a, i: F.embedding(i, a, padding_idx=2), lambda a, i: TF.embedding(i, a, padding_idx=2), [w, idx], grad_args=(0,))
    ours, theirs = tp.tensor(w * 3), torch.tensor(w * 3)
    np.testing.assert_allclose(
        F.embedding(tp.tensor(idx), ours, max_norm=1.0).numpy(), TF.embedding(torch.tensor(idx), theirs, max_norm=1.0).numpy(), rtol=1e-6
    )
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


def test_one_hot():
    t = np.array([[0, 3], [1, 2]])
    assert np.array_equal(F.one_hot(tp.tensor(t)).numpy(), TF.one_hot(torch.tensor(t)).numpy())
    assert F.one_hot(tp.tensor(t), 6).shape == (2, 2, 6)
    assert F.one_hot(tp.tensor(t)).dtype == tp.int64
    with pytest.raises(RuntimeError, match="Class values must be non-negative."):
        F.one_hot(tp.tensor([1, -1]))
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes."):
        F.one_hot(tp.tensor([1, 5]), 3)
    with pytest.raises(RuntimeError, match="one_hot is only applicable to index tensor of type LongTensor."):
        F.one_hot(tp.tensor([1.0, 2.0]))


def test_pad_constant():
    x = np.random.randn(2, 3, 4)
    for pads in ([1, 2], [1, 0, 2, 1], [0, 1, 1, 1, 2, 0], [-1, 2]):
        check(torch, lambda a: F.pad(a, pads, value=0.5), lambda a: TF.pad(a, pads, value=0.5), [x])


@pytest.mark.parametrize(
    "kwargs", [dict(), dict(is_causal=True), dict(scale=0.3), dict(bool_mask=True), dict(float_mask=True)], ids=str
)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_scaled_dot_product_attention(kwargs, dtype):
    q, k, v = np.random.randn(2, 3, 4, 8), np.random.randn(2, 3, 5, 8), np.random.randn(2, 3, 5, 6)
    kwargs = dict(kwargs)
    arrays = [q, k, v]
    if kwargs.pop("bool_mask", False):
        mask = np.random.rand(4, 5) > 0.3
        mask[:, 0] = True
        arrays.append(mask)
    if kwargs.pop("float_mask", False):
        arrays.append(np.random.randn(4, 5))
    check(
        torch,
        lambda *a: F.scaled_dot_product_attention(*a, **kwargs),
        lambda *a: TF.scaled_dot_product_attention(*a, **kwargs),
        arrays, dtype, True, grad_args=(0, 1, 2),
    )


def test_attention_gqa_and_errors():
    q, k, v = np.random.randn(1, 4, 3, 8), np.random.randn(1, 2, 3, 8), np.random.randn(1, 2, 3, 8)
    check(
        torch,
        lambda *a: F.scaled_dot_product_attention(*a, enable_gqa=True),
        lambda *a: TF.scaled_dot_product_attention(*a, enable_gqa=True),
        [q, k, v],
    )
    with pytest.raises(RuntimeError, match="attn_mask should not be set when is_causal=True"):
        F.scaled_dot_product_attention(tp.randn(2, 3), tp.randn(2, 3), tp.randn(2, 3), tp.ones(2, 2, dtype=tp.bool), is_causal=True)


def test_pairwise_distance():
    x, y = np.random.randn(4, 5), np.random.randn(4, 5)
    check(torch, F.pairwise_distance, TF.pairwise_distance, [x, y])


def test_training_step_on_small_convnet():
    """conv -> relu -> max_pool -> linear -> cross_entropy: loss and all gradients equal PyTorch's."""
    x, t = np.random.randn(4, 1, 8, 8), np.random.randint(0, 3, 4)
    w1, b1, w2 = np.random.randn(2, 1, 3, 3), np.random.randn(2), np.random.randn(3, 18)

    def model(F_, x_, t_, w1_, b1_, w2_):
        h = F_.max_pool2d(F_.relu(F_.conv2d(x_, w1_, b1_, padding=1)), 2, ceil_mode=False)
        h = F_.avg_pool2d(h, 2, padding=1, count_include_pad=False)
        return F_.cross_entropy(F_.linear(h.reshape(4, -1), w2_), t_, label_smoothing=0.1)

    check(torch, lambda *a: model(F, *a), lambda *a: model(TF, *a), [x, t, w1, b1, w2], grad_args=(0, 2, 3, 4))
