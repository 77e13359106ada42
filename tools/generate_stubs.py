"""Write the type stubs that show tensorplug's import-time API to type checkers and IDEs.

Tensor's methods and operators are attached when ``frontend.methods`` runs, and many ``tp.*``
functions are bound by ``globals().update(...)`` in ``tensorplug/__init__.py``: a checker reading
the source sees neither. This script imports tensorplug, reads the live objects (signature and
docstring) and writes two stubs:

- ``tensorplug/frontend/tensor.pyi``: the Tensor class with every method, operator and property,
  plus the names tensor.py exports (a stub hides its ``.py`` from checkers, so it covers all of it);
- ``tensorplug/__init__.pyi``: every public name of ``tensorplug``.

Parameter types follow PyTorch's naming conventions (``PARAMETER_TYPES``); an annotation in the
code wins over the convention. Unannotated functions return a Tensor unless ``RETURN_TYPES`` says
otherwise. nn, optim and the other submodules are ordinary Python and need no stub.

Run ``python tools/generate_stubs.py`` after changing the public API, and commit the result;
``--check`` exits 1 listing the stale stubs (tests/typing/test_stub_freshness.py runs it).
"""
from __future__ import annotations

import argparse
import importlib
import builtins
import collections.abc
import inspect
import os
import sys
import types
import typing

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TENSOR_STUB = os.path.join("tensorplug", "frontend", "tensor.pyi")
PACKAGE_STUB = os.path.join("tensorplug", "__init__.pyi")

# Parameter types by name, after PyTorch's conventions. A parameter whose default is None also
# accepts None; a name not listed here (and not annotated) is Any.
PARAMETER_TYPES = {
    "input": "Tensor",
    "self": "Tensor",  # a tp function written as a method (tp.split(self, ...))
    "other": "_TensorOrNumber",
    "out": "Tensor",
    "dim": "_Dims",
    "dim0": "_int", "dim1": "_int", "dim2": "_int",
    "keepdim": "_bool",
    "axis": "_Dims", "keepdims": "_bool",  # NumPy's spellings of dim and keepdim (ops/_numpy_names.py)
    "dtype": "_dtype",
    "device": "_DeviceLike",
    "requires_grad": "_bool",
    "generator": "_Generator",
    "alpha": "_Number", "beta": "_Number",
    "size": "_Size", "sizes": "_Size", "shape": "_Size",
    "k": "_int", "chunks": "_int",
    "min": "_TensorOrNumber", "max": "_TensorOrNumber",
    "value": "_TensorOrNumber",
    "mask": "Tensor",
    "mat1": "Tensor", "mat2": "Tensor", "vec": "Tensor", "vec1": "Tensor", "vec2": "Tensor",
    "tensor1": "Tensor", "tensor2": "Tensor", "batch1": "Tensor", "batch2": "Tensor",
    "tensors": "Sequence[Tensor]",
    "gradient": "Tensor",
    "equation": "_str", "rounding_mode": "_str",
    "non_blocking": "_bool", "copy": "_bool", "descending": "_bool", "stable": "_bool",
    "largest": "_bool", "sorted": "_bool", "as_tuple": "_bool", "accumulate": "_bool",
    "unbiased": "_bool", "return_inverse": "_bool", "return_counts": "_bool",
}

# Exceptions to the conventions, by (function name, parameter name).
PARAMETER_OVERRIDES = {
    ("type", "dtype"): "Any",  # also takes a type name such as "torch.FloatTensor"
    ("__eq__", "other"): "Any",  # object.__eq__ takes anything; so does ours
    ("__ne__", "other"): "Any",
    ("sum_to_size", "size"): "Any",
    ("where", "input"): "_TensorOrNumber",  # tp.where(mask, x, 0.0) and tp.where(mask, 1.0, x)
    ("einsum", "equation"): "_str | Tensor",  # the sublist form: einsum(a, [0, 1], b, [1, 2], [0, 2])
}

