"""``nn.AdaptiveLogSoftmaxWithLoss``: the adaptive softmax of Grave et al. (2016), "Efficient
softmax approximation for GPUs", with ``torch.nn.AdaptiveLogSoftmaxWithLoss``'s parameters,
state_dict keys and errors.

Classes are sorted by frequency and split by ``cutoffs``: the ``cutoffs[0]`` most frequent form the
shortlist, scored directly by the ``head`` layer, which also scores one entry per further cluster.
A class in cluster k has log-probability ``head[cluster k] + log_softmax(tail[k](x))[class]``,
where ``tail[k]`` projects to ``in_features // div_value ** (k + 1)`` features and then to the
cluster's classes. ``forward`` evaluates a cluster's tail only on the rows whose target lies in it.

>>> import tensorplug as tp
>>> asm = AdaptiveLogSoftmaxWithLoss(16, 10, cutoffs=[4, 7])
>>> [name for name, _ in asm.named_parameters()]
['head.weight', 'tail.0.0.weight', 'tail.0.1.weight', 'tail.1.0.weight', 'tail.1.1.weight']
>>> out = asm(tp.randn(3, 16), tp.tensor([0, 5, 9]))
>>> out.output.shape, out.loss.shape
((3,), ())
>>> bool(tp.allclose(asm.log_prob(tp.zeros(1, 16)).exp().sum(), tp.tensor(1.0)))
True
"""
from __future__ import annotations

import numbers
from collections import namedtuple

from ..frontend.factories import tensor
from ..frontend.ops.joining import cat
from ..frontend.ops.searching import bucketize
from ..frontend.tensor import Tensor
from . import functional as F
from .containers import ModuleList, Sequential
from .layers import Linear
from .module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

# PyTorch's type name, so the printed result reads the same.
AdaptiveSoftmaxOutput = namedtuple("_ASMoutput", ("output", "loss"))

_CUTOFFS_RULE = ("cutoffs should be a sequence of unique, positive integers sorted in an increasing order, "
                 "where each value is between 1 and n_classes-1")


def _valid_cutoffs(cutoffs, n_classes: int) -> list[int]:
    """``cutoffs`` as a list of ints after PyTorch's checks (ValueError with its message)."""
    if isinstance(cutoffs, (str, bytes)) or not hasattr(cutoffs, "__iter__"):
        raise TypeError(f"AdaptiveLogSoftmaxWithLoss: cutoffs must be a sequence of ints, got {type(cutoffs).__name__}")
    values = list(cutoffs)
    if not values:
        raise ValueError("cutoffs should be a sequence of length larger than 0")
    if any(isinstance(c, bool) or not isinstance(c, numbers.Integral) for c in values):
        raise ValueError(_CUTOFFS_RULE)
    values = [int(c) for c in values]
    increasing = all(low < high for low, high in zip(values, values[1:]))
    if not increasing or values[0] < 1 or values[-1] > n_classes - 1:
        raise ValueError(_CUTOFFS_RULE)
    return values


