"""PoCL's worker threads on a CPU device yield to the host thread when woken (issue 14).

PoCL's CPU driver runs kernels on worker threads it starts when the platform's devices are first
listed. A launch into an idle device wakes one with a futex, and Linux lets a freshly woken
thread preempt the one that woke it: on a machine with as many busy threads as cores, the host
thread lost its core to the worker after most launches of a small step (about four involuntary
context switches per tiny backward of six launches) and waited for its turn while the kernel
ran, which the queue did not need it to. SCHED_BATCH threads never preempt on wake-up (their
turn comes from the scheduler's tick or a free core), so the host keeps its core and goes on
queueing work. The policy needs no privileges and changes nothing else: priorities and the
share of CPU time are those of SCHED_OTHER.

Only threads that PoCL started while its platform listed its devices are touched, and only
when that platform's devices are all CPUs (other PoCL drivers, CUDA's say, have threads of their
own that must answer fast). ENV_POLICY=normal leaves them as they are.
"""
from __future__ import annotations

import os

__all__ = ["ENV_POLICY", "thread_ids", "yield_to_host"]

#: "batch" (the default): PoCL's CPU worker threads run under SCHED_BATCH; "normal": untouched.
ENV_POLICY = "TENSORPLUG_OPENCL_WORKER_POLICY"
_POLICIES = ("batch", "normal")


def thread_ids() -> set[int]:
    """The ids of this process's threads now (empty where /proc is not there)."""
    try:
        return {int(name) for name in os.listdir("/proc/self/task")}
    except OSError:
        return set()


def yield_to_host(threads) -> None:
    """Put ``threads`` (a CPU driver's workers) under SCHED_BATCH, unless ENV_POLICY says
    "normal"; a thread that has ended or refuses is left as it is."""
    policy = os.environ.get(ENV_POLICY, "batch").strip().lower() or "batch"
    if policy not in _POLICIES:
        raise RuntimeError(f"{ENV_POLICY}={policy!r}: expected one of {', '.join(_POLICIES)}")
    if policy == "normal" or not hasattr(os, "SCHED_BATCH"):
        return
    for thread in threads:
        try:
            os.sched_setscheduler(thread, os.SCHED_BATCH, os.sched_param(0))
        except OSError:  # gone, or a sandbox that forbids it: the default scheduling still works
            pass
