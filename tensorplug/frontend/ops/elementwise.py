"""Elementwise ops: the unary, binary, compare and where primitives and their public functions.

Each family has one meta function, so every op of a family checks, promotes and broadcasts the
same way and raises the same messages on every backend. A dtype rule per op says how the
computation dtype follows from the promoted input dtype:

* ``same``: compute in the promoted dtype (add, mul, maximum, ...);
* ``float``: integers and bool are computed in the default float dtype (div, exp, sin, ...);
* ``integral``: integers and bool only (bitwise ops);
* ``to_bool``: compute in the promoted dtype, write bool (comparisons, logical ops, isnan).

The fast path (both operands tensors of one shape, dtype and device, no ``out=``) skips
promotion and broadcasting entirely: it is what ``a + b`` on small tensors pays.
"""
from __future__ import annotations

from ...dispatcher import Operator, local_state
from ... import _hotpath
from .. import dtypes as _dt
from ..shapes import broadcast_shapes
from ..tensor import Tensor, empty_tensor
from ..views import expand_to
from ._common import (bump_version, check_exact_dtype, check_out, check_same_device, is_number, on_common_device,
                      refuse_out_under_autograd)
from .copying import check_scalar_fits, copy_, fill_, to_dtype

__all__ = ["unary_op", "binary_op", "UNARY", "BINARY", "COMPARE", "ALIASES", "where"]

_FLOATS = frozenset(d for d in _dt.all_dtypes if d.is_floating_point)
_INTEGRALS = frozenset(d for d in _dt.all_dtypes if not d.is_floating_point)
_ALL = frozenset(_dt.all_dtypes)


def _compute_dtype(name: str, rule: str, promoted: _dt.dtype) -> _dt.dtype:
    if rule == "float" and promoted.category < 2:  # complex stays complex
        return _dt.get_default_dtype()
    if rule == "integral" and promoted.is_floating_point:
        raise TypeError(f"{name}(): not implemented for floating-point dtype {promoted.name}; it needs integer or bool tensors")
    return promoted


def _result_dtype(a, b) -> _dt.dtype:
    """torch.result_type for two operands (tensors or Python numbers)."""
    dim = zero = wrapped = None
    for x in (a, b):
        if isinstance(x, Tensor):
            if x._shape:
                dim = x._dtype if dim is None else _dt.promote_types(dim, x._dtype)
            else:
                zero = x._dtype if zero is None else _dt.promote_types(zero, x._dtype)
        else:
            scalar = _dt.dtype_of_scalar(x)
            wrapped = scalar if wrapped is None else _dt.promote_types(wrapped, scalar)
    return _dt.combine_categories(dim, _dt.combine_categories(zero, wrapped))


def _scalar_as(value, dtype: _dt.dtype):
    """A Python number in the Python type that matches ``dtype``'s category.

    An integer outside an integer dtype's range wraps around (two's complement), as the
    conversion does in PyTorch: ``uint8 + 300`` adds 44. Kernels thus always get a value that
    fits the dtype.
    """
    if dtype.is_floating_point:
        return float(value)
    if dtype.is_complex:
        return complex(value)
    if dtype is _dt.bool:
        return bool(value)
    value = int(value)
    bits = dtype.itemsize * 8
    low = 0 if dtype is _dt.uint8 else -(1 << (bits - 1))
    if not low <= value < low + (1 << bits):
        value = (value - low) % (1 << bits) + low
    return value


def _check_operand(name: str, position: str, value) -> None:
    if not isinstance(value, Tensor) and not is_number(value) and not isinstance(value, complex):
        raise TypeError(f"{name}(): argument '{position}' must be Tensor or Number, not {type(value).__name__}")


def _check_out_first(name: str, out: Tensor, shape: tuple, result_dtype: _dt.dtype, dev, graph_inputs) -> None:
    """Check (and resize) an out= before any cast or kernel runs (issue 13); callers test
    ``out is not None`` first, so a call without out pays nothing. ``graph_inputs``: the operands
    whose requires_grad the result would inherit (none for an op without a derivative), which the
    out-under-autograd error reads in place of the result's."""
    refuse_out_under_autograd(name, out, *graph_inputs)
    check_out(name, out, shape, result_dtype, dev)