# What unannotated functions return when it is not a Tensor.
_VALUES_INDICES = "_ValuesIndices"
RETURN_TYPES = {
    "__bool__": "_bool", "__float__": "_float", "__int__": "_int", "__index__": "_int", "__len__": "_int",
    "__iter__": "Iterator[Tensor]", "__repr__": "_str", "__str__": "_str", "__format__": "_str",
    "__setitem__": "None", "__init__": "None", "__hash__": "_int", "__new__": "Tensor",
    "__array__": "numpy.ndarray", "__reduce_ex__": "Any", "__dlpack__": "Any", "__dlpack_device__": "tuple[_int, _int]",
    "__array_namespace__": "Any",
    "item": "_Number", "tolist": "Any", "numpy": "numpy.ndarray", "size": "Any", "stride": "Any",
    "register_hook": "Any", "register_post_accumulate_grad_hook": "Any",
    "get_device": "_int", "equal": "_bool", "allclose": "_bool", "is_nonzero": "_bool", "type": "Any",
    # Tensor or (values, indices) depending on ``dim``: no single type is right.
    "max": "Any", "min": "Any", "median": "Any", "nanmedian": "Any", "unique": "Any", "nonzero": "Any",
    "sort": _VALUES_INDICES, "topk": _VALUES_INDICES, "kthvalue": _VALUES_INDICES, "mode": _VALUES_INDICES,
    "var_mean": "tuple[Tensor, Tensor]", "std_mean": "tuple[Tensor, Tensor]",
    "split": "tuple[Tensor, ...]", "chunk": "tuple[Tensor, ...]", "unbind": "tuple[Tensor, ...]",
    "tensor_split": "tuple[Tensor, ...]", "broadcast_tensors": "tuple[Tensor, ...]", "meshgrid": "tuple[Tensor, ...]",
    "atleast_1d": "Any", "atleast_2d": "Any", "atleast_3d": "Any",
    "set_printoptions": "None", "load": "Any",
    # tp.npdev, tp.opencl, ...: a device's runtime module, made on first access. Its attributes
    # are Any (ModuleType's rule), yet tp.no_such_function(x) is still an error.
    "__getattr__": "ModuleType",
}

# Properties without a return annotation.
PROPERTY_TYPES = {"shape": "tuple[_int, ...]", "T": "Tensor", "mT": "Tensor", "H": "Tensor", "mH": "Tensor", "retains_grad": "_bool"}
# Tensor's slots that are public attributes.
SLOT_TYPES = {"grad": "Tensor | None", "grad_fn": "Any"}

# tensorplug's public submodules that `import tensorplug` does not load (tensorplug/__init__.py).
LAZY_SUBMODULES = ("distributions",)

# Names the stubs' headers define, so that class-level names (Tensor.bool, tp.float, ...) cannot
# shadow the builtins an annotation means.
HEADER = '''\
# Generated by tools/generate_stubs.py from the imported package: do not edit by hand.
import numpy
from builtins import bool as _bool, float as _float, int as _int, str as _str
from types import ModuleType
from typing import Any, Callable, Iterator, NamedTuple, Sequence

from tensorplug.frontend.device import device as _device
from tensorplug.frontend.dtypes import dtype as _dtype
from tensorplug.frontend.random import Generator as _Generator
'''

TYPE_ALIASES = '''\
_Number = _int | _float | _bool
_TensorOrNumber = Tensor | _int | _float | _bool
_Size = _int | Sequence[_int]
_Dims = _int | Sequence[_int]
_DeviceLike = _device | _str | _int
'''

_ALIASED_BUILTINS = {builtins.bool: "_bool", builtins.float: "_float", builtins.int: "_int", builtins.str: "_str"}


