"""Containers: Sequential, ModuleList, ModuleDict, ParameterList and ParameterDict.

Sequential and ModuleList share ``_ModuleSequence`` (children under the names "0", "1", ...,
numbered again after every insertion or deletion); ModuleDict and ParameterDict share
``_KeyedContainer`` (dict behaviour over whatever table the subclass keeps its entries in).

>>> import tensorplug as tp
>>> net = tp.nn.Sequential(tp.nn.Linear(4, 8), tp.nn.ReLU(), tp.nn.Linear(8, 2))
>>> len(net), type(net[1]).__name__, len(net[:2])
(3, 'ReLU', 2)
"""
from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import ItemsView, Iterable, Iterator, KeysView, Mapping, ValuesView
from typing import Any

from ..frontend.tensor import Tensor
from .module import Module, _addindent
from .parameter import Buffer, Parameter

__all__ = ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]


def _position(index, length: int) -> int:
    """The non-negative position an int-like ``index`` names among ``length`` items."""
    position = operator.index(index)  # bools and 0-d integer tensors too; floats and strings raise
    if position < -length or position >= length:
        raise IndexError(f"index {position} is out of range")
    return position if position >= 0 else length + position


def _require_iterable(owner: str, values) -> None:
    # A tensor iterates over its first dimension, which is never what extend() was given it for.
    if not isinstance(values, Iterable) or isinstance(values, Tensor):
        raise TypeError(f"{owner}.extend should be called with an iterable, but got {type(values).__name__}")


# --- Sequential and ModuleList ---------------------------------------------------------------------
class _ModuleSequence(Module):
    """Children kept in order in ``_modules``; integer indices, slices and renumbering."""

    #: The name errors give (PyTorch's, whatever the subclass).
    _container_name = ""

    def _renumber(self, children: list) -> None:
        # In place: other code may hold the table itself.
        self._modules.clear()
        self._modules.update((str(number), child) for number, child in enumerate(children))

    def _name_at(self, index) -> str:
        return list(self._modules)[_position(index, len(self._modules))]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __setitem__(self, index: int, module: Module) -> None:
        setattr(self, self._name_at(index), module)

    def __delitem__(self, index: int | slice) -> None:
        doomed = list(self._modules)[index] if isinstance(index, slice) else [self._name_at(index)]
        for name in doomed:
            delattr(self, name)
        self._renumber(list(self._modules.values()))

    def pop(self, key: int | slice):
        """Remove and return the child (or the container of children) at ``key``."""
        taken = self[key]
        del self[key]
        return taken

    def append(self, module: Module):
        """Add ``module`` at the end; returns the container."""
        self.add_module(str(len(self._modules)), module)
        return self

    def extend(self, modules: Iterable[Module]):
        """Append each of ``modules``; returns the container."""
        _require_iterable(self._container_name, modules)
        for module in modules:
            self.append(module)
        return self

    def _insert(self, index: int, module: Module) -> None:
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        length = len(self._modules)
        index = operator.index(index)
        if not -length <= index <= length:  # the end itself is a valid place
            raise IndexError(f"Index out of range: {index}")
        children = list(self._modules.values())
        children.insert(index, module)
        self._renumber(children)


class Sequential(_ModuleSequence):
    """Modules called in order, each on the previous one's output; built from modules or from an
    OrderedDict of named modules."""

    _container_name = "Sequential"

    def __init__(self, *args) -> None:
        super().__init__()
        named = len(args) == 1 and isinstance(args[0], OrderedDict)
        children = args[0].items() if named else ((str(number), child) for number, child in enumerate(args))
        for name, child in children:
            self.add_module(name, child)

    def __getitem__(self, index: int | slice):
        if isinstance(index, slice):
            # A slice keeps the children's names (ModuleList's numbers them afresh).
            return type(self)(OrderedDict(list(self._modules.items())[index]))
        return self._modules[self._name_at(index)]

    def insert(self, index: int, module: Module) -> "Sequential":
        """Put ``module`` before position ``index`` (negative counts from the end); returns self."""
        self._insert(index, module)
        return self

    def forward(self, input):
        value = input
        for module in self._modules.values():
            value = module(value)
        return value

    # --- concatenation and repetition, with PyTorch's refusals ----------------------------------
    def _check_sequential(self, other) -> None:
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but {type(other)} is given.")

    def _check_factor(self, factor) -> None:
        if not isinstance(factor, int):
            raise TypeError(f"unsupported operand type(s) for *: {type(self)} and {type(factor)}")
        if factor <= 0:
            raise ValueError(f"Non-positive multiplication factor {factor} for {type(self)}")

    def __add__(self, other: "Sequential") -> "Sequential":
        self._check_sequential(other)
        return Sequential(*self, *other)

    def __iadd__(self, other: "Sequential") -> "Sequential":
        self._check_sequential(other)
        return self.extend(list(other))

    def __mul__(self, factor: int) -> "Sequential":
        """The same module objects repeated ``factor`` times, in a new Sequential."""
        self._check_factor(factor)
        return Sequential(*(list(self) * factor))

    __rmul__ = __mul__

    def __imul__(self, factor: int) -> "Sequential":
        self._check_factor(factor)
        return self.extend(list(self) * (factor - 1))


