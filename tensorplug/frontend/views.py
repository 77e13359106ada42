"""View ops: new shape/stride/offset metadata over the same storage; no backend is involved.

Every view shares its base's storage and version counter, so writes through a view are seen by
the base (and by autograd's version checks).
"""
from __future__ import annotations

import operator

from ..dispatcher import AUTOGRAD, local_state
from .autograd.views import maybe_record
from .ops._numpy_names import axis_as_dim, required_dim
from .shapes import broadcast_shapes, normalize_dim, numel_of, view_strides
from .tensor import Tensor, make_tensor

_AUTOGRAD_MASK = AUTOGRAD.mask

__all__ = [
    "as_strided", "view", "reshape", "expand", "expand_to", "expand_as", "broadcast_to", "broadcast_tensors",
    "transpose", "swapaxes", "t", "permute", "movedim", "squeeze", "unsqueeze", "flatten", "ravel",
    "unflatten", "select", "narrow", "slice_dim", "diagonal", "unfold",
]


def _view(t: Tensor, shape: tuple, stride: tuple, offset: int, op: str = "view", kind: str = "reshape", arg=None) -> Tensor:
    """A view of ``t``; when ``t`` requires grad, it records how gradients go back (see
    autograd.views.ViewNode for the kinds)."""
    v = make_tensor(t._storage, shape, stride, offset, t._dtype, t._device, t._version_ref, t._base if t._base is not None else t)
    if t._keys & _AUTOGRAD_MASK and local_state.mask & _AUTOGRAD_MASK:
        maybe_record(v, t, op, kind, arg)
    return v


def as_strided(input: Tensor, size, stride, storage_offset=None) -> Tensor:
    """A view with explicit size, stride and offset (checked against the storage's size)."""
    size, stride = tuple(operator.index(s) for s in size), tuple(operator.index(s) for s in stride)
    offset = input._offset if storage_offset is None else operator.index(storage_offset)
    if len(size) != len(stride):
        raise RuntimeError(f"as_strided(): mismatch in length of strides ({len(stride)}) and shape ({len(size)})")
    if any(s < 0 for s in size) or any(s < 0 for s in stride) or offset < 0:
        raise RuntimeError(f"as_strided(): sizes, strides and offset must be non-negative, got {size}, {stride}, {offset}")
    if numel_of(size) > 0:
        last = offset + sum((n - 1) * s for n, s in zip(size, stride))
        capacity = input._storage.nbytes // input._dtype.itemsize
        if last >= capacity:
            raise RuntimeError(
                f"as_strided(): setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset} "
                f"require {last + 1} elements, but the storage holds {capacity}"
            )
    return _view(input, size, stride, offset, "as_strided", "replay_sum", (as_strided, (size, stride, offset - input._offset)))


def _infer_size(op: str, shape, numel: int) -> tuple:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    if type(shape) is tuple and all(type(s) is int and s >= 0 for s in shape) and numel_of(shape) == numel:
        return shape  # a complete shape of plain ints (most internal calls): nothing to infer
    try:
        shape = [operator.index(s) for s in shape]
    except TypeError:
        raise TypeError(f"{op}(): shape must be a sequence of ints, got {shape!r}") from None
    infer = [i for i, s in enumerate(shape) if s == -1]
    if len(infer) > 1:
        raise RuntimeError(f"{op}(): only one dimension can be inferred")
    for s in shape:
        if s < -1:
            raise RuntimeError(f"{op}(): invalid shape dimension {s}")
    known = numel_of([s for s in shape if s != -1])
    if infer:
        if known == 0 or numel % known != 0:
            raise RuntimeError(f"{op}(): shape '{shape}' is invalid for input of size {numel}")
        shape[infer[0]] = numel // known
    elif known != numel:
        raise RuntimeError(f"{op}(): shape '{shape}' is invalid for input of size {numel}")
    return tuple(shape)


def _dtype_name(dtype) -> str:
    return {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16", "int64": "Long",
            "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool", "uint16": "UInt16",
            "uint32": "UInt32", "uint64": "UInt64", "float8_e4m3fn": "Float8_e4m3fn", "float8_e5m2": "Float8_e5m2",
            "float8_e4m3fnuz": "Float8_e4m3fnuz", "float8_e5m2fnuz": "Float8_e5m2fnuz"}.get(dtype.name, dtype.name)


def _keyword_instead(op: str, positional: tuple, value, name: str) -> tuple:
    """The positional form of a size or dims given by PyTorch's keyword name; both at once is an error."""
    if positional:
        raise TypeError(f"{op}() got multiple values for argument '{name}'")
    return (value,)


