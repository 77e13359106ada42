"""The machinery of the differential tests: devices, settings, input strategies, and running one
call under two libraries and comparing what comes back.

A *case* is a library-neutral description of a call: tensor arguments are :class:`TensorArg`
(NumPy values, a dtype name, a layout), everything else is a plain Python value. ``realize``
turns a case into real arguments for one library (tensorplug on a device, or PyTorch on the
CPU); the op table calls the op through a small namespace ``L`` that gives each library's
spelling (``L.lib``, ``L.F``). Both calls run, and :func:`compare_outcomes` demands the same
outcome: both raise, or both return values of the same shape, dtype and (within tolerance)
value. A call where the reference raises and tensorplug returns is a silent wrong answer.

Environment variables:

* ``TENSORPLUG_DIFFERENTIAL_EXAMPLES``: examples per op and backend (default: a few, for CI);
* ``TENSORPLUG_DIFFERENTIAL_RANDOM=1``: explore new examples instead of the fixed derandomized
  sequence (a failure prints the example to reproduce it);
* ``TENSORPLUG_DIFFERENTIAL_COLLECT=path``: record disagreements as JSON lines in ``path`` and
  keep going (for a long survey run) instead of failing at the first one.
"""
from __future__ import annotations

import contextlib
import importlib.util
import json
import math
import os
import warnings
from dataclasses import dataclass, field

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

import tensorplug as tp

EXAMPLES = int(os.environ.get("TENSORPLUG_DIFFERENTIAL_EXAMPLES", "0") or 0)
RANDOM = os.environ.get("TENSORPLUG_DIFFERENTIAL_RANDOM", "") == "1"
COLLECT = os.environ.get("TENSORPLUG_DIFFERENTIAL_COLLECT", "")


def hypothesis_settings(ci_examples: int) -> settings:
    """Few derandomized examples in CI (reproducible), many when the long mode asks for them.

    No example database: the tests run in a shared tree, and derandomized runs need none.
    """
    return settings(
        max_examples=EXAMPLES or ci_examples,
        deadline=None,
        derandomize=not RANDOM,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )


# --- devices ------------------------------------------------------------------------------------
def _backend_available(device_type: str):
    try:
        backend = tp.backends.backend_for(device_type)
        ok, reason = backend.is_available()
        return ok, reason, frozenset(backend.dtypes)
    except Exception as exc:  # a missing or broken backend is a reason to skip, not an error
        return False, f"{type(exc).__name__}: {exc}", frozenset()


def devices() -> list:
    """pytest params for every backend present: cpu always, opencl when a device works, npdev
    when the example plugin is installed; others are skipped with the reason."""
    import pytest

    params = []
    for device_type in ("cpu", "opencl", "npdev"):
        if device_type == "npdev" and importlib.util.find_spec("tensorplug_npdev") is None:
            params.append(pytest.param(device_type, marks=pytest.mark.skip(
                reason="the example plugin is not installed: python -m pip install ./plugins/tensorplug-npdev")))
            continue
        ok, reason, _ = _backend_available(device_type)
        if ok:
            params.append(device_type)
        else:
            params.append(pytest.param(device_type, marks=pytest.mark.skip(reason=f"{device_type} unavailable: {reason}")))
    return params


def device_dtypes(device_type: str) -> frozenset:
    return _backend_available(device_type)[2]


# --- inputs -------------------------------------------------------------------------------------
FLOAT_DTYPES = ("float32", "float64", "float16", "bfloat16")
INT_DTYPES = ("int64", "int32", "int16", "int8", "uint8")
ALL_DTYPES = FLOAT_DTYPES + INT_DTYPES + ("bool",)
LAYOUTS = ("contiguous", "transposed", "sliced", "expanded")


@dataclass
class TensorArg:
    """A tensor argument: values of ``base_shape`` (broadcast to ``shape`` when expanded)."""

    values: np.ndarray
    dtype: str
    layout: str = "contiguous"
    shape: tuple = ()
    requires_grad: bool = False

    def __repr__(self) -> str:  # what hypothesis prints for a failing example
        return (f"TensorArg({self.values.tolist()!r}, dtype={self.dtype!r}, layout={self.layout!r}, shape={self.shape}"
                f"{', requires_grad=True' if self.requires_grad else ''})")


