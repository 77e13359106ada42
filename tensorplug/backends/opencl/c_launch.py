"""The compiled launch path of the OpenCL backend (issue 14): `_opencl_launch`, bound to the
OpenCL library PyOpenCL loaded, or None where it cannot be.

`_opencl_launch.Kernel` launches a PyOpenCL kernel without PyOpenCL's per-call argument packing
and event (kernels.build_kernel wraps every kernel in it); `read`/`write` are blocking host
copies without an event (storage.py's transfers). The module links against no OpenCL: the entry
points come from the library already in this process, found in its memory map.
"""
from __future__ import annotations

import os

__all__ = ["module", "read", "write", "ENV_LAUNCH"]

#: Set to "pyopencl" to launch and copy through PyOpenCL's own calls (to compare, or to rule the
#: C path out when chasing a problem).
ENV_LAUNCH = "TENSORPLUG_OPENCL_LAUNCH"
_module = False  # False: not looked up yet; None: unavailable


def _opencl_library() -> str | None:
    """The path of the OpenCL library this process loaded for PyOpenCL (PyOpenCL's bundled ICD
    loader when it has one), read from the process's memory map."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split(None, 5)[-1].strip() for line in maps if "libOpenCL" in line}
    except OSError:  # not Linux
        return None
    paths = sorted(p for p in paths if p.startswith("/"))
    return next((p for p in paths if "pyopencl" in p), paths[0] if paths else None)


def module():
    """The C module, bound to the process's OpenCL library; None where it cannot be (not built,
    not Linux, no such library, or ENV_LAUNCH says pyopencl). Call after PyOpenCL is imported."""
    global _module
    if _module is False:
        _module = None
        if os.environ.get(ENV_LAUNCH, "").strip().lower() != "pyopencl":
            library = _opencl_library()
            try:
                from . import _opencl_launch
            except ImportError:  # a source tree without built extensions
                return None
            if library is not None:
                try:
                    _opencl_launch.bind(library)
                except OSError:  # a library without the entry points
                    return None
                _module = _opencl_launch
    return _module


def read(queue, buffer, offset: int, host) -> None:
    """Copy len(host) bytes from ``buffer`` at byte ``offset`` into the contiguous ``host``
    array, after everything queued before (blocking)."""
    c = module()
    if c is not None:
        c.read(queue, buffer, offset, host)
    else:
        import pyopencl as cl

        cl.enqueue_copy(queue, host, buffer, src_offset=offset, is_blocking=True)


def write(queue, buffer, offset: int, host) -> None:
    """Copy the contiguous ``host`` array into ``buffer`` at byte ``offset`` (blocking)."""
    c = module()
    if c is not None:
        c.write(queue, buffer, offset, host)
    else:
        import pyopencl as cl

        cl.enqueue_copy(queue, buffer, host, dst_offset=offset, is_blocking=True)
