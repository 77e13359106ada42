"""Parameter and Buffer: tensors that a Module registers when they are assigned to it.

A Parameter is a Tensor (a subclass with no extra fields) over the same storage and version
counter as the data it was made from, so in-place changes through either are seen by both, as in
PyTorch. It requires grad by default and prints as ``Parameter containing:``.
"""
from __future__ import annotations

from ..frontend.factories import empty
from ..frontend.printing import tensor_repr
from ..frontend.tensor import Tensor, replace_tensor_data

__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer", "UninitializedTensorMixin", "is_lazy",
           "replace_tensor_data"]


class Parameter(Tensor):
    """A Tensor that is a module parameter: assigning one to a Module attribute registers it.

    >>> import tensorplug as tp
    >>> p = tp.nn.Parameter(tp.zeros(2))
    >>> p.requires_grad, isinstance(p, tp.Tensor)
    (True, True)
    """

    __slots__ = ()

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True):
        if data is None:
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): data must be a Tensor, not {type(data).__name__}")
        param = object.__new__(cls)
        param._base = None
        param.grad = None
        param.grad_fn = None
        param._autograd = None
        param._keys = 0
        replace_tensor_data(param, data)
        if requires_grad:
            param.requires_grad_(True)
        return param

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True):
        pass  # everything happens in __new__ (Tensor.__init__ refuses direct construction)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + tensor_repr(self)

    __str__ = __repr__

    def __reduce_ex__(self, protocol):
        return (_rebuild_parameter, (self.detach(), self.requires_grad))

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = Parameter(self.detach().clone(), self.requires_grad)
        if self.grad is not None:
            result.grad = self.grad.detach().clone()
        memo[id(self)] = result
        return result


class UninitializedTensorMixin:
    """What a lazy module's placeholders are until its first input gives their shape: an empty
    tensor of this class, which then becomes ``cls_to_become`` in place (the object keeps its
    identity, so an optimizer made before the first call trains it)."""

    __slots__ = ()
    cls_to_become: type = Tensor

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Gives the placeholder ``shape`` (uninitialized values) and its final class."""
        replace_tensor_data(self, empty(tuple(shape), dtype=dtype or self._dtype, device=device or self._device))
        self.__class__ = self.cls_to_become

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"

    __str__ = __repr__


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A lazy module's parameter before its first input (``isinstance(p, Parameter)`` holds)."""

    __slots__ = ()
    cls_to_become = Parameter


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A lazy module's buffer (running statistics) before its first input."""

    __slots__ = ()
    cls_to_become = Tensor


def is_lazy(param) -> bool:
    """Whether ``param`` is a lazy module's placeholder that has no shape yet."""
    return isinstance(param, UninitializedTensorMixin)


def _rebuild_parameter(data: Tensor, requires_grad: bool) -> Parameter:
    return Parameter(data, requires_grad)


class Buffer:
    """Marks a tensor to be registered as a buffer when assigned to a Module attribute:
    ``self.running = tp.nn.Buffer(tp.zeros(3))``; ``persistent=False`` keeps it out of the
    state_dict. Registration stores the plain tensor (see docs/deviations.md: torch.nn.Buffer is a
    Tensor subclass; here it is only a marker)."""

    __slots__ = ("data", "persistent")

    def __init__(self, data: Tensor | None = None, *, persistent: bool = True):
        if data is None:
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Buffer(): data must be a Tensor, not {type(data).__name__}")
        self.data = data
        self.persistent = persistent

    def __repr__(self) -> str:
        return "Buffer containing:\n" + tensor_repr(self.data)
