"""What the frontend does differently for tensors without values (the ``meta`` device).

A meta tensor (``tensorplug/backends/meta.py``) has a shape, a dtype and strides, and no
memory. Every op whose result's metadata follows from its inputs' metadata runs on it unchanged:
the frontend allocates the output and the backend's kernels do nothing. Two kinds of frontend
code read values, and each needs a rule here:

- checks of values (index bounds, probabilities, a mask's count against a source's size) are
  skipped, as PyTorch's meta kernels skip them: there is nothing to check, and the result's
  metadata does not depend on them;
- ops whose result's *shape* depends on values (``nonzero``, ``unique``, boolean masks) cannot
  run, and say so by name before reading anything, instead of the generic error a read gives.
"""
from __future__ import annotations

from typing import Any

__all__ = ["has_values", "refuse_data_dependent", "ITEM_MESSAGE", "SHAPE_FROM_VALUES"]

#: PyTorch's words for ``item()`` (and ``bool``, ``int``, ``float``) of a meta tensor.
ITEM_MESSAGE = "Tensor.item() cannot be called on meta tensors"


def has_values(t: Any) -> bool:
    """Whether tensor ``t`` holds values that the frontend may read or check (not a meta tensor)."""
    return t._device.type != "meta"


#: Why an op refuses a meta tensor, unless it gives its own reason.
SHAPE_FROM_VALUES = "the shape of its result depends on the tensor's values"


def refuse_data_dependent(op: str, *tensors: Any, why: str = SHAPE_FROM_VALUES,
                          error: type[Exception] = NotImplementedError) -> None:
    """Raise ``error`` (PyTorch's NotImplementedError unless it raises another type for the op) when
    one of ``tensors`` (tensors or None) is a meta tensor whose values ``op`` needs; ``op`` names
    the call as users wrote it (``"nonzero()"``), ``why`` says what the values decide."""
    for t in tensors:
        if t is not None and t._device.type == "meta":
            raise error(f"{op}: cannot run on a meta tensor (shape {list(t._shape)}, dtype {t._dtype.name}): {why}, "
                        f"and a meta tensor has none")
