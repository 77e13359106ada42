"""``tp.profiler.profile``, ``record_function`` and ``schedule``, with PyTorch's names and shape.

>>> with tp.profiler.profile(record_shapes=True) as prof:   # doctest: +SKIP
...     with tp.profiler.record_function("step"):
...         y = (x @ w).relu().sum()
>>> print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10))   # doctest: +SKIP
>>> prof.export_chrome_trace("trace.json")   # doctest: +SKIP
"""
from __future__ import annotations

import enum
import functools
import time
from typing import Callable, Iterable

from ._chrome import write_chrome_trace
from ._events import EventList
from ._recorder import Recorder, current_recorder

__all__ = ["ProfilerActivity", "ProfilerAction", "profile", "record_function", "schedule", "supported_activities"]


class ProfilerActivity(enum.Enum):
    """What to profile, as ``torch.profiler.ProfilerActivity``.

    ``CPU``: every op as a host event (always on: an op's host event is what its device time
    hangs on). Any other member asks for device time on every non-CPU device: tensorplug has
    one generic device timing for all backends, so ``CUDA`` (what PyTorch scripts name) and
    ``PrivateUse1`` (PyTorch's name for an out-of-tree device) mean the same here.
    """

    CPU = "CPU"
    XPU = "XPU"
    MTIA = "MTIA"
    CUDA = "CUDA"
    HPU = "HPU"
    PrivateUse1 = "PrivateUse1"


def supported_activities() -> set[ProfilerActivity]:
    """The activities :class:`profile` records by default: the CPU and the generic device timing."""
    return {ProfilerActivity.CPU, ProfilerActivity.PrivateUse1}


class ProfilerAction(enum.Enum):
    """What a schedule asks of the profiler at a step."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0) -> Callable[[int], ProfilerAction]:
    """A step -> action function, as ``torch.profiler.schedule``: after ``skip_first`` steps,
    cycles of ``wait`` idle steps, ``warmup`` steps recorded then dropped and ``active`` steps
    recorded (the last one RECORD_AND_SAVE, which hands the cycle to ``on_trace_ready``);
    ``repeat`` cycles (0: no limit). ``skip_first_wait`` skips the first cycle's wait."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise ValueError(f"schedule(): invalid arguments wait={wait}, warmup={warmup}, active={active}, "
                         f"repeat={repeat}, skip_first={skip_first} (active must be positive, the rest >= 0)")

    def action(step: int) -> ProfilerAction:
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait:
            step += wait
        cycle = wait + warmup + active
        if repeat > 0 and step // cycle >= repeat:
            return ProfilerAction.NONE
        within = step % cycle
        if within < wait:
            return ProfilerAction.NONE
        if within < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if within < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    return action


def _always_record(step: int) -> ProfilerAction:
    return ProfilerAction.RECORD


_RECORDING = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)


