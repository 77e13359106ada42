"""PyTorch's other names for existing ops, its legacy Tensor methods and its module constants:
the spellings real programs use (``torch.pi``, ``x.arctan2(y)``, ``x.greater(0)``,
``x.new(2, 3)``, ``x.get_device()``, ``torch.typename(x)``...), each a thin call into the op it
names, so that a program ports without renaming anything (issue 13).
"""
from __future__ import annotations

import math
import warnings

from .. import dtypes as _dt
from ..tensor import Tensor
from ._pointwise_args import check_tensor, inplace_variant

__all__ = [
    "pi", "e", "inf", "nan", "newaxis", "adjoint", "detach", "detach_", "split_with_sizes", "unsafe_chunk", "unsafe_split",
    "unsafe_split_with_sizes", "get_device", "is_inference", "is_neg", "resolve_neg", "typename",
    "set_default_tensor_type", "set_warn_always", "is_warn_always_enabled", "set_flush_denormal", "mvlgamma",
    "empty_permuted", "get_device_module", "is_storage", "conj_physical_",
]

#: PyTorch's top-level spellings of in-place methods: ``tp.exp_(x)`` is ``x.exp_()``.
_INPLACE_FUNCTIONS = (
    "abs_", "acos_", "acosh_", "addmv_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_", "arctanh_",
    "as_strided_", "asin_", "asinh_", "atan_", "atanh_", "ceil_", "clamp_", "clamp_max_", "clamp_min_",
    "clip_", "cos_", "cosh_", "deg2rad_", "erf_", "erfc_", "exp2_", "exp_", "expm1_", "fill_", "fix_",
    "floor_", "frac_", "gcd_", "index_put_", "lcm_", "ldexp_", "log10_", "log1p_", "log2_", "log_", "logit_",
    "nan_to_num_", "neg_", "negative_", "rad2deg_", "reciprocal_", "resize_as_", "round_", "rsqrt_",
    "sigmoid_", "sin_", "sinc_", "sinh_", "sqrt_", "square_", "tan_", "tanh_", "trunc_", "xlogy_", "zero_",
)
__all__ += list(_INPLACE_FUNCTIONS)

pi, e, inf, nan = math.pi, math.e, math.inf, math.nan
newaxis = None  # x[:, tp.newaxis], as NumPy spells None in an index


def _alias(target_name: str, name: str):
    """A function calling the Tensor method (or tp function) ``target_name`` under ``name``."""

    def call(input, *args, **kwargs):
        check_tensor(name, input, "input")
        return getattr(input, target_name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"``{name}``: PyTorch's other name for ``{target_name}``."
    return call


detach, detach_ = _alias("detach", "detach"), _alias("detach_", "detach_")
unsafe_chunk, unsafe_split = _alias("chunk", "unsafe_chunk"), _alias("split", "unsafe_split")


globals().update({name: _alias(name, name) for name in _INPLACE_FUNCTIONS})


def split_with_sizes(input, split_sizes, dim=0) -> tuple:
    """``split`` into pieces of the given sizes (which must add up to the dim's size)."""
    check_tensor("split_with_sizes", input, "input")
    split_sizes = [int(s) for s in split_sizes]
    size = input.shape[dim] if input.ndim else 0
    if sum(split_sizes) != size:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {size} (input tensor's size at "
                           f"dimension {dim}), but got split_sizes={split_sizes}")
    return input.split(split_sizes, dim)


unsafe_split_with_sizes = split_with_sizes


def adjoint(input) -> Tensor:
    """The conjugate transpose of the last two dims (a view, as ``mH``)."""
    check_tensor("adjoint", input, "input")
    if input.ndim < 2:
        raise RuntimeError(f"tensor.adjoint() is only supported on matrices or batches of matrices. Got "
                           f"{input.ndim}-D tensor.")
    return input.mH


def _H(self) -> Tensor:
    if self.ndim != 2:
        hint = ". For batches of matrices, consider using tensor.mH" if self.ndim > 2 else ""
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.ndim}-D tensor{hint}")
    return self.mH