def _graph_inputs(spec: "_ElementwiseOp", *operands) -> tuple:
    return tuple(x for x in operands if isinstance(x, Tensor)) if spec.op.differentiable else ()


def _finish_out(result: Tensor, out: Tensor | None) -> Tensor:
    return result if out is None else copy_(out, result)


class _ElementwiseOp:
    """What the meta functions need to know about one elementwise op."""

    __slots__ = ("name", "op", "rule", "dtypes", "fast_dtypes", "bool_out", "exact_out")

    def __init__(self, name: str, rule: str, dtypes=_ALL, differentiable: bool = True, exact_out: bool = False):
        self.name = name
        self.op = Operator(name, differentiable=differentiable and rule != "to_bool")
        self.rule = rule
        self.dtypes = dtypes
        self.bool_out = rule == "to_bool"
        self.exact_out = exact_out
        # Dtypes for which the computation dtype is the input dtype (so the fast path applies).
        self.fast_dtypes = dtypes & (_FLOATS if rule == "float" else _INTEGRALS if rule == "integral" else _ALL)

    def check_dtype(self, dtype: _dt.dtype) -> None:
        if dtype not in self.dtypes:
            raise TypeError(f"{self.name}(): not supported for {dtype.name} tensors")


def unary_op(name: str, rule: str = "same", dtypes=_ALL, differentiable: bool = True, exact_out: bool = False):
    """Define unary primitive ``name`` and return its public function ``f(input, *, out=None)``.

    ``exact_out``: an out= tensor must have the input's dtype, as PyTorch demands of the unary
    ops that keep their input's dtype (abs, neg, floor, ...: "Found dtype Double but expected
    Float"); otherwise any dtype the result casts to without a category change is accepted.
    """
    spec = _ElementwiseOp(name, rule, dtypes, differentiable, exact_out)
    op, table, fast_dtypes = spec.op, spec.op.table, spec.fast_dtypes
    bool_out = spec.bool_out

    def unary(input, *, out=None):
        if out is None and isinstance(input, Tensor) and input._dtype in fast_dtypes:
            result = empty_tensor(input._shape, _dt.bool if bool_out else input._dtype, input._device)
            keys = (input._keys | local_state.include) & local_state.mask
            (table.get(keys) or op.lookup(keys))(result, input)
            return result
        return _unary_slow(spec, input, out)

    unary.__name__ = unary.__qualname__ = name
    unary.__doc__ = f"Elementwise ``{name}`` of ``input`` (see torch.{name})."
    unary.spec = spec
    return _with_hotpath(unary, 1, spec, fast_dtypes)


def _unary_slow(spec: _ElementwiseOp, input, out):
    if not isinstance(input, Tensor):
        raise TypeError(f"{spec.name}(): argument 'input' must be Tensor, not {type(input).__name__}")
    spec.check_dtype(input._dtype)
    dtype = _compute_dtype(spec.name, spec.rule, input._dtype)
    if spec.exact_out:
        check_exact_dtype(spec.name, out, dtype.to_real() if spec.name == "abs" else dtype)
    # abs of a complex tensor is real, as in PyTorch; complex ops are listed in docs/complex.md.
    result_dtype = _dt.bool if spec.bool_out else dtype.to_real() if spec.name == "abs" else dtype
    if out is not None:
        _check_out_first(spec.name, out, input._shape, result_dtype, input._device, _graph_inputs(spec, input))
    x = to_dtype(input, dtype)
    result = empty_tensor(x._shape, result_dtype, x._device)
    spec.op.lookup(_keys(x))(result, x)
    return _finish_out(result, out)


def _keys(*tensors) -> int:
    keys = local_state.include
    for t in tensors:
        keys |= t._keys
    return keys & local_state.mask