class TypeRenderer:
    """Turns annotation objects into stub text; classes from other modules become imports."""

    def __init__(self, known: dict):
        self.known = dict(known)  # class -> the name the stub uses for it
        self.imports: set[str] = set()

    def render(self, annotation) -> str:
        if annotation is None or annotation is type(None):
            return "None"
        if annotation is typing.Any:
            return "Any"
        if annotation in self.known:
            return self.known[annotation]
        if annotation in _ALIASED_BUILTINS:
            return _ALIASED_BUILTINS[annotation]
        origin = typing.get_origin(annotation)
        if origin in (typing.Union, types.UnionType):
            return " | ".join(self.render(arg) for arg in typing.get_args(annotation))
        if origin is not None:
            args = typing.get_args(annotation)
            if origin is collections.abc.Callable:
                return "Callable[..., Any]"
            rendered = ", ".join("..." if arg is Ellipsis else self.render(arg) for arg in args)
            return f"{self.render(origin)}[{rendered}]" if args else self.render(origin)
        if isinstance(annotation, type):
            if annotation.__module__ == "builtins":
                return "tuple[Any, ...]" if annotation is tuple else annotation.__name__
            if annotation is collections.abc.Sequence:
                return "Sequence"
            if annotation.__module__.startswith("numpy"):
                return f"numpy.{annotation.__name__}"
            self.imports.add(f"import {annotation.__module__}")
            return f"{annotation.__module__}.{annotation.__qualname__}"
        raise TypeError(f"cannot render annotation {annotation!r}")


_UNKNOWN = object()


def _annotation(func, text):
    """The object an annotation names, or _UNKNOWN where it cannot be evaluated here (a name
    imported only under TYPE_CHECKING, say)."""
    # The annotations are the innermost function's (inspect.signature follows ``__wrapped__``), so
    # they are read in its module: a decorator's module (autocast_hook, an in-place wrapper's) need
    # not import Tensor, which made addbmm_'s return Any. A module may rebind a builtin's name
    # (tensorplug's ``int`` is a dtype): try the builtins too.
    for namespace in (getattr(inspect.unwrap(func), "__globals__", {}), vars(builtins)):
        value = text
        try:
            while isinstance(value, str):  # ``-> "Tensor"`` under ``from __future__ import annotations``
                value = eval(value, namespace)  # noqa: S307 (the package's own annotations)
        except Exception:
            continue
        if isinstance(value, type) or typing.get_origin(value) is not None or value in (None, typing.Any):
            return value
    return _UNKNOWN


def _parameter_type(func, name: str, param: inspect.Parameter, renderer: TypeRenderer) -> str:
    """The override for (function, parameter), else its annotation, else the naming convention."""
    typ = PARAMETER_OVERRIDES.get((name, param.name))
    if typ is None and param.annotation is not param.empty:
        value = _annotation(func, param.annotation)
        if value is not _UNKNOWN:
            try:
                typ = renderer.render(value)
            except TypeError:
                typ = None
    if typ is None and param.name == "input" and "other" in inspect.signature(func).parameters:
        typ = "_TensorOrNumber"  # binary ops take a number on either side: tp.sub(1, x)
    if typ is None:
        typ = PARAMETER_TYPES.get(param.name, "Any")
    if param.default is None and typ != "Any" and "None" not in typ.split(" | "):
        typ += " | None"
    return typ


def _return_type(func, name: str, renderer: TypeRenderer) -> str:
    if name in RETURN_TYPES:
        return RETURN_TYPES[name]
    if name.startswith("is_"):  # PyTorch's predicates (is_floating_point, is_cuda, ...) answer a bool
        return "_bool"
    try:
        annotation = inspect.signature(func).return_annotation
    except (TypeError, ValueError):
        return "Any"
    if annotation is not inspect.Signature.empty:
        value = _annotation(func, annotation)
        if value is not _UNKNOWN:
            try:
                return renderer.render(value)
            except TypeError:
                return "Any"
        return "Any"
    return "Tensor"


def one_line_doc(obj, fallback: str) -> str:
    """The first paragraph of ``obj``'s docstring on one line, or ``fallback``."""
    doc = inspect.getdoc(obj) if obj is not None and getattr(obj, "__doc__", None) else None
    if not doc:
        return fallback
    text = " ".join(doc.split("\n\n")[0].split())
    return text.replace("\\", "\\\\").replace('"""', "'''")


