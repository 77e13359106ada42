"""The records of the op database and the helpers that turn them into tensors.

An :class:`OpEntry` is data: which public callables run the op, which samples feed it, which
NumPy function is the float64 reference, which dtypes it accepts and how close each must be, and
which inputs must raise which error. One sample generator serves a whole family, so adding an op
is usually one line in its family's table.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import numpy as np

from ...backends.api import OPTIONAL_DTYPES, REQUIRED_DTYPES

ALL_DTYPES = REQUIRED_DTYPES + OPTIONAL_DTYPES
FLOAT_DTYPES = ("float32", "float64", "float16", "bfloat16")
INT_DTYPES = ("int64", "uint8", "int8", "int16", "int32")
NUMERIC_DTYPES = FLOAT_DTYPES + INT_DTYPES
INTEGRAL_DTYPES = INT_DTYPES + ("bool",)

#: (rtol, atol) used when an entry does not override them. float16/bfloat16 results are rounded
#: to 11 and 8 significand bits; float32 kernels may use vectorized transcendental functions.
DEFAULT_TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-9, 1e-12),
    "float32": (2e-5, 1e-6),
    "float16": (2e-3, 1e-3),
    "bfloat16": (1.6e-2, 1e-2),
}

#: Elements enough to cross any sane vectorization or threading threshold.
LARGE = 70_003


@dataclass(frozen=True)
class Arg:
    """How to make one tensor input: its shape, value range and layout.

    ``layout`` is ``contiguous``, ``transposed`` (a permuted view of a contiguous tensor),
    ``strided`` (every other element of a bigger tensor) or ``expanded`` (a stride-0 view).
    ``dtype`` fixes the dtype (index tensors are int64, masks bool); None means the sample's.
    """

    shape: tuple[int, ...]
    low: float = -3.0
    high: float = 3.0
    layout: str = "contiguous"
    dtype: str | None = None
    values: Any = None  # explicit values (a nested list) instead of random ones
    grad: bool = True  # whether gradient checks differentiate with respect to it
    nonzero: bool = False  # replace zeros (divisors)
    step: float | None = None  # round values to multiples of step (ties for compare, sort)


@dataclass(frozen=True)
class Sample:
    """One call of an op: tensor inputs (``Arg``), plain positional extras and keywords."""

    args: tuple[Any, ...]
    kwargs: dict = field(default_factory=dict)
    name: str = ""
    large: bool = False  # skipped by --quick
    grad: bool = True  # usable for gradient checks


@dataclass(frozen=True)
class ErrorCase:
    """A call that must fail: ``call(device)`` raises ``exc`` whose message matches ``match``."""

    call: Callable[[str], Any]
    exc: type
    match: str
    name: str = ""


@dataclass
class OpEntry:
    """One public op. ``func``/``method``/``inplace`` are names on ``tp`` and ``Tensor``."""

    name: str
    family: str
    ref: Callable[..., Any]
    samples: Callable[[str], Iterator[Sample]]
    dtypes: tuple[str, ...] = NUMERIC_DTYPES
    func: str | None = ""  # "" means the entry's name; None means no function form
    method: str | None = None
    inplace: str | None = None
    differentiable: bool = True
    grad_samples: Callable[[], Iterator[Sample]] | None = None
    tolerances: dict = field(default_factory=dict)
    errors: tuple[ErrorCase, ...] = ()
    out_dtype: Callable[[str], str] | str = "same"
    call: Callable[..., Any] | None = None  # custom call(tp, *tensors, **kwargs)
    primitive: str | None = None  # the primitive this op exercises directly
    exact: bool = False  # compare bit-for-bit (integer outputs, selections)
    ref_for: dict = field(default_factory=dict)  # per-dtype references (bool arithmetic is logic)
    signed_zeros: bool = False  # a zero must also have the reference's sign (remainder, fmod)
    needs_autocast: bool = False  # runs inside tp.autocast: a dtype is declared by Backend.autocast_dtypes

    def reference(self, dtype: str) -> Callable[..., Any]:
        return self.ref_for.get(dtype, self.ref)

    def tolerance(self, dtype: str) -> tuple[float, float]:
        return self.tolerances.get(dtype, DEFAULT_TOLERANCES.get(dtype, (0.0, 0.0)))

    def result_dtype(self, dtype: str) -> str:
        if callable(self.out_dtype):
            return self.out_dtype(dtype)
        if self.out_dtype == "same":
            return dtype
        if self.out_dtype == "float":  # integer inputs promote to the default float dtype
            return dtype if dtype in FLOAT_DTYPES else "float32"
        return self.out_dtype


# --- values -----------------------------------------------------------------------------------

def _value_range(dtype: str, low: float, high: float) -> tuple[float, float]:
    if dtype == "uint8":
        return max(low, 0.0), max(high, 1.0)
    return low, high


def make_values(arg: Arg, dtype: str, rng: np.random.Generator) -> np.ndarray:
    """Float64 values for ``arg`` that are exactly representable in ``dtype``."""
    dtype = arg.dtype or dtype
    if arg.values is not None:
        return np.asarray(arg.values, dtype=np.float64).reshape(arg.shape)
    if dtype == "bool":
        return (rng.random(arg.shape) < 0.5).astype(np.float64)
    low, high = _value_range(dtype, arg.low, arg.high)
    if dtype in INT_DTYPES:
        values = rng.integers(math.ceil(low), math.floor(high) + 1, size=arg.shape).astype(np.float64)
    else:
        values = rng.uniform(low, high, size=arg.shape)
        if arg.step:
            values = np.round(values / arg.step) * arg.step
    if arg.nonzero:
        values[values == 0] = 1.0
    return round_to(values, dtype)


def round_to(values: np.ndarray, dtype: str) -> np.ndarray:
    """``values`` rounded to ``dtype`` (bfloat16 by round-to-nearest-even on float32 bits)."""
    if dtype == "float16":
        return values.astype(np.float16).astype(np.float64)
    if dtype == "bfloat16":
        bits = np.asarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16
        return bits.astype(np.uint32).view(np.float32).astype(np.float64)
    if dtype == "float32":
        return values.astype(np.float32).astype(np.float64)
    return values


def numpy_dtype(dtype: str) -> np.dtype:
    return np.dtype("float32" if dtype == "bfloat16" else dtype)


def to_tensor(tp, values: np.ndarray, dtype: str, device: str, layout: str = "contiguous"):
    """A ``dtype`` tensor on ``device`` holding ``values`` in the given layout."""
    tdtype = getattr(tp, dtype)

    def build(array: np.ndarray):
        host = np.array(array, dtype=numpy_dtype(dtype), order="C")
        return tp.tensor(host, device=device).to(tdtype)

    if layout == "contiguous" or values.ndim == 0:
        return build(values)
    if layout == "transposed":
        order = tuple(reversed(range(values.ndim)))
        return build(values.transpose(order)).permute(order)
    if layout == "strided":
        big = np.zeros(values.shape[:-1] + (2 * values.shape[-1],))
        big[..., ::2] = values
        return build(big)[..., ::2]
    if layout == "expanded":
        # values must be constant along dim 0: build one row and expand it.
        return build(values[:1]).expand(*values.shape)
    raise ValueError(f"unknown layout {layout!r}")


def to_numpy(t) -> np.ndarray:
    """A tensor's values as float64 NumPy (bool and integers too), read through the CPU."""
    t = t.detach()
    if t.dtype.name == "bfloat16":
        t = t.float()
    return t.cpu().numpy().astype(np.float64)


