"""Mutants for the suite's own mutation check: the CPU backend's kernels under the device type
``mutantdev``, with exactly one rule of the backend contract broken, chosen by the environment
variable ``TENSORPLUG_MUTANT`` (a key of :data:`MUTANTS`).

Each mutant is a bug a real backend was certified with, or a behaviour a vendor's trial found
unstated (issue 15): the real kernel runs, then the mutant rewrites the output on the host (CPU
memory is host memory, so ``to_host`` is a writable view) the way the broken kernel would have
computed it, or raises where the broken kernel raises. Dtypes the rule does not concern are left
alone, so a mutant fails exactly where the rule applies.
"""
import os
import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np

from tensorplug.backends.cpu import CPUBackend
from tensorplug.backends.cpu import storage
from tensorplug.plugins import hookimpl

#: Float dtypes the NaN mutants break (bfloat16 has no NumPy dtype without ml_dtypes).
MUTATED_FLOATS = ("float32", "float64", "float16")
_WIDTH = {"uint8": 8, "int8": 8, "int16": 16, "int32": 32, "int64": 64}


def _host(x):
    """A tensor's values as a NumPy view (CPU memory), a Python number as itself."""
    return storage.to_host(x) if hasattr(x, "untyped_storage") else x


def _inputs(*tensors):
    """Copies of the inputs, taken before the real kernel runs: an in-place call (``x.add_(y)``)
    passes its output as an input too, and the real kernel overwrites it."""
    return [np.array(_host(t)) if hasattr(t, "untyped_storage") else t for t in tensors]


@dataclass(frozen=True)
class Mutant:
    rule: str  # the contract's rule it breaks, as the contract states it
    op: str  # the op the suite must name as failing
    dtypes: tuple[str, ...]  # the dtypes the mutant breaks it on: each must be named
    breaks: Callable[[dict], dict]  # the CPU kernels -> the kernels it replaces


def _nan_dropping(op, fn):
    """maximum/minimum as fmax/fmin: a NaN operand loses to the other (IEEE maxNum)."""
    def breaks(kernels):
        real = kernels[op]

        def kernel(out, a, b):
            x, y = _inputs(a, b)
            real(out, a, b)
            if out.dtype.name in MUTATED_FLOATS:
                _host(out)[...] = fn(x, y)

        return {op: kernel}

    return breaks


def _nan_ignoring(op, fn):
    """amax/amin as nanmax/nanmin: NaN is skipped unless a whole slice is NaN."""
    def breaks(kernels):
        real = kernels[op]

        def kernel(out, a, dims):
            (values,) = _inputs(a)
            real(out, a, dims)
            if out.dtype.name in MUTATED_FLOATS:
                if values.size and values.ndim:
                    with warnings.catch_warnings():  # an all-NaN slice warns, and stays NaN
                        warnings.simplefilter("ignore", RuntimeWarning)
                        _host(out)[...] = fn(values, axis=dims, keepdims=True)

        return {op: kernel}

    return breaks


def _half_sum(kernels):
    """sum of float16 accumulated in float16, one element after another (4096 ones give 2048)."""
    real = kernels["sum"]

    def kernel(out, a, dims):
        (values,) = _inputs(a)
        real(out, a, dims)
        if a.dtype.name == "float16" and values.size:
            rest = [d for d in range(values.ndim) if d not in dims]
            moved = np.transpose(values, rest + list(dims)).reshape([values.shape[d] for d in rest] + [-1])
            running = np.cumsum(moved, axis=-1, dtype=np.float16)  # float16 after every addition
            _host(out)[...] = running[..., -1].reshape(out.shape)

    return {"sum": kernel}


def _half_matmul(kernels):
    """matmul of float16 accumulated in float16 along K."""
    real = kernels["matmul"]

    def kernel(out, a, b):
        x, y = _inputs(a, b)
        real(out, a, b)
        if out.dtype.name == "float16" and a.shape[2]:
            acc = np.zeros(out.shape, dtype=np.float16)
            for k in range(a.shape[2]):
                acc = (acc + x[:, :, k:k + 1] * y[:, k:k + 1, :]).astype(np.float16)
            _host(out)[...] = acc

    return {"matmul": kernel}


def _half_cumsum(kernels):
    """cumsum of float16 with a float16 running total (4096 ones end at 2048)."""
    real = kernels["cumsum"]

    def kernel(out, a, dim):
        (values,) = _inputs(a) if a.dtype.name == "float16" else (None,)
        real(out, a, dim)
        if values is not None and values.size and values.ndim:
            _host(out)[...] = np.cumsum(values, axis=dim, dtype=np.float16)

    return {"cumsum": kernel}


def _argmax_last(kernels):
    """argmax that picks the last of equal maxima (the contract: the first)."""
    real = kernels["argmax"]

    def kernel(out, a, dims):
        readable = a.dtype.name != "bfloat16"  # no NumPy view of bfloat16 without ml_dtypes
        (x,) = _inputs(a) if readable else (None,)
        real(out, a, dims)
        if readable and x.ndim and x.size:
            d = dims[0]
            last = x.shape[d] - 1 - np.argmax(np.flip(x, axis=d), axis=d)
            _host(out)[...] = np.expand_dims(last, d)

    return {"argmax": kernel}


