"""``tp.sparse.check_sparse_tensor_invariants``: PyTorch's switch for validating sparse tensors
as they are built (``enable()``/``disable()``, a context manager, a decorator).

tensorplug validates every sparse tensor it builds whatever the switch says (the index range
check in ``sparse_coo_tensor`` is what keeps a bad index from reaching a kernel), so the switch
only records its state for ``is_enabled()``, which scripts read; PyTorch 2.13 skips the checks by
default and warns that it does, tensorplug neither skips nor warns (docs/deviations.md).
"""
from __future__ import annotations

import functools

_enabled = False


class check_sparse_tensor_invariants:
    """``with check_sparse_tensor_invariants():``, ``@check_sparse_tensor_invariants()``, or the
    static ``enable()``/``disable()``/``is_enabled()``."""

    @staticmethod
    def is_enabled() -> bool:
        return _enabled

    @staticmethod
    def enable() -> None:
        global _enabled
        _enabled = True

    @staticmethod
    def disable() -> None:
        global _enabled
        _enabled = False

    def __init__(self, enable: bool = True):
        self.state = enable
        self.saved_state = None

    def __enter__(self):
        global _enabled
        if self.saved_state is not None:
            raise RuntimeError("This context manager instance is already activated. Use a different context "
                               "manager instance for context nesting.")
        self.saved_state = _enabled
        _enabled = self.state

    def __exit__(self, exc_type, exc_value, traceback):
        global _enabled
        _enabled = self.saved_state
        self.saved_state = None

    def __call__(self, function):
        @functools.wraps(function)
        def run_checked(*args, **kwargs):
            # a fresh instance per call, so that recursive and concurrent calls do not share one
            with type(self)(self.state):
                return function(*args, **kwargs)

        return run_checked
