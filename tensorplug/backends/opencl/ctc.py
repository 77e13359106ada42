"""The CTC loss and its gradient on OpenCL (issue 14): the composite ops ``ctc_loss`` and
``ctc_loss_backward`` (tensorplug/nn/_ctc_loss.py) as one launch each: on CPU devices a work-item
per sample with its positions in vector lanes (``_ctc_lanes_source``), elsewhere a work-group per
sample (``_ctc_source``). Other dtypes and layouts than the composite's own (float32/float64
(T, N, C) log-probabilities, int64 (N, S) targets and (N,) lengths) run the decomposition.
"""
from __future__ import annotations

from ...dispatcher import get_operator
from . import _ctc_lanes_source, _ctc_source
from .fused import _operand
from .kernels import _kernel, _state

__all__ = ["table"]

_FAMILY = "ctc"
_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


def _fits(log_probs, targets, input_lengths, target_lengths) -> bool:
    if log_probs.dtype.name not in ("float32", "float64") or log_probs.ndim != 3:
        return False
    batch = log_probs.shape[1]
    return (targets.dtype.name == "int64" and targets.ndim == 2 and targets.shape[0] == batch
            and all(t.dtype.name == "int64" and tuple(t.shape) == (batch,) for t in (input_lengths, target_lengths)))


def _runs_work_items_in_loops(state) -> bool:
    """Whether the device is a CPU, whose OpenCL (PoCL) runs a work-group's work-items as loops
    between its barriers: there a sample's work-items cost more than they share (T=50, N=16,
    C=200: gradient 12.6 ms with 128 work-items per sample, 1.4 ms with one), and the lane
    kernels run instead."""
    import pyopencl as cl

    device = getattr(state, "device", None)
    return device is not None and bool(device.type & cl.device_type.CPU)


def _group(state, positions: int, classes: int) -> int:
    """Work-items per sample of the work-group kernels: enough for the wider of its positions and
    classes, a power of two between 8 and GROUP_LIMIT (and the device's limit)."""
    size = 8
    while size < max(positions, classes) and size < _ctc_source.GROUP_LIMIT:
        size *= 2
    return min(size, state.max_work_group)


def _check_blank(op: str, blank, classes: int) -> None:
    # Every even position reads the blank's column: one outside the classes would read past a row.
    if not 0 <= int(blank) < classes:
        raise ValueError(f"{op}: blank {int(blank)} is not a class of {classes}")


def _shared_arguments(log_probs, targets, input_lengths, target_lengths) -> list:
    """The kernels' arguments from ``lp`` to ``stl`` (see _ctc_source)."""
    return [*_operand(log_probs), log_probs.stride(0), log_probs.stride(1), log_probs.stride(2),
            *_operand(targets), *targets.stride(), *_operand(input_lengths), input_lengths.stride(0),
            *_operand(target_lengths), target_lengths.stride(0)]


def _sizes(op: str, log_probs, targets, blank) -> tuple:
    """``(T, N, C, S, W)``: frames, batch, classes, the padded target width and the extended
    label width 2 S + 1, after checking the blank."""
    steps, batch, classes = log_probs.shape
    _check_blank(op, blank, classes)
    longest = targets.shape[1]
    return steps, batch, classes, longest, 2 * longest + 1


