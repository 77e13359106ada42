"""The op database: one :class:`OpEntry` per public op, grouped by family.

>>> from tensorplug.conformance.opdb import op_database
>>> entry = op_database()["add"]
>>> entry.dtypes[:3], entry.differentiable
(('float32', 'int64', 'bool'), True)
"""
from __future__ import annotations

from . import (
    autocast, complex, conversions, elementwise, foreach, indexing, linalg, matrices, nn, random, reductions, shape, sorting, spectral, statistics,
)
from ._core import ALL_DTYPES, Arg, ErrorCase, OpEntry, Sample

__all__ = ["op_database", "random_database", "OpEntry", "Sample", "Arg", "ErrorCase", "ALL_DTYPES", "FAMILY_MODULES"]

FAMILY_MODULES = (elementwise, reductions, linalg, indexing, shape, sorting, nn, conversions, statistics, matrices,
                  spectral, complex, foreach, autocast)


def op_database() -> dict[str, OpEntry]:
    """Every entry by name, in family order."""
    entries: dict[str, OpEntry] = {}
    for module in FAMILY_MODULES:
        for entry in module.ENTRIES:
            if entry.name in entries:
                raise ValueError(f"duplicate op database entry {entry.name!r}")
            entries[entry.name] = entry
    return entries


def random_database():
    return list(random.ENTRIES)
