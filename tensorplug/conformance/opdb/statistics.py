"""Counting, searching and order statistics: quantile, nanquantile, histc, bincount,
searchsorted, bucketize, isclose. All composite (issue 13), so they pass wherever the
primitives below them (sort, gather, scatter, compare, reduce) do.
"""
from __future__ import annotations

import numpy as np

from ._core import FLOAT_DTYPES, NUMERIC_DTYPES, Arg, ErrorCase, OpEntry, Sample

_QUANTILE_DTYPES = ("float32", "float64")


def _tp():
    import tensorplug

    return tensorplug
_SEARCH_DTYPES = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8")


def _quantile_ref(x, q, dim=None, keepdim=False, interpolation="linear"):
    return np.quantile(x, q, axis=dim, keepdims=keepdim, method=interpolation)


def _nanquantile_ref(x, q, dim=None, keepdim=False, interpolation="linear"):
    return np.nanquantile(x, q, axis=dim, keepdims=keepdim, method=interpolation)


def _quantile_samples(dtype):
    # q = 0.37 puts no rank exactly half-way between two order statistics, where rounding
    # conventions for "nearest" differ.
    yield Sample((Arg((4, 6)), 0.37), name="all elements")
    yield Sample((Arg((4, 6)), 0.37), {"dim": 1}, name="dim=1")
    yield Sample((Arg((5, 4), layout="transposed"), 0.8), {"dim": 0, "keepdim": True}, name="transposed, keepdim")
    for mode in ("lower", "higher", "midpoint", "nearest"):
        yield Sample((Arg((3, 7)), 0.37), {"dim": -1, "interpolation": mode}, name=mode)


def _nanquantile_samples(dtype):
    values = [[1.0, np.nan, -2.0, 0.5, 3.0], [np.nan, np.nan, 1.5, -1.0, 2.0]]
    yield Sample((Arg((2, 5), values=values), 0.37), {"dim": 1}, name="NaN ignored")
    yield Sample((Arg((4, 6)), 0.61), name="no NaN")


def _search_ref(boundaries, values, right=False):
    return np.searchsorted(boundaries, values, side="right" if right else "left")


_BOUNDARIES = Arg((6,), values=[-2.0, -1.0, 0.0, 0.0, 1.0, 3.0], grad=False)


def _search_samples(dtype):
    yield Sample((_BOUNDARIES, Arg((3, 4), -3, 4, step=0.5)), name="ties, left")
    yield Sample((_BOUNDARIES, Arg((3, 4), -3, 4, step=0.5)), {"right": True}, name="ties, right")
    yield Sample((_BOUNDARIES, Arg((0,))), name="no values")


def _bucketize_samples(dtype):
    yield Sample((Arg((3, 4), -3, 4, step=0.5), _BOUNDARIES), name="ties")
    yield Sample((Arg((3, 4), -3, 4, step=0.5), _BOUNDARIES), {"right": True}, name="ties, right")


def _histc_ref(x, bins=100, min=0, max=0):
    inside = x[(x >= min) & (x <= max)]
    return np.histogram(inside, bins=bins, range=(min, max))[0].astype(np.float64)


def _isclose_samples(dtype):
    # Values on a coarse grid so that many pairs are equal and the rest clearly apart.
    yield Sample((Arg((4, 5), -1, 1, step=0.5), Arg((4, 5), -1, 1, step=0.5)), name="grid")
    yield Sample((Arg((4, 5), -1, 1, step=0.5), Arg((5,), -1, 1, step=0.5)), {"rtol": 0.6}, name="broadcast, rtol")
    if dtype in FLOAT_DTYPES:
        a = Arg((1, 4), values=[[np.nan, 1.0, np.inf, -np.inf]])
        b = Arg((1, 4), values=[[np.nan, 1.0, np.inf, np.inf]])
        yield Sample((a, b), name="NaN and inf")
        yield Sample((a, b), {"equal_nan": True}, name="equal_nan")


def _bincount_ref(x, minlength=0):
    return np.bincount(x.astype(np.int64), minlength=minlength)


ENTRIES = [
    OpEntry("quantile", "statistics", _quantile_ref, _quantile_samples, dtypes=_QUANTILE_DTYPES, method="quantile",
            grad_samples=lambda: iter([Sample((Arg((2, 5)), 0.37), {"dim": 1}, name="rows")]),
            errors=(ErrorCase(lambda d: _tp().quantile(_tp().ones(3, device=d), 1.5), RuntimeError,
                              r"q must be in the range \[0, 1\]", "q outside [0, 1]"),)),
    OpEntry("nanquantile", "statistics", _nanquantile_ref, _nanquantile_samples, dtypes=_QUANTILE_DTYPES,
            method="nanquantile", grad_samples=lambda: iter([Sample((Arg((2, 5)), 0.61), {"dim": 0}, name="columns")])),
    OpEntry("searchsorted", "statistics", _search_ref, _search_samples, dtypes=_SEARCH_DTYPES, out_dtype="int64",
            exact=True, differentiable=False),
    OpEntry("bucketize", "statistics", lambda x, b, right=False: _search_ref(b, x, right), _bucketize_samples,
            dtypes=_SEARCH_DTYPES, out_dtype="int64", exact=True, differentiable=False),
    OpEntry("bincount", "statistics", _bincount_ref,
            lambda dtype: iter([Sample((Arg((40,), 0, 6),), name="small integers"),
                                Sample((Arg((40,), 0, 6),), {"minlength": 10}, name="minlength")]),
            dtypes=("int64", "int32", "int16", "int8", "uint8"), method="bincount", out_dtype="int64", exact=True,
            differentiable=False),
    OpEntry("histc", "statistics", _histc_ref,
            lambda dtype: iter([Sample((Arg((60,)),), {"bins": 7, "min": -2, "max": 2}, name="range"),
                                Sample((Arg((60,)),), {"bins": 5, "min": -3, "max": 3}, name="every value")]),
            dtypes=("float32", "float64"), method="histc", differentiable=False),
    OpEntry("isclose", "statistics", np.isclose, _isclose_samples, dtypes=NUMERIC_DTYPES, method="isclose",
            out_dtype="bool", exact=True, differentiable=False),
]
