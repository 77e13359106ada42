"""Module: the base class of every layer and model, with PyTorch's registration rules.

Assigning a Parameter to a module attribute registers it as a parameter, a Module as a child,
and ``register_buffer`` registers a tensor as a buffer; ``state_dict``, ``parameters()``,
``to()`` and ``train()``/``eval()`` walk what was registered.

>>> import tensorplug as tp
>>> class Affine(tp.nn.Module):
...     def __init__(self):
...         super().__init__()
...         self.scale = tp.nn.Parameter(tp.ones(3))
...     def forward(self, x):
...         return x * self.scale
>>> [name for name, _ in Affine().named_parameters()]
['scale']
"""
from __future__ import annotations

import itertools
import warnings
from collections import OrderedDict, namedtuple
from collections.abc import Mapping
from typing import Any, Callable, Iterator

from ..frontend import dtypes as _dt
from ..frontend.autograd import no_grad
from ..frontend.factories import empty_like
from ..frontend.ops.copying import _parse_to_args, to as _tensor_to
from ..frontend.tensor import Tensor, resolve_device
from ..frontend.shared_memory import share_tensors
from ..profiler._recorder import call_module_in_range as _call_module_in_range, module_ranges as _module_ranges
from ._backward_hooks import HookedCall, attach_legacy_hooks
from ._hook_tables import (
    ALWAYS_CALL, EVERY_MODULE, FULL, LEGACY, MUST_RETURN_NONE, PRE, WITH_KWARGS, RemovableHandle, add_backward_hook,
    add_every_module_forward_hook, add_hook, backward_hooks_for_call, call_hooks_active as _call_hooks_active,
    remember_public_post_hook, was_public_post_hook,
)
from .parameter import Buffer, Parameter, replace_tensor_data

__all__ = [
    "Module", "RemovableHandle", "register_module_forward_pre_hook", "register_module_forward_hook",
    "register_module_full_backward_hook", "register_module_full_backward_pre_hook", "register_module_backward_hook",
    "register_module_parameter_registration_hook", "register_module_buffer_registration_hook",
    "register_module_module_registration_hook",
]

#: The hook tables of a module: handle id -> hook, in call order, under PyTorch's attribute names
#: (libraries read them); a hook's option bits are in ``_hook_options`` under the same id.
_HOOK_TABLES = (
    "_forward_pre_hooks", "_forward_hooks", "_backward_pre_hooks", "_backward_hooks", "_state_dict_pre_hooks",
    "_state_dict_hooks", "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks",
)

#: The state_dict key (after the module's prefix) of what ``get_extra_state`` returns.
_EXTRA_STATE_KEY = "_extra_state"


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


class _LoadPreHook:
    """A load-state-dict pre-hook as stored: called with the seven loading arguments, it puts
    its module in front when it has one (``register_load_state_dict_pre_hook``)."""

    def __init__(self, hook: Callable, module: "Module | None"):
        self.hook = hook
        self.module = module

    def __call__(self, *loading_args):
        if self.module is None:
            return self.hook(*loading_args)
        return self.hook(self.module, *loading_args)


def _addindent(text: str, spaces: int) -> str:
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    return lines[0] + "\n" + "\n".join(" " * spaces + line for line in lines[1:])


