"""Math ops built from primitives: interpolation, statistics, norms, log-sum-exp, fused matrix
products and einsum, all composite.

Each public function checks and normalizes its arguments (dims, dtypes, shapes), then calls the
op's decomposition through the dispatcher, so a backend may later replace it with a fused kernel.
"""
from __future__ import annotations

import math
import warnings
from collections import namedtuple

import numpy as np

from .. import dtypes as _dt
from ..shapes import broadcast_shapes, normalize_dims, numel_of
from ..tensor import Tensor
from ..views import diagonal, expand, permute, reshape, squeeze
from ._common import check_exact_dtype, check_same_device, is_number, on_common_device, write_inplace, write_out
from ._composite import composite
from ._numpy_names import dim_keywords
from .copying import to_dtype
from .elementwise import BINARY, COMPARE, UNARY, where
from .reductions import nanmean, nansum  # listed here so that `tp.nansum` exists (see __all__)
from ..autocast_hook import autocast_function
from .out_rehearsal import rehearse_out

__all__ = [
    "lerp", "nan_to_num", "clamp_min", "clamp_max", "rsub", "var", "std", "var_mean", "std_mean", "norm",
    "logsumexp", "count_nonzero", "addmm", "addmv", "outer", "ger", "einsum", "positive", "frac", "xlogy",
    "nansum", "nanmean", "sgn", "asinh", "acosh", "atanh", "arcsinh", "arccosh", "arctanh",
    "vdot", "inner",
]

var_mean_result = namedtuple("var_mean", ["var", "mean"])
std_mean_result = namedtuple("std_mean", ["std", "mean"])


def _check_tensor(op: str, input, name: str = "input") -> None:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(input).__name__}")


def _finish(result: Tensor, out, op: str = "out", *, exact_dtype: bool = False) -> Tensor:
    return write_out(op, out, result, exact_dtype=exact_dtype)


# --- elementwise composites ---------------------------------------------------------------------
@composite("lerp", differentiable=(0, 1, 2))
def _lerp(input: Tensor, end: Tensor, weight) -> Tensor:
    # PyTorch's formula: exact at both ends (weight 0 gives input, weight 1 gives end).
    diff = end - input
    if is_number(weight):
        return input + diff * weight if abs(weight) < 0.5 else end - diff * (1 - weight)
    return where(weight.abs() < 0.5, input + diff * weight, end - diff * (1 - weight))


def lerp(input, end, weight, *, out=None) -> Tensor:
    """``input + weight * (end - input)`` with broadcasting (floating dtypes)."""
    if out is not None:
        rehearse_out(lerp, locals())
    _check_tensor("lerp", input)
    _check_tensor("lerp", end, "end")
    if not (is_number(weight) or isinstance(weight, Tensor)):
        raise TypeError(f"lerp(): argument 'weight' must be Tensor or Number, not {type(weight).__name__}")
    input, end, weight = on_common_device("lerp", input, end, weight)
    tensors = [t for t in (input, end, weight) if isinstance(t, Tensor)]
    for t in tensors:
        if not t._dtype.is_floating_point:
            raise RuntimeError(f"lerp(): expected floating point tensors, but got {t._dtype.name}")
        if t._dtype is not input._dtype:
            which = "end" if t is end else "weight"
            raise RuntimeError(f"lerp(): expected dtype {input._dtype.name} for `{which}` but got dtype {t._dtype.name}")
    broadcast_shapes(*(t._shape for t in tensors), op="lerp")
    return _finish(_lerp(input, end, weight), out, "lerp")


def _lerp_(self, end, weight):
    return write_inplace("lerp_", self, lerp(self, end, weight))


def _largest_finite(dtype: _dt.dtype) -> float:
    if dtype is _dt.bfloat16:  # (2 - 2**-7) * 2**127, without needing ml_dtypes
        return 3.3895313892515355e38
    return float(np.finfo(_dt.numpy_dtype(dtype)).max)


@composite("nan_to_num")
def _nan_to_num(input: Tensor, nan: float, posinf: float, neginf: float) -> Tensor:
    if input._dtype.is_complex:
        # Each part on its own, as PyTorch: nan + inf j becomes nan_value + posinf j.
        from ..complex import complex_parts, from_parts

        return from_parts(*(_nan_to_num(part, nan, posinf, neginf) for part in complex_parts(input)))
    isinf = UNARY["isinf"](input)
    result = where(UNARY["isnan"](input), nan, input)
    result = where(isinf & (input > 0), posinf, result)
    return where(isinf & (input < 0), neginf, result)


def nan_to_num(input, nan=0.0, posinf=None, neginf=None, *, out=None) -> Tensor:
    """NaN, +inf and -inf replaced by ``nan``, ``posinf`` and ``neginf`` (by default the
    dtype's largest and lowest finite values)."""
    if out is not None:
        rehearse_out(nan_to_num, locals())
    _check_tensor("nan_to_num", input)
    if not (input._dtype.is_floating_point or input._dtype.is_complex):
        return _finish(input.clone(), out, "nan_to_num", exact_dtype=True)
    # A complex tensor's parts are replaced with its part dtype's limits.
    largest = _largest_finite(input._dtype.to_real())
    posinf = largest if posinf is None else float(posinf)
    neginf = -largest if neginf is None else float(neginf)
    return _finish(_nan_to_num(input, float(nan), posinf, neginf), out, "nan_to_num", exact_dtype=True)


def _nan_to_num_(self, nan=0.0, posinf=None, neginf=None):
    return write_inplace("nan_to_num_", self, nan_to_num(self, nan, posinf, neginf))


