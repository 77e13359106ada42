"""Ops that change a tensor's own shape in place: ``unsqueeze_``, ``squeeze_``, ``t_``,
``transpose_``/``swapaxes_``/``swapdims_``, ``as_strided_``, and ``resize_``/``resize_as_``.

The view ops give the tensor the shape, strides and offset of the view they name (its memory
stays shared with every other view of it). ``resize_`` restrides within the tensor's memory where
it holds enough elements, else moves the tensor to a larger block that starts with the old
elements (other views of the old block keep it). While autograd records, a tensor that requires
grad refuses them (docs/deviations.md): use the out-of-place op.
"""
from __future__ import annotations

from ..autograd.grad_mode import is_grad_enabled, no_grad
from ..shapes import contiguous_layout
from ..tensor import Tensor
from ._pointwise_args import check_tensor

__all__: list = []


def _take_layout(self: Tensor, name: str, make_view) -> Tensor:
    check_tensor(name, self, "self")
    if self.requires_grad and is_grad_enabled():
        raise RuntimeError(f"{name}: tensorplug does not record in-place changes of a tensor's shape for autograd, and "
                           f"this tensor requires grad; use the out-of-place {name.rstrip('_')}() instead")
    with no_grad():
        view = make_view()
    self._shape, self._stride, self._offset = view._shape, view._stride, view._offset
    return self


def _layout_op(name: str, method: str):
    def op(self, *args, **kwargs):
        return _take_layout(self, name, lambda: getattr(self, method)(*args, **kwargs))

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"``{name}``: ``{method}`` applied to this tensor's own shape and strides."
    return op


def resize_(self, *sizes, memory_format=None) -> Tensor:
    """Gives the tensor the shape ``sizes`` (contiguous); its first elements keep their values
    where the memory already held them, the rest are uninitialized."""
    from ..factories import empty
    from ..views import as_strided

    sizes = tuple(sizes[0]) if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else tuple(sizes)
    sizes = tuple(int(s) for s in sizes)
    if any(s < 0 for s in sizes):
        raise RuntimeError(f"Trying to create tensor with negative dimension: {list(sizes)}")
    check_tensor("resize_", self, "self")
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    strides, count = contiguous_layout(sizes)
    available = self.untyped_storage().nbytes() // self.element_size() - self._offset
    if count > available:
        with no_grad():
            block = empty(count, dtype=self.dtype, device=self.device)
            kept = max(available, 0)
            if kept:
                block[:kept].copy_(as_strided(self, (kept,), (1,), self._offset))
        self._storage, self._offset = block._storage, 0
        self._version_ref[0] += 1
    self._shape, self._stride = sizes, strides
    return self


def resize_as_(self, the_template, memory_format=None) -> Tensor:
    return resize_(self, tuple(the_template.shape))


TENSOR_METHODS: dict = {
    "unsqueeze_": _layout_op("unsqueeze_", "unsqueeze"), "squeeze_": _layout_op("squeeze_", "squeeze"),
    "t_": _layout_op("t_", "t"), "transpose_": _layout_op("transpose_", "transpose"),
    "swapaxes_": _layout_op("swapaxes_", "swapaxes"), "swapdims_": _layout_op("swapdims_", "swapdims"),
    "as_strided_": _layout_op("as_strided_", "as_strided"), "resize_": resize_, "resize_as_": resize_as_,
}
