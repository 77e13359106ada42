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
from typing import Callable, Iterator

from ..frontend import dtypes as _dt
from ..frontend.autograd import no_grad
from ..frontend.factories import empty_like
from ..frontend.ops.copying import _parse_to_args, to as _tensor_to
from ..frontend.tensor import Tensor, resolve_device
from ..frontend.shared_memory import share_tensors
from ..profiler._recorder import call_module_in_range as _call_module_in_range, module_ranges as _module_ranges
from ._backward_hooks import BackwardHook, WrappedHook, warn_non_full_backward_hook
from .parameter import Buffer, Parameter, replace_tensor_data

__all__ = [
    "Module", "RemovableHandle", "register_module_full_backward_hook", "register_module_full_backward_pre_hook",
    "register_module_backward_hook",
]

# Backward hooks for every module (register_module_*backward*_hook), as PyTorch's globals.
_global_backward_pre_hooks: OrderedDict = OrderedDict()
_global_backward_hooks: OrderedDict = OrderedDict()
_global_is_full_backward_hook: bool | None = None
# True once any module (or the globals) was given a backward hook: until then a call looks at
# the forward hook tables only, keeping the no-hooks path as cheap as before backward hooks.
_backward_hooks_used = False


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


class RemovableHandle:
    """What ``register_*_hook`` returns: ``handle.remove()`` unregisters the hook (also a
    context manager that removes it on exit)."""

    _next_id = itertools.count()

    def __init__(self, hooks_dict: OrderedDict, *extra_dicts: OrderedDict):
        self.id = next(RemovableHandle._next_id)
        self._dicts = (hooks_dict,) + extra_dicts

    def remove(self) -> None:
        for hooks in self._dicts:
            hooks.pop(self.id, None)

    def __enter__(self) -> "RemovableHandle":
        return self

    def __exit__(self, *exc_info) -> None:
        self.remove()


