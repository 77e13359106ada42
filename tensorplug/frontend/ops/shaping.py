"""Reshaping, splitting, padding and masking ops, all composite.

Ops that can be views (split, chunk, unbind, meshgrid, atleast_*d) return views; the others are
decompositions into indexing, cat, where and scatter. Each public function checks and normalizes
its arguments first, so every backend raises the same errors for the same mistakes.
"""
from __future__ import annotations

import operator

from .. import dtypes as _dt
from ..shapes import broadcast_shapes, normalize_dim, normalize_dims
from ..meta_device import refuse_data_dependent
from ..tensor import Tensor
from ..views import as_strided, expand, movedim, reshape, select, slice_dim, swapaxes, unsqueeze
from ._common import (
    check_exact_dtype, check_no_internal_overlap, check_no_overlap, check_same_device, is_number, refuse_out_under_autograd,
    warn_if_expanded, write_out,
)
from ._composite import composite
from ._numpy_names import axis_as_dim
from .copying import copy_, number_for, to_dtype
from .out_rehearsal import rehearse_out

__all__ = [
    "split", "chunk", "unbind", "flip", "fliplr", "flipud", "roll", "repeat", "tile", "tril", "triu", "pad",
    "masked_select", "masked_fill", "index_add", "narrow_copy", "swapdims", "moveaxis", "atleast_1d",
    "atleast_2d", "atleast_3d", "meshgrid",
]


def _check_tensor(op: str, input) -> None:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")


def _zero_of(dtype: _dt.dtype):
    return False if dtype is _dt.bool else 0.0 if dtype.is_floating_point else 0


# --- splitting (views) ----------------------------------------------------------------------
def split(tensor, split_size_or_sections, dim=0) -> tuple:
    """Views of consecutive pieces along ``dim``: of ``split_size_or_sections`` elements each
    (the last may be smaller), or of the listed sizes.

    >>> [p.shape[0] for p in tp.split(tp.arange(5), 2)]
    [2, 2, 1]
    """
    _check_tensor("split", tensor)
    if tensor.ndim == 0:
        raise RuntimeError("split(): split expects at least a 1-dimensional tensor")
    d = normalize_dim("split", dim, tensor.ndim)
    size = tensor._shape[d]
    if isinstance(split_size_or_sections, (list, tuple)):
        sizes = [operator.index(s) for s in split_size_or_sections]
        if any(s < 0 for s in sizes) or sum(sizes) != size:
            raise RuntimeError(
                f"split_with_sizes(): expects split_sizes to sum exactly to {size} (input tensor's size at "
                f"dimension {d}), but got split_sizes={sizes}"
            )
    else:
        step = operator.index(split_size_or_sections)
        if step < 0:
            raise RuntimeError(f"split(): split_size must be non-negative, but got split_size={step}")
        if step == 0:
            if size != 0:
                raise RuntimeError(f"split(): split_size can only be 0 if dimension size is 0, but got dimension size of {size}")
            return (tensor,)
        sizes = [min(step, size - start) for start in range(0, size, step)] or [0]
    pieces, start = [], 0
    for s in sizes:
        pieces.append(slice_dim(tensor, d, start, start + s, 1))
        start += s
    return tuple(pieces)