def _sort_nan_first(kernels):
    """An ascending sort that puts NaN first, as if it were -inf (the contract: NaN is largest)."""
    real = kernels["sort"]

    def kernel(values_out, indices_out, a, dim, descending, stable):
        mutated = a.dtype.name in MUTATED_FLOATS and not descending and a.shape
        (x,) = _inputs(a) if mutated else (None,)
        real(values_out, indices_out, a, dim, descending, stable)
        if mutated:
            lines = np.moveaxis(x, dim, -1)
            order = np.argsort(np.where(np.isnan(lines), -np.inf, lines), axis=-1, kind="stable")
            np.moveaxis(_host(values_out), dim, -1)[...] = np.take_along_axis(lines, order, axis=-1)
            np.moveaxis(_host(indices_out), dim, -1)[...] = order

    return {"sort": kernel}


def _round_half_away(kernels):
    """round with ties away from zero on float32/float64 (the contract says ties to even)."""
    real = kernels["round"]

    def kernel(out, a):
        (x,) = _inputs(a)
        real(out, a)
        if out.dtype.name in ("float32", "float64"):
            tie = np.abs(x - np.trunc(x)) == 0.5
            _host(out)[...] = np.where(tie, np.trunc(x) + np.sign(x), _host(out))

    return {"round": kernel}


def _shift_modulo(op, fn):
    """Shifts taken modulo the bit width (what x86 shift instructions do): x << 64 == x."""
    def breaks(kernels):
        real = kernels[op]

        def kernel(out, a, b):
            x, y = _inputs(a, b)
            real(out, a, b)
            dtype = out.dtype.name
            if dtype in _WIDTH:
                x = np.asarray(x, dtype=dtype)
                amount = np.asarray(y).astype(np.int64) % _WIDTH[dtype]
                _host(out)[...] = fn(x, amount.astype(dtype))

        return {op: kernel}

    return breaks


def _sign_keeps_nan(kernels):
    """sign as NumPy's: NaN stays NaN (the contract, like PyTorch: sign(NaN) is 0)."""
    real = kernels["sign"]

    def kernel(out, a):
        (x,) = _inputs(a)
        real(out, a)
        if out.dtype.name in MUTATED_FLOATS:
            _host(out)[...] = np.sign(x)

    return {"sign": kernel}


def _remainder_python_zero(kernels):
    """remainder as Python's %: a zero result takes the divisor's sign (4.0 % -2.0 is -0.0)."""
    real = kernels["remainder"]

    def kernel(out, a, b):
        _, y = _inputs(a, b)
        real(out, a, b)
        if out.dtype.name in MUTATED_FLOATS:
            result = _host(out)
            result[...] = np.where(result == 0, np.copysign(0.0, y), result)

    return {"remainder": kernel}


def _pow_refuses_negative(kernels):
    """Integer pow that raises on a negative exponent element, as NumPy's power does."""
    real = kernels["pow"]

    def kernel(out, a, b):
        if out.dtype.name in _SIGNED and hasattr(b, "untyped_storage") and (_host(b) < 0).any():
            raise ValueError("Integers to negative integer powers are not allowed.")
        real(out, a, b)

    return {"pow": kernel}


def _is_float_to_int(dst, src):
    return src.dtype.name in MUTATED_FLOATS and dst.dtype.name in _WIDTH


def _copy_refuses_out_of_range(kernels):
    """A checked conversion: float to integer raises when a value does not fit (NumPy's
    ``astype(casting="safe")`` habit), where the contract leaves the value unspecified."""
    real = kernels["copy_"]

    def kernel(dst, src):
        if _is_float_to_int(dst, src):
            values, info = _host(src), np.iinfo(dst.dtype.name)
            with np.errstate(invalid="ignore"):
                if not np.all(np.isfinite(values) & (values >= info.min) & (values <= info.max)):
                    raise OverflowError(f"copy_: a value does not fit {dst.dtype.name}")
        real(dst, src)

    return {"copy_": kernel}


def _copy_saturates_uint8(kernels):
    """float to uint8 saturating (what a GPU's cvt.sat does): -1.0 gives 0, not PyTorch's 255."""
    real = kernels["copy_"]

    def kernel(dst, src):
        if not (_is_float_to_int(dst, src) and dst.dtype.name == "uint8"):
            return real(dst, src)  # bfloat16 has no host view to read
        (x,) = _inputs(src)
        real(dst, src)
        _host(dst)[...] = np.clip(np.trunc(np.nan_to_num(x)), 0, 255)

    return {"copy_": kernel}


