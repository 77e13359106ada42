"""Values at the edges of a dtype: float to integer conversions out of range, fills with each
dtype's extreme values, and randint over ranges wider than 32 bits (issue 15).

Two tricks keep the float64 comparison of the checks honest here. Where the contract leaves a
value unspecified (a float out of an integer dtype's range), the call sets those elements to 0
on the host and the reference does the same, so only the specified elements are compared; and
int64 values beyond 2**53, which float64 cannot hold, are compared as two exact 32-bit halves.
"""
from __future__ import annotations

import numpy as np

from . import _refs
from ._core import ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, Arg, ErrorCase, OpEntry, Sample


def _tp():
    import tensorplug

    return tensorplug


def _halves(values) -> np.ndarray:
    """int64 values as rows (high 32 bits, signed; low 32 bits): each exact in float64."""
    values = np.asarray(values, dtype=np.int64)
    return np.stack([values >> 32, values & 0xFFFFFFFF])


def _host_result(tp, values: np.ndarray):
    """A CPU tensor holding ``values`` (the checks read results through the CPU anyway)."""
    return tp.tensor(values)


# --- float to integer ------------------------------------------------------------------------
IN_RANGE = [-2.75, -1.0, -0.5, -0.0, 0.5, 1.5, 3.25, 100.0, 127.9, -128.9]
#: Beside ordinary values: too large for int32 or every dtype, infinities, NaN, and values just
#: past the ends of int32 (2**31 and the float32 below -2**31) and int8/int16/uint8.
OUT_OF_RANGE = [3e9, -3e9, 1e20, float("inf"), float("-inf"), float("nan"), 2147483648.0, -2147483904.0,
                7.5, 200.0, -300.0, 70000.0, 40000.0, -1.0]


def specified(source: np.ndarray, dtype: str) -> np.ndarray:
    """Where the contract fixes float -> ``dtype``: the truncated value fits the dtype, or, for
    uint8, it fits int64 (then it wraps modulo 256, as PyTorch converts through int64)."""
    with np.errstate(invalid="ignore"):
        whole = np.trunc(np.nan_to_num(source, nan=np.inf))
        if dtype == "uint8":
            return np.abs(whole) < 2.0 ** 63
        info = np.iinfo(dtype)
        return (whole >= info.min) & (whole <= info.max)


def _to_integer(tp, x, dtype):
    converted = x.to(getattr(tp, dtype)).cpu().numpy()  # must not raise, whatever the values
    keep = specified(x.detach().cpu().numpy().astype(np.float64), dtype)
    return _host_result(tp, np.where(keep, converted, 0).astype(converted.dtype))


def _to_integer_ref(source, dtype):
    return np.where(specified(source, dtype), np.trunc(np.nan_to_num(source)), 0.0)  # wraps in compare


def _conversion_samples(dtype):
    yield Sample((Arg((len(IN_RANGE),), values=IN_RANGE, dtype="float32"),), {"dtype": dtype}, name="in range")
    yield Sample((Arg((len(OUT_OF_RANGE),), values=OUT_OF_RANGE, dtype="float32"),), {"dtype": dtype},
                 name="out of range beside in-range values")
    yield Sample((Arg((len(OUT_OF_RANGE),), values=OUT_OF_RANGE, dtype="float32", layout="strided"),), {"dtype": dtype},
                 name="out of range, strided")


# --- fills with edge values --------------------------------------------------------------------
def edge_values(dtype: str) -> list:
    """Python numbers at the ends of ``dtype``, and the ones PyTorch wraps (-1 into uint8)."""
    if dtype == "bool":
        return [True, False, 2, float("nan")]
    if dtype in FLOAT_DTYPES:
        largest = {"float16": 65504.0, "bfloat16": 3.3895313892515355e38, "float32": 3.4028234663852886e38,
                   "float64": 1.7976931348623157e308}[dtype]
        return [largest, -largest, float("inf"), float("-inf"), float("nan"), -0.0, 2.5]
    if dtype == "uint8":
        return [255, 0, -1, -255, 7.9]
    info = np.iinfo(dtype)
    return [int(info.max), int(info.min), -1, 7.9]


def _full(tp, like, value):
    result = tp.full((5,), value, dtype=like.dtype, device=like.device)
    if like.dtype.name == "int64":
        return _host_result(tp, _halves(result.cpu().numpy()))
    return result


def _full_ref(like, value):
    return np.full(5, value, dtype=np.float64)  # integers wrap and truncate in the comparison


def _full_samples(dtype):
    for value in edge_values(dtype):
        yield Sample((Arg((1,)), value), name=f"value {value!r}", grad=False)


def _full_int64_ref(like, value):
    return _halves(np.full(5, value, dtype=np.int64))


def _fill_refs():
    refs = {"bool": lambda like, value: np.full(5, float(bool(value)))}
    refs["int64"] = _full_int64_ref
    return refs


# --- randint over 64-bit ranges ----------------------------------------------------------------
RANDINT_N = 1001  # odd: the last Philox block is used only in part
RANDINT_RANGES = [(-2 ** 63, 2 ** 63 - 1, "the whole int64 range (2**64 - 1)"), (-2 ** 62, 2 ** 62, "2**63"),
                  (0, 2 ** 63 - 1, "[0, 2**63 - 1)"), (-2 ** 63, -2 ** 63 + 2 ** 32 + 1, "just over 2**32"),
                  (-3, 2 ** 32 - 3, "exactly 2**32 (32-bit words)")]


def _randint(tp, like, low, high, seed):
    """1001 integers from a fresh generator on ``like``'s device (``like`` only names the device)."""
    generator = tp.Generator(device=like.device).manual_seed(seed)
    drawn = tp.randint(low, high, (RANDINT_N,), generator=generator, device=like.device)
    return _host_result(tp, _halves(drawn.cpu().numpy()))


def _randint_ref(like, low, high, seed):
    return _halves(_refs.randint(RANDINT_N, seed, 0, low, high))


def _randint_samples(dtype):
    for index, (low, high, name) in enumerate(RANDINT_RANGES):
        yield Sample((Arg((1,)),), {"low": low, "high": high, "seed": 1000 + index}, name=name, grad=False)


ENTRIES = [
    OpEntry("to (float to integer)", "copy", _to_integer_ref, _conversion_samples, dtypes=INT_DTYPES, func=None,
            call=_to_integer, differentiable=False, exact=True, primitive="copy_"),
    OpEntry("full (edge values)", "copy", _full_ref, _full_samples, dtypes=ALL_DTYPES, func=None, call=_full,
            differentiable=False, primitive="fill_", signed_zeros=True, ref_for=_fill_refs(),
            errors=(ErrorCase(lambda d: _tp().full((2,), 2 ** 63, dtype=_tp().int64, device=d), RuntimeError,
                              r"cannot be converted to type int64 without overflow", "2**63 into int64"),
                    ErrorCase(lambda d: _tp().full((2,), float("nan"), dtype=_tp().int64, device=d), RuntimeError,
                              r"fill_\(\): cannot fill a int64 tensor with nan", "NaN into int64"))),
    OpEntry("randint (64-bit ranges)", "random", _randint_ref, _randint_samples, dtypes=("int64",), func=None,
            call=_randint, differentiable=False, exact=True, primitive="randint_",
            errors=(ErrorCase(lambda d: _tp().randint(0, 2 ** 63, (2,), device=d), ValueError, r"does not fit in int64",
                              "high 2**63"),)),
]
