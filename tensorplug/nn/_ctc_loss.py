"""The connectionist temporal classification loss (Graves et al., 2006): ``F.ctc_loss``, with
PyTorch 2.13's arguments, input forms and gradient.

The loss of one sample is ``-log p(target | log_probs)``, summed over every alignment of the
target to the ``input_length`` frames: paths over the extended label sequence ``(blank, l1,
blank, l2, ..., blank)`` (length ``2 S + 1``) that advance by 0 or 1 positions per frame, or by
2 to skip a blank between two different labels. Two composite ops with explicit derivatives, so
that a backend may fuse either and every backend runs both as they are:

- ``ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, reduction, zero_infinity)``:
  log-probabilities ``(T, N, C)``, int64 targets padded to ``(N, S)``, int64 lengths ``(N,)``;
  the forward (alpha) recursion in log space, one step per frame, vectorized over the batch and
  the label positions; returns the reduced loss.
- ``ctc_loss_backward(grad, log_probs, ...)``: the gradient of ``log_probs``. The backward (beta)
  recursion is the forward one over each sample reversed in time and in labels, so one loop over
  a batch of ``2 N`` gives alpha and beta together.

The CPU backend overrides both with fused kernels (backends/cpu/csrc/ctc.cpp, issue 14) that
compute the same values per sample.

The gradient is PyTorch's, which is not the derivative of the loss with respect to ``log_probs``
but ``exp(log_probs) - occupancy`` per frame (0 past the input length), the occupancy being the
posterior probability that the frame emits the class: the derivative with respect to the logits
of a ``log_softmax`` that ``log_probs`` is assumed to come from. After ``log_softmax`` (the
documented use) both give the same gradient of the logits; for ``log_probs`` that are not
normalized they differ by ``exp(log_probs)``, as in PyTorch (tests/nn/test_ctc_loss.py checks
it against torch). As there, the loss has no second derivative.
"""
from __future__ import annotations

import operator
import weakref

import numpy as np

from ..frontend import dtypes as _dt
from ..frontend.autocast_hook import autocast_function
from ..frontend.factories import arange, full, tensor
from ..frontend.ops._composite import composite
from ..frontend.ops.elementwise import BINARY, COMPARE, where
from ..frontend.ops.joining import cat, stack
from ..frontend.ops.math_ops import logsumexp
from ..frontend.meta_device import has_values, refuse_data_dependent
from ..frontend.tensor import Tensor
from ._activations import check_tensor
from ._losses import _reduction, _trusting_indices

__all__ = ["ctc_loss"]

_INF = float("inf")


# --- the recursions ---------------------------------------------------------------------------
def _extended_labels(targets: Tensor, target_lengths: Tensor, blank: int) -> Tensor:
    """(N, 2 S + 1): blank, target 1, blank, target 2, ..., blank; blanks past each length (the
    padding's values are never read as classes)."""
    n, s = targets._shape
    inside = COMPARE["lt"](arange(s, device=targets.device).unsqueeze(0), target_lengths.unsqueeze(1))
    labels = where(inside, targets, blank)
    interleaved = stack([full((n, s), blank, dtype=_dt.int64, device=targets.device), labels], 2).reshape(n, 2 * s)
    return cat([interleaved, full((n, 1), blank, dtype=_dt.int64, device=targets.device)], 1)


def _skips(labels: Tensor, blank: int) -> Tensor:
    """(N, L) bool: position s may be entered from s - 2 (a label, not the label two back)."""
    n, width = labels._shape
    if width < 3:
        return full((n, width), False, dtype=_dt.bool, device=labels.device)
    current, before = labels.narrow(1, 2, width - 2), labels.narrow(1, 0, width - 2)
    allowed = COMPARE["ne"](current, blank) & COMPARE["ne"](current, before)
    return cat([full((n, 2), False, dtype=_dt.bool, device=labels.device), allowed], 1)


