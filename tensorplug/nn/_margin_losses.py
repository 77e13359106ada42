"""Margin and embedding losses: ``cosine_embedding_loss``, ``hinge_embedding_loss``,
``margin_ranking_loss``, ``multi_margin_loss``, ``multilabel_margin_loss``,
``multilabel_soft_margin_loss``, ``triplet_margin_with_distance_loss``; and the Gaussian negative
log likelihood, ``gaussian_nll_loss``. Composites (gradients from the primitives), with
PyTorch's reductions and legacy ``size_average``/``reduce`` flags.
"""
from __future__ import annotations

import math

from ..frontend import dtypes as _dt
from ..frontend.autocast_hook import autocast_function
from ..frontend.ops._common import check_index_range, check_same_device
from ..frontend.ops.elementwise import COMPARE, UNARY, where
from ..frontend.shapes import broadcast_shapes
from ..frontend.meta_device import has_values
from ..frontend.tensor import Tensor
from ._activations import check_tensor, logsigmoid
from ._losses import _reduce, _reduction

__all__ = [
    "cosine_embedding_loss", "hinge_embedding_loss", "margin_ranking_loss", "multi_margin_loss",
    "multilabel_margin_loss", "multilabel_soft_margin_loss", "triplet_margin_with_distance_loss", "gaussian_nll_loss",
]

_COSINE_EPSILON = 1e-12  # PyTorch's: keeps the cosine of a zero vector finite


def _clamped(x: Tensor) -> Tensor:
    return x.clamp_min(0)


@autocast_function("cosine_embedding_loss")
def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """``1 - cos(x1, x2)`` where target is 1, ``max(0, cos(x1, x2) - margin)`` where it is -1;
    the cosine over the last dim of 1-D or 2-D inputs.

    >>> F.cosine_embedding_loss(tp.ones(2, 3), tp.ones(2, 3), tp.tensor([1, -1])).item()
    0.5
    """
    reduction = _reduction(reduction, size_average, reduce)
    for name, t in (("input1", input1), ("input2", input2), ("target", target)):
        check_tensor("cosine_embedding_loss", t, name)
    check_same_device("cosine_embedding_loss", input1, input2, target)
    if target.ndim == 1 and input1.ndim != 2 or target.ndim == 0 and input1.ndim != 1 or target.ndim > 1:
        raise RuntimeError(f"{target.ndim}D target tensor expects {target.ndim + 1}D input tensors, but found inputs "
                           f"with sizes {list(input1._shape)} and {list(input2._shape)}.")
    if input1._shape != input2._shape:
        raise RuntimeError(f"cosine_embedding_loss(): input1 and input2 must have the same shape, got "
                           f"{list(input1._shape)} and {list(input2._shape)}")
    d = input1.ndim - 1
    products = (input1 * input2).sum(d)
    squares1 = (input1 * input1).sum(d) + _COSINE_EPSILON
    squares2 = (input2 * input2).sum(d) + _COSINE_EPSILON
    cosine = products / UNARY["sqrt"](squares1 * squares2)
    loss = where(COMPARE["eq"](target, 1), 1 - cosine, 0.0) + where(COMPARE["eq"](target, -1), _clamped(cosine - margin), 0.0)
    return _reduce(loss, reduction)


@autocast_function("hinge_embedding_loss")
def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """``x`` where target is 1, ``max(0, margin - x)`` where it is -1 (other targets add both)."""
    reduction = _reduction(reduction, size_average, reduce)
    check_tensor("hinge_embedding_loss", input)
    check_tensor("hinge_embedding_loss", target, "target")
    loss = where(COMPARE["ne"](target, 1), _clamped(margin - input), 0.0) + where(COMPARE["ne"](target, -1), input, 0.0)
    return _reduce(loss, reduction)