@dataclass
class Case:
    args: tuple
    kwargs: dict = field(default_factory=dict)

    def tensors(self):
        return [a for a in list(self.args) + list(self.kwargs.values()) if isinstance(a, TensorArg)]


def float_values(dtype: str):
    """Floats that reach the edges: NaN, infinities, signed zeros, huge and tiny magnitudes."""
    huge = {"float16": 6.0e4, "bfloat16": 3.0e38, "float32": 3.0e38, "float64": 1.0e300}[dtype]
    edges = [math.nan, math.inf, -math.inf, -0.0, 0.0, huge, -huge, 1e-40, -1e-30, 1e-7, 0.5, -0.5, 1.0, -1.0, 2.0]
    ordinary = st.floats(-8.0, 8.0, allow_nan=False, width=32)
    return st.one_of(ordinary, ordinary, ordinary, st.sampled_from(edges))


def int_values(dtype: str):
    info = np.iinfo(dtype)
    edges = [int(info.min), int(info.max), 0, 1, -1 if info.min < 0 else 2]
    return st.one_of(st.integers(max(-6, int(info.min)), 6), st.sampled_from(edges))


def element_strategy(dtype: str, finite: bool = False, low=None, high=None):
    if dtype == "bool":
        return st.booleans()
    if dtype in INT_DTYPES:
        if low is not None:
            return st.integers(low, high)
        return int_values(dtype)
    if finite or low is not None:
        return st.floats(-4.0 if low is None else low, 4.0 if high is None else high, allow_nan=False, width=32)
    return float_values(dtype)


def _numpy_storage_dtype(dtype: str):
    return np.float32 if dtype == "bfloat16" else np.dtype(dtype)


@st.composite
def tensor_args(draw, dtype: str, shape: tuple, layout=None, finite: bool = False, low=None, high=None,
                requires_grad: bool = False):
    """A TensorArg of ``shape`` and ``dtype`` in a drawn layout, values including edge values."""
    layout = draw(st.sampled_from(LAYOUTS)) if layout is None else layout
    if layout == "transposed" and len(shape) < 2:
        layout = "contiguous"
    if layout == "sliced" and len(shape) < 1:
        layout = "contiguous"
    base_shape = shape
    if layout == "expanded":
        # Expand size-1 dims (and possibly a new leading dim): the values repeat along them.
        lead = draw(st.integers(0, 1)) if shape else 0
        base_shape = tuple(1 if draw(st.booleans()) else n for n in shape[lead:])
        if base_shape == shape:
            layout = "contiguous"
    count = int(np.prod(base_shape)) if base_shape else 1
    elements = element_strategy(dtype, finite, low, high)
    flat = draw(st.lists(elements, min_size=count, max_size=count))
    storage = _numpy_storage_dtype(dtype)
    with np.errstate(all="ignore"):
        values = np.array(flat, dtype=np.float64 if dtype in FLOAT_DTYPES else object).astype(storage).reshape(base_shape)
    return TensorArg(values, dtype, layout, tuple(shape), requires_grad and dtype in FLOAT_DTYPES)


SHAPES = st.lists(st.integers(0, 4), min_size=0, max_size=3).map(tuple)
NONEMPTY_SHAPES = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)


@st.composite
def broadcastable_shape(draw, shape: tuple):
    """A shape that broadcasts with ``shape`` (trailing dims equal or 1, maybe fewer dims),
    sometimes one that does not (to check both libraries refuse it)."""
    if draw(st.integers(0, 19)) == 0:
        return draw(SHAPES)
    keep = draw(st.integers(0, len(shape)))
    tail = shape[len(shape) - keep:]
    return tuple(1 if draw(st.booleans()) else n for n in tail)


def scalars():
    """Python numbers, including ones that overflow 16-bit floats or small integer dtypes."""
    return st.one_of(
        st.sampled_from([2, -3, 0, 1, True, False, 0.5, -1.5, 2.0, 70000.0, 1e5, 1e-5, 1e30, -0.0,
                         math.nan, math.inf, -math.inf, 300, -129, 2 ** 40]),
        st.integers(-5, 5),
        st.floats(-4, 4, allow_nan=False, width=32),
    )