def render_function(name: str, func, renderer: TypeRenderer, *, method: bool, doc: str, indent: str = "") -> str:
    """A ``def`` line with a one-line docstring; for methods the first parameter becomes ``self``."""
    params = list(inspect.signature(func).parameters.values())
    if name.startswith("__"):  # Python calls an operator with its operands only: drop ``out=``
        params = [p for p in params if p.name != "out"]
    parts = []
    for index, param in enumerate(params):
        if method and index == 0:
            text = "self"
        elif param.kind is param.VAR_POSITIONAL:
            typ = "Any" if param.name == "tensors" else _parameter_type(func, name, param, renderer)
            text = f"*{param.name}: {typ}"
        elif param.kind is param.VAR_KEYWORD:
            text = f"**{param.name}: Any"
        else:
            default = "" if param.default is param.empty else " = ..."
            text = f"{param.name}: {_parameter_type(func, name, param, renderer)}{default}"
        if param.kind is param.KEYWORD_ONLY and not any(p.kind in (p.KEYWORD_ONLY, p.VAR_POSITIONAL) for p in params[:index]):
            parts.append("*")
        parts.append(text)
        if param.kind is param.POSITIONAL_ONLY and (index + 1 == len(params) or params[index + 1].kind is not param.POSITIONAL_ONLY):
            parts.append("/")
    returns = _return_type(func, name, renderer)
    ignore = "  # type: ignore[override]" if name in ("__eq__", "__ne__") else ""
    head = f"{indent}def {name}({', '.join(parts)}) -> {returns}:"
    if not doc:
        return f"{head} ...{ignore}"
    return f'{head}{ignore}\n{indent}    """{doc}"""'


def _tensor_member_doc(name: str, value, tensorplug) -> str:
    if name.startswith("__"):
        return ""
    base = name[:-1]
    func = value.fget if isinstance(value, property) else value
    if name.endswith("_") and not getattr(func, "__doc__", None) and hasattr(tensorplug.Tensor, base):
        return f"In-place version of ``{base}``."
    module_function = vars(tensorplug).get(name)  # not getattr: tp.xpu would make a device module
    if not inspect.isfunction(module_function):  # tp.float is a dtype, not the method's function
        module_function = None
    return one_line_doc(func, one_line_doc(module_function, f"See torch.Tensor.{name}."))


def _python_function(value):
    """The Python function behind a compiled fast path (``_hotpath.ElementwiseOp`` forwards
    ``__wrapped__``; a compiled Tensor method such as ``item`` falls back to ``methods._<name>``),
    which carries the signature and docstring; other values unchanged."""
    if isinstance(value, types.MethodDescriptorType):
        from tensorplug.frontend import methods

        fallback = getattr(methods, "_" + value.__name__, None)
        return fallback if inspect.isfunction(fallback) else value
    wrapped = getattr(value, "__wrapped__", None)
    return wrapped if inspect.isfunction(wrapped) else value


def tensor_stub(tensorplug) -> str:
    """The text of ``tensorplug/frontend/tensor.pyi``."""
    from tensorplug.frontend import tensor as tensor_module

    Tensor = tensorplug.Tensor
    renderer = TypeRenderer({
        Tensor: "Tensor",
        tensorplug.dtype: "_dtype",
        tensorplug.device: "_device",
        tensorplug.Generator: "_Generator",
    })
    members = []
    for name in sorted(vars(Tensor)):
        value = _python_function(vars(Tensor)[name])
        if name.startswith("_") and not (name.startswith("__") and name.endswith("__")):
            continue
        if name in ("__module__", "__doc__", "__slots__", "__weakref__", "__dict__"):
            continue
        doc = _tensor_member_doc(name, value, tensorplug)
        if isinstance(value, property):
            typ = PROPERTY_TYPES.get(name) or _return_type(value.fget, name, renderer)
            text = f"    @property\n    def {name}(self) -> {typ}:"
            text += f'\n        """{doc}"""' if doc else " ..."
            if value.fset is not None:
                text += f"\n    @{name}.setter\n    def {name}(self, value: {typ}) -> None: ..."
            members.append(text)
        elif name == "__new__":  # implicitly static; ``cls`` takes the place of ``self``
            members.append("    def __new__(cls, *args: Any, **kwargs: Any) -> Tensor: ...")
        elif isinstance(value, types.MemberDescriptorType):
            members.append(f"    {name}: {SLOT_TYPES[name]}")
        elif inspect.isfunction(value):
            members.append(render_function(name, value, renderer, method=True, doc=doc, indent="    "))
        elif name == "__hash__":
            members.append("    def __hash__(self) -> _int: ...")
        elif isinstance(value, builtins.bool):
            members.append(f"    {name}: _bool")
        elif isinstance(value, builtins.str):  # layout
            members.append(f"    {name}: _str")
        else:
            raise TypeError(f"Tensor.{name}: no stub rule for a {type(value).__name__}")
    module_functions = []
    for name in sorted(tensor_module.__all__):
        value = getattr(tensor_module, name)
        if name == "Tensor":
            continue
        if inspect.isbuiltin(value) and inspect.isfunction(getattr(tensor_module, "_" + name, None)):
            # A function of the compiled core (empty_tensor): its Python reference has the signature.
            value = getattr(tensor_module, "_" + name)
        module_functions.append(render_function(name, value, renderer, method=False, doc=one_line_doc(value, "")))

    class_doc = one_line_doc(Tensor, "")
    return "\n".join([
        HEADER + "".join(sorted(line + "\n" for line in renderer.imports)),
        TYPE_ALIASES,
        "",
        "class _ValuesIndices(NamedTuple):",
        '    """The (values, indices) result of sort, topk, kthvalue, mode, and max/min/median over a dim."""',
        "    values: Tensor",
        "    indices: Tensor",
        "",
        "",
        "class Tensor:",
        f'    """{class_doc}"""',
        "",
        "\n".join(members),
        "",
        "",
        "\n\n".join(module_functions),
        "",
        "",
        "# Names tensor.py defines for the rest of the package; not public API.",
        "def __getattr__(name: _str) -> Any: ...",
        "",
    ])


