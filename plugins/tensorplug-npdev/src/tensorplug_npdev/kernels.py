"""The npdev kernel table: every primitive of the backend contract, in NumPy.

Each kernel gets tensors already checked, broadcast (stride-0 views) and cast by tensorplug's
frontend, and an output already allocated with ``storage.allocate``; it reads its inputs through
``storage.view`` and writes into the output. Python numbers arrive as ``bool``, ``int`` or
``float``. float16 is computed in float32 and rounded on the write, as the CPU backend does.

One fused kernel overrides a composite op (``softmax``), the pattern for vendor kernels that beat
the decomposition; gradients come from the op's own derivative.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from tensorplug.backends.api import FAMILIES
from tensorplug.dispatcher import get_operator

from . import philox
from .storage import view

__all__ = ["table"]

_NUMBERS = (bool, int, float)


def _quiet(kernel):
    """Run ``kernel`` without NumPy's floating point warnings: inf and NaN results are values here."""

    @functools.wraps(kernel)
    def run(*args):
        with np.errstate(all="ignore"):
            return kernel(*args)

    return run


def _compute_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float32) if dtype == np.float16 else dtype


def _operand(x, dtype: np.dtype):
    """A tensor's values (float16 widened) or a number as a 0-d array of ``dtype``."""
    if x.__class__ in _NUMBERS:
        return np.asarray(x, dtype=dtype)
    values = view(x)
    return values.astype(dtype) if values.dtype != dtype else values


# --- copy family ------------------------------------------------------------------------------
def _copy(dst, src):
    values = view(src)
    if values.dtype.kind == "f" and dst.dtype.name == "uint8":
        # The contract's rule (PyTorch's): float to uint8 goes through int64, so -1.0 gives 255.
        # NumPy's direct cast is left to the C compiler, which saturates on some machines.
        values = values.astype(np.int64)
    view(dst)[...] = values  # NumPy's casts: float to int truncates, to bool is != 0


def _fill(dst, value):
    view(dst)[...] = value


# --- unary family ------------------------------------------------------------------------------
_erf = np.frompyfunc(math.erf, 1, 1)


def _erf_values(x):
    return np.asarray(_erf(x), dtype=np.float64)


def _erfinv_values(y):
    y = np.asarray(y, dtype=np.float64)
    # Giles' single-precision approximation, then two Newton steps on erf.
    w = -np.log((1.0 - y) * (1.0 + y))
    small = w < 5.0
    ws, wl = w - 2.5, np.sqrt(np.maximum(w, 5.0)) - 3.0
    ps = np.polyval([2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                     -0.00125372503, -0.00417768164, 0.246640727, 1.50140941], ws)
    pl = np.polyval([-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                     -0.0076224613, 0.00943887047, 1.00167406, 2.83297682], wl)
    x = np.where(small, ps, pl) * y
    inside = np.abs(y) < 1
    safe = np.where(inside, x, 0.0)
    for _ in range(2):
        safe = safe - (_erf_values(safe) - np.where(inside, y, 0.0)) / (2.0 / math.sqrt(math.pi) * np.exp(-safe * safe))
    return np.where(inside, safe, np.where(np.abs(y) == 1, np.copysign(np.inf, y), np.nan))


_UNARY = {
    "neg": np.negative, "abs": np.abs, "exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2,
    "log10": np.log10, "log1p": np.log1p, "expm1": np.expm1, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x),
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan,
    "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "erf": _erf_values, "erfinv": _erfinv_values, "reciprocal": np.reciprocal, "square": np.square,
    "isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite, "logical_not": lambda x: x == 0,
}
# Integer and bool inputs: these ops leave the value as it is.
_ROUNDING = {"floor": np.floor, "ceil": np.ceil, "round": np.rint, "trunc": np.trunc}


def _unary(name: str):
    if name in _ROUNDING:
        fn = _ROUNDING[name]

        def rounding(out, a):
            values = view(a)
            view(out)[...] = fn(_operand(a, _compute_dtype(values.dtype))) if values.dtype.kind == "f" else values

        return _quiet(rounding)
    if name == "sign":
        def sign(out, a):
            values = view(a)
            if values.dtype == np.bool_:
                view(out)[...] = values
                return
            signs = np.sign(_operand(a, _compute_dtype(values.dtype)))
            # sign(NaN) is 0, as in PyTorch (NumPy's sign gives NaN): the contract's rule.
            view(out)[...] = np.where(np.isnan(signs), 0, signs) if values.dtype.kind == "f" else signs

        return _quiet(sign)
    if name == "bitwise_not":
        def bitwise_not(out, a):
            values = view(a)
            view(out)[...] = ~values if values.dtype != np.bool_ else np.logical_not(values)

        return bitwise_not
    fn = _UNARY[name]

    def kernel(out, a):
        view(out)[...] = fn(_operand(a, _compute_dtype(view(a).dtype)))

    return _quiet(kernel)