class _ModuleBoundHook:
    """A load-state-dict pre-hook as stored: called with the seven loading arguments, it passes
    its module first when it has one (``register_load_state_dict_pre_hook``)."""

    def __init__(self, hook: Callable, module: "Module | None"):
        self.hook = hook
        self.module = module

    def __call__(self, *args):
        if self.module is None:
            return self.hook(*args)
        return self.hook(self.module, *args)


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
        setattr_(self, "_forward_hooks", OrderedDict())
        setattr_(self, "_forward_hooks_with_kwargs", OrderedDict())
        setattr_(self, "_forward_pre_hooks", OrderedDict())
        setattr_(self, "_forward_pre_hooks_with_kwargs", OrderedDict())
        setattr_(self, "_backward_hooks", OrderedDict())
        setattr_(self, "_backward_pre_hooks", OrderedDict())
        setattr_(self, "_is_full_backward_hook", None)
        setattr_(self, "_state_dict_hooks", OrderedDict())
        setattr_(self, "_state_dict_pre_hooks", OrderedDict())
        setattr_(self, "_load_state_dict_pre_hooks", OrderedDict())
        setattr_(self, "_load_state_dict_post_hooks", OrderedDict())

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    # --- calling ----------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if _module_ranges[0]:  # a profile records module ranges (with_modules)
            return _call_module_in_range(self, self._call_with_hooks, args, kwargs)
        if not (self._forward_pre_hooks or self._forward_hooks or _backward_hooks_used):
            return self.forward(*args, **kwargs)
        return self._call_with_hooks(*args, **kwargs)

    def _call_with_hooks(self, *args, **kwargs):
        full_hooks = non_full_hooks = pre_hooks = ()
        if _backward_hooks_used:
            if self._backward_pre_hooks or _global_backward_pre_hooks:
                pre_hooks = [*_global_backward_pre_hooks.values(), *self._backward_pre_hooks.values()]
            if self._backward_hooks or _global_backward_hooks:
                full_hooks, non_full_hooks = self._get_backward_hooks()
        if not (self._forward_pre_hooks or self._forward_hooks or full_hooks or non_full_hooks or pre_hooks):
            return self.forward(*args, **kwargs)
        for hook_id, hook in list(self._forward_pre_hooks.items()):
            if hook_id in self._forward_pre_hooks_with_kwargs:
                result = hook(self, args, kwargs)
                if result is not None:
                    if not (isinstance(result, tuple) and len(result) == 2):
                        raise RuntimeError(
                            "forward pre-hook must return None or a tuple of (new_args, new_kwargs), but got "
                            f"{result}."
                        )
                    args, kwargs = result
            else:
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
        backward_hook = None
        if full_hooks or pre_hooks:
            backward_hook = BackwardHook(self, full_hooks, pre_hooks)
            args = backward_hook.setup_input_hook(args)
        output = self.forward(*args, **kwargs)
        for hook_id, hook in list(self._forward_hooks.items()):
            if hook_id in self._forward_hooks_with_kwargs:
                result = hook(self, args, kwargs, output)
            else:
                result = hook(self, args, output)
            if result is not None:
                output = result
        if backward_hook is not None:
            if not isinstance(output, (Tensor, tuple)):
                warnings.warn(
                    "For backward hooks to be called, module output should be a Tensor or a tuple of Tensors but "
                    f"received {type(output)}",
                    stacklevel=2,
                )
            output = backward_hook.setup_output_hook(output)
        if non_full_hooks:
            var = output
            while not isinstance(var, Tensor):
                var = next(v for v in var.values() if isinstance(v, Tensor)) if isinstance(var, dict) else var[0]
            if var.grad_fn is not None:
                for hook in non_full_hooks:
                    var.grad_fn.register_hook(WrappedHook(hook, self))
                warn_non_full_backward_hook(args, output, var.grad_fn)
        return output

    def _get_backward_hooks(self) -> tuple[list, list]:
        """The full and the deprecated (non-full) backward hooks of this module, globals first."""
        full_hooks: list = []
        non_full_hooks: list = []
        if _global_is_full_backward_hook is True:
            full_hooks += _global_backward_hooks.values()
        elif _global_is_full_backward_hook is False:
            non_full_hooks += _global_backward_hooks.values()
        if self._is_full_backward_hook is True:
            full_hooks += self._backward_hooks.values()
        elif self._is_full_backward_hook is False:
            non_full_hooks += self._backward_hooks.values()
        return full_hooks, non_full_hooks

    def register_full_backward_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """``hook(module, grad_output) -> None or new grad_output`` runs when the gradients w.r.t.
        the module's outputs are computed, before those w.r.t. its inputs (as PyTorch)."""
        _note_backward_hooks_used()
        handle = RemovableHandle(self._backward_pre_hooks)
        self._backward_pre_hooks[handle.id] = hook
        if prepend:
            self._backward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """``hook(module, grad_input, grad_output) -> None or new grad_input`` runs when the
        gradients w.r.t. the module's inputs are computed. Both are tuples with one entry per
        positional argument (per output), None where it is no tensor or needs no gradient; with
        no input requiring grad the hook runs once grad_output is known, grad_input all None."""
        if self._is_full_backward_hook is False:
            raise RuntimeError(
                "Cannot use both regular backward hooks and full backward hooks on a single Module. Please use only one "
                "of them."
            )
        _note_backward_hooks_used()
        self._is_full_backward_hook = True
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        if prepend:
            self._backward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_backward_hook(self, hook: Callable) -> RemovableHandle:
        """Deprecated (use :meth:`register_full_backward_hook`): ``hook(module, grad_input,
        grad_output)`` on the autograd node that produced the module's output, with that node's
        gradients, as PyTorch's old hooks (right for modules computed by one op)."""
        if self._is_full_backward_hook is True:
            raise RuntimeError(
                "Cannot use both regular backward hooks and full backward hooks on a single Module. Please use only one "
                "of them."
            )
        _note_backward_hooks_used()
        self._is_full_backward_hook = False
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        return handle

    def register_forward_pre_hook(self, hook: Callable, *, prepend: bool = False, with_kwargs: bool = False) -> RemovableHandle:
        """``hook(module, args) -> None or new args`` runs before ``forward``."""
        handle = RemovableHandle(self._forward_pre_hooks, self._forward_pre_hooks_with_kwargs)
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(self, hook: Callable, *, prepend: bool = False, with_kwargs: bool = False) -> RemovableHandle:
        """``hook(module, args, output) -> None or new output`` runs after ``forward``."""
        handle = RemovableHandle(self._forward_hooks, self._forward_hooks_with_kwargs)
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    # --- registration -----------------------------------------------------------------------
    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a tensor that is state but not a parameter (running statistics, masks)."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_name("buffer", name, self._buffers)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' (Tensor or None required)")
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
            modules[name] = value
        elif d.get("_modules") is not None and name in d["_modules"]:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module '{name}' (nn.Module or None expected)")
            d["_modules"][name] = value
        elif isinstance(value, Buffer):
            if d.get("_buffers") is None:
                raise AttributeError("cannot assign buffer before Module.__init__() call")
            self._remove_from(name, d, d["_parameters"], d["_modules"])
            self.register_buffer(name, value.data, value.persistent)
        elif d.get("_buffers") is not None and name in d["_buffers"]:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' (Tensor or None expected)")
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
        for table in ("_forward_hooks_with_kwargs", "_forward_pre_hooks_with_kwargs", "_backward_hooks",
                      "_backward_pre_hooks", "_state_dict_hooks", "_state_dict_pre_hooks",
                      "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks"):
            self.__dict__.setdefault(table, OrderedDict())
        self.__dict__.setdefault("_is_full_backward_hook", None)
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
        handle = RemovableHandle(self._state_dict_pre_hooks)
        self._state_dict_pre_hooks[handle.id] = hook
        return handle

    def register_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """Run ``hook(module, state_dict, prefix, local_metadata)`` once ``state_dict`` saved this
        module and its descendants; the hook edits ``state_dict`` in place and returns None."""
        # As PyTorch: the mark tells state_dict that this hook may not return a new dict, which
        # the older private form (_register_state_dict_hook) may, for the root module only.
        hook._from_public_api = True
        handle = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        return handle

    def _register_state_dict_hook(self, hook: Callable) -> RemovableHandle:
        """The private post-hook form libraries still call: ``hook(module, state_dict, prefix,
        local_metadata)`` may return a new dict, used when ``module`` is the root."""
        if getattr(hook, "_from_public_api", False):
            raise RuntimeError(
                "Cannot register the same function as the state dict post hook that was "
                "previously registered via register_state_dict_post_hook"
            )
        handle = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        return handle

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        """Put this module's own parameters and persistent buffers (not its descendants') into
        ``destination``; subclasses override it to save more."""
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()

    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False) -> OrderedDict:
        """An ordered map from dotted names to the parameters and persistent buffers (detached,
        sharing storage, unless ``keep_vars``). Its ``_metadata`` maps each module's prefix to
        ``{"version": module._version}``."""
        if args:
            warnings.warn(
                "Positional args are being deprecated, use kwargs instead. Refer to "
                "https://pytorch.org/docs/main/generated/torch.nn.Module.html#torch.nn.Module.state_dict"
                " for details.",
                FutureWarning,
                stacklevel=2,
            )
            # The old positional form state_dict(destination, prefix, keep_vars).
            if destination is None:
                destination = args[0]
            if len(args) > 1 and prefix == "":
                prefix = args[1]
            if len(args) > 2 and keep_vars is False:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = {"version": self._version}
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        # Each child through its own state_dict, as PyTorch: a subclass overriding state_dict
        # (or hooks on a child) take part when the parent is saved. Module trees are shallow.
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            result = hook(self, destination, prefix, local_metadata)
            if getattr(hook, "_from_public_api", False):
                if result is not None:
                    raise RuntimeError("state_dict post-hook must return None")
            elif result is not None:
                destination = result
        return destination

    def register_load_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Run ``hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)`` before ``load_state_dict`` loads this module; the hook may
        edit ``state_dict`` (a copy) in place, to rename old keys for instance."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def _register_load_state_dict_pre_hook(self, hook: Callable, with_module: bool = False) -> RemovableHandle:
        """As ``register_load_state_dict_pre_hook``, the hook called without the module unless
        ``with_module``."""
        handle = RemovableHandle(self._load_state_dict_pre_hooks)
        self._load_state_dict_pre_hooks[handle.id] = _ModuleBoundHook(hook, self if with_module else None)
        return handle

    def register_load_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """Run ``hook(module, incompatible_keys)`` once ``load_state_dict`` loaded this module and
        its descendants; the hook may edit ``incompatible_keys.missing_keys`` and
        ``unexpected_keys`` in place (the strict check sees the edits) and returns None."""
        handle = RemovableHandle(self._load_state_dict_post_hooks)
        self._load_state_dict_post_hooks[handle.id] = hook
        return handle

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:
        """Load this module's own parameters and persistent buffers (not its descendants') from
        ``state_dict`` (a copy, which may be edited), after running the load pre-hooks; record
        problems in the three lists. Subclasses override it for version-dependent loading
        (``local_metadata.get("version")``)."""
        for hook in self._load_state_dict_pre_hooks.values():
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
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
        if strict:
            modules = self._modules
            for key in state_dict:
                if key.startswith(prefix):
                    input_name = key[len(prefix):].split(".", 1)
                    # A dotted rest names something of a child; a plain one, this module's own.
                    if len(input_name) > 1:
                        if input_name[0] not in modules:
                            unexpected_keys.append(key)
                    elif input_name[0] not in local_state:
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Copy values from ``state_dict`` into the parameters and buffers (in place), or with
        ``assign=True`` make the state dict's tensors the module's (wrapped as Parameters that keep
        the module's ``requires_grad``); returns ``(missing_keys, unexpected_keys)`` and raises
        RuntimeError on any problem when strict. Each module's ``_load_from_state_dict`` loads it
        after its load pre-hooks; its load post-hooks run once its descendants are loaded."""
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing_keys: list = []
        unexpected_keys: list = []
        error_msgs: list = []
        # A copy, which _load_from_state_dict and the pre-hooks may edit.
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)
        if metadata is not None:
            state_dict._metadata = metadata

        def load(module: Module, local_state_dict: dict, prefix: str = "") -> None:
            local_metadata = {} if metadata is None else metadata.get(prefix[:-1], {})
            if assign:
                local_metadata["assign_to_params_buffers"] = assign
            module._load_from_state_dict(local_state_dict, prefix, local_metadata, True, missing_keys,
                                         unexpected_keys, error_msgs)
            # Each child gets the keys under its prefix, as PyTorch: a child's pre-hook edits its
            # own dict, and the strict check of a module looks at its own keys only.
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    child_state_dict = {k: v for k, v in local_state_dict.items() if k.startswith(child_prefix)}
                    load(child, child_state_dict, child_prefix)
            if module._load_state_dict_post_hooks:
                incompatible_keys = _IncompatibleKeys(missing_keys, unexpected_keys)
                for hook in module._load_state_dict_post_hooks.values():
                    if hook(module, incompatible_keys) is not None:
                        raise AssertionError(
                            "Hooks registered with ``register_load_state_dict_post_hook`` are not "
                            "expected to return new values, if incompatible_keys need to be modified, "
                            "it should be done inplace."
                        )

        load(self, state_dict)
        if strict:
            if unexpected_keys:
                error_msgs.insert(0, "Unexpected key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in unexpected_keys)))
            if missing_keys:
                error_msgs.insert(0, "Missing key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in missing_keys)))
        if error_msgs:
            raise RuntimeError(
                "Error(s) in loading state_dict for {}:\n\t{}".format(type(self).__name__, "\n\t".join(error_msgs))
            )
        return _IncompatibleKeys(missing_keys, unexpected_keys)

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


def _note_backward_hooks_used() -> None:
    global _backward_hooks_used
    _backward_hooks_used = True


def register_module_full_backward_pre_hook(hook: Callable) -> RemovableHandle:
    """A backward pre-hook (:meth:`Module.register_full_backward_pre_hook`) for every module;
    global hooks run before a module's own."""
    _note_backward_hooks_used()
    handle = RemovableHandle(_global_backward_pre_hooks)
    _global_backward_pre_hooks[handle.id] = hook
    return handle


def register_module_full_backward_hook(hook: Callable) -> RemovableHandle:
    """A full backward hook (:meth:`Module.register_full_backward_hook`) for every module;
    global hooks run before a module's own."""
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is False:
        raise RuntimeError(
            "Cannot use both regular backward hooks and full backward hooks as a global Module hook. Please use only "
            "one of them."
        )
    _note_backward_hooks_used()
    _global_is_full_backward_hook = True
    handle = RemovableHandle(_global_backward_hooks)
    _global_backward_hooks[handle.id] = hook
    return handle


def register_module_backward_hook(hook: Callable) -> RemovableHandle:
    """Deprecated: a :meth:`Module.register_backward_hook` hook for every module."""
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is True:
        raise RuntimeError(
            "Cannot use both regular backward hooks and full backward hooks as a global Module hook. Please use only "
            "one of them."
        )
    _note_backward_hooks_used()
    _global_is_full_backward_hook = False
    handle = RemovableHandle(_global_backward_hooks)
    _global_backward_hooks[handle.id] = hook
    return handle


def _size(shape: tuple) -> str:
    return str(list(shape))
