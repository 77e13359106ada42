"""Which test items the suite has for a device: every op x dtype, gradients, errors, and the
semantic checks, each marked required, declared or not supported.

Items on the required dtypes (float32, int64, bool) and every semantic item are *required*: a
backend cannot opt out of them. Items on an optional dtype the backend declares are *declared*
(they must pass too); items on an optional dtype it does not declare are reported as *not
supported*, never silently dropped.
"""
from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from typing import Any

from ..backends.api import REQUIRED_DTYPES
from .opdb import ALL_DTYPES, op_database, random_database

CATEGORIES = ("forward", "gradient", "errors", "promotion", "views", "copies", "memory", "random", "capabilities")


@dataclass(frozen=True)
class Case:
    category: str
    op: str
    dtype: str  # "-" where no dtype applies
    level: str  # required | declared | not supported
    payload: Any = field(default=None, compare=False, hash=False)
    reason: str = ""

    @property
    def id(self) -> str:
        return f"{self.op}-{self.dtype}".replace(" ", "_")


def dtype_level(dtype: str, declared) -> str:
    if dtype in REQUIRED_DTYPES or dtype == "-":
        return "required"
    return "declared" if dtype in declared else "not supported"


def op_selected(name: str, pattern: str | None) -> bool:
    if not pattern:
        return True
    return any(fnmatch.fnmatchcase(name, p) or re.fullmatch(p, name) for p in pattern.split(","))


def _safe_regex(pattern: str) -> str:
    try:
        re.compile(pattern)
        return pattern
    except re.error:
        return re.escape(pattern)


def forward_cases(declared, pattern=None, autocast_declared=frozenset()) -> list[Case]:
    cases = []
    for entry in op_database().values():
        if not op_selected(entry.name, pattern):
            continue
        for dtype in ALL_DTYPES:
            if dtype not in entry.dtypes:
                continue
            if entry.needs_autocast:
                # An autocast item's dtype is declared by Backend.autocast_dtypes, not Backend.dtypes.
                ok = dtype in autocast_declared and dtype in declared
                cases.append(Case("forward", entry.name, dtype, "declared" if ok else "not supported", entry,
                                  "" if ok else f"not supported: the backend does not declare {dtype} for autocast"))
                continue
            level = dtype_level(dtype, declared)
            cases.append(Case("forward", entry.name, dtype, level, entry,
                              f"not supported: the backend does not declare {dtype}" if level == "not supported" else ""))
    return cases


def gradient_cases(declared, pattern=None) -> list[Case]:
    dtype = "float64" if "float64" in declared else "float32"
    return [Case("gradient", e.name, dtype, "required", e) for e in op_database().values()
            if e.differentiable and e.grad_samples and op_selected(e.name, pattern)]


def error_cases(declared, pattern=None) -> list[Case]:
    cases = []
    for entry in op_database().values():
        if op_selected(entry.name, pattern):
            for err in entry.errors:
                cases.append(Case("errors", f"{entry.name}: {err.name}", "-", "required", (entry, err)))
    return cases


def random_cases(declared, pattern=None) -> list[Case]:
    cases = []
    for entry in random_database():
        if not op_selected(entry.name, pattern):
            continue
        for dtype in entry.dtypes:
            level = dtype_level(dtype, declared)
            cases.append(Case("random", entry.name, dtype, level, entry,
                              f"not supported: the backend does not declare {dtype}" if level == "not supported" else ""))
    return cases


def dtype_cases(declared) -> list[Case]:
    out = []
    for dtype in ALL_DTYPES:
        level = dtype_level(dtype, declared)
        out.append(Case("capabilities", "dtype support", dtype, level, dtype,
                        f"not supported: the backend does not declare {dtype}" if level == "not supported" else ""))
    return out
