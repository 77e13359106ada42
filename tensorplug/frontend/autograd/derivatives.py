"""Derivative formulas of the primitive ops, registered as their Autograd kernels.

Each formula is written with tensorplug ops, so running backward with ``create_graph=True``
records the backward itself and gives higher-order gradients. The frontend broadcasts and
casts inputs (recording expand and cast nodes) before a primitive runs, so a formula sees
inputs of the output's shape and dtype and never has to reduce a broadcast.

An Autograd kernel receives the key set below it, runs the op there, then records a node when
an input requires grad. In-place primitives (the output is an input, or a user tensor) rebase
the output's history onto the new node.
"""
from __future__ import annotations

import math

from ... import _autograd_core, dispatcher
from ...dispatcher import AUTOGRAD
from ..meta_device import has_values
from ..tensor import Tensor
from .grad_mode import is_grad_enabled
from .graph import NO_EDGE, AutogradMeta, Node, SavedTensor, gradient_edge, set_history

__all__ = ["register_all", "FormulaNode"]

_AUTOGRAD_MASK = AUTOGRAD.mask
_NUMBERS = (bool, int, float)


class FormulaNode(Node):
    """A node whose backward is a formula over saved inputs/output and the incoming gradient."""

    __slots__ = ("formula", "saved", "output", "extra", "op_name")

    def __init__(self, op_name: str, formula, next_functions: tuple, saved: tuple, output, extra):
        Node.__init__(self, next_functions)
        self.op_name = op_name
        self.formula = formula
        self.saved = saved
        self.output = output
        self.extra = extra

    def name(self) -> str:
        return _node_name(self.op_name)

    def backward(self, grads: tuple) -> tuple:
        grad = grads[0]
        if grad is None:
            return (None,) * len(self.next_functions)
        inputs = tuple([s.unpack() if s.__class__ is SavedTensor else s for s in self.saved])
        output = self.output.unpack(self) if self.output is not None else None
        needs = tuple([edge[0] is not None for edge in self.next_functions])
        return self.formula(grad, inputs, output, self.extra, needs)

    def release(self) -> None:
        for s in self.saved:
            if isinstance(s, SavedTensor):
                s.release()
        if self.output is not None:
            self.output.release()


def _node_name(op_name: str) -> str:
    return "".join(part.capitalize() for part in op_name.strip("_").split("_")) + "Backward0"


def _requires_grad(x) -> bool:
    return isinstance(x, Tensor) and x._keys & _AUTOGRAD_MASK != 0


def _output_nr(t: Tensor) -> int:
    return t._autograd.output_nr if isinstance(t._autograd, AutogradMeta) else 0


def _is_leaf_requiring_grad(t: Tensor) -> bool:
    return t.grad_fn is None and t._keys & _AUTOGRAD_MASK != 0


#: Marks the edge of an in-place op's overwritten input ("old self") inside a CopySlices node.
_OLD_SELF = ("old self",)


class CopySlices(Node):
    """An in-place op on a view: rebases the view's base onto the op.

    The base's gradient is split: the view's region goes through the op's own formula (its
    "old self" part lands back in the region), the rest of the base passes through unchanged.
    """

    __slots__ = ("inner", "view_geometry", "base_shape", "self_slot")

    def __init__(self, base_edge, inner: FormulaNode, view_geometry: tuple, base_shape: tuple):
        self.inner = inner
        self.self_slot = inner.next_functions.index(_OLD_SELF)
        base_edge = NO_EDGE if base_edge is None else base_edge
        others = tuple(e for i, e in enumerate(inner.next_functions) if i != self.self_slot)
        super().__init__((base_edge,) + others)
        self.view_geometry = view_geometry
        self.base_shape = base_shape

    def name(self) -> str:
        return "CopySlices"

    def backward(self, grads: tuple) -> tuple:
        grad = grads[0]
        if grad is None:
            return (None,) * len(self.next_functions)
        shape, stride, offset = self.view_geometry
        base_grad = grad.contiguous()
        # A contiguous grad may still start inside its storage (a row of a stacked gradient):
        # as_strided's offset counts from the storage's start, so add the grad's own.
        inner_grads = self.inner.backward((base_grad.as_strided(shape, stride, base_grad._offset + offset),))
        old_self = inner_grads[self.self_slot] if self.self_slot < len(inner_grads) else None
        result = base_grad.clone()
        region = result.as_strided(shape, stride, offset)
        if old_self is None:
            region.fill_(0)
        else:
            region.copy_(old_self)
        others = tuple(g for i, g in enumerate(inner_grads) if i != self.self_slot)
        return (result,) + others

    def release(self) -> None:
        self.inner.release()