# --- realizing a case in one library ------------------------------------------------------------
class Library:
    """One library's spelling: ``lib`` (tensorplug or torch) and ``F`` (its nn.functional)."""

    def __init__(self, name: str, device: str = "cpu"):
        self.name = name
        self.device = device
        if name == "torch":
            import torch
            import torch.nn.functional as F

            self.lib, self.F = torch, F
        else:
            import tensorplug.nn.functional as F

            self.lib, self.F = tp, F

    def synchronize(self) -> None:
        if not self.is_torch and self.device != "cpu":
            tp.backends.backend_for(self.device).synchronize(0)

    @property
    def is_torch(self) -> bool:
        return self.name == "torch"

    def dtype(self, name: str):
        return getattr(self.lib, name)

    def tensor(self, arg: TensorArg):
        """(the tensor, its base): the base is what an in-place change must also show in."""
        lib = self.lib
        values = arg.values
        if arg.layout == "transposed":
            order = tuple(reversed(range(values.ndim)))
            values = np.ascontiguousarray(values.transpose(order))
        elif arg.layout == "sliced":
            big = np.zeros(values.shape[:-1] + (2 * values.shape[-1] + 1,), dtype=values.dtype)
            big[..., 1::2] = values
            values = big
        if self.is_torch:
            base = lib.from_numpy(np.array(values))
        else:
            base = tp.tensor(np.array(values))
        if arg.dtype == "bfloat16":
            base = base.to(lib.bfloat16)
        if not self.is_torch and self.device != "cpu":
            base = base.to(self.device)
        if arg.layout == "transposed":
            t = base.permute(*reversed(range(values.ndim)))
        elif arg.layout == "sliced":
            t = base[..., 1::2]
        elif arg.layout == "expanded":
            t = base.expand(*arg.shape)
        else:
            t = base
        if arg.requires_grad:
            # A leaf of the requested layout: autograd must handle strided leaves too.
            base = base.detach().requires_grad_(True)
            t = base if arg.layout in ("contiguous",) else _reapply_layout(base, arg)
        return t, base

    def realize(self, case: Case):
        bases = []

        def convert(value):
            if isinstance(value, TensorArg):
                t, base = self.tensor(value)
                bases.append((t, base))
                return t
            if isinstance(value, list) and any(isinstance(v, TensorArg) for v in value):
                return [convert(v) for v in value]
            if isinstance(value, tuple) and any(isinstance(v, TensorArg) for v in value):
                return tuple(convert(v) for v in value)
            return value

        args = tuple(convert(a) for a in case.args)
        kwargs = {k: convert(v) for k, v in case.kwargs.items()}
        return args, kwargs, bases


def _reapply_layout(base, arg: TensorArg):
    if arg.layout == "transposed":
        return base.permute(*reversed(range(base.ndim)))
    if arg.layout == "sliced":
        return base[..., 1::2]
    return base.expand(*arg.shape)


# --- running and comparing ----------------------------------------------------------------------
@dataclass
class Outcome:
    """What a call did: ``error`` (the exception) or ``value``; warnings it gave; the
    arguments' bases afterwards (for in-place and out= checks)."""

    value: object = None
    error: BaseException | None = None
    warned_resize: bool = False
    extra: dict = field(default_factory=dict)