class AdaptiveLogSoftmaxWithLoss(Module):
    """Adaptive softmax over ``n_classes`` frequency-sorted classes: ``forward(input, target)``
    gives each row's target log-probability and the mean negative log-likelihood; ``log_prob``
    every class's log-probability; ``predict`` the most probable class."""

    def __init__(self, in_features: int, n_classes: int, cutoffs, div_value: float = 4.0, head_bias: bool = False,
                 device=None, dtype=None) -> None:
        super().__init__()
        boundaries = _valid_cutoffs(cutoffs, n_classes)
        if not div_value > 0:
            raise ValueError(f"AdaptiveLogSoftmaxWithLoss: div_value must be positive, got {div_value}")
        self.in_features = in_features
        self.n_classes = n_classes
        # The class ranges: shortlist [0, cutoffs[0]), cluster k [cutoffs[k], cutoffs[k + 1]).
        self.cutoffs = boundaries + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        factory = {"device": device, "dtype": dtype}
        self.head = Linear(in_features, self.head_size, bias=head_bias, **factory)
        clusters = []
        for k in range(self.n_clusters):
            # Floor division as PyTorch writes it (for a float div_value it can differ from
            # floor(in_features / div_value ** (k + 1)) in the last place).
            hidden = int(in_features // (div_value ** (k + 1)))
            classes = self.cutoffs[k + 1] - self.cutoffs[k]
            clusters.append(Sequential(Linear(in_features, hidden, bias=False, **factory),
                                       Linear(hidden, classes, bias=False, **factory)))
        self.tail = ModuleList(clusters)

    def reset_parameters(self) -> None:
        """Initialize the head and every tail layer again, as at construction."""
        self.head.reset_parameters()
        for projection in self.tail:
            for layer in projection:
                layer.reset_parameters()

    # --- checks ---------------------------------------------------------------------------------
    def _check_features(self, op: str, input: Tensor) -> None:
        if input.shape[-1] != self.in_features:
            raise RuntimeError(f"AdaptiveLogSoftmaxWithLoss.{op}(): expected input with {self.in_features} features "
                               f"(in_features) in its last dim, got shape {tuple(input.shape)}")

    def _check_forward_args(self, input: Tensor, target: Tensor) -> None:
        """PyTorch's shape rules (1-D target with 2-D input, or 0-D with 1-D), in its order and words."""
        if target.dim() == 1:
            if input.dim() == 0 or input.shape[0] != target.shape[0]:
                raise RuntimeError("Input and target should have the same size in the batch dimension.")
            if input.dim() != 2:
                raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with size {tuple(input.shape)}")
        elif target.dim() == 0:
            if input.dim() != 1:
                raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with size {tuple(input.shape)}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        self._check_features("forward", input)
        if target.dtype.is_floating_point or target.dtype.is_complex or target.dtype.name == "bool":
            raise RuntimeError(f"AdaptiveLogSoftmaxWithLoss.forward(): target must hold class indices (an integer "
                               f"dtype), got {target.dtype}")
        if target.numel() and (target.min().item() < 0 or target.max().item() >= self.n_classes):
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                               f"[{target.min().item()}, {target.max().item()}] were found. ")

    def _check_matrix(self, op: str, input: Tensor) -> None:
        if input.dim() != 2:
            raise RuntimeError(f"AdaptiveLogSoftmaxWithLoss.{op}(): expected a 2-D input (N, {self.in_features}), "
                               f"got shape {tuple(input.shape)}")
        self._check_features(op, input)

    # --- computation ----------------------------------------------------------------------------
    def forward(self, input: Tensor, target: Tensor) -> AdaptiveSoftmaxOutput:
        """(each row's log-probability of its target, their mean negated: the loss)."""
        self._check_forward_args(input, target)
        batched = target.dim() == 1
        if not batched:
            input, target = input.unsqueeze(0), target.unsqueeze(0)
        target = target.long()
        boundaries = tensor(self.cutoffs[:-1], dtype=target.dtype, device=target.device)
        # 0 for a shortlist target, k + 1 for a target in cluster k.
        cluster = bucketize(target, boundaries, right=True)
        head_logprob = F.log_softmax(self.head(input), dim=1)
        # The head column each row reads: its class in the shortlist, else its cluster's entry.
        head_column = target.where(cluster == 0, cluster + (self.shortlist_size - 1))
        target_logprob = head_logprob.gather(1, head_column.unsqueeze(1)).squeeze(1)
        for k, projection in enumerate(self.tail):
            rows = (cluster == k + 1).nonzero().reshape(-1)
            if rows.numel() == 0:
                continue  # no target in this cluster: its tail is not evaluated
            within = target.index_select(0, rows) - self.cutoffs[k]
            cluster_logprob = F.log_softmax(projection(input.index_select(0, rows)), dim=1)
            target_logprob = target_logprob.index_add(0, rows, cluster_logprob.gather(1, within.unsqueeze(1)).squeeze(1))
        loss = (-target_logprob).mean()
        return AdaptiveSoftmaxOutput(target_logprob if batched else target_logprob.squeeze(0), loss)

    def _full_logprob(self, input: Tensor, head_logprob: Tensor) -> Tensor:
        """Every class's log-probability for the rows of ``input``, given their head log-probabilities."""
        columns = [head_logprob[:, :self.shortlist_size]]
        for k, projection in enumerate(self.tail):
            entry = self.shortlist_size + k
            columns.append(F.log_softmax(projection(input), dim=1) + head_logprob[:, entry:entry + 1])
        return cat(columns, dim=1)

    def log_prob(self, input: Tensor) -> Tensor:
        """The (N, n_classes) log-probabilities of every class for the (N, in_features) input."""
        self._check_matrix("log_prob", input)
        return self._full_logprob(input, F.log_softmax(self.head(input), dim=1))

    def predict(self, input: Tensor) -> Tensor:
        """The most probable class of each row: ``log_prob(input).argmax(dim=1)``, with the tails
        evaluated only for rows whose best head entry is a cluster (a shortlist class that beats
        every cluster entry beats every class inside them)."""
        self._check_matrix("predict", input)
        head_output = self.head(input)
        best = head_output.argmax(dim=1)
        undecided = (best >= self.shortlist_size).nonzero().reshape(-1)
        if undecided.numel() == 0:
            return best
        full = self._full_logprob(input.index_select(0, undecided),
                                  F.log_softmax(head_output.index_select(0, undecided), dim=1))
        return best.index_copy(0, undecided, full.argmax(dim=1))
