"""``__array_namespace_info__()``: what this namespace can do, on which devices, with which dtypes."""
from __future__ import annotations

from ..frontend.device import device as _device, get_default_device
from . import _dtypes as d

__all__ = ["__array_namespace_info__"]


class Info:
    """The inspection object the standard describes (one per call, stateless)."""

    __module__ = "tensorplug.array_api"

    def capabilities(self) -> dict:
        # Boolean masks and nonzero/unique give shapes that depend on the data: both work on
        # every backend (results are computed, then sized). 64 matches the dimension limit of the
        # NumPy arrays that the CPU fallback and DLPack exchange with.
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}

    def default_device(self) -> _device:
        return get_default_device()

    def devices(self) -> list:
        """Every device whose backend is usable now, the CPU first."""
        from ..backends import status

        found = [_device("cpu")]
        for row in status():
            if row.device_type != "cpu" and row.state in ("ready", "loaded"):
                found.append(_device(row.device_type, 0))
        return found

    def default_dtypes(self, *, device=None) -> dict:
        return {"real floating": d.default_float(), "complex floating": d.default_complex(),
                "integral": d.DEFAULT_INT, "indexing": d.DEFAULT_INDEX}

    def dtypes(self, *, device=None, kind=None) -> dict:
        """The standard's dtypes that tensorplug has, by name, optionally of one ``kind``
        (a kind name or a tuple of them, as ``isdtype`` takes)."""
        return {dt.name: dt for dt in d.STANDARD_DTYPES if kind is None or d.isdtype(dt, kind)}


def __array_namespace_info__() -> Info:
    return Info()
