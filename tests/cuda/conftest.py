"""tests/cuda's per-test time limit: a test that hangs on a GPU (a kernel that never ends, a
synchronization that waits forever) fails with TimeoutError instead of stopping the run.
TENSORPLUG_TEST_TIMEOUT sets the limit in seconds (default 600; tools/cuda_device_check.sh sets 60)."""
import os
import signal

import pytest


@pytest.fixture(autouse=True)
def _time_limit():
    seconds = int(os.environ.get("TENSORPLUG_TEST_TIMEOUT", "600"))

    def expire(signum, frame):
        raise TimeoutError(f"the test ran past {seconds} s (TENSORPLUG_TEST_TIMEOUT)")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)