def binary_op(name: str, rule: str = "same", dtypes=_ALL, differentiable: bool = True):
    """Define binary primitive ``name``; return ``f(input, other, *, out=None)``.

    Either operand may be a Python number (passed to the kernel as a number, never a tensor).
    """
    spec = _ElementwiseOp(name, rule, dtypes, differentiable)
    op, table, fast_dtypes = spec.op, spec.op.table, spec.fast_dtypes
    bool_out = spec.bool_out
    # A float16/bfloat16 tensor to the power of a number goes through the checks of binary_meta
    # (the exponent must fit the dtype, as in PyTorch).
    number_fast_dtypes = fast_dtypes - {_dt.float16, _dt.bfloat16} if name == "pow" else fast_dtypes

    def binary(input, other, *, out=None):
        # Fast path: two tensors of one dtype and device, no out=. Nothing to promote or cast;
        # only broadcasting (a bias, a 0-d scale) may be left to do.
        if out is None and isinstance(other, Tensor) and isinstance(input, Tensor):
            dtype = input._dtype
            if dtype is not other._dtype or input._device is not other._device or dtype not in fast_dtypes:
                return binary_meta(spec, input, other, out)
            shape = input._shape
            if shape != other._shape:
                shape = broadcast_shapes(shape, other._shape, op=name)
                if input._shape != shape:
                    input = expand_to(input, shape)
                if other._shape != shape:
                    other = expand_to(other, shape)
            result = empty_tensor(shape, _dt.bool if bool_out else dtype, input._device)
            keys = (input._keys | other._keys | local_state.include) & local_state.mask
            (table.get(keys) or op.lookup(keys))(result, input, other)
            return result
        # Fast path: a floating tensor and a Python int or float (loss arithmetic, optimizer
        # updates): the result keeps the tensor's dtype and the number goes in as a float.
        if out is None and (other.__class__ is float or other.__class__ is int) and isinstance(input, Tensor):
            tensor = input
        elif out is None and (input.__class__ is float or input.__class__ is int) and isinstance(other, Tensor):
            tensor = other
        else:
            return binary_meta(spec, input, other, out)
        if not (tensor._dtype.is_floating_point and tensor._dtype in number_fast_dtypes):
            return binary_meta(spec, input, other, out)
        number = other if tensor is input else input
        if number.__class__ is int and not -(1 << 63) <= number < (1 << 64):
            return binary_meta(spec, input, other, out)  # which raises OverflowError, as PyTorch
        result = empty_tensor(tensor._shape, _dt.bool if bool_out else tensor._dtype, tensor._device)
        keys = (tensor._keys | local_state.include) & local_state.mask
        if tensor is input:
            (table.get(keys) or op.lookup(keys))(result, input, float(other))
        else:
            (table.get(keys) or op.lookup(keys))(result, float(input), other)
        return result

    binary.__name__ = binary.__qualname__ = name
    binary.__doc__ = f"Elementwise ``{name}`` of ``input`` and ``other`` with broadcasting (see torch.{name})."
    binary.spec = spec
    return _with_hotpath(binary, 2, spec, number_fast_dtypes)


def _with_hotpath(function, arity: int, spec: _ElementwiseOp, number_dtypes):
    """``function`` with its fast paths also done in C (tensorplug/csrc/hotpath.cpp, same rules).

    The C object runs the cases of the fast paths above that need no broadcasting (same-shape
    tensors of one dtype and device, a floating tensor and a Python number) and calls
    ``function`` for everything else. Introspection (``__name__``, ``spec``,
    ``inspect.signature``) sees ``function``.
    """
    number_dtypes = frozenset(d for d in number_dtypes if d.is_floating_point)
    return _hotpath.ElementwiseOp(function, arity, spec.op.table, spec.op.lookup, spec.fast_dtypes, number_dtypes,
                                  _dt.bool if spec.bool_out else None)