class ModuleList(_ModuleSequence):
    """A list of modules whose parameters the parent module sees (a plain list would hide them)."""

    _container_name = "ModuleList"

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, index: int | slice):
        if isinstance(index, slice):
            return type(self)(list(self._modules.values())[index])
        return self._modules[self._name_at(index)]

    def insert(self, index: int, module: Module) -> None:
        """Put ``module`` before position ``index`` (negative counts from the end)."""
        self._insert(index, module)

    def __add__(self, other: Iterable[Module]) -> "ModuleList":
        return ModuleList([*self, *other])

    def __iadd__(self, modules: Iterable[Module]) -> "ModuleList":
        return self.extend(modules)

    def __repr__(self) -> str:
        # Runs of neighbours that print the same (a stack of identical layers) print once, as
        # "(first-last): count x module", as in PyTorch.
        runs: list[list] = []  # [first name, last name, count, text]
        for name, child in self._modules.items():
            text = repr(child)
            if runs and runs[-1][3] == text:
                runs[-1][1] = name
                runs[-1][2] += 1
            else:
                runs.append([name, name, 1, text])
        if not runs:
            return f"{self._get_name()}()"
        lines = []
        for first, last, count, text in runs:
            label, shown = (first, text) if count == 1 else (f"{first}-{last}", f"{count} x {text}")
            lines.append(f"({label}): " + _addindent(shown, 2))
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


# --- ModuleDict and ParameterDict ------------------------------------------------------------------
def _key_value_pairs(owner: str, source, sort_plain_mappings: bool) -> list:
    """``source`` (a mapping, or an iterable of key/value pairs) as a list of pairs, checked."""
    if isinstance(source, (Mapping, _KeyedContainer)):
        pairs = list(source.items())
        if sort_plain_mappings and not isinstance(source, (OrderedDict, _KeyedContainer)):
            pairs.sort(key=lambda pair: pair[0])  # PyTorch's ParameterDict orders a plain dict by key
        return pairs
    if not isinstance(source, Iterable):
        raise TypeError(f"{owner}.update should be called with an iterable of key/value pairs, but got "
                        f"{type(source).__name__}")
    pairs = []
    for number, pair in enumerate(source):
        if not isinstance(pair, Iterable):
            raise TypeError(f"{owner} update sequence element #{number} should be Iterable; is{type(pair).__name__}")
        pair = tuple(pair)
        if len(pair) != 2:
            raise ValueError(f"{owner} update sequence element #{number} has length {len(pair)}; 2 is required")
        pairs.append(pair)
    return pairs


class _KeyedContainer(Module):
    """Dict behaviour shared by ModuleDict and ParameterDict; a subclass says which keys it holds
    (``_key_table``) and how to get, set and delete one entry."""

    #: The name update()'s errors give (PyTorch's, whatever the subclass).
    _container_name = ""
    _sorts_plain_mappings = False

    def _key_table(self) -> Mapping:
        raise NotImplementedError

    def __len__(self) -> int:
        return len(self._key_table())

    def __iter__(self) -> Iterator[str]:
        return iter(self._key_table())

    def __contains__(self, key) -> bool:
        return key in self._key_table()

    def keys(self) -> KeysView:
        """The keys, in insertion order."""
        return KeysView(self)

    def values(self) -> ValuesView:
        """The entries, in key order."""
        return ValuesView(self)

    def items(self) -> ItemsView:
        """(key, entry) pairs, in key order."""
        return ItemsView(self)

    def pop(self, key: str):
        """Remove the entry under ``key`` and return it."""
        entry = self[key]
        del self[key]
        return entry

    def clear(self) -> None:
        """Remove every entry."""
        for key in list(self._key_table()):
            del self[key]

    def update(self, entries) -> None:
        """Add or replace entries from a mapping or an iterable of (key, entry) pairs."""
        for key, entry in _key_value_pairs(self._container_name, entries, self._sorts_plain_mappings):
            self[key] = entry


class ModuleDict(_KeyedContainer):
    """An ordered dict of modules whose parameters the parent module sees."""

    _container_name = "ModuleDict"

    def __init__(self, modules=None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def _key_table(self) -> Mapping:
        return self._modules

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]


# --- ParameterList and ParameterDict ---------------------------------------------------------------
def _as_entry(value):
    """What a parameter container stores: tensors as Parameters (leaves that require grad),
    anything else as it is."""
    if isinstance(value, Buffer):  # PyTorch's Buffer is a tensor, so it becomes a Parameter too
        value = value.data
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return Parameter(value)
    return value