def _module_import(module_name: str, alias: str) -> str:
    parent, _, last = module_name.rpartition(".")
    return f"from {parent} import {last} as {alias}"


def package_stub(tensorplug) -> str:
    """The text of ``tensorplug/__init__.pyi``."""
    import __future__

    renderer = TypeRenderer({
        tensorplug.Tensor: "Tensor",
        tensorplug.dtype: "_dtype",
        tensorplug.device: "_device",
        tensorplug.Generator: "_Generator",
    })
    reexports, functions, values = [], [], []
    for name in sorted(vars(tensorplug)):
        value = _python_function(vars(tensorplug)[name])
        if name.startswith("_") and name not in ("__version__", "__getattr__"):
            continue
        if isinstance(value, __future__._Feature):  # ``from __future__ import annotations``
            continue
        if isinstance(value, types.ModuleType):
            reexports.append(_module_import(value.__name__, name))
        elif isinstance(value, type):
            reexports.append(f"from {value.__module__} import {value.__name__} as {name}")
        elif inspect.isfunction(value):
            doc = one_line_doc(value, f"See torch.{name}.")
            functions.append(render_function(name, value, renderer, method=False, doc=doc))
        else:
            values.append(f"{name}: {renderer.render(type(value))}")
    return "\n".join([
        HEADER + "".join(sorted(line + "\n" for line in renderer.imports)),
        "from tensorplug.frontend.tensor import _ValuesIndices",
        "\n".join(sorted(reexports)),
        "",
        TYPE_ALIASES,
        "\n".join(values),
        "",
        "",
        "\n\n".join(functions),
        "",
    ])


def generate() -> dict:
    """Stub path (relative to the repository root) -> its text, from the imported package."""
    sys.path.insert(0, ROOT)
    import tensorplug

    # Submodules that load on first attribute access (tensorplug.__getattr__) are part of the
    # public surface all the same: load them so the stub names them.
    for lazy in LAZY_SUBMODULES:
        importlib.import_module(f"tensorplug.{lazy}")
    return {TENSOR_STUB: tensor_stub(tensorplug), PACKAGE_STUB: package_stub(tensorplug)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a committed stub differs")
    args = parser.parse_args(argv)
    stale = []
    for path, text in generate().items():
        full = os.path.join(ROOT, path)
        current = open(full, encoding="utf-8").read() if os.path.exists(full) else None
        if current == text:
            continue
        stale.append(path)
        if not args.check:
            with open(full, "w", encoding="utf-8") as f:
                f.write(text)
    if args.check and stale:
        print("stale type stubs (run: python tools/generate_stubs.py): " + ", ".join(stale))
        return 1
    for path in stale:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
