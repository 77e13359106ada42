"""``GradScaler``: loss scaling for mixed-precision training, as ``torch.amp.GradScaler``.

Multiply the loss by ``scale`` before ``backward()`` so small float16 gradients do not flush to
zero; divide the gradients by it again before the optimizer steps; skip a step whose gradients
hold inf or NaN and shrink ``scale`` (``backoff_factor``); grow it (``growth_factor``) after
``growth_interval`` steps in a row without.

Disabled (``enabled=False``, or a ``cuda`` scaler where CUDA is not available, which warns as
PyTorch does), ``scale()`` returns its argument, ``step()`` is ``optimizer.step()`` and
``update()`` does nothing. The scale is kept as a Python float (PyTorch: a one-element device
tensor); ``get_scale()`` and ``state_dict()`` give the same values either way.
"""
from __future__ import annotations

import enum
import warnings
from dataclasses import dataclass
from typing import Any

from ..frontend.autograd import no_grad
from ..frontend.tensor import Tensor

__all__ = ["GradScaler", "OptState"]


class OptState(enum.Enum):
    """Where an optimizer is in the current iteration: each moves READY -> UNSCALED -> STEPPED."""

    READY = 0
    UNSCALED = 1
    STEPPED = 2


@dataclass
class _Iteration:
    """One optimizer's progress through the current iteration."""

    stage: OptState = OptState.READY
    found_inf: bool = False


# state_dict's keys (PyTorch's, so saved checkpoints interchange) and how each value is read back.
_STATE_FIELDS = {"scale": float, "growth_factor": float, "backoff_factor": float, "growth_interval": int,
                 "_growth_tracker": int}


def _scale_nested(outputs, factor: float):
    """``outputs * factor`` for a tensor or tensors nested in lists, tuples, namedtuples and dicts."""
    if isinstance(outputs, Tensor):
        return outputs * factor
    if isinstance(outputs, dict):
        return {key: _scale_nested(value, factor) for key, value in outputs.items()}
    if isinstance(outputs, (list, tuple)):
        scaled = [_scale_nested(item, factor) for item in outputs]
        if isinstance(outputs, list):
            return scaled
        # A namedtuple's constructor takes its fields one by one; a plain tuple takes an iterable.
        return type(outputs)(*scaled) if hasattr(outputs, "_fields") else tuple(scaled)
    raise ValueError("outputs must be a Tensor or an iterable of Tensors")


def _unscale_and_check(gradients: list[Tensor], inverse_scale: float) -> bool:
    """Multiply every gradient by ``inverse_scale`` in place; True if any holds inf or NaN.

    The finiteness flags stay on their devices until one host read per device, instead of one
    synchronizing ``.item()`` per parameter."""
    from ..frontend.ops.foreach import _foreach_mul_
    from ..frontend.ops.joining import stack

    by_device: dict[str, list[Tensor]] = {}
    for gradient in gradients:
        by_device.setdefault(str(gradient.device), []).append(gradient)
    found_inf = False
    for same_device in by_device.values():
        _foreach_mul_(same_device, inverse_scale)
        all_finite = stack([gradient.isfinite().all() for gradient in same_device]).all()
        found_inf = found_inf or not all_finite.item()
    return found_inf


def _checked_factor(value: float, *, above_one: bool) -> float:
    if above_one and value <= 1.0:
        raise ValueError("The growth factor must be > 1.0.")
    if not above_one and value >= 1.0:
        raise ValueError("The backoff factor must be < 1.0.")
    return float(value)


