"""Plugin discovery and the hook specifications backend packages implement."""
from ._hookspecs import hookimpl, hookspec
from ._manager import ENTRY_POINT_GROUP, PluginManager, PluginRecord

__all__ = ["ENTRY_POINT_GROUP", "PluginManager", "PluginRecord", "hookimpl", "hookspec"]