def _lane_widths(width: int) -> tuple:
    """``(P, R)`` of the lane kernels: positions padded to whole vectors, and an alpha or beta
    row's length (P and two -inf on either side)."""
    lanes = _ctc_lanes_source.LANES
    padded = -(-width // lanes) * lanes
    return padded, padded + 4


def _ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, reduction, zero_infinity):
    if not _fits(log_probs, targets, input_lengths, target_lengths):
        return get_operator("ctc_loss").decomposition(log_probs, targets, input_lengths, target_lengths, blank,
                                                      reduction, zero_infinity)
    steps, batch, classes, longest, width = _sizes("ctc_loss", log_probs, targets, blank)
    state, dtype = _state(log_probs), log_probs.dtype.name
    shares = log_probs.new_empty((batch,))
    if batch:
        shared = _shared_arguments(log_probs, targets, input_lengths, target_lengths)
        size = log_probs.element_size()
        mean_over = batch if reduction == "mean" else 0
        state.error_possible = True
        if _runs_work_items_in_loops(state):
            padded, row = _lane_widths(width)
            alpha = state.allocate(batch * 2 * row * size)
            tables = state.allocate(batch * 2 * (padded + 8) * size)
            _kernel(state, _FAMILY, dtype, "ctc_loss_lanes")(
                state.queue, (batch,), (1,), *_operand(shares), shares.stride(0), alpha.buffer, tables.buffer,
                padded, row, *shared, steps, classes, longest, int(blank), int(bool(zero_infinity)),
                mean_over, state.error_flag)
        else:
            alpha = state.allocate(max(batch * steps * width, 1) * size)
            group = _group(state, width, 0)
            _kernel(state, _FAMILY, dtype, "ctc_loss")(
                state.queue, (batch * group,), (group,), *_operand(shares), shares.stride(0), alpha.buffer, width,
                *shared, steps, classes, longest, int(blank), int(bool(zero_infinity)), mean_over,
                state.error_flag)
    if reduction == "none":
        return shares
    # For 'mean' the kernels wrote each sample's share of the mean: its sum is one launch
    # (mean() is two, a sum and a division). An empty batch's mean stays NaN.
    return shares.mean() if reduction == "mean" and not batch else shares.sum()


def _ctc_loss_backward(grad, log_probs, targets, input_lengths, target_lengths, blank, reduction, zero_infinity):
    batch = log_probs.shape[1] if log_probs.ndim == 3 else 0
    if (not _fits(log_probs, targets, input_lengths, target_lengths) or grad.dtype is not log_probs.dtype
            or tuple(grad.shape) != ((batch,) if reduction == "none" else ())):
        return get_operator("ctc_loss_backward").decomposition(grad, log_probs, targets, input_lengths,
                                                               target_lengths, blank, reduction, zero_infinity)
    steps, batch, classes, longest, width = _sizes("ctc_loss_backward", log_probs, targets, blank)
    state, dtype = _state(log_probs), log_probs.dtype.name
    out = log_probs.new_empty(log_probs.shape)
    if batch:
        shared = _shared_arguments(log_probs, targets, input_lengths, target_lengths)
        size = log_probs.element_size()
        grad_stride = grad.stride(0) if grad.ndim else 0
        state.error_possible = True
        if _runs_work_items_in_loops(state):
            padded, row = _lane_widths(width)
            alpha = state.allocate(max(batch * steps * row, 1) * size)
            work = state.allocate(batch * (3 * row + 2 * (padded + 8)) * size)
            tables = state.allocate(batch * 4 * (padded + 8) * size)
            _kernel(state, _FAMILY, dtype, "ctc_loss_backward_lanes")(
                state.queue, (batch,), (1,), *_operand(out), *out.stride(), *_operand(grad), grad_stride,
                alpha.buffer, work.buffer, tables.buffer, padded, row, *shared, steps, batch, classes, longest,
                int(blank), int(bool(zero_infinity)), _REDUCTIONS[reduction], state.error_flag)
        else:
            alpha = state.allocate(max(batch * steps * width, 1) * size)
            beta = state.allocate(batch * 2 * width * size)
            next_same = state.allocate(batch * width * 4)
            group = _group(state, width, classes)
            _kernel(state, _FAMILY, dtype, "ctc_loss_backward")(
                state.queue, (batch * group,), (group,), *_operand(out), *out.stride(), *_operand(grad), grad_stride,
                alpha.buffer, beta.buffer, next_same.buffer, width, *shared, steps, batch, classes, longest,
                int(blank), int(bool(zero_infinity)), _REDUCTIONS[reduction], state.error_flag)
    return out


def table() -> dict:
    """The two CTC ops."""
    return {"ctc_loss": _ctc_loss, "ctc_loss_backward": _ctc_loss_backward}
