"""``F.linear_cross_entropy`` and ``nn.LinearCrossEntropyLoss`` (PyTorch 2.13): the cross entropy
of ``input @ weight.T + bias``, optionally over batch chunks so the whole logits never exist.

The chunked path is a composite: each chunk's loss is computed under non-reentrant activation
checkpointing, which keeps only the chunk's inputs (views) for backward and recomputes its logits
there, so forward and backward each hold one chunk's logits at a time.
"""
from __future__ import annotations

import dataclasses
import math
import warnings

from ..frontend import dtypes as _dt
from ..frontend.ops.elementwise import where
from ..frontend.ops.joining import cat
from ..utils.checkpoint import checkpoint
from ._activations import check_tensor
from ._losses import _reduction, cross_entropy
from .functional import linear
from .layers import Linear
from .module import Module

__all__ = ["LinearCrossEntropyOptions", "linear_cross_entropy", "LinearCrossEntropyLoss"]

_ACC_POLICIES = ("auto", "accurate", "balanced", "compact")
_ACC_DTYPES = (_dt.float16, _dt.bfloat16, _dt.float32, _dt.float64)
_AUTO_CHUNKING = "aspect_ratio:2"


@dataclasses.dataclass(frozen=True)
class LinearCrossEntropyOptions:
    """``torch.nn.LinearCrossEntropyOptions``: the same fields, defaults and checks.

    ``batch_chunk_size`` (rows per chunk) wins over ``chunking_method``; ``"aspect_ratio:N"``
    (``"auto"`` is ``"aspect_ratio:2"``) sizes a chunk's logits like the input, divided by N;
    ``None`` with no ``batch_chunk_size`` is one chunk. ``acc_dtype`` is the dtype the logits and
    the loss are computed in. ``acc_policy`` and ``allow_retain_graph`` are accepted and checked
    but change nothing: recomputing a chunk in backward needs no scratch buffers and allows any
    number of backward passes (docs/deviations.md).
    """

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: str = "auto"
    acc_dtype: _dt.dtype | None = None

    def __post_init__(self):
        if self.acc_policy not in _ACC_POLICIES:
            raise ValueError(f"invalid acc_policy: {self.acc_policy!r}")
        if self.chunking_method not in (None, "auto"):
            _aspect_ratio_divisor(self.chunking_method)
        if not (self.batch_chunk_size is None
                or (isinstance(self.batch_chunk_size, int) and self.batch_chunk_size > 0)):
            raise ValueError(f"batch_chunk_size must be positive int or None, got {self.batch_chunk_size!r}")
        if self.acc_dtype is not None and self.acc_dtype not in _ACC_DTYPES:
            raise ValueError(
                f"acc_dtype must be one of {{None, float16, bfloat16, float32, float64}}, got {self.acc_dtype!r}. "
                "Pass acc_dtype=None to let the op pick automatically.")

    def rows_per_chunk(self, batch: int, num_classes: int, in_features: int) -> int:
        if self.batch_chunk_size is not None:
            return self.batch_chunk_size
        if self.chunking_method is None:
            return max(batch, 1)
        divisor = _aspect_ratio_divisor(_AUTO_CHUNKING if self.chunking_method == "auto" else self.chunking_method)
        rows = -(-batch // -(-num_classes // max(in_features, 1)))
        return max(1, (1 << max(rows - 1, 0).bit_length()) // divisor)


def _aspect_ratio_divisor(method: str) -> int:
    name, sep, factor = method.partition(":")
    factor = factor if sep else "1"
    if not (name == "aspect_ratio" and factor.isdigit() and int(factor) > 0):
        raise ValueError(f"invalid chunking_method: {method!r}")
    return int(factor)


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None, reduction: str = "mean",
                         ignore_index: int | None = None, label_smoothing: float = 0.0,
                         options: LinearCrossEntropyOptions | None = None):
    """``cross_entropy(linear(input, linear_weight, linear_bias), target, ...)``.

    ``linear_weight`` is ``(C, in_features)`` or ``(C, d_1, ..., d_K, in_features)`` for a
    K-dimensional loss (with a batched input); ``ignore_index=None`` is -100. With ``options``
    (a ``LinearCrossEntropyOptions``) class-index targets are processed in batch chunks; other
    cases (label smoothing, probability targets, K > 0) warn and take the reference path, as in
    PyTorch.

    >>> x, w = tp.randn(8, 4), tp.randn(100, 4)
    >>> loss = F.linear_cross_entropy(x, w, tp.zeros(8, dtype=tp.int64),
    ...                               options=tp.nn.LinearCrossEntropyOptions(batch_chunk_size=2))
    """
    check_tensor("linear_cross_entropy", input)
    check_tensor("linear_cross_entropy", linear_weight, "linear_weight")
    check_tensor("linear_cross_entropy", target, "target")
    reduction = _reduction(reduction)
    if input.ndim not in (1, 2) or linear_weight.ndim < 2:
        raise RuntimeError(
            f"linear_cross_entropy: expected a 1-D or 2-D input and a linear_weight of at least 2 dims, got input of "
            f"size {list(input.shape)} and linear_weight of size {list(linear_weight.shape)}")
    if input.shape[-1] != linear_weight.shape[-1]:
        raise RuntimeError(
            f"expected equal input and linear_weight last dimensions (in_features), got {input.shape[-1]} and "
            f"{linear_weight.shape[-1]}, respectively")
    if linear_weight.ndim > 2 and input.ndim != 2:
        raise RuntimeError(
            f"linear_cross_entropy: a linear_weight of size {list(linear_weight.shape)} (K-dimensional loss) needs "
            f"a batched (N, in_features) input, got input of size {list(input.shape)}")
    ignore_index = -100 if ignore_index is None else ignore_index
    losses = dict(weight=weight, ignore_index=ignore_index, reduction=reduction, label_smoothing=label_smoothing)
    if options is not None:
        unsupported = _why_not_chunked(linear_weight, target, label_smoothing)
        if unsupported is None:
            return _chunked(input, linear_weight, linear_bias, target, losses, options)
        warnings.warn(f"linear_cross_entropy: ``options`` ignored; the chunked path needs {unsupported}", stacklevel=2)
    return cross_entropy(_logits(input, linear_weight, linear_bias), target, **losses)


def _why_not_chunked(linear_weight, target, label_smoothing):
    """What keeps a call off the chunked path (PyTorch's conditions); None when nothing does."""
    if linear_weight.ndim != 2:
        return f"a 2-D linear_weight (no out_features), got size {list(linear_weight.shape)}"
    if target._dtype is not _dt.int64:
        return f"class-index targets of dtype int64, got {target._dtype}"
    if label_smoothing != 0:
        return f"label_smoothing == 0, got {label_smoothing}"
    return None


def _logits(input, linear_weight, linear_bias):
    """The full logits: ``(N, C)``, ``(C,)``, or ``(N, C, d_1, ..., d_K)`` for a K-dim weight."""
    classes_and_features = linear_weight.shape[:-1]
    flat_bias = None if linear_bias is None else linear_bias.reshape(-1)
    logits = linear(input, linear_weight.reshape(-1, linear_weight.shape[-1]), flat_bias)
    return logits if linear_weight.ndim == 2 else logits.reshape(input.shape[:1] + classes_and_features)


def _chunked(input, linear_weight, linear_bias, target, losses, options):
    batched = input.ndim == 2
    rows, target_rows = (input.shape[0] if batched else 1), (target.shape[0] if target.ndim else 1)
    if target.ndim != (1 if batched else 0) or target_rows != rows:
        raise ValueError(f"Expected input batch_size ({rows}) to match target batch_size ({target_rows}).")
    inputs, targets = (input, target) if batched else (input.unsqueeze(0), target.unsqueeze(0))
    reduction = losses["reduction"]
    per_chunk = dict(losses, reduction="none" if reduction == "none" else "sum")
    step = options.rows_per_chunk(rows, linear_weight.shape[0], linear_weight.shape[1])

    def chunk_loss(chunk_input, chunk_target, *parameters):
        logits = _logits(chunk_input, *parameters)
        if options.acc_dtype is not None:
            logits = logits.to(options.acc_dtype)
        return cross_entropy(logits, chunk_target, **per_chunk).to(input._dtype)

    pieces = [checkpoint(chunk_loss, inputs[start:start + step], targets[start:start + step], linear_weight,
                         linear_bias, use_reentrant=False) for start in range(0, rows, step)]
    if reduction == "none":
        loss = cat(pieces) if len(pieces) > 1 else pieces[0]
        return loss if batched else loss[0]
    total = pieces[0]
    for piece in pieces[1:]:
        total = total + piece
    return total if reduction == "sum" else total / _mean_denominator(targets, losses).to(total._dtype)


def _mean_denominator(targets, losses):
    """What cross_entropy's "mean" divides by: the class weights of the counted targets (their
    count without weights), summed over the whole batch."""
    counted = targets != losses["ignore_index"]
    if losses["weight"] is None:
        return counted.sum()
    return (losses["weight"][where(counted, targets, 0)] * counted).sum()


class LinearCrossEntropyLoss(Module):
    """``torch.nn.LinearCrossEntropyLoss``: a ``Linear(in_features, num_classes *
    prod(out_features), bias)`` (flat storage, as in PyTorch) and ``F.linear_cross_entropy`` of its
    output with the loss options kept; ``weight`` is a buffer."""

    def __init__(self, in_features: int, num_classes: int, *, out_features: tuple = (), bias: bool = False,
                 device=None, dtype=None, reduction: str = "mean", weight=None, ignore_index: int | None = None,
                 label_smoothing: float = 0.0, options: LinearCrossEntropyOptions | None = None) -> None:
        super().__init__()
        self.in_features, self.num_classes, self.out_features = in_features, num_classes, tuple(out_features)
        self.reduction, self.ignore_index, self.label_smoothing, self.options = (reduction, ignore_index,
                                                                                 label_smoothing, options)
        self.linear = Linear(in_features, num_classes * math.prod(self.out_features), bias=bias, device=device,
                             dtype=dtype)
        self.register_buffer("weight", weight)

    def forward(self, input, target):
        logical = (self.num_classes,) + self.out_features
        bias = self.linear.bias
        return linear_cross_entropy(
            input, self.linear.weight.view(logical + (self.in_features,)), target,
            linear_bias=None if bias is None else bias.view(logical), weight=self.weight, reduction=self.reduction,
            ignore_index=self.ignore_index, label_smoothing=self.label_smoothing, options=self.options)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, num_classes={self.num_classes}, out_features={self.out_features}, "
                f"bias={self.linear.bias is not None}, reduction={self.reduction}, ignore_index={self.ignore_index}, "
                f"label_smoothing={self.label_smoothing}, options={self.options}")