def _emissions(log_probs: Tensor, labels: Tensor) -> Tensor:
    """(T, N, L): each frame's log-probability of each extended label."""
    steps = log_probs._shape[0]
    n, width = labels._shape
    return log_probs.gather(2, labels.unsqueeze(0).expand(steps, n, width))


def _log_alphas(emissions: Tensor, skip: Tensor) -> tuple[Tensor, Tensor]:
    """``(alphas, poisoned)``, both (T, B, L): alpha[t, b, s], the log-probability of the paths
    over frames 0..t that end at extended position s (frames past a sample's input length hold
    values nobody reads); and where an emission was NaN or +inf, which the recursion read as 0
    (the callers make the samples that reach one NaN, as PyTorch's recursion would).

    Each sample's row is kept behind two -inf columns and the rows laid end to end, so that the
    predecessors s - 1 and s - 2 of every position are two shifted views of one contiguous row:
    fourteen elementwise kernels per frame, whatever the batch and label sizes. A pad column
    reads the previous sample's last positions but adds its own -inf emission, so it stays -inf:
    that is why no NaN may enter the recursion (it would cross from sample to sample).
    """
    steps, batch, width = emissions._shape
    dtype, device = emissions._dtype, emissions.device
    poisoned = ~COMPARE["lt"](emissions, _INF)
    emissions = where(poisoned, 0.0, emissions)
    padded = width + 2
    size = batch * padded - 2  # every flat position but the first two pads
    pads = full((batch, 2), False, dtype=_dt.bool, device=device)
    skip_bias = where(cat([pads, skip], 1).reshape(-1).narrow(0, 2, size), 0.0,
                      full((size,), -_INF, dtype=dtype, device=device))
    starts = COMPARE["lt"](arange(padded, device=device), 4).unsqueeze(0).expand(batch, padded)
    first = cat([pads, starts.narrow(1, 2, width)], 1).reshape(-1).narrow(0, 2, size)
    flat = cat([full((steps, batch, 2), -_INF, dtype=dtype, device=device), emissions], 2).reshape(steps, batch * padded)
    frames = flat.narrow(1, 2, size).unbind(0)

    table = full((steps, batch * padded), -_INF, dtype=dtype, device=device)
    # Per frame, the positions s (also where the frame's result goes), s - 1 and s - 2.
    stays, advances, skip_twos = (table.narrow(1, shift, size).unbind(0) for shift in (2, 1, 0))
    where(first, frames[0], -_INF, out=stays[0])
    lowest = _dt.finfo(dtype).min
    for t in range(1, steps):
        stay, advance = stays[t - 1], advances[t - 1]
        skip_two = skip_twos[t - 1] + skip_bias
        # log(e^a + e^b + e^c), shifted by the (finite) maximum: all three -inf gives -inf.
        shift = BINARY["maximum"](BINARY["maximum"](stay, advance), skip_two).clamp_min(lowest)
        total = (stay - shift).exp() + (advance - shift).exp() + (skip_two - shift).exp()
        BINARY["add"](total.log() + shift, frames[t], out=stays[t])
    return table.reshape(steps, batch, padded).narrow(2, 2, width), poisoned


def _negative_log_likelihood(alphas: Tensor, poisoned: Tensor, input_lengths: Tensor, target_lengths: Tensor) -> Tensor:
    """(N,): minus the log of alpha at the last frame, at the final blank or the last label (inf
    where no path fits: too few frames for the target; NaN where an emission the sample reads,
    on its frames and its extended positions, is NaN or +inf)."""
    steps, n, width = alphas._shape
    last = (input_lengths - 1).clamp_min(0)
    final = alphas.gather(0, last.reshape(1, n, 1).expand(1, n, width)).squeeze(0)
    end = target_lengths * 2
    ends = final.gather(1, stack([end, (end - 1).clamp_min(0)], 1))
    # Without labels the only end is the blank at 0 (the second gather read it again).
    ends = where(stack([COMPARE["ge"](target_lengths, 0), COMPARE["gt"](target_lengths, 0)], 1), ends, -_INF)
    nll = -logsumexp(ends, 1)
    # No frames: the empty target has probability 1 and any other 0.
    empty = where(COMPARE["eq"](target_lengths, 0), 0.0, full((n,), _INF, dtype=alphas._dtype, device=alphas.device))
    nll = where(COMPARE["eq"](input_lengths, 0), empty, nll)
    frame_valid = COMPARE["lt"](arange(steps, device=alphas.device).unsqueeze(1), input_lengths.unsqueeze(0))
    position_valid = COMPARE["le"](arange(width, device=alphas.device).unsqueeze(0), (target_lengths * 2).unsqueeze(1))
    read = poisoned & frame_valid.unsqueeze(2) & position_valid.unsqueeze(0)
    return where(read.any(2).any(0), float("nan"), nll)


