"""Loading plugins from the ``tensorplug.backends`` entry point group, lazily and in isolation.

An entry point's name is the device type its plugin provides, so a device's plugin can be found
without importing anything; the plugin module is imported when the device is first used. A
plugin that fails (import error, hook error, bad backend) is recorded with its error and never
breaks ``import tensorplug`` or other devices.
"""
from __future__ import annotations

import importlib
import os
import traceback
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

import pluggy

from . import _hookspecs

__all__ = ["ENTRY_POINT_GROUP", "PluginRecord", "PluginManager"]

ENTRY_POINT_GROUP = "tensorplug.backends"
#: Entry points of tensorplug's own backends, used when the package metadata is missing (running
#: from a source tree). TENSORPLUG_DISABLE_PLUGINS never disables tensorplug's own plugins.
BUILTIN_PLUGINS = {"cpu": "tensorplug.backends.cpu:plugin", "opencl": "tensorplug.backends.opencl:plugin"}


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
        self._discovered = False

    def discover(self) -> None:
        """Read the entry points (names and targets only; nothing is imported)."""
        if self._discovered:
            return
        self._discovered = True
        disable_third_party = os.environ.get("TENSORPLUG_DISABLE_PLUGINS", "") not in ("", "0")
        for entry_point in metadata.entry_points(group=ENTRY_POINT_GROUP):
            dist = entry_point.dist.name if entry_point.dist is not None else "unknown distribution"
            record = PluginRecord(entry_point.name, entry_point.value, dist)
            if disable_third_party and dist != "tensorplug":
                record.state = "disabled"
                record.error = "third-party plugins are disabled by TENSORPLUG_DISABLE_PLUGINS"
            self._add_discovered(record)
        # Running from a source tree without installed metadata: the built-in plugins are still
        # loaded through this manager, from the same targets their entry points name.
        for name, target in BUILTIN_PLUGINS.items():
            self.records.setdefault(name, PluginRecord(name, target, "tensorplug (source tree)"))

    def _add_discovered(self, record: PluginRecord) -> None:
        """Keep ``record`` unless its device type is taken: tensorplug's own backends always keep
        their names; two other packages claiming one name are both refused (which one would win
        is an accident of installation order, so neither does)."""
        name = record.name
        first = self.records.get(name)
        builtin = BUILTIN_PLUGINS.get(name) == record.target and record.distribution == "tensorplug"
        if first is None or (builtin and first.distribution != "tensorplug"):
            if first is not None:
                self._reject(first, record)
            self.records[name] = record
            return
        if first.distribution == record.distribution and first.target == record.target:
            return  # the same entry point seen twice (a package on two path entries)
        self._reject(record, first)
        if first.distribution != "tensorplug" and first.state != "failed":
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
        self.discover()
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
            self._check_device_types(record, backends)
            record.backends.extend(backends)
            record.state = "loaded"
        except Exception as exc:  # a broken plugin must not break tensorplug: keep its error
            record.state = "failed"
            record.error = f"{stage} failed: {type(exc).__name__}: {exc}\n{traceback.format_exc(limit=6)}"
        return record

    def _check_device_types(self, record: PluginRecord, backends: list) -> None:
        """A plugin provides the device type its entry point is named after, and no other plugin's."""
        for backend in backends:
            device_type = getattr(backend, "device_type", None)
            if device_type == record.name:
                continue
            owner = self.records.get(device_type) if isinstance(device_type, str) else None
            if owner is not None:
                raise RuntimeError(f"it registers device type {device_type!r}, which already exists "
                                   f"(provided by {owner.describe()})")
            raise RuntimeError(f"it returned a backend for device type {device_type!r}, but its entry point is named "
                               f"{record.name!r}: the entry point's name must be the device type")

    def load_all(self) -> None:
        self.discover()
        for name in list(self.records):
            self.load(name)


def _import_target(target: str) -> Any:
    module_name, _, attribute = target.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attribute) if attribute else module