def clamp_min(input, min, *, out=None) -> Tensor:
    """``max(input, min)`` elementwise (NaN propagates)."""
    if out is not None:
        rehearse_out(clamp_min, locals())
    return BINARY["maximum"](input, min, out=out)


def clamp_max(input, max, *, out=None) -> Tensor:
    """``min(input, max)`` elementwise (NaN propagates)."""
    if out is not None:
        rehearse_out(clamp_max, locals())
    return BINARY["minimum"](input, max, out=out)


def rsub(input, other, *, alpha=1) -> Tensor:
    """``other - alpha * input``."""
    _check_tensor("rsub", input)
    scaled = input if alpha == 1 else BINARY["mul"](input, alpha)
    return BINARY["sub"](other, scaled)


def positive(input) -> Tensor:
    """``input`` itself (``+input``); bool tensors are rejected as in PyTorch."""
    _check_tensor("positive", input)
    if input._dtype is _dt.bool:
        raise TypeError("positive(): the `+` operator, on a bool tensor is not supported.")
    return input


def sgn(input, *, out=None) -> Tensor:
    """The sign of each element, -1, 0 or 1 (0 for NaN): :func:`sign` for real tensors, whose
    gradient is 0; ``z / |z|`` (0 at 0) for complex ones.

    >>> tp.sgn(tp.tensor([-2.0, 0.0, 3.0])).tolist()
    [-1.0, 0.0, 1.0]
    """
    if out is not None:
        rehearse_out(sgn, locals())
    _check_tensor("sgn", input)
    check_exact_dtype("sgn", out, input._dtype)
    if input._dtype.is_complex:
        from ..complex import complex_parts, from_parts

        magnitude = input.abs()
        divisor = where(magnitude == 0, 1.0, magnitude)
        re, im = complex_parts(input)
        return write_out("sgn", out, from_parts(re / divisor, im / divisor))
    return UNARY["sign"](input, out=out)


def _sgn_(self):
    _check_tensor("sgn_", self, "self")
    return self.sign_()


@composite("frac")
def _frac(input: Tensor) -> Tensor:
    return input - UNARY["trunc"](input)


def frac(input, *, out=None) -> Tensor:
    """The fractional part ``input - trunc(input)`` (sign of input kept)."""
    if out is not None:
        rehearse_out(frac, locals())
    _check_tensor("frac", input)
    if not input._dtype.is_floating_point:
        raise RuntimeError(f"frac(): not implemented for '{input._dtype.name}'")
    return _finish(_frac(input), out, "frac", exact_dtype=True)


# --- inverse hyperbolic functions -----------------------------------------------------------------
# Composites with explicit derivatives (so a backend may fuse them), over real formulas that are
# accurate near 0 and 1 and do not overflow for large arguments. A complex input takes the Complex
# key's fallback, which runs the decomposition: it computes the complex function from its parts
# (complex_math) with real ops, so the gradient follows PyTorch's convention by itself.
def _complex_unary(function, input: Tensor) -> Tensor:
    from ..complex import complex_parts, from_parts

    return from_parts(*function(*complex_parts(input)))


def _asinh_derivative(grad, args, output, kwargs, needs):
    (x,) = args
    return (grad * UNARY["rsqrt"](x * x + 1.0),)


@composite("asinh", derivative=_asinh_derivative)
def _asinh(input: Tensor) -> Tensor:
    from .. import complex_math as cm

    if input._dtype.is_complex:
        return _complex_unary(cm.casinh, input)
    return cm.real_asinh(input)


def _acosh_derivative(grad, args, output, kwargs, needs):
    (x,) = args
    # 1 / sqrt(x^2 - 1) as two roots: x^2 would overflow long before the result does.
    return (grad / (UNARY["sqrt"](x - 1.0) * UNARY["sqrt"](x + 1.0)),)


@composite("acosh", derivative=_acosh_derivative)
def _acosh(input: Tensor) -> Tensor:
    from .. import complex_math as cm

    if input._dtype.is_complex:
        return _complex_unary(cm.cacosh, input)
    return cm.real_acosh(input)


def _atanh_derivative(grad, args, output, kwargs, needs):
    (x,) = args
    return (grad / ((1.0 - x) * (1.0 + x)),)


@composite("atanh", derivative=_atanh_derivative)
def _atanh(input: Tensor) -> Tensor:
    from .. import complex_math as cm

    if input._dtype.is_complex:
        return _complex_unary(cm.catanh, input)
    return cm.real_atanh(input)


def _inverse_hyperbolic(name: str, composite_fn, doc: str):
    def function(input, *, out=None) -> Tensor:
        if out is not None:
            rehearse_out(function, locals())
        _check_tensor(name, input)
        x = input
        if not (x._dtype.is_floating_point or x._dtype.is_complex):
            x = to_dtype(x, _dt.get_default_dtype())  # integers and bool compute in the default float dtype
        return _finish(composite_fn(x), out, name)

    def inplace(self) -> Tensor:
        return write_inplace(name + "_", self, function(self))

    function.__name__ = function.__qualname__ = name
    function.__doc__ = doc
    inplace.__name__ = inplace.__qualname__ = name + "_"
    return function, inplace


asinh, _asinh_ = _inverse_hyperbolic("asinh", _asinh, "Elementwise inverse hyperbolic sine (see torch.asinh); real or complex input.")
acosh, _acosh_ = _inverse_hyperbolic("acosh", _acosh,
                                     "Elementwise inverse hyperbolic cosine (see torch.acosh): NaN below 1 for real input.")
atanh, _atanh_ = _inverse_hyperbolic("atanh", _atanh, "Elementwise inverse hyperbolic tangent (see torch.atanh): +-inf at +-1, "
                                     "NaN beyond, for real input.")
