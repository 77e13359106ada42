"""``tp.nn.modules.loss``: PyTorch's import path for the loss modules and the bases custom losses
subclass (``_Loss`` keeps ``reduction``, ``_WeightedLoss`` also registers a ``weight`` buffer)."""
from ..loss import *  # noqa: F401,F403
from ..loss import __all__ as _loss_names
from ..loss import _Loss, _WeightedLoss

__all__ = [*_loss_names, "_Loss", "_WeightedLoss"]