def _clamped_lengths(target_lengths: Tensor, dtype) -> Tensor:
    return target_lengths.to(dtype).clamp_min(1)


def _ctc_loss_derivative(grad, args, output, kwargs, needs):
    return (_ctc_loss_grad(grad, *args),)


@composite("ctc_loss", derivative=_ctc_loss_derivative)
@_trusting_indices
def _ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, reduction, zero_infinity):
    labels = _extended_labels(targets, target_lengths, blank)
    alphas, poisoned = _log_alphas(_emissions(log_probs, labels), _skips(labels, blank))
    nll = _negative_log_likelihood(alphas, poisoned, input_lengths, target_lengths)
    if zero_infinity:
        nll = where(COMPARE["eq"](nll, _INF), 0.0, nll)
    if reduction == "mean":
        return (nll / _clamped_lengths(target_lengths, nll._dtype)).mean()
    if reduction == "sum":
        return nll.sum()
    return nll


def _no_double_backward(grad, args, output, kwargs, needs):
    raise RuntimeError("derivative for ctc_loss_backward is not implemented (as in PyTorch: "
                       "ctc_loss has no second derivative)")


@composite("ctc_loss_backward", derivative=_no_double_backward, differentiable=(0, 1))
@_trusting_indices
def _ctc_loss_grad(grad, log_probs, targets, input_lengths, target_lengths, blank, reduction, zero_infinity):
    """ctc_loss's gradient with respect to its ``(T, N, C)`` log_probs, PyTorch's: per frame
    before the input length, ``(exp(log_probs) - occupancy) * scale``, 0 after it and (with
    zero_infinity) for samples whose loss is inf; ``scale`` is the sample's share of ``grad``."""
    steps, n, classes = log_probs._shape
    device, dtype = log_probs.device, log_probs._dtype
    labels = _extended_labels(targets, target_lengths, blank)
    width = labels._shape[1]
    # Beta is alpha of the sample reversed: frame t is reversed frame il - 1 - t, extended
    # position s reversed position 2 tl - s (the extended sequence is symmetric in its blanks).
    frame = arange(steps, device=device).unsqueeze(1)
    frame_valid = COMPARE["lt"](frame, input_lengths.unsqueeze(0))
    frame_reversed = (input_lengths.unsqueeze(0) - 1 - frame).clamp_min(0)
    position = arange(width, device=device).unsqueeze(0)
    position_valid = COMPARE["le"](position, (target_lengths * 2).unsqueeze(1))
    position_reversed = ((target_lengths * 2).unsqueeze(1) - position).clamp_min(0)
    reversed_labels = where(position_valid, labels.gather(1, position_reversed), blank)
    reversed_log_probs = log_probs.gather(0, frame_reversed.unsqueeze(2).expand(steps, n, classes))
    emissions = cat([_emissions(log_probs, labels), _emissions(reversed_log_probs, reversed_labels)], 1)
    both, poisoned = _log_alphas(emissions, cat([_skips(labels, blank), _skips(reversed_labels, blank)], 0))
    alphas = both.narrow(1, 0, n)
    betas = (both.narrow(1, n, n).gather(0, frame_reversed.unsqueeze(2).expand(steps, n, width))
             .gather(2, position_reversed.unsqueeze(0).expand(steps, n, width)))
    # log(alpha * beta): both count the frame's own emission.
    valid = frame_valid.unsqueeze(2) & position_valid.unsqueeze(0)
    products = where(valid, alphas + betas, -_INF)
    nll = _negative_log_likelihood(alphas, poisoned.narrow(1, 0, n), input_lengths, target_lengths)
    # Sum alpha * beta per class (positions sharing a label): a matrix product with a one-hot.
    shift = products.amax(2, keepdim=True).clamp_min(_dt.finfo(dtype).min)
    one_hot = COMPARE["eq"](labels.unsqueeze(2), arange(classes, device=device)).to(dtype)
    per_class = ((products - shift).exp().permute(1, 0, 2) @ one_hot).permute(1, 0, 2)
    occupancy = (per_class.log() + shift + nll.reshape(1, n, 1) - log_probs).exp()
    if reduction == "mean":
        scale = grad / (_clamped_lengths(target_lengths, dtype) * n)
    elif reduction == "sum":
        scale = grad.expand(n)
    else:
        scale = grad
    keep = frame_valid.unsqueeze(2)
    if zero_infinity:
        keep = keep & COMPARE["ne"](nll, _INF).reshape(1, n, 1)
    return where(keep, (log_probs.exp() - occupancy) * scale.reshape(1, n, 1), 0.0)


