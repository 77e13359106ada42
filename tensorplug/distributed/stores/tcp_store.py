"""``TCPStore``: a key-value store served over TCP by the master process, for processes on any
machines that can reach it.

The master runs the server on a background thread (one more thread per connected client) and
uses the table directly; other processes connect and send one request at a time, framed as a
4-byte length and a _wire-encoded ``[op, args, seconds]``. Blocking calls wait on the server,
so a ``get`` returns as soon as another client sets the key.
"""
from __future__ import annotations

import datetime
import socket
import socketserver
import struct
import threading
import time
import weakref

from . import _wire
from ..errors import DistNetworkError, DistStoreError
from ._table import INTERNAL_PREFIX
from .base import DEFAULT_STORE_TIMEOUT, Store
from .hash_store import LockedTable

__all__ = ["TCPStore"]

_LENGTH = struct.Struct(">I")
#: The key every process adds itself to when it joins, which the master waits on.
_JOINED_KEY = INTERNAL_PREFIX + "joined"
#: Extra seconds a client waits for the server's answer to a blocking request.
_REPLY_GRACE = 5.0

# Servers of this process by port, shared by multi_tenant masters (PyTorch's multi_tenant=True).
_servers: dict[int, "_Server"] = {}
_servers_lock = threading.Lock()


def _send_frame(sock: socket.socket, payload) -> None:
    data = _wire.encode(payload)
    sock.sendall(_LENGTH.pack(len(data)) + data)


def _receive_exactly(sock: socket.socket, n: int) -> bytes | None:
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(n - got)
        if not chunk:
            return None
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _receive_frame(sock: socket.socket):
    head = _receive_exactly(sock, _LENGTH.size)
    if head is None:
        return None
    body = _receive_exactly(sock, _LENGTH.unpack(head)[0])
    if body is None:
        return None
    return _wire.decode(body)


