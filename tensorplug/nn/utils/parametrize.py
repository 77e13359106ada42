"""``tp.nn.utils.parametrize``: a tensor of a module computed, on every access, by modules
(parametrizations) from the tensors actually stored, as ``torch.nn.utils.parametrize``.

``register_parametrization(module, "weight", P())`` moves ``module.weight`` to
``module.parametrizations.weight.original`` (or ``original0``, ``original1``, ... when
``P.right_inverse`` returns several tensors) and makes ``module.weight`` read ``P()(original)``.

How it hangs together:

- ``ParametrizationList`` holds the chain of parametrizations of one name and the stored tensors.
  Reading runs the chain forwards; assigning (``module.weight = w``) runs the ``right_inverse``
  methods backwards and writes the stored tensors in place, so optimizers keep their references.
- ``_ParametrizedName`` is a descriptor. A descriptor only works on a class, so the first
  registration gives the module a class of its own, ``Parametrized<Class>``, a subclass of its
  class: other instances of the class stay untouched, and state_dict keys and the class name
  are PyTorch's (``parametrizations.weight.original``).

>>> import tensorplug as tp
>>> class Symmetric(tp.nn.Module):
...     def forward(self, x):
...         return x.triu() + x.triu(1).transpose(0, 1)
>>> layer = register_parametrization(tp.nn.Linear(3, 3), "weight", Symmetric())
>>> bool((layer.weight == layer.weight.T).all())
True
>>> list(layer.state_dict())
['bias', 'parametrizations.weight.original']
"""
from __future__ import annotations

import copy
from collections.abc import Sequence
from contextlib import contextmanager

from ...frontend.autograd import no_grad
from ...frontend.tensor import Tensor
from ..containers import ModuleDict, ModuleList
from ..module import Module
from ..parameter import Parameter, replace_tensor_data

__all__ = [
    "cached", "ParametrizationList", "register_parametrization", "is_parametrized", "remove_parametrizations",
    "type_before_parametrizations", "transfer_parametrizations_and_params",
]


class _ComputedOnce:
    """What ``cached()`` switches on: while ``depth > 0`` each (module, name) is computed at its
    first read and the result reused; leaving the outermost block forgets them all."""

    def __init__(self):
        self.depth = 0
        self.values: dict = {}

    def read(self, module: Module, name: str) -> Tensor:
        chain = module.parametrizations[name]
        if self.depth == 0:
            return chain()
        key = (id(module), name)
        if key not in self.values:
            self.values[key] = chain()
        return self.values[key]


_computed_once = _ComputedOnce()


@contextmanager
def cached():
    """Inside this block each parametrized tensor is computed once, at its first access, and
    reused (a model that reads a parametrized weight in several places)."""
    _computed_once.depth += 1
    try:
        yield
    finally:
        _computed_once.depth -= 1
        if _computed_once.depth == 0:
            _computed_once.values.clear()


def _attach(module: Module, name: str, tensor: Tensor) -> None:
    """Register ``tensor`` on ``module`` as a parameter if it is one, else as a buffer."""
    if isinstance(tensor, Parameter):
        module.register_parameter(name, tensor)
    else:
        module.register_buffer(name, tensor)


def _overwrite(stored: Tensor, value: Tensor) -> None:
    """``stored.set_(value)``: ``stored`` keeps its identity, so an optimizer holding it still works."""
    replace_tensor_data(stored, value.detach())


def _invert(parametrizations: Sequence[Module], value, *, required: bool):
    """Run the chain's ``right_inverse`` methods last to first. A parametrization without one
    (or whose one raises NotImplementedError) counts as the identity unless ``required``."""
    for parametrization in reversed(list(parametrizations)):
        inverse = getattr(parametrization, "right_inverse", None)
        if inverse is None:
            if required:
                raise RuntimeError(
                    f"parametrization {type(parametrization).__name__} does not implement right_inverse.")
            continue
        try:
            value = inverse(value)
        except NotImplementedError:
            if required:
                raise
    return value