def _view_geometry(view: Tensor, base: Tensor):
    """The view's layout relative to a contiguous base of the same shape, or None."""
    if not base.is_contiguous():
        return None
    return (view._shape, view._stride, view._offset - base._offset)


class TensorMeta:
    """What a formula may know of an unsaved tensor argument: its shape and dtype."""

    __slots__ = ("shape", "dtype")

    def __init__(self, t: Tensor):
        self.shape, self.dtype = t._shape, t._dtype


def _extra(args: tuple, keep: tuple) -> tuple:
    """The arguments a formula may read besides saved tensors: numbers, dims, and the
    non-differentiable tensors in ``keep`` (indices, conditions). Other tensors become their
    TensorMeta, so a node never keeps an input alive behind the saved-tensor checks."""
    return tuple(a if i in keep or not isinstance(a, Tensor) else TensorMeta(a) for i, a in enumerate(args))


def _make_kernel(op: dispatcher.Operator, formula, differentiable_args: tuple, save_inputs: bool, save_output: bool,
                 inplace: bool, keep: tuple | None = ()):
    """The Autograd kernel of ``op``.

    ``differentiable_args`` index the arguments after ``out``; -1 stands for the old value of
    ``out`` in ops that always write in place (copy_, scatter_, index_put_). ``keep=None`` says
    the formula reads no extra arguments (elementwise formulas), so none are stored.
    """
    name = op.name
    node_name = _node_name(name)

    always_self = inplace and -1 in differentiable_args
    positions = tuple(i for i in differentiable_args if i >= 0)
    lookup = op.lookup

    def autograd_kernel(below, out, *args):
        self_pos = -1 if always_self else None
        if not always_self:
            for i in positions:
                if args[i] is out:
                    self_pos = i
                    break
        if not out._dtype.is_floating_point:  # integer and bool results are not differentiable
            lookup(below)(out, *args)
            return
        inputs_need = [i for i in positions if i != self_pos and isinstance(args[i], Tensor) and args[i]._keys & _AUTOGRAD_MASK]
        if self_pos is not None or out._keys & _AUTOGRAD_MASK or out._base is not None:
            _inplace(below, out, args, self_pos, inputs_need)
            return
        if not inputs_need:
            lookup(below)(out, *args)
            return
        # List comprehensions, not generator expressions: one frame each instead of one resumed
        # per element, on every recorded op (issue 14).
        edges = tuple([gradient_edge(args[i]) if i in inputs_need else NO_EDGE for i in differentiable_args])
        saved = tuple([SavedTensor(a, node_name) if isinstance(a, Tensor) else a for a in args]) if save_inputs else ()
        lookup(below)(out, *args)
        extra = () if keep is None else _extra(args, keep)
        node = FormulaNode(name, formula, edges, saved, None, extra)
        set_history(out, node)
        if save_output:
            # Saved once out has its grad_fn: a saved-tensor pack hook sees it so, as in PyTorch.
            node.output = SavedTensor(out, node_name, True)

    def _inplace(below, out, args, self_pos, inputs_need):
        base = out._base
        target = base if base is not None else out
        if _is_leaf_requiring_grad(target):
            what = "a view of a leaf Variable" if base is not None else "a leaf Variable"
            raise RuntimeError(f"{name}: {what} that requires grad is being used in an in-place operation.")
        if target.grad_fn is not None and target.grad_fn.inplace_error is not None:
            raise RuntimeError(target.grad_fn.inplace_error.format(nr=_output_nr(target)))
        if not inputs_need and not _requires_grad(target):
            op.lookup(below)(out, *args)
            return
        geometry = None
        if base is not None:
            geometry = _view_geometry(out, base)
            if geometry is None:
                raise RuntimeError(f"{name}: in-place operation on a view of a non-contiguous tensor that requires grad is not supported")
        old_edge = gradient_edge(target) if _requires_grad(target) else NO_EDGE
        edges = []
        for i in differentiable_args:
            if i == self_pos:
                edges.append(_OLD_SELF if base is not None else (gradient_edge(out) if _requires_grad(out) else NO_EDGE))
            else:
                edges.append(gradient_edge(args[i]) if i in inputs_need else NO_EDGE)
        if save_inputs:
            # The overwritten input's old value is needed later: keep a copy of it.
            saved = tuple(
                SavedTensor(_detached_copy(a) if a is out else a, node_name) if isinstance(a, Tensor) else a for a in args
            )
        else:
            saved = ()
        op.lookup(below)(out, *args)
        saved_out = None
        if save_output:
            saved_out = SavedTensor(out, node_name, True)
            saved_out._version += 1  # the frontend bumps out's version right after this kernel
        inner = FormulaNode(name, formula, tuple(edges), saved, saved_out, () if keep is None else _extra(args, keep))
        if base is None:
            set_history(out, inner)
            return
        if _OLD_SELF not in inner.next_functions:
            inner.next_functions = inner.next_functions + (_OLD_SELF,)
        set_history(base, CopySlices(old_edge, inner, geometry, base._shape))
        from .views import record_view

        record_view(out, base, geometry)

    autograd_kernel.__qualname__ = f"autograd_{name}"
    if always_self or not positions or len(positions) != len(differentiable_args) or len(positions) > 8:
        return autograd_kernel
    # The common case (a fresh output, inputs that may require grad) runs in C; everything
    # else, and every error, is autograd_kernel's (csrc/autograd_core.cpp).
    return _autograd_core.RecordingKernel(autograd_kernel, op.table, lookup, formula, name, node_name,
                                          tuple(differentiable_args), save_inputs, save_output, keep)


