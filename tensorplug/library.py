"""``tp.library``: the public way to define ops and derivatives, as tensorplug's own ops do.

* ``composite(name, derivative=None, differentiable=(0,), save_output=False)``: define an op
  from its decomposition (a decorator); the returned function dispatches through the op table.
* ``register_derivative(op, formula, differentiable=(0,), save_output=False)``: give an
  existing composite op an explicit derivative, which allows backends to override it with a
  fused kernel.
* ``get_operator(name)``: the dispatcher's Operator for ``name``.
"""
from .dispatcher import get_operator
from .frontend.ops._composite import composite, register_derivative

__all__ = ["composite", "register_derivative", "get_operator"]
