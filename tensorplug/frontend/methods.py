"""Tensor methods and Python operators, attached to :class:`Tensor` from the op modules.

Keeping them here (rather than in ``tensor.py``) lets the op modules import ``Tensor`` without
import cycles; every method is the same function as the ``tp.`` one, with ``self`` as input.
"""
from __future__ import annotations


from .. import _hotpath
from . import dtypes as _dt
from . import extra_factories, factories, factory_options, legacy, printing, random_fills, shared_memory, storage, views
from .ops import copying, decimal_round, indexing, linalg, reductions
from .autocast_hook import autocast_front
from .meta_device import ITEM_MESSAGE, has_values
from .ops.autocast_fronts import FRONTS
from .ops.elementwise import ALIASES, BINARY, COMPARE, UNARY, _compute_dtype, _result_dtype, binary_inplace, where
from .autograd import functional as _autograd
from .ops._common import check_cast, check_no_internal_overlap, is_number, keyset, write_inplace, write_out
from .ops._composite import composite
from .shapes import MAX_NUMEL
from .tensor import Tensor, empty_tensor
from .ops.out_rehearsal import rehearse_out


def _adjoint(self):
    """The conjugate transpose of the last two dims (the transpose of a real tensor)."""
    from .complex import conj

    return conj(views.transpose(self, -2, -1))

__all__ = ["add", "sub", "div", "true_divide", "clamp", "clip"]

def _scaled(op: str, input, other, alpha):
    """``alpha * other`` computed in the result dtype of ``input`` and ``other`` (PyTorch scales
    after promotion, so an int16 ``other`` does not overflow on the way to an int32 result)."""
    if alpha == 1:
        return other
    if not is_number(alpha):
        raise TypeError(f"{op}(): argument 'alpha' must be a Number, not {type(alpha).__name__}")
    dtype = _result_dtype(input, other)
    if isinstance(alpha, float) and not dtype.is_floating_point:
        raise RuntimeError(f"{op}(): For integral input tensors, argument alpha must not be a floating point number.")
    if not isinstance(other, Tensor):
        return other * alpha
    return BINARY["mul"](copying.to_dtype(other, dtype), alpha)


def add(input, other, *, alpha=1, out=None):
    """``input + alpha * other``."""
    if out is not None:
        rehearse_out(add, locals())
    return BINARY["add"](input, _scaled("add", input, other, alpha), out=out)


def sub(input, other, *, alpha=1, out=None):
    """``input - alpha * other``."""
    if out is not None:
        rehearse_out(sub, locals())
    return BINARY["sub"](input, _scaled("sub", input, other, alpha), out=out)


def div(input, other, *, rounding_mode=None, out=None):
    """True division, or rounded with ``rounding_mode`` "trunc" or "floor"."""
    if out is not None:
        rehearse_out(div, locals())
    if rounding_mode is None:
        return BINARY["div"](input, other, out=out)
    if rounding_mode == "floor":
        return BINARY["floor_divide"](input, other, out=out)
    if rounding_mode == "trunc":
        both_integral = all(not (x._dtype.is_floating_point if isinstance(x, Tensor) else isinstance(x, float)) for x in (input, other))
        if both_integral:
            # Floor and trunc differ by one where the division is inexact and the signs differ.
            quotient = BINARY["floor_divide"](input, other)
            inexact = COMPARE["ne"](BINARY["fmod"](input, other), 0)
            signs_differ = COMPARE["ne"](_is_negative(input), _is_negative(other))
            result = BINARY["add"](quotient, BINARY["logical_and"](inexact, signs_differ))
            return write_out("div", out, result)
        return UNARY["trunc"](BINARY["div"](input, other), out=out)
    raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{rounding_mode}'")


true_divide = div


def _is_negative(x):
    return COMPARE["lt"](x, 0) if isinstance(x, Tensor) else x < 0


