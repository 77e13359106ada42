"""Differential tests against PyTorch: every op of the table (differential_ops.py), drawn with
hypothesis over shapes (0-size and 0-d included), layouts, dtypes and edge values, called as a
function, with out=, in place and under autograd, on every backend present. Each call must do
what PyTorch 2.x does: raise where it raises, else give the same dtype, shape and values.

CI runs a few derandomized examples per op and backend; a long run sets
``TENSORPLUG_DIFFERENTIAL_EXAMPLES`` (see differential_harness.py). Known, documented
disagreements are listed in ``KNOWN`` with the reason (and in docs/deviations.md).
"""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip(
    "torch", reason="the differential tests use PyTorch as the reference and it is not installed "
                    "(pip install 'tensorplug[torch]'); test_differential_numpy.py still runs against NumPy")

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from differential_harness import (  # noqa: E402
    ALL_DTYPES, INT_DTYPES, Case, Library, Outcome, TensorArg, compare_outcomes, device_dtypes, devices,
    hypothesis_settings, note_calls, quiet, record, run_call,
)
from differential_ops import BY_NAME  # noqa: E402

CI_EXAMPLES = 6

def _number_operand(case) -> bool:
    return any(not isinstance(a, TensorArg) for a in case.args[:2])


def _has(case, predicate) -> bool:
    """Whether any tensor argument holds a value for which ``predicate`` (on float64) is true."""
    for arg in case.tensors():
        if arg.dtype in ("float32", "float64", "float16", "bfloat16") and arg.values.size:
            with np.errstate(all="ignore"):
                if np.any(predicate(np.asarray(arg.values, dtype=np.float64))):
                    return True
    return False


def _near_overflow(case) -> bool:
    """Infinities, or values within a factor of 2**10 of their dtype's largest: where an
    intermediate result overflows (or inf - inf appears) depends on the order of operations."""
    limits = {"float16": 65504.0, "bfloat16": 3.39e38, "float32": 3.4e38, "float64": 1.79e308}
    for arg in case.tensors():
        if arg.dtype in limits and arg.values.size:
            with np.errstate(all="ignore"):
                if np.any(np.abs(np.asarray(arg.values, dtype=np.float64)) >= limits[arg.dtype] / 1024):
                    return True
    return False


def _addmv_quirk(case) -> bool:
    bias, mat, vec = case.args[:3]
    empty = 0 in mat.shape
    return (empty and bias.shape != mat.shape[:1]) or (case.kwargs.get("alpha") == 0 and vec.layout == "expanded")


