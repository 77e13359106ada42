"""``GradBucket``: what a DDP communication hook receives, one bucket of gradients flattened
into one tensor, with the parameters they belong to."""
from __future__ import annotations

from ..frontend.tensor import Tensor

__all__ = ["GradBucket"]


class GradBucket:
    """One DDP bucket: ``buffer()`` is the flat gradients, ``gradients()`` views of it shaped like
    ``parameters()``; ``index()`` counts buckets in the order backward fills them."""

    def __init__(self, index: int, buffer: Tensor, parameters: list, offsets: list, is_last: bool):
        self._index = index
        self._buffer = buffer
        self._parameters = list(parameters)
        self._offsets = list(offsets)
        self._is_last = is_last

    def index(self) -> int:
        """This bucket's position (0 is the first one backward completes: the last layers)."""
        return self._index

    def buffer(self) -> Tensor:
        """The bucket's gradients, flattened into one 1-D tensor."""
        return self._buffer

    def set_buffer(self, buffer: Tensor) -> None:
        """Replaces the flat tensor that ``buffer()`` and ``gradients()`` answer with."""
        if not isinstance(buffer, Tensor) or buffer.numel() != self._buffer.numel():
            raise ValueError(f"GradBucket.set_buffer: expected a tensor of {self._buffer.numel()} elements, got "
                             f"{getattr(buffer, 'shape', type(buffer).__name__)}")
        self._buffer = buffer

    def gradients(self) -> list[Tensor]:
        """Each parameter's gradient, a view of ``buffer()`` in the parameter's shape."""
        return [self._buffer[o:o + p.numel()].view(p.shape) for p, o in zip(self._parameters, self._offsets)]

    def parameters(self) -> list[Tensor]:
        """The parameters whose gradients this bucket holds, in buffer order."""
        return list(self._parameters)

    def is_last(self) -> bool:
        """Whether this is the last bucket of the backward pass."""
        return self._is_last

    def __repr__(self) -> str:
        return f"GradBucket(index={self._index}, numel={self._buffer.numel()}, parameters={len(self._parameters)})"
