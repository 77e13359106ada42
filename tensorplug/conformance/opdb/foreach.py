"""``tp._foreach_*``: the list ops that training code calls directly (an optimizer's or an
exponential moving average's update over every parameter). Each entry runs the op on a list of
three tensors of different shapes and layouts and compares the results laid end to end (each
flattened) with NumPy's per-tensor values; the in-place forms are checked the same way on copies.
"""
from __future__ import annotations

import numpy as np

from ._core import Arg, OpEntry, Sample

_DTYPES = ("float32", "float64")
_TOL = {"float32": (1e-5, 1e-6)}
_SHAPES = ((3, 4), (5,), ())


def _joined(tp, results):
    return tp.cat([r.reshape(-1) for r in results])


def _np_joined(arrays):
    return np.concatenate([np.asarray(a, dtype=np.result_type(*arrays)).reshape(-1) for a in arrays])


def _lists(args, size):
    return [list(args[i * 3:(i + 1) * 3]) for i in range(size)]


def _samples(lists: int, positive: bool = False):
    low = 0.5 if positive else -3.0

    def samples(dtype):
        args = tuple(Arg(shape, low=low) for _ in range(lists) for shape in _SHAPES)
        yield Sample(args, name="three shapes")
        strided = tuple(Arg(shape, low=low, layout="transposed" if len(shape) == 2 else "contiguous")
                        for _ in range(lists) for shape in _SHAPES)
        yield Sample(strided, name="a transposed member")

    return samples


def _entry(name, lists, ref, call, positive=False, **extra):
    def run(tp, *args, **kwargs):
        return _joined(tp, call(tp, *_lists(args, lists), **kwargs))

    def reference(*arrays, **kwargs):
        return _np_joined(ref(*_lists(arrays, lists), **kwargs))

    grad = lambda: iter([Sample(tuple(Arg(shape, low=0.5 if positive else -3.0) for _ in range(lists)  # noqa: E731
                                      for shape in _SHAPES), name="three shapes")])
    return OpEntry(name, "foreach", reference, _samples(lists, positive), dtypes=_DTYPES, func=None, call=run,
                   tolerances=_TOL, grad_samples=grad, **extra)


def _inplace(tp, method, first, *rest, **kwargs):
    copies = [t.clone() for t in first]
    getattr(tp, method)(copies, *rest, **kwargs)
    return copies


ENTRIES = [
    _entry("_foreach_add", 2, lambda a, b, alpha=1: [x + alpha * y for x, y in zip(a, b)],
           lambda tp, a, b, **kw: tp._foreach_add(a, b, **kw)),
    _entry("_foreach_mul_", 1, lambda a: [x * 0.999 for x in a],
           lambda tp, a: _inplace(tp, "_foreach_mul_", a, 0.999)),
    _entry("_foreach_addcdiv_", 3, lambda a, b, c: [x + 0.1 * y / z for x, y, z in zip(a, b, c)],
           lambda tp, a, b, c: _inplace(tp, "_foreach_addcdiv_", a, b, c, value=0.1), positive=True),
    _entry("_foreach_lerp_", 2, lambda a, b: [x + 0.25 * (y - x) for x, y in zip(a, b)],
           lambda tp, a, b: _inplace(tp, "_foreach_lerp_", a, b, 0.25)),
    _entry("_foreach_sqrt", 1, lambda a: [np.sqrt(x) for x in a], lambda tp, a: tp._foreach_sqrt(a), positive=True),
    _entry("_foreach_norm", 1, lambda a: [np.sqrt((np.asarray(x) ** 2).sum()) for x in a],
           lambda tp, a: tp._foreach_norm(a)),
]