#: Disagreements that are on purpose: (op names, kind, does it apply to this case, reason).
#: Every one is also a row of docs/deviations.md. Kind "gradient" excuses a gradient comparison.
KNOWN: list = [
    ({"var_mean"}, "values", lambda case: _has(case, np.isinf),
     "var_mean's mean of values holding inf is inf (as mean() gives); PyTorch's one-pass algorithm gives NaN"),
    ({"addmv"}, "values", _addmv_quirk,
     "PyTorch's addmv with an empty matrix returns beta * input at input's shape (not the product's), and with "
     "alpha = 0 and a stride-0 vector multiplies NaN/inf by 0; tensorplug follows the contiguous case"),
    ({"matmul"}, "warning", lambda case: True,
     "PyTorch warns about resizing a correctly shaped out= of a 1-D @ 2-D product (it resizes internally)"),
    ({"gelu"}, "values", lambda case: _has(case, np.isinf),
     "PyTorch's vectorized float32 gelu gives NaN at +-inf (float64 gives the limits); tensorplug the limits"),
    ({"hardtanh", "relu6"}, "gradient", lambda case: _has(case, np.isnan),
     "PyTorch's hardtanh gradient at NaN is grad in its scalar loop and 0 in its vectorized loop (it depends "
     "on the element's position); tensorplug's is 0"),
    ({"addmm", "addmv", "matmul", "mm", "mv", "cumprod", "prod", "var", "std", "var_mean", "logsumexp", "norm",
      "softmax", "log_softmax", "div", "atan2", "normalize", "pairwise_distance", "kl_div", "elu", "silu",
      "gelu", "softplus", "sum", "mean", "nansum", "nanmean", "cumsum"},
     "values", _near_overflow,
     "with infinities or values near the dtype's largest, whether an intermediate overflows (inf vs a finite "
     "value, NaN vs inf) depends on the order of operations, which neither library specifies"),
    ({"addmm", "addmv", "matmul", "mm", "mv", "cumprod", "prod", "var", "std", "var_mean", "logsumexp", "norm",
      "softmax", "log_softmax", "div", "atan2", "normalize", "pairwise_distance", "kl_div", "elu", "silu",
      "gelu", "softplus"},
     "gradient", _near_overflow, "as above, for gradients"),
    ({"maximum", "minimum", "atan2", "hypot", "copysign", "logical_and", "logical_xor", "bitwise_left_shift",
      "bitwise_right_shift"}, "silent", _number_operand,
     "tensorplug's functional forms accept a Python number for either operand; PyTorch's require a Tensor "
     "(TypeError) for these"),
    ({"all"}, "values", lambda case: case.args[0].dtype == "uint8",
     "all / any always give bool; PyTorch gives uint8 for uint8 inputs (a legacy of byte masks)"),
    ({"sum"}, "silent", lambda case: "dim" not in case.kwargs,
     "tensorplug's sum(x, out=o) without a dim sums every dim, as sum(x, dim=None, out=o) does in both libraries; "
     "PyTorch's out= overload of sum needs the dim argument spelled out (TypeError)"),
    ({"maximum", "minimum"}, "silent", lambda case: True,
     "tensorplug has in-place maximum_ / minimum_ methods (every binary op has one); PyTorch has none"),
]

def _unconvertible(case, out_dtype) -> bool:
    """Float inputs that an integer out= dtype cannot hold (NaN, infinities, values beyond its
    range; uint8 converts through int64): the conversion is unspecified (docs/backend-contract.md,
    "Float to integer conversion"), so every backend and PyTorch may differ."""
    if out_dtype not in INT_DTYPES:
        return False
    bits = {"int64": 63, "int32": 31, "int16": 15, "int8": 7, "uint8": 63}[out_dtype]
    return _has(case, lambda v: ~np.isfinite(v) | (np.abs(v) >= 2.0 ** bits))


#: Disagreements of the out= variant that depend on out's dtype: (op names, kind, does it apply
#: to this case and out dtype, reason).
KNOWN_OUT: list = [
    ({"sum", "prod", "cumsum", "cumprod"}, "values", _unconvertible,
     "the reductions compute in out's dtype, converting the input first: a float that an integer dtype cannot "
     "hold converts to an unspecified value (backend contract; PyTorch's CPU gives INT_MIN)"),
]

#: Ops with disagreements still open (issue 16); each entry goes once its root cause is fixed.
PENDING: dict = {}


def _variants(spec, device):
    variants = ["call"]
    if spec.out:
        variants.append("out")
    if spec.inplace is not None:
        variants.append("inplace")
    if spec.grad:
        variants.append("grad")
    return variants


def _with_grad(case: Case) -> Case:
    def mark(value):
        if isinstance(value, TensorArg) and value.dtype in ("float32", "float64"):
            return TensorArg(value.values, value.dtype, value.layout, value.shape, True)
        if isinstance(value, (list, tuple)):
            return type(value)(mark(v) for v in value)
        return value

    return Case(tuple(mark(a) for a in case.args), {k: mark(v) for k, v in case.kwargs.items()})


def _float_tensors(value, L):
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _float_tensors(v, L)]
    if isinstance(value, L.lib.Tensor) and value.dtype.is_floating_point and value.requires_grad:
        return [value]
    return []


def _weighted_sum(L, tensors):
    """A scalar loss with distinct weights per element, so every gradient entry matters."""
    total = None
    for t in tensors:
        n = t.numel()
        weights = np.linspace(-1.0, 2.0, n).reshape(t.shape) if n else np.zeros(t.shape)
        w = L.lib.tensor(weights, dtype=t.dtype)
        if not L.is_torch and L.device != "cpu":
            w = w.to(L.device)
        term = (t * w).sum()
        total = term if total is None else total + term
    return total


