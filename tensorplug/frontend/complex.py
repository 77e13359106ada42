"""Complex tensors: complex64 and complex128 as (real, imag) pairs of float32 and float64.

A complex tensor's storage holds its elements' real and imaginary parts side by side, so
``view_as_real`` is a view: the same storage read as the part dtype with a trailing dim of 2.
Every complex tensor carries the Complex dispatch key, which sits above Autograd: its kernels
(registered here, one per primitive that supports complex) rewrite the op as real ops on
``view_as_real`` views. Those real ops record their own autograd nodes, so a backend never sees a
complex dtype, every backend gets complex support from its real primitives, and gradients follow
PyTorch's convention (the gradient of a real loss L at z = x + iy is dL/dx + i dL/dy, the
conjugate Wirtinger derivative times two) with no formula of their own. An op with no Complex
kernel runs its decomposition when it is composite, else raises NotImplementedError naming the op
before any kernel runs (docs/complex.md).
"""
from __future__ import annotations

import math
import warnings

from .. import dispatcher
from ..dispatcher import AUTOGRAD, COMPLEX, local_state
from . import dtypes as _dt
from .autograd.graph import Node, gradient_edge, set_history
from .tensor import Tensor, make_tensor
from .ops.out_rehearsal import rehearse_out

__all__ = ["view_as_real", "view_as_complex", "real", "imag", "conj", "conj_physical", "resolve_conj", "is_conj",
           "angle", "complex", "polar", "complex_parts", "from_parts"]

_AUTOGRAD_MASK = AUTOGRAD.mask
_LN2 = math.log(2.0)
_builtin_complex = complex


# --- the two views ---------------------------------------------------------------------------
class _ReinterpretNode(Node):
    """Backward of view_as_real / view_as_complex: the gradient read the other way."""

    __slots__ = ("to_complex", "op_name")

    def __init__(self, edge, op_name: str, to_complex: bool):
        super().__init__((edge,))
        self.op_name = op_name
        self.to_complex = to_complex

    def name(self) -> str:
        return "ViewAsRealBackward0" if self.op_name == "view_as_real" else "ViewAsComplexBackward0"

    def backward(self, grads: tuple) -> tuple:
        grad = grads[0]
        if grad is None:
            return (None,)
        if self.to_complex:
            if grad._stride[-1] != 1 or any(s % 2 for s in grad._stride[:-1]) or grad._offset % 2:
                grad = grad.contiguous()
            return (view_as_complex(grad),)
        return (view_as_real(grad),)


def _record(view: Tensor, source: Tensor, op_name: str, to_complex: bool) -> Tensor:
    if source._keys & _AUTOGRAD_MASK and local_state.mask & _AUTOGRAD_MASK:
        set_history(view, _ReinterpretNode(gradient_edge(source), op_name, to_complex))
    return view


