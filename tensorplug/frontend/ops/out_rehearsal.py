"""Checking an out= argument before anything is computed (issue 13).

Most functions taking ``out=`` learn their result's shape and dtype by computing it, and check
``out`` against that result in :func:`write_out`. Rather than repeat each function's shape and
dtype rules in a second, earlier check, :func:`rehearse_out` rehearses the call on the meta
device: the same code runs on meta copies of the arguments (metadata, no memory, kernels that do
nothing), so every check of ``out`` (type, dtype castability, exact dtype, internal overlap, the
out-under-autograd error) raises before the real call runs a kernel. The device, which a meta
copy loses, is compared with the inputs' first.

Each such function opens with ``if out is not None: rehearse_out(itself, locals())``: a test
that costs the calls without ``out`` (nearly all) nothing, where a wrapping decorator cost every
call a Python frame.

A rehearsal that meta tensors cannot perform (an op whose result's shape depends on values, a
check that reads values) is abandoned. The public functions where that happens, ``nonzero`` and
``masked_select``, check ``out``'s dtype and the out-under-autograd error themselves before
computing; all that is left for after is resizing ``out`` to the result, which cannot fail.
A sparse operand is rehearsed as a sparse tensor of meta indices and values.
"""
from __future__ import annotations

import functools
import inspect
import warnings

from ..meta_device import ITEM_MESSAGE
from ..random import Generator
from ..tensor import Tensor, resolve_device

__all__ = ["rehearse_out"]


def rehearse_out(function, arguments: dict) -> None:
    """Raise what ``function`` would raise about the ``out`` in ``arguments`` (the caller's
    ``locals()`` on entry: its parameters by name, so an ``out`` given by position is checked
    too), without computing anything. A call on meta tensors, which is what a rehearsal runs, is
    not rehearsed again."""
    args, kwargs = _call_arguments(function, arguments)
    out = kwargs.pop("out")
    if not _all_meta((args, kwargs, out)):
        _check_out_devices(function.__name__, out, (args, kwargs), kwargs.get("device"))
        _rehearse(function, args, kwargs, out)


@functools.lru_cache(maxsize=None)
def _parameters(function) -> tuple:
    return tuple(inspect.signature(function).parameters.values())


def _call_arguments(function, arguments: dict) -> tuple[list, dict]:
    """The positional and keyword arguments that call ``function`` with the parameter values in
    ``arguments`` (other names there, such as a closure's, are not parameters and are left out).
    ``out`` and the parameters after it go by keyword, where the rehearsal replaces ``out``."""
    args, kwargs = [], {}
    for parameter in _parameters(function):
        value = arguments[parameter.name]
        if parameter.kind is parameter.VAR_POSITIONAL:
            args.extend(value)
        elif parameter.kind is parameter.VAR_KEYWORD:
            kwargs.update(value)
        elif parameter.kind is parameter.POSITIONAL_ONLY or (
                parameter.kind is parameter.POSITIONAL_OR_KEYWORD and parameter.name != "out" and not kwargs):
            args.append(value)
        else:
            kwargs[parameter.name] = value
    return args, kwargs


def _tensors(value):
    """Every tensor in ``value``, looking into tuples, lists and dicts (a function's arguments)."""
    if isinstance(value, Tensor):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _tensors(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _tensors(item)


def _all_meta(value) -> bool:
    # A call on meta tensors costs nothing to compute, and is itself what a rehearsal runs.
    return all(t._device.type == "meta" for t in _tensors(value))


def _check_out_devices(op: str, out, inputs, asked_device) -> None:
    """``out`` must be on the inputs' device, or a factory's ``device=``. A 0-d CPU tensor may join
    inputs on another device, so it does not count; inputs on several devices are left to the
    function's own error."""
    if asked_device is not None:
        devices = {resolve_device(asked_device)}
    else:
        devices = {t._device for t in _tensors(inputs)}
    if len(devices) > 1:
        devices = {t._device for t in _tensors(inputs) if t._shape or t._device.type != "cpu"}
    if len(devices) != 1:
        return
    (device,) = devices
    for target in _tensors(out):
        if target._device is not device:
            raise RuntimeError(f"{op}(): Expected out tensor to be on {device} but got {target._device}")


def _on_meta(value):
    """``value`` with each tensor replaced by a meta tensor of its shape, strides, dtype and
    requires_grad (what the checks of ``out`` read), and generators by None (a generator must be
    on its tensors' device; meta draws nothing from the default one)."""
    if isinstance(value, Generator):
        return None
    if not isinstance(value, Tensor) and getattr(value, "is_sparse", False) is True:  # tp.sparse's own class
        return type(value)(_on_meta(value._indices_), _on_meta(value._values_), value.shape, value._coalesced)
    if isinstance(value, Tensor):
        from ..extra_factories import empty_strided

        copy = empty_strided(value._shape, value.stride(), dtype=value._dtype, device="meta")
        return copy.requires_grad_() if value.requires_grad else copy
    if isinstance(value, (tuple, list)):
        # (a named tuple of outs, as sort returns, becomes a plain tuple, which out= takes too)
        return (list if isinstance(value, list) else tuple)(_on_meta(item) for item in value)
    if isinstance(value, dict):
        return {key: _on_meta(item) for key, item in value.items()}
    return value


def _meta_cannot(error: Exception) -> bool:
    """Whether ``error`` says that meta tensors cannot run the call (not that the call is wrong)."""
    from ...backends.meta import NO_DATA_MESSAGE

    text = str(error)
    return "meta tensor" in text or text in (ITEM_MESSAGE, NO_DATA_MESSAGE)


def _rehearse(function, args, kwargs, out) -> None:
    with warnings.catch_warnings():
        # The real call warns (a resized out=, a deprecation) where the user's code can see it.
        warnings.simplefilter("ignore")
        try:
            meta_kwargs = _on_meta(kwargs)
            if kwargs.get("device") is not None:  # a factory's device, checked against out's above
                meta_kwargs["device"] = "meta"
            function(*_on_meta(args), out=_on_meta(out), **meta_kwargs)
        except Exception as error:
            if not _meta_cannot(error):
                raise
