"""A torch-like ``repr``: ``tensor([1., 2.], dtype=tensorplug.float64, device='opencl:0')``."""
from __future__ import annotations

import numpy as np

from . import dtypes as _dt

__all__ = ["tensor_repr", "set_printoptions"]

_options = {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80, "sci_mode": None}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None):
    if profile == "default":
        _options.update(precision=4, threshold=1000, edgeitems=3, linewidth=80)
    elif profile == "short":
        _options.update(precision=2, threshold=1000, edgeitems=2, linewidth=80)
    elif profile == "full":
        _options.update(precision=4, threshold=2**62, edgeitems=3, linewidth=80)
    for key, value in (("precision", precision), ("threshold", threshold), ("edgeitems", edgeitems), ("linewidth", linewidth)):
        if value is not None:
            _options[key] = value
    _options["sci_mode"] = sci_mode


def _float_formatter(values: np.ndarray):
    finite = values[np.isfinite(values)]
    precision = _options["precision"]
    if finite.size == 0:
        return lambda v: _special(v) or f"{v}"
    nonzero = np.abs(finite[finite != 0])
    integral = bool(np.all(finite == np.round(finite)))
    big, small = (nonzero.max(), nonzero.min()) if nonzero.size else (0.0, 0.0)
    sci = _options["sci_mode"]
    if sci is None:
        sci = bool(nonzero.size) and (big >= 1e8 or (not integral and (small < 1e-4 or big / small > 1e3 and big >= 1e3)))
    if sci:
        return lambda v: _special(v) or f"{v:.{precision}e}"
    if integral:
        return lambda v: _special(v) or f"{v:.0f}."
    return lambda v: _special(v) or f"{v:.{precision}f}"


def _special(v) -> str:
    if np.isnan(v):
        return "nan"
    if np.isinf(v):
        return "inf" if v > 0 else "-inf"
    return ""


def _format_values(t) -> str:
    if t._dtype.is_floating_point and t._dtype.itemsize < 4:
        t = t.float()  # printed through float32 (NumPy has no bfloat16 or float8 without ml_dtypes)
    array = t.detach().cpu().numpy()
    summarize = array.size > _options["threshold"]
    kwargs = dict(separator=", ", prefix="tensor(", threshold=_options["threshold"], edgeitems=_options["edgeitems"],
                  max_line_width=_options["linewidth"])
    if t._dtype.is_floating_point:
        shown = (array if not summarize else _edges(array)).astype(np.float64).ravel()
        fmt = _float_formatter(shown)
        # Pad every value to the widest one so that columns line up, as PyTorch prints them.
        width = max((len(fmt(v)) for v in shown), default=0)
        kwargs["formatter"] = {"float_kind": lambda v: fmt(v).rjust(width)}
    elif t._dtype.is_complex:
        # As PyTorch: the real and the imaginary parts each get a formatter of their own; the real
        # parts line up, the imaginary ones follow them unpadded.
        shown = (array if not summarize else _edges(array)).astype(np.complex128).ravel()
        real_fmt, imag_fmt = _float_formatter(shown.real), _float_formatter(shown.imag)
        real_width = max((len(real_fmt(v.real)) for v in shown), default=0)

        def complex_text(v) -> str:
            imag_text = imag_fmt(v.imag)
            sign = "" if imag_text.startswith("-") else "+"
            return f"{real_fmt(v.real).rjust(real_width)}{sign}{imag_text}j"

        kwargs["formatter"] = {"complex_kind": complex_text}
    elif t._dtype is _dt.bool:
        kwargs["formatter"] = {"bool": lambda v: "True" if v else "False"}
    return np.array2string(array, **kwargs)


def _edges(array: np.ndarray) -> np.ndarray:
    e = _options["edgeitems"]
    for axis in range(array.ndim):
        if array.shape[axis] > 2 * e:
            array = np.concatenate([np.take(array, range(e), axis), np.take(array, range(-e, 0), axis)], axis)
    return array


def tensor_repr(t) -> str:
    if t._device.type == "meta":
        return _meta_repr(t)
    suffixes = []
    empty = t.numel() == 0
    body = "[]" if empty else _format_values(t)
    if empty and t._shape != (0,):
        suffixes.append(f"size={tuple(t._shape)}")
    if t._device.type != "cpu":
        suffixes.append(f"device='{t._device}'")
    default_dtypes = (_dt.get_default_dtype(), _dt.get_default_dtype().to_complex(), _dt.int64, _dt.bool)
    if t._dtype not in default_dtypes or (empty and t._dtype is not _dt.get_default_dtype()):
        suffixes.append(f"dtype={t._dtype!r}")
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return "tensor(" + ", ".join([body] + suffixes) + ")"


def _meta_repr(t) -> str:
    """PyTorch's form for a tensor without values: ``tensor(..., device='meta', size=(2, 3))``.
    The dtype is named whenever it is not the default float dtype (int64 and bool included, unlike
    a tensor with values, whose printed numbers show those), and a suffix that would pass the line
    width starts a new line under the first value, as PyTorch wraps them."""
    suffixes = ["device='meta'", f"size={tuple(t._shape)}"]
    if t._dtype is not _dt.get_default_dtype():
        suffixes.append(f"dtype={t._dtype!r}")
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    indent = " " * len("tensor(")
    text = "tensor(..."
    line_length = len(text)
    for suffix in suffixes:
        if line_length + len(", ") + len(suffix) + len(")") > _options["linewidth"]:
            text += ",\n" + indent + suffix
            line_length = len(indent) + len(suffix)
        else:
            text += ", " + suffix
            line_length += len(", ") + len(suffix)
    return text + ")"