# --- arguments ---------------------------------------------------------------------------------
def _lengths(op: str, input_lengths, target_lengths) -> tuple[list, list]:
    """Both lengths as lists of ints: both tensors (any integer dtype, flattened) or both
    sequences of ints, as PyTorch's two signatures take them."""
    if isinstance(input_lengths, Tensor) and isinstance(target_lengths, Tensor):
        result = []
        for name, lengths in (("input_lengths", input_lengths), ("target_lengths", target_lengths)):
            if lengths._dtype.is_floating_point or lengths._dtype.is_complex or lengths._dtype is _dt.bool:
                raise RuntimeError(f"{op}(): {name} must be integral, got a tensor of dtype {lengths._dtype.name}")
            refuse_data_dependent(f"{op}() with {name} on the meta device", lengths,
                                  why="the lengths decide how the targets are laid out (give them as a tuple or a CPU tensor)")
            result.append([int(v) for v in lengths.reshape(-1).tolist()])
        return result[0], result[1]
    if isinstance(input_lengths, (list, tuple)) and isinstance(target_lengths, (list, tuple)):
        try:
            return [operator.index(v) for v in input_lengths], [operator.index(v) for v in target_lengths]
        except TypeError:
            pass
    raise TypeError(f"{op}(): input_lengths and target_lengths must both be tensors or both be tuples or "
                    f"lists of ints, got {type(input_lengths).__name__} and {type(target_lengths).__name__}")


def _padded_targets(op: str, targets: Tensor, batch: int, target_lengths: list, classes: int, blank: int):
    """The targets as an int64 array (N, max target length), blank past each length, after
    checking their shape and that every label in a length is a class other than blank."""
    if targets.ndim not in (1, 2):
        raise RuntimeError(f"{op}(): expected targets of 1 dimension (concatenated) or 2 (padded, (N, S)), "
                           f"but got targets of shape {list(targets._shape)}")
    longest = max(target_lengths, default=0)
    if targets.ndim == 2:
        if targets._shape[0] != batch:
            raise RuntimeError(f"{op}(): padded targets of shape {list(targets._shape)} do not match the batch "
                               f"size {batch} of log_probs")
        if targets._shape[1] < longest:
            raise RuntimeError(f"{op}(): padded targets of shape {list(targets._shape)} are shorter than the "
                               f"longest target length {longest}")
    else:
        total = sum(target_lengths)
        if targets._shape[0] != total:
            raise RuntimeError(f"{op}(): concatenated targets of shape {list(targets._shape)} do not hold the sum "
                               f"of the target lengths, {total}")
    if not has_values(targets):  # meta targets: the layout is all there is, and it is checked
        return np.full((batch, longest), blank, dtype=np.int64)
    values = np.asarray(targets.detach().cpu().numpy()).astype(np.int64)
    # One pass over the whole batch (a loop over the samples was half of a small batch's time,
    # issue 14): the labels inside each length, in row order, are the concatenated targets.
    inside = np.arange(longest) < np.asarray(target_lengths, dtype=np.int64).reshape(batch, 1)
    padded = np.full((batch, longest), blank, dtype=np.int64)
    padded[inside] = values[:, :longest][inside] if targets.ndim == 2 else values
    outside = inside & ((padded < 0) | (padded >= classes))
    blanks = inside & (padded == blank)
    wrong = outside.any(1) | blanks.any(1)
    if wrong.any():
        i = int(np.argmax(wrong))
        if outside[i].any():
            raise IndexError(f"{op}(): target {int(padded[i][outside[i]][0])} of sample {i} is out of bounds for "
                             f"{classes} classes")
        raise RuntimeError(f"{op}(): target of sample {i} contains the blank label {blank} (at position "
                           f"{int(np.argmax(blanks[i]))} of {target_lengths[i]}); targets may not contain blank")
    return padded


