"""The part OneHotCategorical, Multinomial and ExpRelaxedCategorical share: the Categorical over the
last dimension of ``probs`` or ``logits`` that they draw through, whose parameters they expose,
print and expand by."""
from __future__ import annotations

from ..frontend.factories import eye
from .categorical import Categorical


class CategoricalBased:
    """Mixin: ``probs``, ``logits`` and ``param_shape`` of an inner Categorical (``_categorical``)."""

    def _take_categorical(self, probs, logits, validate_args) -> tuple:
        """Build the inner Categorical; returns the family's (batch_shape, event_shape), whose
        events are vectors over the categories."""
        self._categorical = Categorical(probs, logits, validate_args=validate_args)
        return self._categorical.batch_shape, self._categorical.param_shape[-1:]

    def _parameters(self) -> dict:
        return self._categorical._parameters()

    def _expanded_parameters(self, batch_shape) -> dict:
        return self._categorical._expanded_parameters(batch_shape)

    def _one_hot(self, index):
        """Rows of the identity over the categories picked by `index`, in the parameters' dtype and device."""
        probs = self.probs
        return eye(self._event_shape[0], dtype=probs.dtype, device=probs.device)[index]

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def param_shape(self) -> tuple:
        return self._categorical.param_shape
