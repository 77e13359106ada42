"""Scans beyond the primitive cumsum/cumprod: ``cummax``, ``cummin``, ``logcumsumexp``, and the
trapezoid rule (``trapezoid``, ``trapz``, ``cumulative_trapezoid``).

cummax, cummin and logcumsumexp are log-step scans (Hillis and Steele): ceil(log2(n)) rounds,
each combining every element with the one ``2**k`` before it, so their cost in ops grows with
the log of the length, not the length. logcumsumexp combines with logaddexp, so no global shift
makes early terms underflow (``logcumsumexp([-1000, 0])[0]`` is -1000, not -inf).
"""
from __future__ import annotations

from collections import namedtuple

from .. import dtypes as _dt
from ..shapes import normalize_dim
from ..tensor import Tensor
from ..views import slice_dim
from ._common import check_same_device, write_out
from ._numpy_names import axis_as_dim, required_dim
from ._pointwise_args import check_tensor, float_operand
from .elementwise import COMPARE, UNARY, where
from .joining import cat
from .out_rehearsal import rehearse_out

__all__ = ["cummax", "cummin", "logcumsumexp", "trapezoid", "trapz", "cumulative_trapezoid"]

cummax_result = namedtuple("cummax", ["values", "indices"])
cummin_result = namedtuple("cummin", ["values", "indices"])


def _log_step_scan(parts: tuple, dim: int, combine) -> tuple:
    """The inclusive scan along ``dim`` of tensors of one shape (``parts``), under the
    associative ``combine(earlier, later)`` of two tuples of them."""
    length = parts[0]._shape[dim]
    step = 1
    while step < length:
        earlier = tuple(slice_dim(p, dim, 0, length - step, 1) for p in parts)
        later = tuple(slice_dim(p, dim, step, length, 1) for p in parts)
        parts = tuple(cat([slice_dim(p, dim, 0, step, 1), c], dim) for p, c in zip(parts, combine(earlier, later)))
        step *= 2
    return parts


def _running_extreme(op: str, input, dim, out, later_wins: str, result_type):
    from .indexing import gather

    check_tensor(op, input)
    if input._dtype.is_complex:
        raise RuntimeError(f"{op}(): not implemented for complex tensors (they have no order)")
    if input.ndim == 0:
        d = normalize_dim(op, dim, 1)
        values, indices = input.clone(), input.new_zeros((), dtype=_dt.int64)
        return result_type(values, indices)
    d = normalize_dim(op, dim, input.ndim)
    from ..autograd import no_grad
    from ..factories import arange

    with no_grad():
        shape = [1] * input.ndim
        shape[d] = input._shape[d]
        positions = arange(input._shape[d], device=input._device).reshape(shape).expand(*input._shape)
        values = input.detach()

        def combine(earlier, later):
            # A later element wins ties (PyTorch returns the last index of a repeated extreme)
            # and a NaN wins everything, so once seen, NaN stays with its latest index.
            (early_values, early_index), (late_values, late_index) = earlier, later
            take_late = COMPARE[later_wins](late_values, early_values) | UNARY["isnan"](late_values)
            return where(take_late, late_values, early_values), where(take_late, late_index, early_index)

        indices = _log_step_scan((values, positions), d, combine)[1] if input._shape[d] else positions.clone()
    # The values come from a gather, so the gradient goes to the element each running extreme
    # came from (PyTorch's formula).
    values = gather(input, d, indices) if input.numel() else input.clone()
    if out is not None:
        values = write_out(op, out[0], values, exact_dtype=True)
        indices = write_out(op, out[1], indices, exact_dtype=True)
    return result_type(values, indices)


def cummax(input, dim=None, *, out=None, axis=None):
    """``(values, indices)``: the running maximum along ``dim`` and where it was found (the
    latest position on ties; NaN propagates).

    >>> tp.cummax(tp.tensor([1, 3, 2, 3]), 0).indices.tolist()
    [0, 1, 1, 3]
    """
    if out is not None:
        rehearse_out(cummax, locals())
    if dim is None or axis is not None:
        dim = required_dim("cummax", dim, axis)
    return _running_extreme("cummax", input, dim, out, "ge", cummax_result)


def cummin(input, dim=None, *, out=None, axis=None):
    """``(values, indices)``: the running minimum along ``dim`` and where it was found (the
    latest position on ties; NaN propagates)."""
    if out is not None:
        rehearse_out(cummin, locals())
    if dim is None or axis is not None:
        dim = required_dim("cummin", dim, axis)
    return _running_extreme("cummin", input, dim, out, "le", cummin_result)


