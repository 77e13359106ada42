"""``functional_call``: run a module with some of its parameters and buffers replaced."""
from __future__ import annotations

from typing import Any


def _untie(module, tensors: dict) -> dict:
    """``tensors`` with every name tied to a given one (the same tensor in the module) added."""
    groups: dict[int, list[str]] = {}
    for name, tensor in list(module.named_parameters(remove_duplicate=False)) + list(module.named_buffers(remove_duplicate=False)):
        groups.setdefault(id(tensor), []).append(name)
    result = dict(tensors)
    for names in groups.values():
        given = [n for n in names if n in tensors]
        if len(names) < 2 or not given:
            continue
        if len({id(tensors[n]) for n in given}) != 1:
            raise ValueError(f"functional_call got multiple values for keys {sorted(names)}, which are tied. "
                             "Consider using tie_weights=False")
        for name in names:
            result[name] = tensors[given[0]]
    return result


def _owner(module, name: str):
    """(the submodule holding ``name``, the last part of the name)."""
    *path, attr = name.split(".")
    for part in path:
        child = module._modules.get(part) if "_modules" in module.__dict__ else None
        if child is None:
            raise AttributeError(f"{type(module).__name__} has no submodule {part!r} (in {name!r})")
        module = child
    return module, attr


_ABSENT = object()


def _swap(module, name: str, value):
    """Put ``value`` at ``name``; return what was there (``_ABSENT`` for nothing)."""
    owner, attr = _owner(module, name)
    for table in (owner._parameters, owner._buffers):
        if attr in table:
            previous = table[attr]
            table[attr] = value
            return previous
    previous = owner.__dict__.get(attr, _ABSENT)
    if value is _ABSENT:
        owner.__dict__.pop(attr, None)
    else:
        # A name the module does not register (strict=False): an attribute for this call only.
        object.__setattr__(owner, attr, value)
    return previous


def functional_call(module, parameter_and_buffer_dicts, args: Any = None, kwargs: dict | None = None, *,
                    tie_weights: bool = True, strict: bool = False):
    """``module(*args, **kwargs)`` with the named parameters and buffers replaced by the given
    tensors for the call; the module's own are back afterwards, even when the call raises.

    ``parameter_and_buffer_dicts`` is a dict of dotted names (``"0.weight"``) or a tuple of dicts
    (no name in two of them). Names left out keep the module's tensors unless ``strict``; with
    ``tie_weights`` a tensor given for one of several tied names (one Parameter under two names)
    serves them all. A buffer the forward updates in place (BatchNorm's running statistics in
    training) is the given tensor, which is updated; one it reassigns is written back into the
    given dict, as PyTorch does.

    >>> import tensorplug as tp
    >>> layer = tp.nn.Linear(2, 1)
    >>> params = {"weight": tp.ones(1, 2), "bias": tp.zeros(1)}
    >>> tp.func.functional_call(layer, params, (tp.tensor([[1.0, 2.0]]),)).tolist()
    [[3.0]]
    """
    if isinstance(parameter_and_buffer_dicts, dict):
        tensors = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, (tuple, list)):
        tensors = {}
        for d in parameter_and_buffer_dicts:
            if not isinstance(d, dict):
                raise ValueError(f"Expected all elements of parameter_and_buffer_dicts to be dictionaries, got {type(d)}")
            repeated = sorted(set(tensors) & set(d))
            if repeated:
                raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of functional call is ambiguous")
            tensors.update(d)
    else:
        raise ValueError(f"Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, "
                         f"but got {type(parameter_and_buffer_dicts)}")
    given = tensors
    if tie_weights:
        tensors = _untie(module, tensors)
    if strict:
        known = [n for n, _ in module.named_parameters(remove_duplicate=False)]
        known += [n for n, _ in module.named_buffers(remove_duplicate=False)]
        missing = sorted(set(known) - set(tensors))
        unexpected = sorted(set(tensors) - set(known))
        errors = []
        if unexpected:
            errors.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
        if missing:
            errors.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
        if errors:
            raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(type(module).__name__, "\n\t".join(errors)))
    if kwargs is None:
        kwargs = {}
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    originals: list[tuple[str, Any]] = []
    try:
        for name, value in tensors.items():
            originals.append((name, _swap(module, name, value)))
        return module(*args, **kwargs)
    finally:
        # As PyTorch: a tensor the forward assigned in place of a given one (``self.buf = ...``)
        # is written back into the given dict.
        for name, value in reversed(originals):
            final = _swap(module, name, value)
            if name in given and final is not _ABSENT:
                given[name] = final
