"""The backend contract: what a backend plugin provides.

This module is the public API that backend authors build against (docs/backend-contract.md
describes it in full). A backend subclasses :class:`Backend` and returns an instance from the
``tensorplug_register_backends`` hook. Constructing the instance must be cheap: heavy imports
(a vendor SDK, CuPy, PyOpenCL) belong in :meth:`Backend.load`, which runs on the first use of the
device.

Kernels implement the primitive ops listed in :data:`PRIMITIVES`. Every kernel receives tensors
whose shapes, dtypes and devices the frontend already checked; inputs are broadcast to the output
shape (as stride-0 views) and cast to the computation dtype, and the output is already allocated.
Kernels read tensors only through ``shape``, ``stride()``, ``storage_offset()``, ``dtype``,
``device`` and :func:`backend_storage` (the object the backend's ``allocate`` returned;
:func:`strided` gives it, the offset and the strides in one call). ``t.untyped_storage()`` is
PyTorch's ``UntypedStorage`` over that object, whose attributes it still shows.

Besides storage, copies and kernels, a backend may fill in the device runtime: streams, events,
memory statistics and the dtypes autocast may use (:meth:`Backend.new_stream` and the methods
after it). Every runtime method has a default that is correct for a synchronous device, one whose
kernels have finished when they return (npdev, the CPU): one stream, and events that wait for
the device and take a host timestamp. ``tp.<device_type>`` (``tp.npdev.Event``, ...) and
``tp.accelerator`` are built on these methods alone.
"""
from __future__ import annotations

import itertools
import operator
import time
from typing import Any, Callable

__all__ = [
    "CONTRACT_VERSION",
    "PRIMITIVES",
    "FAMILIES",
    "REQUIRED_DTYPES",
    "OPTIONAL_DTYPES",
    "EXTRA_DTYPES",
    "Backend",
    "is_contiguous",
    "strided",
    "backend_storage",
    "host_numpy_dtype",
]

#: Bumped whenever the primitive list or a calling convention changes.
CONTRACT_VERSION = 1

#: The primitive ops by family. Within a family every op has the same calling convention, so one
#: generic kernel generator can serve the whole family.
FAMILIES: dict[str, tuple[str, ...]] = {
    # copy_(dst, src): src broadcast to dst's shape, converted to dst's dtype; same device.
    # fill_(dst, value): value a Python number.
    "copy": ("copy_", "fill_"),
    # name(out, a): same dtype in and out, except the predicates, whose out is bool.
    "unary": (
        "neg", "abs", "sign", "exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "sqrt",
        "rsqrt", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "sigmoid",
        "erf", "erfinv", "floor", "ceil", "round", "trunc", "reciprocal", "square", "logical_not",
        "bitwise_not", "isnan", "isinf", "isfinite",
    ),
    # name(out, a, b): a and b tensors of out's dtype, or one of them a Python number.
    # The logical_* ops read a and b in the computation dtype and write a bool out.
    "binary": (
        "add", "sub", "mul", "div", "floor_divide", "remainder", "fmod", "pow", "maximum",
        "minimum", "atan2", "copysign", "hypot", "bitwise_and", "bitwise_or", "bitwise_xor",
        "bitwise_left_shift", "bitwise_right_shift", "logical_and", "logical_or", "logical_xor",
    ),
    # name(out, a, b): out is bool; a and b of one dtype, or one of them a Python number.
    "compare": ("eq", "ne", "lt", "le", "gt", "ge"),
    # where(out, cond, a, b): cond bool; a, b of out's dtype or Python numbers.
    "ternary": ("where",),
    # name(out, a, dims): out has a's ndim with the reduced dims of size 1; dims a sorted tuple.
    # sum/prod of integer or bool inputs write int64; argmax/argmin get one dim and write int64.
    "reduce": ("sum", "prod", "amax", "amin", "all", "any", "argmax", "argmin"),
    # name(out, a, dim): inclusive scan along dim, out of a's dtype.
    "scan": ("cumsum", "cumprod"),
    # matmul(out, a, b): a (B, M, K), b (B, K, N), out (B, M, N), all of one dtype.
    "matmul": ("matmul",),
    # gather(out, a, dim, index); scatter_(self, dim, index, src, reduce) with src a tensor or
    # number and reduce None or "add"; index_get(out, a, indices) and
    # index_put_(self, indices, values, accumulate) with indices a tuple of int64 tensors that all
    # have one shape and index a's leading dims. Out-of-range index values raise IndexError.
    "index": ("gather", "scatter_", "index_get", "index_put_"),
    # name(out, seed, offset, a, b): fill a contiguous out with Philox4x32-10 numbers (see the
    # contract document for the exact mapping): uniform in [a, b), normal with mean a and std b,
    # integers in [a, b).
    "random": ("uniform_", "normal_", "randint_"),
    # sort(values_out, indices_out, a, dim, descending, stable): values_out of a's dtype and
    # indices_out int64, both of a's shape; NaN sorts as the largest value (last ascending, first
    # descending); equal values keep their order when stable is asked for.
    "sort": ("sort",),
}

