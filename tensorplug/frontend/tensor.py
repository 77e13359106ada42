"""The Tensor object: a strided view of a backend storage, plus the helpers that make tensors.

A tensor is metadata over a storage owned by its device's backend: shape, strides and offset in
elements, a dtype, a device, and its dispatch key set. Views share the storage and the version
counter (a one-element list), so an in-place change through any view is seen by autograd.

Operators, views and methods are attached by ``frontend.methods``; this module holds only the
object and its construction, so that every other module can import it.
"""
from __future__ import annotations

import operator

import numpy as np

from .. import _hotpath, dispatcher
from ..backends import _registry
from . import dtypes as _dt
from .device import UNINDEXED_DEVICE_TYPES, canonical_device, device
from .shapes import _layout_cache as _layouts, contiguous_layout

__all__ = ["Tensor", "make_tensor", "empty_tensor", "bind_device", "is_tensor", "keyset_for", "replace_tensor_data"]

_AUTOGRAD_MASK = dispatcher.AUTOGRAD.mask
_COMPLEX_MASK = dispatcher.COMPLEX.mask


class Tensor:
    """A multi-dimensional array on a device, with PyTorch's semantics.

    Create tensors with factories (``tp.tensor``, ``tp.zeros``, ``tp.randn``, ...); calling the
    class (``tp.Tensor([1, 2])``, ``tp.Tensor(2, 3)``) follows PyTorch's legacy constructor.
    """

    __slots__ = (
        "_storage", "_shape", "_stride", "_offset", "_dtype", "_device", "_keys", "_version_ref",
        "_base", "grad", "grad_fn", "_autograd", "__weakref__",
    )

    def __new__(cls, *args, **kwargs):
        if cls is not Tensor:  # subclasses (nn.Parameter, Buffer) build themselves
            return object.__new__(cls)
        # PyTorch's legacy constructor: tp.Tensor([1, 2]), tp.Tensor(2, 3), ... (legacy.py).
        from .legacy import legacy_construct

        return legacy_construct("Tensor", None, args, dict(kwargs))

    def __init__(self, *args, **kwargs):
        pass  # __new__ made the tensor

    # --- the attributes backends read -------------------------------------------------------
    # Read-only properties whose getter is C (operator.attrgetter): every kernel adapter reads
    # them several times per call, and a Python getter's frame cost more than the slot read
    # (issue 14).
    shape = property(operator.attrgetter("_shape"), doc="The tensor's sizes, a tuple of ints.")
    dtype = property(operator.attrgetter("_dtype"), doc="The tensor's element type.")
    device = property(operator.attrgetter("_device"), doc="The device the tensor's memory is on.")

    def stride(self, dim=None):
        if dim is None:
            return self._stride
        from .shapes import normalize_dim

        return self._stride[normalize_dim("stride", dim, len(self._shape))]

    def storage_offset(self) -> int:
        return self._offset

    # --- plain metadata ---------------------------------------------------------------------
    ndim = property(_hotpath.tensor_ndim, doc="The number of dims, len(shape).")  # C: see shape

    def dim(self) -> int:
        return len(self._shape)

    ndimension = dim  # PyTorch's older name, still in public scripts

    def size(self, dim=None):
        if dim is None:
            return self._shape
        from .shapes import normalize_dim

        return self._shape[normalize_dim("size", dim, len(self._shape))]

    def numel(self) -> int:
        return contiguous_layout(self._shape)[1]

    nelement = numel

    def element_size(self) -> int:
        return self._dtype.itemsize

    @property
    def itemsize(self) -> int:
        return self._dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.numel() * self._dtype.itemsize

    def is_contiguous(self, memory_format=None) -> bool:
        if memory_format is not None:
            from . import memory_format as _mf

            fmt = _mf.check_memory_format("is_contiguous", memory_format)
            return _mf.is_contiguous_as(self._shape, self._stride, fmt)
        expected = 1
        for size, stride in zip(reversed(self._shape), reversed(self._stride)):
            if size != 1:
                if stride != expected:
                    return False
                expected *= size
        return True

    def is_floating_point(self) -> bool:
        return self._dtype.is_floating_point

    def is_complex(self) -> bool:
        return self._dtype.is_complex

    def is_inference(self) -> bool:
        """False: tensorplug's inference_mode is no_grad and makes no inference tensors (docs/deviations.md)."""
        return False

    @property
    def is_cpu(self) -> bool:
        return self._device.type == "cpu"

    @property
    def is_xpu(self) -> bool:
        return self._device.type == "xpu"  # a plugin may provide the device type

    @property
    def is_meta(self) -> bool:
        return self._device.type == "meta"

    @property
    def _version(self) -> int:
        """How many in-place changes the storage has seen (shared by all views), as in PyTorch."""
        return self._version_ref[0]

    # --- autograd flags (the engine lives in frontend.autograd) ------------------------------
    @property
    def requires_grad(self) -> bool:
        return self._keys & _AUTOGRAD_MASK != 0

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        self.requires_grad_(flag)

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        if requires_grad and self._dtype.category < 2:
            raise RuntimeError(f"only Tensors of floating point and complex dtype can require gradients, got {self._dtype}")
        if not requires_grad and self.grad_fn is not None:
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use a computed "
                "variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach()."
            )
        if requires_grad:
            self._keys |= _AUTOGRAD_MASK
        else:
            self._keys &= ~_AUTOGRAD_MASK
        return self

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    def _assign_data(self, value: "Tensor") -> None:
        # `t.data = x` and the augmented forms (`p.data += -lr * p.grad`, which Python ends with
        # that assignment) swap the values under the tensor, keeping its identity and autograd
        # state; PyTorch refuses a non-tensor and non-differentiable values for a tensor that
        # requires grad, before anything changes.
        if not isinstance(value, Tensor):
            raise TypeError(f"Tensor.data: the new data has to be a Tensor, but got {type(value).__name__}")
        if self._keys & _AUTOGRAD_MASK and value._dtype.category < 2:
            raise RuntimeError(
                f"Tensor.data: data set to a tensor that requires gradients must be floating point or complex "
                f"dtype, got {value._dtype} (the tensor is {self._dtype}, shape {tuple(self._shape)})")
        replace_tensor_data(self, value)

    # Reading is detach() in C (see shape): a manual optimizer step reads p.data for every parameter.
    data = property(_hotpath.detached, _assign_data,
                    doc="This tensor's values outside the graph: detach(); assigning swaps them in place.")

    def detach(self) -> "Tensor":
        """A tensor sharing this one's storage and version counter, outside the graph."""
        return make_tensor(self._storage, self._shape, self._stride, self._offset, self._dtype, self._device, self._version_ref, self)

    # --- identity -------------------------------------------------------------------------
    __hash__ = object.__hash__

    def __reduce_ex__(self, protocol):
        if self._device.type == "meta":  # no values: its shape and dtype are the whole tensor
            return (_rebuild_meta_tensor, (self._shape, self._dtype.name, self.requires_grad))
        # Pickling (for DataLoader workers and multiprocessing) goes through host memory;
        # bfloat16 travels as float32 (exact), since NumPy may lack bfloat16.
        values = self.detach().cpu()
        if values._dtype is _dt.bfloat16:
            values = values.float()
        return (_rebuild_tensor, (values.numpy().copy(), str(self._device), self.requires_grad, self._dtype.name))