def _check_keeps_shape_and_dtype(before: Tensor, after, what_before: str, what_after: str) -> None:
    """The check that ``unsafe=False`` promises: a parametrization returns a tensor of the shape
    and dtype of the tensor it replaces."""
    if not isinstance(after, Tensor):
        raise ValueError(f"A parametrization must return a tensor. Got {type(after).__name__}.")
    for field in ("dtype", "shape"):
        if getattr(after, field) != getattr(before, field):
            raise ValueError(
                f"Registering a parametrization may not change the {field} of the tensor, unless the `unsafe` "
                f"flag is enabled.\n{what_before}.{field}: {getattr(before, field)}\n"
                f"{what_after}.{field}: {getattr(after, field)}")


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order to the stored ``original``
    (``original0``, ``original1``, ... when the first one's right_inverse returns several)."""

    def __init__(self, modules, original: Tensor, unsafe: bool = False):
        modules = list(modules)
        if not modules:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        with no_grad():
            stored = _invert(modules, original, required=False)
        if isinstance(stored, Tensor):
            self.is_tensor, self.ntensors = True, 1
            if stored.dtype != original.dtype:
                raise ValueError(
                    "When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                    f"original.dtype: {original.dtype}\nright_inverse(original).dtype: {stored.dtype}")
            if stored is not original:
                _overwrite(original, stored)
            _attach(self, "original", original)
        elif isinstance(stored, Sequence):
            self.is_tensor, self.ntensors = False, len(stored)
            for i, tensor in enumerate(stored):
                if not isinstance(tensor, Tensor):
                    raise ValueError(
                        "'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                        f"Got element {i} of the sequence with type {type(tensor).__name__}.")
                # Each stored piece inherits the original's kind (parameter or buffer) and flag.
                piece = Parameter(tensor, original.requires_grad) if isinstance(original, Parameter) else tensor
                _attach(self, f"original{i}", piece.requires_grad_(original.requires_grad))
        else:
            raise ValueError(
                "'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                f"Got {type(stored).__name__}")
        if not unsafe:
            _check_keeps_shape_and_dtype(original, self(), "unparametrized", "parametrized")

    def stored_tensors(self) -> tuple:
        """The tensors actually stored: ``(original,)`` or ``(original0, original1, ...)``."""
        if self.is_tensor:
            return (self.original,)
        return tuple(getattr(self, f"original{i}") for i in range(self.ntensors))

    def right_inverse(self, value: Tensor) -> None:
        """Set the stored tensors so that the parametrized tensor becomes ``value``
        (``module.weight = value`` calls this)."""
        with no_grad():
            new = _invert(self, value, required=True)
            pieces = (new,) if self.is_tensor else new
            if not self.is_tensor and not isinstance(new, Sequence):
                raise ValueError(f"'right_inverse' must return a sequence of tensors. Got {type(new).__name__}.")
            if len(pieces) != self.ntensors:
                raise ValueError(
                    f"'right_inverse' must return a sequence of tensors of length {self.ntensors}. "
                    f"Got a sequence of length {len(pieces)}.")
            stored = self.stored_tensors()
            for i, (target, piece) in enumerate(zip(stored, pieces)):
                label = "original" if self.is_tensor else f"original{i}"
                if not isinstance(piece, Tensor):
                    raise ValueError(f"`right_inverse` must return tensors. Got {type(piece).__name__} for {label}.")
                if piece.dtype != target.dtype:
                    raise ValueError(
                        f"The tensor returned by `right_inverse` for `{label}` has dtype {piece.dtype} while "
                        f"`{label}` has dtype {target.dtype}")
            for target, piece in zip(stored, pieces):
                _overwrite(target, piece)

    def forward(self) -> Tensor:
        first, *rest = self
        value = first(*self.stored_tensors())
        for parametrization in rest:
            value = parametrization(value)
        return value


class _ParametrizedName:
    """The class attribute that makes ``module.<name>`` read and assign through the module's
    ``parametrizations[<name>]``."""

    def __init__(self, name: str):
        self.name = name

    def __get__(self, module, owner=None):
        if module is None:
            return self
        return _computed_once.read(module, self.name)

    def __set__(self, module, value) -> None:
        module.parametrizations[self.name].right_inverse(value)


def _refuse_pickle(module):
    raise RuntimeError(
        "Serialization of parametrized modules is only supported through state_dict(). See:\n"
        "https://pytorch.org/tutorials/beginner/saving_loading_models.html"
        "#saving-loading-a-general-checkpoint-for-inference-and-or-resuming-training")


def _deepcopy_by_dict(module, memo):
    # The copy needs the same per-instance class: copy.deepcopy's default goes through
    # __reduce_ex__, which the pickle refusal above blocks.
    if id(module) in memo:
        return memo[id(module)]
    replica = module.__new__(type(module))
    memo[id(module)] = replica
    replica.__dict__ = copy.deepcopy(module.__dict__, memo)
    return replica


def _give_own_class(module: Module) -> None:
    """Make ``module`` an instance of ``Parametrized<Class>``, a fresh subclass of its class that
    the descriptors of its parametrized names will live on."""
    base = type(module)
    body = {"__getstate__": _refuse_pickle}
    if not hasattr(base, "__deepcopy__"):
        body["__deepcopy__"] = _deepcopy_by_dict
    module.__class__ = type(f"Parametrized{base.__name__}", (base,), body)


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *, unsafe: bool = False) -> Module:
    """Make ``module.<tensor_name>`` be ``parametrization(original)``; a second registration on
    the same tensor applies after the first. ``unsafe=True`` skips the checks that the result
    keeps the tensor's shape and dtype. Returns ``module``."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        chain = module.parametrizations[tensor_name]
        if not unsafe:
            current = getattr(module, tensor_name)
            where = f"module.{tensor_name}"
            _check_keeps_shape_and_dtype(current, parametrization(current), where, f"parametrization({where})")
            inverse = getattr(parametrization, "right_inverse", None)
            try:
                recovered = None if inverse is None else inverse(parametrization(current))
            except NotImplementedError:
                recovered = None  # an inverse that opts out leaves nothing more to check
            if recovered is not None:
                if not isinstance(recovered, Tensor):
                    raise ValueError(
                        f"parametrization.right_inverse must return a tensor. Got: {type(recovered).__name__}")
                if recovered.dtype != current.dtype or recovered.shape != current.shape:
                    raise ValueError(
                        "The tensor returned by parametrization.right_inverse must have the same dtype and shape "
                        f"as module.{tensor_name}, unless the `unsafe` flag is enabled.")
        chain.append(parametrization)
        chain.unsafe = chain.unsafe or unsafe
        return module
    if tensor_name not in module._parameters and tensor_name not in module._buffers:
        raise ValueError(
            f"Module '{module}' does not have a parameter, a buffer, or a parametrized element with name "
            f"'{tensor_name}'")
    chain = ParametrizationList([parametrization], getattr(module, tensor_name), unsafe=unsafe)
    delattr(module, tensor_name)
    if not is_parametrized(module):
        _give_own_class(module)
        module.parametrizations = ModuleDict()
    setattr(type(module), tensor_name, _ParametrizedName(tensor_name))
    module.parametrizations[tensor_name] = chain
    return module


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether ``module`` has a parametrization (on ``tensor_name``, when given)."""
    table = getattr(module, "parametrizations", None)
    if not isinstance(table, ModuleDict):
        return False
    return len(table) > 0 if tensor_name is None else tensor_name in table


def remove_parametrizations(module: Module, tensor_name: str, leave_parametrized: bool = True) -> Module:
    """Undo the parametrizations of ``module.<tensor_name>``: it becomes a plain parameter (or
    buffer) again, holding its current parametrized value (``leave_parametrized``) or the stored
    original. Returns ``module``."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    chain = module.parametrizations[tensor_name]
    if chain.is_tensor:
        # The stored tensor object survives (optimizers hold it); it takes the current value.
        restored = chain.original
        if leave_parametrized:
            with no_grad():
                _overwrite(restored, getattr(module, tensor_name))
    elif leave_parametrized:
        value = getattr(module, tensor_name)
        restored = Parameter(value.detach(), True) if value.requires_grad else value.detach()
    else:
        raise ValueError(
            "Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is parametrized in terms of a "
            "sequence of tensors.")
    delattr(type(module), tensor_name)
    del module.parametrizations[tensor_name]
    _attach(module, tensor_name, restored)
    if not is_parametrized(module):
        del module.parametrizations
        module.__class__ = _class_before_parametrizations(type(module))
    return module


def _class_before_parametrizations(cls: type) -> type:
    """The class a ``Parametrized<Class>`` was made from (``_give_own_class``)."""
    return cls.__bases__[0]


def type_before_parametrizations(module: Module) -> type:
    """The class ``module`` had before it was parametrized (its own class otherwise)."""
    return _class_before_parametrizations(type(module)) if is_parametrized(module) else type(module)


def transfer_parametrizations_and_params(from_module: Module, to_module: Module, tensor_name: str | None = None) -> Module:
    """Give ``to_module`` the parametrizations (and their stored tensors) of ``from_module``,
    all or those of ``tensor_name``."""
    if not is_parametrized(from_module):
        return to_module
    for name in (list(from_module.parametrizations) if tensor_name is None else [tensor_name]):
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name)))
        for parametrization in from_module.parametrizations[name]:
            register_parametrization(to_module, name, parametrization)
        source, target = from_module.parametrizations[name], to_module.parametrizations[name]
        with no_grad():
            if source.is_tensor:
                target.original = source.original
            else:
                for i, tensor in enumerate(source.stored_tensors()):
                    setattr(target, f"original{i}", tensor)
    return to_module