class Module:
    """Base class of all neural-network modules; subclasses define ``forward``.

    Call the module (``module(x)``), not ``forward``: the call runs the forward hooks.
    """

    training: bool
    _version: int = 1

    def __init__(self, *args, **kwargs) -> None:
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() takes no arguments, got {args} {kwargs}")
        # object.__setattr__ skips our registration logic while the dicts it needs are made.
        setattr_ = object.__setattr__
        setattr_(self, "training", True)
        setattr_(self, "_parameters", OrderedDict())
        setattr_(self, "_buffers", OrderedDict())
        setattr_(self, "_non_persistent_buffers_set", set())
        setattr_(self, "_modules", OrderedDict())
        for table in _HOOK_TABLES:
            setattr_(self, table, OrderedDict())
        setattr_(self, "_hook_options", {})
        setattr_(self, "_backward_hook_kind", None)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    # --- calling ----------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if _module_ranges[0]:  # a profile records module ranges (with_modules)
            return _call_module_in_range(self, self._call_with_hooks, args, kwargs)
        if not (self._forward_pre_hooks or self._forward_hooks or _call_hooks_active[0]):
            return self.forward(*args, **kwargs)
        return self._call_with_hooks(*args, **kwargs)

    def _call_with_hooks(self, *args, **kwargs):
        full_hooks = legacy_hooks = pre_hooks = ()
        every_module = False  # whether forward hooks for every module run in this call
        if _call_hooks_active[0]:
            full_hooks, legacy_hooks, pre_hooks = backward_hooks_for_call(self)
            every_module = bool(EVERY_MODULE._forward_pre_hooks or EVERY_MODULE._forward_hooks)
        if not (self._forward_pre_hooks or self._forward_hooks or every_module or full_hooks or legacy_hooks
                or pre_hooks):
            return self.forward(*args, **kwargs)
        options = self._hook_options
        forward_pre_hooks = self._forward_pre_hooks
        if every_module:
            # Handle ids are unique across owners, so one merged table serves both; the hooks for
            # every module come first, PyTorch's order.
            options = {**EVERY_MODULE._hook_options, **options}
            forward_pre_hooks = {**EVERY_MODULE._forward_pre_hooks, **forward_pre_hooks}
        # The always_call forward hooks not run yet: if anything below raises, they still run.
        owed = ([hook_id for hook_id in itertools.chain(EVERY_MODULE._forward_hooks if every_module else (),
                                                        self._forward_hooks)
                 if options.get(hook_id, 0) & ALWAYS_CALL] if options else [])
        output = None
        try:
            # args and kwargs are rebound hook by hook (not in a helper) so that the always_call
            # hooks see what the last pre-hook made of them, even if a later one raises.
            for hook_id, pre_hook in list(forward_pre_hooks.items()) if forward_pre_hooks else ():
                if options.get(hook_id, 0) & WITH_KWARGS:
                    args, kwargs = _new_args_and_kwargs(pre_hook(self, args, kwargs), args, kwargs)
                else:
                    returned = pre_hook(self, args)
                    if returned is not None:
                        args = returned if isinstance(returned, tuple) else (returned,)
            hooked_call = None
            if full_hooks or pre_hooks:
                hooked_call = HookedCall(self, full_hooks, pre_hooks)
                args = hooked_call.wrap_inputs(args)
            output = self.forward(*args, **kwargs)
            forward_hooks = (list(self._forward_hooks.items()) if not every_module  # a copy: a hook may remove itself
                             else [*EVERY_MODULE._forward_hooks.items(), *self._forward_hooks.items()])
            for hook_id, hook in forward_hooks:
                flags = options.get(hook_id, 0)
                if flags & ALWAYS_CALL and hook_id in owed:
                    owed.remove(hook_id)  # before the call: a hook that raises is not run twice
                returned = hook(self, args, kwargs, output) if flags & WITH_KWARGS else hook(self, args, output)
                if returned is not None:
                    output = returned
            if hooked_call is not None:
                output = hooked_call.wrap_outputs(output)
            if legacy_hooks:
                attach_legacy_hooks(self, legacy_hooks, args, output)
        except Exception:
            if owed:
                self._run_owed_forward_hooks(owed, args, kwargs, output)
            raise
        return output

    def _run_owed_forward_hooks(self, hook_ids: list, args: tuple, kwargs: dict, output) -> None:
        """Run the always_call forward hooks a failed call did not reach (this module's or those
        for every module). A returned output goes to the next of them, as in a call that works,
        but the call's own error is what propagates in the end: theirs become warnings."""
        for hook_id in hook_ids:
            owner = self if hook_id in self._forward_hooks else EVERY_MODULE
            hook = owner._forward_hooks.get(hook_id)
            if hook is None:  # removed by an earlier hook
                continue
            try:
                if owner._hook_options.get(hook_id, 0) & WITH_KWARGS:
                    returned = hook(self, args, kwargs, output)
                else:
                    returned = hook(self, args, output)
                if returned is not None:
                    output = returned
            except Exception as exc:  # noqa: BLE001  (silenced in favour of the call's error, as PyTorch)
                scope = "global module" if owner is EVERY_MODULE else "module"
                warnings.warn(
                    f"{scope} forward hook with ``always_call=True`` raised an exception that was silenced as another "
                    f"error was raised in forward: {exc}",
                    stacklevel=4,
                )

    def _add_hook(self, table: OrderedDict, hook: Callable, *, first: bool = False,
                  options: int = 0) -> RemovableHandle:
        """Register ``hook`` in one of this module's tables, its option bits in ``_hook_options``."""
        return add_hook(table, hook, first=first, options=options, options_table=self._hook_options)

    def register_full_backward_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """``hook(module, grad_output) -> None or new grad_output`` runs when the gradients w.r.t.
        the module's outputs are computed, before those w.r.t. its inputs (as PyTorch)."""
        return add_backward_hook(self, hook, PRE, first=prepend)

    def register_full_backward_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """``hook(module, grad_input, grad_output) -> None or new grad_input`` runs when the
        gradients w.r.t. the module's inputs are computed. Both are tuples with one entry per
        positional argument (per output), None where it is no tensor or needs no gradient; with
        no input requiring grad the hook runs once grad_output is known, grad_input all None."""
        return add_backward_hook(self, hook, FULL, first=prepend)

    def register_backward_hook(self, hook: Callable) -> RemovableHandle:
        """Deprecated (use :meth:`register_full_backward_hook`): ``hook(module, grad_input,
        grad_output)`` on the autograd node that produced the module's output, with that node's
        gradients, as PyTorch's old hooks (right for modules computed by one op)."""
        return add_backward_hook(self, hook, LEGACY)

    def register_forward_pre_hook(self, hook: Callable, *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """``hook(module, args) -> None or new args`` runs before ``forward``; with ``with_kwargs``,
        ``hook(module, args, kwargs) -> None or (new args, new kwargs)``."""
        options = WITH_KWARGS if with_kwargs else 0
        return self._add_hook(self._forward_pre_hooks, hook, first=prepend, options=options)

    def register_forward_hook(self, hook: Callable, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False) -> RemovableHandle:
        """``hook(module, args, output) -> None or new output`` runs after ``forward`` (with
        ``with_kwargs``, ``hook(module, args, kwargs, output)``); with ``always_call`` it also runs
        when the call raises, with ``output`` None if forward did not finish."""
        options = (WITH_KWARGS if with_kwargs else 0) | (ALWAYS_CALL if always_call else 0)
        return self._add_hook(self._forward_hooks, hook, first=prepend, options=options)

    # --- registration -----------------------------------------------------------------------
    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a tensor that is state but not a parameter (running statistics, masks)."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_name("buffer", name, self._buffers)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' (Tensor or None required)")
        if EVERY_MODULE._buffer_registration_hooks:
            tensor = _after_registration_hooks(EVERY_MODULE._buffer_registration_hooks, self, name, tensor, "buffer",
                                               Tensor)
        if isinstance(tensor, Parameter):
            tensor = tensor.detach()
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter (or None, a declared but absent one such as ``bias=False``)."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_name("parameter", name, self._parameters)
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign '{type(param).__name__}' object to parameter '{name}' (nn.Parameter or None required)"
            )
        if param is not None and param.grad_fn is not None:
            raise ValueError(
                f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be created explicitly. "
                f"To express '{name}' as a function of another Tensor, compute the value in the forward() method."
            )
        if param is not None and EVERY_MODULE._parameter_registration_hooks:
            param = _after_registration_hooks(EVERY_MODULE._parameter_registration_hooks, self, name, param,
                                              "parameter", Parameter)
        self._parameters[name] = param

    def add_module(self, name: str, module: "Module | None") -> None:
        """Add a child module, reachable as the attribute ``name``."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {type(name).__name__}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        if EVERY_MODULE._module_registration_hooks:
            module = _after_registration_hooks(EVERY_MODULE._module_registration_hooks, self, name, module, "module",
                                               Module)
        self._modules[name] = module

    register_module = add_module

    def _check_name(self, kind: str, name, table: dict) -> None:
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain "."')
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if hasattr(self, name) and name not in table:
            raise KeyError(f"attribute '{name}' already exists")

    def __setattr__(self, name: str, value) -> None:
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._remove_from(name, d, d["_buffers"], d["_modules"])
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as parameter '{name}' (nn.Parameter or None expected)"
                )
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            modules = d.get("_modules")
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._remove_from(name, d, d["_parameters"], d["_buffers"])
            if EVERY_MODULE._module_registration_hooks:
                value = _after_registration_hooks(EVERY_MODULE._module_registration_hooks, self, name, value,
                                                  "module", Module)
            modules[name] = value
        elif d.get("_modules") is not None and name in d["_modules"]:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module '{name}' (nn.Module or None expected)")
            if EVERY_MODULE._module_registration_hooks:
                value = _after_registration_hooks(EVERY_MODULE._module_registration_hooks, self, name, value,
                                                  "module", Module)
            d["_modules"][name] = value
        elif isinstance(value, Buffer):
            if d.get("_buffers") is None:
                raise AttributeError("cannot assign buffer before Module.__init__() call")
            self._remove_from(name, d, d["_parameters"], d["_modules"])
            self.register_buffer(name, value.data, value.persistent)
        elif d.get("_buffers") is not None and name in d["_buffers"]:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' (Tensor or None expected)")
            if EVERY_MODULE._buffer_registration_hooks:
                value = _after_registration_hooks(EVERY_MODULE._buffer_registration_hooks, self, name, value,
                                                  "buffer", Tensor)
            d["_buffers"][name] = value
        else:
            object.__setattr__(self, name, value)

    @staticmethod
    def _remove_from(name: str, *tables) -> None:
        for table in tables:
            table.pop(name, None)

    def __getattr__(self, name: str):
        # Only called when normal lookup fails: look in the registration tables.
        d = self.__dict__
        for table in ("_parameters", "_buffers", "_modules"):
            if table in d and name in d[table]:
                return d[table][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for table in (self._parameters, self._buffers, self._modules):
            if name in table:
                del table[name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        keys = list(object.__dir__(self))
        keys += list(self._parameters) + list(self._buffers) + list(self._modules)
        return sorted(key for key in set(keys) if not key[0].isdigit())

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        # A state from an older tensorplug may lack some of today's tables: start them empty.
        for table in _HOOK_TABLES:
            self.__dict__.setdefault(table, OrderedDict())
        self.__dict__.setdefault("_hook_options", {})
        self.__dict__.setdefault("_backward_hook_kind", None)
        self.__dict__.setdefault("_non_persistent_buffers_set", set())

    # --- walking the tree -------------------------------------------------------------------
    def _named_members(self, get_members, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        seen = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for name, value in get_members(module):
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                if remove_duplicate:
                    seen.add(id(value))
                yield (module_prefix + ("." if module_prefix else "") + name, value)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """The parameters of this module (and its descendants when ``recurse``), each once."""
        if not self._modules and type(self).named_parameters is Module.named_parameters:
            # A module without children (a layer stepped by hand, as in a training loop): its
            # own table as a list, without the generators of the tree walk, whose every resumed
            # step costs a frame (issue 14).
            found, seen = [], set()
            for param in self._parameters.values():
                if param is not None and id(param) not in seen:
                    seen.add(id(param))
                    found.append(param)
            return iter(found)
        return (param for _, param in self.named_parameters(recurse=recurse))

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """(dotted name, parameter) pairs; a parameter shared by two modules appears once."""
        return self._named_members(lambda m: m._parameters.items(), prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        return self._named_members(lambda m: m._buffers.items(), prefix, recurse, remove_duplicate)

    def children(self) -> Iterator["Module"]:
        for _, module in self.named_children():
            yield module

    def named_children(self):
        seen = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def modules(self) -> Iterator["Module"]:
        for _, module in self.named_modules():
            yield module

    def named_modules(self, memo: set | None = None, prefix: str = "", remove_duplicate: bool = True):
        """(dotted name, module) pairs for this module and every descendant, depth first."""
        # An explicit stack rather than recursion: deep models must not hit the recursion limit.
        if memo is None:
            memo = set()
        stack = [(prefix, self)]
        while stack:
            name, module = stack.pop()
            if remove_duplicate:
                if id(module) in memo:
                    continue
                memo.add(id(module))
            yield name, module
            children = [
                (name + ("." if name else "") + child_name, child)
                for child_name, child in module._modules.items()
                if child is not None
            ]
            stack.extend(reversed(children))

    def get_submodule(self, target: str) -> "Module":
        """The module at dotted path ``target`` ("" is this module)."""
        if target == "":
            return self
        module = self
        for item in target.split("."):
            if not hasattr(module, item):
                raise AttributeError(f"{type(module).__name__} has no attribute `{item}`")
            module = getattr(module, item)
            if not isinstance(module, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return module

    def set_submodule(self, target: str, module: "Module", strict: bool = False) -> None:
        """Put ``module`` at dotted path ``target``, replacing the module there or, unless
        ``strict``, adding it to the parent module (which must exist)."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        parent_path, _, name = target.rpartition(".")
        parent = self.get_submodule(parent_path)
        if hasattr(parent, name):
            if not isinstance(getattr(parent, name), Module):
                raise AttributeError(f"`{name}` is not an nn.Module")
        elif strict:
            raise AttributeError(f"{type(parent).__name__} has no attribute `{name}`")
        setattr(parent, name, module)

    def get_parameter(self, target: str) -> Parameter:
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if name not in module._parameters:
            raise AttributeError(f"{type(module).__name__} has no parameter `{name}`")
        return module._parameters[name]

    def get_buffer(self, target: str) -> Tensor:
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if name not in module._buffers:
            raise AttributeError(f"{type(module).__name__} has no buffer `{name}`")
        return module._buffers[name]

    # --- modes and gradients ----------------------------------------------------------------
    def train(self, mode: bool = True) -> "Module":
        """Set training mode on this module and every descendant (Dropout, BatchNorm care)."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for module in self.modules():
            object.__setattr__(module, "training", mode)
        return self

    def eval(self) -> "Module":
        return self.train(False)

    def compile(self, *args, **kwargs) -> None:
        """Compile this module's calls in place, as ``tp.compile`` would (tensorplug is eager:
        the arguments are checked and the module keeps running op by op)."""
        from ..compiler import compile as compile_callable

        compile_callable(self, *args, **kwargs)

    def requires_grad_(self, requires_grad: bool = True) -> "Module":
        for param in self.parameters():
            param.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of every parameter (to None by default, as PyTorch 2)."""
        for param in self.parameters():
            if param.grad is None:
                continue
            if set_to_none:
                param.grad = None
            else:
                grad = param.grad
                if grad.grad_fn is not None:
                    grad = grad.detach()
                    param.grad = grad
                with no_grad():
                    grad.zero_()

    def apply(self, fn: Callable[["Module"], None]) -> "Module":
        """Call ``fn`` on every descendant (children first) and then on this module."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # --- device and dtype -------------------------------------------------------------------
    def _apply(self, fn: Callable[[Tensor], Tensor], recurse: bool = True) -> "Module":
        """Convert every parameter (in place, keeping its identity), its grad and every buffer,
        of the descendants too when ``recurse``."""
        for module in self.modules() if recurse else (self,):
            for name, param in module._parameters.items():
                if param is None:
                    continue
                with no_grad():
                    new = fn(param)
                if new is not param:
                    replace_tensor_data(param, new)
                if param.grad is not None:
                    with no_grad():
                        new_grad = fn(param.grad)
                    if new_grad is not param.grad:
                        param.grad = new_grad.detach()
            for name, buf in module._buffers.items():
                if buf is not None:
                    module._buffers[name] = fn(buf)
        return self

    def to(self, *args, **kwargs) -> "Module":
        """Move and/or cast parameters and buffers in place: ``to("opencl")``, ``to(tp.float64)``,
        ``to(device, dtype)``, ``to(tensor)``. Only floating-point tensors change dtype."""
        kwargs = dict(kwargs)
        memory_format = kwargs.pop("memory_format", None)
        dev, dtype, _ = _parse_to_args(args, kwargs)
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError(f"nn.Module.to only accepts floating point dtypes, but got desired dtype={dtype}")
        target = None if dev is None else resolve_device(dev)

        def convert(t: Tensor) -> Tensor:
            cast = dtype if dtype is not None and t._dtype.is_floating_point else None
            # As PyTorch: a memory format applies to the 4-d and 5-d tensors only.
            fmt = memory_format if memory_format is not None and t.dim() in (4, 5) else None
            if (target is None or t._device == target) and (cast is None or cast is t._dtype) and fmt is None:
                return t
            if fmt is None:
                return _tensor_to(t, device=target, dtype=cast)
            return _tensor_to(t, device=target, dtype=cast, memory_format=fmt)

        return self._apply(convert)

    def to_empty(self, *, device, recurse: bool = True) -> "Module":
        """Replace every parameter's and buffer's data by an uninitialized tensor of the same
        shape and dtype on ``device`` (parameters keep their identity and requires_grad): the
        step between building a module cheaply and ``load_state_dict``. Returns ``self``."""
        return self._apply(lambda t: empty_like(t, device=device), recurse=recurse)

    def share_memory(self) -> "Module":
        """Move every parameter, its gradient and every buffer into shared memory in place
        (``Tensor.share_memory_``), so that processes given this module update one copy of it
        (Hogwild training, ``tp.multiprocessing``). Returns ``self``."""
        tensors = []
        for module in self.modules():
            for param in module._parameters.values():
                if param is not None:
                    tensors.append(param)
                    if param.grad is not None:
                        tensors.append(param.grad)
            tensors.extend(buf for buf in module._buffers.values() if buf is not None)
        share_tensors(tensors)  # one pass for all: views of any of them follow
        return self

    def cpu(self) -> "Module":
        return self.to("cpu")

    def cuda(self, device=None) -> "Module":
        return self.to("cuda" if device is None else (f"cuda:{device}" if isinstance(device, int) else device))

    def type(self, dst_type) -> "Module":
        return self._apply(lambda t: _tensor_to(t, dtype=dst_type))

    def _cast_floating(self, dtype) -> "Module":
        return self._apply(lambda t: _tensor_to(t, dtype=dtype) if t._dtype.is_floating_point and t._dtype is not dtype else t)

    def float(self) -> "Module":
        return self._cast_floating(_dt.float32)

    def double(self) -> "Module":
        return self._cast_floating(_dt.float64)

    def half(self) -> "Module":
        return self._cast_floating(_dt.float16)

    def bfloat16(self) -> "Module":
        return self._cast_floating(_dt.bfloat16)

    # --- state_dict -------------------------------------------------------------------------
    def register_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Run ``hook(module, prefix, keep_vars)`` before ``state_dict`` saves this module."""
        return self._add_hook(self._state_dict_pre_hooks, hook)

    def register_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """Run ``hook(module, state_dict, prefix, local_metadata)`` once ``state_dict`` saved this
        module and its descendants; the hook edits ``state_dict`` in place and returns None."""
        remember_public_post_hook(hook)
        return self._add_hook(self._state_dict_hooks, hook, options=MUST_RETURN_NONE)

    def _register_state_dict_hook(self, hook: Callable) -> RemovableHandle:
        """The private post-hook form libraries still call: ``hook(module, state_dict, prefix,
        local_metadata)`` may return a new dict, used when ``module`` is the root."""
        if was_public_post_hook(hook):
            raise RuntimeError(
                "Cannot register the same function as the state dict post hook that was "
                "previously registered via register_state_dict_post_hook"
            )
        return self._add_hook(self._state_dict_hooks, hook)

    def get_extra_state(self) -> Any:
        """The non-tensor state ``state_dict`` saves under ``"_extra_state"`` when a subclass
        overrides this (and ``set_extra_state`` to load it back)."""
        raise RuntimeError(
            "Reached a code path in Module.get_extra_state() that should never be called. "
            "Please report this bug to tensorplug."
        )

    def set_extra_state(self, state: Any) -> None:
        """Restore what ``get_extra_state`` returned; ``load_state_dict`` calls it when a subclass
        overrides it."""
        raise RuntimeError(
            "Reached a code path in Module.set_extra_state() that should never be called. "
            "Please report this bug to tensorplug."
        )

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        """Put this module's own parameters, persistent buffers and extra state (not its
        descendants') into ``destination``; subclasses override it to save more."""
        skipped = self._non_persistent_buffers_set
        persistent_buffers = ((name, buf) for name, buf in self._buffers.items() if name not in skipped)
        for name, value in itertools.chain(self._parameters.items(), persistent_buffers):
            if value is not None:
                destination[prefix + name] = value if keep_vars else value.detach()
        if _overrides(self, "get_extra_state"):
            destination[prefix + _EXTRA_STATE_KEY] = self.get_extra_state()

    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False) -> OrderedDict:
        """An ordered map from dotted names to the parameters and persistent buffers (detached,
        sharing storage, unless ``keep_vars``), and to the extra state of modules that define
        ``get_extra_state``. Its ``_metadata`` maps each module's prefix to
        ``{"version": module._version}``."""
        if args:
            destination, prefix, keep_vars = _positional_state_dict_args(args, destination, prefix, keep_vars)
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = {"version": self._version}
        saved_metadata = getattr(destination, "_metadata", None)
        if saved_metadata is not None:
            saved_metadata[prefix[:-1]] = local_metadata
        for pre_hook in self._state_dict_pre_hooks.values():
            pre_hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        # Each child through its own state_dict, as PyTorch: a subclass overriding state_dict
        # (or hooks on a child) take part when the parent is saved. Module trees are shallow.
        for child_name, child in self._modules.items():
            if child is not None:
                child.state_dict(destination=destination, prefix=f"{prefix}{child_name}.", keep_vars=keep_vars)
        return self._finish_state_dict(destination, prefix, local_metadata)

    def _finish_state_dict(self, destination: dict, prefix: str, local_metadata: dict) -> dict:
        """Run the state_dict post-hooks; a dict returned by a private-form hook becomes the
        result (which only the root's caller sees)."""
        for hook_id, post_hook in self._state_dict_hooks.items():
            returned = post_hook(self, destination, prefix, local_metadata)
            if returned is None:
                continue
            if self._hook_options.get(hook_id, 0) & MUST_RETURN_NONE:
                raise RuntimeError("state_dict post-hook must return None")
            destination = returned
        return destination

    def register_load_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Run ``hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)`` before ``load_state_dict`` loads this module; the hook may
        edit ``state_dict`` (a copy) in place, to rename old keys for instance."""
        return self._add_hook(self._load_state_dict_pre_hooks, _LoadPreHook(hook, self))

    def _register_load_state_dict_pre_hook(self, hook: Callable, with_module: bool = False) -> RemovableHandle:
        """As ``register_load_state_dict_pre_hook``, the hook called without the module unless
        ``with_module``."""
        return self._add_hook(self._load_state_dict_pre_hooks, _LoadPreHook(hook, self if with_module else None))

    def register_load_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """Run ``hook(module, incompatible_keys)`` once ``load_state_dict`` loaded this module and
        its descendants; the hook may edit ``incompatible_keys.missing_keys`` and
        ``unexpected_keys`` in place (the strict check sees the edits) and returns None."""
        return self._add_hook(self._load_state_dict_post_hooks, hook)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:
        """Load this module's own parameters, persistent buffers and extra state (not its
        descendants') from ``state_dict`` (a copy, which may be edited), after running the load
        pre-hooks; record problems in the three lists. Subclasses override it for
        version-dependent loading (``local_metadata.get("version")``)."""
        for pre_hook in self._load_state_dict_pre_hooks.values():
            pre_hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
        non_persistent = self._non_persistent_buffers_set
        local_state = {k: v for k, v in self._parameters.items() if v is not None}
        local_state.update((k, v) for k, v in self._buffers.items() if v is not None and k not in non_persistent)
        assign = local_metadata.get("assign_to_params_buffers", False)
        for name, param in local_state.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            value = state_dict[key]
            if not isinstance(value, Tensor):
                error_msgs.append(
                    f'While copying the parameter named "{key}", expected torch.Tensor or Tensor-like object from '
                    f"checkpoint but received {type(value)}"
                )
                continue
            # As PyTorch: a 1-element 1-d tensor (a 0.3-era checkpoint) loads into a 0-d one.
            if not param._shape and value._shape == (1,):
                value = value[0]
            if value._shape != param._shape:
                error_msgs.append(
                    f"size mismatch for {key}: copying a param with shape {_size(value._shape)} from checkpoint, "
                    f"the shape in current model is {_size(param._shape)}."
                )
                continue
            if not assign and param._device.type == "meta" and value._device.type != "meta":
                warnings.warn(
                    f"for {name}: copying from a non-meta parameter in the checkpoint to a meta parameter in the "
                    f"current model, which is a no-op. (Did you mean to pass `assign=True` to assign items in the "
                    f"state dictionary to their corresponding key in the module instead of copying them in place?)",
                    UserWarning, stacklevel=3)
            try:
                with no_grad():
                    if assign:
                        if isinstance(param, Parameter):
                            # The module's requires_grad wins, as PyTorch: assign keeps every
                            # other property of the checkpoint's tensor (device, dtype, data).
                            if isinstance(value, Parameter):
                                value.requires_grad_(param.requires_grad)
                            else:
                                value = Parameter(value, requires_grad=param.requires_grad)
                        setattr(self, name, value)
                    else:
                        param.copy_(value)
            except Exception as exc:  # noqa: BLE001  (reported with the key, as PyTorch does)
                error_msgs.append(
                    f'While copying the parameter named "{key}", whose dimensions in the model are '
                    f"{_size(param._shape)} and whose dimensions in the checkpoint are {_size(value._shape)}, "
                    f"an exception occurred : {exc.args}."
                )
        own_names = set(local_state)
        # Extra state loads where set_extra_state is overridden (PyTorch's rule): there the key is
        # expected, elsewhere it is unexpected, even if the module saves one.
        if _overrides(self, "set_extra_state"):
            own_names.add(_EXTRA_STATE_KEY)
            extra_key = prefix + _EXTRA_STATE_KEY
            if extra_key in state_dict:
                self.set_extra_state(state_dict[extra_key])
            elif strict:
                missing_keys.append(extra_key)
        if strict:
            for key in state_dict:
                if not key.startswith(prefix):
                    continue
                head, dot, _ = key[len(prefix):].partition(".")
                # A dotted rest names something of a child; a plain one, this module's own.
                if head not in (self._modules if dot else own_names):
                    unexpected_keys.append(key)

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Copy values from ``state_dict`` into the parameters and buffers (in place), or with
        ``assign=True`` make the state dict's tensors the module's (wrapped as Parameters that keep
        the module's ``requires_grad``); returns ``(missing_keys, unexpected_keys)`` and raises
        RuntimeError on any problem when strict. Each module's ``_load_from_state_dict`` loads it
        after its load pre-hooks; its load post-hooks run once its descendants are loaded."""
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        # A copy, which _load_from_state_dict and the pre-hooks may edit, with the versions saved.
        working_copy = OrderedDict(state_dict)
        versions = getattr(state_dict, "_metadata", None)
        if versions is not None:
            working_copy._metadata = versions
        run = _LoadRun(versions, assign)
        _load_subtree(self, working_copy, "", run)
        problems = []
        if strict and run.missing_keys:
            problems.append(_listed_keys("Missing", run.missing_keys))
        if strict and run.unexpected_keys:
            problems.append(_listed_keys("Unexpected", run.unexpected_keys))
        problems += run.error_msgs
        if problems:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t" + "\n\t".join(problems))
        return _IncompatibleKeys(run.missing_keys, run.unexpected_keys)

    # --- printing ---------------------------------------------------------------------------
    def extra_repr(self) -> str:
        """The text inside this module's parentheses in ``repr`` (override in layers)."""
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        extra_lines = []
        extra = self.extra_repr()
        if extra:
            extra_lines = extra.split("\n")
        child_lines = []
        for key, module in self._modules.items():
            mod_str = _addindent(repr(module), 2)
            child_lines.append("(" + key + "): " + mod_str)
        lines = extra_lines + child_lines
        main_str = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main_str += extra_lines[0]
            else:
                main_str += "\n  " + "\n  ".join(lines) + "\n"
        return main_str + ")"


