"""``tp.jit``: TorchScript's entry points, as the identity (tensorplug is eager).

PyTorch programs decorate functions and modules with ``@torch.jit.script``, trace them with
``torch.jit.trace``, or mark methods with ``@torch.jit.ignore``/``unused``/``export`` so that the
TorchScript compiler skips or keeps them. A program's results never depend on scripting, so here
each of these returns the function or module it was given, unchanged, and the program runs as
written, op by op, as ``tp.compile`` does (docs/deviations.md). Saving or loading TorchScript
archives needs a compiled graph and raises ``NotImplementedError``.
"""
from __future__ import annotations

from typing import Any, Final

__all__ = [
    "script", "trace", "trace_module", "ignore", "unused", "export", "is_scripting", "is_tracing", "annotate",
    "Final", "save", "load", "freeze", "optimize_for_inference", "ScriptModule", "ScriptFunction",
]

_ARCHIVE_MESSAGE = (
    "tensorplug cannot {} TorchScript archives: it runs eagerly and compiles no graph. Save the weights "
    "instead (tp.save(model.state_dict(), 'model.safetensors')) and rebuild the module from its Python class."
)


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None) -> Any:
    """``obj`` (a function, a module or a class) unchanged.

    >>> import tensorplug as tp
    >>> @tp.jit.script
    ... def double(x):
    ...     return x * 2
    >>> double(tp.tensor(3)).item()
    6
    """
    if not callable(obj):
        raise TypeError(f"script(): expected a function, a class or an nn.Module, got {type(obj).__name__}")
    return obj


def trace(func, example_inputs=None, optimize=None, check_trace=True, check_inputs=None, check_tolerance=1e-5,
          strict=True, _force_outplace=False, _module_class=None, _compilation_unit=None, example_kwarg_inputs=None,
          _store_inputs=True) -> Any:
    """``func`` (a function or a module) unchanged; the example inputs are not run."""
    if not callable(func):
        raise TypeError(f"trace(): expected a function or an nn.Module, got {type(func).__name__}")
    return func


def trace_module(mod, inputs, optimize=None, check_trace=True, check_inputs=None, check_tolerance=1e-5, strict=True,
                 _force_outplace=False, _module_class=None, _compilation_unit=None, example_inputs_is_kwarg=False,
                 _store_inputs=True) -> Any:
    """``mod`` unchanged."""
    return mod


def _marker(name: str):
    def marker(fn=None, **kwargs):
        # Usable bare (@ignore), called (@ignore(drop=True)) or on a function (ignore(fn)).
        if fn is None or isinstance(fn, bool):
            return lambda f: f
        return fn

    marker.__name__ = marker.__qualname__ = name
    marker.__doc__ = f"``@tp.jit.{name}``: returns the function unchanged (there is no TorchScript compiler to instruct)."
    return marker


ignore = _marker("ignore")
unused = _marker("unused")
export = _marker("export")


def is_scripting() -> bool:
    """False: nothing runs under TorchScript here."""
    return False


def is_tracing() -> bool:
    """False: nothing is traced here."""
    return False


def annotate(the_type, the_value):
    """``the_value`` unchanged (a type hint for TorchScript)."""
    return the_value


def freeze(mod, preserved_attrs=None, optimize_numerics=True):
    """``mod`` unchanged."""
    return mod


def optimize_for_inference(mod, other_methods=None):
    """``mod`` unchanged."""
    return mod


def save(m, f, _extra_files=None):
    raise NotImplementedError(_ARCHIVE_MESSAGE.format("save"))


def load(f, map_location=None, _extra_files=None, _restore_shapes=False):
    raise NotImplementedError(_ARCHIVE_MESSAGE.format("load"))


class ScriptModule:
    """Present for ``isinstance`` checks: no object here is a ScriptModule."""


class ScriptFunction:
    """Present for ``isinstance`` checks: no object here is a ScriptFunction."""
