"""PyTorch's top-level loss functions (``torch.kl_div``, ``torch.ctc_loss``, ...):
ATen's forms of ``nn.functional``'s losses, re-exported by ``tensorplug``.

They take ATen's positional signatures and ``reduction`` as an int (0 none, 1 mean, 2 sum), and
call the functional losses. As in PyTorch 2.13:

- ``reduction`` must be an int (``'mean'``, a float, a bool or None is a ``TypeError``); an int
  other than 1 and 2 gives the unreduced loss (ATen reduces for Mean and Sum only).
- The default ``reduction`` is 0, not the schema's ``Mean``: PyTorch's Python binding reads the
  default text ``at::Reduction::Mean`` as an integer, which gives 0, so ``torch.kl_div(x, y)`` is
  unreduced (tests/nn/test_aten_losses.py checks it against torch).
- The ATen ops check less than the functional forms: ``kl_div`` does not warn for mean,
  ``triplet_margin_loss`` takes a margin of 0 or below, ``margin_ranking_loss`` broadcasts
  operands of different dims, ``binary_cross_entropy_with_logits`` broadcasts its operands to the
  target's shape.
- ``ctc_loss`` takes the lengths as two tensors or two tuples of ints (its two overloads) and is
  ``F.ctc_loss`` itself otherwise (PyTorch's functional form calls it).
"""
from __future__ import annotations

import operator

from ..frontend.autocast_hook import autocast_function
from ..frontend.shapes import broadcast_shapes
from . import _ctc_loss, _losses, _margin_losses
from . import functional as F
from ._activations import check_tensor

__all__ = [
    "cosine_embedding_loss", "hinge_embedding_loss", "margin_ranking_loss", "triplet_margin_loss",
    "poisson_nll_loss", "kl_div", "binary_cross_entropy_with_logits", "ctc_loss",
]

# What PyTorch 2.13's binding makes of the schema default "at::Reduction::Mean" (see above).
_DEFAULT_REDUCTION = 0


def _reduction_name(op: str, position: int, reduction) -> str:
    """ATen's int reduction as the functional losses' name for it."""
    if isinstance(reduction, bool) or not hasattr(reduction, "__index__"):
        raise TypeError(f"{op}(): argument 'reduction' (position {position}) must be int, "
                        f"not {type(reduction).__name__}")
    return {1: "mean", 2: "sum"}.get(operator.index(reduction), "none")


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=_DEFAULT_REDUCTION):
    """torch.cosine_embedding_loss: ``F.cosine_embedding_loss`` with an int reduction."""
    name = _reduction_name("cosine_embedding_loss", 5, reduction)
    return F.cosine_embedding_loss(input1, input2, target, margin, reduction=name)


def hinge_embedding_loss(input, target, margin=1.0, reduction=_DEFAULT_REDUCTION):
    """torch.hinge_embedding_loss: ``F.hinge_embedding_loss`` with an int reduction."""
    name = _reduction_name("hinge_embedding_loss", 4, reduction)
    return F.hinge_embedding_loss(input, target, margin, reduction=name)


@autocast_function("margin_ranking_loss")
def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=_DEFAULT_REDUCTION):
    """torch.margin_ranking_loss: ``max(0, -target * (input1 - input2) + margin)``; the operands
    broadcast together whatever their dims."""
    name = _reduction_name("margin_ranking_loss", 5, reduction)
    for arg, t in (("input1", input1), ("input2", input2), ("target", target)):
        check_tensor("margin_ranking_loss", t, arg)
    return _margin_losses._margin_ranking_loss(input1, input2, target, margin, name)


@autocast_function("triplet_margin_loss")
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False,
                        reduction=_DEFAULT_REDUCTION):
    """torch.triplet_margin_loss: ``F.triplet_margin_loss`` with an int reduction, any margin."""
    name = _reduction_name("triplet_margin_loss", 8, reduction)
    return _losses._triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, name)


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    """torch.poisson_nll_loss: ``F.poisson_nll_loss``, every argument required."""
    name = _reduction_name("poisson_nll_loss", 6, reduction)
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=name)


@autocast_function("kl_div")
def kl_div(input, target, reduction=_DEFAULT_REDUCTION, *, log_target=False):
    """torch.kl_div: ``F.kl_div`` with an int reduction (no ``batchmean``, no warning for mean)."""
    name = _reduction_name("kl_div", 3, reduction)
    check_tensor("kl_div", input)
    check_tensor("kl_div", target, "target")
    return _losses._kl_div(input, target, name, log_target)


@autocast_function("binary_cross_entropy_with_logits")
def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=_DEFAULT_REDUCTION):
    """torch.binary_cross_entropy_with_logits: the loss has the target's shape, and the input
    (without ``pos_weight`` only), ``weight`` and ``pos_weight`` broadcast to it (the functional
    form wants equal shapes)."""
    op = "binary_cross_entropy_with_logits"
    name = _reduction_name(op, 5, reduction)
    check_tensor(op, input)
    check_tensor(op, target, "target")
    for arg, t in (("input", input), ("weight", weight), ("pos_weight", pos_weight)):
        if t is None:
            continue
        check_tensor(op, t, arg)
        shape = broadcast_shapes(t._shape, target._shape, op=op)
        if shape != target._shape:
            raise RuntimeError(f"output with shape {list(target._shape)} doesn't match the broadcast shape {list(shape)}")
    if pos_weight is not None and input._shape != target._shape:
        # ATen weighs the input's log-sigmoid in place: with pos_weight, the input is not broadcast.
        raise RuntimeError(f"output with shape {list(input._shape)} doesn't match the broadcast shape {list(target._shape)}")
    return _losses._binary_cross_entropy_with_logits(input, target, weight, pos_weight, name)


@autocast_function("ctc_loss")
def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=_DEFAULT_REDUCTION,
             zero_infinity=False):
    """torch.ctc_loss: ``F.ctc_loss`` with an int reduction (unreduced when omitted)."""
    name = _reduction_name("ctc_loss", 6, reduction)
    return _ctc_loss._checked_ctc_loss("ctc_loss", log_probs, targets, input_lengths, target_lengths, blank, name,
                                       zero_infinity)