def _describe(name: str, value, type_name: str | None = None) -> str:
    """One line of a parameter container's repr (two spaces in, as PyTorch's)."""
    if not isinstance(value, Tensor):
        return f"  ({name}): Object of type: {type(value).__name__}"
    kind = "Parameter" if isinstance(value, Parameter) else "Tensor"
    size = "x".join(str(extent) for extent in value.shape)
    device = value.device
    if device.type in ("cpu", "meta"):
        where = ""
    elif device.type == "cuda":
        where = f" (GPU {device.index or 0})"
    else:
        where = f" ({device})"
    return f"  ({name}): {kind} containing: [{type_name or value.dtype} of size {size}{where}]"


class ParameterList(Module):
    """A list registered under the names "0", "1", ...: tensors become Parameters, other objects
    are kept as they are."""

    def __init__(self, values: Iterable | None = None) -> None:
        super().__init__()
        object.__setattr__(self, "_size", 0)
        if values is not None:
            self.extend(values)

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Any]:
        return (getattr(self, str(number)) for number in range(self._size))

    def __getitem__(self, index: int | slice):
        if isinstance(index, slice):
            return type(self)([getattr(self, str(number)) for number in range(self._size)[index]])
        return getattr(self, str(_position(index, self._size)))

    def __setitem__(self, index: int, value) -> None:
        setattr(self, str(_position(index, self._size)), _as_entry(value))

    def append(self, value) -> "ParameterList":
        """Add ``value`` at the end; returns the list."""
        setattr(self, str(self._size), _as_entry(value))
        object.__setattr__(self, "_size", self._size + 1)  # counted once the entry is in
        return self

    def extend(self, values: Iterable) -> "ParameterList":
        """Append each of ``values``; returns the list."""
        _require_iterable("ParameterList", values)
        for value in values:
            self.append(value)
        return self

    def __iadd__(self, values: Iterable) -> "ParameterList":
        return self.extend(values)

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterList should not be called.")

    def extra_repr(self) -> str:
        return "\n".join(_describe(str(number), value) for number, value in enumerate(self))


class ParameterDict(_KeyedContainer):
    """An ordered dict of parameters registered under their keys (tensors become Parameters,
    other objects are kept as they are); a plain dict is taken in key order, as in PyTorch."""

    _container_name = "ParameterDict"
    _sorts_plain_mappings = True

    def __init__(self, parameters=None) -> None:
        super().__init__()
        # The keys in order; the entries themselves live where Module keeps attributes, so that
        # parameters are in _parameters (state dicts, .to()) and other objects plain attributes.
        object.__setattr__(self, "_order", {})
        if parameters is not None:
            self.update(parameters)

    def _key_table(self) -> Mapping:
        return self._order

    @staticmethod
    def _check_key(key) -> None:
        if not isinstance(key, str):
            raise TypeError(
                "Index given to ParameterDict cannot be used as a key as it is not a string "
                f"(type is '{type(key).__name__}'). Open an issue on github if you need non-string keys."
            )

    def __getitem__(self, key: str):
        self._check_key(key)
        if key not in self._order:
            raise KeyError(key)
        return getattr(self, key)

    def __setitem__(self, key: str, value) -> None:
        self._check_key(key)
        setattr(self, key, _as_entry(value))
        self._order[key] = None  # only once the entry was accepted

    def __delitem__(self, key: str) -> None:
        self._check_key(key)
        del self._order[key]
        delattr(self, key)

    def __reversed__(self) -> Iterator[str]:
        return reversed(list(self._order))

    def get(self, key: str, default=None):
        """The entry under ``key``, or ``default``."""
        return self[key] if key in self._order else default

    def setdefault(self, key: str, default=None):
        """The entry under ``key``, set to ``default`` first when there is none."""
        if key not in self._order:
            self[key] = default
        return self[key]

    def popitem(self) -> tuple:
        """Remove and return the last (key, entry) added."""
        if not self._order:
            raise KeyError("popitem(): dictionary is empty")
        key = next(reversed(self._order))
        return key, self.pop(key)

    def copy(self) -> "ParameterDict":
        """A new ParameterDict holding the same entries (not copies of them)."""
        return ParameterDict(OrderedDict(self.items()))

    def fromkeys(self, keys: Iterable[str], default=None) -> "ParameterDict":
        """A new ParameterDict with ``default`` under each of ``keys``."""
        return ParameterDict([(key, default) for key in keys])

    def __or__(self, other) -> "ParameterDict":
        merged = self.copy()
        merged.update(other)
        return merged

    def __ror__(self, other) -> "ParameterDict":
        merged = ParameterDict(other)
        merged.update(self)
        return merged

    def __ior__(self, other) -> "ParameterDict":
        self.update(other)
        return self

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterDict should not be called.")

    def extra_repr(self) -> str:
        return "\n".join(_describe(key, value, value.type() if isinstance(value, Tensor) else None)
                         for key, value in self.items())
