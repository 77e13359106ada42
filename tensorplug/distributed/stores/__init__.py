"""PyTorch's key-value stores: ``HashStore`` (one process), ``FileStore`` (processes sharing a
file), ``TCPStore`` (processes that reach a master over TCP) and ``PrefixStore`` (a namespaced
view), all with ``Store``'s API."""
from .base import Store
from .file_store import FileStore
from .hash_store import HashStore
from .prefix_store import PrefixStore
from .tcp_store import TCPStore

__all__ = ["Store", "HashStore", "FileStore", "TCPStore", "PrefixStore"]