def binary_meta(spec: _ElementwiseOp, a, b, out, inplace: bool = False) -> Tensor:
    """The general binary path: checks, promotion, broadcasting, casts, out= and in-place."""
    name = spec.name
    _check_operand(name, "input", a)
    _check_operand(name, "other", b)
    a_is_tensor, b_is_tensor = isinstance(a, Tensor), isinstance(b, Tensor)
    if not a_is_tensor and not b_is_tensor:
        raise TypeError(f"{name}(): expected at least one Tensor argument, got {type(a).__name__} and {type(b).__name__}")
    if a_is_tensor and b_is_tensor and a._device is not b._device:
        # Like PyTorch, a 0-d CPU tensor may join a computation on another device. It moves
        # there as a tensor, not as a number, so that it promotes as a 0-d tensor (an int
        # tensor + a float64 one gives float64) and its gradient flows back through the copy.
        if not b._shape and b._device.type == "cpu":
            b = b.to(a._device)
        elif not a._shape and a._device.type == "cpu":
            a = a.to(b._device)
        else:
            check_same_device(name, a, b)
    if name == "sub" and (isinstance(a, bool) or isinstance(b, bool)):
        # A Python bool counts as a bool operand, as in PyTorch (int16 - True is refused too).
        raise TypeError("sub(): Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying "
                        "to invert a mask, use the `~` or `logical_not()` operator instead.")
    promoted = _result_dtype(a, b)
    if name == "pow" and promoted is _dt.bool:
        return _pow_of_bools(a, b, out, inplace)
    spec.check_dtype(promoted)
    for x in (a, b):
        # pow takes bool operands that promote to another dtype (bool ** 2 is int64), as PyTorch.
        if isinstance(x, Tensor) and name != "pow":
            spec.check_dtype(x._dtype)
    dtype = _compute_dtype(name, spec.rule, promoted)
    if name == "pow" and not b_is_tensor:
        if dtype.category < 2 and b < 0:  # (a complex exponent has no sign)
            raise RuntimeError(f"pow(): Integers to negative integer powers are not allowed (exponent {b}, dtype {dtype.name})")
        if dtype not in (_dt.float32, _dt.float64) and not dtype.is_complex:
            # PyTorch converts a number exponent to the computation dtype with its overflow check
            # (float32 and float64 compute with a double exponent): float16 ** 1e5, int8 ** 128.
            check_scalar_fits("pow", b, dtype)
    shape = broadcast_shapes(a._shape if a_is_tensor else (), b._shape if b_is_tensor else (), op=name)
    dev = a._device if a_is_tensor else b._device
    result_dtype = _dt.bool if spec.bool_out else dtype
    if inplace:
        check_out(name, out, shape, result_dtype, dev, resize=False)
    elif out is not None:
        _check_out_first(name, out, shape, result_dtype, dev, _graph_inputs(spec, a, b))
    if a_is_tensor:
        a = to_dtype(a, dtype)
        a = a if a._shape == shape else expand_to(a, shape)
    else:
        a = _scalar_as(a, dtype)
    if b_is_tensor:
        b = to_dtype(b, dtype)
        b = b if b._shape == shape else expand_to(b, shape)
    else:
        b = _scalar_as(b, dtype)
    tensors = [x for x in (a, b) if isinstance(x, Tensor)]
    if inplace:
        target = out
        aliased = any(t._storage is target._storage for t in tensors)
        if target._dtype is result_dtype and (not aliased or _exactly_aliased(target, tensors)):
            spec.op.lookup(_keys(*tensors, target))(target, a, b)
            bump_version(target)
            return target
    result = empty_tensor(shape, result_dtype, dev)
    spec.op.lookup(_keys(*tensors))(result, a, b)
    if inplace:
        return copy_(out, result)
    return _finish_out(result, out)


def _pow_of_bools(a, b, out, inplace: bool) -> Tensor:
    """pow computed in bool: PyTorch has no such kernel, except for a bool tensor to the power of
    a Python bool (``x ** True`` is ``x``, ``x ** False`` is all True)."""
    if not (isinstance(a, Tensor) and isinstance(b, bool)):
        # TypeError, as every op refusing a dtype here (PyTorch: NotImplementedError, same words).
        raise TypeError('pow(): "pow" not implemented for \'Bool\'')
    if inplace:
        return out if b else fill_(out, True)
    if out is not None:
        _check_out_first("pow", out, a._shape, _dt.bool, a._device, ())
    result = empty_tensor(a._shape, _dt.bool, a._device)
    result = copy_(result, a) if b else fill_(result, True)
    return _finish_out(result, out)