arcsinh, arccosh, arctanh = asinh, acosh, atanh


def _xlogy_derivative(grad, args, output, kwargs, needs):
    """PyTorch 2.13's: grad * log(other) for input, except 0 where input and other are both 0
    (input = 0 alone still gets log(other): d/dc of c * log(y) does not vanish at c = 0, which
    Dirichlet and Gamma log-densities rely on at concentration 1); grad * input / other for other
    (NaN where both are 0, as there)."""
    from ..autograd.views import sum_to_shape

    a, b = args
    not_both_zero = COMPARE["ne"](a, 0) | COMPARE["ne"](b, 0)
    ga = sum_to_shape(grad * _xlogy(to_dtype(not_both_zero, a._dtype), b), a._shape) if needs[0] else None
    gb = sum_to_shape(grad * a / b, b._shape) if needs[1] else None
    return (ga, gb)


@composite("xlogy", derivative=_xlogy_derivative, differentiable=(0, 1))
def _xlogy(input, other) -> Tensor:
    result = where(COMPARE["eq"](input, 0), 0.0, input * UNARY["log"](other))
    # NaN in other wins even where input is 0.
    return where(UNARY["isnan"](other), float("nan"), result)


def xlogy(input, other, *, out=None) -> Tensor:
    """``input * log(other)``, 0 where input is 0 (unless other is NaN)."""
    if out is not None:
        rehearse_out(xlogy, locals())
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError("xlogy(): expected at least one Tensor argument")
    input, other = on_common_device("xlogy", input, other)
    from .elementwise import _result_dtype

    dtype = _result_dtype(input, other)
    if not dtype.is_floating_point:
        dtype = _dt.get_default_dtype()
    from ..factories import tensor

    dev = (input if isinstance(input, Tensor) else other)._device
    a, b = (to_dtype(x, dtype) if isinstance(x, Tensor) else tensor(float(x), dtype=dtype, device=dev) for x in (input, other))
    check_same_device("xlogy", a, b)
    broadcast_shapes(a._shape, b._shape, op="xlogy")
    return _finish(_xlogy(a, b), out, "xlogy")


# --- statistics ---------------------------------------------------------------------------------
def _stat_args(op: str, input, dim, unbiased, keepdim, correction):
    """Normalize var/std arguments: returns (dims tuple, correction, whether no dim was given)."""
    _check_tensor(op, input)
    if isinstance(dim, bool):  # the legacy call var(input, unbiased)
        dim, unbiased = None, dim
    if not (input._dtype.is_floating_point or input._dtype.is_complex):
        raise RuntimeError(f"{op}(): std and var only support floating point and complex dtypes, but got {input._dtype.name}")
    if unbiased is not None and correction is not None:
        raise RuntimeError(f"{op}(): cannot pass both unbiased and correction")
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    dims = normalize_dims(op, dim, input.ndim) or tuple(range(input.ndim))
    if numel_of([input._shape[d] for d in dims]) - correction <= 0:
        warnings.warn(f"{op}(): degrees of freedom is <= 0. Correction should be strictly less than the reduction "
                      f"factor (input numel divided by output numel).", UserWarning, stacklevel=3)
    # PyTorch's gradient has a rule of its own for a reduction with no dim given, or of a 0-d
    # input (_var_derivative); an explicit dim, even every dim, takes the general formula.
    whole = dim is None or input.ndim == 0
    return dims, correction, whole


def _var_derivative(grad, args, output, kwargs, needs):
    """PyTorch's var_backward: ``(2 / dof) * grad * (input - mean)`` with ``dof = N - correction``
    (infinite where dof is 0; negative dof gives finite values, as PyTorch's formula does). Over
    every element with no dim given, or of a 0-d input, PyTorch instead gives ``grad * inf`` where
    dof <= 0, NaN where the input equals its mean (NaN inputs included: NaN is not its mean), and
    so does this (issue 16). The mean is an argument, not a gradient edge: the formula is the
    whole derivative, and its ops on the saved mean give the second derivative's coupling."""
    input, mean, dims, correction, keepdim, whole = args
    count = numel_of([input._shape[d] for d in dims]) if input._shape else 1
    dof = count - correction
    if input._shape and not keepdim:
        grad = grad.reshape(mean._shape)
    if whole and dof <= 0:
        return (grad * where(COMPARE["eq"](input, mean), float("nan"), float("inf")),)
    scale = 2.0 / dof if dof else math.inf
    return (scale * grad * (input - mean),)


@composite("var", derivative=_var_derivative)
def _var(input: Tensor, mean: Tensor, dims: tuple, correction, keepdim: bool, whole: bool) -> Tensor:
    """The variance of a real floating ``input`` over ``dims`` around its ``mean`` (kept dims);
    ``whole``: no dim was given (the derivative's rule for that case differs)."""
    from .reductions import sum as _sum

    count = numel_of([input._shape[d] for d in dims]) if input._shape else 1
    centered = input - mean
    squares = _sum(centered * centered, dims, keepdim=keepdim) if input._shape else centered * centered
    return squares / max(0, count - correction)


def _complex_var(input: Tensor, mean: Tensor, dims: tuple, correction, keepdim: bool) -> Tensor:
    """The variance of complex values is real: the mean of |z - mean|^2 (PyTorch's), the sum of
    the parts' squares, which keeps the gradient on the real graph (autograd through the parts)."""
    from ..complex import complex_parts
    from .reductions import sum as _sum

    count = numel_of([input._shape[d] for d in dims]) if input._shape else 1
    re, im = complex_parts(input - mean)
    magnitude2 = re * re + im * im
    squares = _sum(magnitude2, dims, keepdim=keepdim) if input._shape else magnitude2
    return squares / max(0, count - correction)


