"""The keyword arguments PyTorch's factories share beyond ``dtype`` and ``device``: the sizes as
``size=``, ``out=``, ``layout=`` and ``pin_memory=`` (``torch.zeros(size=(2, 3),
layout=torch.strided)``, as code generators and careful scripts spell them out).

Each factory calls :func:`resolve` only when one of them is given, so the plain calls cost what
they did.
"""
from __future__ import annotations

from .tensor import Tensor

__all__ = ["resolve", "check_layout", "is_sparse_coo"]

# The layout names tp.sparse defines (plain strings, so they need no import cycle here).
_STRIDED, _SPARSE_COO = "torch.strided", "torch.sparse_coo"


def is_sparse_coo(layout) -> bool:
    """Whether ``layout`` is ``tp.sparse_coo`` (``zeros_like`` makes such a tensor)."""
    return layout is not None and layout == _SPARSE_COO


def check_layout(op: str, layout) -> None:
    """Only dense (strided) results: a sparse layout is built with ``.to_sparse()`` here."""
    if layout is None or layout == _STRIDED:
        return
    if layout == _SPARSE_COO:
        raise NotImplementedError(f"{op}(): layout=torch.sparse_coo is not supported by tensorplug's factories; "
                                  f"make the dense tensor and call .to_sparse()")
    raise TypeError(f"{op}(): layout must be tensorplug.strided, got {layout!r}")


def resolve(op: str, sizes: tuple, size, dtype, device, out, layout, pin_memory) -> tuple:
    """``(sizes, dtype, device)`` after PyTorch's rules for these keywords: ``size`` replaces
    the positional sizes (both is an error); ``out`` sets the dtype and device when they are not
    given (a different dtype is an error); ``pin_memory`` is accepted (tensorplug's host memory
    needs no pinning for its devices to copy from it, as ``Tensor.pin_memory`` says)."""
    if size is not None:
        if sizes:
            raise TypeError(f"{op}() got multiple values for argument 'size'")
        sizes = (size,)
    check_layout(op, layout)
    if not isinstance(pin_memory, bool):
        raise TypeError(f"{op}(): argument 'pin_memory' must be bool, not {type(pin_memory).__name__}")
    if out is not None:
        if not isinstance(out, Tensor):
            raise TypeError(f"{op}(): argument 'out' must be Tensor, not {type(out).__name__}")
        if dtype is not None and dtype is not out._dtype:
            raise RuntimeError(f"{op}(): dtype {dtype} does not match dtype of out parameter "
                               f"({out._dtype})")
        dtype = out._dtype
        device = out._device if device is None else device
    return sizes, dtype, device
