"""What a report certifies: the device and driver, the plugin package and version, the software
around it and when the run finished.

A report without these is a list of results about an unnamed thing; with them it is a certificate
a vendor can hand to a customer ("device X, driver Y, package Z 1.2.3 passed on ..."). Everything
here is cheap (no device work beyond the backend's own description of its devices) and never
raises: a field that cannot be found is None, and a ``describe_devices`` that fails is recorded
with its error instead of losing the report.
"""
from __future__ import annotations

import datetime
import platform
import sys
from importlib import metadata

__all__ = ["certificate", "timestamp"]


def timestamp(when: float | None = None) -> str:
    """ISO 8601 local time with its UTC offset (``2025-05-01T14:03:22+02:00``)."""
    moment = datetime.datetime.now() if when is None else datetime.datetime.fromtimestamp(when)
    return moment.astimezone().isoformat(timespec="seconds")


def certificate(device: str, backend=None) -> dict:
    """The certificate fields for ``device`` (its ready ``backend`` where one is at hand)."""
    import numpy

    import tensorplug

    return {
        "device": device,
        "devices": _devices(device, backend),
        "plugin": _plugin(device, backend),
        "tensorplug_version": tensorplug.__version__,
        "python_version": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "numpy_version": numpy.__version__,
        "os": platform.platform(),
        "machine": platform.machine(),
        "cpu_model": _cpu_model(),
    }


def _devices(device: str, backend) -> list[str]:
    """The backend's own lines (``describe_devices()``, with driver and device names), else one
    line per device index."""
    if backend is None:
        return []
    describe = getattr(backend, "describe_devices", None)
    if callable(describe):
        try:
            return [str(line) for line in describe()]
        except Exception as exc:  # a report must survive a backend that cannot describe itself
            return [f"describe_devices() raised {type(exc).__name__}: {exc}"]
    try:
        count = backend.device_count()
    except Exception as exc:
        return [f"device_count() raised {type(exc).__name__}: {exc}"]
    return [f"{device}:{index}" for index in range(count)]


def _plugin(device: str, backend) -> dict:
    """The entry point that provides ``device`` and the distribution (package) that ships it."""
    from ..backends import plugin_manager

    record = plugin_manager.records.get(device)
    module = type(backend).__module__ if backend is not None else None
    distribution = record.distribution if record is not None else None
    if distribution is not None and not _is_distribution(distribution):
        # Registered in-process (--plugin): the package that holds the backend's module, if any.
        distribution = _distribution_of_module(module)
    return {
        "entry_point": f"{record.name} = {record.target}" if record is not None else None,
        "module": module,
        "distribution": distribution,
        "version": _version(distribution),
        "contract_version": getattr(backend, "contract_version", None),
    }


def _is_distribution(name: str) -> bool:
    try:
        metadata.distribution(name)
        return True
    except metadata.PackageNotFoundError:
        return False


def _distribution_of_module(module: str | None) -> str | None:
    if not module:
        return None
    top = module.split(".")[0]
    names = metadata.packages_distributions().get(top, [])
    return names[0] if names else None


def _version(distribution: str | None) -> str | None:
    if not distribution:
        return None
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def _cpu_model() -> str | None:
    """The CPU's marketing name where the OS gives it cheaply (Linux /proc, else platform)."""
    if sys.platform.startswith("linux"):
        try:
            with open("/proc/cpuinfo") as f:
                for line in f:
                    if line.startswith(("model name", "Hardware", "cpu model")):
                        return line.split(":", 1)[1].strip()
        except OSError:
            pass
    return platform.processor() or None