def view_as_real(input: Tensor) -> Tensor:
    """A real view of complex ``input``: shape ``input.shape + (2,)``, the last dim holding the
    real and imaginary parts (it shares storage with ``input``).

    >>> tp.view_as_real(tp.tensor([1 + 2j])).tolist()
    [[1.0, 2.0]]
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"view_as_real(): argument 'input' must be Tensor, not {type(input).__name__}")
    if not input._dtype.is_complex:
        raise RuntimeError(f"view_as_real is only supported for complex tensors, got {input._dtype.name}")
    view = make_tensor(input._storage, input._shape + (2,), tuple(2 * s for s in input._stride) + (1,),
                       2 * input._offset, input._dtype._part, input._device, input._version_ref,
                       input._base if input._base is not None else input)
    return _record(view, input, "view_as_real", True)


def view_as_complex(input: Tensor) -> Tensor:
    """A complex view of float32/float64 ``input`` whose last dim (size 2, stride 1) holds real and
    imaginary parts: the inverse of :func:`view_as_real` (shares storage).

    >>> tp.view_as_complex(tp.tensor([[1.0, 2.0]])).tolist()
    [(1+2j)]
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"view_as_complex(): argument 'input' must be Tensor, not {type(input).__name__}")
    dtype = input._dtype
    if dtype not in (_dt.float32, _dt.float64):
        raise RuntimeError(f"view_as_complex is only supported for float and double tensors, but got a tensor of "
                           f"scalar type: {dtype.name}")
    if not input._shape:
        raise RuntimeError("Input tensor must have one or more dimensions")
    if input._shape[-1] != 2:
        raise RuntimeError(f"Tensor must have a last dimension of size 2, got shape {list(input._shape)}")
    if input._stride[-1] != 1:
        raise RuntimeError(f"Tensor must have a last dimension with stride 1, got strides {list(input._stride)}")
    if any(s % 2 for s in input._stride[:-1]):
        raise RuntimeError(f"Tensor must have a stride divisible by 2 for all but last dimension, got strides "
                           f"{list(input._stride)}")
    if input._offset % 2:
        raise RuntimeError(f"Tensor must have a storage_offset divisible by 2, got {input._offset}")
    view = make_tensor(input._storage, input._shape[:-1], tuple(s // 2 for s in input._stride[:-1]), input._offset // 2,
                       dtype.to_complex(), input._device, input._version_ref,
                       input._base if input._base is not None else input)
    return _record(view, input, "view_as_complex", False)


# --- parts and construction ------------------------------------------------------------------
def complex_parts(z: Tensor) -> tuple[Tensor, Tensor]:
    """The real and imaginary parts of complex ``z`` as real views (differentiable)."""
    pairs = view_as_real(z)
    return pairs.select(-1, 0), pairs.select(-1, 1)


def from_parts(re: Tensor, im: Tensor) -> Tensor:
    """A new complex tensor from real tensors of one shape and dtype (differentiable)."""
    from .ops.joining import stack

    return view_as_complex(stack([re, im], -1))


def real(input: Tensor) -> Tensor:
    """The real part: a view for a complex ``input``, ``input`` itself for a real one."""
    if not isinstance(input, Tensor):
        raise TypeError(f"real(): argument 'input' must be Tensor, not {type(input).__name__}")
    return complex_parts(input)[0] if input._dtype.is_complex else input


def imag(input: Tensor) -> Tensor:
    """The imaginary part of complex ``input``, as a view."""
    if not isinstance(input, Tensor):
        raise TypeError(f"imag(): argument 'input' must be Tensor, not {type(input).__name__}")
    if not input._dtype.is_complex:
        raise RuntimeError(f"imag is not implemented for tensors with non-complex dtypes (got {input._dtype.name}).")
    return complex_parts(input)[1]


def conj(input: Tensor) -> Tensor:
    """The complex conjugate; ``input`` itself for a real tensor. Unlike PyTorch's lazy
    conjugate view, the result is a new tensor (docs/deviations.md)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"conj(): argument 'input' must be Tensor, not {type(input).__name__}")
    if not input._dtype.is_complex:
        return input
    re, im = complex_parts(input)
    return from_parts(re.clone(), -im)


def conj_physical(input: Tensor, *, out=None) -> Tensor:
    """The complex conjugate as a new tensor (``input`` itself when real)."""
    if out is not None:
        rehearse_out(conj_physical, locals())
    from .ops._common import write_out

    # out= must have the input's dtype, and PyTorch lets its graph through out= here.
    return write_out("conj_physical", out, conj(input), exact_dtype=True, refuse_autograd=False)


def resolve_conj(input: Tensor) -> Tensor:
    """``input``: tensorplug has no lazy conjugate bit to resolve."""
    return input


def is_conj(input: Tensor) -> bool:
    """False: tensorplug's conjugates are materialized."""
    return False


def angle(input: Tensor, *, out=None) -> Tensor:
    """The argument of each element, in radians: ``atan2(imag, real)`` for complex input; for a
    real one 0 where ``input >= 0``, pi where negative and NaN where NaN (as PyTorch)."""
    if out is not None:
        rehearse_out(angle, locals())
    if out is not None:
        from .ops._common import write_out

        return write_out("angle", out, angle(input))
    import tensorplug as tp

    if not isinstance(input, Tensor):
        raise TypeError(f"angle(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input._dtype.is_complex:
        re, im = complex_parts(input)
        return tp.atan2(im, re)
    x = input if input._dtype.is_floating_point else input.to(_dt.get_default_dtype())
    result = tp.where(x < 0, math.pi, 0.0).to(x._dtype)
    return tp.where(x != x, x, result)


def complex(real: Tensor, imag: Tensor, *, out=None) -> Tensor:
    """The complex tensor ``real + 1j * imag`` (float32 parts give complex64, float64 complex128;
    the parts broadcast).

    >>> tp.complex(tp.tensor([1.0]), tp.tensor([2.0])).tolist()
    [(1+2j)]
    """
    if out is not None:
        rehearse_out(complex, locals())
    from .ops._common import check_same_device, write_out
    from .views import broadcast_tensors

    for name, value in (("real", real), ("imag", imag)):
        if not isinstance(value, Tensor):
            raise TypeError(f"complex(): argument '{name}' must be Tensor, not {type(value).__name__}")
        if value._dtype not in (_dt.float32, _dt.float64, _dt.float16):
            raise RuntimeError(f"complex(): Expected both inputs to be Half, Float or Double tensors but got "
                               f"{real._dtype.name} and {imag._dtype.name}")
    if real._dtype is not imag._dtype:
        raise RuntimeError(f"complex(): Expected object of scalar type {real._dtype.name} but got scalar type "
                           f"{imag._dtype.name} for second argument")
    if real._dtype is _dt.float16:
        raise TypeError("complex(): complex32 (ComplexHalf) is not supported; use float32 or float64 parts")
    check_same_device("complex", real, imag)
    re, im = broadcast_tensors(real, imag)
    return write_out("complex", out, from_parts(re, im))


def polar(abs: Tensor, angle: Tensor, *, out=None) -> Tensor:
    """The complex tensor ``abs * (cos(angle) + 1j * sin(angle))``."""
    if out is not None:
        rehearse_out(polar, locals())
    import tensorplug as tp

    for name, value in (("abs", abs), ("angle", angle)):
        if not isinstance(value, Tensor):
            raise TypeError(f"polar(): argument '{name}' must be Tensor, not {type(value).__name__}")
    if abs._dtype is not angle._dtype or abs._dtype not in (_dt.float32, _dt.float64):
        raise RuntimeError(f"polar(): Expected both inputs to be Float or Double tensors of one dtype, but got "
                           f"{abs._dtype.name} and {angle._dtype.name}")
    return complex(abs * tp.cos(angle), abs * tp.sin(angle), out=out)


def complex_abs(input: Tensor) -> Tensor:
    """|z| of complex ``input`` as a real tensor (hypot of the parts); its gradient is z / |z|,
    and 0 at z = 0 as PyTorch's (sgn(0) = 0), where the square root's would be NaN."""
    import tensorplug as tp

    re, im = complex_parts(input)
    magnitude = tp.hypot(re, im)
    if not (magnitude._keys & _AUTOGRAD_MASK):
        return magnitude
    # (re^2 + im^2) / |z| has the gradient (re, im) / |z| (and the right higher derivatives). At
    # z = 0 the divisor is hypot(1, 0) = 1, reached through a real part replaced by 1, so neither
    # the gradient (0) nor hypot's own backward meets 0/0. The values come from hypot, which
    # neither overflows nor underflows.
    zero = magnitude == 0
    divisor = tp.hypot(tp.where(zero, 1.0, re), im)
    differentiable = (re * re + im * im) / divisor
    return magnitude.detach() + (differentiable - differentiable.detach())


# --- the Complex key's kernels ---------------------------------------------------------------
class _PassNode(Node):
    """The history of a primitive's preallocated output: its gradient goes, unchanged but for a
    cast, to the result the Complex kernel computed with real ops (which has the real graph)."""

    __slots__ = ("op_name", "dtype", "pairs")

    def __init__(self, edge, op_name: str, result: Tensor, pairs: bool):
        super().__init__((edge,))
        self.op_name = op_name
        self.dtype = result._dtype
        self.pairs = pairs

    def name(self) -> str:
        return "".join(p.capitalize() for p in self.op_name.strip("_").split("_")) + "Backward0"

    def backward(self, grads: tuple) -> tuple:
        grad = grads[0]
        if grad is None:
            return (None,)
        if self.pairs:
            grad = view_as_real(grad)
        return (grad if grad._dtype is self.dtype else grad.to(self.dtype),)


def _store(op_name: str, out: Tensor, result: Tensor, recording: bool) -> None:
    """Write ``result`` (a tensor of ``out``'s shape, or, for a complex ``out``, its real pairs)
    into ``out``; while recording, ``out``'s gradient goes to ``result``."""
    from .ops.copying import COPY

    pairs = out._dtype.is_complex and not result._dtype.is_complex
    target = view_as_real(out) if out._dtype.is_complex else out
    source = view_as_real(result) if result._dtype.is_complex else result
    if source._dtype.is_complex or target._dtype.is_complex:
        raise RuntimeError(f"internal error: {op_name}: complex result for a real output")
    keys = (target._keys | source._keys | local_state.include) & local_state.mask & ~_AUTOGRAD_MASK
    COPY.lookup(keys)(target, source)
    if recording and result._keys & _AUTOGRAD_MASK:
        set_history(out, _PassNode(gradient_edge(result), op_name, result, pairs))


def _check_target(op_name: str, out: Tensor) -> None:
    if out._keys & _AUTOGRAD_MASK and out.grad_fn is None:
        raise RuntimeError(f"{op_name}: a leaf Variable that requires grad is being used in an in-place operation.")
    if out._base is not None:
        raise RuntimeError(f"{op_name}: writing into a view of a complex tensor while recording gradients is not "
                           f"supported (docs/complex.md); write into a new tensor instead")


def complex_primitive(op: dispatcher.Operator | str, compute, inplace: bool = False) -> None:
    """Register ``compute(out, *args) -> result`` as the Complex kernel of primitive ``op``, whose
    kernels take a preallocated output first. ``result`` is computed with real ops (so autograd
    records it) as a tensor of ``out``'s shape, or as ``out``'s real pairs; the kernel copies it
    into ``out`` and, while recording, links ``out``'s gradient to it. ``inplace``: ``out`` is
    also an input (scatter_, index_put_ read the values they keep from it), so its own history
    counts too."""
    op = dispatcher.get_operator(op) if isinstance(op, str) else op
    name = op.name

    def kernel(below, out, *args):
        recording = bool(local_state.mask & _AUTOGRAD_MASK) and any(
            isinstance(a, Tensor) and a._keys & _AUTOGRAD_MASK for a in (args + (out,) if inplace else args))
        if recording:
            _check_target(name, out)
            # The graph saves the inputs: an input that is also the output must survive the write.
            args = tuple(a.clone() if isinstance(a, Tensor) and a._storage is out._storage else a for a in args)
        _store(name, out, compute(out, *args), recording)

    kernel.__qualname__ = f"complex_{name}"
    dispatcher.register_kernel(op, COMPLEX, kernel)


def _parts(x):
    if isinstance(x, Tensor):
        return complex_parts(x) if x._dtype.is_complex else (x, None)
    x = _builtin_complex(x)
    return x.real, x.imag


def _add_parts(a, b, sign: float):
    if b is None:
        return a
    if a is None:
        return -b if sign < 0 else b
    return a + b if sign > 0 else a - b


def _addsub(sign: float):
    def compute(out, a, b):
        ar, ai = _parts(a)
        br, bi = _parts(b)
        re = _add_parts(ar, br, sign)
        im = _add_parts(ai, bi, sign)
        return _pack(out, re, im)

    return compute


def _pack(out: Tensor, re, im) -> Tensor:
    """Complex result of ``out``'s shape from parts that may be tensors or numbers."""
    import tensorplug as tp

    part = out._dtype._part
    if not isinstance(re, Tensor):
        re = tp.full(out._shape, re, dtype=part, device=out._device)
    if not isinstance(im, Tensor):
        im = tp.full(out._shape, im, dtype=part, device=out._device)
    return from_parts(re, im)


def _mul(out, a, b):
    ar, ai = _parts(a)
    br, bi = _parts(b)
    return _pack(out, ar * br - ai * bi, ar * bi + ai * br)


def _div(out, a, b):
    from .complex_math import cdiv

    ar, ai = _parts(a)
    br, bi = _parts(b)
    if not isinstance(b, Tensor):
        scale = br * br + bi * bi
        return _pack(out, (ar * br + ai * bi) / scale, (ai * br - ar * bi) / scale)
    # A tensor divisor: scaled by |b| (complex_math.cdiv), so |b|^2 cannot overflow.
    return _pack(out, *cdiv(ar, ai, br, bi))


def _neg(out, a):
    return view_as_real(a).neg()


def _copy(out, src):
    import tensorplug as tp

    if out._dtype.is_complex:
        if src._dtype.is_complex:
            return view_as_real(src)
        part = out._dtype._part
        re = src.to(part)
        return from_parts(re, tp.zeros_like(re))
    if out._dtype is _dt.bool:
        # True where either part is nonzero (PyTorch's and NumPy's), nothing discarded: no warning.
        re, im = complex_parts(src)
        return (re != 0) | (im != 0)
    warnings.warn("Casting complex values to real discards the imaginary part", UserWarning, stacklevel=4)
    return complex_parts(src)[0]


def _fill(below, out, value):
    from .ops.copying import FILL

    value = _builtin_complex(value)
    pairs = view_as_real(out)
    for index, part in ((0, value.real), (1, value.imag)):
        target = pairs.select(-1, index)
        FILL.lookup((target._keys | local_state.include) & local_state.mask)(target, part)


def _sum(out, input, dims):
    pairs = view_as_real(input)
    return pairs.sum(dim=dims, keepdim=True) if dims else pairs.clone()


def _abs(out, input):
    return complex_abs(input)


def _elementwise(function):
    """The Complex kernel's compute for a unary function of complex_math (parts in, parts out)."""

    def compute(out, a):
        return from_parts(*function(*complex_parts(a)))

    compute.__name__ = function.__name__
    return compute


def _scaled_log(factor: float):
    def compute(out, a):
        from .complex_math import clog

        re, im = clog(*complex_parts(a))
        return from_parts(re * factor, im * factor)

    return compute


def _exp2(out, a):
    from .complex_math import cexp

    re, im = complex_parts(a)
    return from_parts(*cexp(re * _LN2, im * _LN2))


def _square(out, a):
    re, im = complex_parts(a)
    return from_parts(re * re - im * im, 2.0 * re * im)


def _classify(test: str):
    """isnan / isinf / isfinite: of either part (nan, inf), of both parts (finite), as PyTorch."""
    import tensorplug as tp

    def compute(out, a):
        re, im = complex_parts(a)
        if test == "isfinite":
            return tp.isfinite(re) & tp.isfinite(im)
        function = getattr(tp, test)
        return function(re) | function(im)

    return compute


def _pow(out, a, b):
    from .complex_math import cpow

    re, im = cpow(_parts(a), _parts(b))
    return _pack(out, re, im)


def _equal_parts(a, b):
    ar, ai = _parts(a)
    br, bi = _parts(b)
    return (ar == br) & (ai == bi)


def _eq(out, a, b):
    return _equal_parts(a, b)


def _ne(out, a, b):
    return ~_equal_parts(a, b)


def _as_pairs(x, out: Tensor) -> Tensor:
    if isinstance(x, Tensor):
        return view_as_real(x)
    return view_as_real(_pack(out, _builtin_complex(x).real, _builtin_complex(x).imag))


def _where(out, condition, a, b):
    import tensorplug as tp

    return tp.where(condition.unsqueeze(-1), _as_pairs(a, out), _as_pairs(b, out))


def _index_get(out, a, indices):
    # The indices address a's leading dims, which its pairs share.
    return view_as_real(a)[tuple(indices)]


def _matmul(out, a, b):
    import tensorplug as tp

    ar, ai = complex_parts(a)
    br, bi = complex_parts(b)
    return from_parts(tp.matmul(ar, br) - tp.matmul(ai, bi), tp.matmul(ar, bi) + tp.matmul(ai, br))


def _ones_like_parts(re, dim: int):
    """(1, 0) parts of ``re``'s shape with ``dim`` of size 1: the empty product."""
    import tensorplug as tp

    shape = re._shape[:dim] + (1,) + re._shape[dim + 1:]
    return (tp.ones(shape, dtype=re._dtype, device=re._device), tp.zeros(shape, dtype=re._dtype, device=re._device))


def _prod(out, input, dims):
    """The product along each of ``dims`` (kept, size 1) by halving: the first half of a dim
    times its second half, log2(n) complex multiplications of real ops, so the gradient needs no
    division by the elements (which may be 0)."""
    from .complex_math import cmul
    from .ops.joining import cat

    re, im = complex_parts(input)
    for d in dims:
        n = re._shape[d]
        if n == 0:
            re, im = _ones_like_parts(re, d)
            continue
        while n > 1:
            half, odd = n // 2, n % 2
            re_, im_ = cmul(re.narrow(d, 0, half), im.narrow(d, 0, half),
                            re.narrow(d, half, half), im.narrow(d, half, half))
            if odd:
                re_, im_ = cat([re_, re.narrow(d, n - 1, 1)], d), cat([im_, im.narrow(d, n - 1, 1)], d)
            re, im, n = re_, im_, half + odd
    return from_parts(re, im)


def _cumsum(out, input, dim):
    # dim is non-negative (the frontend normalizes it), so it addresses the pairs' same dim.
    return view_as_real(input).cumsum(dim)


def _cumprod(out, input, dim):
    """Inclusive products along ``dim`` by doubling steps (Hillis-Steele): after the step of
    width k each element holds the product of the 2k elements ending at it; log2(n) complex
    multiplications, no division."""
    from .complex_math import cmul
    from .ops.joining import cat

    re, im = complex_parts(input)
    n, k = re._shape[dim], 1
    while k < n:
        tail = cmul(re.narrow(dim, k, n - k), im.narrow(dim, k, n - k), re.narrow(dim, 0, n - k), im.narrow(dim, 0, n - k))
        re = cat([re.narrow(dim, 0, k), tail[0]], dim)
        im = cat([im.narrow(dim, 0, k), tail[1]], dim)
        k *= 2
    return from_parts(re, im)


def _pair_index(index: Tensor) -> Tensor:
    """An index for the pairs of a complex tensor: each entry repeated for both parts."""
    return index.unsqueeze(-1).expand(index._shape + (2,))


def _number_pairs(value, like: Tensor) -> Tensor:
    """A complex number as a (2,) tensor of ``like``'s part dtype, broadcasting over pairs."""
    import tensorplug as tp

    value = _builtin_complex(value)
    return tp.tensor([value.real, value.imag], dtype=like._dtype._part, device=like._device)


def _gather(out, input, dim, index):
    return view_as_real(input).gather(dim, _pair_index(index))


def _scatter(out, dim, index, source, reduce):
    import tensorplug as tp

    pairs = view_as_real(out)
    if isinstance(source, Tensor):
        source = view_as_real(source)
    else:
        source = _number_pairs(source, out).expand(index._shape + (2,))
    return tp.scatter(pairs, dim, _pair_index(index), source, reduce=reduce)


def _index_put(out, indices, values, accumulate):
    # The indices address the leading dims, which the pairs share; a value's parts ride along.
    pairs = view_as_real(out).clone()
    source = view_as_real(values) if isinstance(values, Tensor) else _number_pairs(values, out)
    return pairs.index_put_(tuple(indices), source, accumulate)


def _complex_fallback(op, below, args, kwargs):
    """The Complex key's answer for an op with no Complex kernel: a composite op decomposes (its
    primitives may support complex); anything else is refused before any kernel runs."""
    if op.decomposition is not None:
        return op.decomposition(*args, **kwargs)
    dtypes = sorted({a._dtype.name for a in _tensors(args, kwargs)})
    raise NotImplementedError(f"{op.name}: not implemented for complex tensors (got {', '.join(dtypes)}); "
                              f"docs/complex.md lists the ops that support them")


def _tensors(args, kwargs):
    for value in list(args) + list(kwargs.values()):
        if isinstance(value, Tensor):
            yield value
        elif isinstance(value, (list, tuple)):
            yield from (v for v in value if isinstance(v, Tensor))


def register() -> None:
    """Register the Complex key's fallback and kernels, and allow complex dtypes in the
    elementwise ops that have a kernel here."""
    from .ops import elementwise
    from .ops.copying import COPY, FILL
    from .ops.indexing import GATHER, INDEX_GET, INDEX_PUT, SCATTER
    from .ops.linalg import MATMUL
    from .ops.reductions import REDUCE, SCAN

    dispatcher.register_key_fallback(COMPLEX, _complex_fallback)
    complex_primitive(COPY, _copy)
    dispatcher.register_kernel(FILL, COMPLEX, _fill)
    complex_primitive(REDUCE["sum"], _sum)
    complex_primitive(REDUCE["prod"], _prod)
    complex_primitive(SCAN["cumsum"], _cumsum)
    complex_primitive(SCAN["cumprod"], _cumprod)
    complex_primitive(GATHER, _gather)
    complex_primitive(SCATTER, _scatter, inplace=True)
    complex_primitive(INDEX_PUT, _index_put, inplace=True)
    kernels = {"add": _addsub(1.0), "sub": _addsub(-1.0), "mul": _mul, "div": _div}
    for name, compute in kernels.items():
        spec = elementwise.BINARY[name].spec
        spec.dtypes = spec.dtypes | frozenset(_dt.complex_dtypes)
        complex_primitive(spec.op, compute)
    for name, compute in (("eq", _eq), ("ne", _ne)):
        spec = elementwise.COMPARE[name].spec
        spec.dtypes = spec.dtypes | frozenset(_dt.complex_dtypes)
        complex_primitive(spec.op, compute)
    from . import complex_math as cm

    unary = {"neg": _neg, "abs": _abs, "exp": _elementwise(cm.cexp), "log": _elementwise(cm.clog),
             "sqrt": _elementwise(cm.csqrt), "rsqrt": _elementwise(cm.crsqrt),
             "reciprocal": _elementwise(cm.creciprocal), "square": _square, "exp2": _exp2,
             "expm1": _elementwise(cm.cexpm1), "log1p": _elementwise(cm.clog1p),
             "log2": _scaled_log(1.0 / _LN2), "log10": _scaled_log(1.0 / math.log(10.0)),
             "sin": _elementwise(cm.csin), "cos": _elementwise(cm.ccos), "tan": _elementwise(cm.ctan),
             "asin": _elementwise(cm.casin), "acos": _elementwise(cm.cacos), "atan": _elementwise(cm.catan),
             "sinh": _elementwise(cm.csinh), "cosh": _elementwise(cm.ccosh), "tanh": _elementwise(cm.ctanh),
             "sigmoid": _elementwise(cm.csigmoid),
             "isnan": _classify("isnan"), "isinf": _classify("isinf"), "isfinite": _classify("isfinite")}
    for name, compute in unary.items():
        spec = elementwise.UNARY[name].spec
        spec.dtypes = spec.dtypes | frozenset(_dt.complex_dtypes)
        complex_primitive(spec.op, compute)
    spec = elementwise.BINARY["pow"].spec
    spec.dtypes = spec.dtypes | frozenset(_dt.complex_dtypes)
    complex_primitive(spec.op, _pow)
    complex_primitive(elementwise.WHERE, _where)
    complex_primitive(INDEX_GET, _index_get)
    complex_primitive(MATMUL, _matmul)
