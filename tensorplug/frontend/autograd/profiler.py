"""``tp.autograd.profiler``: PyTorch's older profiler spelling, over ``tp.profiler``.

Scripts written before ``torch.profiler`` existed profile with
``torch.autograd.profiler.profile(use_cuda=...)`` and ``record_function``, and mark ranges for
NVIDIA's or Intel's tools with ``emit_nvtx``/``emit_itt``. The profile here is ``tp.profiler``'s
with the old constructor's arguments; the range emitters have no external tool to talk to and
run their block unchanged.
"""
from __future__ import annotations

import contextlib

from ...profiler import EventList, FunctionEvent, ProfilerActivity, record_function
from ...profiler import profile as _activity_profile

__all__ = ["profile", "record_function", "emit_nvtx", "emit_itt", "EventList", "FunctionEvent"]


class profile(_activity_profile):
    """``with tp.autograd.profiler.profile() as prof:``: records every op of the block.

    ``enabled=False`` makes the block run unprofiled (so scripts can switch profiling with a
    flag); ``use_cuda``/``use_device`` add device time, as the CUDA activity does in
    ``tp.profiler.profile``. The results are read with ``key_averages()``, ``table()``,
    ``function_events`` and ``export_chrome_trace()``.
    """

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False, use_device: str | None = None,
                 record_shapes: bool = False, with_flops: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_modules: bool = False, use_kineto: bool = False, use_cpu: bool = True,
                 **ignored) -> None:
        activities = [ProfilerActivity.CPU]
        if use_cuda or use_device not in (None, "cpu"):
            activities.append(ProfilerActivity.CUDA)
        super().__init__(activities=activities, record_shapes=record_shapes, profile_memory=profile_memory,
                         with_stack=with_stack, with_flops=with_flops, with_modules=with_modules)
        self.enabled = bool(enabled)

    def __enter__(self) -> profile:
        if self.enabled:
            self.start()
        return self

    def __exit__(self, *exc_info) -> bool:
        if self.enabled:
            self.stop()
        return False

    @property
    def function_events(self) -> EventList:
        """Every recorded event, in start order (the old profiler's name for ``events()``)."""
        return self.events()

    def table(self, sort_by: str | None = None, row_limit: int = 100, **options) -> str:
        """The events averaged per op, as a text table (``key_averages().table(...)``)."""
        return self.key_averages().table(sort_by=sort_by, row_limit=row_limit, **options)

    def total_average(self):
        return self.events().total_average()

    @property
    def self_cpu_time_total(self) -> float:
        return self.events().self_cpu_time_total


@contextlib.contextmanager
def emit_nvtx(enabled: bool = True, record_shapes: bool = False):
    """Runs the block (there is no NVTX to emit ranges to)."""
    yield


@contextlib.contextmanager
def emit_itt(enabled: bool = True, record_shapes: bool = False):
    """Runs the block (there is no Intel ITT to emit ranges to)."""
    yield
