"""The CPU backend's fused ctc_loss and ctc_loss_backward (csrc/ctc.cpp, issue 14) against the
composite's own decomposition on the same inputs (long inputs and targets, repeated labels,
impossible alignments, zero lengths, both dtypes, every reduction, strided log_probs, NaN and
infinities), against PyTorch on long inputs, and the kernel's own checks of lengths and labels."""
import numpy as np
import pytest

import tensorplug as tp
from tensorplug.backends.cpu import kernels
from tensorplug.dispatcher import get_operator
from tensorplug.nn._ctc_loss import _ctc_loss as ctc_loss_op
from tensorplug.nn._ctc_loss import _ctc_loss_grad as ctc_loss_backward_op
from torch_reference import compare, torch_or_skip

DTYPES = {"float32": (tp.float32, dict(rtol=2e-5, atol=2e-5)), "float64": (tp.float64, dict(rtol=1e-10, atol=1e-12))}


def _case(seed, steps, batch, classes, longest, blank=0, normalized=True):
    """log_probs (T, N, C) and padded targets with repeated labels; sample 0 has the longest target
    in every frame, the rest random lengths with one empty target, one without frames, one
    impossible (a repeated label in too few frames) when the batch allows."""
    rng = np.random.default_rng(seed)
    log_probs = rng.standard_normal((steps, batch, classes))
    if normalized:
        log_probs -= np.log(np.exp(log_probs).sum(2, keepdims=True))
    labels = np.array([c for c in range(classes) if c != blank])
    targets = rng.choice(labels, size=(batch, longest))
    targets[:, 1::3] = targets[:, 0::3][:, :targets[:, 1::3].shape[1]]  # runs of repeated labels
    target_lengths = rng.integers(0, longest + 1, batch)
    input_lengths = rng.integers(0, steps + 1, batch)
    input_lengths = np.maximum(input_lengths, np.minimum(2 * target_lengths + 1, steps))
    target_lengths[0], input_lengths[0] = longest, steps
    if batch > 3:
        target_lengths[1] = 0
        input_lengths[2], target_lengths[2] = 0, min(longest, 1)
        targets[3, :2] = targets[3, 0]
        input_lengths[3], target_lengths[3] = 1, min(longest, 2)
    return log_probs, targets.astype(np.int64), input_lengths.astype(np.int64), target_lengths.astype(np.int64)


def _tensors(case, dtype):
    log_probs, targets, input_lengths, target_lengths = case
    return (tp.tensor(log_probs, dtype=dtype), tp.tensor(targets), tp.tensor(input_lengths),
            tp.tensor(target_lengths))


def _assert_fused_matches_decomposition(args, blank, reduction, zero_infinity, tolerance, seed=0):
    """Loss and gradient of the op (the CPU backend's fused kernel) and of the decomposition."""
    log_probs = args[0]
    options = (blank, reduction, zero_infinity)
    fused = ctc_loss_op(*args, *options)
    reference = get_operator("ctc_loss").decomposition(*args, *options)
    assert fused.shape == reference.shape and fused.dtype is reference.dtype
    np.testing.assert_allclose(fused.numpy(), reference.numpy(), equal_nan=True, **tolerance)
    grad_shape = (log_probs.shape[1],) if reduction == "none" else ()
    grad = tp.tensor(np.random.default_rng(seed).standard_normal(grad_shape), dtype=log_probs.dtype)
    fused = ctc_loss_backward_op(grad, *args, *options)
    reference = get_operator("ctc_loss_backward").decomposition(grad, *args, *options)
    assert fused.shape == reference.shape and fused.dtype is reference.dtype
    np.testing.assert_allclose(fused.numpy(), reference.numpy(), equal_nan=True, **tolerance)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("zero_infinity", [False, True])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_matches_the_decomposition(dtype, reduction, zero_infinity):
    """Every reduction and zero_infinity, with empty targets, samples without frames and an
    impossible one, normalized and not normalized log_probs."""
    dtype, tolerance = DTYPES[dtype]
    for seed, normalized in ((0, True), (1, False)):
        args = _tensors(_case(seed, 20, 6, 7, 5, normalized=normalized), dtype)
        _assert_fused_matches_decomposition(args, 0, reduction, zero_infinity, tolerance, seed)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("steps, classes, longest", [(200, 30, 50), (120, 3, 50), (200, 60, 8)],
                         ids=["T=200 S=50", "two labels, S=50", "T=200 S=8"])
def test_long_inputs_and_targets_match_the_decomposition(dtype, steps, classes, longest):
    """Long sequences: the losses are far from 0 and every frame's occupancy spreads thin."""
    dtype, tolerance = DTYPES[dtype]
    if dtype is tp.float32:
        tolerance = dict(rtol=1e-4, atol=1e-4)
    args = _tensors(_case(2, steps, 5, classes, longest), dtype)
    _assert_fused_matches_decomposition(args, 0, "none", False, tolerance)


def test_blank_anywhere_matches_the_decomposition():
    """A blank other than 0 (here the last class)."""
    args = _tensors(_case(3, 15, 5, 6, 4, blank=5), tp.float64)
    _assert_fused_matches_decomposition(args, 5, "mean", False, DTYPES["float64"][1])


