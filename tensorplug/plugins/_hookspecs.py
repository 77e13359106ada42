"""The hooks a tensorplug plugin may implement (pluggy project name ``tensorplug``)."""
from __future__ import annotations

import pluggy

hookspec = pluggy.HookspecMarker("tensorplug")
hookimpl = pluggy.HookimplMarker("tensorplug")


@hookspec
def tensorplug_register_backends() -> list:
    """Return the backends (instances of ``tensorplug.backends.api.Backend``) this plugin provides.

    Called when the plugin loads, which happens on the first use of one of its devices (or when
    ``tp.backends.status()`` lists them). Return cheap objects: heavy imports belong in
    ``Backend.load``.
    """