@composite("var_mean")
def _var_mean(input: Tensor, dims: tuple, correction, keepdim: bool, whole: bool):
    from .reductions import mean as _mean

    if input._dtype in (_dt.float16, _dt.bfloat16):
        # Squares of 16-bit values overflow long before their variance does: compute in float32
        # and round once, as PyTorch accumulates.
        var, mean = _var_mean(to_dtype(input, _dt.float32), dims, correction, keepdim, whole)
        return to_dtype(var, input._dtype), to_dtype(mean, input._dtype)

    mean = _mean(input, dims, keepdim=True) if input._shape else input
    if input._dtype.is_complex:
        var = _complex_var(input, mean, dims, correction, keepdim)
    else:
        var = _var(input, mean, dims, correction, keepdim, whole)
    if not keepdim and input._shape:
        mean = squeeze(mean, dims)
    return var, mean


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None, axis=None, keepdims=None) -> Tensor:
    """Variance over ``dim`` with ``correction`` (1 by default: Bessel's; ``unbiased=False`` is
    ``correction=0``).

    >>> tp.var(tp.tensor([1.0, 2.0, 3.0])).item()
    1.0
    """
    if out is not None:
        rehearse_out(var, locals())
    if axis is not None or keepdims is not None:
        dim, keepdim = dim_keywords("var", dim, axis, keepdim, keepdims)
    dims, correction, whole = _stat_args("var", input, dim, unbiased, keepdim, correction)
    return _finish(_var_mean(input, dims, correction, bool(keepdim), whole)[0], out, "var")


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None, axis=None, keepdims=None) -> Tensor:
    """Standard deviation: the square root of :func:`var` (same arguments)."""
    if out is not None:
        rehearse_out(std, locals())
    if axis is not None or keepdims is not None:
        dim, keepdim = dim_keywords("std", dim, axis, keepdim, keepdims)
    dims, correction, whole = _stat_args("std", input, dim, unbiased, keepdim, correction)
    # The square root's gradient at a variance of 0 (equal values) is 0, as PyTorch's, not NaN.
    variance = _var_mean(input, dims, correction, bool(keepdim), whole)[0]
    return _finish(_root_at_zero_safe(variance, 2.0), out, "std")


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None, keepdims=None):
    """(variance, mean) over ``dim`` in one pass of arguments (see :func:`var`)."""
    if axis is not None or keepdims is not None:
        dim, keepdim = dim_keywords("var_mean", dim, axis, keepdim, keepdims)
    dims, correction, whole = _stat_args("var_mean", input, dim, unbiased, keepdim, correction)
    return var_mean_result(*_var_mean(input, dims, correction, bool(keepdim), whole))


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None, keepdims=None):
    """(standard deviation, mean) over ``dim`` (see :func:`var`)."""
    if axis is not None or keepdims is not None:
        dim, keepdim = dim_keywords("std_mean", dim, axis, keepdim, keepdims)
    dims, correction, whole = _stat_args("std_mean", input, dim, unbiased, keepdim, correction)
    variance, mean = _var_mean(input, dims, correction, bool(keepdim), whole)
    return std_mean_result(_root_at_zero_safe(variance, 2.0), mean)


@composite("norm")
def _norm(input: Tensor, p, dims: tuple, keepdim: bool) -> Tensor:
    from .reductions import amax, amin
    from .reductions import sum as _sum

    if not input._shape:
        dims = None
    magnitude = UNARY["abs"](input)
    if p == math.inf:
        return amax(magnitude, dims, keepdim) if dims is not None else magnitude
    if p == -math.inf:
        return amin(magnitude, dims, keepdim) if dims is not None else magnitude
    if p == 0:
        return _sum(to_dtype(COMPARE["ne"](input, 0), magnitude._dtype), dims, keepdim)
    if p == 1:
        return _sum(magnitude, dims, keepdim)
    if p == 2:
        if input._dtype.is_complex:
            # |z|^2 as the parts' squares: no square root inside, so the gradient at 0 is 0.
            from ..complex import complex_parts

            re, im = complex_parts(input)
            return _root_at_zero_safe(_sum(re * re + im * im, dims, keepdim), 2.0)
        return _root_at_zero_safe(_sum(input * input, dims, keepdim), 2.0)
    return _root_at_zero_safe(_sum(BINARY["pow"](magnitude, float(p)), dims, keepdim), float(p))


def _root_at_zero_safe(total: Tensor, p: float) -> Tensor:
    """``total ** (1 / p)`` whose gradient is 0, not NaN, where ``total`` is 0 (the norm of a zero
    vector, whose root has an infinite slope): PyTorch's subgradient there."""
    zero = COMPARE["eq"](total, 0)
    safe = where(zero, 1.0, total)
    root = UNARY["sqrt"](safe) if p == 2 else BINARY["pow"](safe, 1.0 / p)
    return where(zero, 0.0, root)