def _rebuild_tensor(array: np.ndarray, device_name: str, requires_grad: bool, dtype_name: str | None = None) -> Tensor:
    from .factories import from_numpy

    t = from_numpy(np.ascontiguousarray(array))
    if dtype_name is not None and dtype_name != t._dtype.name:
        t = t.to(getattr(_dt, dtype_name))
    if device_name != "cpu":
        t = t.to(device_name)
    return t.requires_grad_(requires_grad) if requires_grad else t


def _rebuild_meta_tensor(shape: tuple, dtype_name: str, requires_grad: bool) -> Tensor:
    t = _empty_tensor(tuple(shape), getattr(_dt, dtype_name), resolve_device("meta"))
    return t.requires_grad_(True) if requires_grad else t


def replace_tensor_data(target: Tensor, source: Tensor) -> None:
    """Make ``target`` view ``source``'s data (storage, layout, dtype, device) in place, keeping its
    identity and its requires_grad flag: what ``t.data = x`` does in PyTorch."""
    if not isinstance(source, Tensor):
        raise TypeError(f"data must be a Tensor, not {type(source).__name__}")
    grad_bit = target._keys & _AUTOGRAD_MASK
    target._storage = source._storage
    target._shape = source._shape
    target._stride = source._stride
    target._offset = source._offset
    target._dtype = source._dtype
    target._device = source._device
    target._version_ref = source._version_ref
    target._keys = (source._keys & ~_AUTOGRAD_MASK) | grad_bit


_new = object.__new__


def make_tensor(storage, shape: tuple, stride: tuple, offset: int, dtype: _dt.dtype, dev: device, version=None, base=None) -> Tensor:
    """A tensor over ``storage`` (no checks: callers pass a layout that fits the storage)."""
    t = _new(Tensor)
    t._storage = storage
    t._shape = shape
    t._stride = stride
    t._offset = offset
    t._dtype = dtype
    t._device = dev
    t._keys = keyset_for(dev, dtype) if dtype._part is not None else dev._keymask or bind_device(dev)._keymask
    t._version_ref = [0] if version is None else version
    t._base = base
    t.grad = None
    t.grad_fn = None
    t._autograd = None
    return t