def _clamp_derivative(grad, args, output, kwargs, needs):
    import tensorplug as tp

    from .autograd.views import sum_to_shape

    input, low, high = args
    # Like PyTorch, the boundary values themselves pass the gradient to the input.
    inside = tp.ones_like(input, dtype=tp.bool)
    if low is not None:
        inside = inside & (input >= low)
    if high is not None:
        inside = inside & (input <= high)
    # Tensor bounds broadcast against the input: each gradient is summed back to its own
    # argument's shape (a 0-d bound gets the sum over every element it clamped).
    def reduced(gradient, like):
        return sum_to_shape(gradient, like._shape) if gradient._shape != like._shape else gradient

    g_input = reduced(tp.where(inside, grad, 0.0), input) if needs[0] else None
    g_low = reduced(tp.where(input < low, grad, 0.0), low) if needs[1] and isinstance(low, Tensor) else None
    g_high = reduced(tp.where(input > high, grad, 0.0), high) if needs[2] and isinstance(high, Tensor) else None
    return (g_input, g_low, g_high)


@composite("clamp", derivative=_clamp_derivative, differentiable=(0, 1, 2))
def _clamp(input, min, max):
    result = input
    if min is not None:
        result = BINARY["maximum"](result, min)
    if max is not None:
        result = BINARY["minimum"](result, max)
    return result


def clamp(input, min=None, max=None, *, out=None):
    """Limit values to [min, max] (either bound may be None, a number or a tensor)."""
    if out is not None:
        rehearse_out(clamp, locals())
    if min is None and max is None:
        raise RuntimeError("clamp(): At least one of 'min' or 'max' must not be None")
    if not isinstance(input, Tensor):
        raise TypeError(f"clamp(): argument 'input' must be Tensor, not {type(input).__name__}")
    return write_out("clamp", out, _clamp(input, min, max), exact_dtype=True)


clip = clamp


def _reflected(name):
    func = BINARY[name]

    def reflected(self, other):
        return func(other, self)

    reflected.__name__ = f"__r{name}__"
    return reflected


def _bool_guard(self):
    if self.numel() != 1:
        raise RuntimeError(f"Boolean value of Tensor with more than one value is ambiguous (shape {list(self._shape)})")
    return bool(self.item())


# The dtypes NumPy has no type for (without ml_dtypes): values are read back through float32.
_THROUGH_FLOAT32 = frozenset((_dt.bfloat16,) + _dt.float8_dtypes)


def _host_values(t):
    """A NumPy array of ``t``'s values (bfloat16 and float8 go through float32: NumPy lacks them)."""
    if t._dtype in _THROUGH_FLOAT32:
        t = copying.to_dtype(t, _dt.float32)
    return copying.to_numpy(t)


def _item(self):
    if not has_values(self):
        raise RuntimeError(ITEM_MESSAGE)
    if not self._shape and self._dtype not in _THROUGH_FLOAT32:  # a loss: one element, already 0-d
        return copying.to_numpy(self).item()
    if self.numel() != 1:
        raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to Scalar")
    return _host_values(self).reshape(()).item()