def materialize(tp, sample: Sample, dtype: str, device: str, seed: int):
    """The sample's tensors on ``device`` and the float64 arrays the reference sees."""
    rng = np.random.default_rng(seed)
    tensors, arrays = [], []
    for arg in sample.args:
        if isinstance(arg, Arg):
            values = np.asarray(make_values(arg, dtype, rng), dtype=np.float64)
            if arg.layout == "expanded" and values.ndim:
                values = np.broadcast_to(values[:1], values.shape).copy()
            t = to_tensor(tp, values, arg.dtype or dtype, device, arg.layout)
            tensors.append(t)
            arrays.append(values)
        elif isinstance(arg, (list, tuple)) and arg and all(isinstance(a, Arg) for a in arg):
            group = [materialize(tp, Sample((a,)), dtype, device, seed + i + 1) for i, a in enumerate(arg)]
            tensors.append([g[0][0] for g in group])
            arrays.append([g[1][0] for g in group])
        else:
            tensors.append(arg)
            arrays.append(arg)
    return tensors, arrays


def compare(got, expected, dtype: str, rtol: float, atol: float, exact: bool,
            signed_zeros: bool = False) -> tuple[bool, float, str]:
    """(ok, max error, message) of ``got`` (float64 array) against ``expected``; with
    ``signed_zeros``, a zero of the wrong sign differs too."""
    expected = np.asarray(expected, dtype=np.float64)
    if got.shape != expected.shape:
        return False, float("inf"), f"shape {list(got.shape)} != expected {list(expected.shape)}"
    if got.size == 0:
        return True, 0.0, ""
    if signed_zeros and dtype in FLOAT_DTYPES:
        wrong = (got == 0) & (expected == 0) & (np.signbit(got) != np.signbit(expected))
        if wrong.any():
            where = np.unravel_index(int(np.argmax(wrong)), got.shape)
            return False, 0.0, (f"{int(wrong.sum())}/{got.size} zeros have the wrong sign; "
                                f"at {list(where)}: got {got[where]!r}, expected {expected[where]!r}")
    if exact or dtype not in FLOAT_DTYPES:
        if dtype not in FLOAT_DTYPES and dtype != "bool":
            expected = _wrap_integer(expected, dtype)
        same = (got == expected) | (np.isnan(got) & np.isnan(expected))
        if same.all():
            return True, 0.0, ""
        with np.errstate(invalid="ignore"):
            diff = np.where(same, 0.0, np.abs(np.nan_to_num(got - expected, nan=np.inf)))
        where = np.unravel_index(int(np.argmax(diff)), got.shape)
        return False, float(diff.max()), f"{int((~same).sum())}/{got.size} differ; at {list(where)}: got {got[where]!r}, expected {expected[where]!r}"
    both_nan = np.isnan(got) & np.isnan(expected)
    same_inf = np.isinf(got) & (got == expected)
    with np.errstate(invalid="ignore"):
        err = np.abs(got - expected)
        bad = ~(both_nan | same_inf | (err <= atol + rtol * np.abs(expected)))
    err = np.where(both_nan | same_inf, 0.0, np.nan_to_num(err, nan=np.inf))
    max_err = float(err.max())
    if not bad.any():
        return True, max_err, ""
    where = np.unravel_index(int(np.argmax(np.where(bad, err, -1))), got.shape)
    return False, max_err, (
        f"{int(bad.sum())}/{got.size} elements outside rtol={rtol:g}, atol={atol:g}; "
        f"at {list(where)}: got {got[where]!r}, expected {expected[where]!r}"
    )


def _wrap_integer(values: np.ndarray, dtype: str) -> np.ndarray:
    """Integer references wrap around as the dtype does (uint8 arithmetic is modular)."""
    finite = np.nan_to_num(values, nan=0.0, posinf=0.0, neginf=0.0)
    return np.trunc(finite).astype(np.int64).astype(np.dtype(dtype)).astype(np.float64)
