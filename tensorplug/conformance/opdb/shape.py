"""Shape and view ops: each moves data without arithmetic, so results are compared exactly.

Every entry runs one expression on a tensor and on a NumPy array, so NumPy is the reference.
Which of these return views (sharing memory) is checked by the views suite.
"""
from __future__ import annotations

import numpy as np

from ._core import ALL_DTYPES, Arg, ErrorCase, OpEntry, Sample


def _tp():
    import tensorplug

    return tensorplug


def _layouts(shape, zero_d=False):
    def samples(dtype):
        yield Sample((Arg(shape),), name="contiguous")
        yield Sample((Arg(shape, layout="transposed"),), name="transposed")
        yield Sample((Arg(shape, layout="strided"),), name="strided")
        if zero_d:
            yield Sample((Arg(()),), name="0-d")

    return samples


def _shape_op(name, tp_expr, np_expr, shape=(2, 3, 4), zero_d=False, grad=True, errors=()):
    return OpEntry(name, "shape", np_expr, _layouts(shape, zero_d), dtypes=ALL_DTYPES, func=None,
                   call=lambda tp, x: tp_expr(tp, x), exact=True, differentiable=grad,
                   grad_samples=(lambda: iter([Sample((Arg(shape),), name="contiguous")])) if grad else None,
                   errors=errors)


def _many(name, tp_expr, np_expr, shapes, grad=True, errors=()):
    def samples(dtype):
        yield Sample(([Arg(s) for s in shapes],), name="contiguous")
        yield Sample(([Arg(s, layout="transposed") for s in shapes],), name="transposed")

    return OpEntry(name, "shape", np_expr, samples, dtypes=ALL_DTYPES, func=None, call=lambda tp, xs: tp_expr(tp, xs),
                   exact=True, differentiable=grad,
                   grad_samples=(lambda: iter([Sample(([Arg(s) for s in shapes],), name="contiguous")])) if grad else None,
                   errors=errors)


ENTRIES = [
    _shape_op("reshape", lambda tp, x: x.reshape(4, -1), lambda x: x.reshape(4, -1), zero_d=False,
              errors=(__import__("tensorplug.conformance.opdb._core", fromlist=["ErrorCase"]).ErrorCase(
                  lambda d: _tp().ones(2, 3, device=d).reshape(7), RuntimeError, r"shape '\[7\]' is invalid for input of size 6", "bad shape"),)),
    _shape_op("view", lambda tp, x: x.contiguous().view(6, 4), lambda x: x.reshape(6, 4),
              errors=(ErrorCase(lambda d: _tp().ones(2, 3, device=d).view(4), RuntimeError,
                                r"shape '\[4\]' is invalid for input of size 6", "bad shape"),)),
    _shape_op("permute", lambda tp, x: x.permute(2, 0, 1), lambda x: x.transpose(2, 0, 1),
              errors=(ErrorCase(lambda d: _tp().ones(2, 3, device=d).permute(0, 0), RuntimeError, r"repeated dim", "repeated dim"),)),
    _shape_op("transpose", lambda tp, x: x.transpose(0, 2), lambda x: x.swapaxes(0, 2),
              errors=(ErrorCase(lambda d: _tp().ones(2, 3, device=d).transpose(0, 2), IndexError, r"Dimension out of range", "bad dim"),)),
    _shape_op("t", lambda tp, x: x.t(), lambda x: x.T, shape=(3, 4)),
    _shape_op("squeeze", lambda tp, x: x.squeeze(1), lambda x: x.squeeze(1), shape=(3, 1, 4)),
    _shape_op("unsqueeze", lambda tp, x: x.unsqueeze(-1), lambda x: x[..., None], zero_d=True),
    _shape_op("flatten", lambda tp, x: x.flatten(1), lambda x: x.reshape(x.shape[0], -1)),
    _shape_op("unflatten", lambda tp, x: x.unflatten(2, (2, 2)), lambda x: x.reshape(2, 3, 2, 2)),
    _shape_op("expand", lambda tp, x: x.expand(2, 3, 3, 4), lambda x: np.broadcast_to(x[:, None] if x.ndim == 2 else x, (2, 3, 3, 4)),
              shape=(3, 1, 4)),
    _shape_op("broadcast_to", lambda tp, x: tp.broadcast_to(x, (2, 3, 4)), lambda x: np.broadcast_to(x, (2, 3, 4)), shape=(3, 1)),
    _shape_op("narrow", lambda tp, x: x.narrow(2, 1, 2), lambda x: x[:, :, 1:3]),
    _shape_op("select", lambda tp, x: x.select(1, -1), lambda x: x[:, -1]),
    _shape_op("diagonal", lambda tp, x: x.diagonal(), lambda x: np.diagonal(x).copy(), shape=(3, 4)),
    _shape_op("movedim", lambda tp, x: x.movedim(0, -1), lambda x: np.moveaxis(x, 0, -1)),
    _shape_op("flip", lambda tp, x: x.flip(0, 2), lambda x: np.flip(x, (0, 2))),
    _shape_op("roll", lambda tp, x: x.roll(2, 1), lambda x: np.roll(x, 2, 1)),
    _shape_op("repeat", lambda tp, x: x.repeat(2, 1, 3), lambda x: np.tile(x, (2, 1, 3))),
    _shape_op("tile", lambda tp, x: x.tile((2, 1)), lambda x: np.tile(x, (2, 1)), shape=(3, 4)),
    _shape_op("tril", lambda tp, x: x.tril(), lambda x: np.tril(x), shape=(4, 4)),
    _shape_op("triu", lambda tp, x: x.triu(1), lambda x: np.triu(x, 1), shape=(3, 5)),
    _shape_op("contiguous", lambda tp, x: x.contiguous(), lambda x: x),
    _shape_op("clone", lambda tp, x: x.clone(), lambda x: x, zero_d=True),
    _shape_op("pad", lambda tp, x: tp.pad(x, (1, 2)), lambda x: np.pad(x, [(0, 0), (0, 0), (1, 2)])),
    _shape_op("split", lambda tp, x: x.split(2, dim=2), lambda x: tuple(np.split(x, 2, axis=2))),
    _shape_op("chunk", lambda tp, x: x.chunk(3, dim=1), lambda x: tuple(np.split(x, 3, axis=1))),
    _shape_op("unbind", lambda tp, x: x.unbind(0), lambda x: tuple(x)),
    _many("cat", lambda tp, xs: tp.cat(xs, dim=1), lambda xs: np.concatenate(xs, axis=1), [(2, 3), (2, 1), (2, 0)],
          errors=(ErrorCase(lambda d: _tp().cat([_tp().ones(2, 3, device=d), _tp().ones(2, 4, device=d)]), RuntimeError,
                            r"Sizes of tensors must match except in dimension 0", "size mismatch"),)),
    _many("stack", lambda tp, xs: tp.stack(xs, dim=-1), lambda xs: np.stack(xs, axis=-1), [(2, 3), (2, 3)],
          errors=(ErrorCase(lambda d: _tp().stack([]), RuntimeError, r"expects a non-empty TensorList", "empty list"),)),
]