def register_module_forward_pre_hook(hook: Callable) -> RemovableHandle:
    """A forward pre-hook (:meth:`Module.register_forward_pre_hook`, without keyword arguments)
    for every module; these run before a module's own."""
    return add_every_module_forward_hook(EVERY_MODULE._forward_pre_hooks, hook)


def register_module_forward_hook(hook: Callable, *, with_kwargs: bool = False,
                                 always_call: bool = False) -> RemovableHandle:
    """A forward hook (:meth:`Module.register_forward_hook`) for every module; these run before
    a module's own."""
    options = (WITH_KWARGS if with_kwargs else 0) | (ALWAYS_CALL if always_call else 0)
    return add_every_module_forward_hook(EVERY_MODULE._forward_hooks, hook, options=options)


def register_module_parameter_registration_hook(hook: Callable) -> RemovableHandle:
    """``hook(module, name, param) -> None or new param`` runs whenever any module registers a
    parameter (``register_parameter``, assigning a Parameter), not for None."""
    return add_hook(EVERY_MODULE._parameter_registration_hooks, hook)


def register_module_buffer_registration_hook(hook: Callable) -> RemovableHandle:
    """``hook(module, name, buffer) -> None or new buffer`` runs whenever any module registers a
    buffer (``register_buffer``, assigning a Buffer, or assigning to a buffer's name), None included."""
    return add_hook(EVERY_MODULE._buffer_registration_hooks, hook)