# --- binary and compare families ---------------------------------------------------------------
def _int_checked(name: str, fn):
    def checked(a, b):
        # An empty result divides nothing, so nothing divides by zero (as on the CPU and in PyTorch).
        if (a.dtype.kind in "iu" and name in ("floor_divide", "remainder", "fmod") and np.broadcast(a, b).size
                and np.any(b == 0)):
            raise ZeroDivisionError(f"integer division by zero in {name}")
        return fn(a, b)

    return checked


def _remainder(a, b):
    """Floored remainder (the divisor's sign). Floats: C's fmod corrected by one divisor, so that
    a zero keeps fmod's sign, the dividend's, as in PyTorch (NumPy gives the divisor's)."""
    if a.dtype.kind != "f":
        return np.remainder(a, b)
    m = np.fmod(a, b)
    return np.where((m != 0) & ((b < 0) != (m < 0)), m + b, m)


def _pow(a, b):
    """NumPy's power, and for a negative integer exponent PyTorch's answer where NumPy raises:
    1 stays 1, -1 alternates with the exponent's parity, every other base (0 too) gives 0."""
    if a.dtype.kind != "i":
        return np.power(a, b)
    a, b = np.broadcast_arrays(a, b)
    negative = b < 0
    powers = np.power(a, np.where(negative, 0, b))
    odd = (b & 1) == 1
    return np.where(negative, np.where(a == 1, 1, np.where(a == -1, np.where(odd, -1, 1), 0)).astype(a.dtype), powers)


def _shift(left: bool):
    def shift(a, b):
        if a.dtype == np.bool_:
            raise TypeError("shifts need integer tensors")
        bits = a.dtype.itemsize * 8
        outside = (b < 0) | (b >= bits)
        amount = np.where(outside, 0, b).astype(a.dtype)
        if left:
            return np.where(outside, 0, np.left_shift(a, amount))
        return np.where(outside, np.where(a < 0, -1, 0), np.right_shift(a, amount))

    return shift


def _bool_or(fn, bool_fn):
    return lambda a, b: bool_fn(a, b) if a.dtype == np.bool_ else fn(a, b)


_BINARY = {
    "add": _bool_or(np.add, np.logical_or), "sub": np.subtract, "mul": _bool_or(np.multiply, np.logical_and),
    "div": np.true_divide, "floor_divide": np.floor_divide, "remainder": _remainder, "fmod": np.fmod,
    "pow": _pow, "maximum": np.maximum, "minimum": np.minimum, "atan2": np.arctan2, "copysign": np.copysign,
    "hypot": np.hypot, "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor,
    "bitwise_left_shift": _shift(True), "bitwise_right_shift": _shift(False),
    "logical_and": lambda a, b: (a != 0) & (b != 0), "logical_or": lambda a, b: (a != 0) | (b != 0),
    "logical_xor": lambda a, b: (a != 0) != (b != 0),
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
}


def _binary(name: str):
    fn = _int_checked(name, _BINARY[name])

    def kernel(out, a, b):
        # Both operands share one dtype (the frontend cast them); a number takes the tensor's.
        dtype = _compute_dtype(view(b if a.__class__ in _NUMBERS else a).dtype)
        view(out)[...] = fn(_operand(a, dtype), _operand(b, dtype))

    return _quiet(kernel)


@_quiet
def _where(out, cond, a, b):
    dtype = _compute_dtype(view(out).dtype)
    view(out)[...] = np.where(view(cond), _operand(a, dtype), _operand(b, dtype))


# --- reductions and scans ----------------------------------------------------------------------
def _accumulator(dtype: np.dtype) -> np.dtype:
    if dtype.kind == "f":
        return np.dtype(np.float64) if dtype == np.float64 else np.dtype(np.float32)
    return np.dtype(np.int64)


_REDUCE = {
    "sum": lambda x, axis: np.sum(x, axis=axis, keepdims=True, dtype=_accumulator(x.dtype)),
    "prod": lambda x, axis: np.prod(x, axis=axis, keepdims=True, dtype=_accumulator(x.dtype)),
    "amax": lambda x, axis: np.amax(x, axis=axis, keepdims=True),
    "amin": lambda x, axis: np.amin(x, axis=axis, keepdims=True),
    "all": lambda x, axis: np.all(x != 0, axis=axis, keepdims=True),
    "any": lambda x, axis: np.any(x != 0, axis=axis, keepdims=True),
    "argmax": lambda x, axis: np.argmax(x, axis=axis[0], keepdims=True),
    "argmin": lambda x, axis: np.argmin(x, axis=axis[0], keepdims=True),
}


def _reduce(name: str):
    fn = _REDUCE[name]

    def kernel(out, a, dims):
        view(out)[...] = fn(view(a), tuple(dims))

    return _quiet(kernel)


def _scan(name: str):
    fn = np.cumsum if name == "cumsum" else np.cumprod

    def kernel(out, a, dim):
        values = view(a)
        view(out)[...] = fn(values, axis=dim, dtype=_accumulator(values.dtype) if values.dtype.kind == "f" else values.dtype)

    return _quiet(kernel)


@_quiet
def _matmul(out, a, b):
    dtype = _compute_dtype(view(a).dtype)
    view(out)[...] = np.matmul(_operand(a, dtype), _operand(b, dtype))


