"""The built-in DDP communication hooks: ``allreduce_hook`` (what DDP does without a hook) and
the compressing ones, which all-reduce the gradients as float16 or bfloat16 (2 bytes per element
on the wire, summed in 16 bits: half_sum.py) and write them back in the gradients' own dtype.

Each hook takes ``(process_group, bucket)`` (None for the world) and returns a future of the
bucket's averaged flat gradients; ``register_comm_hook(state=group, hook=...)`` installs one.
"""
from __future__ import annotations

from typing import Any, Callable

from .... import distributed as dist
from ....frontend import dtypes as _dt
from ....futures import Future
from ...grad_bucket import GradBucket
from ...half_sum import start_sum16

__all__ = ["allreduce_hook", "fp16_compress_hook", "bf16_compress_hook", "fp16_compress_wrapper",
           "bf16_compress_wrapper"]

Hook = Callable[[Any, GradBucket], Future]


def allreduce_hook(process_group, bucket: GradBucket) -> Future:
    """Averages the bucket over the group's ranks (divide, then an all-reduce SUM)."""
    flat = bucket.buffer()
    flat.div_(dist.get_world_size(process_group))
    work = dist.all_reduce(flat, group=process_group, async_op=True)
    return work.get_future().then(lambda done: done.value()[0])


def _compressed_average(process_group, bucket: GradBucket, wire_dtype) -> Future:
    flat = bucket.buffer()
    # Divide before the cast: the sum over ranks then stays in the 16-bit range.
    packed = (flat / dist.get_world_size(process_group)).to(wire_dtype)
    # Two bytes per element on the wire (dist.all_reduce would widen 16-bit floats to float32).
    work = start_sum16(process_group, packed, "fp16_compress_hook" if wire_dtype is _dt.float16 else "bf16_compress_hook")

    def unpack(done: Future):
        flat.copy_(done.value()[0])
        return flat

    return work.get_future().then(unpack)


def fp16_compress_hook(process_group, bucket: GradBucket) -> Future:
    """Averages the bucket over the group with the gradients sent as float16."""
    return _compressed_average(process_group, bucket, _dt.float16)


def bf16_compress_hook(process_group, bucket: GradBucket) -> Future:
    """Averages the bucket over the group with the gradients sent as bfloat16."""
    return _compressed_average(process_group, bucket, _dt.bfloat16)


def _compressing(hook: Hook, wire_dtype) -> Hook:
    def compressed_hook(state, bucket: GradBucket) -> Future:
        original = bucket.buffer()
        bucket.set_buffer(original.to(wire_dtype))
        inner = hook(state, bucket)

        def unpack(done: Future):
            result = done.value()
            original.copy_(result[0] if isinstance(result, (list, tuple)) else result)
            return original

        return inner.then(unpack)

    compressed_hook.__name__ = f"{getattr(hook, '__name__', 'hook')}_{'fp16' if wire_dtype is _dt.float16 else 'bf16'}"
    return compressed_hook


def fp16_compress_wrapper(hook: Hook) -> Hook:
    """``hook`` run on the bucket cast to float16, its result cast back to the gradients' dtype."""
    return _compressing(hook, _dt.float16)


def bf16_compress_wrapper(hook: Hook) -> Hook:
    """``hook`` run on the bucket cast to bfloat16, its result cast back to the gradients' dtype."""
    return _compressing(hook, _dt.bfloat16)