#: Every primitive op name, mapped to its family.
PRIMITIVES: dict[str, str] = {name: family for family, names in FAMILIES.items() for name in names}

#: A conformant backend supports these dtypes for every primitive.
REQUIRED_DTYPES = ("float32", "int64", "bool")
#: A backend declares which of these it supports; what it declares must pass.
OPTIONAL_DTYPES = ("float64", "float16", "bfloat16", "uint8", "int8", "int16", "int32")
#: Dtypes PyTorch supports for a few ops only (docs/dtypes.md): a backend may declare them too (the
#: CPU, meta and OpenCL do); the conformance suite does not test them, and a device that does not
#: declare them refuses them.
EXTRA_DTYPES = ("uint16", "uint32", "uint64", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz")


#: ``backend_storage(t)`` is the storage object the backend allocated for the memory tensor ``t``
#: views (what ``Backend.allocate`` returned; every view of one tensor has the same one).
backend_storage: Callable[[Any], Any] = operator.attrgetter("_storage")

#: ``strided(t)`` is ``(backend_storage(t), t.storage_offset(), t.stride())``, the triple a
#: kernel hands to native code for each tensor, read in one C call: it costs a third of the three
#: accessor calls, and small ops read three tensors each (issue 14). It reads the slots behind
#: those accessors, which the frontend's Tensor keeps under these names for this purpose
#: (tests/plugins/test_backend_api.py checks that the two agree).
strided: Callable[[Any], tuple] = operator.attrgetter("_storage", "_offset", "_stride")


def is_contiguous(t: Any) -> bool:
    """Whether tensor ``t`` is laid out row-major without gaps, read through the accessors a
    kernel may use (``shape`` and ``stride()``): the test a kernel makes before taking a fast
    path over one flat run of memory."""
    expected = 1
    for size, stride in zip(reversed(t.shape), reversed(t.stride())):
        if size != 1 and stride != expected:
            return False
        expected *= size
    return True


class Backend:
    """Base class of a backend. Subclass it, set ``device_type``, implement the methods.

    The object is created when the plugin loads (keep that cheap); :meth:`load` runs once, on
    the first use of the device, and is where heavy imports and device setup belong.
    """

    #: The device type users name: ``tp.ones(2, device="<device_type>")``.
    device_type: str = ""
    #: The contract version the backend was written for.
    contract_version: int = CONTRACT_VERSION
    #: dtype names the backend supports (must include REQUIRED_DTYPES to be conformant).
    dtypes: frozenset[str] = frozenset(REQUIRED_DTYPES)
    #: The lower-precision float dtypes this device computes fast, which ``tp.autocast`` may
    #: use on it (``"float16"``, ``"bfloat16"``); empty: autocast refuses the device type.
    autocast_dtypes: frozenset[str] = frozenset()

    # --- discovery -------------------------------------------------------------------------
    def is_available(self) -> tuple[bool, str]:
        """Whether the device can be used here, and if not, why (shown to users)."""
        return True, ""

    def device_count(self) -> int:
        return 1

    def load(self) -> None:
        """Import the runtime and prepare the device; called once, on first use."""

    # --- storage and copies -----------------------------------------------------------------
    def allocate(self, nbytes: int, device_index: int) -> Any:
        """Return a new storage of ``nbytes`` bytes on the device (an object with ``nbytes``).

        The storage's memory is released (or returned to the backend's cache) when the object
        is garbage: tensorplug drops its last reference as soon as no tensor uses it.
        """
        raise NotImplementedError

    def copy_from_host(self, dst: Any, array: Any) -> None:
        """Copy the C-contiguous NumPy ``array`` into the contiguous tensor ``dst``."""
        raise NotImplementedError

    def to_host(self, src: Any) -> Any:
        """Return ``src``'s values as a NumPy array of its shape (a copy, or a view for
        backends whose memory is host memory)."""
        raise NotImplementedError

    def wrap_host(self, array: Any) -> Any:
        """Optional, for backends whose memory is host memory (CPU): a storage sharing the
        C-contiguous NumPy ``array``'s memory and keeping it alive (``tp.from_numpy``)."""
        raise NotImplementedError(f"{self.device_type}: tensors cannot share host memory")

    def synchronize(self, device_index: int) -> None:
        """Wait for all queued work on the device; raise pending device errors."""

    def memory_stats(self, device_index: int) -> dict[str, int]:
        """Allocator counters of a device, in bytes: ``allocated_bytes`` (live storages),
        ``peak_allocated_bytes``, ``reserved_bytes`` (live plus cached) and optionally
        ``peak_reserved_bytes``; other keys are the backend's own. ``{}`` keeps none."""
        return {}

    def reset_peak_memory_stats(self, device_index: int) -> None:
        """Restart the peaks of :meth:`memory_stats` from the current values."""

    def empty_cache(self) -> None:
        """Give cached, unused memory back to the system."""

    # --- runtime: streams and events (optional) --------------------------------------------
    # A stream is an order of work on one device; an event marks a point in a stream. The
    # handles below are the backend's own objects, which tensorplug passes back unchanged; the
    # defaults describe a synchronous device, on which every stream is the one order of the
    # host program (issuing work to "another" stream changes nothing) and an event is complete
    # the moment it is recorded.
    _stream_ids = itertools.count(1)

    def default_stream(self, device_index: int) -> Any:
        """The handle of the stream work goes to unless another is made current."""
        return 0

    def new_stream(self, device_index: int, priority: int = 0) -> Any:
        """The handle of a new stream (``tp.<device>.Stream()``); by default an id that shares
        the one order of a synchronous device."""
        return next(Backend._stream_ids)

    def set_current_stream(self, device_index: int, stream: Any) -> None:
        """Send the work issued from now on for device ``device_index`` (kernels, copies,
        allocations) to ``stream``. Called by ``tp.<device>.set_stream`` and ``stream(s)``."""

    def synchronize_stream(self, device_index: int, stream: Any) -> None:
        """Wait for the work issued to ``stream``; raise pending device errors."""
        self.synchronize(device_index)

    def query_stream(self, device_index: int, stream: Any) -> bool:
        """Whether all work issued to ``stream`` has finished (never waits)."""
        return True

    def record_event(self, device_index: int, stream: Any, enable_timing: bool) -> Any:
        """Mark the current end of ``stream``'s work; return an event handle. With
        ``enable_timing`` the handle must give :meth:`event_elapsed_time`. By default: wait
        for the device, then take a host timestamp (nanoseconds)."""
        self.synchronize(device_index)
        return time.perf_counter_ns()

    def synchronize_event(self, device_index: int, event: Any) -> None:
        """Wait until the work before ``event`` has finished; raise pending device errors."""

    def query_event(self, device_index: int, event: Any) -> bool:
        """Whether the work before ``event`` has finished (never waits)."""
        return True

    def event_elapsed_time(self, device_index: int, start: Any, end: Any) -> float:
        """Milliseconds between two completed events that were recorded with timing."""
        return (end - start) / 1e6

    def stream_wait_event(self, device_index: int, stream: Any, event: Any) -> None:
        """Make work issued to ``stream`` after this call wait for ``event`` (without blocking
        the host)."""

    # --- kernels -----------------------------------------------------------------------------
    def kernels(self) -> dict[str, Callable[..., Any]]:
        """The primitive kernels, by op name (see PRIMITIVES). Called after :meth:`load`."""
        return {}

    def fallback(self) -> Callable[..., Any] | None:
        """An optional boxed kernel ``fallback(op, args, kwargs)`` for ops without a kernel."""
        return None


_host_numpy_dtypes: dict = {}


def host_numpy_dtype(dtype: Any) -> Any:
    """The NumPy dtype of host arrays of ``dtype`` handed to users (``Tensor.numpy()``).

    bfloat16 and the float8 types need the optional ml_dtypes package (NumPy has none); without it,
    a TypeError says how to get it or how to convert first.
    """
    found = _host_numpy_dtypes.get(dtype)
    if found is None:
        import numpy as np

        if dtype.name == "bfloat16" or dtype.name.startswith("float8"):
            try:
                import ml_dtypes
            except ImportError:
                raise TypeError(
                    f"{dtype.name} tensors need the ml_dtypes package to become NumPy arrays: pip install ml_dtypes "
                    "(or convert first: t.float().numpy())"
                ) from None
            found = np.dtype(getattr(ml_dtypes, dtype.name))
        else:
            found = np.dtype(dtype.name)
        _host_numpy_dtypes[dtype] = found
    return found
