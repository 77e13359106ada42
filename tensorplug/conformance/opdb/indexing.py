"""Indexing: gather/scatter, index_select, take, masks, and subscripts (basic and advanced).

Subscript entries apply one expression to a tensor and to a NumPy array alike, so the reference
is NumPy's own indexing.
"""
from __future__ import annotations

import numpy as np

from ._core import ALL_DTYPES, FLOAT_DTYPES, Arg, ErrorCase, OpEntry, Sample


def _tp():
    import tensorplug

    return tensorplug


def _ints(values):
    return Arg((len(values),), dtype="int64", values=values, grad=False)


def _idx(shape, values):
    return Arg(shape, dtype="int64", values=values, grad=False)


def _one(*samples):
    return lambda dtype: iter(samples)


def _grad_of(*samples):
    return lambda: iter(samples)


def _gather_ref(x, dim, index):
    return np.take_along_axis(x, index.astype(np.int64), axis=dim)


def _scatter_ref(x, dim, index, src):
    out = x.copy()
    src = np.broadcast_to(src, index.shape) if np.ndim(src) == 0 else src
    np.put_along_axis(out, index.astype(np.int64), src[tuple(slice(0, n) for n in index.shape)], axis=dim)
    return out


def _scatter_add_ref(x, dim, index, src):
    out = x.copy()
    idx = index.astype(np.int64)
    for pos in np.ndindex(*idx.shape):
        target = list(pos)
        target[dim] = idx[pos]
        out[tuple(target)] += src[pos]
    return out


def _index_add_ref(x, dim, index, src):
    out = np.moveaxis(x.copy(), dim, 0)
    src = np.moveaxis(src, dim, 0)
    for i, k in enumerate(index.astype(np.int64)):
        out[k] += src[i]
    return np.moveaxis(out, 0, dim)


def _scatter_reduce_ref(x, dim, index, src, reduce, include_self=True, integer=False):
    """A loop over index; ``integer``: the inputs hold integers (means round down, as PyTorch's)."""
    groups = {}
    idx = index.astype(np.int64)
    for pos in np.ndindex(*idx.shape):
        target = list(pos)
        target[dim] = idx[pos]
        groups.setdefault(tuple(target), []).append(src[pos])
    out = x.astype(np.float64)
    for target, values in groups.items():
        values = values + ([x[target]] if include_self else [])
        if reduce == "mean":
            mean = np.sum(values, dtype=np.float64) / len(values)
            out[target] = np.floor(mean) if integer else mean
        else:
            out[target] = {"sum": np.sum, "prod": np.prod, "amax": np.max, "amin": np.min}[reduce](values)
    return out


def _scatter_reduce_int_ref(*args, **kwargs):
    return _scatter_reduce_ref(*args, integer=True, **kwargs)


_REDUCE_INDEX = _idx((3, 3), [[0, 0, 1], [3, 3, 3], [2, 0, 2]])


def _scatter_reduce_samples(dtype):
    for reduce in ("sum", "prod", "mean", "amax", "amin"):
        for include_self in (True, False):
            yield Sample((Arg((3, 4)), 1, _REDUCE_INDEX, Arg((3, 3)), reduce), {"include_self": include_self},
                         name=f"{reduce}, include_self={include_self}")

# Index values are 0 <= i < size: gather and index_select refuse negative ones, as PyTorch does
# (indexing with [] counts them from the end: see the subscript samples).
_GATHER_INDEX = _idx((3, 2), [[0, 3], [2, 3], [1, 1]])
# A permutation per row: scatter without duplicate targets is deterministic.
_SCATTER_INDEX = _idx((2, 4), [[3, 0, 2, 1], [1, 2, 0, 3]])


def _subscript(name, expression, shape=(4, 5, 3), layouts=("contiguous", "transposed", "strided"), grad=True):
    def samples(dtype):
        for layout in layouts:
            yield Sample((Arg(shape, layout=layout),), name=layout)

    return OpEntry(f"getitem {name}", "indexing", expression, samples, dtypes=ALL_DTYPES, func=None,
                   call=lambda tp, x: expression(x), exact=True, differentiable=grad,
                   grad_samples=_grad_of(Sample((Arg(shape),), name="contiguous")) if grad else None,
                   primitive="index_get" if "tensor" in name or "mask" in name else None)


def _setitem(name, expression_np, expression_tp, shape=(4, 5)):
    def call(tp, x, v):
        x = x.clone()
        expression_tp(tp, x, v)
        return x

    def ref(x, v):
        x = x.copy()
        expression_np(x, v)
        return x

    return OpEntry(f"setitem {name}", "indexing", ref, _one(Sample((Arg(shape), Arg((5,))), name="row values"),
                                                           Sample((Arg(shape, layout="transposed"), Arg((5,))), name="transposed")),
                   dtypes=ALL_DTYPES, func=None, call=call, exact=True, differentiable=False, primitive="index_put_")