def register_module_module_registration_hook(hook: Callable) -> RemovableHandle:
    """``hook(module, name, submodule) -> None or new submodule`` runs whenever any module
    registers a child (``add_module``, assigning a Module, or assigning to a child's name), None included."""
    return add_hook(EVERY_MODULE._module_registration_hooks, hook)


def register_module_full_backward_pre_hook(hook: Callable) -> RemovableHandle:
    """A backward pre-hook (:meth:`Module.register_full_backward_pre_hook`) for every module;
    these run before a module's own."""
    return add_backward_hook(EVERY_MODULE, hook, PRE)


def register_module_full_backward_hook(hook: Callable) -> RemovableHandle:
    """A full backward hook (:meth:`Module.register_full_backward_hook`) for every module;
    these run before a module's own."""
    return add_backward_hook(EVERY_MODULE, hook, FULL)


def register_module_backward_hook(hook: Callable) -> RemovableHandle:
    """Deprecated: a :meth:`Module.register_backward_hook` hook for every module."""
    return add_backward_hook(EVERY_MODULE, hook, LEGACY)


def _overrides(module: Module, method: str) -> bool:
    """Whether ``module``'s class replaces Module's ``method`` (get_extra_state and the like)."""
    return getattr(type(module), method) is not getattr(Module, method)