def _new_empty(self, *sizes, size=None, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    """An uninitialized tensor of ``size`` with this tensor's dtype and device unless given."""
    shape = sizes[0] if len(sizes) == 1 else None
    if shape.__class__ is tuple and dtype is None and device is None and not requires_grad and layout is None:
        # A shape tuple of sizes and nothing else (how fused kernels allocate their results):
        # check_shape's rules inline, without factories.empty's device and dtype resolution.
        count = 1
        for extent in shape:
            if extent.__class__ is not int or extent < 0:
                break
            count *= extent
        else:
            if count <= MAX_NUMEL:
                return empty_tensor(shape, self._dtype, self._device)
    return factories.empty(*sizes, size=size, dtype=dtype or self._dtype, device=device or self._device,
                           requires_grad=requires_grad, layout=layout, pin_memory=pin_memory)


def _new_empty_strided(self, size, stride, *, dtype=None, device=None, requires_grad=False, layout=None,
                       pin_memory=False):
    """An uninitialized tensor of ``size`` and element strides ``stride``, with this tensor's
    dtype and device unless given."""
    return extra_factories.empty_strided(size, stride, dtype=dtype or self._dtype, device=device or self._device,
                                         requires_grad=requires_grad, layout=layout, pin_memory=pin_memory)


def _sum_to_size(self, *size):
    """``self`` summed over the dims that broadcasting ``size`` to ``self``'s shape would add or
    stretch (``expand``'s gradient); ``self`` itself when ``size`` is its shape."""
    from .autograd.views import sum_to_shape

    shape = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else size
    lead = self.ndim - len(shape)
    if lead < 0 or any(n not in (1, m) for n, m in zip(shape, self._shape[lead:])):
        raise RuntimeError(f"size {{{list(shape)}}} is not expandable to size {{{list(self._shape)}}}.")
    return sum_to_shape(self, shape) if shape != self._shape else self


def _new_filled(factory):
    def new(self, *sizes, size=None, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
        return factory(*sizes, size=size, dtype=dtype or self._dtype, device=device or self._device,
                       requires_grad=requires_grad, layout=layout, pin_memory=pin_memory)

    new.__name__ = new.__qualname__ = "new_" + factory.__name__
    new.__doc__ = f"A tensor of {factory.__name__} with this tensor's dtype and device unless given."
    return new


def _new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    """A tensor of ``size`` filled with ``fill_value``, with this tensor's dtype and device unless given."""
    return factories.full(size, fill_value, dtype=dtype or self._dtype, device=device or self._device,
                          requires_grad=requires_grad, layout=layout, pin_memory=pin_memory)


def _new_tensor(self, data, *, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    """A tensor of ``data``, with this tensor's dtype and device unless given."""
    factory_options.check_layout("new_tensor", layout)
    return factories.tensor(data, dtype=dtype or self._dtype, device=device or self._device, requires_grad=requires_grad)


def _tolist(self):
    return _host_values(self).tolist()


def _numpy(self, *, force=False):
    if self.requires_grad and not force:
        raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
    if self._device.type != "cpu":
        if not force:
            raise TypeError(f"can't convert {self._device} device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first.")
        return copying.to_numpy(self)
    return copying.to_numpy(self)


def _array(self, dtype=None, copy=None):
    array = copying.to_numpy(self.detach())
    return array if dtype is None else array.astype(dtype, copy=False)


def _len(self):
    if not self._shape:
        raise TypeError("len() of a 0-d tensor")
    return self._shape[0]


def _iter(self):
    if not self._shape:
        raise TypeError("iteration over a 0-d tensor")
    return (views.select(self, 0, i) for i in range(self._shape[0]))


def _index(self):
    if self.numel() != 1 or self._dtype.is_floating_point:
        raise TypeError("only integer tensors of a single element can be converted to an index")
    return int(self.item())


def _cast_method(dtype):
    def cast(self):
        return copying.to_dtype(self, dtype)

    cast.__name__ = dtype.name
    return cast


def _setitem(self, index, value):
    indexing.setitem(self, index, value)


def _inplace_unary(name):
    func = UNARY[name]
    spec = func.spec

    def inplace(self):
        if not isinstance(self, Tensor):
            raise TypeError(f"{name}_(): 'self' must be a Tensor")
        if self._dtype not in spec.fast_dtypes or spec.bool_out:
            # The result needs another dtype: refuse a category change (sqrt_ of an int tensor),
            # else compute out of place and cast into self.
            spec.check_dtype(self._dtype)
            result_dtype = _dt.bool if spec.bool_out else _compute_dtype(name, spec.rule, self._dtype)
            check_cast(name + "_", result_dtype, self._dtype)
            return write_inplace(name + "_", self, func(copying.inplace_source(self)))
        check_no_internal_overlap(name + "_", self)
        spec.op.lookup(keyset(self))(self, self)
        self._version_ref[0] += 1
        return self

    inplace.__name__ = name + "_"
    return inplace


def _detach_(self):
    """Detach in place: this tensor leaves the graph and becomes a leaf not requiring grad."""
    if self._base is not None and self._base.requires_grad:
        raise RuntimeError("Can't detach views in-place. Use detach() instead.")
    self.grad_fn = None
    self._autograd = None
    self.requires_grad_(False)
    return self


def _apply_(self, callable):
    """Replace each element x of a CPU tensor by ``callable(x)`` (a Python number in, one out), in
    place, as PyTorch's apply_; slow, as there (one Python call per element)."""
    if self._device.type != "cpu":
        raise TypeError("apply_ is only implemented on CPU tensors")
    if self.requires_grad:
        raise RuntimeError("Can't call apply_() on Variable that requires grad. Use var.detach().apply_() instead.")
    values = [callable(value) for value in self.flatten().tolist()]
    self.copy_(factories.tensor(values, dtype=self._dtype).reshape(self._shape))
    return self


def _pin_memory(self, device=None):
    """A copy of a CPU tensor, as PyTorch's pin_memory gives; the copy is ordinary memory here
    (tensorplug has no page-locked host memory, and its devices copy from any host memory)."""
    if self._device.type != "cpu":
        raise RuntimeError(f"cannot pin '{legacy.type_name(self)}': only dense CPU tensors can be pinned")
    return copying.clone(self)


def _div_inplace_with_rounding(div_inplace):
    def div_(self, other, *, rounding_mode=None):
        """In-place division; ``rounding_mode`` ("trunc" or "floor") as ``div``'s."""
        if rounding_mode is None:
            return div_inplace(self, other)
        return write_inplace("div_", self, div(copying.inplace_source(self), other, rounding_mode=rounding_mode))

    return div_


def _keyword_names(op: str, func, renames: dict):
    """``func`` also taking PyTorch's names for its parameters (``renames``: PyTorch's -> ours)."""
    def with_names(*args, **kwargs):
        for theirs, ours in renames.items():
            if theirs in kwargs:
                if ours in kwargs:
                    raise TypeError(f"{op}() got multiple values for argument '{theirs}'")
                kwargs[ours] = kwargs.pop(theirs)
        return func(*args, **kwargs)

    with_names.__name__ = with_names.__qualname__ = op
    with_names.__doc__ = func.__doc__
    return with_names


def _attach() -> None:
    T = Tensor
    for name, func in BINARY.items():
        setattr(T, name, func)
        setattr(T, name + "_", binary_inplace(func))
    for name, func in COMPARE.items():
        setattr(T, name, func)
        setattr(T, name + "_", binary_inplace(func))
    for name, func in UNARY.items():
        setattr(T, name, func)
        setattr(T, name + "_", _inplace_unary(name))
    T.add, T.sub, T.div, T.true_divide, T.divide = add, sub, div, div, div
    T.true_divide_ = T.divide_ = T.div_ = _div_inplace_with_rounding(T.div_)
    # PyTorch's keyword spellings of round and pow (round(decimals=2), pow(exponent=2)); the
    # positional calls go straight to the ops as before.
    T.round = decimal_round.round_method
    round_inplace = T.round_
    T.round_ = lambda self, *, decimals=0: round_inplace(self) if decimals == 0 else decimal_round.round_decimals_(self, decimals)
    T.pow_ = _keyword_names("pow_", T.pow_, {"exponent": "other"})
    T.subtract, T.multiply = sub, BINARY["mul"]
    for alias, name in ALIASES.items():
        setattr(T, alias, getattr(T, name))
        setattr(T, alias + "_", getattr(T, name + "_"))
    add_inplace, sub_inplace = T.add_, T.sub_  # made from BINARY above; wrapped for alpha
    # alpha == 1 (an optimizer's p.add_(update)) skips _scaled's frame.
    T.add_ = lambda self, other, *, alpha=1: add_inplace(self, other if alpha == 1 else _scaled("add_", self, other, alpha))
    T.sub_ = lambda self, other, *, alpha=1: sub_inplace(self, other if alpha == 1 else _scaled("sub_", self, other, alpha))
    T.clamp = T.clip = clamp
    T.clamp_ = T.clip_ = lambda self, min=None, max=None: write_inplace("clamp_", self, clamp(copying.inplace_source(self), min, max))

    operators = {
        "__add__": BINARY["add"], "__sub__": BINARY["sub"], "__mul__": BINARY["mul"],
        "__truediv__": BINARY["div"], "__floordiv__": BINARY["floor_divide"], "__mod__": BINARY["remainder"],
        "__pow__": BINARY["pow"], "__and__": BINARY["bitwise_and"], "__or__": BINARY["bitwise_or"],
        "__xor__": BINARY["bitwise_xor"], "__lshift__": BINARY["bitwise_left_shift"],
        "__rshift__": BINARY["bitwise_right_shift"], "__matmul__": linalg.matmul,
        "__eq__": COMPARE["eq"], "__ne__": COMPARE["ne"], "__lt__": COMPARE["lt"], "__le__": COMPARE["le"],
        "__gt__": COMPARE["gt"], "__ge__": COMPARE["ge"],
    }
    for dunder, func in operators.items():
        setattr(T, dunder, func)
    for name, binary_name in (("add", "add"), ("sub", "sub"), ("mul", "mul"), ("truediv", "div"), ("floordiv", "floor_divide"),
                              ("mod", "remainder"), ("pow", "pow"), ("and", "bitwise_and"), ("or", "bitwise_or"), ("xor", "bitwise_xor")):
        # x + t and x * t are t + x and t * x (as in PyTorch): the op itself, without a frame.
        setattr(T, f"__r{name}__", BINARY[binary_name] if name in ("add", "mul") else _reflected(binary_name))
        setattr(T, f"__i{name}__", binary_inplace(BINARY[binary_name]))
    T.__ilshift__ = binary_inplace(BINARY["bitwise_left_shift"])
    T.__irshift__ = binary_inplace(BINARY["bitwise_right_shift"])
    T.__rmatmul__ = lambda self, other: linalg.matmul(other, self)
    T.__neg__ = UNARY["neg"]
    T.__abs__ = UNARY["abs"]
    T.__invert__ = lambda self: UNARY["logical_not"](self) if self._dtype is _dt.bool else UNARY["bitwise_not"](self)
    T.__pos__ = lambda self: self
    T.__bool__ = _bool_guard
    T.__float__ = lambda self: float(_item(self))
    T.__int__ = lambda self: int(_item(self))
    T.__complex__ = lambda self: complex(_item(self))  # complex(t) of a one-element tensor, as PyTorch
    T.__index__ = _index
    T.__len__ = _len
    T.__iter__ = _iter
    T.__getitem__ = indexing.getitem
    T.__setitem__ = _setitem
    T.__repr__ = printing.tensor_repr
    T.__str__ = printing.tensor_repr
    T.__array__ = _array
    T.__format__ = lambda self, spec: format(self.item(), spec) if self.numel() == 1 and not self._shape else repr(self)
    # item() of one element in host memory is read in C (a loss, once per step); _item does the rest.
    # float8 values are read through float32 in Python (the C reader boxes stored types only).
    read_in_c = [d for d in _dt.all_dtypes + _dt.complex_dtypes if d not in _dt.float8_dtypes]
    T.item = _hotpath.item_method(_item, {d: d.name for d in read_in_c})
    T.tolist, T.numpy = _tolist, _numpy
    T.backward = _autograd.tensor_backward
    T.retain_grad = _autograd.retain_grad
    T.register_hook = _autograd.register_hook
    T.register_post_accumulate_grad_hook = _autograd.register_post_accumulate_grad_hook
    T.retains_grad = property(lambda self: bool(getattr(self._autograd, "retains_grad", False)))
    T.detach_ = _detach_
    T.share_memory_ = shared_memory.share_memory_
    T.is_shared = shared_memory.is_shared
    T.untyped_storage = storage.untyped_storage
    T.storage = storage.typed_storage
    T.data_ptr = storage.data_ptr

    for name in ("view", "reshape", "expand", "expand_as", "transpose", "swapaxes", "t", "permute", "movedim",
                 "squeeze", "unsqueeze", "flatten", "ravel", "unflatten", "select", "narrow", "as_strided", "diagonal",
                 "unfold", "broadcast_to"):
        setattr(T, name, getattr(views, name))
    T.swapdims = views.transpose
    T.reshape_as = lambda self, other: views.reshape(self, other._shape)
    T.view_as = lambda self, other: views.view(self, other._shape)
    T.T = property(lambda self: views.permute(self, tuple(reversed(range(self.ndim)))))
    T.mT = property(lambda self: views.transpose(self, -2, -1))
    T.mH = property(_adjoint)
    T.adjoint = _adjoint
    for name in ("copy_", "fill_", "zero_", "to", "contiguous", "clone", "cpu"):
        setattr(T, name, getattr(copying, name))
    T.half, T.bfloat16, T.float, T.double = (_cast_method(d) for d in (_dt.float16, _dt.bfloat16, _dt.float32, _dt.float64))
    T.char, T.short, T.int, T.long, T.byte, T.bool = (_cast_method(d) for d in (_dt.int8, _dt.int16, _dt.int32, _dt.int64, _dt.uint8, _dt.bool))
    T.pin_memory = _pin_memory
    T.apply_ = _apply_
    T.is_pinned = lambda self, device=None: False  # no page-locked host memory (docs/deviations.md)
    T.type = lambda self, dtype=None, non_blocking=False, **kwargs: (
        legacy.type_name(self) if dtype is None else legacy.convert_type(self, dtype, non_blocking))
    # PyTorch's self.type(other.type()): a type string names the device as well as the dtype
    # ('torch.cuda.FloatTensor'), so type_as moves to other's device too.
    T.type_as = lambda self, other: copying.to(self, other._device, other._dtype)
    for name in ("sum", "prod", "mean", "amax", "amin", "all", "any", "argmax", "argmin", "max", "min", "cumsum", "cumprod",
                 "cumsum_", "cumprod_", "nansum", "nanmean"):
        setattr(T, name, getattr(reductions, name))
    for name in ("matmul", "mm", "bmm", "dot", "mv"):
        setattr(T, name, getattr(linalg, name))
    # The ops autocast runs in float32 on accelerators, fronted by its policy (issue 13); their
    # in-place variants (exp_, cumsum_, **=) are not autocast, as in PyTorch.
    for name, func in FRONTS.items():
        setattr(T, name, func)
    T.__pow__ = FRONTS["pow"]
    T.__rpow__ = autocast_front("pow", _reflected("pow"))
    T.__rtruediv__ = autocast_front("__rtruediv__", _reflected("div"))
    T.where = lambda self, condition, other: where(condition, self, other)
    for name in ("gather", "scatter", "scatter_", "scatter_add", "index_select", "nonzero", "argwhere", "take", "index_put_"):
        setattr(T, name, getattr(indexing, name))
    T.scatter_add_ = lambda self, dim, index, src: indexing.scatter_(self, dim, index, src, reduce="add")
    T.uniform_, T.normal_, T.random_ = factories.uniform_, factories.normal_, factories.random_
    for name in random_fills.__all__:
        setattr(T, name, getattr(random_fills, name))
    T.bernoulli, T.bernoulli_ = factories.bernoulli, factories.bernoulli_
    T.new_empty, T.new_empty_strided = _new_empty, _new_empty_strided
    T.sum_to_size = _sum_to_size
    T.new_zeros, T.new_ones = _new_filled(factories.zeros), _new_filled(factories.ones)
    T.new_full, T.new_tensor = _new_full, _new_tensor

    # Complex numbers (docs/complex.md): real and imag are views, settable as in PyTorch.
    from . import complex as _complex

    T.real = property(_complex.real, lambda self, value: _complex.real(self).copy_(value))
    T.imag = property(_complex.imag, lambda self, value: _complex.imag(self).copy_(value))
    for name in ("conj", "conj_physical", "resolve_conj", "is_conj", "angle"):
        setattr(T, name, getattr(_complex, name))

    # Op-library modules list their methods in TENSOR_METHODS (issue 3).
    from ..linalg import _aliases as linalg_aliases
    from ..nn import functional as nn_functional
    from .ops import (
        adjacent_floats, closeness, diagonals, differences, float_classes, histograms, index_updates, kronecker, math_ops, pointwise,
        inplace_views, products, quantiles, rearranging, renorming, sampling, scans, scatter_reduce, shaping,
        sorting, special_functions, spellings, stacking, statistics, type_queries, view_scatters, zeta_functions,
    )

    for module in (shaping, math_ops, sorting, nn_functional, linalg_aliases, closeness, diagonals, differences,
                   histograms, kronecker, quantiles, sampling, scatter_reduce, special_functions, pointwise,
                   float_classes, products, stacking, rearranging, scans, statistics, index_updates, type_queries,
                   zeta_functions, adjacent_floats, renorming, view_scatters, spellings, inplace_views):
        for name, func in module.TENSOR_METHODS.items():
            setattr(T, name, func)


_attach()
