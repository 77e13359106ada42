"""``autocast``: PyTorch's mixed-precision context.

Inside ``with tp.autocast(device_type, dtype):`` ops on that device type run in the dtypes
PyTorch's autocast would choose: matrix products and convolutions in the lower-precision dtype,
losses and reductions in float32 (the Autocast dispatch key's kernels, amp/_casting.py). The
context validates its arguments as PyTorch does and disables itself with PyTorch's warnings (CUDA
missing, a dtype CPU autocast does not support). Its state is per thread (amp/_state.py).

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
from ..frontend.tensor import Tensor
from . import _state
from ._state import DEFAULT_DTYPES as _DEFAULT_DTYPES

__all__ = ["autocast", "is_autocast_available", "is_autocast_enabled", "get_autocast_dtype", "set_autocast_dtype",
           "set_autocast_enabled", "is_autocast_cache_enabled", "set_autocast_cache_enabled", "clear_autocast_cache",
           "custom_fwd", "custom_bwd"]


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
    return _state.current.enabled.get(_check_device_type(device_type), False)


def set_autocast_enabled(device_type: str, enabled: bool) -> None:
    """Turn autocast on or off for ``device_type`` in this thread without a context (PyTorch's
    ``torch.set_autocast_enabled``; the ``autocast`` context is the usual way)."""
    _state.current.enabled[_check_device_type(device_type)] = bool(enabled)
    _state.sync_key()


def is_autocast_cache_enabled() -> bool:
    return _state.current.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    _state.current.cache_enabled = bool(enabled)


def clear_autocast_cache() -> None:
    """Forget the weights cast in this thread's autocast region (the outermost exit does this)."""
    _state.current.cache.clear()


def get_autocast_dtype(device_type: str) -> _dt.dtype:
    device_type = _check_device_type(device_type)
    found = _state.current.dtypes.get(device_type) or _DEFAULT_DTYPES.get(device_type)
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
    _state.current.dtypes[_check_device_type(device_type)] = dtype


class autocast:
    """``with tp.autocast("cpu", dtype=tp.bfloat16):`` (also a decorator): ops on that device type
    run in the dtypes PyTorch's autocast chooses (amp/_casting.py)."""

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
        self._entered: list[_state.Snapshot] = []

    def __enter__(self):
        current = _state.current
        enabled = dict(current.enabled, **{self.device: self._enabled})
        dtypes = dict(current.dtypes, **{self.device: self.fast_dtype})
        cache = current.cache_enabled if self._cache_enabled is None else bool(self._cache_enabled)
        snapshot = _state.Snapshot(enabled, dtypes, cache)
        self._entered.append(snapshot)
        snapshot.__enter__()
        return self

    def __exit__(self, *exc_info):
        return self._entered.pop().__exit__(*exc_info)

    def __call__(self, func):
        @functools.wraps(func)
        def decorated(*args, **kwargs):
            with autocast(self.device, self.fast_dtype, self._enabled, self._cache_enabled):
                return func(*args, **kwargs)

        return decorated


def _cast_floats(value, device_type: str, dtype: _dt.dtype):
    """``value`` with its floating tensors on ``device_type`` (also inside lists, tuples and
    dicts) cast to ``dtype``; float64 tensors are left alone, as PyTorch's custom_fwd does."""
    if isinstance(value, Tensor):
        eligible = value.is_floating_point() and value._device.type == device_type and value._dtype is not _dt.float64
        return value.to(dtype) if eligible else value
    if isinstance(value, dict):
        return {k: _cast_floats(v, device_type, dtype) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_floats(v, device_type, dtype) for v in value)
    return value


def custom_fwd(fwd=None, *, device_type: str = "cuda", cast_inputs=None):
    """Decorator for a custom autograd Function's ``forward``. With ``cast_inputs`` and autocast
    enabled for ``device_type``, the floating inputs are cast to ``cast_inputs`` and the forward
    runs with autocast off; without it, the forward runs under the caller's autocast state.
    Either way ``custom_bwd`` runs the backward under the state the forward used."""
    _check_device_type(device_type)
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorated(ctx, *args, **kwargs):
        ctx._autocast_dtype = get_autocast_dtype(device_type)
        enabled = is_autocast_enabled(device_type)
        if cast_inputs is None or not enabled:
            ctx._fwd_used_autocast = enabled
            return fwd(ctx, *args, **kwargs)
        ctx._fwd_used_autocast = False
        with autocast(device_type, enabled=False):
            return fwd(ctx, *_cast_floats(args, device_type, cast_inputs), **_cast_floats(kwargs, device_type, cast_inputs))

    return decorated


def custom_bwd(bwd=None, *, device_type: str = "cuda"):
    """Decorator for a custom autograd Function's ``backward``: it runs under the autocast state
    its ``custom_fwd`` forward used (the engine otherwise runs backward without autocast)."""
    _check_device_type(device_type)
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorated(ctx, *args, **kwargs):
        used = getattr(ctx, "_fwd_used_autocast", False)
        enabled = dict(_state.current.enabled, **{device_type: used})
        dtypes = dict(_state.current.dtypes, **{device_type: getattr(ctx, "_autocast_dtype", get_autocast_dtype(device_type))})
        with _state.Snapshot(enabled, dtypes):
            return bwd(ctx, *args, **kwargs)

    return decorated
