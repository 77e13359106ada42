"""The CPU kernel table: one small adapter per primitive, from tensors to the C++ entry points.

Each adapter reads tensors through the contract's public attributes and hands the C++ module
operands as ``(storage, offset, strides)`` tuples; Python numbers pass through unchanged. The
C++ side checks every operand against its storage before touching memory.
"""
from __future__ import annotations

import math

from ..api import FAMILIES
from ._load import load_kernels

_K = load_kernels()
_DTYPE_CODES = dict(_K.DTYPES)
_codes: dict = {}
_NUMBERS = (bool, int, float)

__all__ = ["table"]


def _code(dtype) -> int:
    code = _codes.get(dtype)
    if code is None:
        code = _codes[dtype] = _DTYPE_CODES[dtype.name]
    return code


def _operand(t):
    return (t.untyped_storage(), t.storage_offset(), t.stride())


def _value(x):
    return x if x.__class__ in _NUMBERS else (x.untyped_storage(), x.storage_offset(), x.stride())


def _unary(code: int):
    unary = _K.unary

    def kernel(out, a):
        unary(code, _code(a.dtype), out.shape, _operand(out), _operand(a))

    return kernel


def _binary(code: int, entry):
    def kernel(out, a, b):
        dtype = b.dtype if a.__class__ in _NUMBERS else a.dtype
        entry(code, _code(dtype), out.shape, _operand(out), _value(a), _value(b))

    return kernel


def _where(out, cond, a, b):
    _K.where(_code(out.dtype), out.shape, _operand(out), _operand(cond), _value(a), _value(b))


def _copy(dst, src):
    _K.copy(dst.shape, _code(dst.dtype), _operand(dst), _code(src.dtype), _operand(src))


def _fill(dst, value):
    _K.fill(_code(dst.dtype), dst.shape, _operand(dst), value)


def _reduce(code: int):
    def kernel(out, a, dims):
        # The C++ reduction wants out's strides over a's dims, 0 where a dim is reduced.
        strides = tuple(0 if d in dims else s for d, s in enumerate(out.stride()))
        out_operand = (out.untyped_storage(), out.storage_offset(), strides)
        _K.reduce(code, _code(a.dtype), _code(out.dtype), a.shape, _operand(a), out_operand, tuple(dims))

    return kernel


def _scan(code: int):
    def kernel(out, a, dim):
        _K.cumulative(code, _code(a.dtype), a.shape, _operand(out), _operand(a), dim)

    return kernel


def _matmul(out, a, b):
    batch, m, k = a.shape
    n = b.shape[2]
    _K.matmul(_code(a.dtype), batch, m, n, k, _operand(out), _operand(a), _operand(b))


def _gather(out, a, dim, index):
    _K.gather(_code(a.dtype), dim, index.shape, _operand(out), _operand(a), a.shape, _operand(index))


def _scatter(self, dim, index, src, reduce):
    reduce_code = 0 if reduce is None else 1
    _K.scatter(_code(self.dtype), dim, reduce_code, index.shape, _operand(self), self.shape, _operand(index), _value(src))


def _index_get(out, a, indices):
    shape = indices[0].shape
    _K.index_get(_code(a.dtype), _operand(out), _operand(a), a.shape, [_operand(i) for i in indices], shape)


def _index_put(self, indices, values, accumulate):
    shape = indices[0].shape
    _K.index_put(_code(self.dtype), _operand(self), self.shape, [_operand(i) for i in indices], shape, _value(values), bool(accumulate))


def _random(entry):
    def kernel(out, seed, offset, a, b):
        # out is contiguous (the frontend guarantees it): the C++ side sees it as one flat run.
        flat = (out.untyped_storage(), out.storage_offset(), (1,))
        entry(_code(out.dtype), flat, math.prod(out.shape), seed, offset, a, b)

    return kernel


def _sort(values, indices, a, dim, descending, stable):
    _K.sort(_code(a.dtype), a.shape, _operand(values), _operand(indices), _operand(a), dim, bool(descending), bool(stable))


def table() -> dict:
    """Primitive op name -> kernel, for every primitive of the contract."""
    kernels = {"copy_": _copy, "fill_": _fill, "where": _where, "matmul": _matmul, "gather": _gather,
               "scatter_": _scatter, "index_get": _index_get, "index_put_": _index_put,
               "uniform_": _random(_K.uniform), "normal_": _random(_K.normal), "randint_": _random(_K.randint),
               "sort": _sort}
    for name in FAMILIES["unary"]:
        kernels[name] = _unary(_K.UNARY_OPS[name])
    for name in FAMILIES["binary"]:
        kernels[name] = _binary(_K.BINARY_OPS[name], _K.binary)
    for name in FAMILIES["compare"]:
        kernels[name] = _binary(_K.COMPARE_OPS[name], _K.compare)
    for name in FAMILIES["reduce"]:
        kernels[name] = _reduce(_K.REDUCE_OPS[name])
    for name in FAMILIES["scan"]:
        kernels[name] = _scan(_K.CUMULATIVE_OPS[name])
    return kernels