def norm(input, p="fro", dim=None, keepdim=False, dtype=None, *, out=None) -> Tensor:
    """The vector p-norm over ``dim`` (all elements when None): p = 2 or "fro" (Euclidean /
    Frobenius), 1, inf, -inf, 0 (count of non-zeros) or any other number.

    ``out`` is keyword-only here (PyTorch's function also takes it fifth, before ``dtype``; its
    Tensor method, which is this same function in tensorplug, takes ``dtype`` fifth)."""
    if out is not None:
        rehearse_out(norm, locals())
    if out is not None:
        # The norm's own dtype only: dtype= when given, else the input's (real) dtype.
        return write_out("norm", out, norm(input, p, dim, keepdim, dtype), exact_dtype=True)
    _check_tensor("norm", input)
    x = input if dtype is None else to_dtype(input, dtype)
    if not (x._dtype.is_floating_point or x._dtype.is_complex):
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. Got {x._dtype.name} instead.")
    if p == "fro" or p is None:
        p = 2
    elif p == "nuc":  # the sum of singular values: tp.linalg's, over the two dims (the last two by default)
        from ...linalg import matrix_norm

        return matrix_norm(x, "nuc", (-2, -1) if dim is None else dim, bool(keepdim))
    elif isinstance(p, str) or not is_number(p):
        raise RuntimeError(f"norm(): unsupported p {p!r}; expected a number, inf, -inf or 'fro'")
    dims = normalize_dims("norm", dim, x.ndim) or tuple(range(x.ndim))
    if x.numel() == 0 and p < 0:
        raise RuntimeError(f"norm(): cannot compute the {p} norm of an empty tensor because the operation does not have an identity")
    return _norm(x, p, dims, bool(keepdim))


@composite("logsumexp")
def _logsumexp(input: Tensor, dims: tuple, keepdim: bool) -> Tensor:
    from .reductions import amax
    from .reductions import sum as _sum

    if not input._shape:
        # One element: the shifted formula below gives it back (and a gradient of 1) where
        # log(exp(x)) would overflow: -1e300 stays -1e300, as in PyTorch, not -inf.
        return reshape(_logsumexp(reshape(input, (1,)), (0,), True), ())
    if input.numel() == 0:
        return UNARY["log"](_sum(UNARY["exp"](input), dims, keepdim))
    # Shift by the (constant, detached) maximum so that exp never overflows; an infinite maximum
    # is not subtracted (inf - inf would be NaN).
    shift = amax(input.detach(), dims, keepdim=True)
    shift = where(UNARY["isinf"](shift), 0.0, shift)
    total = UNARY["log"](_sum(UNARY["exp"](input - shift), dims, keepdim=True)) + shift
    return total if keepdim else squeeze(total, dims)


def logsumexp(input, dim=None, keepdim=False, *, out=None, axis=None, keepdims=None) -> Tensor:
    """``log(sum(exp(input), dim))``, computed without overflow."""
    if out is not None:
        rehearse_out(logsumexp, locals())
    if axis is not None or keepdims is not None:
        dim, keepdim = dim_keywords("logsumexp", dim, axis, keepdim, keepdims)
    _check_tensor("logsumexp", input)
    x = input if input._dtype.is_floating_point else to_dtype(input, _dt.get_default_dtype())
    dims = normalize_dims("logsumexp", dim, x.ndim) or tuple(range(x.ndim))
    return _finish(_logsumexp(x, dims, bool(keepdim)), out, "logsumexp")


def count_nonzero(input, dim=None, *, axis=None) -> Tensor:
    """How many elements are non-zero, over ``dim`` (int64)."""
    from .reductions import sum as _sum

    if axis is not None:
        dim, _ = dim_keywords("count_nonzero", dim, axis, False, None)
    _check_tensor("count_nonzero", input)
    dims = normalize_dims("count_nonzero", dim, input.ndim) or tuple(range(input.ndim))
    return _sum(COMPARE["ne"](input, 0), dims if input._shape else None)


# --- fused matrix products --------------------------------------------------------------------------
def _check_matrices(op: str, *tensors) -> None:
    for i, t in enumerate(tensors):
        _check_tensor(op, t, ("input", "mat1", "mat2")[i] if op == "addmm" else ("input", "mat", "vec")[i])
    check_same_device(op, *tensors)
    for t in tensors[1:]:
        if t._dtype is not tensors[0]._dtype:
            raise RuntimeError(f"{op}(): expected all tensors to have the same dtype, but got {tensors[0]._dtype.name} and {t._dtype.name}")


def _ignored(product: Tensor) -> Tensor:
    """Zeros in place of a product scaled by alpha = 0: as in PyTorch, its NaN and inf do not
    propagate (0 * inf would be NaN)."""
    from ..factories import ones_like

    return where(ones_like(product, dtype=_dt.bool), 0.0, product)


def scaled_sum(input: Tensor, product: Tensor, beta, alpha) -> Tensor:
    """``beta * input + alpha * product`` by PyTorch's rules for the fused products (addmm,
    addmv, baddbmm, addbmm, addr): alpha = 0 ignores the product and beta = 0 the input, their
    NaN and inf included."""
    if alpha == 0:
        product = _ignored(product)
    elif alpha != 1:
        product = product * alpha
    if beta == 0:
        return product
    return product + (input if beta == 1 else input * beta)


def _times(t: Tensor, factor) -> Tensor:
    # PyTorch's maybe_multiply: a factor of 1 is skipped, any other (0 too) multiplies, so an
    # inf in the product's gradient becomes NaN under alpha = 0 as there.
    return t if factor == 1 else t * factor


def _addmm_derivative(grad, args, output, kwargs, needs):
    """PyTorch's formulas: grad * beta for the input (summed to its shape), the products'
    gradients scaled by alpha after the product."""
    from ..autograd.views import sum_to_shape
    from .linalg import matmul

    input, mat1, mat2, beta, alpha = args
    return (
        sum_to_shape(_times(grad, beta), input._shape) if needs[0] else None,
        _times(matmul(grad, mat2.transpose(0, 1)), alpha) if needs[1] else None,
        _times(matmul(mat1.transpose(0, 1), grad), alpha) if needs[2] else None,
    )


