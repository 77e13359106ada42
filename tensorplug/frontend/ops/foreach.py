"""``tp._foreach_*``: PyTorch's list ops (``torch._foreach_mul_(params, 0.999)``, the
``_foreach_lerp_`` of an exponential moving average of weights), which real training code calls
directly. Each applies the op to every tensor of a list, element by element of the other
arguments: a list of tensors of the same length, one number, a list of numbers, or (for the
binary ops) one tensor. In-place forms return their list; the others a tuple, as in PyTorch.

tensorplug runs them as a loop of the ordinary ops (PyTorch fuses them into one kernel launch
per group of tensors on CUDA): the values are the same.
"""
from __future__ import annotations

from numbers import Number

from ..tensor import Tensor

_UNARY = ("abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "erf", "erfc", "exp", "expm1", "floor", "frac", "lgamma",
          "log", "log10", "log1p", "log2", "neg", "reciprocal", "round", "rsqrt", "sigmoid", "sign", "sin", "sinh",
          "sqrt", "tan", "tanh", "trunc")
_BINARY = ("add", "sub", "mul", "div", "maximum", "minimum", "pow", "clamp_min", "clamp_max")

__all__ = (["_foreach_" + name + suffix for name in _UNARY + _BINARY + ("addcmul", "addcdiv", "lerp") for suffix in ("", "_")]
           + ["_foreach_norm", "_foreach_max", "_foreach_clone", "_foreach_copy_", "_foreach_zero_"])


def _check_list(op: str, tensors) -> list:
    if not isinstance(tensors, (list, tuple)) or not all(isinstance(t, Tensor) for t in tensors):
        raise TypeError(f"{op}(): expected a list of tensors, got {type(tensors).__name__}")
    return list(tensors)


def _per_tensor(op: str, tensors: list, other) -> list:
    """``other`` spread over ``tensors``: its own list (same length), or one value repeated."""
    if isinstance(other, (list, tuple)):
        if len(other) != len(tensors):
            kind = "tensors" if other and isinstance(other[0], Tensor) else "scalars"
            raise RuntimeError(f"{op}(): Tensor lists must have the same number of {kind}, got {len(tensors)} and "
                               f"{len(other)}")
        return list(other)
    if not isinstance(other, (Tensor, Number)):
        raise TypeError(f"{op}(): expected a tensor, a number or a list of them, got {type(other).__name__}")
    return [other] * len(tensors)


def _unary(name: str, inplace: bool):
    method = name + "_" if inplace else name

    def run(self):
        tensors = _check_list(f"_foreach_{method}", self)
        results = [getattr(t, method)() for t in tensors]
        return self if inplace else tuple(results)

    run.__name__ = run.__qualname__ = f"_foreach_{method}"
    run.__doc__ = f"``{method}`` of every tensor of the list."
    return run


def _binary(name: str, inplace: bool):
    method = name + "_" if inplace else name

    def run(self, other, *, alpha=1):
        op = f"_foreach_{method}"
        tensors = _check_list(op, self)
        others = _per_tensor(op, tensors, other)
        if alpha != 1:
            if name not in ("add", "sub"):
                raise TypeError(f"{op}() got an unexpected keyword argument 'alpha'")
            results = [getattr(t, method)(o, alpha=alpha) for t, o in zip(tensors, others)]
        else:
            results = [getattr(t, method)(o) for t, o in zip(tensors, others)]
        return self if inplace else tuple(results)

    run.__name__ = run.__qualname__ = f"_foreach_{method}"
    run.__doc__ = f"``{method}`` of every tensor of the list with its counterpart (or the one value)."
    return run


def _pointwise3(name: str, inplace: bool):
    method = name + "_" if inplace else name

    def run(self, tensor1, tensor2, value=1):
        op = f"_foreach_{method}"
        tensors = _check_list(op, self)
        firsts, seconds = _per_tensor(op, tensors, tensor1), _per_tensor(op, tensors, tensor2)
        values = _per_tensor(op, tensors, value.tolist() if isinstance(value, Tensor) else value)
        results = [getattr(t, method)(a, b, value=v) for t, a, b, v in zip(tensors, firsts, seconds, values)]
        return self if inplace else tuple(results)

    run.__name__ = run.__qualname__ = f"_foreach_{method}"
    run.__doc__ = f"``{method}`` of every tensor of the list with its two counterparts."
    return run


def _lerp(inplace: bool):
    method = "lerp_" if inplace else "lerp"

    def run(self, tensors1, weight):
        op = f"_foreach_{method}"
        tensors = _check_list(op, self)
        ends, weights = _per_tensor(op, tensors, tensors1), _per_tensor(op, tensors, weight)
        results = [getattr(t, method)(e, w) for t, e, w in zip(tensors, ends, weights)]
        return self if inplace else tuple(results)

    run.__name__ = run.__qualname__ = f"_foreach_{method}"
    run.__doc__ = f"``{method}`` of every tensor of the list towards its counterpart."
    return run


def _foreach_norm(self, ord=2, dtype=None):
    """Each tensor's vector norm (0-d), as a tuple."""
    from ...linalg import vector_norm

    return tuple(vector_norm(t, ord, dtype=dtype) for t in _check_list("_foreach_norm", self))


def _foreach_max(self):
    """Each tensor's largest element (0-d), as a tuple."""
    return tuple(t.max() for t in _check_list("_foreach_max", self))


def _foreach_clone(self):
    return tuple(t.clone() for t in _check_list("_foreach_clone", self))


def _foreach_copy_(self, src, non_blocking: bool = False):
    tensors = _check_list("_foreach_copy_", self)
    for t, s in zip(tensors, _per_tensor("_foreach_copy_", tensors, src)):
        t.copy_(s, non_blocking=non_blocking)
    return self


def _foreach_zero_(self):
    for t in _check_list("_foreach_zero_", self):
        t.zero_()
    return self


for _inplace in (False, True):
    _suffix = "_" if _inplace else ""
    for _name in _UNARY:
        globals()[f"_foreach_{_name}{_suffix}"] = _unary(_name, _inplace)
    for _name in _BINARY:
        globals()[f"_foreach_{_name}{_suffix}"] = _binary(_name, _inplace)
    for _name in ("addcmul", "addcdiv"):
        globals()[f"_foreach_{_name}{_suffix}"] = _pointwise3(_name, _inplace)
    globals()[f"_foreach_lerp{_suffix}"] = _lerp(_inplace)