def _exactly_aliased(target: Tensor, tensors) -> bool:
    # Writing into an input is safe for elementwise kernels when the layouts are identical
    # (each output element reads only the input element at the same place).
    return all(
        t._storage is not target._storage
        or (t._offset == target._offset and t._stride == target._stride and t._dtype is target._dtype)
        for t in tensors
    )


def binary_inplace(func):
    """The in-place variant ``self.op_(other)`` of a function made by :func:`binary_op`."""
    spec = func.spec
    op, fast_dtypes = spec.op, spec.fast_dtypes
    # As binary's number fast path: pow of a 16-bit float goes through binary_meta's checks.
    number_fast_dtypes = fast_dtypes - {_dt.float16, _dt.bfloat16} if spec.name == "pow" else fast_dtypes

    def inplace(self, other):
        # Fast path (gradient accumulation, optimizer steps): a separate tensor of the same
        # shape, dtype and device, written into a target with no repeated elements.
        if (
            isinstance(other, Tensor)
            and isinstance(self, Tensor)
            and other._shape == self._shape
            and other._dtype is self._dtype
            and other._device is self._device
            and self._dtype in fast_dtypes
            and not spec.bool_out
            and other._storage is not self._storage
            and 0 not in self._stride
        ):
            keys = (self._keys | other._keys | local_state.include) & local_state.mask
            (op.table.get(keys) or op.lookup(keys))(self, self, other)
            self._version_ref[0] += 1
            return self
        # Fast path: a floating target and a Python float or int (an optimizer's buf.mul_(momentum)):
        # the result keeps the target's dtype, so binary_meta would write it directly too (its
        # general checks were most of a small in-place op's cost, issue 14).
        if (
            (other.__class__ is float or (other.__class__ is int and -(1 << 63) <= other < (1 << 64)))
            and isinstance(self, Tensor)
            and self._dtype.is_floating_point
            and self._dtype in number_fast_dtypes
            and not spec.bool_out
            and 0 not in self._stride
        ):
            keys = (self._keys | local_state.include) & local_state.mask
            (op.table.get(keys) or op.lookup(keys))(self, self, float(other))
            self._version_ref[0] += 1
            return self
        if not isinstance(self, Tensor):
            raise TypeError(f"{spec.name}_(): 'self' must be a Tensor")
        return binary_meta(spec, self, other, self, inplace=True)

    inplace.__name__ = inplace.__qualname__ = spec.name + "_"
    return inplace


# --- definitions ---------------------------------------------------------------------------
_NOT_BOOL = _ALL - {_dt.bool}

UNARY = {
    "neg": unary_op("neg", "same", _NOT_BOOL, exact_out=True),
    "abs": unary_op("abs", "same", exact_out=True),
    "sign": unary_op("sign", "same", exact_out=True),
    "floor": unary_op("floor", "same", exact_out=True),
    "ceil": unary_op("ceil", "same", exact_out=True),
    "round": unary_op("round", "same", exact_out=True),
    "trunc": unary_op("trunc", "same", exact_out=True),
    "square": unary_op("square", "same"),  # pow(x, 2) in PyTorch: out= follows the binary ops' rule
    "bitwise_not": unary_op("bitwise_not", "integral", _INTEGRALS, exact_out=True),
    "logical_not": unary_op("logical_not", "to_bool"),
    "isnan": unary_op("isnan", "to_bool"),
    "isinf": unary_op("isinf", "to_bool"),
    "isfinite": unary_op("isfinite", "to_bool"),
}
for _name in (
    "exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos", "tan",
    "asin", "acos", "atan", "sinh", "cosh", "tanh", "sigmoid", "erf", "erfinv", "reciprocal",
):
    UNARY[_name] = unary_op(_name, "float")

