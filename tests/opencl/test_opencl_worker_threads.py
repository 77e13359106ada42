"""PoCL's CPU worker threads run under SCHED_BATCH so that a launch's wake-up does not take the
host thread's core (backends/opencl/worker_threads.py, issue 14); the policy is read from the
kernel, and TENSORPLUG_OPENCL_WORKER_POLICY=normal leaves threads alone."""
import os
import threading

import pytest

import tensorplug as tp
from tensorplug.backends.opencl import OpenCLBackend, worker_threads

AVAILABLE, REASON = OpenCLBackend().is_available()
linux_only = pytest.mark.skipif(not hasattr(os, "SCHED_BATCH") or not os.path.isdir("/proc/self/task"),
                                reason="thread scheduling policies are Linux's")


@pytest.fixture
def parked_thread():
    """A thread of this process that waits until the test ends; yields its native id."""
    release = threading.Event()
    thread = threading.Thread(target=release.wait)
    thread.start()
    yield thread.native_id
    release.set()
    thread.join()


@linux_only
def test_yield_to_host_makes_the_threads_batch(parked_thread, monkeypatch):
    monkeypatch.delenv(worker_threads.ENV_POLICY, raising=False)
    assert parked_thread in worker_threads.thread_ids()
    worker_threads.yield_to_host([parked_thread])
    assert os.sched_getscheduler(parked_thread) == os.SCHED_BATCH
    assert os.sched_getscheduler(threading.get_native_id()) == os.SCHED_OTHER


@linux_only
def test_normal_policy_leaves_threads_alone(parked_thread, monkeypatch):
    monkeypatch.setenv(worker_threads.ENV_POLICY, "normal")
    worker_threads.yield_to_host([parked_thread])
    assert os.sched_getscheduler(parked_thread) == os.SCHED_OTHER


def test_unknown_policy_is_an_error_naming_the_variable(monkeypatch):
    monkeypatch.setenv(worker_threads.ENV_POLICY, "fifo")
    with pytest.raises(RuntimeError, match=worker_threads.ENV_POLICY):
        worker_threads.yield_to_host([])


@linux_only
@pytest.mark.skipif(not AVAILABLE, reason=f"OpenCL backend unavailable: {REASON}")
def test_the_host_thread_keeps_its_policy():
    # Only threads started while PoCL listed its devices change: never the thread that listed them.
    assert float((tp.ones(4, device="opencl") * 2).sum().item()) == 8.0
    assert os.sched_getscheduler(threading.get_native_id()) == os.SCHED_OTHER
