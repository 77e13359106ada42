"""Losses against PyTorch."""
import numpy as np
import pytest

import tensorplug as tp
import tensorplug.nn.functional as F
from nn_reference import check

torch = pytest.importorskip("torch")
TF = torch.nn.functional
REDUCTIONS = ["mean", "sum", "none"]


def _targets(shape, classes, ignore=False):
    t = np.random.randint(0, classes, size=shape)
    if ignore:
        t.flat[::3] = -100
    return t


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cross_entropy_class_indices(reduction, weighted, smoothing, dtype):
    """Class indices with weights, ignored targets and label smoothing, on (N, C) and (N, C, d)."""
    for shape, target_shape in (((6, 5), (6,)), ((3, 5, 4), (3, 4))):
        x = np.random.randn(*shape) * 2
        t = _targets(target_shape, 5, ignore=True)
        arrays = [x, t] + ([np.random.rand(5) + 0.5] if weighted else [])
        kw = dict(reduction=reduction, label_smoothing=smoothing)
        check(
            torch,
            lambda a, tt, *w: F.cross_entropy(a, tt, *w, **kw),
            lambda a, tt, *w: TF.cross_entropy(a, tt, *w, **kw),
            arrays, dtype, grad_args=(0,),
        )


def test_cross_entropy_noncontiguous_and_unbatched():
    check(torch, F.cross_entropy, TF.cross_entropy, [np.random.randn(4, 6), np.random.randint(0, 6, 4)], noncontiguous=True)
    check(torch, F.cross_entropy, TF.cross_entropy, [np.random.randn(6), np.array(2)])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("smoothing", [0.0, 0.3])
def test_cross_entropy_probabilities(reduction, smoothing):
    x = np.random.randn(4, 5, 3)
    p = np.random.rand(4, 5, 3)
    p /= p.sum(1, keepdims=True)
    w = np.random.rand(5) + 0.5
    kw = dict(reduction=reduction, label_smoothing=smoothing)
    check(torch, lambda a, b, ww: F.cross_entropy(a, b, ww, **kw), lambda a, b, ww: TF.cross_entropy(a, b, ww, **kw), [x, p, w], grad_args=(0, 1))


@pytest.mark.parametrize("name", ["nll_loss", "cross_entropy"])
def test_explicit_derivative_matches_decomposition(name):
    op = getattr(F._losses, "_" + name)
    extra = ("mean", 1) if name == "nll_loss" else ("mean", 1, 0.1)
    x = np.random.randn(5, 4, 2)
    t = tp.tensor(np.random.randint(0, 4, (5, 2)))
    w = tp.tensor(np.random.rand(4) + 0.5)
    a, b = tp.tensor(x, requires_grad=True), tp.tensor(x, requires_grad=True)
    op(a, t, w, *extra).backward()
    op.op.decomposition(b, t, w, *extra).backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-10, atol=1e-12)
    assert tp.autograd.gradcheck(lambda z: op(z, t, w, *extra), (tp.tensor(x, requires_grad=True),))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_loss_matches_torch(reduction):
    x = np.log(np.random.rand(6, 4, 3))
    t = _targets((6, 3), 4, ignore=True)
    w = np.random.rand(4)
    check(torch, lambda a, b, c: F.nll_loss(a, b, c, reduction=reduction), lambda a, b, c: TF.nll_loss(a, b, c, reduction=reduction), [x, t, w], grad_args=(0,))
    check(torch, lambda a, b: F.nll_loss(a, b, ignore_index=1), lambda a, b: TF.nll_loss(a, b, ignore_index=1), [x[:, :, 0], t[:, 0].clip(0)])


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "soft_margin_loss"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_regression_losses(name, reduction, dtype):
    x, y = np.random.randn(4, 5) * 2, np.random.randn(4, 5)
    check(torch, lambda a, b: getattr(F, name)(a, b, reduction=reduction), lambda a, b: getattr(TF, name)(a, b, reduction=reduction), [x, y], dtype, True, grad_args=(0,) if name == "soft_margin_loss" else None)