# --- indexing -----------------------------------------------------------------------------------
def _checked_index(index: np.ndarray, size: int, dim: int) -> np.ndarray:
    """Index values with negatives counted from the end; an out-of-range value raises IndexError."""
    bad = (index < -size) | (index >= size)
    if np.any(bad):
        raise IndexError(f"index {int(index[bad].flat[0])} is out of bounds for dimension {dim} with size {size}")
    return np.where(index < 0, index + size, index)


def _along(index_shape: tuple, dim: int, index: np.ndarray) -> tuple:
    """Fancy indices that pick ``index`` along ``dim`` and the matching position elsewhere."""
    grid = list(np.indices(index_shape, sparse=True))
    grid[dim] = index
    return tuple(grid)


def _gather(out, a, dim, index):
    values = view(a)
    picks = _along(index.shape, dim, _checked_index(view(index), values.shape[dim], dim))
    view(out)[...] = values[picks]


def _scatter(self, dim, index, src, reduce):
    target = view(self)
    picks = _along(index.shape, dim, _checked_index(view(index), target.shape[dim], dim))
    values = src if src.__class__ in _NUMBERS else view(src)[tuple(slice(0, n) for n in index.shape)]
    if reduce is None:
        target[picks] = values
    else:
        np.add.at(target, picks, values)


def _leading(indices, shape: tuple) -> tuple:
    return tuple(_checked_index(view(i), shape[d], d) for d, i in enumerate(indices))


def _index_get(out, a, indices):
    values = view(a)
    view(out)[...] = values[_leading(indices, values.shape)]


def _index_put(self, indices, values, accumulate):
    target = view(self)
    picks = _leading(indices, target.shape)
    new = values if values.__class__ in _NUMBERS else view(values)
    if accumulate:
        np.add.at(target, picks, new)
    else:
        target[picks] = new


# --- random -------------------------------------------------------------------------------------
def _uniform(out, seed, offset, low, high):
    target = view(out)  # contiguous: the frontend guarantees it for random primitives
    target.reshape(-1)[...] = philox.uniform(target.dtype.name, target.size, seed, offset, low, high)


def _normal(out, seed, offset, mean, std):
    target = view(out)
    target.reshape(-1)[...] = philox.normal(target.size, seed, offset, mean, std)


def _randint(out, seed, offset, low, high):
    target = view(out)
    if target.dtype == np.bool_ and (low, high) != (0, 2):
        raise ValueError("randint: bool needs low=0 and high=2")
    drawn = philox.randint(target.size, seed, offset, low, high)
    target.reshape(-1)[...] = drawn != 0 if target.dtype == np.bool_ else drawn


# --- sort ---------------------------------------------------------------------------------------
@_quiet
def _sort(values_out, indices_out, a, dim, descending, stable):
    if not a.shape:  # a 0-d tensor is its own sorted line
        view(values_out)[...] = view(a)
        view(indices_out)[...] = 0
        return
    lines = np.moveaxis(view(a), dim, -1)
    if descending:
        # Sorting the reversed lines ascending and reversing the result keeps equal values in
        # their original order and puts NaN (NumPy's largest) first.
        n = lines.shape[-1]
        order = n - 1 - np.argsort(lines[..., ::-1], axis=-1, kind="stable")[..., ::-1]
    else:
        order = np.argsort(lines, axis=-1, kind="stable")
    np.moveaxis(view(values_out), dim, -1)[...] = np.take_along_axis(lines, order, axis=-1)
    np.moveaxis(view(indices_out), dim, -1)[...] = order


# --- a fused composite op -----------------------------------------------------------------------
def _softmax(input, dim):
    """``softmax`` in one pass over NumPy; float16 and non-float inputs take the decomposition."""
    if input.dtype.name not in ("float32", "float64"):
        return get_operator("softmax").decomposition(input, dim)
    x = view(input)
    out = input.new_empty(input.shape)  # allocated by this backend, through the public Tensor API
    if x.size == 0:  # nothing to normalize (and np.max of nothing raises)
        return out
    shifted = np.exp(x - np.max(x, axis=dim, keepdims=True)) if x.ndim else np.ones_like(x)
    with np.errstate(all="ignore"):
        view(out)[...] = shifted / np.sum(shifted, axis=dim, keepdims=True) if x.ndim else shifted
    return out


def table() -> dict:
    """Op name -> kernel for every primitive, plus the fused composite override."""
    kernels = {"copy_": _quiet(_copy), "fill_": _fill, "where": _where, "matmul": _matmul, "gather": _gather,
               "scatter_": _scatter, "index_get": _index_get, "index_put_": _index_put, "uniform_": _uniform,
               "normal_": _normal, "randint_": _randint, "sort": _sort}
    kernels.update({name: _unary(name) for name in FAMILIES["unary"]})
    kernels.update({name: _binary(name) for name in FAMILIES["binary"] + FAMILIES["compare"]})
    kernels.update({name: _reduce(name) for name in FAMILIES["reduce"]})
    kernels.update({name: _scan(name) for name in FAMILIES["scan"]})
    kernels["softmax"] = _softmax
    return kernels
