"""``autocast``: PyTorch's mixed-precision context, kept as state only.

tensorplug's dispatcher has no autocast layer, so inside ``autocast`` ops run in the dtypes of
their inputs (float32 stays float32): a program written for autocast runs and gives float32
results. The context still records what PyTorch would (``is_autocast_enabled``,
``get_autocast_dtype``), validates its arguments as PyTorch does, and disables itself with
PyTorch's warnings (CUDA missing, a dtype CPU autocast does not support). docs/deviations.md
lists this.

Which dtypes a device type may autocast to is the backend's declaration
(``Backend.autocast_dtypes``, docs/backend-contract.md): the CPU declares PyTorch's bfloat16 and
float16. Any other device type whose backend did not declare the dtype asked for (or declares
none) is refused with a RuntimeError naming the device type and what it declares, where PyTorch
would refuse an unsupported device type.
"""
from __future__ import annotations

import functools
import warnings

from ..backends import _registry
from ..backends._probe import known_device_types, probe
from ..frontend import dtypes as _dt

__all__ = ["autocast", "is_autocast_available", "is_autocast_enabled", "get_autocast_dtype", "set_autocast_dtype",
           "custom_fwd", "custom_bwd"]

#: PyTorch's default autocast dtypes; other device types default to float16.
_DEFAULT_DTYPES = {"cpu": _dt.bfloat16, "cuda": _dt.float16, "mps": _dt.float16, "xpu": _dt.bfloat16}
_enabled: dict[str, bool] = {}
_dtypes: dict[str, _dt.dtype] = {}


def _check_device_type(device_type) -> str:
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    return device_type


def _declared(device_type: str) -> frozenset[str] | None:
    """The backend's ``autocast_dtypes`` (loading its plugin module, not the device), or None
    when no installed plugin provides the device type."""
    backend = _registry.ready_backends().get(device_type) or probe(device_type).backend
    return None if backend is None else frozenset(backend.autocast_dtypes)


def is_autocast_available(device_type: str) -> bool:
    """Whether ``autocast`` accepts ``device_type``: PyTorch's own device types always; another
    when its backend declares autocast dtypes."""
    if not isinstance(device_type, str):
        return False
    if device_type in _DEFAULT_DTYPES:
        return True
    return bool(_declared(device_type))


def is_autocast_enabled(device_type: str = "cuda") -> bool:
    return _enabled.get(_check_device_type(device_type), False)


def get_autocast_dtype(device_type: str) -> _dt.dtype:
    device_type = _check_device_type(device_type)
    found = _dtypes.get(device_type) or _DEFAULT_DTYPES.get(device_type)
    if found is None:
        # A plugin's default: float16 unless it declares only bfloat16.
        declared = _declared(device_type) or frozenset()
        found = _dt.bfloat16 if declared == {"bfloat16"} else _dt.float16
    return found


def _check_declared(device_type: str, dtype: _dt.dtype) -> None:
    """Refuse a device type whose backend did not declare ``dtype`` for autocast."""
    declared = _declared(device_type)
    if declared is None:
        installed = ", ".join(known_device_types())
        raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}': no installed backend "
                           f"provides it (installed: {installed})")
    if not declared:
        raise RuntimeError(f"autocast: device type '{device_type}' does not support autocast: its backend declares no "
                           f"autocast dtypes (Backend.autocast_dtypes is empty)")
    if dtype.name not in declared:
        raise RuntimeError(f"autocast: device type '{device_type}' does not compute {dtype.name} fast; its backend "
                           f"declares autocast dtypes {sorted(declared)}")


def set_autocast_dtype(device_type: str, dtype: _dt.dtype) -> None:
    _dtypes[_check_device_type(device_type)] = dtype


class autocast:
    """``with tp.autocast("cpu", dtype=tp.bfloat16):`` (also a decorator). Ops are not cast."""

    def __init__(self, device_type: str, dtype: _dt.dtype | None = None, enabled: bool = True,
                 cache_enabled: bool | None = None) -> None:
        self.device = _check_device_type(device_type)
        self.fast_dtype = get_autocast_dtype(self.device) if dtype is None else dtype
        if not isinstance(self.fast_dtype, _dt.dtype):
            raise ValueError(f"Expected `dtype` to be a tensorplug dtype, got: `{type(self.fast_dtype)}`")
        self._enabled = bool(enabled)
        self._cache_enabled = cache_enabled
        if self._enabled and self.device.partition(":")[0] == "cuda":
            from .. import cuda

            if not cuda.is_available():
                warnings.warn("User provided device_type of 'cuda', but CUDA is not available. Disabling",
                              UserWarning, stacklevel=2)
                self._enabled = False
        if self._enabled and self.device == "cpu" and self.fast_dtype.name not in _declared("cpu"):
            warnings.warn("In CPU autocast, but the target dtype is not supported. Disabling autocast.\n"
                          "CPU Autocast only supports dtype of bfloat16, float16 currently.", UserWarning, stacklevel=2)
            self._enabled = False
        if self._enabled and self.device in _DEFAULT_DTYPES and _declared(self.device) is None:
            # PyTorch's own device types without a backend here: PyTorch's "not available" path.
            warnings.warn(f"User provided device_type of '{self.device}', but {self.device} is not available. Disabling",
                          UserWarning, stacklevel=2)
            self._enabled = False
        if self._enabled and self.device != "cpu":
            _check_declared(self.device, self.fast_dtype)
        self._saved: list[tuple[bool, _dt.dtype | None]] = []

    def __enter__(self):
        self._saved.append((_enabled.get(self.device, False), _dtypes.get(self.device)))
        _enabled[self.device] = self._enabled
        _dtypes[self.device] = self.fast_dtype
        return self

    def __exit__(self, *exc_info):
        enabled, dtype = self._saved.pop()
        _enabled[self.device] = enabled
        if dtype is None:
            _dtypes.pop(self.device, None)
        else:
            _dtypes[self.device] = dtype
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def decorated(*args, **kwargs):
            with autocast(self.device, self.fast_dtype, self._enabled, self._cache_enabled):
                return func(*args, **kwargs)

        return decorated


def custom_fwd(fwd=None, *, device_type: str = "cuda", cast_inputs=None):
    """Decorator for a custom autograd Function's forward; inputs are never cast (no autocast casts)."""
    _check_device_type(device_type)
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)
    return fwd


def custom_bwd(bwd=None, *, device_type: str = "cuda"):
    """Decorator for a custom autograd Function's backward (nothing to do: no autocast state to restore)."""
    _check_device_type(device_type)
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)
    return bwd