def _positional_state_dict_args(args: tuple, destination, prefix: str, keep_vars: bool) -> tuple:
    """``state_dict``'s deprecated positional form ``(destination, prefix, keep_vars)``, warned
    about as PyTorch does; a value also given by keyword keeps the keyword's."""
    warnings.warn(
        "Positional args are being deprecated, use kwargs instead. Refer to "
        "https://pytorch.org/docs/main/generated/torch.nn.Module.html#torch.nn.Module.state_dict"
        " for details.",
        FutureWarning,
        stacklevel=3,
    )
    old_destination, old_prefix, old_keep_vars = tuple(args[:3]) + (None, "", False)[len(args):]
    return (
        old_destination if destination is None else destination,
        old_prefix if prefix == "" else prefix,
        old_keep_vars if keep_vars is False else keep_vars,
    )


class _LoadRun:
    """One ``load_state_dict`` call: its settings, and the problems found in every module."""

    __slots__ = ("metadata", "assign", "missing_keys", "unexpected_keys", "error_msgs")

    def __init__(self, metadata, assign: bool):
        self.metadata = metadata
        self.assign = assign
        self.missing_keys: list = []
        self.unexpected_keys: list = []
        self.error_msgs: list = []


def _load_subtree(module: Module, own_keys: dict, prefix: str, run: _LoadRun) -> None:
    """Load ``module`` from ``own_keys`` (the keys under ``prefix``), then each child from the
    keys under its prefix (a child's pre-hook edits its own dict, and each strict check looks at
    its module's keys only), then run ``module``'s load post-hooks."""
    local_metadata = run.metadata.get(prefix[:-1], {}) if run.metadata is not None else {}
    if run.assign:
        local_metadata["assign_to_params_buffers"] = run.assign
    module._load_from_state_dict(own_keys, prefix, local_metadata, True, run.missing_keys, run.unexpected_keys,
                                 run.error_msgs)
    for child_name, child in module._modules.items():
        if child is not None:
            child_prefix = f"{prefix}{child_name}."
            _load_subtree(child, {k: v for k, v in own_keys.items() if k.startswith(child_prefix)}, child_prefix, run)
    if module._load_state_dict_post_hooks:
        report = _IncompatibleKeys(run.missing_keys, run.unexpected_keys)
        for post_hook in module._load_state_dict_post_hooks.values():
            if post_hook(module, report) is not None:
                raise AssertionError(
                    "Hooks registered with ``register_load_state_dict_post_hook`` are not "
                    "expected to return new values, if incompatible_keys need to be modified, "
                    "it should be done inplace."
                )