def _detached_copy(t: Tensor) -> Tensor:
    from ..ops.copying import clone

    with dispatcher.ExcludeKeys(_AUTOGRAD_MASK):
        return clone(t)


def _no_gradient(grad, inputs, output, extra, needs):
    return ()


def _register(name: str, formula, differentiable_args=(0,), save_inputs=True, save_output=False, inplace=False, keep=()):
    op = dispatcher.get_operator(name)
    kernel = _make_kernel(op, formula, differentiable_args, save_inputs, save_output, inplace, keep)
    dispatcher.register_kernel(op, AUTOGRAD, kernel)


# --- helpers used by formulas ------------------------------------------------------------------
def _tp():
    import tensorplug

    return tensorplug


def _zeros_like(t: Tensor) -> Tensor:
    return _tp().zeros_like(t)


# --- unary ---------------------------------------------------------------------------------
def _unary(f):
    def formula(grad, inputs, output, extra, needs):
        return (f(grad, inputs[0] if inputs else None, output),)

    return formula


_LN2, _LN10 = math.log(2.0), math.log(10.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)

UNARY_FORMULAS = {
    "neg": (lambda g, a, out: -g, False),
    "abs": (lambda g, a, out: g * a.sign(), False),
    "exp": (lambda g, a, out: g * out, True),
    "exp2": (lambda g, a, out: g * out * _LN2, True),
    "log": (lambda g, a, out: g / a, False),
    "log2": (lambda g, a, out: g / (a * _LN2), False),
    "log10": (lambda g, a, out: g / (a * _LN10), False),
    "log1p": (lambda g, a, out: g / (a + 1), False),
    "expm1": (lambda g, a, out: g * (out + 1), True),
    "sqrt": (lambda g, a, out: g / (out * 2), True),
    "rsqrt": (lambda g, a, out: g * out * out * out * -0.5, True),
    "sin": (lambda g, a, out: g * a.cos(), False),
    "cos": (lambda g, a, out: -(g * a.sin()), False),
    "tan": (lambda g, a, out: g * (out * out + 1), True),
    "asin": (lambda g, a, out: g * (1 - a * a).rsqrt(), False),
    "acos": (lambda g, a, out: -(g * (1 - a * a).rsqrt()), False),
    "atan": (lambda g, a, out: g / (a * a + 1), False),
    "sinh": (lambda g, a, out: g * a.cosh(), False),
    "cosh": (lambda g, a, out: g * a.sinh(), False),
    "tanh": (lambda g, a, out: g * (1 - out * out), True),
    "sigmoid": (lambda g, a, out: g * out * (1 - out), True),
    "erf": (lambda g, a, out: g * (-(a * a)).exp() * _TWO_OVER_SQRT_PI, False),
    "erfinv": (lambda g, a, out: g * (out * out).exp() * (math.sqrt(math.pi) / 2), True),
    "reciprocal": (lambda g, a, out: -(g * out * out), True),
    "square": (lambda g, a, out: g * a * 2, False),
    "sign": (lambda g, a, out: g * 0, False),
    "floor": (lambda g, a, out: g * 0, False),
    "ceil": (lambda g, a, out: g * 0, False),
    "round": (lambda g, a, out: g * 0, False),
    "trunc": (lambda g, a, out: g * 0, False),
}