def get_device(input) -> int:
    """The device's index, -1 on the CPU."""
    check_tensor("get_device", input, "input")
    device = input.device
    return -1 if device.type == "cpu" else (device.index or 0)


def is_inference(input) -> bool:
    """Whether ``input`` is an inference tensor: never here (``inference_mode`` is ``no_grad``)."""
    check_tensor("is_inference", input, "input")
    return False


def is_neg(input) -> bool:
    """PyTorch's lazy negation bit: tensorplug never sets it (negation computes)."""
    check_tensor("is_neg", input, "input")
    return False


def resolve_neg(input) -> Tensor:
    check_tensor("resolve_neg", input, "input")
    return input


def typename(obj) -> str:
    """A tensor's legacy type name ('tensorplug.FloatTensor'), else the object's type's
    qualified name ('int', 'tensorplug.nn.layers.Linear')."""
    if isinstance(obj, Tensor):
        return obj.type()
    cls = obj if isinstance(obj, type) else type(obj)
    module = cls.__module__
    return cls.__qualname__ if module in ("builtins", None) else f"{module}.{cls.__qualname__}"


def set_default_tensor_type(t) -> None:
    """Deprecated in PyTorch 2.1 (and warns so here): the default dtype from a legacy type or its
    name ('torch.FloatTensor'); a 'cuda' name also makes CUDA the default device."""
    from ..device import set_default_device
    from ..legacy import _LEGACY_DTYPES, _LegacyMeta

    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use torch.set_default_dtype() "
                  "and torch.set_default_device() as alternatives.", UserWarning, stacklevel=2)
    if isinstance(t, _LegacyMeta):
        dtype, device = t.dtype, None
    elif isinstance(t, str):
        *prefix, name = t.split(".")
        if name not in _LEGACY_DTYPES:
            raise TypeError(f"invalid type: '{t}'")
        dtype, device = _LEGACY_DTYPES[name], ("cuda" if "cuda" in prefix else None)
    else:
        raise TypeError(f"set_default_tensor_type(): expected a legacy tensor type or its name, got {type(t).__name__}")
    if not dtype.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type (got {dtype.name})")
    _dt.set_default_dtype(dtype)
    if device is not None:
        set_default_device(device)


_warn_always = False


def set_warn_always(b: bool) -> None:
    """PyTorch's flag for warnings that it otherwise gives once; kept for ``is_warn_always_enabled``
    (Python's own filters decide how often tensorplug's warnings show)."""
    global _warn_always
    _warn_always = bool(b)


def is_warn_always_enabled() -> bool:
    return _warn_always


def set_flush_denormal(mode: bool) -> bool:
    """False: flushing denormals to zero is not supported (the kernels' threads keep IEEE
    semantics), which is what PyTorch answers on CPUs without the feature."""
    return False


def _i0(self) -> Tensor:
    from ...special import i0

    return i0(self)


def _igamma(self, other) -> Tensor:
    from ...special import gammainc

    return gammainc(self, other)


def _igammac(self, other) -> Tensor:
    from ...special import gammaincc

    return gammaincc(self, other)


def mvlgamma(input, p) -> Tensor:
    from ...special import multigammaln

    return multigammaln(input, p)




def get_device_module(device=None):
    """The ``tp.<type>`` module of a device (``tp.cpu`` by default, as PyTorch without an
    accelerator)."""
    import tensorplug

    from ..device import device as as_device

    kind = "cpu" if device is None else (device if isinstance(device, str) else as_device(device).type).split(":")[0]
    try:
        return getattr(tensorplug, kind)  # a submodule, or an installed device type's runtime module
    except AttributeError:
        raise RuntimeError(f"Device '{kind}' does not have a corresponding module registered as 'tensorplug.{kind}'.") \
            from None


def is_storage(obj) -> bool:
    from ..storage import TypedStorage, UntypedStorage

    return isinstance(obj, (TypedStorage, UntypedStorage))


def _conj_physical(input) -> Tensor:
    return input.conj_physical()


conj_physical_ = inplace_variant(_conj_physical, "conj_physical_")