# Off the CPU, reading the targets back for their checks waits for every kernel queued before
# (log_softmax's, in a training step), and copying host lengths in is a blocking write: two
# synchronizations per call, most of a small batch's forward on OpenCL (issue 14). A training
# loop passes the same targets and lengths call after call, so each device keeps the last ones
# checked and uploaded, keyed on everything that decides them.
_checked_targets: dict = {}  # device -> (key, padded targets)
_uploaded_lengths: dict = {}  # device -> ((input lengths, target lengths), their device tensor)


def _targets_key(targets: Tensor, batch: int, target_lengths: list, classes: int, blank: int):
    """What decides the checks and the padded layout of device targets, or None where they
    cannot be told apart from later contents (a storage without weak references). The shared
    version counter moves with every in-place change through any view."""
    try:
        storage = weakref.ref(targets._storage)
    except TypeError:
        return None
    return (storage, targets._version_ref, targets._version, targets._offset, targets._shape, targets._stride,
            targets._dtype, batch, tuple(target_lengths), classes, blank)


def _same_targets(key, cached) -> bool:
    return (cached[0]() is not None and cached[0]() is key[0]() and cached[1] is key[1]
            and cached[2:] == key[2:])


def _checked_padded_targets(op: str, targets: Tensor, batch: int, target_lengths: list, classes: int, blank: int):
    """``_padded_targets``, without reading device targets back when the same ones, unchanged,
    passed last time."""
    device = targets.device
    if device.type == "cpu" or not has_values(targets):
        return _padded_targets(op, targets, batch, target_lengths, classes, blank)
    key = _targets_key(targets, batch, target_lengths, classes, blank)
    cached = _checked_targets.get(device)
    if key is not None and cached is not None and _same_targets(key, cached[0]):
        return cached[1]
    padded = _padded_targets(op, targets, batch, target_lengths, classes, blank)
    if key is not None:
        _checked_targets[device] = (key, padded)
    return padded


def _device_lengths(input_lengths: list, target_lengths: list, device) -> Tensor:
    """Both lengths as the rows of one int64 tensor on ``device``: one host-to-device copy, none
    where the last call's lengths were the same (a tensor of the cache's own that nobody is given,
    remade if it was changed all the same)."""
    values = (tuple(input_lengths), tuple(target_lengths))
    cached = _uploaded_lengths.get(device)
    if cached is not None and cached[0] == values and cached[1]._version == 0:
        return cached[1]
    both = tensor(np.array([input_lengths, target_lengths], dtype=np.int64), device=device)
    if device.type != "cpu":
        _uploaded_lengths[device] = (values, both)
    return both


def _in_op_layout(t: Tensor, device) -> bool:
    return t._dtype is _dt.int64 and t.device == device and not t.requires_grad