def _listed_keys(what: str, keys: list) -> str:
    quoted = ", ".join('"' + key + '"' for key in keys)
    return f"{what} key(s) in state_dict: {quoted}. "


def _after_registration_hooks(hooks: OrderedDict, module: Module, name: str, value, kind: str, expected: type):
    """``value`` as the registration hooks for every module leave it: each gets ``(module, name,
    value)`` and may return a replacement, which must be an ``expected`` (PyTorch stores any)."""
    for hook in list(hooks.values()):
        returned = hook(module, name, value)
        if returned is None:
            continue
        if not isinstance(returned, expected):
            raise TypeError(
                f"{kind} registration hook {getattr(hook, '__qualname__', hook)!r} returned "
                f"'{type(returned).__name__}' for {kind} '{name}' of {type(module).__name__} "
                f"({expected.__name__} or None expected)"
            )
        value = returned
    return value


def _new_args_and_kwargs(returned, args: tuple, kwargs: dict) -> tuple:
    """Forward's arguments after a ``with_kwargs`` pre-hook returned ``returned`` (None keeps them)."""
    if returned is None:
        return args, kwargs
    if not (isinstance(returned, tuple) and len(returned) == 2):
        raise RuntimeError(
            f"forward pre-hook must return None or a tuple of (new_args, new_kwargs), but got {returned}."
        )
    return returned


def _size(shape: tuple) -> str:
    return str(list(shape))