def _empty_tensor(shape: tuple, dtype: _dt.dtype, dev: device) -> Tensor:
    """A new contiguous tensor with uninitialized memory; ``dev`` must be canonical.

    ``empty_tensor`` below is this function in C (tensorplug/csrc/hotpath.cpp); it calls this one
    for whatever it does not cover (a backend not loaded yet, an undeclared dtype, ...).
    """
    backend = dev._backend
    if backend is None:
        backend = bind_device(dev)._backend
    if dtype.__class__ is type:  # dtype=bool, int, float or complex, as PyTorch reads them
        dtype = _dt.as_dtype(dtype)
    if dtype._part is not None:
        return _empty_complex(shape, dtype, dev)
    if dtype not in dev._dtypes:  # one set lookup: a dtype the backend did not declare never reaches it
        raise undeclared_dtype_error(dev, dtype)
    # The layout cache read inline: one dict lookup instead of a call on every allocation.
    stride, numel = _layouts.get(shape) or contiguous_layout(shape)
    storage = backend.allocate(numel * dtype.itemsize, dev.index)
    t = _new(Tensor)
    t._storage = storage
    t._shape = shape
    t._stride = stride
    t._offset = 0
    t._dtype = dtype
    t._device = dev
    t._keys = dev._keymask
    t._version_ref = [0]
    t._base = None
    t.grad = None
    t.grad_fn = None
    t._autograd = None
    return t


def undeclared_dtype_error(dev: device, dtype: _dt.dtype, op: str = "") -> TypeError:
    """The error for a ``dtype`` that ``dev``'s backend does not declare, raised before any
    kernel runs (``op``, when given, names the public op that would have made such a tensor)."""
    prefix = f"{op}(): " if op else ""
    return TypeError(f"{prefix}device {dev} does not support {dtype.name}: the {dev.type!r} backend declares "
                     f"{', '.join(sorted(bind_device(dev)._backend.dtypes))}")


def keyset_for(dev: device, dtype: _dt.dtype) -> int:
    """The dispatch key set of a new tensor of ``dtype`` on ``dev``: the device's backend key,
    plus the Complex key for a complex dtype (docs/complex.md)."""
    keys = dev._keymask or bind_device(dev)._keymask
    return keys | _COMPLEX_MASK if dtype._part is not None else keys


def _empty_complex(shape: tuple, dtype: _dt.dtype, dev: device) -> Tensor:
    """A new contiguous complex tensor: storage for (real, imag) pairs of its part dtype, which
    the device's backend must declare; the Complex key keeps every op on it off the backend."""
    part = dtype._part
    if part not in dev._dtypes:
        raise TypeError(f"device {dev} does not support {dtype.name}: it needs {part.name} for the real and "
                        f"imaginary parts, and the {dev.type!r} backend declares {', '.join(sorted(dev._backend.dtypes))}")
    stride, numel = contiguous_layout(shape)
    storage = dev._backend.allocate(numel * dtype.itemsize, dev.index)
    return make_tensor(storage, shape, stride, 0, dtype, dev)


def bind_device(dev: device) -> device:
    """Load ``dev``'s backend (first use of a device type) and cache it on the device object."""
    if dev._backend is None:
        if dev.index is None and dev.type not in UNINDEXED_DEVICE_TYPES:
            raise RuntimeError(f"internal error: device {dev} has no index")
        backend = _registry.backend_for(dev.type)
        if dev.index is not None:
            count = backend.device_count()
            if dev.index >= count:
                raise RuntimeError(f"invalid device {dev}: the {dev.type!r} backend has {count} device(s)")
        dev._keymask = _registry.backend_key(dev.type).mask
        dev._dtypes = frozenset(d for d in _dt.all_dtypes if d.name in backend.dtypes)
        dev._backend = backend
    return dev


_hotpath.bind(Tensor, device, _dt.dtype, _layouts, contiguous_layout, _empty_tensor)
empty_tensor = _hotpath.empty_tensor


def is_tensor(obj) -> bool:
    return isinstance(obj, Tensor)


def resolve_device(spec) -> device:
    """A canonical, ready device from a user's ``device=`` argument (None: the default)."""
    dev = canonical_device(spec)
    if dev._backend is None:
        bind_device(dev)
    return dev


def keyset_from_args(args: tuple, kwargs: dict) -> int:
    """The union of the key sets of the tensors among a call's arguments (also inside lists and
    tuples), before this thread's include/exclude.

    The dispatcher's generic path (dispatcher.call, explain) asks the frontend for key sets
    through this function; composite ops call it directly."""
    keys = 0
    for value in args:
        if isinstance(value, Tensor):
            keys |= value._keys
        elif isinstance(value, (list, tuple)):
            for item in value:
                if isinstance(item, Tensor):
                    keys |= item._keys
    for value in kwargs.values():
        if isinstance(value, Tensor):
            keys |= value._keys
    return keys


dispatcher.set_keyset_extractor(keyset_from_args)
