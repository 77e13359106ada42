"""Reductions and scans: full and per-dim, keepdim, empty inputs, views, large inputs."""
from __future__ import annotations

import numpy as np

from ._core import ALL_DTYPES, FLOAT_DTYPES, LARGE, NUMERIC_DTYPES, Arg, ErrorCase, OpEntry, Sample

_HALF = ("float16", "bfloat16")


#: NaN in some rows and columns, beside infinities: amax, amin, max and min propagate NaN.
NAN_MATRIX = [[1.0, np.nan, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0], [np.nan, -np.inf, np.inf, 0.0]]
#: Enough ones that a 16-bit accumulator stops counting (float16 at 2048, bfloat16 at 256): sums
#: and matmul accumulate in float32 or wider (the contract's rule); the exact answer is 4096.
ONES = (1.0,) * 4096


def reduction_samples(low=-3.0, high=3.0, full=True, multi=True, empty=True, keyword="dim", step=None, nan=False,
                      ones=False):
    def samples(dtype):
        def A(shape, layout="contiguous"):
            return Arg(shape, low, high, layout=layout, step=step)

        if full:
            yield Sample((A((4, 5)),), name="all elements")
            yield Sample((A(()),), name="0-d")
        yield Sample((A((4, 5, 3)),), {keyword: 1}, name="dim=1")
        yield Sample((A((4, 5, 3)),), {keyword: -1, "keepdim": True}, name="dim=-1, keepdim")
        if multi:
            yield Sample((A((4, 5, 3)),), {keyword: (0, 2)}, name="dims (0, 2)")
        yield Sample((A((6, 4), "transposed"),), {keyword: 0}, name="transposed")
        yield Sample((A((3, 8), "strided"),), {keyword: 1}, name="strided")
        if empty:
            # Reducing over nothing gives the identity (sum 0, prod 1, mean NaN, ...) in every
            # position of the empty dim: an OpenCL kernel once divided 0 by 0 here (issue 16).
            yield Sample((A((0, 3)),), {keyword: 0}, name="empty along dim")
            yield Sample((A((3, 0, 4)),), {keyword: 1}, name="empty middle dim")
            yield Sample((A((4, 0)),), {keyword: -1, "keepdim": True}, name="empty last dim, keepdim")
            if full:
                yield Sample((A((0, 3)),), name="empty, all elements")
        yield Sample((A((3, 0)),), {keyword: 0}, name="empty result")
        yield Sample((A((2, 0, 3)),), {keyword: 2}, name="empty kept dim")
        if dtype not in _HALF:
            yield Sample((A((LARGE,)),), {keyword: 0}, name="large", large=True)
            yield Sample((A((257, 300)),), {keyword: 1}, name="large rows", large=True)
        if nan and dtype in FLOAT_DTYPES:
            nans = Arg((3, 4), values=NAN_MATRIX)
            if full:
                yield Sample((nans,), name="NaN, all elements", grad=False)
            yield Sample((nans,), {keyword: 1}, name="NaN, dim=1", grad=False)
            yield Sample((nans,), {keyword: 0}, name="NaN, dim=0", grad=False)
        if ones:
            yield Sample((Arg((4096,), values=ONES),), {keyword: 0}, name="4096 ones (accumulator width)", grad=False)
            yield Sample((Arg((2, 4096), values=ONES * 2),), {keyword: -1}, name="4096 ones per row (accumulator width)", grad=False)

    return samples


def reduction_grad_samples(low=-3.0, high=3.0, full=True, keyword="dim"):
    def samples():
        if full:
            yield Sample((Arg((2, 3), low, high),), name="all elements")
        yield Sample((Arg((2, 3, 2), low, high),), {keyword: 1}, name="dim=1")
        yield Sample((Arg((3, 2), low, high, layout="transposed"),), {keyword: 0, "keepdim": True}, name="transposed, keepdim")

    return samples


def _np_reduce(fn):
    def ref(x, dim=None, keepdim=False, **kw):
        return fn(x, axis=dim, keepdims=keepdim, **kw)

    return ref


def _int64_for_integers(dtype):
    return dtype if dtype in FLOAT_DTYPES else "int64"


def _argref(fn):
    def ref(x, dim=None, keepdim=False):
        if dim is None:
            return np.asarray(fn(x.reshape(-1)))
        r = fn(x, axis=dim)
        return np.expand_dims(r, dim) if keepdim else r

    return ref


def _minmax_dim(fn, argfn):
    def ref(x, dim=None, keepdim=False):
        if dim is None:
            return fn(x)
        return fn(x, axis=dim, keepdims=keepdim), _argref(argfn)(x, dim, keepdim)

    return ref


