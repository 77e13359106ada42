"""Shape arithmetic shared by views, ops and factories: pure functions of tuples of ints."""
from __future__ import annotations

import operator

__all__ = [
    "MAX_NUMEL", "check_shape", "contiguous_layout", "contiguous_strides", "numel_of", "broadcast_shapes",
    "normalize_dim", "normalize_dims", "view_strides",
]

#: Above this many elements a tensor cannot exist on any 64-bit machine: reject it early.
MAX_NUMEL = 2**48

_layout_cache: dict[tuple, tuple] = {}


def contiguous_layout(shape: tuple) -> tuple:
    """(row-major strides in elements, element count) of ``shape``.

    Cached, because every allocation needs both and shapes repeat (a training loop allocates
    the same few shapes over and over).
    """
    layout = _layout_cache.get(shape)
    if layout is None:
        acc, out = 1, []
        for size in reversed(shape):
            out.append(acc)
            acc *= size if size > 1 else 1
        layout = (tuple(reversed(out)), numel_of(shape))
        if len(_layout_cache) > 4096:
            _layout_cache.clear()
        _layout_cache[shape] = layout
    return layout


def contiguous_strides(shape: tuple) -> tuple:
    """Row-major strides (in elements) of ``shape``."""
    return contiguous_layout(shape)[0]


def numel_of(shape: tuple) -> int:
    n = 1
    for size in shape:
        n *= size
    return n


def check_shape(op: str, size) -> tuple:
    """Turn a size argument (ints, or one tuple/list) into a validated shape tuple."""
    if len(size) == 1 and not isinstance(size[0], int):
        size = size[0]
        if hasattr(size, "tolist") and not isinstance(size, (list, tuple)):
            size = size.tolist()
        if isinstance(size, int):
            size = (size,)
    try:
        shape = tuple(operator.index(s) for s in size)
    except TypeError:
        raise TypeError(f"{op}(): size must be a sequence of ints, got {size!r}") from None
    for s in shape:
        if s < 0:
            raise RuntimeError(f"{op}(): Trying to create tensor with negative dimension {s}: {list(shape)}")
    if numel_of(shape) > MAX_NUMEL:
        raise RuntimeError(f"{op}(): a tensor of shape {list(shape)} has {numel_of(shape)} elements, more than any device can hold")
    return shape


def broadcast_shapes(*shapes: tuple, op: str = "broadcast_shapes") -> tuple:
    """The shape every argument broadcasts to, by NumPy/PyTorch rules; raises if incompatible."""
    if len(shapes) == 2 and shapes[0].__class__ is tuple and shapes[1].__class__ is tuple:
        pair = _broadcast_pair(shapes[0], shapes[1])
        if pair is not None:
            return pair
    ndim = max((len(s) for s in shapes), default=0)
    result = [1] * ndim
    for shape in shapes:
        offset = ndim - len(shape)
        for i, size in enumerate(shape):
            current = result[offset + i]
            if size == current or size == 1:
                continue
            if current == 1:
                result[offset + i] = size
            else:
                raise RuntimeError(
                    f"{op}(): shape mismatch: shapes {', '.join(str(list(s)) for s in shapes)} cannot be broadcast "
                    f"(size {current} vs {size} at dimension {offset + i - ndim})"
                )
    return tuple(result)


def _broadcast_pair(a: tuple, b: tuple):
    """The broadcast of two shapes, or None when they do not broadcast (the general loop then
    raises its message). Binary ops broadcast two shapes on every call that mixes shapes (a
    bias, a 0-d scale): this is that case without the general loop's bookkeeping (issue 14)."""
    if a == b or not b:
        return a
    if not a:
        return b
    longer, shorter = (a, b) if len(a) >= len(b) else (b, a)
    lead = len(longer) - len(shorter)
    result = list(longer)
    for i, size in enumerate(shorter, lead):
        current = result[i]
        if size == current or size == 1:
            continue
        if current != 1:
            return None
        result[i] = size
    return tuple(result)


def normalize_dim(op: str, dim, ndim: int) -> int:
    """Wrap a possibly negative ``dim`` into [0, ndim); a 0-d tensor accepts -1 and 0."""
    try:
        dim = operator.index(dim)
    except TypeError:
        raise TypeError(f"{op}(): dim must be an int, got {type(dim).__name__}") from None
    bound = max(ndim, 1)
    if not -bound <= dim < bound:
        raise IndexError(f"{op}(): Dimension out of range (expected to be in range of [{-bound}, {bound - 1}], but got {dim})")
    return dim + bound if dim < 0 else dim


def normalize_dims(op: str, dims, ndim: int) -> tuple:
    """Sorted unique dims from None (all), an int or a sequence; repeated dims raise."""
    if dims is None:
        return tuple(range(ndim))
    if isinstance(dims, int):
        dims = (dims,)
    out = [normalize_dim(op, d, ndim) for d in dims]
    if len(set(out)) != len(out):
        raise RuntimeError(f"{op}(): dim {out} appears multiple times in the list of dims")
    return tuple(sorted(d for d in out if d < ndim))


def view_strides(old_shape: tuple, old_strides: tuple, new_shape: tuple):
    """Strides that view ``old_shape``/``old_strides`` as ``new_shape`` without a copy, or None.

    Groups of old dims that are contiguous with each other can be re-split freely; a new dim
    may not straddle two such groups.
    """
    if not old_shape or numel_of(old_shape) == 0:
        return contiguous_strides(new_shape)
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base_stride = old_strides[-1] if old_strides else 1
    tensor_numel = 1
    view_numel = 1
    for tensor_d in range(len(old_shape) - 1, -1, -1):
        tensor_numel *= old_shape[tensor_d]
        if tensor_d == 0 or (old_shape[tensor_d - 1] != 1 and old_strides[tensor_d - 1] != tensor_numel * chunk_base_stride):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_strides[view_d] = view_numel * chunk_base_stride
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = old_strides[tensor_d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(new_strides)