def _fill_through_double(kernels):
    """fill_ that takes its number as a C double: int64 values beyond 2**53 lose bits (2**63 - 1
    becomes 2**63, which does not fit)."""
    real = kernels["fill_"]

    def kernel(out, value):
        real(out, value)
        if out.dtype.name == "int64" and not isinstance(value, bool):
            with np.errstate(invalid="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                _host(out)[...] = np.float64(value).astype(np.int64)

    return {"fill_": kernel}


def _randint_narrow(kernels):
    """randint_ that refuses ranges over 2**63 (a signed 64-bit range: PyTorch allows 2**64 - 1)."""
    real = kernels["randint_"]

    def kernel(out, seed, offset, low, high):
        if high - low > 1 << 63:
            raise ValueError("randint: high - low must be at most 2**63")
        real(out, seed, offset, low, high)

    return {"randint_": kernel}


_NAN = "maximum, minimum, amax, amin propagate NaN"
_ACCUMULATE = "sum, cumsum and matmul accumulate float16 and bfloat16 in float32 or wider"
_SHIFT = "a shift by the bit width or more gives 0 (an arithmetic right shift of a negative value: -1)"
_INTS = tuple(_WIDTH)
_SIGNED = ("int64", "int8", "int16", "int32")
_CONVERT = "float to integer: exact where the truncated value fits (uint8: through int64), otherwise any value, never an error"

MUTANTS = {
    "maximum drops NaN": Mutant(_NAN, "maximum", MUTATED_FLOATS, _nan_dropping("maximum", np.fmax)),
    "minimum drops NaN": Mutant(_NAN, "minimum", MUTATED_FLOATS, _nan_dropping("minimum", np.fmin)),
    "amax ignores NaN": Mutant(_NAN, "amax", MUTATED_FLOATS, _nan_ignoring("amax", np.nanmax)),
    "amin ignores NaN": Mutant(_NAN, "amin", MUTATED_FLOATS, _nan_ignoring("amin", np.nanmin)),
    "float16 sum accumulates in float16": Mutant(_ACCUMULATE, "sum", ("float16",), _half_sum),
    "float16 matmul accumulates in float16": Mutant(_ACCUMULATE, "matmul", ("float16",), _half_matmul),
    "float16 cumsum accumulates in float16": Mutant(_ACCUMULATE, "cumsum", ("float16",), _half_cumsum),
    "argmax takes the last occurrence": Mutant("argmax and argmin give the first occurrence", "argmax",
                                               ("bool", "int64", "int8", "float32"), _argmax_last),
    "sort puts NaN first": Mutant("sort puts NaN last ascending", "sort", MUTATED_FLOATS, _sort_nan_first),
    "round half away from zero": Mutant("round is half to even", "round", ("float32", "float64"), _round_half_away),
    "left shift modulo the width": Mutant(_SHIFT, "bitwise_left_shift", _INTS, _shift_modulo("bitwise_left_shift", np.left_shift)),
    "right shift modulo the width": Mutant(_SHIFT, "bitwise_right_shift", _INTS, _shift_modulo("bitwise_right_shift", np.right_shift)),
    # Issue 15, item 3. Until the CPU kernels follow these rules (see KNOWN_CPU_FAILURES in
    # test_conformance.py), the first three mutants and the last behave as the CPU itself does.
    "sign keeps NaN": Mutant("sign(NaN) is 0", "sign", MUTATED_FLOATS, _sign_keeps_nan),
    "remainder zero takes the divisor's sign": Mutant("a zero remainder has the dividend's sign", "remainder",
                                                      MUTATED_FLOATS, _remainder_python_zero),
    "pow refuses negative integer exponents": Mutant("integer pow with a negative exponent: 1, -1 or 0", "pow", _SIGNED,
                                                     _pow_refuses_negative),
    "float to integer refuses out-of-range values": Mutant(_CONVERT, "to (float to integer)", _INTS, _copy_refuses_out_of_range),
    "float to uint8 saturates": Mutant(_CONVERT, "to (float to integer)", ("uint8",), _copy_saturates_uint8),
    "int64 fill_ through a double": Mutant("fill_ writes the number exactly", "full (edge values)", ("int64",),
                                           _fill_through_double),
    "randint refuses ranges over 2**63": Mutant("randint_ ranges up to 2**64 - 1", "randint (64-bit ranges)", ("int64",),
                                                _randint_narrow),
}

ENVIRONMENT_VARIABLE = "TENSORPLUG_MUTANT"


class MutantBackend(CPUBackend):
    device_type = "mutantdev"

    def load(self):
        super().load()
        name = os.environ.get(ENVIRONMENT_VARIABLE, "")
        if name not in MUTANTS:
            raise RuntimeError(f"{ENVIRONMENT_VARIABLE}={name!r} names no mutant; choose one of {sorted(MUTANTS)}")
        self._kernels = dict(self._kernels, **MUTANTS[name].breaks(self._kernels))

    def memory_stats(self, device_index):  # the CPU's statistics are shared with the CPU device
        return {}


class _Plugin:
    @hookimpl
    def tensorplug_register_backends(self):
        return [MutantBackend()]


plugin = _Plugin()
