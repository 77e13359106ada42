"""The checks the suites run for one op database entry: forward values, gradients, errors.

Each check raises :class:`ConformanceFailure` (an AssertionError carrying the largest error
seen) naming the sample and the call form that went wrong.
"""
from __future__ import annotations

import re
import warnings
import zlib

import numpy as np

from .opdb._core import FLOAT_DTYPES, Arg, OpEntry, Sample, compare, materialize, to_numpy


#: Called with each sample's description just before the sample runs. The plugin points it at
#: the progress file, so that a sample whose kernel kills the process is named in the crash record.
_sample_listener = None


def set_sample_listener(listener) -> None:
    """Install ``listener(description: dict)`` (None to stop announcing samples)."""
    global _sample_listener
    _sample_listener = listener


def describe_sample(sample: Sample, dtype: str, op: str, form: str | None = None) -> dict:
    """JSON-ready: the sample's name and, per argument, shape, dtype and layout (or its value)."""
    args = []
    for arg in sample.args:
        if isinstance(arg, Arg):
            args.append({"shape": list(arg.shape), "dtype": arg.dtype or dtype, "layout": arg.layout})
        elif isinstance(arg, (list, tuple)) and arg and all(isinstance(a, Arg) for a in arg):
            args.append({"tensors": [{"shape": list(a.shape), "dtype": a.dtype or dtype, "layout": a.layout} for a in arg]})
        else:
            args.append({"value": repr(arg)})
    described = {"op": op, "name": sample.name, "args": args, "kwargs": {k: repr(v) for k, v in sample.kwargs.items()}}
    if form:
        described["form"] = form
    return described


def sample_summary(described: dict) -> str:
    """One line for a described sample: ``sample 'broadcast' (contiguous [4, 1, 3] float32, ...)``."""
    parts = []
    for arg in described.get("args", ()):
        if "shape" in arg:
            parts.append(f"{arg['layout']} {arg['shape']} {arg['dtype']}")
        elif "tensors" in arg:
            parts.append(f"[{len(arg['tensors'])} tensors]")
        else:
            parts.append(arg["value"])
    parts.extend(f"{k}={v}" for k, v in described.get("kwargs", {}).items())
    form = f" via {described['form']}" if described.get("form") else ""
    return f"{described.get('op', '?')}{form}, sample '{described.get('name', '')}' ({', '.join(parts)})"


def _announce(sample: Sample, dtype: str, op: str, form: str | None = None) -> None:
    if _sample_listener is not None:
        _sample_listener(describe_sample(sample, dtype, op, form))


class ConformanceFailure(AssertionError):
    def __init__(self, message: str, max_error: float | None = None):
        super().__init__(message)
        self.max_error = max_error


def _tp():
    import tensorplug

    return tensorplug


def _seed(*parts) -> int:
    return zlib.crc32("/".join(map(str, parts)).encode())


def _as_tuple(result):
    if isinstance(result, (tuple, list)):
        return tuple(result)
    return (result,)


def samples_for(entry: OpEntry, dtype: str, quick: bool) -> list[Sample]:
    return [s for s in entry.samples(dtype) if not (quick and s.large)]


def call_forms(entry: OpEntry):
    """(form name, call(tensors, kwargs)) for the function and method forms of ``entry``."""
    tp = _tp()
    forms = []
    if entry.call is not None:
        forms.append(("function", lambda ts, kw: entry.call(tp, *ts, **kw)))
    elif entry.func is not None:
        fn = getattr(tp, entry.func or entry.name)
        forms.append(("function", lambda ts, kw: fn(*ts, **kw)))
    if entry.method:
        forms.append(("method", lambda ts, kw: getattr(ts[0], entry.method)(*ts[1:], **kw)))
    return forms


def _reference(entry: OpEntry, dtype: str, arrays, kwargs):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _as_tuple(entry.reference(dtype)(*arrays, **kwargs))


def _check_outputs(entry, dtype, got, expected, where):
    expected_dtypes = entry.result_dtype(dtype)
    if isinstance(expected_dtypes, str):
        expected_dtypes = (expected_dtypes,) * len(expected)
    expected_dtypes = tuple(expected_dtypes)[: len(expected)]
    if len(got) != len(expected):
        raise ConformanceFailure(f"{where}: {len(got)} outputs, expected {len(expected)}")
    worst = 0.0
    for k, (g, e, want) in enumerate(zip(got, expected, expected_dtypes)):
        label = where if len(got) == 1 else f"{where}, output {k}"
        if not hasattr(g, "dtype") or not hasattr(g, "device"):
            g_values = np.asarray(g, dtype=np.float64)
        else:
            if want and g.dtype.name != want:
                raise ConformanceFailure(f"{label}: result dtype {g.dtype.name}, expected {want}")
            g_values = to_numpy(g)
        rtol, atol = entry.tolerance(want or dtype)
        exact = entry.exact or want in ("bool", "int64") and dtype not in FLOAT_DTYPES or want in ("bool",)
        ok, err, message = compare(g_values, e, want or dtype, rtol, atol, exact or (want or dtype) not in FLOAT_DTYPES,
                                   entry.signed_zeros)
        worst = max(worst, err)
        if not ok:
            raise ConformanceFailure(f"{label}: {message}", err)
    return worst


