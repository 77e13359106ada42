"""``tp.autograd.Variable``: PyTorch's pre-0.4 wrapper, kept for old code as PyTorch keeps it.

Every tensor is a Variable (``isinstance(t, Variable)`` is True for any tensor), and
``Variable(t, requires_grad=...)`` gives a tensor on ``t``'s data that is a leaf with the given
``requires_grad``. ``volatile`` has had no effect since PyTorch 0.4; passing it True warns as
PyTorch does.
"""
from __future__ import annotations

import warnings

__all__ = ["Variable"]


class _VariableMeta(type):
    def __instancecheck__(cls, obj) -> bool:
        from ..tensor import Tensor

        return isinstance(obj, Tensor)

    def __call__(cls, data=None, requires_grad: bool = False, volatile: bool = False):
        from ..factories import tensor
        from ..tensor import Tensor

        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with torch.no_grad():` instead.",
                          UserWarning, stacklevel=2)
        if data is None:
            data = tensor([])
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        return data.detach().requires_grad_(requires_grad)


class Variable(metaclass=_VariableMeta):
    """Every tensor is one; calling it makes a leaf on a tensor's data (see the module)."""
