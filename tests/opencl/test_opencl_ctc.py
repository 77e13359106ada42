"""The OpenCL CTC kernels (issue 14: ctc_loss and ctc_loss_backward, one launch each), against a
NumPy float64 reference of the alpha and beta recursions written here, in both of the kernels'
forms: one work-item per sample with its positions in vector lanes (what CPU devices such as
PoCL run) and a work-group sharing each sample's positions and classes (what other devices run)."""
import numpy as np
import pytest

import tensorplug as tp
from tensorplug.backends.opencl import OpenCLBackend, ctc

AVAILABLE, REASON = OpenCLBackend().is_available()
pytestmark = pytest.mark.skipif(not AVAILABLE, reason=f"OpenCL backend unavailable: {REASON}")

DEV = "opencl"


@pytest.fixture(params=["positions in lanes", "work-group per sample"])
def form(request, monkeypatch):
    monkeypatch.setattr(ctc, "_runs_work_items_in_loops", lambda state: request.param == "positions in lanes")
    return request.param


def _reference(lp, targets, input_lengths, target_lengths, blank):
    """Per-sample losses and PyTorch's gradient (per unit of each loss), float64 NumPy (NaN for
    the classes of a sample whose loss is inf, as PyTorch's)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return _recursions(lp, targets, input_lengths, target_lengths, blank)


def _recursions(lp, targets, input_lengths, target_lengths, blank):
    steps, batch, classes = lp.shape
    losses, grads = np.zeros(batch), np.zeros_like(lp)
    for b in range(batch):
        frames, length = input_lengths[b], target_lengths[b]
        labels = [blank]
        for k in range(length):
            labels += [targets[b, k], blank]
        L = len(labels)
        if frames == 0:
            losses[b] = 0.0 if L == 1 else np.inf
            continue
        e = lp[:frames, b, :][:, labels]
        alpha = np.full((frames, L), -np.inf)
        beta = np.full((frames, L), -np.inf)
        alpha[0, :2] = e[0, :2]
        for t in range(1, frames):
            for s in range(L):
                terms = [alpha[t - 1, s]] + ([alpha[t - 1, s - 1]] if s >= 1 else [])
                if s >= 2 and labels[s] != blank and labels[s] != labels[s - 2]:
                    terms.append(alpha[t - 1, s - 2])
                alpha[t, s] = np.logaddexp.reduce(terms) + e[t, s]
        beta[frames - 1, max(L - 2, 0):] = e[frames - 1, max(L - 2, 0):]
        for t in range(frames - 2, -1, -1):
            for s in range(L):
                terms = [beta[t + 1, s]] + ([beta[t + 1, s + 1]] if s + 1 < L else [])
                if s + 2 < L and labels[s + 2] != blank and labels[s + 2] != labels[s]:
                    terms.append(beta[t + 1, s + 2])
                beta[t, s] = np.logaddexp.reduce(terms) + e[t, s]
        nll = -np.logaddexp.reduce(alpha[frames - 1, max(L - 2, 0):])
        losses[b] = nll
        for t in range(frames):
            for c in range(classes):
                at = [alpha[t, s] + beta[t, s] for s in range(L) if labels[s] == c]
                occupancy = np.exp(np.logaddexp.reduce(at) + nll - lp[t, b, c]) if at else 0.0
                grads[t, b, c] = np.exp(lp[t, b, c]) - occupancy
    return losses, grads


def _case(seed, steps=9, batch=5, classes=6, longest=4, blank=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((steps, batch, classes))
    lp = x - np.log(np.exp(x).sum(2, keepdims=True))
    targets = rng.integers(0, classes, (batch, longest))
    targets[targets == blank] = (blank + 1) % classes
    input_lengths = rng.integers(steps // 2, steps + 1, batch)
    target_lengths = rng.integers(0, longest + 1, batch)
    targets[0, :3] = targets[0, 0]  # a repeated label: needs a blank between
    target_lengths[0] = 3
    input_lengths[1] = 0  # no frames
    target_lengths[2] = 0  # an empty target
    input_lengths[3], target_lengths[3] = 2, longest  # too few frames: inf
    return lp, targets, input_lengths, target_lengths


def _tensors(lp, targets, input_lengths, target_lengths, dtype):
    return (tp.tensor(lp, dtype=dtype, device=DEV), tp.tensor(targets, device=DEV),
            tp.tensor(input_lengths, device=DEV), tp.tensor(target_lengths, device=DEV))


@pytest.mark.parametrize("dtype, tol", [(tp.float64, 1e-10), (tp.float32, 2e-5)])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("zero_infinity", [False, True])
def test_loss_and_gradient_match_numpy(form, dtype, tol, reduction, zero_infinity):
    lp, targets, il, tl = _case(1)
    losses, grads = _reference(lp, targets, il, tl, 0)
    if zero_infinity:
        grads[:, np.isinf(losses), :] = 0
        losses = np.where(np.isinf(losses), 0.0, losses)
    args = _tensors(lp, targets, il, tl, dtype)
    loss = ctc._ctc_loss(*args, 0, reduction, zero_infinity)
    shares = losses / np.maximum(tl, 1)
    expected = {"none": losses, "mean": shares.mean(), "sum": losses.sum()}[reduction]
    np.testing.assert_allclose(np.asarray(loss.cpu().tolist()), expected, rtol=tol, atol=tol)
    grad_out = np.linspace(0.5, 1.5, lp.shape[1]) if reduction == "none" else np.array(0.75)
    if reduction == "none":
        scale = grad_out
    elif reduction == "mean":
        scale = grad_out / (np.maximum(tl, 1) * lp.shape[1])
    else:
        scale = np.full(lp.shape[1], float(grad_out))
    frames = np.arange(lp.shape[0])[:, None] < il[None, :]
    expected_grad = np.where(frames[:, :, None], grads * scale[None, :, None], 0.0)
    got = ctc._ctc_loss_backward(tp.tensor(grad_out, dtype=dtype, device=DEV), *args, 0, reduction, zero_infinity)
    got = np.asarray(got.cpu().tolist())
    finite = np.isfinite(expected_grad)
    np.testing.assert_allclose(got[finite], expected_grad[finite], rtol=tol, atol=tol)
    assert np.array_equal(np.isnan(got), ~finite)  # an infinite loss's gradient is NaN, as PyTorch's


def test_long_sequences_and_many_classes(form):
    """More positions and classes than one work-group has work-items, a blank in the middle."""
    lp, targets, il, tl = _case(2, steps=40, batch=4, classes=150, longest=70, blank=77)
    il[:] = 40
    tl[:] = [30, 12, 0, 19]
    losses, grads = _reference(lp, targets, il, tl, 77)
    args = _tensors(lp, targets, il, tl, tp.float64)
    np.testing.assert_allclose(np.asarray(ctc._ctc_loss(*args, 77, "none", False).cpu().tolist()), losses, rtol=1e-10)
    got = ctc._ctc_loss_backward(tp.ones(4, dtype=tp.float64, device=DEV), *args, 77, "none", False)
    np.testing.assert_allclose(np.asarray(got.cpu().tolist()), grads, rtol=1e-9, atol=1e-12)


def test_float32_over_several_vectors_of_positions_and_classes(form):
    """float32 where positions and classes fill whole vectors and a tail (the lane form's inline
    exp and log), repeated labels making chains of several positions."""
    lp, targets, il, tl = _case(6, steps=30, batch=6, classes=21, longest=12)
    targets[1, :6] = [3, 3, 5, 3, 3, 5]
    tl[1] = 12
    lp = lp.astype(np.float32).astype(np.float64)  # the reference from the values the kernels read
    losses, grads = _reference(lp, targets, il, tl, 0)
    args = _tensors(lp, targets, il, tl, tp.float32)
    got = np.asarray(ctc._ctc_loss(*args, 0, "none", False).cpu().tolist())
    np.testing.assert_allclose(got, losses, rtol=1e-5)
    got = np.asarray(ctc._ctc_loss_backward(tp.ones(6, device=DEV), *args, 0, "none", False).cpu().tolist())
    finite = np.isfinite(grads)
    np.testing.assert_allclose(got[finite], grads[finite], rtol=1e-4, atol=1e-4)
    assert np.array_equal(np.isnan(got), ~finite)


def test_strided_log_probs(form):
    lp, targets, il, tl = _case(3)
    wide = np.zeros(lp.shape[:2] + (2 * lp.shape[2],))
    wide[:, :, ::2] = lp
    strided = tp.tensor(wide, dtype=tp.float64, device=DEV)[:, :, ::2]
    args = _tensors(lp, targets, il, tl, tp.float64)
    expected = ctc._ctc_loss(*args, 0, "none", False)
    got = ctc._ctc_loss(strided, *args[1:], 0, "none", False)
    np.testing.assert_array_equal(np.asarray(got.cpu().tolist()), np.asarray(expected.cpu().tolist()))


@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_a_non_finite_emission_makes_only_its_sample_nan(form, value):
    lp, targets, il, tl = _case(4)
    il[:] = lp.shape[0]
    lp[2, 0, targets[0, 0]] = value
    losses = np.asarray(ctc._ctc_loss(*_tensors(lp, targets, il, tl, tp.float64), 0, "none", False).cpu().tolist())
    assert np.isnan(losses[0]) and not np.isnan(losses[1:]).any()


@pytest.mark.parametrize("change, words", [
    (dict(input_lengths=[10, 9, 9, 9, 9]), "index 10 is out of bounds for dimension 0"),
    (dict(target_lengths=[5, 1, 1, 1, 1]), "index 5 is out of bounds for dimension 1"),
    (dict(targets=[[1, 6, 1, 1]] + [[1, 1, 1, 1]] * 4), "index 6 is out of bounds for dimension 2"),
])
def test_a_direct_call_with_bad_lengths_or_labels_raises_at_synchronization(form, change, words):
    """The frontend checks these first; called directly the kernels record an IndexError and read
    nothing past a buffer."""
    lp, targets, il, tl = _case(5)
    values = dict(targets=targets, input_lengths=il, target_lengths=tl)
    values.update({k: np.asarray(v) for k, v in change.items()})
    args = _tensors(lp, values["targets"], values["input_lengths"], values["target_lengths"], tp.float64)
    with pytest.raises(IndexError, match=words):
        ctc._ctc_loss(*args, 0, "none", False).cpu()
    with pytest.raises(IndexError, match=words):
        ctc._ctc_loss_backward(tp.ones(5, dtype=tp.float64, device=DEV), *args, 0, "none", False).cpu()
    with pytest.raises(ValueError, match="blank 6 is not a class of 6"):
        ctc._ctc_loss(*_tensors(lp, targets, il, tl, tp.float64), 6, "none", False)


# --- the frontend's checks off the CPU: kept for unchanged targets and lengths (issue 14) ------
def test_targets_changed_in_place_are_checked_again():
    lp, targets, il, tl = _case(5)
    tl = np.maximum(tl, 1)
    il[:] = lp.shape[0]
    log_probs = tp.tensor(lp, device=DEV)
    device_targets = tp.tensor(targets, device=DEV)
    first = tp.nn.functional.ctc_loss(log_probs, device_targets, tuple(il), tuple(tl), reduction="none")
    np.testing.assert_allclose(first.cpu().numpy(), _reference(lp, targets, il, tl, 0)[0], rtol=1e-10)
    device_targets[0, 0] = 0  # the blank, inside sample 0's length: refused before any kernel
    with pytest.raises(RuntimeError, match="contains the blank label 0"):
        tp.nn.functional.ctc_loss(log_probs, device_targets, tuple(il), tuple(tl), reduction="none")
    device_targets[0, 0] = lp.shape[2]  # past the classes
    with pytest.raises(IndexError, match="out of bounds"):
        tp.nn.functional.ctc_loss(log_probs, device_targets, tuple(il), tuple(tl), reduction="none")


def test_new_host_lengths_are_used():
    lp, targets, il, tl = _case(6)
    log_probs, device_targets = tp.tensor(lp, device=DEV), tp.tensor(targets, device=DEV)
    for input_lengths, target_lengths in ((il, tl), (il, tl), (np.maximum(il - 1, 0), np.minimum(tl, 2)), (il, tl)):
        got = tp.nn.functional.ctc_loss(log_probs, device_targets, tp.tensor(input_lengths), tp.tensor(target_lengths),
                                        reduction="none")
        want = _reference(lp, targets, input_lengths, target_lengths, 0)[0]
        np.testing.assert_allclose(got.cpu().numpy(), want, rtol=1e-10)