class GradScaler:
    """Scales the loss so float16 gradients keep their small values, and skips steps that overflow."""

    def __init__(self, device: str = "cuda", init_scale: float = 2.0**16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = str(device)
        self._enabled = bool(enabled) and self._device_can_scale()
        self._growth_factor = _checked_factor(growth_factor, above_one=True)
        self._backoff_factor = _checked_factor(backoff_factor, above_one=False)
        if not isinstance(growth_interval, int) or growth_interval <= 0:
            raise ValueError("growth_interval must be a positive integer")
        self._growth_interval = growth_interval
        self._init_scale = self._scale = float(init_scale)
        self._growth_tracker = 0  # clean steps since the scale last changed
        self._iterations: dict[int, _Iteration] = {}  # by id(optimizer); emptied by update()

    def _device_can_scale(self) -> bool:
        if self._device.partition(":")[0] != "cuda":
            return True
        from .. import cuda

        if cuda.is_available():
            return True
        warnings.warn(f"torch.cuda.amp.GradScaler is enabled, but CUDA is not available "
                      f"({cuda.unavailable_reason()}). Disabling.", UserWarning, stacklevel=3)
        return False

    def is_enabled(self) -> bool:
        """Whether this scaler scales (False after ``enabled=False`` or without the device)."""
        return self._enabled

    def scale(self, outputs):
        """``outputs * scale`` (a tensor, or tensors nested in lists, tuples and dicts)."""
        return _scale_nested(outputs, self._scale) if self._enabled else outputs

    def _iteration(self, optimizer) -> _Iteration:
        return self._iterations.setdefault(id(optimizer), _Iteration())

    def unscale_(self, optimizer) -> None:
        """Divide ``optimizer``'s gradients by the scale (in place) and note whether any is inf/NaN."""
        if not self._enabled:
            return
        iteration = self._iteration(optimizer)
        if iteration.stage is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if iteration.stage is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        gradients = [p.grad for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
        # float16 gradients would lose what scaling kept: PyTorch refuses them too.
        if any(gradient.dtype.name == "float16" for gradient in gradients):
            raise ValueError("Attempting to unscale FP16 gradients.")
        with no_grad():
            iteration.found_inf = _unscale_and_check(gradients, 1.0 / self._scale)
        iteration.stage = OptState.UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """``optimizer.step()`` unless the (unscaled) gradients hold inf or NaN; returns its result."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        iteration = self._iteration(optimizer)
        if iteration.stage is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if iteration.stage is OptState.READY:
            self.unscale_(optimizer)
        iteration.stage = OptState.STEPPED
        return None if iteration.found_inf else optimizer.step(*args, **kwargs)

    def update(self, new_scale=None) -> None:
        """Set the scale for the next iteration: ``new_scale`` if given, else back off after an
        inf/NaN and grow after ``growth_interval`` clean steps."""
        if not self._enabled:
            return
        if new_scale is not None:
            self._scale = self._scale_from_argument(new_scale)
        elif not self._iterations:
            raise RuntimeError("No inf checks were recorded prior to update.")
        elif any(iteration.found_inf for iteration in self._iterations.values()):
            self._scale *= self._backoff_factor
            self._growth_tracker = 0
        else:
            self._growth_tracker += 1
            if self._growth_tracker == self._growth_interval:
                self._scale *= self._growth_factor
                self._growth_tracker = 0
        self._iterations = {}

    @staticmethod
    def _scale_from_argument(new_scale) -> float:
        if isinstance(new_scale, Tensor):
            if new_scale.numel() != 1:
                raise ValueError("new_scale should be a float or a 1-element tensor")
            return float(new_scale.item())
        return float(new_scale)

    def get_scale(self) -> float:
        """The current scale; 1.0 when disabled."""
        return self._scale if self._enabled else 1.0

    def get_growth_factor(self) -> float:
        """The factor the scale grows by after ``growth_interval`` clean steps."""
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        """Change the growth factor."""
        self._growth_factor = float(new_factor)

    def get_backoff_factor(self) -> float:
        """The factor the scale shrinks by after a step with inf or NaN."""
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        """Change the backoff factor."""
        self._backoff_factor = float(new_factor)

    def get_growth_interval(self) -> int:
        """Clean steps in a row before the scale grows."""
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        """Change the growth interval."""
        self._growth_interval = int(new_interval)

    def state_dict(self) -> dict[str, Any]:
        """PyTorch's keys and values; {} when disabled, as PyTorch."""
        if not self._enabled:
            return {}
        values = (self._scale, self._growth_factor, self._backoff_factor, self._growth_interval,
                  self._growth_tracker)
        return dict(zip(_STATE_FIELDS, values))

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what ``state_dict()`` saved (also from PyTorch's GradScaler)."""
        if not self._enabled:
            return
        if not state_dict:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        restored = {key: read(state_dict[key]) for key, read in _STATE_FIELDS.items()}
        self._init_scale = self._scale = restored["scale"]
        self._growth_factor = restored["growth_factor"]
        self._backoff_factor = restored["backoff_factor"]
        self._growth_interval = restored["growth_interval"]
        self._growth_tracker = restored["_growth_tracker"]

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_iterations"] = {}  # ids of live optimizers mean nothing in another process
        return state
