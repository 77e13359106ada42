"""``tp.futures``: PyTorch's ``Future`` (a value that becomes ready later: ``wait``, ``value``,
``then``, ``set_result``), ``collect_all`` and ``wait_all``.

A future is completed either by ``set_result``/``set_exception`` (from any thread) or, for the
futures of collectives in flight, by a driver: tensorplug has no background progress thread, so
``wait()`` on such a future drives the collective to its end and ``done()`` polls it.
"""
from __future__ import annotations

import threading
from typing import Any, Callable

__all__ = ["Future", "collect_all", "wait_all"]


class Future:
    """``tp.futures.Future()``: a result that is set once and read by ``wait()``/``value()``."""

    def __init__(self, *, devices=None):
        self._ready = threading.Condition()
        self._done = False
        self._result: Any = None
        self._error: BaseException | None = None
        self._callbacks: list[Callable] = []
        self._drive: Callable[[], None] | None = None  # blocks until the work behind it completes this future
        self._poll: Callable[[], None] | None = None  # completes it if the work is done, without blocking

    def _driven_by(self, drive: Callable[[], None], poll: Callable[[], None]) -> "Future":
        """Makes ``drive``/``poll`` complete this future (used by collectives and ``then``)."""
        self._drive, self._poll = drive, poll
        return self

    def done(self) -> bool:
        """Whether the result (or an exception) is set."""
        if not self._done and self._poll is not None:
            self._poll()
        return self._done

    def wait(self) -> Any:
        """Blocks until the future completes and returns its result (raises its exception)."""
        if not self._done and self._drive is not None:
            self._drive()
        with self._ready:
            while not self._done:
                self._ready.wait()
        if self._error is not None:
            raise self._error
        return self._result

    def value(self) -> Any:
        """The result of a completed future (RuntimeError before it completes)."""
        if not self.done():
            raise RuntimeError("Future.value(): the future has not completed yet; call wait() first")
        if self._error is not None:
            raise self._error
        return self._result

    def _finish(self, result: Any, error: BaseException | None) -> None:
        with self._ready:
            if self._done:
                raise RuntimeError("Future can only be marked completed once")
            self._result, self._error, self._done = result, error, True
            callbacks, self._callbacks = self._callbacks, []
            self._ready.notify_all()
        for callback in callbacks:  # outside the lock: a callback may complete other futures
            callback(self)

    def set_result(self, result: Any) -> None:
        """Completes the future with ``result`` and runs its callbacks."""
        self._finish(result, None)

    def set_exception(self, result: BaseException) -> None:
        """Completes the future with an exception that ``wait()`` raises."""
        if not isinstance(result, BaseException):
            raise TypeError(f"set_exception: expected an exception, got {type(result).__name__}")
        self._finish(None, result)

    def add_done_callback(self, callback: Callable[["Future"], None]) -> None:
        """Runs ``callback(self)`` when the future completes (now, if it has)."""
        with self._ready:
            if not self._done:
                self._callbacks.append(callback)
                return
        callback(self)

    def then(self, callback: Callable[["Future"], Any]) -> "Future":
        """A future of ``callback(self)``, computed once this one completes."""
        chained = Future()

        def run(parent: Future) -> None:
            try:
                outcome = callback(parent)
            except Exception as exc:  # the chained future carries it to whoever waits, as PyTorch wraps it
                wrapped = RuntimeError(f"Got the following error when running the callback: {type(exc).__name__}: {exc}")
                wrapped.__cause__ = exc
                chained.set_exception(wrapped)
            else:
                chained.set_result(outcome)

        self.add_done_callback(run)
        # Waiting on the chained future waits on this one, which runs ``run``.
        return chained._driven_by(lambda: _wait_quietly(self), self.done)

    def __repr__(self) -> str:
        return f"Future({'done' if self._done else 'pending'})"


def _wait_quietly(future: Future) -> None:
    try:
        future.wait()
    except Exception:  # the chained future holds the error (its callback saw it through value())
        pass


def collect_all(futures: list) -> Future:
    """A future of the list ``futures``, completed when every one of them is."""
    combined = Future()

    def drive() -> None:
        for f in futures:
            _wait_quietly(f)
        if not combined._done:
            combined.set_result(list(futures))

    def poll() -> None:
        if all(f.done() for f in futures) and not combined._done:
            combined.set_result(list(futures))

    return combined._driven_by(drive, poll)


def wait_all(futures: list) -> list:
    """Waits for every future of ``futures``; their results, in order (raises the first error)."""
    return [f.wait() for f in futures]
