"""Check mode for kernels that return tensors (fused composite ops): right shape, dtype, device.

Under ``TENSORPLUG_CHECK_KERNELS=1`` (or ``tp.backends.set_check_kernels(True)``) the registry
wraps each backend kernel; primitives are checked there, and kernels that return their result
are checked here against the op's own decomposition, run on CPU copies of the arguments (so that
in-place side effects, such as batch_norm's running statistics, touch only the copies). A
mismatch raises RuntimeError naming the plugin, device, op, what came back and what was expected.
A device whose tensors hold no values (``meta``) has none to copy to the CPU, so its returning
kernels are left unchecked (its primitives are still checked by the registry).
"""
from __future__ import annotations

from ..backends import _registry
from ..backends._probe import VALUELESS_DEVICE_TYPES
from .autograd.grad_mode import no_grad
from .fallback import _to_cpu
from .tensor import Tensor, resolve_device

__all__ = ["checked_returning_kernel"]


def checked_returning_kernel(device_type: str, origin: str, op, kernel):
    """``kernel`` wrapped so that what it returns is compared with the decomposition's result."""
    if device_type in VALUELESS_DEVICE_TYPES:
        return kernel

    def checked(*args, **kwargs):
        result = kernel(*args, **kwargs)
        cpu = resolve_device("cpu")
        with no_grad():
            expected = op.decomposition(*_to_cpu(args, cpu), **{k: _to_cpu(v, cpu) for k, v in kwargs.items()})
        device = next((a._device for a in args if isinstance(a, Tensor)), None)
        problem = _mismatch(result, expected, device)
        if problem:
            raise RuntimeError(f"check mode: {origin}: the {device_type!r} kernel for {op.name!r} returned {problem}")
        return result

    checked.__wrapped__ = kernel
    return checked


def _mismatch(got, want, device, where: str = "") -> str:
    if isinstance(want, Tensor):
        if not isinstance(got, Tensor):
            return f"{type(got).__name__}{where}, expected a tensor of shape {list(want.shape)}, dtype {want.dtype.name}"
        if got.shape != want.shape or got.dtype is not want.dtype:
            return (f"shape {list(got.shape)}, dtype {got.dtype.name}{where}; expected shape {list(want.shape)}, "
                    f"dtype {want.dtype.name} (what the op's decomposition gives)")
        if device is not None and got.device != device:
            return f"a tensor on {got.device}{where}, expected one on {device}"
        return ""
    if isinstance(want, (tuple, list)):
        if not isinstance(got, (tuple, list)) or len(got) != len(want):
            return f"{type(got).__name__}{where}, expected a {type(want).__name__} of {len(want)} results"
        for i, (g, w) in enumerate(zip(got, want)):
            problem = _mismatch(g, w, device, f"{where} (result {i})")
            if problem:
                return problem
    return ""


_registry.set_returned_checker(checked_returning_kernel)