def test_loss_options():
    """beta/delta, weights of mse/l1/huber, broadcasting with PyTorch's warning."""
    x, y, w = np.random.randn(4, 5), np.random.randn(4, 5), np.random.rand(4, 5)
    check(torch, lambda a, b: F.smooth_l1_loss(a, b, beta=0.5), lambda a, b: TF.smooth_l1_loss(a, b, beta=0.5), [x, y])
    check(torch, lambda a, b: F.huber_loss(a, b, delta=0.3), lambda a, b: TF.huber_loss(a, b, delta=0.3), [x, y])
    for name in ("mse_loss", "l1_loss", "huber_loss"):
        check(torch, lambda a, b, c: getattr(F, name)(a, b, weight=c), lambda a, b, c: getattr(TF, name)(a, b, weight=c), [x, y, w], grad_args=(0, 1))
    with pytest.warns(UserWarning, match="different to the input size"):
        F.mse_loss(tp.randn(3, 4), tp.randn(4))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy(reduction):
    x, t, w = np.random.rand(3, 4) * 0.98 + 0.01, np.random.rand(3, 4), np.random.rand(3, 4)
    check(torch, lambda a, b, c: F.binary_cross_entropy(a, b, c, reduction=reduction), lambda a, b, c: TF.binary_cross_entropy(a, b, c, reduction=reduction), [x, t, w], noncontiguous=True, grad_args=(0, 1))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy_with_logits(reduction):
    x, t = np.random.randn(3, 4) * 30, np.random.rand(3, 4)
    w, pw = np.random.rand(3, 4), np.random.rand(4) + 0.5
    check(torch, lambda a, b: F.binary_cross_entropy_with_logits(a, b, reduction=reduction), lambda a, b: TF.binary_cross_entropy_with_logits(a, b, reduction=reduction), [x, t], noncontiguous=True)
    check(
        torch,
        lambda a, b, c, d: F.binary_cross_entropy_with_logits(a, b, c, reduction=reduction, pos_weight=d),
        lambda a, b, c, d: TF.binary_cross_entropy_with_logits(a, b, c, reduction=reduction, pos_weight=d),
        [x, t, w, pw], grad_args=(0, 1),
    )


