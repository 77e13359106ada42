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

import warnings
from typing import Any

from ..frontend.autograd import no_grad
from ..frontend.tensor import Tensor

__all__ = ["GradScaler", "OptState"]


class OptState:
    """Where an optimizer is in the current iteration."""

    READY = 0
    UNSCALED = 1
    STEPPED = 2


class GradScaler:
    def __init__(self, device: str = "cuda", init_scale: float = 2.0**16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = str(device)
        self._enabled = bool(enabled)
        if self._enabled and self._device.partition(":")[0] == "cuda":
            from .. import cuda

            if not cuda.is_available():
                warnings.warn(f"torch.cuda.amp.GradScaler is enabled, but CUDA is not available "
                              f"({cuda.unavailable_reason()}). Disabling.", UserWarning, stacklevel=2)
                self._enabled = False
        if growth_factor <= 1.0:
            raise ValueError("The growth factor must be > 1.0.")
        if backoff_factor >= 1.0:
            raise ValueError("The backoff factor must be < 1.0.")
        if not isinstance(growth_interval, int) or growth_interval <= 0:
            raise ValueError("growth_interval must be a positive integer")
        self._init_scale = float(init_scale)
        self._scale = float(init_scale)
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = growth_interval
        self._growth_tracker = 0
        # id(optimizer) -> {"stage": OptState, "found_inf": bool}; reset by update().
        self._per_optimizer: dict[int, dict[str, Any]] = {}

    # --- scaling -----------------------------------------------------------------------------
    def is_enabled(self) -> bool:
        return self._enabled

    def scale(self, outputs):
        """``outputs * scale`` (a tensor, or tensors nested in lists, tuples and dicts)."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            return outputs * self._scale
        if isinstance(outputs, (list, tuple)):
            scaled = [self.scale(o) for o in outputs]
            if hasattr(outputs, "_fields"):  # a namedtuple takes its fields as arguments
                return type(outputs)(*scaled)
            return tuple(scaled) if isinstance(outputs, tuple) else scaled
        if isinstance(outputs, dict):
            return {k: self.scale(v) for k, v in outputs.items()}
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    def _state(self, optimizer) -> dict[str, Any]:
        return self._per_optimizer.setdefault(id(optimizer), {"stage": OptState.READY, "found_inf": False})

    def unscale_(self, optimizer) -> None:
        """Divide ``optimizer``'s gradients by the scale (in place) and note whether any is inf/NaN."""
        if not self._enabled:
            return
        state = self._state(optimizer)
        if state["stage"] == OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] == OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv_scale = 1.0 / self._scale
        found_inf = False
        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    if p.grad.dtype.name == "float16":
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    p.grad.mul_(inv_scale)
                    if not found_inf and not p.grad.isfinite().all().item():
                        found_inf = True
        state["found_inf"] = found_inf
        state["stage"] = OptState.UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """``optimizer.step()`` unless the (unscaled) gradients hold inf or NaN; returns its result."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        state = self._state(optimizer)
        if state["stage"] == OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] == OptState.READY:
            self.unscale_(optimizer)
        result = None if state["found_inf"] else optimizer.step(*args, **kwargs)
        state["stage"] = OptState.STEPPED
        return result

    def update(self, new_scale=None) -> None:
        """Set the scale for the next iteration: ``new_scale`` if given, else back off after an
        inf/NaN and grow after ``growth_interval`` clean steps."""
        if not self._enabled:
            return
        if new_scale is not None:
            if isinstance(new_scale, Tensor):
                if new_scale.numel() != 1:
                    raise ValueError("new_scale should be a float or a 1-element tensor")
                new_scale = new_scale.item()
            self._scale = float(new_scale)
        else:
            if not self._per_optimizer:
                raise RuntimeError("No inf checks were recorded prior to update.")
            if any(s["found_inf"] for s in self._per_optimizer.values()):
                self._scale *= self._backoff_factor
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
                if self._growth_tracker == self._growth_interval:
                    self._scale *= self._growth_factor
                    self._growth_tracker = 0
        self._per_optimizer = {}

    # --- hyperparameters -----------------------------------------------------------------------
    def get_scale(self) -> float:
        return self._scale if self._enabled else 1.0

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = float(new_factor)

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = float(new_factor)

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = int(new_interval)

    # --- state dicts ---------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """PyTorch's keys and values; {} when disabled, as PyTorch."""
        if not self._enabled:
            return {}
        return {"scale": self._scale, "growth_factor": self._growth_factor, "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval, "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        self._init_scale = self._scale = float(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_per_optimizer"] = {}  # ids of live optimizers mean nothing in another process
        return state