def view_dtype(input: Tensor, dtype) -> Tensor:
    """The same bytes read as ``dtype``. With another element size the last dim must be
    contiguous; it shrinks or grows by the size ratio, as PyTorch's ``view(dtype)``. Not
    differentiable (the result never requires grad), like PyTorch's."""
    dev = input._device
    if dtype not in dev._dtypes:
        raise TypeError(f"view(): device {dev} does not support {dtype.name}: the {dev.type!r} backend declares "
                        f"{', '.join(sorted(dev._backend.dtypes))}")
    if dtype.name == "bool" and input._dtype.name != "bool":
        # Kernels read bool as a byte that is 0 or 1; other bytes would convert and compare wrongly.
        raise RuntimeError(f"view(): viewing {input._dtype.name} as bool is not supported (a byte other than 0 or 1 "
                           f"is no bool value); use `x != 0`, or view as uint8")
    old, new = input._dtype.itemsize, dtype.itemsize
    shape, stride, offset = input._shape, input._stride, input._offset
    if new != old:
        what = f"to view {_dtype_name(input._dtype)} as {_dtype_name(dtype)} (different element sizes)"
        if not shape:
            raise RuntimeError(f"self.dim() cannot be 0 {what}")
        if stride[-1] != 1:
            raise RuntimeError(f"self.stride(-1) must be 1 {what}, but got {stride[-1]}")
        if new > old:
            ratio = new // old
            if shape[-1] % ratio:
                raise RuntimeError(f"self.size(-1) must be divisible by {ratio} {what}, but got {shape[-1]}")
            if offset % ratio:
                raise RuntimeError(f"self.storage_offset() must be divisible by {ratio} {what}, but got {offset}")
            for i, s in enumerate(stride[:-1]):
                if s % ratio:
                    raise RuntimeError(f"self.stride({i}) must be divisible by {ratio} {what}, but got {s}")
            shape = shape[:-1] + (shape[-1] // ratio,)
            stride = tuple(s // ratio for s in stride[:-1]) + (1,)
            offset //= ratio
        else:
            ratio = old // new
            shape = shape[:-1] + (shape[-1] * ratio,)
            stride = tuple(s * ratio for s in stride[:-1]) + (1,)
            offset *= ratio
    return make_tensor(input._storage, shape, stride, offset, dtype, input._device, input._version_ref,
                       input._base if input._base is not None else input)


def view(input: Tensor, *shape, size=None, dtype=None) -> Tensor:
    if size is not None or dtype is not None:  # PyTorch's keyword spellings: view(size=...), view(dtype=...)
        shape = _keyword_instead("view", shape, size if dtype is None else dtype, "size" if dtype is None else "dtype")
    if len(shape) == 1 and not isinstance(shape[0], (int, tuple, list)) and hasattr(shape[0], "itemsize"):
        return view_dtype(input, shape[0])
    new_shape = _infer_size("view", shape, input.numel())
    strides = view_strides(input._shape, input._stride, new_shape)
    if strides is None:
        raise RuntimeError(
            f"view size is not compatible with input tensor's size and stride (at least one dimension spans "
            f"across two contiguous subspaces): size {list(input._shape)}, stride {list(input._stride)}, "
            f"requested view {list(new_shape)}. Use .reshape(...) instead."
        )
    return _view(input, new_shape, strides, input._offset, "view")


def reshape(input: Tensor, *sizes, shape=None) -> Tensor:
    """A view when the strides allow it, else a contiguous copy."""
    if shape is not None:
        sizes = _keyword_instead("reshape", sizes, shape, "shape")
    new_shape = _infer_size("reshape", sizes, input.numel())
    strides = view_strides(input._shape, input._stride, new_shape)
    if strides is not None:
        return _view(input, new_shape, strides, input._offset, "reshape")
    return view(input.contiguous(), new_shape)


def expand(input: Tensor, *sizes, size=None) -> Tensor:
    if size is not None:
        sizes = _keyword_instead("expand", sizes, size, "size")
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = sizes[0]
    sizes = tuple(operator.index(s) for s in sizes)
    ndim = len(input._shape)
    if len(sizes) < ndim:
        raise RuntimeError(
            f"expand(): the number of sizes provided ({len(sizes)}) must be greater or equal to the number of "
            f"dimensions in the tensor ({ndim})"
        )
    lead = len(sizes) - ndim
    shape, stride = list(sizes), [0] * len(sizes)
    for i, size in enumerate(sizes):
        if i < lead:
            if size < 0:
                raise RuntimeError(f"expand(): the expanded size {size} is not allowed in a leading, non-existing dimension {i}")
            continue
        own = input._shape[i - lead]
        if size == -1:
            shape[i] = own
        elif size != own and own != 1:
            raise RuntimeError(
                f"The expanded size of the tensor ({size}) must match the existing size ({own}) at non-singleton "
                f"dimension {i}.  Target sizes: {list(sizes)}.  Tensor sizes: {list(input._shape)}"
            )
        stride[i] = input._stride[i - lead] if shape[i] == own else 0
    return _view(input, tuple(shape), tuple(stride), input._offset, "expand", "expand")


def expand_to(input: Tensor, shape: tuple) -> Tensor:
    """``expand(input, shape)`` for a ``shape`` already known to be a broadcast of the input's
    (the result of ``broadcast_shapes``): no checks, only the stride-0 view. The ops' meta
    functions broadcast their operands with it."""
    lead = len(shape) - len(input._shape)
    stride = [0] * lead
    for size, own, own_stride in zip(shape[lead:], input._shape, input._stride):
        stride.append(own_stride if size == own else 0)
    return _view(input, shape, tuple(stride), input._offset, "expand", "expand")


def expand_as(input: Tensor, other: Tensor) -> Tensor:
    return expand(input, other._shape)


def broadcast_to(input: Tensor, size) -> Tensor:
    return expand(input, tuple(size))


def broadcast_tensors(*tensors: Tensor) -> tuple:
    if len(tensors) == 1 and isinstance(tensors[0], (tuple, list)):
        tensors = tuple(tensors[0])
    shape = broadcast_shapes(*(t._shape for t in tensors))
    return tuple(t if t._shape == shape else expand(t, shape) for t in tensors)


def transpose(input: Tensor, dim0, dim1) -> Tensor:
    ndim = len(input._shape)
    d0, d1 = normalize_dim("transpose", dim0, ndim), normalize_dim("transpose", dim1, ndim)
    if ndim == 0:
        return _view(input, (), (), input._offset, "transpose")
    shape, stride = list(input._shape), list(input._stride)
    shape[d0], shape[d1] = shape[d1], shape[d0]
    stride[d0], stride[d1] = stride[d1], stride[d0]
    order = list(range(ndim))
    order[d0], order[d1] = order[d1], order[d0]
    return _view(input, tuple(shape), tuple(stride), input._offset, "transpose", "permute", order)


def swapaxes(input: Tensor, axis0, axis1) -> Tensor:
    """``transpose`` under NumPy's name, with NumPy's (and PyTorch's) argument names."""
    return transpose(input, axis0, axis1)


def t(input: Tensor) -> Tensor:
    ndim = len(input._shape)
    if ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {ndim}D")
    if ndim < 2:
        return input.view(input._shape)
    # transpose(input, 0, 1) without its dim checks: linear layers take this path on every call.
    (rows, cols), (row_stride, col_stride) = input._shape, input._stride
    return _view(input, (cols, rows), (col_stride, row_stride), input._offset, "transpose", "permute", [1, 0])


def permute(input: Tensor, *order, dims=None) -> Tensor:
    if dims is not None:
        order = _keyword_instead("permute", order, dims, "dims")
    dims = order
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = dims[0]
    ndim = len(input._shape)
    if len(dims) != ndim:
        raise RuntimeError(
            f"permute(): number of dimensions in the tensor input does not match the length of the "
            f"desired ordering of dimensions i.e. input.dim() = {ndim} is not equal to len(dims) = {len(dims)}"
        )
    order = [normalize_dim("permute", d, ndim) for d in dims]
    if len(set(order)) != ndim:
        raise RuntimeError(f"permute(): repeated dim in {list(dims)}")
    return _view(input, tuple(input._shape[d] for d in order), tuple(input._stride[d] for d in order), input._offset, "permute", "permute", order)


def movedim(input: Tensor, source, destination) -> Tensor:
    ndim = len(input._shape)
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim(): Invalid source or destination dims: source ({src}) and destination ({dst}) must have the same number of elements")
    src = [normalize_dim("movedim", d, ndim) for d in src]
    dst = [normalize_dim("movedim", d, ndim) for d in dst]
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise RuntimeError("movedim(): repeated dim in source or destination")
    order = [None] * ndim
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in range(ndim) if d not in src)
    order = [next(rest) if o is None else o for o in order]
    return permute(input, order)


def squeeze(input: Tensor, dim=None, axis=None) -> Tensor:
    if axis is not None:
        dim = axis_as_dim("squeeze", dim, axis, None)
    ndim = len(input._shape)
    if dim is None:
        dims = {i for i, s in enumerate(input._shape) if s == 1}
    else:
        dims = {normalize_dim("squeeze", d, ndim) for d in ((dim,) if isinstance(dim, int) else dim)}
        dims = {d for d in dims if d < ndim and input._shape[d] == 1}
    keep = [i for i in range(ndim) if i not in dims]
    return _view(input, tuple(input._shape[i] for i in keep), tuple(input._stride[i] for i in keep), input._offset, "squeeze")


def unsqueeze(input: Tensor, dim=None, axis=None) -> Tensor:
    if dim is None or axis is not None:
        dim = required_dim("unsqueeze", dim, axis)
    ndim = len(input._shape)
    d = normalize_dim("unsqueeze", dim, ndim + 1)
    stride_here = input._shape[d] * input._stride[d] if d < ndim else 1
    shape = input._shape[:d] + (1,) + input._shape[d:]
    stride = input._stride[:d] + (stride_here,) + input._stride[d:]
    return _view(input, shape, stride, input._offset, "unsqueeze")


def flatten(input: Tensor, start_dim=0, end_dim=-1) -> Tensor:
    ndim = len(input._shape)
    if ndim == 0:
        return reshape(input, (1,))
    s, e = normalize_dim("flatten", start_dim, ndim), normalize_dim("flatten", end_dim, ndim)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return input
    shape = input._shape[:s] + (numel_of(input._shape[s:e + 1]),) + input._shape[e + 1:]
    return reshape(input, shape)


def ravel(input: Tensor) -> Tensor:
    """Every element in one dim: a view where the strides allow it, else a contiguous copy."""
    return flatten(input)


def unflatten(input: Tensor, dim, sizes) -> Tensor:
    ndim = len(input._shape)
    d = normalize_dim("unflatten", dim, ndim)
    sizes = _infer_size("unflatten", tuple(sizes), input._shape[d])
    return view(input, input._shape[:d] + sizes + input._shape[d + 1:])


def select(input: Tensor, dim, index) -> Tensor:
    ndim = len(input._shape)
    if ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = normalize_dim("select", dim, ndim)
    size = input._shape[d]
    index = operator.index(index)
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(input._shape)} at dimension {d}")
    if index < 0:
        index += size
    return _view(
        input,
        input._shape[:d] + input._shape[d + 1:],
        input._stride[:d] + input._stride[d + 1:],
        input._offset + index * input._stride[d],
        "select",
        "replay",
        (select, (d, index)),
    )


