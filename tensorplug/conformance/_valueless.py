"""Device types the suite refuses outright: those whose tensors hold no values (``meta``).

Every item of the suite compares the values an op computes with NumPy's; a device without values
would fail each one for a reason that says nothing about its kernels, so both the command line
and the pytest plugin stop before running anything, with this one explanation.
"""
from __future__ import annotations

from ..backends._probe import VALUELESS_DEVICE_TYPES

__all__ = ["refusal_without_values"]


def refusal_without_values(device: str) -> str | None:
    """Why the suite cannot test ``device`` when its tensors hold no values, else None."""
    if device not in VALUELESS_DEVICE_TYPES:
        return None
    return (f"device {device!r} has no values to check: its tensors carry only shapes, dtypes and strides, and "
            f"the conformance suite compares the values each op computes (the meta device's shapes are tested "
            f"by tensorplug's own tests/meta)")