# --- binary --------------------------------------------------------------------------------
def _binary(fa, fb):
    """A formula from d/da and d/db; either operand may be a Python number (no gradient)."""

    def formula(grad, inputs, output, extra, needs):
        a, b = inputs if inputs else (None, None)
        return (fa(grad, a, b, output) if needs[0] else None, fb(grad, a, b, output) if needs[1] else None)

    return formula


def _where_mask(cond, value):
    tp = _tp()
    return tp.where(cond, value, 0.0)


def _max_grad(grad, mine, other, worse):
    # PyTorch's formula: ties share the gradient evenly, the losing side gets 0, and where a NaN
    # makes every comparison false both sides get the whole gradient.
    tp = _tp()
    return tp.where(worse(mine, other), 0.0, tp.where(mine == other, grad / 2, grad))


def _atan2_recip(a, b):
    # 1 / (a^2 + b^2), taken as 0 where the sum is exactly 0 (PyTorch's gradient at the origin).
    tp = _tp()
    total = a * a + b * b
    return tp.where(total == 0, 0.0, total.reciprocal())


BINARY_FORMULAS = {
    "add": (lambda g, a, b, o: g, lambda g, a, b, o: g),
    "sub": (lambda g, a, b, o: g, lambda g, a, b, o: -g),
    "mul": (lambda g, a, b, o: g * b, lambda g, a, b, o: g * a),
    # -g * ((a / b) / b), in PyTorch's order: b * b under- or overflows where this does not.
    "div": (lambda g, a, b, o: g / b, lambda g, a, b, o: -g * ((a / b) / b)),
    "pow": (
        # PyTorch's: 0 where the exponent is 0 (0 * 0 ** -1 would be NaN).
        lambda g, a, b, o: _where_mask(b != 0, g * b * a ** (b - 1)) if isinstance(b, Tensor) else (
            _tp().zeros_like(g) if b == 0 else g * b * a ** (b - 1)),
        # PyTorch's: 0 where a == 0 and b >= 0 only; 0 ** (negative) * log(0) stays inf/NaN as there.
        lambda g, a, b, o: _where_mask((a != 0) | (b < 0), g * a ** b * a.log()) if isinstance(a, Tensor) else g * a ** b * math.log(a),
    ),
    "maximum": (lambda g, a, b, o: _max_grad(g, a, b, lambda x, y: x < y), lambda g, a, b, o: _max_grad(g, b, a, lambda x, y: x < y)),
    "minimum": (lambda g, a, b, o: _max_grad(g, a, b, lambda x, y: x > y), lambda g, a, b, o: _max_grad(g, b, a, lambda x, y: x > y)),
    "atan2": (lambda g, a, b, o: g * b * _atan2_recip(a, b), lambda g, a, b, o: g * -a * _atan2_recip(a, b)),
    "hypot": (lambda g, a, b, o: g * a / o, lambda g, a, b, o: g * b / o),
    # d/da copysign(a, b) = result / a, taken as 0 where a == 0 (NaN in a stays NaN).
    "copysign": (lambda g, a, b, o: g * (o / a).masked_fill(a == 0, 0.0), lambda g, a, b, o: g * 0),
    "fmod": (lambda g, a, b, o: g, lambda g, a, b, o: -(g * (a / b).trunc())),
    "remainder": (lambda g, a, b, o: g, lambda g, a, b, o: -(g * (a / b).floor())),
}
_OUTPUT_BINARY = {"hypot", "copysign"}


# --- reductions, scans, matmul, indexing, copies --------------------------------------------------
def _sum_formula(grad, inputs, output, extra, needs):
    return (grad.expand(extra[0].shape),)


