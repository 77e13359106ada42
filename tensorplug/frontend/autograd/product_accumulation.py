"""A product's two gradients added into its leaves' ``.grad`` as one op (issue 14).

In ``(a * b).sum().backward()`` with leaves ``a`` and ``b`` that already have a ``.grad``, mul's
backward makes ``grad * b`` and ``grad * a`` and each leaf adds its own into ``.grad``: four
kernels, each a launch costing tens of microseconds of host time on OpenCL. The backward engine
(csrc/autograd_core.cpp's accumulate_product) hands such a node to ``accumulate_product``, which
runs ``accumulate_product_grads_`` where the backend has a kernel of its own for it and declines
(the node then runs as any other) where the op would only run its decomposition: that is the same
four ops, through Python instead of the engine's C.
"""
from __future__ import annotations

from ...dispatcher import Operator, local_state
from ..ops._common import bump_version
from ..tensor import Tensor

__all__ = ["ACCUMULATE_PRODUCT_GRADS", "accumulate_product"]


def _accumulate_product_grads_decomposition(grad_a, grad_b, grad, a, b):
    # The unfused order: each product rounded to the dtype, then added, as the engine would.
    grad_a.add_(grad * b)
    grad_b.add_(grad * a)


ACCUMULATE_PRODUCT_GRADS = Operator("accumulate_product_grads_", decomposition=_accumulate_product_grads_decomposition,
                                    differentiable=False)


def accumulate_product(grad_a, grad_b, grad, a, b) -> bool:
    """The engine's call for a mul node whose inputs ``a`` and ``b`` are leaves with a ``.grad``
    (``grad_a``, ``grad_b``): add both products in one kernel and return True, or return False
    (nothing done) where the backend has no kernel of its own or the tensors are not the simple
    case (one shape, dtype and device for all five; the two targets apart from every other)."""
    if not (isinstance(grad_a, Tensor) and isinstance(grad_b, Tensor) and isinstance(grad, Tensor)
            and isinstance(a, Tensor) and isinstance(b, Tensor)):
        return False
    shape, dtype, device = a._shape, a._dtype, a._device
    for t in (b, grad, grad_a, grad_b):
        if t._shape != shape or t._dtype is not dtype or t._device is not device:
            return False
    target_a, target_b = grad_a._storage, grad_b._storage
    if target_a is target_b or any(t._storage in (target_a, target_b) for t in (grad, a, b)):
        return False
    keys = (grad_a._keys | grad_b._keys | grad._keys | a._keys | b._keys | local_state.include) & local_state.mask
    kernel = ACCUMULATE_PRODUCT_GRADS.lookup(keys)
    if kernel is _accumulate_product_grads_decomposition:
        return False
    kernel(grad_a, grad_b, grad, a, b)
    # A backend kernel writes memory directly: record the change as add_ would.
    bump_version(grad_a)
    bump_version(grad_b)
    return True
