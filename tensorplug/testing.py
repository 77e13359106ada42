"""``tp.testing.assert_close``: compare tensors (or nested containers of them) like PyTorch."""
from __future__ import annotations

import math

import numpy as np

from .frontend import dtypes as _dt
from .frontend.tensor import Tensor

__all__ = ["assert_close"]

# PyTorch's default tolerances (rtol, atol) per dtype; integers and bool compare exactly.
_TOLERANCES = {
    _dt.float16: (1e-3, 1e-5),
    _dt.bfloat16: (1.6e-2, 1e-5),
    _dt.float32: (1.3e-6, 1e-5),
    _dt.float64: (1e-7, 1e-7),
}


def _values(x) -> np.ndarray:
    if isinstance(x, Tensor):
        t = x.detach()
        if t._dtype in (_dt.bfloat16, _dt.float16):
            t = t.float()
        return np.asarray(t.cpu().numpy(), dtype=np.float64 if t._dtype.is_floating_point else None)
    return np.asarray(x)


def assert_close(actual, expected, *, rtol=None, atol=None, equal_nan=False, check_device=True, check_dtype=True, msg=None):
    """Raise AssertionError unless ``actual`` and ``expected`` are close elementwise:
    ``|actual - expected| <= atol + rtol * |expected|``, with per-dtype defaults as in PyTorch."""
    if isinstance(actual, (list, tuple)) and isinstance(expected, (list, tuple)):
        if len(actual) != len(expected):
            raise AssertionError(msg or f"The length of the sequences mismatch: {len(actual)} != {len(expected)}")
        for a, e in zip(actual, expected):
            assert_close(a, e, rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=check_device, check_dtype=check_dtype, msg=msg)
        return
    if isinstance(actual, dict) and isinstance(expected, dict):
        if set(actual) != set(expected):
            raise AssertionError(msg or f"The keys of the mappings do not match: {sorted(actual)} != {sorted(expected)}")
        for key in actual:
            assert_close(actual[key], expected[key], rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=check_device, check_dtype=check_dtype, msg=msg)
        return
    if isinstance(actual, Tensor) and isinstance(expected, Tensor):
        if actual.shape != expected.shape:
            raise AssertionError(msg or f"The values for attribute 'shape' do not match: {list(actual.shape)} != {list(expected.shape)}.")
        if check_dtype and actual.dtype is not expected.dtype:
            raise AssertionError(msg or f"The values for attribute 'dtype' do not match: {actual.dtype} != {expected.dtype}.")
        if check_device and actual.device != expected.device:
            raise AssertionError(msg or f"The values for attribute 'device' do not match: {actual.device} != {expected.device}.")
        if actual.is_meta and expected.is_meta:
            return  # no values: the attributes above are all two meta tensors have to compare, as in PyTorch
    if (rtol is None) != (atol is None):
        raise ValueError("Both 'rtol' and 'atol' must be either specified or omitted")
    if rtol is None:
        dtype = actual.dtype if isinstance(actual, Tensor) else None
        rtol, atol = _TOLERANCES.get(dtype, (0.0, 0.0) if isinstance(actual, Tensor) else (1.3e-6, 1e-5))
    a, e = _values(actual), _values(expected)
    if a.shape != e.shape:
        raise AssertionError(msg or f"Shapes do not match: {list(a.shape)} != {list(e.shape)}")
    a64, e64 = a.astype(np.float64), e.astype(np.float64)
    close = np.isclose(a64, e64, rtol=rtol, atol=atol, equal_nan=equal_nan)
    if not close.all():
        # A NaN where none was expected counts as an infinite difference.
        diff = np.nan_to_num(np.where(close, 0.0, np.abs(a64 - e64)), nan=math.inf)
        rel = diff / np.maximum(np.abs(np.nan_to_num(e64)), np.finfo(np.float64).tiny)
        worst = np.unravel_index(np.argmax(diff), diff.shape) if diff.ndim else ()
        mismatched = int((~close).sum())
        raise AssertionError(
            msg
            or f"Tensor-likes are not close!\n\nMismatched elements: {mismatched} / {close.size} "
            f"({100.0 * mismatched / close.size:.1f}%)\nGreatest absolute difference: {diff[worst]} at index {tuple(int(i) for i in worst)} "
            f"(up to {atol} allowed)\nGreatest relative difference: {rel.max()} (up to {rtol} allowed)"
        )