@composite("addmm", derivative=_addmm_derivative, differentiable=(0, 1, 2))
def _addmm(input: Tensor, mat1: Tensor, mat2: Tensor, beta, alpha) -> Tensor:
    from .linalg import matmul

    return scaled_sum(input, matmul(mat1, mat2), beta, alpha)


@autocast_function("addmm")
def addmm(input, mat1, mat2, out_dtype=None, *, beta=1, alpha=1, out=None) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)``, input broadcast to the product's shape;
    ``out_dtype`` as :func:`mm`'s (``input`` may then have the factors' dtype or ``out_dtype``)."""
    if out is not None:
        rehearse_out(addmm, locals())
    if out_dtype is not None:
        from .widened_products import widen_for_out_dtype

        return addmm(*widen_for_out_dtype("addmm", out_dtype, mat1, mat2, input), beta=beta, alpha=alpha, out=out)
    _check_matrices("addmm", input, mat1, mat2)
    if mat1.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError(f"addmm(): mat1 must be a matrix, got {mat1.ndim}-D tensor; mat2 must be a matrix, got {mat2.ndim}-D tensor")
    if mat1._shape[1] != mat2._shape[0]:
        raise RuntimeError(
            f"addmm(): mat1 and mat2 shapes cannot be multiplied ({mat1._shape[0]}x{mat1._shape[1]} and "
            f"{mat2._shape[0]}x{mat2._shape[1]})"
        )
    shape = (mat1._shape[0], mat2._shape[1])
    if broadcast_shapes(input._shape, shape, op="addmm") != shape:
        raise RuntimeError(f"addmm(): input of shape {list(input._shape)} cannot be broadcast to the product's shape {list(shape)}")
    return _finish(_addmm(input, mat1, mat2, beta, alpha), out, "addmm", exact_dtype=True)


def _addmv_derivative(grad, args, output, kwargs, needs):
    """PyTorch's formulas, as for addmm: the outer product with vec, mat transposed times grad."""
    from ..autograd.views import sum_to_shape
    from .linalg import matmul

    input, mat, vec, beta, alpha = args
    return (
        sum_to_shape(_times(grad, beta), input._shape) if needs[0] else None,
        _times(grad.unsqueeze(1) * vec.unsqueeze(0), alpha) if needs[1] else None,
        _times(matmul(mat.transpose(0, 1), grad), alpha) if needs[2] else None,
    )


@composite("addmv", derivative=_addmv_derivative, differentiable=(0, 1, 2))
def _addmv(input: Tensor, mat: Tensor, vec: Tensor, beta, alpha) -> Tensor:
    from .linalg import matmul

    return scaled_sum(input, matmul(mat, vec), beta, alpha)


@autocast_function("addmv")
def addmv(input, mat, vec, *, beta=1, alpha=1, out=None) -> Tensor:
    """``beta * input + alpha * (mat @ vec)``."""
    if out is not None:
        rehearse_out(addmv, locals())
    _check_matrices("addmv", input, mat, vec)
    if mat.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"addmv(): vector + matrix @ vector expected, got {input.ndim}, {mat.ndim}, {vec.ndim}")
    if mat._shape[1] != vec._shape[0]:
        raise RuntimeError(f"addmv(): size mismatch, got input ({input.numel()}), mat ({mat._shape[0]}x{mat._shape[1]}), vec ({vec._shape[0]})")
    shape = (mat._shape[0],)
    if broadcast_shapes(input._shape, shape, op="addmv") != shape:
        raise RuntimeError(f"addmv(): input of shape {list(input._shape)} cannot be broadcast to the product's shape {list(shape)}")
    return _finish(_addmv(input, mat, vec, beta, alpha), out, "addmv", exact_dtype=True)


def outer(input, vec2, *, out=None) -> Tensor:
    """The outer product of two 1-D tensors: ``input[i] * vec2[j]``."""
    if out is not None:
        rehearse_out(outer, locals())
    _check_tensor("outer", input)
    _check_tensor("outer", vec2, "vec2")
    if input.ndim != 1 or vec2.ndim != 1:
        raise RuntimeError(f"outer(): expected 1-D tensors, got {input.ndim}-D and {vec2.ndim}-D")
    return BINARY["mul"](reshape(input, (-1, 1)), vec2, out=out)


ger = outer


def vdot(input, other, *, out=None) -> Tensor:
    """``sum(conj(input) * other)`` of two 1-D tensors: the dot product that conjugates its
    first argument (the same as ``dot`` for real tensors)."""
    if out is not None:
        rehearse_out(vdot, locals())
    from ..complex import conj
    from .linalg import dot

    _check_tensor("vdot", input)
    _check_tensor("vdot", other, "other")
    if isinstance(input, Tensor) and isinstance(other, Tensor) and input._dtype is not other._dtype:
        raise RuntimeError(f"vdot(): expected both vectors to have same dtype, but found {input._dtype.name} and "
                           f"{other._dtype.name}")
    return _finish(dot(conj(input), other), out, "vdot")


def inner(input, other, *, out=None) -> Tensor:
    """The sum of products over the last dim of both tensors (no conjugate): the result has shape
    ``input.shape[:-1] + other.shape[:-1]``; a 0-d operand multiplies."""
    if out is not None:
        rehearse_out(inner, locals())
    from .linalg import matmul

    _check_tensor("inner", input)
    _check_tensor("inner", other, "other")
    check_same_device("inner", input, other)
    if input._dtype is not other._dtype:
        raise RuntimeError(f"inner(): both inputs should have same dtype, got {input._dtype.name} and {other._dtype.name}")
    if input.ndim == 0 or other.ndim == 0:
        return BINARY["mul"](input, other, out=out)
    k = input._shape[-1]
    if other._shape[-1] != k:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(input._shape)} and {list(other._shape)}")
    rows = matmul(reshape(input, (-1, k)), reshape(other, (-1, k)).transpose(0, 1))
    return _finish(reshape(rows, input._shape[:-1] + other._shape[:-1]), out, "inner")