def _median(x, dim=None, keepdim=False):
    if dim is None:
        flat = np.sort(x.reshape(-1))
        return flat[(flat.size - 1) // 2]
    order = np.argsort(x, axis=dim, kind="stable")
    k = (x.shape[dim] - 1) // 2
    idx = np.take(order, [k], axis=dim)
    values = np.take_along_axis(x, idx, axis=dim)
    if not keepdim:
        values, idx = values.squeeze(dim), idx.squeeze(dim)
    return values, idx


def _scan_samples(low, high, ones=False):
    def samples(dtype):
        yield Sample((Arg((4, 5), low, high),), {"dim": 1}, name="dim=1")
        yield Sample((Arg((4, 5, 3), low, high),), {"dim": 0}, name="dim=0")
        yield Sample((Arg((5, 4), low, high, layout="transposed"),), {"dim": -1}, name="transposed")
        yield Sample((Arg((), low, high),), {"dim": 0}, name="0-d")
        yield Sample((Arg((0, 3), low, high),), {"dim": 0}, name="empty")
        yield Sample((Arg((3, 0), low, high),), {"dim": 1}, name="empty along dim")
        yield Sample((Arg((3, 0, 2), low, high),), {"dim": 0}, name="empty other dim")
        if dtype in ("float32", "float64", "int64"):
            yield Sample((Arg((3, 3000), low, high),), {"dim": 1}, name="large", large=True)
        if ones and dtype in FLOAT_DTYPES:
            yield Sample((Arg((4096,), values=ONES),), {"dim": 0}, name="4096 ones (accumulator width)", grad=False)

    return samples


def _scan_grad(low, high):
    def samples():
        yield Sample((Arg((2, 4), low, high),), {"dim": 1}, name="dim=1")
        yield Sample((Arg((3, 2), low, high, layout="transposed"),), {"dim": 0}, name="transposed")

    return samples


def _tp():
    import tensorplug

    return tensorplug


def _empty_dim_error(name):
    """Selecting reductions (amax, argmax, max, median, ...) over a zero-size dim have no answer."""
    return ErrorCase(lambda d: getattr(_tp().ones(0, 3, device=d), name)(0), IndexError,
                     r"Expected reduction dim 0 to have non-zero size", "empty dim")


_SUM_TOL = {"float32": (1e-4, 1e-4), "float16": (4e-3, 4e-3), "bfloat16": (2e-2, 3e-2)}
_PROD_TOL = {"float32": (1e-4, 1e-5), "float16": (4e-3, 1e-3), "bfloat16": (3e-2, 1e-2)}

ENTRIES = [
    OpEntry("sum", "reductions", _np_reduce(np.sum), reduction_samples(ones=True), dtypes=ALL_DTYPES, method="sum",
            grad_samples=reduction_grad_samples(), out_dtype=_int64_for_integers, primitive="sum", tolerances=_SUM_TOL,
            errors=(ErrorCase(lambda d: _tp().ones(2, 3, device=d).sum(dim=5), IndexError,
                              r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 5\)", "bad dim"),)),
    OpEntry("prod", "reductions", _np_reduce(np.prod), reduction_samples(0.5, 1.6, multi=False), dtypes=ALL_DTYPES,
            method="prod", grad_samples=reduction_grad_samples(0.5, 1.6), out_dtype=_int64_for_integers, primitive="prod",
            tolerances=_PROD_TOL),
    OpEntry("amax", "reductions", _np_reduce(np.max), reduction_samples(empty=False, nan=True), dtypes=ALL_DTYPES, method="amax",
            grad_samples=reduction_grad_samples(), primitive="amax", exact=True,
            errors=(ErrorCase(lambda d: _tp().ones(0, device=d).amax(), IndexError, r"non-zero size", "empty"), _empty_dim_error("amax"))),
    OpEntry("amin", "reductions", _np_reduce(np.min), reduction_samples(empty=False, nan=True), dtypes=ALL_DTYPES, method="amin",
            grad_samples=reduction_grad_samples(), primitive="amin", exact=True,
            errors=(_empty_dim_error("amin"),)),
    OpEntry("all", "reductions", _np_reduce(np.all), reduction_samples(-1, 1, step=1.0), dtypes=ALL_DTYPES, method="all",
            differentiable=False, out_dtype="bool", primitive="all", exact=True),
    OpEntry("any", "reductions", _np_reduce(np.any), reduction_samples(-1, 1, step=1.0), dtypes=ALL_DTYPES, method="any",
            differentiable=False, out_dtype="bool", primitive="any", exact=True),
    OpEntry("argmax", "reductions", _argref(np.argmax), reduction_samples(multi=False, empty=False, step=0.5),
            dtypes=NUMERIC_DTYPES + ("bool",), method="argmax", differentiable=False, out_dtype="int64", primitive="argmax", exact=True,
            errors=(_empty_dim_error("argmax"),)),
    OpEntry("argmin", "reductions", _argref(np.argmin), reduction_samples(multi=False, empty=False, step=0.5),
            dtypes=NUMERIC_DTYPES + ("bool",), method="argmin", differentiable=False, out_dtype="int64", primitive="argmin", exact=True,
            errors=(_empty_dim_error("argmin"),)),
    OpEntry("mean", "reductions", _np_reduce(np.mean), reduction_samples(), dtypes=FLOAT_DTYPES, method="mean",
            grad_samples=reduction_grad_samples(), tolerances=_SUM_TOL),
    OpEntry("max", "reductions", _minmax_dim(np.max, np.argmax), reduction_samples(multi=False, empty=False, step=0.5, nan=True),
            dtypes=ALL_DTYPES, method="max", grad_samples=reduction_grad_samples(), exact=True,
            out_dtype=lambda d: (d, "int64"), errors=(_empty_dim_error("max"), ErrorCase(lambda d: _tp().ones(2, device=d).max(dim=3), IndexError,
                                                      r"Dimension out of range", "bad dim"),)),
    OpEntry("min", "reductions", _minmax_dim(np.min, np.argmin), reduction_samples(multi=False, empty=False, step=0.5, nan=True),
            dtypes=ALL_DTYPES, method="min", grad_samples=reduction_grad_samples(), exact=True, out_dtype=lambda d: (d, "int64"),
            errors=(_empty_dim_error("min"),)),
    OpEntry("var", "reductions", _np_reduce(lambda x, **kw: np.var(x, ddof=1, **kw)), reduction_samples(),
            dtypes=FLOAT_DTYPES, method="var", grad_samples=reduction_grad_samples(), tolerances=_SUM_TOL),
    OpEntry("std", "reductions", _np_reduce(lambda x, **kw: np.std(x, ddof=1, **kw)), reduction_samples(),
            dtypes=FLOAT_DTYPES, method="std", grad_samples=reduction_grad_samples(), tolerances=_SUM_TOL),
    OpEntry("logsumexp", "reductions", _np_reduce(lambda x, axis, keepdims: np.log(np.sum(np.exp(x), axis=axis, keepdims=keepdims))),
            reduction_samples(full=False), dtypes=FLOAT_DTYPES, method="logsumexp",
            grad_samples=reduction_grad_samples(full=False), tolerances=_SUM_TOL),
    OpEntry("norm", "reductions", _np_reduce(lambda x, **kw: np.sqrt(np.sum(x * x, **kw))), reduction_samples(),
            dtypes=FLOAT_DTYPES, method="norm", grad_samples=reduction_grad_samples(), tolerances=_SUM_TOL),
    OpEntry("count_nonzero", "reductions", lambda x, dim=None: np.count_nonzero(x, axis=dim),
            lambda dtype: iter([Sample((Arg((4, 5), -1, 1, step=1.0),), name="all"),
                                Sample((Arg((4, 5), -1, 1, step=1.0, layout="transposed"),), {"dim": 1}, name="dim=1")]),
            dtypes=ALL_DTYPES, method="count_nonzero", differentiable=False, out_dtype="int64", exact=True),
    OpEntry("median", "reductions", _median, reduction_samples(multi=False, empty=False, step=0.5), dtypes=NUMERIC_DTYPES,
            method="median", differentiable=False, exact=True, out_dtype=lambda d: (d, "int64"),
            errors=(_empty_dim_error("median"),)),
    OpEntry("cumsum", "reductions", lambda x, dim: np.cumsum(x, axis=dim) if x.ndim else x, _scan_samples(-3, 3, ones=True),
            dtypes=ALL_DTYPES, method="cumsum", grad_samples=_scan_grad(-3, 3), primitive="cumsum",
            out_dtype=_int64_for_integers, tolerances=_SUM_TOL),
    OpEntry("cumprod", "reductions", lambda x, dim: np.cumprod(x, axis=dim) if x.ndim else x, _scan_samples(0.8, 1.25),
            dtypes=ALL_DTYPES, method="cumprod", grad_samples=_scan_grad(0.5, 1.5), primitive="cumprod",
            out_dtype=_int64_for_integers, tolerances=_PROD_TOL),
]