class profile:
    """Record every op the calling thread runs, on every backend, while the context is open.

    Each op becomes a :class:`~tensorplug.profiler.FunctionEvent` that names the op, the
    dispatch key and kernel that ran it (what ``tp.dispatcher.explain`` says for the call), its
    device, host time and, for non-CPU devices with a device activity, device time; with
    ``record_shapes`` also its arguments' shapes and dtypes. Only the thread that entered the
    profiler is recorded. ``profile_memory`` adds the bytes each op allocated and freed (CPU and
    device apart), ``with_stack`` the Python frames that called it, ``with_flops`` PyTorch's
    FLOP counts for products, convolutions, ``add`` and ``mul`` (``_options.py``), and
    ``with_modules`` a range per ``nn.Module`` call, named as PyTorch names them
    (``nn.Module: Linear_0``).
    """

    def __init__(self, *, activities: Iterable[ProfilerActivity] | None = None,
                 schedule: Callable[[int], ProfilerAction] | None = None,
                 on_trace_ready: Callable[[profile], None] | None = None, record_shapes: bool = False,
                 profile_memory: bool = False, with_stack: bool = False, with_flops: bool = False,
                 with_modules: bool = False):
        chosen = supported_activities() if activities is None else set(activities)
        for activity in chosen:
            if not isinstance(activity, ProfilerActivity):
                raise TypeError(f"tp.profiler.profile(): activities must be ProfilerActivity members, got {activity!r}")
        self.activities = chosen
        self.record_shapes = bool(record_shapes)
        self.profile_memory = bool(profile_memory)
        self.with_stack = bool(with_stack)
        self.with_flops = bool(with_flops)
        self.with_modules = bool(with_modules)
        self.schedule = schedule if schedule is not None else _always_record
        self.record_steps = schedule is not None
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = ProfilerAction.NONE
        self._device_timing = any(activity is not ProfilerActivity.CPU for activity in chosen)
        self._recorder: Recorder | None = None
        self._step_range = None
        self._saved = EventList()
        self._running = False

    # --- lifetime --------------------------------------------------------------------------
    def __enter__(self) -> profile:
        self.start()
        return self

    def __exit__(self, *exc_info) -> bool:
        self.stop()
        return False

    def start(self) -> None:
        if self._running:
            raise RuntimeError("tp.profiler.profile: already started")
        action = self.schedule(self.step_num)
        if action is not ProfilerAction.NONE:
            self._begin()  # raises, leaving this profile stopped, when the thread already has one
        self.current_action, self._running = action, True
        self._open_step_range()

    def stop(self) -> None:
        """Stop recording; a cycle that was recording is saved (and handed to on_trace_ready)."""
        if not self._running:
            return
        self._running = False
        self._close_step_range()
        if self.current_action in _RECORDING:
            self._save()
        else:
            self._end()

    def step(self) -> None:
        """Mark the end of a training step: advance the schedule (see :func:`schedule`)."""
        if not self._running:
            raise RuntimeError("tp.profiler.profile.step(): the profiler is not running")
        self._close_step_range()
        previous = self.current_action
        self.step_num += 1
        action = self.current_action = self.schedule(self.step_num)
        if previous in _RECORDING and (previous is ProfilerAction.RECORD_AND_SAVE or action not in _RECORDING):
            self._save()
        elif previous is ProfilerAction.WARMUP and action in _RECORDING:
            self._recorder.events.clear()  # warm-up steps are run, not kept
        elif previous is ProfilerAction.WARMUP and action is ProfilerAction.NONE:
            self._end()
        if action is not ProfilerAction.NONE and self._recorder is None:
            self._begin()
        self._open_step_range()

    # --- results ---------------------------------------------------------------------------
    def events(self) -> EventList:
        """Every event of the last saved cycle (the whole run, without a schedule), in start order."""
        return self._saved

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0) -> EventList:
        """The events averaged per op name (and input shapes when ``group_by_input_shape``, and
        the innermost ``group_by_stack_n`` frames of their stacks)."""
        return self._saved.key_averages(group_by_input_shape=group_by_input_shape, group_by_stack_n=group_by_stack_n)

    def export_chrome_trace(self, path: str) -> None:
        """Write the saved events as Chrome trace-event JSON (chrome://tracing, ui.perfetto.dev)."""
        write_chrome_trace(self._saved, path)

    # --- internals -------------------------------------------------------------------------
    def _begin(self) -> None:
        recorder = Recorder(self.record_shapes, self._device_timing, time.perf_counter_ns(), with_stack=self.with_stack,
                            with_flops=self.with_flops, profile_memory=self.profile_memory)
        recorder.with_modules = self.with_modules
        recorder.attach()
        self._recorder = recorder

    def _end(self) -> EventList:
        recorder, self._recorder = self._recorder, None
        if recorder is None:
            return EventList()
        recorder.detach()
        return EventList(recorder.events)

    def _save(self) -> None:
        self._saved = self._end()
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def _open_step_range(self) -> None:
        if self.record_steps and self._recorder is not None:
            self._step_range = self._recorder.open(f"ProfilerStep#{self.step_num}", "user_annotation")

    def _close_step_range(self) -> None:
        step_range, self._step_range = self._step_range, None
        if step_range is not None and self._recorder is not None:
            self._recorder.close(step_range)


class record_function:
    """A user range in the profile: a context manager or a function decorator.

    >>> with tp.profiler.record_function("forward"):   # doctest: +SKIP
    ...     y = model(x)

    Ops run inside it are its children in the profile. Outside a profiling thread it does nothing
    (beyond one thread-local read).
    """

    def __init__(self, name: str, args: str | None = None):
        self.name = name
        self.args = args
        self._recorder: Recorder | None = None
        self._event = None

    def __enter__(self) -> record_function:
        recorder = current_recorder()
        if recorder is not None:
            self._recorder, self._event = recorder, recorder.open(self.name, "user_annotation")
        return self

    def __exit__(self, *exc_info) -> bool:
        recorder, event = self._recorder, self._event
        self._recorder = self._event = None
        # A range whose profile stopped inside it was already ended by the profile.
        if recorder is not None and recorder is current_recorder():
            recorder.close(event)
        return False

    def __call__(self, function: Callable) -> Callable:
        # A fresh range per call, so that recursion and calls from several threads each get
        # their own.
        name, args = self.name, self.args

        @functools.wraps(function)
        def ranged(*call_args, **call_kwargs):
            with record_function(name, args):
                return function(*call_args, **call_kwargs)

        return ranged