@autocast_function("margin_ranking_loss")
def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """``max(0, -target * (x1 - x2) + margin)``: target 1 asks x1 to rank above x2, -1 below."""
    reduction = _reduction(reduction, size_average, reduce)
    for name, t in (("input1", input1), ("input2", input2), ("target", target)):
        check_tensor("margin_ranking_loss", t, name)
    if not input1.ndim == input2.ndim == target.ndim:
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: input1: "
                           f"{list(input1._shape)}, input2: {list(input2._shape)}, target: {list(target._shape)} ")
    broadcast_shapes(input1._shape, input2._shape, target._shape, op="margin_ranking_loss")
    return _margin_ranking_loss(input1, input2, target, margin, reduction)


def _margin_ranking_loss(input1, input2, target, margin, reduction: str):
    """The loss of operands that broadcast together, whatever their dims (ATen's op,
    ``torch.margin_ranking_loss``, does not ask for equal dims as the functional form does)."""
    return _reduce(_clamped(-target * (input1 - input2) + margin), reduction)


def _class_targets(op: str, input: Tensor, target: Tensor):
    """(N, C) input and (N,) target from 1-D/2-D input and 0-D/1-D target."""
    check_tensor(op, input)
    check_tensor(op, target, "target")
    check_same_device(op, input, target)
    if input.ndim == 0 or input.ndim > 2:
        raise RuntimeError(f"{op}(): Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input._shape)}")
    rows = input.reshape(1, -1) if input.ndim == 1 else input
    if target._dtype is not _dt.int64:
        raise RuntimeError(f"{op}(): expected target of dtype int64, got {target._dtype.name}")
    return rows, target


@autocast_function("multi_margin_loss")
def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None, reduction="mean"):
    """The multi-class hinge loss: per sample, the mean over the other classes j of
    ``max(0, margin - x[y] + x[j]) ** p`` (scaled by ``weight[y]``); p is 1 or 2.

    >>> round(F.multi_margin_loss(tp.ones(3), tp.tensor(1)).item(), 4)
    0.6667
    """
    reduction = _reduction(reduction, size_average, reduce)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    rows, target = _class_targets("multi_margin_loss", input, target)
    classes = rows._shape[1]
    flat_target = target.reshape(-1)
    if flat_target.numel() != rows._shape[0]:
        raise RuntimeError(f"inconsistent target size, expected {rows._shape[0]} but got {list(target._shape)}")
    try:
        check_index_range("multi_margin_loss", flat_target, classes, 1)
    except IndexError:
        raise RuntimeError("target out of range") from None
    chosen = rows.gather(1, flat_target.unsqueeze(1))
    margins = _clamped(margin - chosen + rows)
    if p == 2:
        margins = margins * margins
    if weight is not None:
        check_tensor("multi_margin_loss", weight, "weight")
        margins = margins * weight.index_select(0, flat_target).unsqueeze(1)
    from .functional import one_hot

    own = one_hot(flat_target, classes).to(_dt.bool)
    loss = where(own, 0.0, margins).sum(1) / classes
    return _reduce(loss.reshape(target._shape) if input.ndim == 1 else loss, reduction)