def chunk(input, chunks, dim=0, axis=None) -> tuple:
    """At most ``chunks`` views of (nearly) equal size along ``dim``."""
    if axis is not None:
        dim = axis_as_dim("chunk", dim, axis, 0)
    _check_tensor("chunk", input)
    if input.ndim == 0:
        raise RuntimeError("chunk(): chunk expects at least a 1-dimensional tensor")
    chunks = operator.index(chunks)
    if chunks <= 0:
        raise RuntimeError(f"chunk(): chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = normalize_dim("chunk", dim, input.ndim)
    size = input._shape[d]
    if size == 0:
        return tuple(input for _ in range(chunks))
    return split(input, -(-size // chunks), d)


def unbind(input, dim=0, axis=None) -> tuple:
    """The slices along ``dim``, as views without that dim."""
    if axis is not None:
        dim = axis_as_dim("unbind", dim, axis, 0)
    _check_tensor("unbind", input)
    if input.ndim == 0:
        raise IndexError("unbind(): Dimension specified as 0 but tensor has no dimensions")
    d = normalize_dim("unbind", dim, input.ndim)
    return tuple(select(input, d, i) for i in range(input._shape[d]))


# --- reordering (copies) --------------------------------------------------------------------
def _reversed_index(size: int, dev) -> Tensor:
    from ..factories import arange

    return arange(size - 1, -1, -1, device=dev)


@composite("flip")
def _flip(input: Tensor, dims: tuple) -> Tensor:
    from .indexing import getitem

    result = input
    for d in dims:
        result = getitem(result, (slice(None),) * d + (_reversed_index(input._shape[d], input._device),))
    return result if dims else input.clone()


def flip(input, dims) -> Tensor:
    """A copy of ``input`` with the order of elements reversed along ``dims``."""
    _check_tensor("flip", input)
    return _flip(input, normalize_dims("flip", dims, input.ndim))


def fliplr(input) -> Tensor:
    _check_tensor("fliplr", input)
    if input.ndim < 2:
        raise RuntimeError("fliplr(): Input must be >= 2-d.")
    return _flip(input, (1,))


def flipud(input) -> Tensor:
    _check_tensor("flipud", input)
    if input.ndim < 1:
        raise RuntimeError("flipud(): Input must be >= 1-d.")
    return _flip(input, (0,))


@composite("roll")
def _roll(input: Tensor, shifts: tuple, dims: tuple) -> Tensor:
    from .joining import cat

    if not dims:
        return reshape(_roll(reshape(input, (-1,)), shifts, (0,)), input._shape)
    result = input
    for shift, d in zip(shifts, dims):
        size = result._shape[d]
        s = shift % size if size else 0
        if s:
            result = cat([slice_dim(result, d, size - s, size, 1), slice_dim(result, d, 0, size - s, 1)], d)
    return result.clone() if result is input else result


def roll(input, shifts, dims=None) -> Tensor:
    """Rotate ``input`` by ``shifts`` along ``dims`` (the flattened tensor when dims is None)."""
    _check_tensor("roll", input)
    shifts = (operator.index(shifts),) if not isinstance(shifts, (tuple, list)) else tuple(operator.index(s) for s in shifts)
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"roll(): shifts and dimensions must align. shifts: {len(shifts)}, dims: 0")
        return _roll(input, shifts, ())
    dims = (dims,) if not isinstance(dims, (tuple, list)) else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"roll(): shifts and dimensions must align. shifts: {len(shifts)}, dims: {len(dims)}")
    if input.ndim == 0:
        return _roll(input, shifts, ())
    return _roll(input, shifts, tuple(normalize_dim("roll", d, input.ndim) for d in dims))


def _sizes_arg(op: str, sizes) -> tuple:
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = sizes[0]
    try:
        sizes = tuple(operator.index(s) for s in sizes)
    except TypeError:
        raise TypeError(f"{op}(): sizes must be a sequence of ints, got {sizes!r}") from None
    if any(s < 0 for s in sizes):
        raise RuntimeError(f"{op}(): Trying to create tensor with negative dimension: {list(sizes)}")
    return sizes


@composite("repeat")
def _repeat(input: Tensor, repeats: tuple) -> Tensor:
    x = reshape(input, (1,) * (len(repeats) - input.ndim) + input._shape)
    # Put a broadcast dim of size r before each dim, then merge the pairs: (r0*s0, r1*s1, ...).
    interleaved, target = [], []
    for r, s in zip(repeats, x._shape):
        interleaved += [1, s]
        target += [r, s]
    expanded = expand(reshape(x, tuple(interleaved)), tuple(target))
    return reshape(expanded.contiguous(), tuple(r * s for r, s in zip(repeats, x._shape)))


def repeat(input, *sizes) -> Tensor:
    """``input`` repeated ``sizes[i]`` times along each dim (new leading dims when sizes is longer)."""
    _check_tensor("repeat", input)
    repeats = _sizes_arg("repeat", sizes)
    if len(repeats) < input.ndim:
        raise RuntimeError(
            f"repeat(): Number of dimensions of repeat dims ({len(repeats)}) can not be smaller than number of "
            f"dimensions of tensor ({input.ndim})"
        )
    return _repeat(input, repeats)


def tile(input, dims) -> Tensor:
    """As :func:`repeat`, with ``dims`` padded with leading ones to ``input``'s ndim."""
    _check_tensor("tile", input)
    repeats = _sizes_arg("tile", (dims,) if isinstance(dims, int) else tuple(dims))
    repeats = (1,) * (input.ndim - len(repeats)) + repeats
    return _repeat(input, repeats)


def _triangle_mask(input: Tensor, diagonal: int, lower: bool) -> Tensor:
    from ..factories import arange

    rows, cols = input._shape[-2:]
    # column - row <= diagonal: on or below the diagonal (tril); >= for triu.
    offset = arange(cols, device=input._device) - unsqueeze(arange(rows, device=input._device), 1)
    return offset <= diagonal if lower else offset >= diagonal


@composite("tril")
def _tril(input: Tensor, diagonal: int) -> Tensor:
    from .elementwise import where

    return where(_triangle_mask(input, diagonal, True), input, _zero_of(input._dtype))


@composite("triu")
def _triu(input: Tensor, diagonal: int) -> Tensor:
    from .elementwise import where

    return where(_triangle_mask(input, diagonal, False), input, _zero_of(input._dtype))


def _check_triangle(op: str, input, diagonal) -> int:
    _check_tensor(op, input)
    if input.ndim < 2:
        raise RuntimeError(f"{op}(): input tensor must have at least 2 dimensions")
    return operator.index(diagonal)


def tril(input, diagonal=0, *, out=None) -> Tensor:
    """The lower triangle of the last two dims (elements with col - row <= diagonal)."""
    if out is not None:
        rehearse_out(tril, locals())
    result = _tril(input, _check_triangle("tril", input, diagonal))
    return result if out is None else copy_(out, result)


def triu(input, diagonal=0, *, out=None) -> Tensor:
    """The upper triangle of the last two dims (elements with col - row >= diagonal)."""
    if out is not None:
        rehearse_out(triu, locals())
    result = _triu(input, _check_triangle("triu", input, diagonal))
    return result if out is None else copy_(out, result)


def _tril_(self, diagonal=0):
    return copy_(self, tril(self, diagonal))


def _triu_(self, diagonal=0):
    return copy_(self, triu(self, diagonal))


# --- padding ------------------------------------------------------------------------------------
_PAD_MODES = ("constant", "reflect", "replicate", "circular")


@composite("pad")
def _pad(input: Tensor, pads: tuple, mode: str, value) -> Tensor:
    from .joining import cat

    # pads: ((dim, before, after), ...) with dims normalized.
    if mode == "constant":
        from ..factories import full

        shape = list(input._shape)
        for d, before, after in pads:
            shape[d] += before + after
        result = full(tuple(shape), value, dtype=input._dtype, device=input._device)
        source, target = input, result
        for d, before, after in pads:
            size = input._shape[d]
            # Negative pads crop the input; positive ones leave a border of `value`.
            source = slice_dim(source, d, max(-before, 0), size - max(-after, 0), 1)
            target = slice_dim(target, d, max(before, 0), shape[d] - max(after, 0), 1)
        if source.numel():
            copy_(target, source)
        return result
    result = input
    for d, before, after in pads:
        size = result._shape[d]
        parts = [result]
        if mode == "reflect":
            left = _flip(slice_dim(result, d, 1, 1 + before, 1), (d,)) if before else None
            right = _flip(slice_dim(result, d, size - 1 - after, size - 1, 1), (d,)) if after else None
        elif mode == "replicate":
            edge_shape = list(result._shape)
            edge_shape[d] = before
            left = expand(slice_dim(result, d, 0, 1, 1), tuple(edge_shape)) if before else None
            edge_shape[d] = after
            right = expand(slice_dim(result, d, size - 1, size, 1), tuple(edge_shape)) if after else None
        else:  # circular
            left = slice_dim(result, d, size - before, size, 1) if before else None
            right = slice_dim(result, d, 0, after, 1) if after else None
        if left is not None:
            parts.insert(0, left)
        if right is not None:
            parts.append(right)
        if len(parts) > 1:
            result = cat(parts, d)
    return result if result is not input else input.clone()


def pad(input, pad, mode="constant", value=None) -> Tensor:
    """Pad ``input``; ``pad`` lists (before, after) pairs starting from the last dim, as in
    ``torch.nn.functional.pad``. Modes: constant (negative pads crop), reflect, replicate, circular.

    >>> tp.pad(tp.ones(2, 2), (1, 1)).shape
    (2, 4)
    """
    _check_tensor("pad", input)
    try:
        pad = tuple(operator.index(p) for p in pad)
    except TypeError:
        raise TypeError(f"pad(): pad must be a sequence of ints, got {pad!r}") from None
    if len(pad) % 2:
        raise RuntimeError("pad(): Padding length must be divisible by 2")
    if len(pad) // 2 > input.ndim:
        raise RuntimeError(
            f"pad(): Padding length should be less than or equal to two times the input dimension but got "
            f"padding length {len(pad)} and input of dimension {input.ndim}"
        )
    if mode not in _PAD_MODES:
        raise NotImplementedError(f"pad(): unsupported padding mode {mode!r}; expected one of {', '.join(_PAD_MODES)}")
    pads = tuple((input.ndim - 1 - i, pad[2 * i], pad[2 * i + 1]) for i in range(len(pad) // 2))
    if mode == "constant":
        for d, before, after in pads:
            if input._shape[d] + before + after < 0:
                raise RuntimeError(
                    f"pad(): The input size {input._shape[d]}, plus negative padding {before} and {after} resulted in a "
                    f"negative output size, which is invalid. Check dimension {d} of your input."
                )
        fill = 0 if value is None else value
        if not is_number(fill):
            raise TypeError(f"pad(): value must be a number, got {type(fill).__name__}")
        return _pad(input, pads, mode, fill)
    if value not in (None, 0, 0.0):
        raise RuntimeError(f"pad(): Padding mode \"{mode}\" doesn't take in value argument")
    # PyTorch pads the last k dims of a batched or unbatched 1-, 2- or 3-d signal only: the input
    # has one or two dims in front of the padded ones (a 4-d image with a 2-long pad is refused,
    # not padded in its width alone).
    padded_dims = len(pad) // 2
    if not 1 <= padded_dims <= 3 or input.ndim not in (padded_dims + 1, padded_dims + 2):
        raise NotImplementedError(
            f"pad(): {mode} padding of {padded_dims} trailing dims (pad of length {len(pad)}) needs a "
            f"{padded_dims + 1}-d or {padded_dims + 2}-d input, got {input.ndim}-d input of shape {list(input._shape)}; "
            f"supported: 2-d or 3-d input with 2 pad values, 3-d or 4-d with 4, 4-d or 5-d with 6"
        )
    for d, before, after in pads:
        size = input._shape[d]
        if before < 0 or after < 0:
            raise RuntimeError(f"pad(): negative padding ({before}, {after}) is only supported in constant mode")
        if mode == "reflect" and (before >= size or after >= size):
            raise RuntimeError(
                f"pad(): Padding size should be less than the corresponding input dimension, but got: padding "
                f"({before}, {after}) at dimension {d} of input {list(input._shape)}"
            )
        if mode == "circular" and (before > size or after > size):
            raise RuntimeError(
                f"pad(): Padding value causes wrapping around more than once: padding ({before}, {after}) at "
                f"dimension {d} of input {list(input._shape)}"
            )
        if mode == "replicate" and size == 0 and (before or after):
            raise RuntimeError(f"pad(): cannot replicate-pad dimension {d} of size 0 of input {list(input._shape)}")
    return _pad(input, pads, mode, None)


# --- masks and index accumulation -----------------------------------------------------------------
def _check_mask(op: str, input: Tensor, mask) -> None:
    if not isinstance(mask, Tensor):
        raise TypeError(f"{op}(): argument 'mask' must be Tensor, not {type(mask).__name__}")
    if mask._dtype is not _dt.bool:
        raise RuntimeError(f"{op}(): expected BoolTensor for mask, but got {mask._dtype.name}")
    check_same_device(op, input, mask)


@composite("masked_select")
def _masked_select(input: Tensor, mask: Tensor) -> Tensor:
    from .indexing import getitem

    shape = broadcast_shapes(input._shape, mask._shape, op="masked_select")
    x = input if input._shape == shape else expand(input, shape)
    m = mask if mask._shape == shape else expand(mask, shape)
    return getitem(reshape(x, (-1,)), reshape(m, (-1,)))


def masked_select(input, mask, *, out=None) -> Tensor:
    """The elements of ``input`` where ``mask`` (broadcast with it) is true, as a 1-D tensor."""
    if out is not None:
        rehearse_out(masked_select, locals())
    _check_tensor("masked_select", input)
    _check_mask("masked_select", input, mask)
    broadcast_shapes(input._shape, mask._shape, op="masked_select")
    refuse_data_dependent("masked_select()", input, mask)
    if out is not None:
        # Before computing, which the rehearsal cannot do here (the result's shape depends on
        # values); out= is then resized to the result, as PyTorch does.
        check_exact_dtype("masked_select", out, input._dtype)
        refuse_out_under_autograd("masked_select", out, input)
    return write_out("masked_select", out, _masked_select(input, mask))


@composite("masked_fill")
def _masked_fill(input: Tensor, mask: Tensor, value) -> Tensor:
    from .elementwise import where

    return where(mask, value, input)


def _fill_value(op: str, input: Tensor, value):
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"{op}(): only supports a 0-dimensional value tensor, but got tensor with {value.ndim} dimension(s).")
        return to_dtype(value, input._dtype)
    if isinstance(value, complex) and not isinstance(value, bool):
        if not input._dtype.is_complex:  # PyTorch refuses it too (no conversion to a real dtype)
            raise RuntimeError(f"{op}(): value {value} cannot be converted to type {input._dtype.name}; a complex "
                               f"value needs a complex tensor")
        return value
    if input._dtype.is_complex and is_number(value):
        return complex(value)
    if not is_number(value):
        raise TypeError(f"{op}(): argument 'value' must be a Number or a 0-d Tensor, not {type(value).__name__}")
    if input._dtype is _dt.bool:
        return bool(value)
    if not input._dtype.is_floating_point:
        if isinstance(value, float) and value != value:
            raise RuntimeError(f"{op}(): cannot fill a {input._dtype.name} tensor with nan")
        return number_for(op, value, input._dtype)  # PyTorch's range check: -0.5 does not fit uint8
    return float(value)


def masked_fill(input, mask, value) -> Tensor:
    """``input`` with ``value`` where ``mask`` (broadcast with it) is true."""
    _check_tensor("masked_fill", input)
    _check_mask("masked_fill", input, mask)
    broadcast_shapes(input._shape, mask._shape, op="masked_fill")
    return _masked_fill(input, mask, _fill_value("masked_fill", input, value))


def masked_fill_(self, mask, value) -> Tensor:
    _check_tensor("masked_fill_", self)
    _check_mask("masked_fill_", self, mask)
    if broadcast_shapes(self._shape, mask._shape, op="masked_fill_") != self._shape:
        raise RuntimeError(f"masked_fill_(): mask of shape {list(mask._shape)} does not broadcast to the shape {list(self._shape)} of self")
    fill = _fill_value("masked_fill_", self, value)
    target = self
    if warn_if_expanded("masked_fill_", self, stacklevel=2, example="tensor[mask] = scalar"):
        # As PyTorch writes it: a location that repeated elements share gets the value when any of
        # their mask entries is true. Fill the tensor of the distinct locations instead.
        layout = enumerate(zip(self._shape, self._stride))
        repeated = tuple(d for d, (size, stride) in layout if stride == 0 and size > 1)
        mask = expand(mask, self._shape).any(dim=repeated, keepdim=True)
        target = as_strided(self, mask._shape, self._stride, self._offset)
    copy_(target, _masked_fill(target, mask, fill))
    return self


def _check_index_add(op: str, input, dim, index, source) -> tuple:
    _check_tensor(op, input)
    if not isinstance(index, Tensor) or not isinstance(source, Tensor):
        raise TypeError(f"{op}(): index and source must be Tensors")
    check_same_device(op, input, index, source)
    if index.ndim > 1:
        raise IndexError(f"{op}(): Index is supposed to be a vector")
    if index._dtype not in (_dt.int64, _dt.int32):
        raise RuntimeError(f"{op}(): Expected dtype int32/int64 for index, but got {index._dtype.name}")
    if source._dtype is not input._dtype:
        raise RuntimeError(f"{op}(): self ({input._dtype.name}) and source ({source._dtype.name}) must have the same scalar type")
    d = normalize_dim(op, dim, input.ndim)
    count = index.numel()
    src_shape = source._shape if source.ndim else (1,)
    own_shape = input._shape if input.ndim else (1,)
    if len(src_shape) != len(own_shape):
        raise RuntimeError(f"{op}(): source ({source.ndim}D) and self ({input.ndim}D) must have the same number of dimensions")
    if src_shape[d] != count:
        raise RuntimeError(f"{op}(): Number of indices ({count}) should be equal to source.size(dim) ({src_shape[d]})")
    for k, (a, b) in enumerate(zip(src_shape, own_shape)):
        if k != d and a != b:
            raise RuntimeError(f"{op}(): source {list(source._shape)} and self {list(input._shape)} must match in every dim but {d} (dim {k})")
    from ._common import check_index_range

    check_index_range(op, index, own_shape[d], d)
    return d


def _index_add_into(target: Tensor, dim: int, index: Tensor, source: Tensor, alpha) -> Tensor:
    from .indexing import scatter_

    src = source if alpha == 1 else source * alpha
    if not target._shape:
        return copy_(target, target + reshape(src, ()))
    shape = [1] * target.ndim
    shape[dim] = index.numel()
    idx = expand(reshape(to_dtype(index, _dt.int64), tuple(shape)), src._shape)
    return scatter_(target, dim, idx, src, reduce="add")


@composite("index_add")
def _index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, alpha) -> Tensor:
    return _index_add_into(input.clone(), dim, index, source, alpha)


def index_add(input, dim, index, source, *, alpha=1, out=None) -> Tensor:
    """``input`` with ``alpha * source[..., i, ...]`` added at ``input[..., index[i], ...]`` along
    ``dim`` (repeated indices accumulate)."""
    if out is not None:
        rehearse_out(index_add, locals())
    d = _check_index_add("index_add", input, dim, index, source)
    return write_out("index_add", out, _index_add(input, d, index, source, alpha), exact_dtype=True)


def index_add_(self, dim, index, source, *, alpha=1) -> Tensor:
    d = _check_index_add("index_add_", self, dim, index, source)
    check_no_internal_overlap("index_add_", self)
    check_no_overlap("index_add_", self, index)
    check_no_overlap("index_add_", self, source)
    return _index_add_into(self, d, index, source, alpha)


def narrow_copy(input, dim, start, length, *, out=None) -> Tensor:
    """A copy of ``input.narrow(dim, start, length)``."""
    if out is not None:
        rehearse_out(narrow_copy, locals())
    _check_tensor("narrow_copy", input)
    # PyTorch resizes a wrongly shaped out= here without its deprecation warning.
    return write_out("narrow_copy", out, input.narrow(dim, start, length).clone(), exact_dtype=True, resize_warns=False)


# --- aliases and views ----------------------------------------------------------------------------
def swapdims(input, dim0, dim1) -> Tensor:
    return swapaxes(input, dim0, dim1)


def moveaxis(input, source, destination) -> Tensor:
    return movedim(input, source, destination)


def _atleast(op: str, ndim: int, tensors):
    def one(t):
        _check_tensor(op, t)
        if t.ndim >= ndim:
            return t
        if ndim == 3 and t.ndim == 2:
            return unsqueeze(t, -1)
        if ndim == 3 and t.ndim == 1:
            return reshape(t, (1, t._shape[0], 1))
        return reshape(t, (1,) * (ndim - t.ndim) + t._shape)

    if len(tensors) == 1 and isinstance(tensors[0], (tuple, list)):
        return tuple(one(t) for t in tensors[0])
    if len(tensors) == 1:
        return one(tensors[0])
    return tuple(one(t) for t in tensors)


def atleast_1d(*tensors):
    """Each tensor as a view with at least 1 dim (one tensor in, one out; several give a tuple)."""
    return _atleast("atleast_1d", 1, tensors)


def atleast_2d(*tensors):
    return _atleast("atleast_2d", 2, tensors)


def atleast_3d(*tensors):
    return _atleast("atleast_3d", 3, tensors)


def meshgrid(*tensors, indexing="ij") -> tuple:
    """Coordinate grids from 1-D tensors, as broadcast views; ``indexing="xy"`` swaps the first
    two output dims (Cartesian), ``"ij"`` keeps the input order (matrix)."""
    if len(tensors) == 1 and isinstance(tensors[0], (tuple, list)):
        tensors = tuple(tensors[0])
    if not tensors:
        raise RuntimeError("meshgrid(): expects a non-empty TensorList")
    if indexing not in ("ij", "xy"):
        raise ValueError(f"meshgrid(): indexing must be one of \"xy\" or \"ij\", but received: {indexing}")
    for i, t in enumerate(tensors):
        _check_tensor("meshgrid", t)
        if t.ndim > 1:
            raise RuntimeError(f"meshgrid(): Expected 0D or 1D tensor in the tensor list but got: {t.ndim}D (at position {i})")
    check_same_device("meshgrid", *tensors)
    for t in tensors[1:]:
        if t._dtype is not tensors[0]._dtype:
            raise RuntimeError("meshgrid(): expects all tensors to have the same dtype")
    flat = [reshape(t, (-1,)) for t in tensors]
    swap = indexing == "xy" and len(flat) >= 2
    if swap:
        flat[0], flat[1] = flat[1], flat[0]
    shape = tuple(t._shape[0] for t in flat)
    n = len(flat)
    grids = [expand(reshape(t, tuple(-1 if k == i else 1 for k in range(n))), shape) for i, t in enumerate(flat)]
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def _split_method(self, split_size, dim=0):
    return split(self, split_size, dim)


def _repeat_method(self, *sizes, repeats=None):
    if repeats is not None:  # PyTorch's keyword: x.repeat(repeats=(2, 1))
        if sizes:
            raise TypeError("repeat() got multiple values for argument 'repeats'")
        sizes = (repeats,)
    return repeat(self, *sizes)


def _flip_method(self, *order, dims=None):
    if dims is not None:  # PyTorch's keyword: x.flip(dims=[0])
        if order:
            raise TypeError("flip() got multiple values for argument 'dims'")
        order = (dims,)
    if len(order) == 1 and isinstance(order[0], (tuple, list)):
        order = order[0]
    return flip(self, tuple(order))


#: Tensor methods this module provides: name -> function (attached by frontend.methods).
TENSOR_METHODS: dict = {
    "split": _split_method,
    "chunk": chunk,
    "unbind": unbind,
    "flip": _flip_method,
    "fliplr": fliplr,
    "flipud": flipud,
    "roll": roll,
    "repeat": _repeat_method,
    "tile": tile,
    "tril": tril,
    "triu": triu,
    "tril_": _tril_,
    "triu_": _triu_,
    "masked_select": masked_select,
    "masked_fill": masked_fill,
    "masked_fill_": masked_fill_,
    "index_add": index_add,
    "index_add_": index_add_,
    "narrow_copy": narrow_copy,
    "swapdims": swapdims,
    "moveaxis": moveaxis,
}