def _checked_ctc_loss(op, log_probs, targets, input_lengths, target_lengths, blank, reduction, zero_infinity):
    """Check and normalize PyTorch's input forms, then call the ctc_loss op."""
    check_tensor(op, log_probs, "log_probs")
    check_tensor(op, targets, "targets")
    original_input_lengths, original_target_lengths = input_lengths, target_lengths
    input_lengths, target_lengths = _lengths(op, input_lengths, target_lengths)
    if log_probs.ndim not in (2, 3):
        raise RuntimeError(f"{op}(): expected log_probs of shape (T, N, C) or unbatched (T, C), but got "
                           f"log_probs of shape {list(log_probs._shape)}")
    if log_probs._dtype not in (_dt.float32, _dt.float64):
        raise NotImplementedError(f"{op}(): not implemented for log_probs of dtype {log_probs._dtype.name} "
                                  "(float32 and float64 are)")
    batched = log_probs.ndim == 3
    x = log_probs if batched else log_probs.unsqueeze(1)
    steps, batch, classes = x._shape
    if x.numel() == 0:
        raise RuntimeError(f"{op}(): log_probs tensor must not be empty, got shape {list(log_probs._shape)}")
    blank = operator.index(blank)
    if not 0 <= blank < classes:
        raise RuntimeError(f"{op}(): blank must be in label range [0, {classes}), got {blank}")
    for name, lengths in (("input_lengths", input_lengths), ("target_lengths", target_lengths)):
        if len(lengths) != batch:
            raise RuntimeError(f"{op}(): {name} must be of size batch_size {batch}, got {len(lengths)} lengths")
        if min(lengths) < 0:
            raise RuntimeError(f"{op}(): {name} must be at least 0, got {min(lengths)}")
    if max(input_lengths) > steps:
        raise RuntimeError(f"{op}(): input_lengths must be at most the {steps} frames of log_probs "
                           f"(shape {list(log_probs._shape)}), got {max(input_lengths)}")
    padded = _checked_padded_targets(op, targets, batch, target_lengths, classes, blank)
    device = x.device
    # Arguments already in the op's layout (int64, on log_probs' device; padded targets of any
    # width, whose values past each length the op never reads) go as they are: making each again
    # was a third of a small batch's forward on the CPU (issue 14).
    if not (targets.ndim == 2 and _in_op_layout(targets, device)):
        targets = tensor(padded, device=device)
    lengths = [given if isinstance(given, Tensor) and given.ndim == 1 and _in_op_layout(given, device) else None
               for given in (original_input_lengths, original_target_lengths)]
    if lengths[0] is None and lengths[1] is None:
        # Both made here: the rows of one tensor, one host-to-device copy (a blocking write each on
        # OpenCL, where the lengths usually come from the host).
        both = _device_lengths(input_lengths, target_lengths, device)
        lengths = [both[0], both[1]]
    for k, values in enumerate((input_lengths, target_lengths)):
        if lengths[k] is None:
            lengths[k] = tensor(np.asarray(values, dtype=np.int64), device=device)
    loss = _ctc_loss(x, targets, *lengths, blank, reduction, bool(zero_infinity))
    return loss if batched or reduction != "none" else loss.squeeze(0)


@autocast_function("ctc_loss")
def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """The CTC loss of ``log_probs`` ``(T, N, C)`` (or unbatched ``(T, C)``) against ``targets``,
    padded ``(N, S)`` or concatenated ``(sum(target_lengths),)``; ``input_lengths`` and
    ``target_lengths`` are tensors or tuples of ints of N lengths each. ``'mean'`` divides each
    loss by its target length (at least 1) and averages over the batch; ``zero_infinity`` gives 0
    (and a zero gradient) where no alignment fits.

    >>> lp = tp.randn(12, 2, 5).log_softmax(2)
    >>> F.ctc_loss(lp, tp.tensor([[1, 2, 2], [3, 4, 0]]), (12, 10), (3, 2), reduction="none").shape
    (2,)
    """
    return _checked_ctc_loss("ctc_loss", log_probs, targets, input_lengths, target_lengths, blank,
                             _reduction(reduction), zero_infinity)
