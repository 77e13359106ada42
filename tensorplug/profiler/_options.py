"""What ``profile_memory``, ``with_stack``, ``with_flops`` and ``with_modules`` add to an event.

- **Stacks**: the Python frames that called the op, innermost first, written as PyTorch writes
  them (``file(line): function``). tensorplug's own frames are left out except ``nn`` and
  ``optim``, the Python layers a user's code calls (PyTorch's stacks show ``torch/nn`` frames
  for the same reason).
- **FLOPs**: PyTorch's formulas, for the events that run a kernel (not a decomposition, whose
  ops carry their own): a matrix product (``matmul``, ``linear``) ``2 * M * K * N`` per batch, a
  convolution ``2 * N * OH * OW * C_out * C_in / groups * KH * KW``, ``add`` and ``mul`` one
  per output element.
- **Memory**: bytes allocated (and freed, negative) while an op is the innermost open event, on
  the CPU and on devices apart: every backend's ``allocate`` is wrapped for the profile's life,
  and a storage allocated then reports its release to whatever event is open when it is freed.
"""
from __future__ import annotations

import math
import os
import sys
import weakref

from ..frontend.tensor import Tensor

__all__ = ["user_stack", "flops_of", "MemoryTracker"]

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# tensorplug's directories whose frames a stack keeps (the layers user code calls into).
_KEPT = tuple(os.path.join(_PACKAGE, name) + os.sep for name in ("nn", "optim"))


def user_stack(limit: int = 64) -> list[str]:
    """The calling Python frames, innermost first, without tensorplug's internals."""
    frames = []
    frame = sys._getframe(1)
    while frame is not None and len(frames) < limit:
        path = frame.f_code.co_filename
        if not path.startswith(_PACKAGE) or path.startswith(_KEPT):
            frames.append(f"{path}({frame.f_lineno}): {frame.f_code.co_name}")
        frame = frame.f_back
    return frames


def _shape(value) -> tuple | None:
    return tuple(value._shape) if isinstance(value, Tensor) else None


def flops_of(name: str, args: tuple, result) -> int | None:
    """PyTorch's floating-point operation count for the op ``name`` (None: not counted).

    Primitives write into their first argument (``matmul(out, a, b)``, ``add(out, a, b)``);
    composites return their result."""
    out = _shape(result) if isinstance(result, Tensor) else _shape(args[0]) if args else None
    if out is None:
        return None
    shapes = [_shape(value) for value in args]
    if name == "matmul" and len(shapes) >= 3 and shapes[1]:
        return 2 * math.prod(out) * shapes[1][-1]  # every output element is a K-long dot product
    if name == "linear" and shapes[0]:
        return 2 * math.prod(out) * shapes[0][-1]
    if name in ("conv1d", "conv2d", "conv3d") and len(shapes) >= 2 and shapes[1]:
        weight = shapes[1]  # (C_out, C_in / groups, *kernel)
        return 2 * math.prod(out) * math.prod(weight[1:])
    if name in ("add", "mul"):
        return math.prod(out)
    return None


class MemoryTracker:
    """Counts the bytes each event's op allocates and frees, for one recorder."""

    def __init__(self, recorder):
        self._recorder = weakref.ref(recorder)
        self._wrapped: list = []

    def start(self, backends) -> None:
        for backend in backends:
            original = backend.allocate  # bound: the class's method or the backend's own attribute

            def allocate(nbytes, index=None, _original=original, _device=getattr(backend, "device_type", None)):
                storage = _original(nbytes, index) if index is not None else _original(nbytes)
                self._allocated(storage, int(nbytes), _device)
                return storage

            # An instance attribute shadows the method while profiling (and replaces one that a
            # backend set on itself, put back by stop).
            self._wrapped.append((backend, vars(backend).get("allocate")))
            backend.allocate = allocate

    def stop(self) -> None:
        for backend, own in self._wrapped:
            if own is None:
                vars(backend).pop("allocate", None)
            else:
                backend.allocate = own
        self._wrapped.clear()

    def _allocated(self, storage, nbytes: int, device_type) -> None:
        recorder = self._recorder()
        if recorder is None or not recorder.record_memory_now():
            return
        on_cpu = device_type in (None, "cpu")
        recorder.add_memory(nbytes, on_cpu)
        try:
            weakref.finalize(storage, MemoryTracker._freed, self._recorder, nbytes, on_cpu)
        except TypeError:  # a storage type without weak references: its release is not seen
            pass

    @staticmethod
    def _freed(recorder_ref, nbytes: int, on_cpu: bool) -> None:
        recorder = recorder_ref()
        if recorder is not None and recorder.record_memory_now():
            recorder.add_memory(-nbytes, on_cpu)