def _polygamma(self, n) -> Tensor:
    from ...special import polygamma

    return polygamma(n, self)


def _to_device_type(kind: str):
    """``x.xpu()``-style moves: to the device type ``kind`` (an error naming it where no backend
    provides it)."""

    def move(self, device=None, non_blocking=False, memory_format=None) -> Tensor:
        target = kind if device is None else (f"{kind}:{device}" if isinstance(device, int) else device)
        return self.to(target, non_blocking=non_blocking)

    move.__name__ = move.__qualname__ = kind
    return move


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None, requires_grad=False,
                   pin_memory=False) -> Tensor:
    """An uninitialized tensor of ``size`` whose memory runs through the dims in the order
    ``physical_layout`` gives, outermost first (``(0, 2, 3, 1)`` is channels-last)."""
    from ..factories import empty

    size, order = tuple(int(s) for s in size), tuple(int(d) for d in physical_layout)
    if sorted(order) != list(range(len(size))):
        raise RuntimeError(f"empty_permuted: physical_layout {list(order)} must be a permutation of the {len(size)} "
                           f"dims of size {list(size)}")
    dense = empty(*(size[d] for d in order), dtype=dtype, device=device)
    inverse = [order.index(d) for d in range(len(size))]
    return dense.permute(*inverse).requires_grad_(requires_grad)


def _new(self, *args, **kwargs) -> Tensor:
    """``x.new(...)``: the legacy constructor (``tp.Tensor(...)``'s rules) in ``x``'s dtype and
    on its device."""
    from ..legacy import legacy_construct

    kwargs.setdefault("device", self.device)
    return legacy_construct("new", self.dtype, args, kwargs)


def _is_set_to(self, other) -> bool:
    """Whether both tensors view the same memory with the same shape, strides and offset."""
    return (self._storage is other._storage and self._offset == other._offset and self._shape == other._shape
            and self._stride == other._stride)


def _output_nr(self) -> int:
    """Which output of its ``grad_fn`` this tensor is (0 for a leaf)."""
    from ..autograd.derivatives import _output_nr as output_nr

    return output_nr(self)


def _complex_of(dtype):
    def convert(self, memory_format=None) -> Tensor:
        return self.to(dtype)

    return convert


TENSOR_METHODS: dict = {
    "multiply_": _alias("mul_", "multiply_"), "subtract_": _alias("sub_", "subtract_"),
    "adjoint": adjoint, "H": property(_H),
    "unsafe_chunk": unsafe_chunk, "unsafe_split": unsafe_split,
    "unsafe_split_with_sizes": split_with_sizes, "get_device": get_device, "is_neg": is_neg,
    "resolve_neg": resolve_neg, "i0": _i0, "i0_": inplace_variant(_i0, "i0_"), "igamma": _igamma,
    "igammac": _igammac, "mvlgamma": mvlgamma, "igamma_": inplace_variant(_igamma, "igamma_"),
    "igammac_": inplace_variant(_igammac, "igammac_"), "mvlgamma_": inplace_variant(mvlgamma, "mvlgamma_"),
    "polygamma_": inplace_variant(_polygamma, "polygamma_"), "to_sparse_coo": lambda self: self.to_sparse(),
    "conj_physical_": conj_physical_, "split_with_sizes": split_with_sizes, "xpu": _to_device_type("xpu"), "ipu": _to_device_type("ipu"), "mtia": _to_device_type("mtia"),
    "new": _new, "is_set_to": _is_set_to,
    "cfloat": _complex_of(_dt.complex64), "cdouble": _complex_of(_dt.complex128),
    "const_data_ptr": lambda self: self.data_ptr(),
    "to_dense": lambda self, dtype=None, *, masked_grad=None: self if dtype is None else self.to(dtype),
    "record_stream": lambda self, stream: None,  # memory is never reused before its queue finishes
    "output_nr": property(_output_nr),
    **{f"is_{kind}": property(lambda self: False) for kind in (
        "mps", "xla", "ipu", "mtia", "maia", "vulkan", "mkldnn", "quantized", "nested", "sparse_csr")},
}