def _prod_formula(grad, inputs, output, extra, needs):
    tp = _tp()
    a, dims = inputs[0], extra[1]
    if not a._shape:  # the product of one element is the element (PyTorch: grad, even at inf)
        return (grad,)
    zero = a == 0
    others = tp.where(zero, 1.0, a).prod(dim=dims, keepdim=True) if a._dtype.is_floating_point else None
    zeros_count = zero.sum(dim=dims, keepdim=True)
    safe = output / tp.where(zero, 1.0, a)
    per_element = tp.where(zero, tp.where(zeros_count == 1, others, 0.0), safe)
    return (grad * per_element,)


def _extreme_formula(grad, inputs, output, extra, needs):
    a = inputs[0]
    dims = extra[1]
    hits = (a == output).to(grad._dtype)
    return (grad * hits / hits.sum(dim=dims, keepdim=True),)


def _cumsum_formula(grad, inputs, output, extra, needs):
    dim = extra[1]
    # The reversed cumulative sum of grad, written without flip: total - cumsum + grad.
    return (grad.sum(dim=dim, keepdim=True) - grad.cumsum(dim) + grad,)


def _cumprod_formula(grad, inputs, output, extra, needs):
    # PyTorch's cases (issue 16: its gradients at NaN and inf, zeros after the first one):
    # one factor per slice passes grad on; without zeros, d/da_i is the reversed cumulative sum
    # of grad * output from i on, divided by a_i; with zeros, per slice with its first zero at z,
    # that formula over the positions before z, sum_{z <= j < second zero} grad_j *
    # prod_{k <= j, k != z} a_k at z, and exactly 0 after z (every product there has a factor 0).
    tp = _tp()
    a, dim = inputs[0], extra[1]
    if a.numel() <= 1 or a._shape[dim] == 1:
        return (grad,)
    weighted = grad * output
    zero = a == 0
    if not has_values(a) or not bool(zero.any()):  # a meta tensor: the formula's shape is the same either way
        return (_reversed_cumsum(weighted, dim) / a,)
    if is_grad_enabled():
        # A double backward needs every product (the masks below are constants to it).
        return (_cumprod_grad_all_products(grad, a, dim),)
    zeros_so_far = zero.cumsum(dim)
    before = zeros_so_far == 0
    first_run = zeros_so_far == 1  # from the first zero up to the second
    first = first_run & zero
    # (a divisor of 1 after z keeps a double backward free of the 0 / 0 that where() then drops)
    head = tp.where(before, _reversed_cumsum(tp.where(before, weighted, 0.0), dim) / tp.where(before, a, 1.0), 0.0)
    # prod_{k <= j, k != z} a_k = (product before z) * (product of a over (z, j]).
    after_first = tp.where(first_run & ~zero, a, 1.0).cumprod(dim)
    at_first = (after_first * tp.where(first_run, grad, 0.0)).sum(dim, keepdim=True)
    z = first.to(tp.int64).argmax(dim, keepdim=True)
    product_before = tp.where(z == 0, 1.0, output.gather(dim, (z - 1).clamp_min(0)))
    return (tp.where(first, at_first * product_before, head),)


def _cumprod_grad_all_products(grad: Tensor, a: Tensor, dim: int) -> Tensor:
    """d out_j / d a_i = prod_{k <= j, k != i} a_k (j >= i), built as n cumulative products of a
    with one element replaced by 1 (O(n^2) memory): differentiable again, unlike the masks."""
    tp = _tp()
    x = a.movedim(dim, -1)
    g = grad.movedim(dim, -1)
    n = x._shape[-1]
    eye = tp.eye(n, dtype=tp.bool, device=a._device)
    rows = tp.where(eye, 1.0, x.unsqueeze(-2).expand(*x._shape[:-1], n, n))
    partial = rows.cumprod(-1)
    index = tp.arange(n, device=a._device)
    later = index.unsqueeze(0) >= index.unsqueeze(1)  # [i, j]: j >= i
    result = (tp.where(later, partial, 0.0) * g.unsqueeze(-2)).sum(-1)
    return result.movedim(-1, dim)


