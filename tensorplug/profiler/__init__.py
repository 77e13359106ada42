"""``tp.profiler``: what ran where, and how long it took, as ``torch.profiler``.

>>> import tensorplug as tp
>>> from tensorplug.profiler import ProfilerActivity, profile, record_function
>>> x = tp.ones(64, 64)
>>> with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
...     with record_function("block"):
...         y = (x @ x).relu().sum()
>>> [event.name for event in prof.events()][:3]
['block', 'matmul', 'relu']

Every op, on every backend, goes through the dispatcher; while a profile runs, the thread's
calls resolve first to the Profiler dispatch key, whose fallback records the op, the dispatch
key and kernel chosen (what ``tp.dispatcher.explain`` says), shapes, dtypes, the device and host
and device time. See docs/profiling.md.
"""
from ._events import EventList, FunctionEvent, FunctionEventAvg, Interval
from ._profile import ProfilerAction, ProfilerActivity, profile, record_function, schedule, supported_activities

__all__ = [
    "EventList",
    "FunctionEvent",
    "FunctionEventAvg",
    "Interval",
    "ProfilerAction",
    "ProfilerActivity",
    "profile",
    "record_function",
    "schedule",
    "supported_activities",
]
