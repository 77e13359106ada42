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
BUILTIN_PLUGINS = {"cpu": "tensorplug.backends.cpu:plugin"}


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
            self.records.setdefault(entry_point.name, record)
        # Running from a source tree without installed metadata: the built-in plugins are still
        # loaded through this manager, from the same targets their entry points name.
        for name, target in BUILTIN_PLUGINS.items():
            self.records.setdefault(name, PluginRecord(name, target, "tensorplug (source tree)"))

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
        try:
            plugin = _import_target(record.target)
            self._pluggy.register(plugin, name=f"tensorplug-plugin-{name}")
            others = [p for p in self._pluggy.get_plugins() if p is not plugin]
            caller = self._pluggy.subset_hook_caller("tensorplug_register_backends", remove_plugins=others)
            for result in caller():
                record.backends.extend(result or [])
            record.state = "loaded"
        except Exception as exc:  # a broken plugin must not break tensorplug: keep its error
            record.state = "failed"
            record.error = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=6)}"
        return record

    def load_all(self) -> None:
        self.discover()
        for name in list(self.records):
            self.load(name)


def _import_target(target: str) -> Any:
    module_name, _, attribute = target.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attribute) if attribute else module
