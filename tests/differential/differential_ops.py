"""The op table of the differential tests: for each op, how to draw its arguments and how to
call it in either library (through ``L.lib`` / ``L.F``), and which variants apply (out=,
in-place, gradients).

Adding an op is one :class:`OpSpec` line; ``cases`` is a function of the dtypes the backend
under test declares, returning a hypothesis strategy of :class:`Case`.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Callable

from hypothesis import strategies as st

from differential_harness import (
    ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, NONEMPTY_SHAPES, SHAPES, Case, TensorArg, broadcastable_shape, scalars,
    tensor_args,
)


@dataclass
class OpSpec:
    name: str
    cases: Callable
    call: Callable
    out: bool = False  # accepts out=
    inplace: Callable | None = None  # f(L, self, *rest, **kwargs): the in-place form, on args[0]
    grad: bool = False  # compare gradients of floating inputs
    tol: tuple | None = None  # (rtol, atol) instead of the per-dtype default


def _pick(dtypes, allowed):
    chosen = [d for d in allowed if d in dtypes]
    return st.sampled_from(chosen)


# --- case strategies ----------------------------------------------------------------------------
def unary(allowed=ALL_DTYPES, finite=False, low=None, high=None, shapes=SHAPES):
    def cases(dtypes):
        @st.composite
        def draw_case(draw):
            dtype = draw(_pick(dtypes, allowed))
            shape = draw(shapes)
            return Case((draw(tensor_args(dtype, shape, finite=finite, low=low, high=high)),))

        return draw_case()

    return cases


def binary(allowed=ALL_DTYPES, other_allowed=None, scalar=True, kwargs=None):
    """A tensor and (a tensor of a broadcastable shape, maybe another dtype, or a number)."""

    def cases(dtypes):
        @st.composite
        def draw_case(draw):
            dtype = draw(_pick(dtypes, allowed))
            shape = draw(SHAPES)
            x = draw(tensor_args(dtype, shape))
            if scalar and draw(st.integers(0, 2)) == 0:
                y = draw(scalars())
            else:
                odtype = dtype if draw(st.booleans()) else draw(_pick(dtypes, other_allowed or allowed))
                y = draw(tensor_args(odtype, draw(broadcastable_shape(shape))))
            if draw(st.integers(0, 5)) == 0 and isinstance(y, TensorArg):
                x, y = y, x
            kw = draw(kwargs) if kwargs is not None else {}
            return Case((x, y), kw)

        return draw_case()

    return cases


def reduction(allowed=ALL_DTYPES, keepdim=True, dim_required=False, multi=True, extra=None):
    def cases(dtypes):
        @st.composite
        def draw_case(draw):
            dtype = draw(_pick(dtypes, allowed))
            shape = draw(SHAPES)
            x = draw(tensor_args(dtype, shape))
            kw = {}
            n = max(len(shape), 1)
            choices = [st.integers(-n, n - 1)]
            if not dim_required:
                choices.append(st.none())
            if multi and len(shape) >= 2:
                choices.append(st.lists(st.integers(0, len(shape) - 1), min_size=1, max_size=2, unique=True).map(tuple))
            dim = draw(st.one_of(*choices))
            if dim is not None or dim_required:
                kw["dim"] = dim
                if keepdim:
                    kw["keepdim"] = draw(st.booleans())
            if extra is not None:
                kw.update(draw(extra))
            return Case((x,), kw)

        return draw_case()

    return cases


def matrices(kind: str, allowed=("float32", "float64")):
    """Operands of addmm / addmv / matmul family, usually compatible, sometimes not."""

    def cases(dtypes):
        @st.composite
        def draw_case(draw):
            dtype = draw(_pick(dtypes, allowed))
            m, k, n = (draw(st.integers(0, 3)) for _ in range(3))
            k2 = k if draw(st.integers(0, 9)) else k + 1
            if kind == "mm":
                return Case((draw(tensor_args(dtype, (m, k))), draw(tensor_args(dtype, (k2, n)))))
            if kind == "mv":
                return Case((draw(tensor_args(dtype, (m, k))), draw(tensor_args(dtype, (k2,)))))
            if kind == "matmul":
                batch = draw(st.sampled_from([(), (2,), (1,)]))
                a_shape = draw(st.sampled_from([(k,), batch + (m, k)]))
                b_shape = draw(st.sampled_from([(k2,), batch + (k2, n)]))
                return Case((draw(tensor_args(dtype, a_shape)), draw(tensor_args(dtype, b_shape))))
            alpha = draw(st.sampled_from([1, 0, 2.0, 0.5]))
            beta = draw(st.sampled_from([1, 0, 0.5]))
            if kind == "addmm":
                bias_shape = draw(st.sampled_from([(m, n), (n,), (1, n), ()]))
                args = (draw(tensor_args(dtype, bias_shape)), draw(tensor_args(dtype, (m, k))), draw(tensor_args(dtype, (k2, n))))
            else:
                bias_shape = draw(st.sampled_from([(m,), (1,), ()]))
                args = (draw(tensor_args(dtype, bias_shape)), draw(tensor_args(dtype, (m, k))), draw(tensor_args(dtype, (k2,))))
            return Case(args, {"alpha": alpha, "beta": beta})

        return draw_case()

    return cases


def _index_values(size: int, count_shape: tuple, negative=True):
    # Mostly valid indices; negative ones and out-of-range ones probe validation.
    low = -size if negative else 0
    return tensor_args("int64", count_shape, layout="contiguous", low=min(low - 1, -1), high=size)


def gather_like(kind: str, allowed=("float32", "int64", "float64")):
    def cases(dtypes):
        @st.composite
        def draw_case(draw):
            dtype = draw(_pick(dtypes, allowed))
            shape = draw(NONEMPTY_SHAPES)
            d = draw(st.integers(-len(shape), len(shape) - 1))
            x = draw(tensor_args(dtype, shape))
            size = shape[d]
            if kind in ("index_select", "index_add"):
                count = draw(st.integers(0, 4))
                index = draw(_index_values(size, (count,)))
                if kind == "index_select":
                    return Case((x, d, index))
                src_shape = list(shape)
                src_shape[d] = count
                return Case((x, d, index, draw(tensor_args(dtype, tuple(src_shape)))))
            index_shape = tuple(draw(st.integers(0, n + (1 if draw(st.integers(0, 9)) == 0 else 0))) for n in shape)
            index = draw(_index_values(size, index_shape))
            if kind == "gather":
                return Case((x, d, index))
            src_shape = tuple(max(n - (1 if draw(st.integers(0, 9)) == 0 else 0), 0) for n in index_shape)
            src = draw(tensor_args(dtype, tuple(max(a, b) for a, b in zip(src_shape, index_shape)) if draw(st.booleans()) else src_shape))
            return Case((x, d, index, src))

        return draw_case()

    return cases


@st.composite
def _index_item(draw, shape, dim):
    """One item of an index expression for dim ``dim`` of ``shape``."""
    size = shape[dim] if dim < len(shape) else 0
    choice = draw(st.integers(0, 9))
    if choice == 0:
        return draw(st.booleans())
    if choice == 1:
        return TensorArg(__import__("numpy").array(draw(st.booleans())), "bool")
    if choice == 2 and size:
        return draw(st.integers(-size, size - 1))
    if choice == 3:
        return slice(draw(st.sampled_from([None, 0, 1, -1])), draw(st.sampled_from([None, 2, -1])), draw(st.sampled_from([None, 1, 2])))
    if choice in (4, 5) and dim < len(shape):
        count = draw(st.integers(0, 3))
        return draw(_index_values(max(size, 1), (count,)))
    if choice == 6 and dim < len(shape):
        return draw(tensor_args("bool", shape[dim:dim + 1], layout="contiguous"))
    if choice == 7:
        return None
    return Ellipsis if draw(st.booleans()) else slice(None)


def indexing(allowed=("float32", "int64")):
    def cases(dtypes):
        @st.composite
        def draw_case(draw):
            dtype = draw(_pick(dtypes, allowed))
            shape = draw(NONEMPTY_SHAPES)
            x = draw(tensor_args(dtype, shape))
            count = draw(st.integers(1, 2))
            items = tuple(draw(_index_item(shape, k)) for k in range(count))
            if items.count(Ellipsis) > 1:
                items = tuple(i for i in items if i is not Ellipsis)
            index = items[0] if len(items) == 1 else items
            return Case((x, index), {"value": draw(st.one_of(scalars(), st.just(None)))})

        return draw_case()

    return cases


def cat_case(dtypes):
    @st.composite
    def draw_case(draw):
        shape = draw(NONEMPTY_SHAPES)
        d = draw(st.integers(0, len(shape) - 1))
        tensors = []
        for _ in range(draw(st.integers(1, 3))):
            s = list(shape)
            s[d] = draw(st.integers(0, 3))
            dtype = draw(_pick(dtypes, ("float32", "float64", "int64", "bool")))
            s = (0,) if draw(st.integers(0, 5)) == 0 else tuple(s)
            tensors.append(draw(tensor_args(dtype, s)))
        return Case((tensors, d))

    return draw_case()


def nn_input(min_dims, max_dims, allowed=("float32", "float64"), finite=False, extra=None):
    def cases(dtypes):
        @st.composite
        def draw_case(draw):
            dtype = draw(_pick(dtypes, allowed))
            shape = tuple(draw(st.lists(st.integers(1, 4), min_size=min_dims, max_size=max_dims)))
            kw = draw(extra) if extra is not None else {}
            return Case((draw(tensor_args(dtype, shape, finite=finite)),), kw)

        return draw_case()

    return cases


def two_inputs(allowed=("float32", "float64"), finite=False, same_shape=True, extra=None, second_low=None, second_high=None):
    def cases(dtypes):
        @st.composite
        def draw_case(draw):
            dtype = draw(_pick(dtypes, allowed))
            shape = draw(NONEMPTY_SHAPES)
            other = shape if same_shape else draw(broadcastable_shape(shape))
            a = draw(tensor_args(dtype, shape, finite=finite))
            b = draw(tensor_args(dtype, other, finite=finite, low=second_low, high=second_high))
            return Case((a, b), draw(extra) if extra is not None else {})

        return draw_case()

    return cases


def nll_case(dtypes):
    @st.composite
    def draw_case(draw):
        n, c = draw(st.integers(1, 3)), draw(st.integers(1, 4))
        logits = draw(tensor_args("float32", (n, c), finite=True))
        target = draw(tensor_args("int64", (n,), layout="contiguous", low=-2, high=c))
        return Case((logits, target), {"reduction": draw(st.sampled_from(["mean", "sum", "none"]))})

    return draw_case()


def interpolate_case(dtypes):
    @st.composite
    def draw_case(draw):
        ndim = draw(st.integers(3, 4))
        shape = tuple(draw(st.integers(1, 4)) for _ in range(ndim))
        x = draw(tensor_args("float32", shape, finite=True))
        mode = draw(st.sampled_from(["nearest", "bilinear", "linear"] if ndim == 4 else ["nearest", "linear"]))
        if mode == "bilinear" and ndim != 4 or mode == "linear" and ndim != 3:
            mode = "nearest"
        kw = {"mode": mode}
        if draw(st.booleans()):
            kw["scale_factor"] = draw(st.sampled_from([2, 3, 0.5, 1.5]))
        else:
            kw["size"] = draw(st.integers(1, 5))
        if mode != "nearest":
            kw["align_corners"] = draw(st.booleans())
        return Case((x,), kw)

    return draw_case()


def pool_case(kind):
    def cases(dtypes):
        @st.composite
        def draw_case(draw):
            ndim = 3 if kind == "adaptive_avg_pool1d" else 4
            shape = tuple(draw(st.integers(1, 5)) for _ in range(ndim))
            x = draw(tensor_args("float32", shape, finite=kind != "max_pool2d"))
            if kind.startswith("adaptive"):
                return Case((x, draw(st.integers(1, 4))))
            return Case((x, draw(st.integers(1, 2))), {"stride": draw(st.sampled_from([None, 1, 2]))})

        return draw_case()

    return cases


# --- the table ----------------------------------------------------------------------------------
FLOATS = FLOAT_DTYPES
FLOAT32_64 = ("float32", "float64")
NUMERIC = FLOAT_DTYPES + INT_DTYPES
INTEGRAL = INT_DTYPES + ("bool",)
SIGNED = ("int64", "int32", "int16", "int8", "uint8")


def _method_inplace(name):
    def inplace(L, self, *rest, **kwargs):
        return getattr(self, name)(*rest, **kwargs)

    return inplace


def _fn(name):
    return lambda L, *a, **k: getattr(L.lib, name)(*a, **k)


def _F(name):
    return lambda L, *a, **k: getattr(L.F, name)(*a, **k)


def _unary_spec(name, allowed=FLOATS, grad=True, tol=None):
    return OpSpec(name, unary(allowed), _fn(name), out=True, inplace=_method_inplace(name + "_"), grad=grad, tol=tol)


def _binary_spec(name, allowed=ALL_DTYPES, grad=False, kwargs=None, inplace=True):
    return OpSpec(name, binary(allowed, kwargs=kwargs), _fn(name), out=True,
                  inplace=_method_inplace(name + "_") if inplace else None, grad=grad)


def _operator_inplace(op):
    # `x <<= y` style: Python falls back to `x = x << y` without __ilshift__, which leaves the
    # original object unchanged: the harness compares that object afterwards.
    def inplace(L, self, other):
        return op(self, other)

    return inplace


def _setitem(L, x, index, value=None):
    x[index] = 0 if value is None else value
    return x


def _scatter(reduce_add):
    def call(L, x, dim, index, src):
        return (L.lib.scatter_add if reduce_add else L.lib.scatter)(x, dim, index, src)

    return call


OPS = [
    *(_unary_spec(n) for n in ("exp", "log", "sqrt", "sin", "tanh", "sigmoid", "expm1", "log1p", "rsqrt", "reciprocal")),
    *(_unary_spec(n, NUMERIC) for n in ("abs", "neg", "sign", "sgn")),
    *(_unary_spec(n, NUMERIC, grad=False) for n in ("floor", "round", "trunc")),
    OpSpec("sqrt_on_int", unary(INT_DTYPES), lambda L, x: L.lib.sqrt(x), inplace=_method_inplace("sqrt_")),
    *(_binary_spec(n, grad=True) for n in ("add", "sub", "mul", "maximum", "minimum")),
    _binary_spec("div", grad=True),
    *(_binary_spec(n, NUMERIC) for n in ("floor_divide", "remainder", "fmod")),
    _binary_spec("pow", NUMERIC, grad=True),
    *(_binary_spec(n, FLOATS, grad=True) for n in ("atan2", "copysign", "hypot")),
    *(_binary_spec(n, INTEGRAL) for n in ("bitwise_and", "bitwise_or", "bitwise_xor")),
    *(_binary_spec(n, SIGNED) for n in ("bitwise_left_shift", "bitwise_right_shift")),
    *(_binary_spec(n) for n in ("eq", "ne", "lt", "ge", "logical_and", "logical_xor")),
    OpSpec("add_alpha", binary(NUMERIC, kwargs=st.fixed_dictionaries({"alpha": st.sampled_from([2, 0.5, -1])})),
           _fn("add"), out=True, inplace=_method_inplace("add_"), grad=True),
    OpSpec("operator_ilshift", binary(SIGNED), lambda L, a, b: a << b, inplace=_operator_inplace(operator.ilshift)),
    OpSpec("operator_irshift", binary(SIGNED), lambda L, a, b: a >> b, inplace=_operator_inplace(operator.irshift)),
    OpSpec("operator_iadd", binary(), lambda L, a, b: a + b, inplace=_operator_inplace(operator.iadd)),
    OpSpec("operator_imul", binary(), lambda L, a, b: a * b, inplace=_operator_inplace(operator.imul)),
    OpSpec("operator_itruediv", binary(), lambda L, a, b: a / b, inplace=_operator_inplace(operator.itruediv)),
    OpSpec("where", two_inputs(NUMERIC + ("bool",), same_shape=False),
           lambda L, a, b: L.lib.where(a > 0 if a.dtype != L.lib.bool else a, a, b), out=True, grad=True),
    OpSpec("clamp", unary(NUMERIC), lambda L, x: L.lib.clamp(x, -1, 2), out=True,
           inplace=lambda L, x: x.clamp_(-1, 2), grad=True),
    OpSpec("clip_", unary(FLOATS), lambda L, x: x.clip(-1, 0.5), inplace=lambda L, x: x.clip_(-1, 0.5)),
    # reductions
    OpSpec("sum", reduction(), _fn("sum"), out=True, grad=True),
    OpSpec("prod", reduction(NUMERIC, multi=False), _fn("prod"), out=True, grad=True),
    OpSpec("mean", reduction(FLOATS), _fn("mean"), out=True, grad=True),
    OpSpec("nansum", reduction(FLOATS), _fn("nansum"), grad=True),
    OpSpec("nanmean", reduction(FLOATS), _fn("nanmean"), grad=True),
    OpSpec("amax", reduction(NUMERIC), _fn("amax"), grad=True),
    OpSpec("argmax", reduction(NUMERIC, multi=False), _fn("argmax")),
    OpSpec("all", reduction(ALL_DTYPES), _fn("all")),
    OpSpec("max_dim", reduction(NUMERIC, dim_required=True, multi=False), _fn("max"), grad=True),
    OpSpec("var", reduction(FLOATS, extra=st.fixed_dictionaries({"correction": st.sampled_from([0, 1])})), _fn("var"), grad=True),
    OpSpec("std", reduction(FLOATS), _fn("std"), grad=True),
    OpSpec("var_mean", reduction(FLOAT32_64), _fn("var_mean"), grad=True),
    OpSpec("logsumexp", reduction(FLOAT32_64, dim_required=True), _fn("logsumexp"), grad=True),
    OpSpec("norm", reduction(FLOAT32_64, extra=st.fixed_dictionaries({"p": st.sampled_from([1, 2, 3, float("inf")])})),
           _fn("norm"), grad=True),
    OpSpec("cumsum", reduction(NUMERIC, dim_required=True, keepdim=False, multi=False), _fn("cumsum"), out=True,
           inplace=_method_inplace("cumsum_"), grad=True),
    OpSpec("cumprod", reduction(FLOAT32_64, dim_required=True, keepdim=False, multi=False), _fn("cumprod"), out=True,
           grad=True),
    # joining, linear algebra
    OpSpec("cat", cat_case, _fn("cat"), out=True),
    OpSpec("matmul", matrices("matmul"), _fn("matmul"), out=True, grad=True),
    OpSpec("mm", matrices("mm"), _fn("mm"), out=True, grad=True),
    OpSpec("mv", matrices("mv"), _fn("mv"), grad=True),
    OpSpec("addmm", matrices("addmm"), _fn("addmm"), out=True, grad=True),
    OpSpec("addmv", matrices("addmv"), _fn("addmv"), out=True, grad=True),
    # indexing
    OpSpec("getitem", indexing(), lambda L, x, index, value=None: x[index]),
    OpSpec("setitem", indexing(), _setitem),
    OpSpec("index_select", gather_like("index_select"), _fn("index_select"), grad=True),
    OpSpec("index_add", gather_like("index_add"), _fn("index_add")),
    OpSpec("gather", gather_like("gather"), _fn("gather"), grad=True),
    OpSpec("scatter", gather_like("scatter"), _scatter(False)),
    OpSpec("scatter_add", gather_like("scatter"), _scatter(True)),
    # nn.functional
    OpSpec("relu", nn_input(0, 3), _F("relu"), grad=True),
    OpSpec("relu_inplace", nn_input(1, 3), lambda L, x: L.F.relu(x.clone(), inplace=True)),
    OpSpec("leaky_relu", nn_input(0, 3), _F("leaky_relu"), grad=True),
    OpSpec("hardtanh", nn_input(0, 3), _F("hardtanh"), grad=True),
    OpSpec("relu6", nn_input(0, 3), _F("relu6"), grad=True),
    OpSpec("elu", nn_input(0, 3), _F("elu"), grad=True),
    OpSpec("threshold", nn_input(0, 3), lambda L, x: L.F.threshold(x, 0.5, -2.0), grad=True),
    OpSpec("gelu", nn_input(0, 3), _F("gelu"), grad=True),
    OpSpec("silu", nn_input(0, 3), _F("silu"), grad=True),
    OpSpec("softplus", nn_input(0, 3), _F("softplus"), grad=True),
    OpSpec("softmax", nn_input(1, 3), lambda L, x: L.F.softmax(x, dim=-1), grad=True),
    OpSpec("log_softmax", nn_input(1, 3), lambda L, x: L.F.log_softmax(x, dim=0), grad=True),
    OpSpec("normalize", nn_input(1, 3), lambda L, x: L.F.normalize(x, dim=-1), grad=True),
    OpSpec("pairwise_distance", two_inputs(), _F("pairwise_distance"), grad=True),
    OpSpec("kl_div", two_inputs(extra=st.fixed_dictionaries({"reduction": st.sampled_from(["sum", "none", "batchmean"]),
                                                              "log_target": st.booleans()})), _F("kl_div"), grad=True),
    OpSpec("mse_loss", two_inputs(finite=True), _F("mse_loss"), grad=True),
    OpSpec("nll_loss", nll_case, _F("nll_loss"), grad=True),
    OpSpec("interpolate", interpolate_case, _F("interpolate"), grad=True, tol=(1e-5, 1e-5)),
    OpSpec("adaptive_avg_pool1d", pool_case("adaptive_avg_pool1d"), _F("adaptive_avg_pool1d"), grad=True),
    OpSpec("adaptive_avg_pool2d", pool_case("adaptive_avg_pool2d"), _F("adaptive_avg_pool2d"), grad=True),
    OpSpec("max_pool2d", pool_case("max_pool2d"), _F("max_pool2d"), grad=True),
    OpSpec("avg_pool2d", pool_case("avg_pool2d"), _F("avg_pool2d"), grad=True),
]

BY_NAME = {spec.name: spec for spec in OPS}
