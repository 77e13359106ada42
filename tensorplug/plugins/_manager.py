"""Loading plugins from the ``tensorplug.backends`` entry point group, lazily and in isolation.

An entry point's name is the device type its plugin provides, so a device's plugin can be found
without importing anything; the plugin module is imported when the device is first used. A
plugin that fails (import error, hook error, bad backend) is recorded with its error and never
breaks ``import tensorplug`` or other devices.

tensorplug's own device types always belong to tensorplug, so loading one of them (the CPU, on a
program's first tensor) needs no scan of the installed packages: the entry points are read when
another device type, or the list of all of them, is first asked for. Reading them needs
``importlib.metadata``, whose import alone (email, zipfile, pathlib) costs more than the scan.
"""
from __future__ import annotations

import importlib
import os
import traceback
from dataclasses import dataclass, field
from typing import Any

import pluggy

from . import _hookspecs

__all__ = ["ENTRY_POINT_GROUP", "PluginRecord", "PluginManager"]

ENTRY_POINT_GROUP = "tensorplug.backends"
#: Entry points of tensorplug's own backends, used when the package metadata is missing (running
#: from a source tree). TENSORPLUG_DISABLE_PLUGINS never disables tensorplug's own plugins.
BUILTIN_PLUGINS = {"cpu": "tensorplug.backends.cpu:plugin", "opencl": "tensorplug.backends.opencl:plugin",
                   "cuda": "tensorplug.backends.cuda:plugin", "meta": "tensorplug.backends.meta:plugin"}


@dataclass
class PluginRecord:
    """What is known of one plugin: where it comes from and how loading it went."""

    name: str
    target: str
    distribution: str
    state: str = "discovered"  # discovered | loaded | failed | disabled
    error: str = ""
    backends: list[Any] = field(default_factory=list)

    def describe(self) -> str:
        return f"plugin {self.name!r} ({self.target}, from {self.distribution})"