def _reversed_cumsum(x: Tensor, dim: int) -> Tensor:
    """sum_{j >= i} x_j along ``dim``, added from the end as PyTorch does (inf and NaN stay where
    a subtraction from the total would spread them)."""
    return x.flip(dim).cumsum(dim).flip(dim)


def _matmul_formula(grad, inputs, output, extra, needs):
    a, b = inputs
    ga = grad @ b.transpose(1, 2) if needs[0] else None
    gb = a.transpose(1, 2) @ grad if needs[1] else None
    return (ga, gb)


# gather and index_get read only the input's shape and dtype (its TensorMeta in ``extra``; the
# gradient is on its device): saving the input itself made ``y[i] *= v`` fail at backward, as
# the write into y bumped the version of the tensor the index node had saved. PyTorch's
# IndexBackward0 keeps only the sizes too.
def _zeros_of(meta, grad: Tensor) -> Tensor:
    return _tp().zeros(meta.shape, dtype=meta.dtype, device=grad.device)


def _gather_formula(grad, inputs, output, extra, needs):
    meta, dim, index = extra[0], extra[1], extra[2]
    return (_zeros_of(meta, grad).scatter_add(dim, index, grad),)


def _index_get_formula(grad, inputs, output, extra, needs):
    meta, indices = extra[0], extra[1]
    return (_zeros_of(meta, grad).index_put_(indices, grad, accumulate=True),)


def _copy_formula(grad, inputs, output, extra, needs):
    # copy_(dst, src): dst's old values are overwritten (no gradient); src gets grad in its dtype.
    src = extra[0]
    return (grad.to(src.dtype) if needs[0] else None,)


def _where_formula(grad, inputs, output, extra, needs):
    tp = _tp()
    cond = extra[0]
    ga = tp.where(cond, grad, 0.0) if needs[0] else None
    gb = tp.where(cond, 0.0, grad) if needs[1] else None
    return (ga, gb)


def _scatter_formula(grad, inputs, output, extra, needs):
    # scatter_(self, dim, index, src, reduce): edges are (old self, src).
    dim, index, src, reduce = extra
    g_self = grad if reduce == "add" else grad.scatter(dim, index, 0.0)
    g_src = grad.gather(dim, index) if needs[1] else None
    return (g_self if needs[0] else None, g_src)


def _index_put_formula(grad, inputs, output, extra, needs):
    indices, values, accumulate = extra
    g_self = grad if accumulate else grad.clone().index_put_(indices, 0.0)
    g_values = grad[indices] if needs[1] else None
    return (g_self if needs[0] else None, g_values)


def register_all() -> None:
    """Register the Autograd kernel of every differentiable primitive."""
    for name, (f, uses_output) in UNARY_FORMULAS.items():
        _register(name, _unary(f), (0,), save_inputs=not uses_output, save_output=uses_output, keep=None)
    for name, (fa, fb) in BINARY_FORMULAS.items():
        _register(name, _binary(fa, fb), (0, 1), save_inputs=name not in ("add", "sub"), save_output=name in _OUTPUT_BINARY,
                  keep=None)
    _register("sum", _sum_formula, (0,), save_inputs=False)
    _register("prod", _prod_formula, (0,), save_output=True)
    _register("amax", _extreme_formula, (0,), save_output=True)
    _register("amin", _extreme_formula, (0,), save_output=True)
    _register("cumsum", _cumsum_formula, (0,), save_inputs=False)
    _register("cumprod", _cumprod_formula, (0,), save_output=True)
    _register("matmul", _matmul_formula, (0, 1))
    _register("gather", _gather_formula, (0,), save_inputs=False, keep=(2,))
    _register("index_get", _index_get_formula, (0,), save_inputs=False, keep=(1,))
    _register("copy_", _copy_formula, (0,), save_inputs=False, inplace=True)
    _register("where", _where_formula, (1, 2), save_inputs=False, keep=(0,))
    _register("scatter_", _scatter_formula, (-1, 2), save_inputs=False, inplace=True, keep=(1,))
    _register("index_put_", _index_put_formula, (-1, 1), save_inputs=False, inplace=True, keep=(0,))
    _register("fill_", _no_gradient, (), save_inputs=False, inplace=True)
    _register("sort", lambda grad, inputs, output, extra, needs: (_zeros_like(grad).scatter(extra[2], extra[0], grad),), (1,), save_inputs=False, keep=(0,))