BINARY = {
    "add": binary_op("add"),
    "sub": binary_op("sub", "same", _NOT_BOOL),
    "mul": binary_op("mul"),
    "div": binary_op("div", "float"),
    "floor_divide": binary_op("floor_divide", "same", _NOT_BOOL),
    "remainder": binary_op("remainder", "same", _NOT_BOOL),
    "fmod": binary_op("fmod", "same", _NOT_BOOL),
    "pow": binary_op("pow", "same", _NOT_BOOL),
    "maximum": binary_op("maximum"),
    "minimum": binary_op("minimum"),
    "atan2": binary_op("atan2", "float"),
    "copysign": binary_op("copysign", "float"),
    "hypot": binary_op("hypot", "float"),
    "bitwise_and": binary_op("bitwise_and", "integral", _INTEGRALS),
    "bitwise_or": binary_op("bitwise_or", "integral", _INTEGRALS),
    "bitwise_xor": binary_op("bitwise_xor", "integral", _INTEGRALS),
    "bitwise_left_shift": binary_op("bitwise_left_shift", "integral", _NOT_BOOL & _INTEGRALS),
    "bitwise_right_shift": binary_op("bitwise_right_shift", "integral", _NOT_BOOL & _INTEGRALS),
    "logical_and": binary_op("logical_and", "to_bool"),
    "logical_or": binary_op("logical_or", "to_bool"),
    "logical_xor": binary_op("logical_xor", "to_bool"),
}

COMPARE = {name: binary_op(name, "to_bool") for name in ("eq", "ne", "lt", "le", "gt", "ge")}

# NumPy's names for ops above, which PyTorch takes too (torch.arcsin, t.fix_()): alias -> op.
ALIASES = {"absolute": "abs", "negative": "neg", "arcsin": "asin", "arccos": "acos", "arctan": "atan",
           "arctan2": "atan2", "fix": "trunc", "greater": "gt", "greater_equal": "ge", "less": "lt", "less_equal": "le",
           "not_equal": "ne"}

WHERE = Operator("where")


def where(condition, input=None, other=None, *, out=None):
    """``input`` where ``condition`` is true, else ``other`` (broadcast together).

    ``where(condition)`` alone is ``nonzero(condition, as_tuple=True)``.
    """
    if input is None and other is None:
        from ..meta_device import refuse_data_dependent
        from .indexing import nonzero

        if isinstance(condition, Tensor):
            refuse_data_dependent("where(condition)", condition)
        return nonzero(condition, as_tuple=True)
    if not isinstance(condition, Tensor):
        raise TypeError(f"where(): argument 'condition' must be Tensor, not {type(condition).__name__}")
    if condition._dtype is not _dt.bool:
        raise TypeError(f"where(): expected condition to be a bool tensor, but got a tensor with dtype {condition._dtype.name}")
    if (
        out is None
        and isinstance(input, Tensor)
        and isinstance(other, Tensor)
        and input._dtype is other._dtype
        and input._shape == other._shape == condition._shape
        and input._device is condition._device
        and other._device is condition._device
    ):
        # Fast path: three tensors of one shape and device, two of one dtype (a loss's branches):
        # nothing to promote, broadcast or check.
        result = empty_tensor(input._shape, input._dtype, input._device)
        WHERE.lookup(_keys(condition, input, other))(result, condition, input, other)
        return result
    _check_operand("where", "input", input)
    _check_operand("where", "other", other)
    condition, input, other = on_common_device("where", condition, input, other)
    tensors = [x for x in (condition, input, other) if isinstance(x, Tensor)]
    dtype = _result_dtype(input, other)
    shape = broadcast_shapes(*(t._shape for t in tensors), op="where")
    if out is not None:
        check_exact_dtype("where", out, dtype)
        _check_out_first("where", out, shape, dtype, condition._device, tensors)
    cond = condition if condition._shape == shape else expand_to(condition, shape)
    operands = []
    for x in (input, other):
        if isinstance(x, Tensor):
            x = to_dtype(x, dtype)
            operands.append(x if x._shape == shape else expand_to(x, shape))
        else:
            check_scalar_fits("where", x, dtype)
            operands.append(_scalar_as(x, dtype))
    result = empty_tensor(shape, dtype, condition._device)
    # The result's keys too: a number can make it complex (the Complex key) where no input is.
    WHERE.lookup(_keys(*tensors, result))(result, cond, operands[0], operands[1])
    return _finish_out(result, out)
