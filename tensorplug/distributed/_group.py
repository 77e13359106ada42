"""Process groups over MPI: the world set up by ``init_process_group``, sub-groups from
``new_group``, and the bounded wait every collective goes through.

Ranks and world size come from the launcher (``mpiexec -n N``, or
``python -m tensorplug.distributed.run``); mpi4py is imported on first use only, so that
``import tensorplug`` stays fast. Every wait on the engine polls with a deadline: a rank that
never arrives (it died, or skipped a collective) makes the others raise a clear error after the
group's timeout instead of hanging forever.
"""
from __future__ import annotations

import datetime
import os
import time

__all__ = ["ProcessGroup", "GroupMember", "world", "require_world", "resolve_group", "DEFAULT_TIMEOUT", "mpi"]

#: As PyTorch's default for non-NCCL groups.
DEFAULT_TIMEOUT = datetime.timedelta(minutes=30)

#: How long a wait polls without sleeping.
_SPIN_SECONDS = 1.0

_MPI_HINT = "pip install tensorplug[distributed] installs mpi4py and the mpich MPI library"


def mpi():
    """The mpi4py MPI module, imported (and MPI initialized) on first use."""
    try:
        from mpi4py import MPI
    except ImportError as exc:
        raise RuntimeError(f"tensorplug.distributed needs mpi4py ({exc}); {_MPI_HINT}") from None
    return MPI


class ProcessGroup:
    """A set of ranks that run collectives together (one MPI communicator)."""

    def __init__(self, comm, ranks: list[int], timeout: datetime.timedelta, backend: str):
        self.comm = comm
        self.ranks = ranks  # global ranks, in group-rank order
        self.timeout = timeout
        self.backend = backend

    def rank(self) -> int:
        return self.comm.Get_rank()

    def size(self) -> int:
        return self.comm.Get_size()

    def group_rank(self, global_rank: int, what: str) -> int:
        try:
            return self.ranks.index(global_rank)
        except ValueError:
            raise ValueError(f"{what}: global rank {global_rank} is not part of this group (ranks {self.ranks})") from None

    def wait(self, request, what: str, timeout: datetime.timedelta | None = None):
        """Wait for an MPI request, polling, until the group's timeout; returns its status."""
        MPI = mpi()
        status = MPI.Status()
        if request.Test(status):
            return status
        limit = (timeout or self.timeout).total_seconds()
        start = time.monotonic()
        deadline = start + limit
        while not request.Test(status):
            now = time.monotonic()
            if now > deadline:
                raise RuntimeError(
                    f"{what}: timed out after {limit:g} s waiting for the other ranks of the group (ranks "
                    f"{self.ranks}); a rank may have died, or skipped this collective. The process group can no "
                    "longer be used (init_process_group(timeout=...) sets the limit)."
                )
            # MPI moves a message only while its ranks call into it, so a rank that slept would
            # hold back its peers: poll as MPI's own blocking calls do for the first second, then
            # (a peer busy elsewhere, e.g. evaluating) leave the core to others between polls.
            if now - start > _SPIN_SECONDS:
                time.sleep(1e-3)
        return status

    def __repr__(self) -> str:
        return f"ProcessGroup(backend={self.backend!r}, ranks={self.ranks})"


class GroupMember:
    """As ``torch.distributed.GroupMember``: ``WORLD`` is the default group, and
    ``NON_GROUP_MEMBER`` what ``new_group`` returns on ranks left out of the new group."""

    WORLD = None
    NON_GROUP_MEMBER = object()


_world: ProcessGroup | None = None


def world() -> ProcessGroup | None:
    return _world


def set_world(group: ProcessGroup | None) -> None:
    global _world
    _world = group
    GroupMember.WORLD = group


def require_world(what: str) -> ProcessGroup:
    if _world is None:
        # ValueError, as PyTorch raises it here (scripts catch it to fall back to one process).
        raise ValueError(
            f"{what}: the default process group has not been initialized; call "
            "tensorplug.distributed.init_process_group() first (and launch with mpiexec -n N)"
        )
    return _world


def resolve_group(group, what: str) -> ProcessGroup | None:
    """The group a collective runs on: the world for None; None when this rank is not a member
    (PyTorch then leaves the tensors untouched)."""
    world_group = require_world(what)
    if group is None:
        return world_group
    if group is GroupMember.NON_GROUP_MEMBER:
        return None
    if not isinstance(group, ProcessGroup):
        raise TypeError(f"{what}: group must be a ProcessGroup from new_group(), got {type(group).__name__}")
    return group


def launcher_env_size() -> int | None:
    """The world size a torchrun-style launcher announced, if any."""
    for key in ("WORLD_SIZE", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE"):
        value = os.environ.get(key)
        if value and value.isdigit():
            return int(value)
    return None