class PluginManager:
    """Discovers entry points once, loads each plugin on demand, and keeps what went wrong."""

    def __init__(self) -> None:
        self._pluggy = pluggy.PluginManager("tensorplug")
        self._pluggy.add_hookspecs(_hookspecs)
        self.records: dict[str, PluginRecord] = {}
        #: Plugins refused outright: a second entry point for a device type that is taken.
        self.rejected: list[PluginRecord] = []
        #: Third-party plugins skipped because of TENSORPLUG_DISABLE_PLUGINS.
        self.disabled: list[PluginRecord] = []
        self._discovered = False

    def discover(self) -> None:
        """Read the entry points (names and targets only; nothing is imported)."""
        if self._discovered:
            return
        self._discovered = True
        from importlib import metadata

        disable_third_party = os.environ.get("TENSORPLUG_DISABLE_PLUGINS", "") not in ("", "0")
        for entry_point in metadata.entry_points(group=ENTRY_POINT_GROUP):
            dist = entry_point.dist.name if entry_point.dist is not None else "unknown distribution"
            record = PluginRecord(entry_point.name, entry_point.value, dist)
            if disable_third_party and dist != "tensorplug":
                # A disabled package takes no part at all: it neither claims its device type nor
                # fails another package's claim to it (it is listed apart, in ``disabled``).
                record.state = "disabled"
                record.error = "third-party plugins are disabled by TENSORPLUG_DISABLE_PLUGINS"
                self.disabled.append(record)
                continue
            self._add_discovered(record)
        # Running from a source tree without installed metadata: the built-in plugins are still
        # loaded through this manager, from the same targets their entry points name, and keep
        # their names against any installed package.
        for name, target in BUILTIN_PLUGINS.items():
            if not _is_builtin(self.records.get(name)):
                self._add_discovered(PluginRecord(name, target, "tensorplug (source tree)"))

    def _add_discovered(self, record: PluginRecord) -> None:
        """Keep ``record`` unless its device type is taken: tensorplug's own backends always keep
        their names; two other packages claiming one name are both refused (which one would win
        is an accident of installation order, so neither does)."""
        name = record.name
        first = self.records.get(name)
        if first is None or (_is_builtin(record) and not _is_builtin(first)):
            if first is not None:
                self._reject(first, record)
            self.records[name] = record
            return
        if first.target == record.target and (first.distribution == record.distribution or _is_builtin(record)):
            return  # the same entry point seen twice (a package on two path entries, or a built-in
            # backend loaded before the scan and then found installed)
        self._reject(record, first)
        if not _is_builtin(first) and first.state != "failed":
            first.state = "failed"
            first.error = (f"device type {name!r} is provided by two installed packages: {first.describe()} and "
                           f"{record.describe()}; uninstall one of them")

    def _reject(self, record: PluginRecord, owner: PluginRecord) -> None:
        record.state = "failed"
        record.error = (f"{record.describe()} registers device type {record.name!r}, which already exists "
                        f"(provided by {owner.describe()}); it was not loaded")
        self.rejected.append(record)

    def add(self, name: str, target: str, distribution: str = "registered in-process") -> PluginRecord:
        """Make a plugin known without an entry point (tests, notebooks)."""
        self.discover()
        if name in self.records and self.records[name].state == "loaded":
            raise ValueError(f"a plugin named {name!r} is already loaded")
        record = PluginRecord(name, target, distribution)
        self.records[name] = record
        return record

    def load(self, name: str) -> PluginRecord | None:
        """Import plugin ``name`` and call its hook once; return its record (None if unknown)."""
        if name not in BUILTIN_PLUGINS:
            self.discover()
        elif name not in self.records:
            self._add_discovered(PluginRecord(name, BUILTIN_PLUGINS[name], "tensorplug"))
        record = self.records.get(name)
        if record is None or record.state != "discovered":
            return record
        stage = f"importing {record.target}"
        try:
            plugin = _import_target(record.target)
            stage = "registering it with pluggy"
            self._pluggy.register(plugin, name=f"tensorplug-plugin-{name}")
            others = [p for p in self._pluggy.get_plugins() if p is not plugin]
            caller = self._pluggy.subset_hook_caller("tensorplug_register_backends", remove_plugins=others)
            stage = "its tensorplug_register_backends hook"
            backends = [backend for result in caller() for backend in (result or [])]
            stage = "checking the backends it returned"
            extra = self._check_device_types(record, backends)
            record.backends.extend(b for b in backends if getattr(b, "device_type", None) == record.name)
            record.state = "loaded"
            for other in extra:
                self.records[other.name] = other
        except Exception as exc:  # a broken plugin must not break tensorplug: keep its error
            record.state = "failed"
            record.error = f"{stage} failed: {type(exc).__name__}: {exc}\n{traceback.format_exc(limit=6)}"
        return record

    def _check_device_types(self, record: PluginRecord, backends: list) -> list[PluginRecord]:
        """A plugin provides the device type its entry point is named after, and may provide more
        (the hook returns a list: one SDK, two kinds of device) as long as no other plugin has
        them. Returns a record for each extra device type, to be added once all are checked."""
        extra: dict[str, PluginRecord] = {}
        for backend in backends:
            device_type = getattr(backend, "device_type", None)
            if device_type == record.name:
                continue
            if not isinstance(device_type, str) or not device_type.isidentifier():
                raise RuntimeError(f"it returned a backend with device type {device_type!r}, which is not a name")
            owner = self.records.get(device_type)
            if owner is not None:
                raise RuntimeError(f"it registers device type {device_type!r}, which already exists "
                                   f"(provided by {owner.describe()})")
            if device_type in extra:
                raise RuntimeError(f"it returned two backends for device type {device_type!r}")
            extra[device_type] = PluginRecord(device_type, record.target, record.distribution, state="loaded",
                                              backends=[backend])
        if not any(getattr(b, "device_type", None) == record.name for b in backends):
            raise RuntimeError(f"it returned no backend for device type {record.name!r}, its entry point's name")
        return list(extra.values())

    def load_all(self) -> None:
        self.discover()
        for name in list(self.records):
            self.load(name)


def _is_builtin(record: PluginRecord | None) -> bool:
    """Whether ``record`` is one of tensorplug's own backends (installed or from a source tree)."""
    return (record is not None and BUILTIN_PLUGINS.get(record.name) == record.target
            and record.distribution in ("tensorplug", "tensorplug (source tree)"))


def _import_target(target: str) -> Any:
    module_name, _, attribute = target.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attribute) if attribute else module