def _describe(sample: Sample, tensors) -> str:
    parts = []
    for arg, t in zip(sample.args, tensors):
        if isinstance(arg, Arg):
            parts.append(f"{arg.layout} {list(t.shape)} {t.dtype.name}")
        elif isinstance(arg, (list, tuple)) and arg and isinstance(arg[0], Arg):
            parts.append(f"[{len(arg)} tensors]")
        else:
            parts.append(repr(arg))
    kw = "".join(f", {k}={v!r}" for k, v in sample.kwargs.items())
    return f"sample '{sample.name}' ({', '.join(parts)}{kw})"


def check_forward(entry: OpEntry, dtype: str, device: str, quick: bool = False) -> float:
    """Every sample through every call form; returns the largest error seen."""
    worst = 0.0
    for index, sample in enumerate(samples_for(entry, dtype, quick)):
        seed = _seed(entry.name, dtype, index)
        _announce(sample, dtype, entry.name, "materialize")
        tensors, arrays = materialize(_tp(), sample, dtype, device, seed)
        expected = _reference(entry, dtype, arrays, sample.kwargs)
        for form, run in call_forms(entry):
            _announce(sample, dtype, entry.name, form)
            where = f"{entry.name} via {form}, {_describe(sample, tensors)}"
            try:
                got = _as_tuple(run(tensors, dict(sample.kwargs)))
            except ConformanceFailure:
                raise
            except Exception as exc:
                raise ConformanceFailure(f"{where}: raised {type(exc).__name__}: {exc}") from exc
            worst = max(worst, _check_outputs(entry, dtype, got, expected, where))
        if entry.inplace:
            worst = max(worst, _check_inplace(entry, dtype, device, sample, seed, expected))
    return worst


def _check_inplace(entry, dtype, device, sample, seed, expected) -> float:
    first = sample.args[0]
    want = entry.result_dtype(dtype)
    if not isinstance(first, Arg) or first.layout == "expanded" or want != dtype or first.dtype:
        return 0.0
    if np.shape(expected[0]) != first.shape or len(expected) != 1:
        return 0.0
    _announce(sample, dtype, entry.name, entry.inplace)
    tensors, _ = materialize(_tp(), sample, dtype, device, seed)
    target = tensors[0]
    before = target._version
    where = f"{entry.name} via {entry.inplace}, {_describe(sample, tensors)}"
    try:
        result = getattr(target, entry.inplace)(*tensors[1:], **sample.kwargs)
    except Exception as exc:
        raise ConformanceFailure(f"{where}: raised {type(exc).__name__}: {exc}") from exc
    if result is not target:
        raise ConformanceFailure(f"{where}: did not return self")
    if target._version <= before:
        raise ConformanceFailure(f"{where}: version counter did not advance ({before} -> {target._version})")
    return _check_outputs(entry, dtype, (target,), expected, where)


# --- gradients --------------------------------------------------------------------------------

def _grad_inputs(entry: OpEntry, sample: Sample, dtype: str, device: str, seed: int):
    tensors, _ = materialize(_tp(), sample, dtype, device, seed)
    wrt = []
    for arg, t in zip(sample.args, tensors):
        if isinstance(arg, Arg) and arg.grad and arg.dtype is None:
            t.requires_grad_(True)
            wrt.append(t)
        elif isinstance(arg, (list, tuple)) and arg and all(isinstance(a, Arg) for a in arg):
            for a, member in zip(arg, t):
                if a.grad and a.dtype is None and member.numel():
                    member.requires_grad_(True)
                    wrt.append(member)
    return tensors, wrt


def _outputs_for_grad(entry, tensors, kwargs):
    run = call_forms(entry)[0][1]
    return [o for o in _as_tuple(run(tensors, dict(kwargs))) if hasattr(o, "requires_grad") and o.dtype.name in FLOAT_DTYPES]


