"""``noop_hook``: a DDP communication hook that communicates nothing, for measuring what the
all-reduce costs a training step (each rank keeps its own gradients)."""
from __future__ import annotations

from ....futures import Future
from ...grad_bucket import GradBucket

__all__ = ["noop_hook"]


def noop_hook(_, bucket: GradBucket) -> Future:
    """Returns the bucket's flat gradients as they are, in a completed future."""
    done = Future()
    done.set_result(bucket.buffer())
    return done