# --- einsum ---------------------------------------------------------------------------------------
# Labels for the dims an ellipsis stands for: characters that cannot appear in an equation.
_ELLIPSIS_LABELS = "0123456789!#$%&*+/:;<=?@^_|~"


def _parse_einsum(equation: str, operands: tuple):
    """Per operand, the labels of its dims (ellipsis expanded), and the output labels."""
    equation = equation.replace(" ", "")
    if "->" in equation:
        inputs, output = equation.split("->")
        explicit = True
    else:
        inputs, output, explicit = equation, "", False
    terms = inputs.split(",")
    if len(terms) != len(operands):
        raise ValueError(f"einsum(): {len(terms)} operands in the equation {equation!r} but {len(operands)} were given")
    ellipsis_dims = 0
    labels = []
    for i, (term, t) in enumerate(zip(terms, operands)):
        letters = term.replace("...", "")
        if not all(c.isalpha() for c in letters) or term.count("...") > 1:
            raise ValueError(f"einsum(): invalid subscript {term!r} for operand {i}: use letters and at most one '...'")
        if "..." in term:
            k = t.ndim - len(letters)
            if k < 0:
                raise RuntimeError(f"einsum(): the subscript {term!r} has more dims than operand {i} ({t.ndim}-D)")
            ellipsis_dims = max(ellipsis_dims, k)
        elif len(letters) != t.ndim:
            raise RuntimeError(
                f"einsum(): the number of subscripts in {term!r} ({len(letters)}) does not match the number of "
                f"dimensions ({t.ndim}) of operand {i}"
            )
    if ellipsis_dims > len(_ELLIPSIS_LABELS):
        raise RuntimeError(f"einsum(): an ellipsis may stand for at most {len(_ELLIPSIS_LABELS)} dims")
    for term, t in zip(terms, operands):
        letters = term.replace("...", "")
        k = t.ndim - len(letters)
        # Ellipsis dims align on the right, as in broadcasting.
        stand_in = _ELLIPSIS_LABELS[ellipsis_dims - k:ellipsis_dims] if "..." in term else ""
        labels.append(term.replace("...", stand_in))
    all_ellipsis = _ELLIPSIS_LABELS[:ellipsis_dims]
    if explicit:
        # Ellipsis dims absent from an explicit output are summed.
        output = output.replace("...", all_ellipsis)
        if not all(c.isalpha() or c in all_ellipsis for c in output) or len(set(output)) != len(output):
            raise ValueError(f"einsum(): invalid output subscript in {equation!r}")
        present = set("".join(labels))
        for c in output:
            if c not in present:
                raise ValueError(f"einsum(): output subscript {c} does not appear in the equation for any input operand")
    else:
        counts = {}
        for term in labels:
            for c in term:
                counts[c] = counts.get(c, 0) + 1
        output = all_ellipsis + "".join(sorted(c for c, n in counts.items() if n == 1 and c.isalpha()))
    return labels, output


def _einsum_diagonals(t: Tensor, labels: str):
    """Take diagonals for labels repeated within one operand: 'ii' -> 'i'."""
    while len(set(labels)) != len(labels):
        for i, c in enumerate(labels):
            j = labels.find(c, i + 1)
            if j >= 0:
                if t._shape[i] != t._shape[j]:
                    raise RuntimeError(
                        f"einsum(): subscript {c} is repeated for operand but the sizes don't match, "
                        f"{t._shape[i]} != {t._shape[j]}"
                    )
                t = diagonal(t, 0, i, j)
                labels = labels[:i] + labels[i + 1:j] + labels[j + 1:] + c
                break
    return t, labels


def _sum_labels(t: Tensor, labels: str, drop: set):
    from .reductions import sum as _sum

    dims = tuple(i for i, c in enumerate(labels) if c in drop)
    if not dims:
        return t, labels
    return _sum(t, dims), "".join(c for c in labels if c not in drop)


def _contract(a: Tensor, la: str, b: Tensor, lb: str, keep: set):
    """Multiply two operands and sum the labels they share that are not kept, via matmul."""
    from .linalg import matmul

    size = {}
    for t, labels in ((a, la), (b, lb)):
        for c, n in zip(labels, t._shape):
            if size.get(c, 1) != 1 and n not in (1, size[c]):
                raise RuntimeError(f"einsum(): operands do not broadcast with remapped shapes: subscript {c} has sizes {size[c]} and {n}")
            size[c] = n if size.get(c, 1) == 1 else size[c]
    batch = [c for c in la if c in lb and c in keep]
    summed = [c for c in la if c in lb and c not in keep]
    only_a = [c for c in la if c not in lb]
    only_b = [c for c in lb if c not in la]
    a = expand(permute(a, [la.index(c) for c in batch + only_a + summed]), tuple(size[c] for c in batch + only_a + summed))
    b = expand(permute(b, [lb.index(c) for c in batch + summed + only_b]), tuple(size[c] for c in batch + summed + only_b))
    nb = numel_of([size[c] for c in batch])
    m, k, n = numel_of([size[c] for c in only_a]), numel_of([size[c] for c in summed]), numel_of([size[c] for c in only_b])
    product = matmul(reshape(a, (nb, m, k)), reshape(b, (nb, k, n)))
    labels = "".join(batch + only_a + only_b)
    return reshape(product, tuple(size[c] for c in labels)), labels