def slice_dim(input: Tensor, dim: int, start, stop, step) -> Tensor:
    """``input[..., start:stop:step, ...]`` along ``dim`` (Python slice rules, positive step)."""
    if step is None:
        step = 1
    step = operator.index(step)
    if step <= 0:
        raise ValueError("step must be greater than zero")
    size = input._shape[dim]
    start, stop, _ = slice(start, stop, 1).indices(size)
    length = max(0, (stop - start + step - 1) // step)
    shape = input._shape[:dim] + (length,) + input._shape[dim + 1:]
    stride = input._stride[:dim] + (input._stride[dim] * step,) + input._stride[dim + 1:]
    offset = input._offset + (start * input._stride[dim] if length else 0)
    return _view(input, shape, stride, offset, "slice", "replay", (slice_dim, (dim, start, stop, step)))


def narrow(input: Tensor, dim, start, length) -> Tensor:
    ndim = len(input._shape)
    d = normalize_dim("narrow", dim, ndim)
    size = input._shape[d]
    start, length = operator.index(start), operator.index(length)
    if start < 0:
        start += size
    if not 0 <= start <= size or length < 0 or start + length > size:
        raise IndexError(f"narrow(): start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return slice_dim(input, d, start, start + length, 1)


def diagonal(input: Tensor, offset=0, dim1=0, dim2=1) -> Tensor:
    ndim = len(input._shape)
    d1, d2 = normalize_dim("diagonal", dim1, ndim), normalize_dim("diagonal", dim2, ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n1, n2 = input._shape[d1], input._shape[d2]
    if offset >= 0:
        length, start = max(0, min(n1, n2 - offset)), offset * input._stride[d2]
    else:
        length, start = max(0, min(n1 + offset, n2)), -offset * input._stride[d1]
    keep = [i for i in range(ndim) if i not in (d1, d2)]
    shape = tuple(input._shape[i] for i in keep) + (length,)
    stride = tuple(input._stride[i] for i in keep) + (input._stride[d1] + input._stride[d2],)
    return _view(input, shape, stride, input._offset + (start if length else 0), "diagonal", "replay", (diagonal, (offset, d1, d2)))


def unfold(input: Tensor, dimension, size, step) -> Tensor:
    ndim = len(input._shape)
    d = normalize_dim("unfold", dimension, ndim)
    length = input._shape[d] if ndim else 1
    if size > length:
        raise RuntimeError(f"unfold(): maximum size for tensor at dimension {d} is {length} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"unfold(): step is {step} but must be > 0")
    if ndim == 0:  # a scalar is one element along its one dim: PyTorch gives just the window dim
        shape, stride = (size,), (1,)
    else:
        count = (length - size) // step + 1
        shape = input._shape[:d] + (count,) + input._shape[d + 1:] + (size,)
        stride = input._stride[:d] + (input._stride[d] * step,) + input._stride[d + 1:] + (input._stride[d],)
    return _view(input, shape, stride, input._offset, "unfold", "replay_sum", (unfold, (d, size, step)))
