"""Mutants for the suite's own mutation check: the CPU backend's kernels under the device type
``mutantdev``, with exactly one rule of the backend contract broken, chosen by the environment
variable ``TENSORPLUG_MUTANT`` (a key of :data:`MUTANTS`).

Each mutant is a bug a real backend was certified with: the real kernel runs, then the mutant
rewrites the output on the host (CPU memory is host memory, so ``to_host`` is a writable view)
the way the broken kernel would have computed it. Dtypes the rule does not concern are left
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


_NAN = "maximum, minimum, amax, amin propagate NaN"
_ACCUMULATE = "sum, cumsum and matmul accumulate float16 and bfloat16 in float32 or wider"
_SHIFT = "a shift by the bit width or more gives 0 (an arithmetic right shift of a negative value: -1)"
_INTS = tuple(_WIDTH)

MUTANTS = {
    "maximum drops NaN": Mutant(_NAN, "maximum", MUTATED_FLOATS, _nan_dropping("maximum", np.fmax)),
    "minimum drops NaN": Mutant(_NAN, "minimum", MUTATED_FLOATS, _nan_dropping("minimum", np.fmin)),
    "amax ignores NaN": Mutant(_NAN, "amax", MUTATED_FLOATS, _nan_ignoring("amax", np.nanmax)),
    "amin ignores NaN": Mutant(_NAN, "amin", MUTATED_FLOATS, _nan_ignoring("amin", np.nanmin)),
    "float16 sum accumulates in float16": Mutant(_ACCUMULATE, "sum", ("float16",), _half_sum),
    "float16 matmul accumulates in float16": Mutant(_ACCUMULATE, "matmul", ("float16",), _half_matmul),
    "round half away from zero": Mutant("round is half to even", "round", ("float32", "float64"), _round_half_away),
    "left shift modulo the width": Mutant(_SHIFT, "bitwise_left_shift", _INTS, _shift_modulo("bitwise_left_shift", np.left_shift)),
    "right shift modulo the width": Mutant(_SHIFT, "bitwise_right_shift", _INTS, _shift_modulo("bitwise_right_shift", np.right_shift)),
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