def _leaf_grads(bases):
    return [base.grad for _, base in bases if getattr(base, "requires_grad", False)]


def _run(L, spec, case, variant, out_spec=None):
    """Run one variant in library L; return (outcome, bases)."""
    args, kwargs, bases = L.realize(case)
    if variant == "inplace":
        def call():
            returned = spec.inplace(L, *args, **kwargs)
            # What the caller sees: the returned value, the object itself, and its base.
            return returned, args[0], bases[0][1]
    elif variant == "out":
        shape, dtype = out_spec
        out = L.lib.zeros(shape, dtype=L.dtype(dtype))
        if not L.is_torch and L.device != "cpu":
            out = out.to(L.device)

        def call():
            returned = spec.call(L, *args, **kwargs, out=out)
            return returned, out
    else:
        def call():
            return spec.call(L, *args, **kwargs)
    return run_call(call, L.synchronize), bases


def _known(name, case, out_dtype=None):
    def excused(kind) -> bool:
        if any(name in names and kind == k and applies(case, out_dtype) for names, k, applies, _ in KNOWN_OUT):
            return True
        return any(name in names and kind == k and applies(case) for names, k, applies, _ in KNOWN)

    return excused


def check_example(name, device, case, variant, out_choice, out_dtype):
    spec = BY_NAME[name]
    ref, mine = Library("torch"), Library("tensorplug", device)
    if variant == "grad":
        case = _with_grad(case)
    out_spec = None
    if variant == "out":
        with quiet():
            plain = run_call(lambda: spec.call(ref, *ref.realize(case)[0], **ref.realize(case)[1]))
        if plain.error is not None or not isinstance(plain.value, torch.Tensor):
            variant = "call"
        else:
            shape = tuple(plain.value.shape)
            shape = [shape, (plain.value.numel() + 1,), (0,)][out_choice]
            dtype = str(plain.value.dtype).replace("torch.", "") if out_dtype is None else out_dtype
            if dtype not in device_dtypes(device):
                dtype = str(plain.value.dtype).replace("torch.", "")
            out_spec = (shape, dtype)
    label = f"{name} ({variant}{'' if out_spec is None else f', out={out_spec}'})"
    expected, ref_bases = _run(ref, spec, case, variant, out_spec)
    got, my_bases = _run(mine, spec, case, variant, out_spec)
    both = compare_outcomes(label, device, got, expected, case, spec.tol,
                            _known(name, case, None if out_spec is None else out_spec[1]))
    if both and variant == "out" and got.warned_resize != expected.warned_resize:
        record("warning", label, device, f"resize warning: tensorplug {got.warned_resize}, PyTorch {expected.warned_resize}", case)
    if both and variant == "grad":
        ref_grad = run_call(lambda: _backward(ref, expected.value, ref_bases))
        my_grad = run_call(lambda: _backward(mine, got.value, my_bases))
        gradient_known = _known(name, case)
        compare_outcomes(label + " gradient", device, my_grad, ref_grad, case, spec.tol,
                         lambda kind: gradient_known("gradient" if kind == "values" else kind))


def _backward(L, value, bases):
    tensors = _float_tensors(value, L)
    if not tensors:
        return []
    _weighted_sum(L, tensors).backward()
    return [g if g is not None else "no gradient" for g in _leaf_grads(bases)]


def _op_params():
    return [pytest.param(name, marks=pytest.mark.xfail(reason=PENDING[name], strict=False)) if name in PENDING else name
            for name in sorted(BY_NAME)]


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("name", _op_params())
def test_matches_pytorch(name, device):
    spec = BY_NAME[name]
    dtypes = device_dtypes(device)

    @hypothesis_settings(CI_EXAMPLES)
    @given(case=spec.cases(dtypes), variant=st.sampled_from(_variants(spec, device)), out_choice=st.integers(0, 2),
           out_dtype=st.one_of(st.none(), st.sampled_from(ALL_DTYPES)))
    def run(case, variant, out_choice, out_dtype):
        calls.append(name)
        check_example(name, device, case, variant, out_choice, out_dtype)

    calls = []
    run()
    note_calls(name, device, len(calls))
