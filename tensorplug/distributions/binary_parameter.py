"""The success probability that Bernoulli-like distributions take as ``probs`` or as ``logits``
(exactly one of them), each computed from the other on first use."""
from __future__ import annotations

from .utils import broadcast_all, logits_to_probs, probs_to_logits


def one_of_probs_or_logits(probs, logits):
    """(name, value) of the one given; ValueError when both or neither are."""
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")
    return ("probs", probs) if probs is not None else ("logits", logits)


class BinaryParameter:
    """Mixin: ``probs`` and ``logits`` of one event's success, from the one given."""

    def _take_probs_or_logits(self, probs, logits, *others):
        """Store the given one (broadcast with `others`, which are returned broadcast too)."""
        self._given, given = one_of_probs_or_logits(probs, logits)
        value, *rest = broadcast_all(given, *others)
        self._probs, self._logits = (value, None) if self._given == "probs" else (None, value)
        return rest

    def _given_parameter(self) -> dict:
        return {self._given: self._probs if self._given == "probs" else self._logits}

    @property
    def probs(self):
        if self._probs is None:
            self._probs = logits_to_probs(self._logits, is_binary=True)
        return self._probs

    @property
    def logits(self):
        if self._logits is None:
            self._logits = probs_to_logits(self._probs, is_binary=True)
        return self._logits

    @property
    def param_shape(self) -> tuple:
        return tuple((self._probs if self._given == "probs" else self._logits).shape)
