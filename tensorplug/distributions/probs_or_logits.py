"""Distributions parametrized by ``probs`` or by ``logits`` (exactly one of them): the one given is
stored, and the other is computed from it on first use. Bernoulli-like families describe one
success (sigmoid between the two); Categorical describes categories over the last dimension
(softmax between the two)."""
from __future__ import annotations

from .utils import broadcast_all, logits_to_probs, probs_to_logits


def one_of_probs_or_logits(probs, logits):
    """(name, value) of the one given; ValueError when both or neither are."""
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")
    return ("probs", probs) if probs is not None else ("logits", logits)


class ProbsOrLogits:
    """Mixin: ``probs`` and ``logits`` from the one given (``_store_given``), which is also the
    parameter the distribution prints and expands by."""

    # True for the probability of one success, False for categories over the last dimension.
    _binary = True

    def _store_given(self, name: str, value) -> None:
        self._given = name
        self._probs, self._logits = (value, None) if name == "probs" else (None, value)

    def _given_value(self):
        return self._probs if self._given == "probs" else self._logits

    def _parameters(self) -> dict:
        return {self._given: self._given_value()}

    def _expanded_parameters(self, batch_shape) -> dict:
        """The given parameter expanded to batch_shape, its dimensions beyond the batch kept (the
        tensor's own error when it does not expand, as PyTorch raises)."""
        value = self._given_value()
        trailing = tuple(value.shape)[len(self._batch_shape):]
        return {self._given: value.expand(tuple(batch_shape) + trailing)}

    @property
    def probs(self):
        if self._probs is None:
            self._probs = logits_to_probs(self._logits, is_binary=self._binary)
        return self._probs

    @property
    def logits(self):
        if self._logits is None:
            self._logits = probs_to_logits(self._probs, is_binary=self._binary)
        return self._logits

    @property
    def param_shape(self) -> tuple:
        return tuple(self._given_value().shape)


class BinaryParameter(ProbsOrLogits):
    """Mixin: the success probability of Bernoulli-like families, broadcast with their other
    parameters."""

    def _take_probs_or_logits(self, probs, logits, *others):
        """Store the given one (broadcast with `others`, which are returned broadcast too)."""
        name, given = one_of_probs_or_logits(probs, logits)
        value, *rest = broadcast_all(given, *others)
        self._store_given(name, value)
        return rest


class CountedTrials(BinaryParameter):
    """Mixin: a ``total_count`` of trials with the success parameter (Binomial, NegativeBinomial)."""

    def _take_count_and_probs_or_logits(self, total_count, probs, logits) -> None:
        """Store both, broadcast together; the count takes the success parameter's dtype."""
        (count,) = self._take_probs_or_logits(probs, logits, total_count)
        self.total_count = count.type_as(self._given_value())

    def _parameters(self) -> dict:
        return {"total_count": self.total_count, **super()._parameters()}
