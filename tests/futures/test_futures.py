"""tp.futures.Future: completion, chaining, callbacks and errors, as torch.futures.Future."""
import threading

import pytest

import tensorplug as tp

try:
    import torch
except ImportError:  # the reference; tp.futures does not need it
    torch = None

LIBS = [tp] + ([torch] if torch is not None else [])


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_then_chains_and_callbacks_run_once_complete(lib):
    future = lib.futures.Future()
    seen = []
    future.add_done_callback(lambda f: seen.append(f.value()))
    doubled = future.then(lambda f: f.value() * 2)
    assert not future.done() and not doubled.done()
    future.set_result(21)
    assert doubled.wait() == 42 and future.value() == 21 and seen == [21] and doubled.done()
    with pytest.raises(RuntimeError, match="completed once"):
        future.set_result(1)


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_errors_reach_whoever_waits(lib):
    future = lib.futures.Future()
    future.set_exception(ValueError("broken"))
    with pytest.raises(ValueError, match="broken"):
        future.wait()
    source = lib.futures.Future()
    failing = source.then(lambda f: 1 // 0)
    source.set_result(1)
    with pytest.raises(RuntimeError, match="error when running the callback: ZeroDivisionError"):
        failing.wait()


def test_wait_blocks_until_another_thread_sets_the_result():
    future = tp.futures.Future()
    threading.Timer(0.05, lambda: future.set_result("late")).start()
    assert future.wait() == "late"
    with pytest.raises(RuntimeError, match="not completed"):
        tp.futures.Future().value()


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_collect_all_and_wait_all(lib):
    first, second = lib.futures.Future(), lib.futures.Future()
    both = lib.futures.collect_all([first, second])
    first.set_result(1)
    second.set_result(2)
    assert [f.value() for f in both.wait()] == [1, 2]
    assert lib.futures.wait_all([first, second]) == [1, 2]
