"""Sorting and selection: sort (NaN last, stable ties), argsort, topk, kthvalue, unique."""
from __future__ import annotations

import numpy as np

from ._core import FLOAT_DTYPES, LARGE, NUMERIC_DTYPES, Arg, OpEntry, Sample


def _sort_ref(x, dim=-1, descending=False, stable=True):
    if x.ndim == 0:
        return x, np.zeros((), dtype=np.int64)
    # Two stable passes: by value, then by NaN-ness, so NaN is the largest value (last
    # ascending, first descending) and equal values keep their input order.
    nan = np.isnan(x)
    key = np.where(nan, 0.0, -x if descending else x)
    order = np.argsort(key, axis=dim, kind="stable")
    flag = np.take_along_axis(~nan if descending else nan, order, axis=dim).astype(np.int8)
    order = np.take_along_axis(order, np.argsort(flag, axis=dim, kind="stable"), axis=dim)
    return np.take_along_axis(x, order, axis=dim), order


def _sort_samples(dtype):
    yield Sample((Arg((4, 6), step=0.5),), {"stable": True}, name="ties, stable")
    yield Sample((Arg((4, 6), step=0.5),), {"dim": 0, "descending": True, "stable": True}, name="dim=0 descending")
    yield Sample((Arg((5, 4), step=0.5, layout="transposed"),), {"stable": True}, name="transposed")
    yield Sample((Arg(()),), name="0-d")
    yield Sample((Arg((0, 3)),), {"stable": True}, name="empty")
    if dtype in FLOAT_DTYPES:
        values = [[1.0, np.nan, -2.0, np.inf, np.nan, -np.inf]]
        yield Sample((Arg((1, 6), values=values),), {"stable": True}, name="NaN and inf")
        yield Sample((Arg((1, 6), values=values),), {"descending": True, "stable": True}, name="NaN and inf, descending")
    if dtype in ("float32", "int64"):
        yield Sample((Arg((LARGE,)),), {"stable": True}, name="large", large=True)


def _distinct(shape, layout="contiguous"):
    n = int(np.prod(shape))
    values = np.random.default_rng(n).permutation(n).reshape(shape) - n // 2
    return Arg(shape, values=values.tolist(), layout=layout)


def _topk_ref(x, k, dim=-1, largest=True):
    order = np.argsort(-x if largest else x, axis=dim, kind="stable")
    idx = np.take(order, range(k), axis=dim)
    return np.take_along_axis(x, idx, axis=dim), idx


def _kth_ref(x, k, dim=-1):
    order = np.argsort(x, axis=dim, kind="stable")
    idx = np.take(order, [k - 1], axis=dim)
    return np.take_along_axis(x, idx, axis=dim).squeeze(dim), idx.squeeze(dim)


def _unique_consecutive_ref(x):
    return x[np.concatenate([[True], x[1:] != x[:-1]])] if x.size else x


_SORT_DTYPES = NUMERIC_DTYPES + ("bool",)
_DISTINCT_DTYPES = ("float32", "float64", "int64", "int16", "int32")

ENTRIES = [
    OpEntry("sort", "sorting", _sort_ref, _sort_samples, dtypes=_SORT_DTYPES, method="sort", exact=True,
            primitive="sort", out_dtype=lambda d: (d, "int64"),
            grad_samples=lambda: iter([Sample((Arg((2, 4)),), name="rows")])),
    OpEntry("argsort", "sorting", lambda x, **kw: _sort_ref(x, **kw)[1],
            lambda dtype: iter([Sample((Arg((4, 6), step=0.5),), {"stable": True}, name="ties, stable")]),
            dtypes=_SORT_DTYPES, method="argsort", exact=True, differentiable=False, out_dtype="int64"),
    OpEntry("msort", "sorting", lambda x: np.sort(x, axis=0), lambda dtype: iter([Sample((Arg((5, 3)),), name="columns")]),
            dtypes=_SORT_DTYPES, method="msort", exact=True, differentiable=False),
    OpEntry("topk", "sorting", _topk_ref,
            lambda dtype: iter([Sample((_distinct((4, 6)), 3), name="k=3"),
                                Sample((_distinct((6, 4), "transposed"), 2), {"dim": 0, "largest": False}, name="smallest, dim=0")]),
            dtypes=_DISTINCT_DTYPES, method="topk", exact=True, out_dtype=lambda d: (d, "int64"),
            grad_samples=lambda: iter([Sample((Arg((2, 5)), 2), name="k=2")])),
    OpEntry("kthvalue", "sorting", _kth_ref, lambda dtype: iter([Sample((_distinct((4, 6)), 2), name="k=2")]),
            dtypes=_DISTINCT_DTYPES, method="kthvalue", exact=True, out_dtype=lambda d: (d, "int64"), differentiable=False),
    OpEntry("unique", "sorting", lambda x: np.unique(x), lambda dtype: iter([Sample((Arg((5, 6), -3, 3, step=1.0),), name="repeats")]),
            dtypes=_SORT_DTYPES, method="unique", exact=True, differentiable=False),
    OpEntry("unique_consecutive", "sorting", _unique_consecutive_ref,
            lambda dtype: iter([Sample((Arg((24,), -1, 1, step=1.0),), name="runs")]),
            dtypes=_SORT_DTYPES, method="unique_consecutive", exact=True, differentiable=False),
]