@composite("einsum")
def _einsum(equation: str, operands: tuple) -> Tensor:
    labels, output = _parse_einsum(equation, operands)
    terms = []
    for t, la in zip(operands, labels):
        terms.append(_einsum_diagonals(t, la))
    # Sum each label that no other operand and not the output needs, then contract left to right.
    for i, (t, la) in enumerate(terms):
        elsewhere = set(output).union(*(set(l) for j, (_, l) in enumerate(terms) if j != i))
        terms[i] = _sum_labels(t, la, set(la) - elsewhere)
    result, lr = terms[0]
    for i in range(1, len(terms)):
        t, lt = terms[i]
        keep = set(output).union(*(set(l) for _, l in terms[i + 1:]))
        result, lr = _contract(result, lr, t, lt, keep)
    result, lr = _sum_labels(result, lr, set(lr) - set(output))
    return permute(result, [lr.index(c) for c in output]) if lr != output else result


def _sublists_as_equation(arguments: tuple) -> tuple:
    """PyTorch's sublist form ``einsum(a, [0, 1], b, [1, 2], [0, 2])`` as ``("ab,bc->ac", (a, b))``:
    subscripts are ints in [0, 52) or ``...``; a trailing list without an operand is the output."""
    def letters(sublist) -> str:
        if not isinstance(sublist, (list, tuple)):
            raise TypeError(f"einsum(): expected a list of subscripts after each operand, got {type(sublist).__name__}")
        out = []
        for item in sublist:
            if item is Ellipsis:
                out.append("...")
            elif isinstance(item, int) and not isinstance(item, bool) and 0 <= item < 52:
                # PyTorch's letters (A-Z, then a-z), whose order decides an implicit output's
                out.append(chr(ord("A") + item) if item < 26 else chr(ord("a") + item - 26))
            else:
                raise ValueError(f"einsum(): subscript in subscript list is not within the valid range [0, 52), got {item!r}")
        return "".join(out)

    operands, inputs = arguments[0:len(arguments) - len(arguments) % 2:2], arguments[1::2]
    equation = ",".join(letters(sublist) for sublist in inputs[:len(operands)])
    if len(arguments) % 2:
        equation += "->" + letters(arguments[-1])
    return equation, operands


def einsum(equation, *operands) -> Tensor:
    """Einstein summation: ``einsum("bij,bjk->bik", a, b)`` is a batched matmul. Supports
    repeated subscripts (diagonals), ``...``, implicit output and PyTorch's sublist form
    (``einsum(a, [0, 1], b, [1, 2], [0, 2])``); contracts operands left to right through matmul.
    """
    if isinstance(equation, Tensor):
        equation, operands = _sublists_as_equation((equation,) + operands)
    if not isinstance(equation, str):
        raise TypeError(f"einsum(): the equation must be a str, not {type(equation).__name__}")
    if len(operands) == 1 and isinstance(operands[0], (tuple, list)):
        operands = tuple(operands[0])
    if not operands:
        raise ValueError("einsum(): must provide at least one operand")
    for i, t in enumerate(operands):
        _check_tensor("einsum", t, f"operands[{i}]")
    check_same_device("einsum", *operands)
    dtype = operands[0]._dtype
    for t in operands[1:]:
        dtype = _dt.promote_types(dtype, t._dtype)
    operands = tuple(to_dtype(t, dtype) for t in operands)
    _parse_einsum(equation, operands)  # raises for a bad equation before anything runs
    return _einsum(equation, operands)


def _xlogy_(self, other):
    return write_inplace("xlogy_", self, xlogy(self, other))


def _frac_(self):
    return write_inplace("frac_", self, frac(self))


def _clamp_min_(self, min):
    return write_inplace("clamp_min_", self, clamp_min(self, min))


def _clamp_max_(self, max):
    return write_inplace("clamp_max_", self, clamp_max(self, max))


def _addmm_(self, mat1, mat2, *, beta=1, alpha=1):
    return write_inplace("addmm_", self, addmm(self, mat1, mat2, beta=beta, alpha=alpha))


def _addmv_(self, mat, vec, *, beta=1, alpha=1):
    return write_inplace("addmv_", self, addmv(self, mat, vec, beta=beta, alpha=alpha))


#: Tensor methods this module provides: name -> function (attached by frontend.methods).
TENSOR_METHODS: dict = {
    "lerp": lerp,
    "lerp_": _lerp_,
    "nan_to_num": nan_to_num,
    "nan_to_num_": _nan_to_num_,
    "clamp_min": clamp_min,
    "clamp_max": clamp_max,
    "clamp_min_": _clamp_min_,
    "clamp_max_": _clamp_max_,
    "var": var,
    "std": std,
    "norm": norm,
    "logsumexp": logsumexp,
    "count_nonzero": count_nonzero,
    "addmm": addmm,
    "addmm_": _addmm_,
    "addmv": addmv,
    "addmv_": _addmv_,
    "outer": outer,
    "vdot": vdot,
    "inner": inner,
    "ger": ger,
    "positive": positive,
    "frac": frac,
    "frac_": _frac_,
    "sgn": sgn,
    "sgn_": _sgn_,
    "xlogy": xlogy,
    "xlogy_": _xlogy_,
    "asinh": asinh,
    "asinh_": _asinh_,
    "arcsinh": asinh,
    "arcsinh_": _asinh_,
    "acosh": acosh,
    "acosh_": _acosh_,
    "arccosh": acosh,
    "arccosh_": _acosh_,
    "atanh": atanh,
    "atanh_": _atanh_,
    "arctanh": atanh,
    "arctanh_": _atanh_,
}
