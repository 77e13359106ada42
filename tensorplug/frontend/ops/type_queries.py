"""Questions about dtypes and shapes that PyTorch answers at the top level: ``result_type``,
``can_cast``, ``is_signed``, ``is_nonzero``, ``is_same_size``."""
from __future__ import annotations

from .. import dtypes as _dt
from ..tensor import Tensor
from ._common import can_cast as _no_category_downgrade
from ._pointwise_args import check_tensor, result_dtype_of

__all__ = ["result_type", "can_cast", "is_signed", "is_nonzero", "is_same_size"]


def result_type(tensor1, tensor2) -> _dt.dtype:
    """The dtype an arithmetic op on ``tensor1`` and ``tensor2`` (tensors or numbers) computes
    in: tensors with dims outrank 0-d tensors, which outrank numbers, unless a lower group has a
    higher category (bool < integer < floating < complex).

    >>> tp.result_type(tp.tensor([1]), 1.0)
    tensorplug.float32
    """
    for name, x in (("tensor1", tensor1), ("tensor2", tensor2)):
        if not isinstance(x, Tensor) and not isinstance(x, (bool, int, float, complex)):
            raise TypeError(f"result_type(): argument '{name}' must be Tensor or Number, not {type(x).__name__}")
    return result_dtype_of(tensor1, tensor2)


def can_cast(from_, to) -> bool:
    """Whether PyTorch's casting rule allows ``from_`` into ``to`` (what in-place ops and out=
    accept): any cast that does not lower the category (complex > floating > integer > bool).

    >>> tp.can_cast(tp.float64, tp.float16), tp.can_cast(tp.float32, tp.int32)
    (True, False)
    """
    for name, d in (("from_", from_), ("to", to)):
        if not isinstance(d, _dt.dtype):
            raise TypeError(f"can_cast(): argument '{name}' must be torch.dtype, not {type(d).__name__}")
    return _no_category_downgrade(from_, to)


def is_signed(input) -> bool:
    """Whether ``input``'s dtype holds negative values (False for bool and uint8)."""
    check_tensor("is_signed", input)
    return input._dtype.is_signed


def is_nonzero(input) -> bool:
    """Whether the single element of ``input`` is nonzero (an error for any other size)."""
    check_tensor("is_nonzero", input)
    count = input.numel()
    if count == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if count > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.item())


def is_same_size(input, other) -> bool:
    """Whether ``input`` and ``other`` have the same shape."""
    check_tensor("is_same_size", input)
    check_tensor("is_same_size", other, "other")
    return input._shape == other._shape


#: Tensor methods this module provides: name -> function (attached by frontend.methods).
TENSOR_METHODS: dict = {"is_signed": is_signed, "is_nonzero": is_nonzero, "is_same_size": is_same_size}