def logcumsumexp(input, dim=None, *, out=None, axis=None) -> Tensor:
    """``log(cumsum(exp(input), dim))`` without overflow or underflow, for floating tensors.

    >>> [round(v, 4) for v in tp.logcumsumexp(tp.tensor([0.0, 0.0]), 0).tolist()]
    [0.0, 0.6931]
    """
    if out is not None:
        rehearse_out(logcumsumexp, locals())
    if dim is None or axis is not None:
        dim = required_dim("logcumsumexp", dim, axis)
    from .special_functions import logaddexp

    check_tensor("logcumsumexp", input)
    if not input._dtype.is_floating_point:
        raise NotImplementedError(f"logcumsumexp(): not implemented for '{input._dtype.name}' (floating tensors only)")
    d = normalize_dim("logcumsumexp", dim, max(input.ndim, 1))
    if input.ndim == 0:
        return write_out("logcumsumexp", out, input.clone())
    (result,) = _log_step_scan((input,), d, lambda earlier, later: (logaddexp(earlier[0], later[0]),))
    return write_out("logcumsumexp", out, result)


# --- the trapezoid rule -------------------------------------------------------------------------
def _trapezoid_pieces(op: str, y, x, dx, dim) -> Tensor:
    """The area of each interval along ``dim`` (one fewer than the samples)."""
    check_tensor(op, y, "y")
    if y.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    d = normalize_dim(op, dim, y.ndim)
    if x is not None and dx is not None:
        raise RuntimeError(f"{op}(): pass either x or dx, not both")
    y = float_operand(op, y) if not y._dtype.is_complex else y
    length = y._shape[d]
    later, earlier = slice_dim(y, d, 1, max(length, 1), 1), slice_dim(y, d, 0, max(length - 1, 0), 1)
    heights = (later + earlier) / 2
    if x is None:
        return heights * (1.0 if dx is None else dx)
    check_tensor(op, x, "x")
    check_same_device(op, y, x)
    if x.ndim == 1:
        if x._shape[0] != length:
            raise RuntimeError(f"{op}: There must be one `x` value for each sample point")
        shape = [1] * y.ndim
        shape[d] = length
        x = x.reshape(shape)
        dx_dim = d
    else:
        dx_dim = normalize_dim(op, dim, x.ndim)
    n = x._shape[dx_dim]
    widths = slice_dim(x, dx_dim, 1, max(n, 1), 1) - slice_dim(x, dx_dim, 0, max(n - 1, 0), 1)
    return widths * heights


def trapezoid(y, x=None, *, dx=None, dim=-1, axis=None) -> Tensor:
    """The trapezoid rule along ``dim``: samples ``y`` at points ``x`` (1-D, or broadcasting
    with ``y``) or spaced ``dx`` apart (1 by default). Integers integrate in the default float
    dtype; fewer than two samples give 0.

    >>> tp.trapezoid(tp.tensor([1.0, 2.0, 3.0])).item()
    4.0
    """
    if axis is not None:
        dim = axis_as_dim("trapezoid", dim, axis, -1)
    pieces = _trapezoid_pieces("trapezoid", y, x, dx, dim)
    return pieces.sum(normalize_dim("trapezoid", dim, pieces.ndim))


def trapz(y, x=None, *, dx=None, dim=-1, axis=None) -> Tensor:
    """Alias of :func:`trapezoid`."""
    if axis is not None:
        dim = axis_as_dim("trapz", dim, axis, -1)
    pieces = _trapezoid_pieces("trapz", y, x, dx, dim)
    return pieces.sum(normalize_dim("trapz", dim, pieces.ndim))


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1, axis=None) -> Tensor:
    """The running trapezoid rule along ``dim``: one value per interval (one fewer than the
    samples).

    >>> tp.cumulative_trapezoid(tp.tensor([1.0, 2.0, 3.0])).tolist()
    [1.5, 4.0]
    """
    if axis is not None:
        dim = axis_as_dim("cumulative_trapezoid", dim, axis, -1)
    pieces = _trapezoid_pieces("cumulative_trapezoid", y, x, dx, dim)
    return pieces.cumsum(normalize_dim("cumulative_trapezoid", dim, pieces.ndim))


#: Tensor methods this module provides: name -> function (attached by frontend.methods).
TENSOR_METHODS: dict = {"cummax": cummax, "cummin": cummin, "logcumsumexp": logcumsumexp}
