"""``tp.distributed.Backend``: PyTorch's names of the collective engines, as a ``str`` subclass
(``Backend("GLOO") == "gloo"``), so scripts that compare or pass them keep working.

Every name maps onto tensorplug's one engine, MPI, in ``init_process_group``, except NCCL, which
needs the CUDA backend.
"""
from __future__ import annotations

__all__ = ["Backend"]


class Backend(str):
    """A backend name, lower-cased and checked: ``Backend("gloo")``."""

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    UCC = "ucc"
    MPI = "mpi"
    XCCL = "xccl"
    FAKE = "fake"

    def __new__(cls, name: str):
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, got {type(name).__name__}")
        value = name.lower()
        known = {cls.UNDEFINED, cls.GLOO, cls.NCCL, cls.UCC, cls.MPI, cls.XCCL, cls.FAKE}
        if value not in known and ":" not in value:
            raise ValueError(f"Unknown backend {name!r}; PyTorch's names are {sorted(known)}")
        return super().__new__(cls, value)