@pytest.mark.parametrize("reduction", ["sum", "none", "batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(reduction, log_target):
    x = np.log(np.random.rand(3, 4))
    t = np.random.rand(3, 4)
    t[0, 0] = 0.0
    if log_target:
        t = np.log(t + 0.1)
    kw = dict(reduction=reduction, log_target=log_target)
    check(torch, lambda a, b: F.kl_div(a, b, **kw), lambda a, b: TF.kl_div(a, b, **kw), [x, t], grad_args=(0,) if not log_target else None)


def test_kl_div_mean_warns_as_torch():
    with pytest.warns(UserWarning, match="batchmean"):
        F.kl_div(tp.randn(3), tp.rand(3))


def test_poisson_nll_loss():
    x, t = np.random.randn(3, 4), np.random.rand(3, 4) * 4
    check(torch, lambda a, b: F.poisson_nll_loss(a, b, full=True), lambda a, b: TF.poisson_nll_loss(a, b, full=True), [x, t])


def test_loss_errors():
    """Target shape/dtype mismatches and bad reductions, with PyTorch's exception kinds."""
    x = tp.randn(4, 5)
    with pytest.raises(ValueError, match=r"Expected input batch_size \(4\) to match target batch_size \(3\)"):
        F.cross_entropy(x, tp.randint(0, 5, (3,)))
    with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte, but got Float"):
        F.cross_entropy(x, tp.randn(4))
    with pytest.raises(RuntimeError, match="0D or 1D target tensor expected, multi-target not supported"):
        F.cross_entropy(x, tp.randn(4, 6))
    with pytest.raises(RuntimeError, match=r"Expected target size \[4, 3\], got \[4, 2\]"):
        F.cross_entropy(tp.randn(4, 5, 3), tp.randint(0, 5, (4, 2)))
    with pytest.raises(IndexError):
        F.nll_loss(x, tp.tensor([0, 1, 2, 7]))
    with pytest.raises(ValueError, match="bad is not a valid value for reduction"):
        F.cross_entropy(x, tp.randint(0, 5, (4,)), reduction="bad")
    with pytest.raises(ValueError, match="different to the input size"):
        F.binary_cross_entropy(tp.rand(3), tp.rand(4))
    with pytest.raises(RuntimeError, match="weight tensor should be defined either for all 5 classes"):
        F.cross_entropy(x, tp.randint(0, 5, (4,)), weight=tp.ones(3))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("options", [dict(), dict(weight=True), dict(label_smoothing=0.2), dict(weight=True, label_smoothing=0.1)], ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cross_entropy_fused_kernel_matches_torch(reduction, options, dtype):
    """The fused CPU cross_entropy (log_softmax and the weighted, smoothed nll in one pass) equals
    PyTorch on (N, C) and (N, C, d) inputs with ignored and strided targets."""
    for shape in ((16, 7), (4, 7, 3)):
        x = np.random.randn(*shape) * 5
        t = np.random.randint(0, 7, (shape[0],) + shape[2:])
        t.reshape(-1)[::5] = -100
        w = np.random.rand(7) + 0.5
        extra = dict(reduction=reduction, label_smoothing=options.get("label_smoothing", 0.0))
        tp_w = tp.tensor(w.astype(dtype)) if options.get("weight") else None
        torch_w = torch.tensor(w.astype(dtype)) if options.get("weight") else None
        check(torch, lambda a, b: F.cross_entropy(a, b, weight=tp_w, **extra),
              lambda a, b: TF.cross_entropy(a, b, weight=torch_w, **extra), [x, t], dtype, noncontiguous=True)


def test_cross_entropy_fused_kernel_raises_for_bad_targets():
    """A target outside [0, C) (and not ignore_index) raises IndexError from the kernel."""
    with pytest.raises(IndexError, match="out of bounds"):
        F.cross_entropy(tp.randn(3, 4), tp.tensor([0, 4, 1]))
    with pytest.raises(IndexError, match="out of bounds"):
        F.cross_entropy(tp.randn(3, 4), tp.tensor([0, -2, 1]), reduction="none")


@pytest.mark.parametrize("reduction", ["sum", "none", "batchmean"])
def test_kl_div_and_xlogy_gradients_at_zero_targets_match_pytorch(reduction):
    """kl_div is xlogy(target, target) - target * input with xlogy's PyTorch derivative (issue 16):
    the gradient with respect to a target of 0 is NaN (0 / 0), a negative target's is NaN too."""
    values = [[0.0, -0.0, 1e-7, 0.5], [-0.5, 2.0, 1e-40, 0.0]]
    inputs = [[0.0, 1.0, -0.5, 1e-40], [-1.0, 0.5, 2.0, -0.0]]
    grads = []
    for L in (torch, tp):
        x = L.tensor(inputs, dtype=L.float64, requires_grad=True)
        t = L.tensor(values, dtype=L.float64, requires_grad=True)
        loss = L.nn.functional.kl_div(x, t, reduction=reduction)
        (loss * L.linspace(-1.0, 2.0, loss.numel(), dtype=L.float64).reshape(loss.shape)).sum().backward()
        y = L.tensor(values, dtype=L.float64, requires_grad=True)
        L.xlogy(y, y).sum().backward()
        grads.append([x.grad.numpy(), t.grad.numpy(), y.grad.numpy()])
    for got, expected in zip(grads[1], grads[0]):
        np.testing.assert_allclose(got, expected, rtol=1e-12)