@autocast_function("multilabel_margin_loss")
def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """The multi-label hinge loss: each row's target lists class indices, ended by the first -1;
    the loss sums ``max(0, 1 - (x[j] - x[k]))`` over listed j and unlisted k, over the classes.

    >>> round(F.multilabel_margin_loss(tp.ones(3), tp.tensor([0, 1, -1])).item(), 4)
    0.6667
    """
    from ..frontend.ops.scans import cummin

    reduction = _reduction(reduction, size_average, reduce)
    rows, _ = _class_targets("multilabel_margin_loss", input, target)
    labels = target.reshape(1, -1) if target.ndim == 1 else target
    if labels._shape != rows._shape:
        raise RuntimeError(f"inconsistent target size: {list(target._shape)} for input of size: {list(input._shape)}")
    classes = rows._shape[1]
    if labels.numel() and has_values(labels):
        low, high = (int(v) for v in labels.aminmax())
        if low < -1 or high >= classes:
            raise RuntimeError(f"multilabel_margin_loss(): target values must be in [-1, {classes - 1}], got [{low}, {high}]")
    # A label counts while no -1 came before it in its row.
    active = cummin(COMPARE["ne"](labels, -1).to(_dt.int64), 1).values.to(_dt.bool)
    safe = where(active, labels, 0)
    from .functional import one_hot

    # Which classes a row lists: its active labels one-hot, summed (a scatter of the flags could
    # let an inactive duplicate of a label overwrite it).
    listed = (one_hot(safe, classes) * active.unsqueeze(2).to(_dt.int64)).sum(1) > 0
    listed_values = rows.gather(1, safe)  # (N, T): x[j] for each listed j
    margins = _clamped(1 - listed_values.unsqueeze(2) + rows.unsqueeze(1))  # (N, T, C)
    counted = active.unsqueeze(2) & ~listed.unsqueeze(1)
    loss = where(counted, margins, 0.0).sum((1, 2)) / classes
    return _reduce(loss.reshape(()) if input.ndim == 1 else loss, reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """The mean over classes of the logistic loss of each class, ``-(y log sigmoid(x) + (1 - y)
    log sigmoid(-x))``, optionally weighted per class."""
    reduction = _reduction(reduction, size_average, reduce)
    check_tensor("multilabel_soft_margin_loss", input)
    check_tensor("multilabel_soft_margin_loss", target, "target")
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    classes = input._shape[-1] if input.ndim else 1
    return _reduce(loss.sum(input.ndim - 1) / classes if input.ndim else loss, reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0, swap=False,
                                      reduction="mean"):
    """``max(0, margin + d(anchor, positive) - d(anchor, negative))`` for any distance ``d``
    (pairwise_distance by default); ``swap`` uses the smaller of d(anchor, negative) and
    d(positive, negative)."""
    from .functional import pairwise_distance

    reduction = _reduction(reduction)
    for name, t in (("anchor", anchor), ("positive", positive), ("negative", negative)):
        check_tensor("triplet_margin_with_distance_loss", t, name)
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {anchor.ndim}D, positive {positive.ndim}D, and negative "
                           f"{negative.ndim}D inputs")
    if not margin > 0:
        raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, got {margin} instead")
    distance = distance_function if distance_function is not None else pairwise_distance
    positive_distance = distance(anchor, positive)
    negative_distance = distance(anchor, negative)
    if swap:
        from ..frontend.ops.elementwise import BINARY

        negative_distance = BINARY["minimum"](negative_distance, distance(positive, negative))
    return _reduce(_clamped(margin + positive_distance - negative_distance), reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """The negative log likelihood of ``target`` under normal distributions of mean ``input``
    and variance ``var``: ``0.5 (log(var) + (input - target)^2 / var)`` (+ 0.5 log(2 pi) with
    ``full``). ``var`` may omit the last dim or have size 1 there; values below ``eps`` are
    raised to it without changing the gradient, as PyTorch does.

    >>> F.gaussian_nll_loss(tp.ones(2, 3), tp.ones(2, 3), tp.ones(2)).item()
    0.0
    """
    from ..frontend.autograd import no_grad

    check_tensor("gaussian_nll_loss", input)
    check_tensor("gaussian_nll_loss", target, "target")
    if not isinstance(var, Tensor):
        var = input.new_full(input._shape, float(var))
    if var._shape != input._shape:
        if input._shape[:-1] == var._shape:
            var = var.unsqueeze(-1)
        elif not (input._shape[:-1] == var._shape[:-1] and var._shape[-1:] == (1,)):
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if var.numel() and has_values(var) and (var < 0).any().item():
        raise ValueError("var has negative entry/entries")
    floor = var.clone()
    with no_grad():
        floor.clamp_(min=eps)  # in place under no_grad: the clamp does not enter the gradient
    loss = 0.5 * (UNARY["log"](floor) + (input - target) ** 2 / floor)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)