class _ClientConnection(socketserver.BaseRequestHandler):
    """Serves one client's requests, in order, until it disconnects."""

    def handle(self) -> None:
        table: LockedTable = self.server.table
        sock = self.request
        while True:
            try:
                request = _receive_frame(sock)
            except (OSError, ValueError):
                return
            if request is None:
                return
            op, args, seconds = request
            try:
                if not table.knows(op):
                    raise ValueError(f"TCPStore server: unknown operation {op!r}")
                result = table.run(op, args) if seconds is None else table.run_blocking(op, args, float(seconds))
                reply = ["ok", result]
            except (ValueError, TypeError) as exc:
                reply = ["error", type(exc).__name__, str(exc)]
            try:
                _send_frame(sock, reply)
            except OSError:
                return


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, port: int, listen_fd: int | None):
        self.table = LockedTable()
        self.users = 0
        if listen_fd is None:
            super().__init__(("", port), _ClientConnection)
        else:
            super().__init__(("", port), _ClientConnection, bind_and_activate=False)
            self.socket = socket.socket(fileno=listen_fd)
        self.port = self.socket.getsockname()[1]
        self._thread = threading.Thread(target=self.serve_forever, name=f"TCPStore server :{self.port}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


def _open_server(port: int, multi_tenant: bool, listen_fd: int | None) -> "_Server":
    with _servers_lock:
        server = _servers.get(port) if multi_tenant and port else None
        if server is None:
            try:
                server = _Server(port, listen_fd)
            except OSError as exc:
                raise DistNetworkError(f"TCPStore: the master could not listen on port {port}: {exc}") from None
            _servers[server.port] = server
        server.users += 1
        return server


def _release_server(server: "_Server") -> None:
    with _servers_lock:
        server.users -= 1
        if server.users == 0:
            _servers.pop(server.port, None)
            server.stop()


class _Connection:
    """A client's socket to the server: one request at a time (a lock makes it thread-safe)."""

    def __init__(self, host: str, port: int, timeout: datetime.timedelta):
        deadline = time.monotonic() + timeout.total_seconds()
        last_error = None
        while True:
            try:
                self._sock = socket.create_connection((host, port), timeout=max(deadline - time.monotonic(), 0.1))
                break
            except OSError as exc:
                last_error = exc
            if time.monotonic() >= deadline:
                raise DistNetworkError(f"TCPStore: the client timed out after {int(timeout.total_seconds() * 1000)}ms "
                                       f"while trying to connect to ({host}, {port}): {last_error}")
            time.sleep(0.05)  # the master may not be listening yet
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._lock = threading.Lock()
        self._where = f"{host}:{port}"

    def request(self, op: str, args: list, seconds: float | None):
        with self._lock:
            self._sock.settimeout(None if seconds is None else seconds + _REPLY_GRACE)
            try:
                _send_frame(self._sock, [op, args, seconds])
                reply = _receive_frame(self._sock)
            except OSError as exc:
                raise DistNetworkError(f"TCPStore: lost the connection to the server at {self._where}: {exc}") from None
        if reply is None:
            raise DistNetworkError(f"TCPStore: the server at {self._where} closed the connection (did the master "
                                   "process exit?)")
        if reply[0] == "error":
            raise {"ValueError": ValueError, "TypeError": TypeError}.get(reply[1], DistStoreError)(reply[2])
        return reply[1]

    def close(self) -> None:
        self._sock.close()


class TCPStore(Store):
    """``dist.TCPStore(host_name, port, world_size=None, is_master=False, timeout=...)``: the master
    serves the store on ``port`` (0: any free port, see ``.port``); the others connect to it."""

    def __init__(self, host_name: str, port: int, world_size: int | None = None, is_master: bool = False,
                 timeout: datetime.timedelta = DEFAULT_STORE_TIMEOUT, wait_for_workers: bool = True,
                 multi_tenant: bool = False, master_listen_fd: int | None = None, use_libuv: bool = True):
        super().__init__(timeout)
        if not isinstance(host_name, str):
            raise TypeError(f"TCPStore: host_name must be str, got {type(host_name).__name__}")
        if not isinstance(port, int) or not 0 <= port < 65536:
            raise ValueError(f"TCPStore: port must be an int in 0..65535, got {port!r}")
        if world_size is not None and world_size < 1:
            raise ValueError(f"TCPStore: world_size must be positive (or None), got {world_size}")
        if port == 0 and not is_master:
            # DistNetworkError, as PyTorch's client raises when it fails to connect to port 0.
            raise DistNetworkError("TCPStore: a client needs the master's port (port=0 lets only the master pick one)")
        self._host = host_name
        self._server = None
        self._connection = None
        if is_master:
            self._server = _open_server(port, multi_tenant, master_listen_fd)
            weakref.finalize(self, _release_server, self._server)
            self._port = self._server.port
        else:
            self._port = port
            self._connection = _Connection(host_name, port, self._timeout)
            weakref.finalize(self, self._connection.close)
        if world_size is not None and (not is_master or wait_for_workers):
            self._run("add", _JOINED_KEY, 1)
        if is_master and wait_for_workers and world_size is not None:
            self._wait_for_workers(world_size)

    def _wait_for_workers(self, world_size: int) -> None:
        seconds = self._timeout.total_seconds()
        deadline = time.monotonic() + seconds
        while True:
            joined = int(self._server.table.run("get", [_JOINED_KEY]) or b"0")
            if joined >= world_size:
                return
            if time.monotonic() >= deadline:
                raise DistStoreError(f"Timed out after {seconds:g} seconds waiting for clients. "
                                     f"{joined}/{world_size} clients joined.")
            self._server.table.run_blocking("wait", [[INTERNAL_PREFIX + "never"]], min(0.05, seconds))

    @property
    def host(self) -> str:
        """The master's host name, as given."""
        return self._host

    @property
    def port(self) -> int:
        """The port the master listens on (the one the OS picked for port=0)."""
        return self._port

    @property
    def libuvBackend(self) -> bool:
        """False: the server is Python's socketserver, not libuv (``use_libuv`` is accepted and ignored)."""
        return False

    def _run(self, op: str, *args):
        if self._server is not None:
            return self._server.table.run(op, list(args))
        return self._connection.request(op, list(args), None)

    def _run_blocking(self, op: str, args: list, seconds: float):
        if self._server is not None:
            return self._server.table.run_blocking(op, args, seconds)
        return self._connection.request(op, args, seconds)

    def clone(self) -> "TCPStore":
        """A new client connection to the same server."""
        host = "127.0.0.1" if self._server is not None else self._host
        return TCPStore(host, self._port, None, False, self.timeout)