@pytest.mark.parametrize("layout", ["batch first, transposed", "every other frame", "classes reversed"])
def test_strided_log_probs_give_the_contiguous_results(layout):
    """log_probs views of any strides read in place give what their contiguous copy gives."""
    log_probs, *rest = _case(4, 16, 4, 6, 4)
    if layout == "batch first, transposed":
        view = tp.tensor(np.ascontiguousarray(log_probs.transpose(1, 0, 2))).transpose(0, 1)
    elif layout == "every other frame":
        view = tp.tensor(np.repeat(log_probs, 2, axis=0))[::2]
    else:
        view = tp.tensor(np.ascontiguousarray(log_probs[:, :, ::-1])).flip(2)
    assert not view.is_contiguous()
    contiguous = tp.tensor(log_probs)
    rest = [tp.tensor(a) for a in rest]
    for reduction in ("none", "sum"):
        np.testing.assert_array_equal(ctc_loss_op(view, *rest, 0, reduction, False).numpy(),
                                      ctc_loss_op(contiguous, *rest, 0, reduction, False).numpy())
        grad = tp.ones(4 if reduction == "none" else (), dtype=tp.float64)
        np.testing.assert_array_equal(ctc_loss_backward_op(grad, view, *rest, 0, reduction, False).numpy(),
                                      ctc_loss_backward_op(grad, contiguous, *rest, 0, reduction, False).numpy())


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("where", [(3, 0, 1), (3, 0, 0), (5, 1, 2), (15, 4, 1), (0, 2, 3)],
                         ids=["a label", "blank", "a class of another sample", "past the input length",
                              "a sample without frames"])
def test_non_finite_emissions_match_the_decomposition(where, value):
    """NaN and infinities reach the losses and gradients the decomposition gives them (NaN loss
    for a sample that reads a NaN or +inf, only its own), with and without zero_infinity."""
    log_probs, targets, input_lengths, target_lengths = _case(5, 16, 5, 4, 3)
    input_lengths[4] = 10
    log_probs[where] = value
    args = _tensors((log_probs, targets, input_lengths, target_lengths), tp.float64)
    for zero_infinity in (False, True):
        _assert_fused_matches_decomposition(args, 0, "none", zero_infinity, DTYPES["float64"][1])


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_long_inputs_match_torch(dtype):
    """F.ctc_loss through log_softmax on T=200, S=50 (the fused path end to end) against PyTorch."""
    torch = torch_or_skip()
    logits, targets, input_lengths, target_lengths = _case(6, 200, 4, 20, 50, normalized=False)
    input_lengths[2] = 150  # every sample possible: torch's NaN-free gradient
    input_lengths[3], target_lengths[3] = 3, 2
    tolerance = dict(rtol=1e-10, atol=1e-12) if dtype == "float64" else dict(rtol=1e-4, atol=1e-5)
    compare(torch, lambda lib, x: lib.nn.functional.ctc_loss(
        x.to(getattr(lib, dtype)).log_softmax(2), lib.tensor(targets), lib.tensor(input_lengths),
        lib.tensor(target_lengths), reduction="mean"), [logits], **tolerance)


def _raw_args(**change):
    """The composite op's arguments on a small valid case, some replaced."""
    args = dict(log_probs=tp.zeros((5, 2, 4)), targets=tp.tensor([[1, 2], [3, 3]]), input_lengths=tp.tensor([5, 4]),
                target_lengths=tp.tensor([2, 1]), blank=0, reduction="none", zero_infinity=False)
    args.update(change)
    return args


BAD = {
    "input length past T": (dict(input_lengths=tp.tensor([6, 4])), ValueError, "input length 6 of sample 0"),
    "negative input length": (dict(input_lengths=tp.tensor([5, -1])), ValueError, "input length -1 of sample 1"),
    "target length past S": (dict(target_lengths=tp.tensor([2, 3])), ValueError, "target length 3 of sample 1"),
    "negative target length": (dict(target_lengths=tp.tensor([-1, 1])), ValueError, "target length -1 of sample 0"),
    "label past C": (dict(targets=tp.tensor([[1, 4], [3, 3]])), IndexError, "target 4 of sample 0"),
    "negative label": (dict(targets=tp.tensor([[1, 2], [-1, 3]])), IndexError, "target -1 of sample 1"),
    "blank past C": (dict(blank=4), ValueError, "blank 4 is not a class"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_the_kernels_check_lengths_and_labels(name):
    """Called directly (the frontend checks first), both kernels refuse lengths past T or S and
    labels outside the classes instead of reading out of bounds."""
    change, error, words = BAD[name]
    args = _raw_args(**change)
    with pytest.raises(error, match=words):
        kernels._ctc_loss(**args)
    with pytest.raises(error, match=words):
        kernels._ctc_loss_backward(tp.ones(2), **args)


def test_padding_past_a_target_length_is_not_checked():
    """Labels past a sample's target length are never read, so any value may pad."""
    padded = kernels._ctc_loss(**_raw_args(targets=tp.tensor([[1, 2], [3, 99]])))
    np.testing.assert_array_equal(padded.numpy(), kernels._ctc_loss(**_raw_args()).numpy())


def test_other_layouts_run_the_decomposition():
    """int32 targets (not the composite's own layout) still give the decomposition's result."""
    args = _raw_args(log_probs=tp.tensor(np.random.default_rng(7).standard_normal((5, 2, 4))))
    expected = kernels._ctc_loss(**args)
    np.testing.assert_allclose(kernels._ctc_loss(**dict(args, targets=args["targets"].to(tp.int32))).numpy(),
                               expected.numpy(), rtol=1e-12)
