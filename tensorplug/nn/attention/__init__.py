"""``tp.nn.attention``, as ``torch.nn.attention``: ``SDPBackend`` and the ``sdpa_kernel``
context manager that limits which kernels ``F.scaled_dot_product_attention`` may use.

tensorplug has one attention path on every device (the composite in nn.functional), so the
choice changes no result and no speed; the context manager sets ``tp.backends.cuda``'s switches
(``flash_sdp_enabled()`` ...) for its duration, so code that reads them sees what it set. Like
PyTorch's, it takes any list (an empty one disables every kernel's switch) without checking it.
"""
from __future__ import annotations

import contextlib
import enum

__all__ = ["SDPBackend", "sdpa_kernel"]


class SDPBackend(enum.IntEnum):
    """The attention kernels PyTorch chooses between (values as PyTorch's)."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


# SDPBackend member -> its switch in tp.backends.cuda (OVERRIDEABLE has none there).
_SWITCHES = {SDPBackend.MATH: "math", SDPBackend.FLASH_ATTENTION: "flash",
             SDPBackend.EFFICIENT_ATTENTION: "mem_efficient", SDPBackend.CUDNN_ATTENTION: "cudnn"}


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority: bool = False):
    """Allow only ``backends`` (one SDPBackend or a list of them) inside the block."""
    from ...backends import cuda

    chosen = list(backends) if isinstance(backends, (list, tuple)) else [backends]
    saved = dict(cuda._sdp)
    for backend, switch in _SWITCHES.items():
        cuda._sdp[switch] = backend in chosen
    try:
        yield
    finally:
        cuda._sdp.update(saved)