def run_call(fn, synchronize=None) -> Outcome:
    """Call ``fn``; errors of asynchronous devices surface in ``synchronize``, inside the call."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = fn()
            if synchronize is not None:
                synchronize()
        except Exception as exc:  # the outcome being compared, whatever it is
            return Outcome(error=exc)
    resized = any("resized" in str(w.message) for w in caught)
    return Outcome(value=value, warned_resize=resized)


def to_numpy(value):
    """A tensorplug or torch tensor as (NumPy array, dtype name); other values unchanged."""
    if isinstance(value, tp.Tensor):
        t = value.detach()
        name = t.dtype.name
        if name == "bfloat16":
            t = t.float()
        return np.array(t.cpu().numpy()), name
    try:
        import torch
    except ImportError:  # the NumPy-referenced tests run without torch
        torch = None
    if torch is not None and isinstance(value, torch.Tensor):
        t = value.detach()
        name = str(t.dtype).replace("torch.", "")
        if name == "bfloat16":
            t = t.float()
        # force: a gradient PyTorch knows to be zero (sgn's) is a ZeroTensor, which needs it
        return np.array(t.cpu().numpy(force=True)), name
    if isinstance(value, np.ndarray):
        return value, str(value.dtype)
    return value, None


TOLERANCES = {  # (rtol, atol) per result dtype
    "float64": (1e-7, 1e-10), "float32": (2e-5, 2e-6), "float16": (2e-3, 2e-4), "bfloat16": (2e-2, 2e-3),
}


class Disagreement(AssertionError):
    pass


def values_match(got, expected, rtol=None, atol=None) -> str | None:
    """None when ``got`` (tensorplug) matches ``expected`` (reference), else why not."""
    if isinstance(expected, (tuple, list)):
        if not isinstance(got, (tuple, list)) or len(got) != len(expected):
            return f"expected a sequence of {len(expected)} results, got {type(got).__name__}"
        for i, (g, e) in enumerate(zip(got, expected)):
            why = values_match(g, e, rtol, atol)
            if why:
                return f"result {i}: {why}"
        return None
    g, gdtype = to_numpy(got)
    e, edtype = to_numpy(expected)
    if edtype is None:  # a Python value
        if isinstance(e, float) and isinstance(g, (int, float)):
            return None if (math.isnan(e) and math.isnan(g)) or math.isclose(g, e, rel_tol=1e-5, abs_tol=1e-6) else f"{g} != {e}"
        return None if g == e or (g is None and e is None) else f"{g!r} != {e!r}"
    if gdtype is None:
        return f"expected a tensor, got {type(got).__name__}: {got!r}"
    if gdtype != edtype:
        return f"dtype {gdtype} != {edtype}"
    if g.shape != e.shape:
        return f"shape {g.shape} != {e.shape}"
    if e.dtype.kind in "biu":
        if not np.array_equal(g, e):
            return f"values differ:\n got {g!r}\n expected {e!r}"
        return None
    r, a = TOLERANCES.get(edtype, (1e-5, 1e-6))
    r, a = rtol or r, atol or a
    g64, e64 = g.astype(np.float64), e.astype(np.float64)
    same_nan = np.array_equal(np.isnan(g64), np.isnan(e64))
    with np.errstate(invalid="ignore"):
        same_inf = np.array_equal(np.where(np.isinf(e64), e64, 0), np.where(np.isinf(g64), g64, 0))
        finite = np.isfinite(e64) & np.isfinite(g64)
        close = np.all(np.abs(g64[finite] - e64[finite]) <= a + r * np.abs(e64[finite]))
    if not (same_nan and same_inf and close):
        return f"values differ:\n got {g!r}\n expected {e!r}"
    return None


def record(kind: str, op: str, device: str, detail: str, case=None) -> None:
    """A disagreement: fail, or in the collect mode append it to the JSON lines file."""
    message = f"[{device}] {op}: {kind}: {detail}"
    if COLLECT:
        with open(COLLECT, "a") as f:
            f.write(json.dumps({"op": op, "device": device, "kind": kind, "detail": detail[:2000],
                                "case": repr(case)[:2000]}) + "\n")
        return
    raise Disagreement(message + (f"\ncase: {case!r}" if case is not None else ""))


def note_calls(op: str, device: str, count: int) -> None:
    """In the collect mode, record how many calls a test made (a long run's calls per backend
    are the sum of these lines, kind "calls")."""
    if COLLECT:
        with open(COLLECT, "a") as f:
            f.write(json.dumps({"op": op, "device": device, "kind": "calls", "count": count}) + "\n")


def compare_outcomes(op: str, device: str, got: Outcome, expected: Outcome, case, tol=None, known=None) -> bool:
    """Check tensorplug's outcome against the reference's; True when both returned values.

    ``known(kind)`` may excuse a documented disagreement of that kind ("silent", "raised",
    "values") for this case.
    """
    def report(kind, *rest):
        if known is None or not known(kind):
            record(kind, *rest)

    if expected.error is not None and got.error is None:
        report("silent", op, device, f"the reference raised {type(expected.error).__name__}: {expected.error}; "
                                     f"tensorplug returned {_short(got.value)}", case)
        return False
    if got.error is not None and expected.error is None:
        report("raised", op, device, f"tensorplug raised {type(got.error).__name__}: {got.error}; the reference returned "
                                     f"{_short(expected.value)}", case)
        return False
    if got.error is not None:
        return False
    why = values_match(got.value, expected.value, *(tol or (None, None)))
    if why:
        report("values", op, device, why, case)
        return False
    return True


def _short(value) -> str:
    text = repr(value)
    return text if len(text) < 300 else text[:300] + "..."


@contextlib.contextmanager
def quiet():
    """Neither library's warnings become errors while a call is being compared."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield
