"""Ops that build matrices or compare rows: diag, trace, kron, diff, cdist. All composite (issue
13); cdist carries an explicit derivative (a zero distance has a zero gradient).
"""
from __future__ import annotations

import math

import numpy as np

from ._core import NUMERIC_DTYPES, Arg, ErrorCase, OpEntry, Sample


def _tp():
    import tensorplug

    return tensorplug


def _diag_samples(dtype):
    yield Sample((Arg((4,)),), name="vector")
    yield Sample((Arg((4,)), 2), name="vector, above")
    yield Sample((Arg((3, 5)), -1), name="matrix, below")
    yield Sample((Arg((5, 3), layout="transposed"), 1), name="transposed matrix")
    yield Sample((Arg((0,)),), name="empty vector")


def _trace_dtype(dtype: str) -> str:
    return dtype if dtype in ("float32", "float64", "float16", "bfloat16") else "int64"


def _kron_samples(dtype):
    yield Sample((Arg((2, 3), -2, 2), Arg((3, 2), -2, 2)), name="matrices")
    yield Sample((Arg((3,), -2, 2), Arg((2, 2), -2, 2)), name="vector and matrix")
    yield Sample((Arg((2, 1, 2), -2, 2, layout="strided"), Arg((2,), -2, 2)), name="strided 3-d")


def _diff_samples(dtype):
    yield Sample((Arg((4, 5)),), name="last dim")
    yield Sample((Arg((4, 5)), 2, 0), name="second order, dim 0")
    yield Sample((Arg((4, 5), layout="transposed"), 1, -1), name="transposed")


def _cdist_ref(x1, x2, p=2.0, compute_mode=None):
    diff = np.abs(x1[..., :, None, :] - x2[..., None, :, :])
    if p == 0:
        return (diff != 0).sum(-1).astype(np.float64)
    if math.isinf(p):
        return diff.max(-1)
    return (diff ** p).sum(-1) ** (1 / p)


def _cdist_samples(dtype):
    for p in (2.0, 1.0, 0.0, 3.0, math.inf):
        yield Sample((Arg((5, 3)), Arg((4, 3))), {"p": p}, name=f"p={p:g}")
    yield Sample((Arg((2, 5, 3)), Arg((4, 3))), name="batch broadcast")
    yield Sample((Arg((30, 3)), Arg((4, 3))), name="matrix product (more than 25 rows)")


def _cdist_grad_samples():
    for p in (2.0, 1.0, 3.0):
        yield Sample((Arg((3, 2)), Arg((2, 2))), {"p": p}, name=f"p={p:g}")


ENTRIES = [
    OpEntry("diag", "matrices", np.diag, _diag_samples, dtypes=NUMERIC_DTYPES + ("bool",), method="diag", exact=True,
            grad_samples=lambda: iter([Sample((Arg((3,)), 1), name="vector"), Sample((Arg((3, 4)), -1), name="matrix")]),
            errors=(ErrorCase(lambda d: _tp().diag(_tp().ones(2, 2, 2, device=d)), RuntimeError, "Supports 1D or 2D tensors",
                              "3-d input"),)),
    OpEntry("trace", "matrices", np.trace, lambda dtype: iter([Sample((Arg((3, 4), -2, 2),), name="rectangular")]),
            method="trace", out_dtype=_trace_dtype, grad_samples=lambda: iter([Sample((Arg((3, 3)),), name="square")]),
            errors=(ErrorCase(lambda d: _tp().trace(_tp().ones(3, device=d)), RuntimeError, "expected a matrix", "vector"),)),
    OpEntry("kron", "matrices", np.kron, _kron_samples, method="kron",
            grad_samples=lambda: iter([Sample((Arg((2, 2)), Arg((2, 1))), name="matrices")])),
    OpEntry("diff", "matrices", lambda x, n=1, dim=-1: np.diff(x, n, axis=dim), _diff_samples, method="diff",
            grad_samples=lambda: iter([Sample((Arg((3, 4)), 2, 1), name="second order")]),
            errors=(ErrorCase(lambda d: _tp().diff(_tp().ones(3, device=d), -1), RuntimeError, "order must be non-negative",
                              "negative order"),)),
    OpEntry("cdist", "matrices", _cdist_ref, _cdist_samples, dtypes=("float32", "float64"),
            tolerances={"float32": (1e-4, 1e-5)}, grad_samples=_cdist_grad_samples,
            errors=(ErrorCase(lambda d: _tp().cdist(_tp().ones(2, 3, device=d), _tp().ones(2, 4, device=d)), RuntimeError,
                              "same number of columns", "columns differ"),)),
]