ENTRIES = [
    OpEntry("gather", "indexing", _gather_ref,
            _one(Sample((Arg((3, 4)), 1, _GATHER_INDEX), name="dim=1"),
                 Sample((Arg((4, 3), layout="transposed"), 0, _idx((2, 3), [[0, 1, 3], [3, 2, 0]])), name="transposed, dim=0")),
            dtypes=ALL_DTYPES, method="gather", exact=True, primitive="gather",
            grad_samples=_grad_of(Sample((Arg((3, 4)), 1, _GATHER_INDEX), name="dim=1")),
            errors=(ErrorCase(lambda d: _tp().gather(_tp().ones(3, device=d), 0, _tp().tensor([5], device=d)), IndexError,
                              r"index 5 is out of bounds for dimension 0 with size 3", "index out of range"),
                    ErrorCase(lambda d: _tp().gather(_tp().ones(3, device=d), 0, _tp().tensor([-1], device=d)), IndexError,
                              r"index -1 is out of bounds for dimension 0 with size 3", "negative index"))),
    OpEntry("scatter", "indexing", _scatter_ref,
            _one(Sample((Arg((2, 4)), 1, _SCATTER_INDEX, Arg((2, 4))), name="tensor src"),
                 Sample((Arg((2, 4)), 1, _SCATTER_INDEX, 1), name="scalar src")),
            dtypes=ALL_DTYPES, method="scatter", inplace="scatter_", exact=True, primitive="scatter_",
            grad_samples=_grad_of(Sample((Arg((2, 4)), 1, _SCATTER_INDEX, Arg((2, 4))), name="tensor src")),
            errors=(ErrorCase(lambda d: _tp().zeros(3, device=d).scatter_(0, _tp().tensor([7], device=d), 1.0), IndexError,
                              r"index 7 is out of bounds for dimension 0 with size 3", "index out of range"),)),
    OpEntry("scatter_add", "indexing", _scatter_add_ref,
            _one(Sample((Arg((3, 4)), 1, _idx((3, 3), [[0, 0, 1], [3, 3, 3], [2, 0, 2]]), Arg((3, 3))), name="duplicates")),
            dtypes=tuple(d for d in ALL_DTYPES if d != "bool"), method="scatter_add", inplace="scatter_add_", primitive="scatter_",
            grad_samples=_grad_of(Sample((Arg((3, 4)), 1, _idx((3, 3), [[0, 0, 1], [3, 3, 3], [2, 0, 2]]), Arg((3, 3))), name="dup"))),
    OpEntry("scatter_reduce", "indexing", _scatter_reduce_ref, _scatter_reduce_samples,
            dtypes=("float32", "float64", "int64", "int32"), method="scatter_reduce", inplace="scatter_reduce_",
            tolerances={"float32": (1e-5, 1e-5)}, ref_for={"int64": _scatter_reduce_int_ref, "int32": _scatter_reduce_int_ref},
            grad_samples=lambda: iter([Sample((Arg((3, 4)), 1, _REDUCE_INDEX, Arg((3, 3)), reduce), {"include_self": False},
                                              name=reduce) for reduce in ("sum", "prod", "mean", "amax")])),
    OpEntry("index_select", "indexing", lambda x, dim, i: np.take(x, i.astype(np.int64), axis=dim),
            _one(Sample((Arg((4, 5)), 0, _ints([3, 0, 3, 1])), name="dim=0, repeated"),
                 Sample((Arg((4, 5), layout="transposed"), 1, _ints([4, 1])), name="transposed, dim=1"),
                 Sample((Arg((4, 5)), 1, _ints([])), name="empty index")),
            dtypes=ALL_DTYPES, method="index_select", exact=True,
            grad_samples=_grad_of(Sample((Arg((3, 2)), 0, _ints([2, 0, 2])), name="repeated")),
            errors=(ErrorCase(lambda d: _tp().ones(3, device=d).index_select(0, _tp().tensor([3], device=d)), IndexError,
                              r"index 3 is out of bounds for dimension 0 with size 3", "index out of range"),
                    ErrorCase(lambda d: _tp().ones(3, device=d).index_select(0, _tp().tensor([-1], device=d)), IndexError,
                              r"index -1 is out of bounds for dimension 0 with size 3", "negative index"))),
    OpEntry("take", "indexing", lambda x, i: np.take(x.reshape(-1), i.astype(np.int64)),
            _one(Sample((Arg((3, 4)), _idx((2, 2), [[0, 11], [5, -1]])), name="2-d index"),
                 Sample((Arg((4, 3), layout="transposed"), _ints([1, 7])), name="transposed")),
            dtypes=ALL_DTYPES, method="take", exact=True,
            grad_samples=_grad_of(Sample((Arg((2, 3)), _ints([0, 5, 5])), name="repeated"))),
    OpEntry("masked_fill", "indexing", lambda x, m, v: np.where(m != 0, v, x),
            lambda dtype: iter([Sample((Arg((3, 4)), Arg((3, 4), dtype="bool", grad=False),
                                        {"bool": True}.get(dtype, 1 if dtype not in FLOAT_DTYPES else 0.5)), name="scalar"),
                                Sample((Arg((3, 4), layout="transposed"), Arg((4,), dtype="bool", grad=False), 0), name="broadcast mask")]),
            dtypes=ALL_DTYPES, method="masked_fill", inplace="masked_fill_", exact=True,
            grad_samples=_grad_of(Sample((Arg((2, 3)), Arg((2, 3), dtype="bool", grad=False), 0.5), name="scalar"))),
    OpEntry("masked_select", "indexing", lambda x, m: x[np.broadcast_to(m != 0, x.shape)],
            _one(Sample((Arg((3, 4)), Arg((3, 4), dtype="bool", grad=False)), name="same shape"),
                 Sample((Arg((3, 4), layout="strided"), Arg((4,), dtype="bool", grad=False)), name="broadcast mask")),
            dtypes=ALL_DTYPES, method="masked_select", exact=True,
            grad_samples=_grad_of(Sample((Arg((2, 3)), Arg((2, 3), dtype="bool", grad=False)), name="same shape"))),
    OpEntry("nonzero", "indexing", lambda x: np.argwhere(x),
            _one(Sample((Arg((4, 5), -1, 1, step=1.0),), name="2-d"),
                 Sample((Arg((6,), -1, 1, step=1.0, layout="strided"),), name="strided"),
                 Sample((Arg((0, 3)),), name="empty")),
            dtypes=ALL_DTYPES, method="nonzero", differentiable=False, out_dtype="int64", exact=True),
    OpEntry("argwhere", "indexing", lambda x: np.argwhere(x),
            _one(Sample((Arg((4, 5), -1, 1, step=1.0),), name="2-d"), Sample((Arg(()),), name="0-d")),
            dtypes=ALL_DTYPES, method="argwhere", differentiable=False, out_dtype="int64", exact=True),
    OpEntry("index_add", "indexing", _index_add_ref,
            _one(Sample((Arg((4, 3)), 0, _ints([1, 3, 1]), Arg((3, 3))), name="duplicates")),
            dtypes=tuple(d for d in ALL_DTYPES if d != "bool"), method="index_add", inplace="index_add_",
            grad_samples=_grad_of(Sample((Arg((4, 3)), 0, _ints([1, 3, 1]), Arg((3, 3))), name="duplicates"))),
    _subscript("int", lambda x: x[1]),
    _subscript("negative int", lambda x: x[-1, 2]),
    _subscript("slices", lambda x: x[1:3, ::2]),
    _subscript("ellipsis and None", lambda x: x[..., None, 1]),
    _subscript("int tensor", lambda x: x[_index_like(x, [3, 0, 3])]),
    _subscript("two int tensors", lambda x: x[_index_like(x, [0, 2]), _index_like(x, [4, -1])]),
    _subscript("bool mask", lambda x: x[_mask_like(x, [True, False, True, False])]),
    _subscript("slice then tensor", lambda x: x[1:, _index_like(x, [2, 0])]),
    _setitem("int tensor", lambda x, v: x.__setitem__(np.array([0, 2]), v), lambda tp, x, v: x.__setitem__(tp.tensor([0, 2], device=x.device), v)),
    _setitem("slice", lambda x, v: x.__setitem__(slice(1, 3), v), lambda tp, x, v: x.__setitem__(slice(1, 3), v)),
]
ENTRIES[-6].errors = (ErrorCase(lambda d: _tp().ones(3, device=d)[_tp().tensor([5], device=d)], IndexError,
                                 r"index 5 is out of bounds for dimension 0 with size 3", "index out of range"),
                      ErrorCase(lambda d: _tp().ones(3, device=d)[_tp().tensor([-4], device=d)], IndexError,
                                r"index -4 is out of bounds for dimension 0 with size 3", "negative index out of range"))
ENTRIES[-2].errors = (ErrorCase(lambda d: _tp().zeros(3, device=d).__setitem__(_tp().tensor([7], device=d), 1.0), IndexError,
                                r"index 7 is out of bounds for dimension 0 with size 3", "index out of range"),)


def _index_like(x, values):
    """An int64 index on x's device (tensor) or a NumPy index (array)."""
    if isinstance(x, np.ndarray):
        return np.array(values, dtype=np.int64)
    return _tp().tensor(values, device=x.device)


def _mask_like(x, values):
    if isinstance(x, np.ndarray):
        return np.array(values, dtype=bool)
    return _tp().tensor(values, device=x.device)
