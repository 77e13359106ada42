"""``tp.distributed.constants``: PyTorch's default collective timeouts (30 minutes for both;
the NCCL one matters only once a CUDA engine exists)."""
from datetime import timedelta

from ._group import DEFAULT_TIMEOUT

__all__ = ["default_pg_timeout", "default_pg_nccl_timeout", "timedelta"]

default_pg_timeout: timedelta = DEFAULT_TIMEOUT
default_pg_nccl_timeout: timedelta = DEFAULT_TIMEOUT