def analytic_gradient(entry: OpEntry, sample: Sample, dtype: str, device: str, seed: int):
    """(inputs as float64 arrays, gradients as float64 arrays, cotangents) on ``device``."""
    tp = _tp()
    tensors, wrt = _grad_inputs(entry, sample, dtype, device, seed)
    outs = _outputs_for_grad(entry, tensors, sample.kwargs)
    rng = np.random.default_rng(seed + 1)
    cotangents = [rng.uniform(-1, 1, size=tuple(o.shape)) for o in outs]
    grad_outputs = [tp.tensor(c.astype(np.float32 if dtype != "float64" else np.float64), device=device).to(o.dtype)
                    for c, o in zip(cotangents, outs)]
    grads = tp.autograd.grad(outs, wrt, grad_outputs, allow_unused=True)
    values = [np.zeros(tuple(w.shape)) if g is None else to_numpy(g) for g, w in zip(grads, wrt)]
    return tensors, wrt, values, cotangents


def numerical_gradient(entry: OpEntry, sample: Sample, tensors, wrt, cotangents, eps=1e-6):
    """Central differences of sum(f(x) * cotangent), one input element at a time (float64)."""
    tp = _tp()
    results = []
    with tp.no_grad():
        work = [[m.detach().clone() for m in t] if isinstance(t, list) else
                t.detach().clone() if hasattr(t, "requires_grad") else t for t in tensors]
        where = {}
        for k, t in enumerate(tensors):
            for j, m in enumerate(t if isinstance(t, list) else [t]):
                where[id(m)] = (k, j if isinstance(t, list) else None)

        def put(w, array):
            k, j = where[id(w)]
            value = tp.tensor(array.reshape(tuple(w.shape)), dtype=tp.float64, device=w.device)
            if j is None:
                work[k] = value
            else:
                work[k][j] = value

        for w in wrt:
            flat_values = to_numpy(w).reshape(-1)
            grad = np.zeros(flat_values.size)
            for j in range(flat_values.size):
                total = []
                for delta in (eps, -eps):
                    values = flat_values.copy()
                    values[j] += delta
                    put(w, values)
                    outs = _outputs_for_grad(entry, work, sample.kwargs)
                    total.append(sum(float((to_numpy(o) * c).sum()) for o, c in zip(outs, cotangents)))
                grad[j] = (total[0] - total[1]) / (2 * eps)
            put(w, flat_values)
            results.append(grad.reshape(tuple(w.shape)))
    return results


def check_gradient(entry: OpEntry, device: str, has_float64: bool) -> float:
    """Backward against finite differences in float64 on the device, or, without float64,
    float32 backward on the device against float64 backward on the CPU backend."""
    worst = 0.0
    for index, sample in enumerate(entry.grad_samples()):
        seed = _seed("grad", entry.name, index)
        where = f"{entry.name} backward, sample '{sample.name}'"
        _announce(sample, "float64" if has_float64 else "float32", entry.name, "backward")
        ref_device = device if has_float64 else "cpu"
        try:
            tensors, wrt, analytic, cot = analytic_gradient(entry, sample, "float64", ref_device, seed)
            numeric = numerical_gradient(entry, sample, tensors, wrt, cot)
        except Exception as exc:
            raise ConformanceFailure(f"{where}: raised {type(exc).__name__}: {exc}") from exc
        for k, (a, n) in enumerate(zip(analytic, numeric)):
            ok, err, message = compare(a, n, "float64", 1e-4, 1e-5, False)
            worst = max(worst, err)
            if not ok:
                raise ConformanceFailure(f"{where} on {ref_device}, input {k}: backward vs finite differences: {message}", err)
        if not has_float64:
            try:
                _, _, on_device, _ = analytic_gradient(entry, sample, "float32", device, seed)
            except Exception as exc:
                raise ConformanceFailure(f"{where} (float32): raised {type(exc).__name__}: {exc}") from exc
            for k, (d, a) in enumerate(zip(on_device, analytic)):
                ok, err, message = compare(d, a, "float32", 1e-4, 1e-5, False)
                worst = max(worst, err)
                if not ok:
                    raise ConformanceFailure(f"{where}, input {k}: float32 backward on {device} vs float64 on cpu: {message}", err)
    return worst


# --- errors -----------------------------------------------------------------------------------

def check_error(entry: OpEntry, case, device: str) -> None:
    """The call raises the declared type with a message matching the pattern, as on the CPU."""
    where = f"{entry.name}: error case '{case.name}'"
    try:
        case.call(device)
        _tp().backends.backend_for(device).synchronize(0)
    except case.exc as exc:
        if not re.search(case.match, str(exc)):
            raise ConformanceFailure(f"{where}: {type(exc).__name__} message {str(exc)!r} does not match {case.match!r}") from exc
        return
    except Exception as exc:
        raise ConformanceFailure(f"{where}: raised {type(exc).__name__} ({exc}), expected {case.exc.__name__} matching {case.match!r}") from exc
    raise ConformanceFailure(f"{where}: no error raised, expected {case.exc.__name__} matching {case.match!r}")
