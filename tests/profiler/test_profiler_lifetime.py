"""When a profile records: only inside its context, only in its thread, and nothing is left
behind on the dispatcher's per-op path once it exits (also after an exception)."""
import threading

import numpy as np
import pytest

import tensorplug as tp
from tensorplug.dispatcher import PROFILER, local_state
from tensorplug.profiler import profile, record_function


def _profiler_included() -> bool:
    return bool(local_state.include & PROFILER.mask)


def test_key_is_included_only_inside_the_context():
    """The Profiler key joins the thread's include set on entry and leaves it on exit."""
    assert not _profiler_included()
    with profile():
        assert _profiler_included()
    assert not _profiler_included()


def test_nothing_is_recorded_after_exit():
    """Ops after the context (and ranges) add no events; the ops' kernels are the unprofiled ones."""
    a = tp.ones(3)
    with profile() as prof:
        a.exp()
    before = list(prof.events())
    a.exp()
    with record_function("late"):
        a.neg()
    assert prof.events() == before and len(before) == 1
    # The key set a call dispatches on is the tensors' own again: the same table entry as before.
    assert tp.dispatcher.keyset_of((a,), {}) == a._keys


def test_exception_inside_the_context_removes_the_key():
    """An error inside the profile ends it: the key is gone and the events up to the error remain."""
    a = tp.ones(2, 2)
    with pytest.raises(RuntimeError, match="mat1 and mat2|shape|size"):
        with profile() as prof:
            a.exp()
            a @ tp.ones(3, 3)
    assert not _profiler_included()
    names = [event.name for event in prof.events()]
    assert names[0] == "exp"
    assert all(event.end_ns >= event.start_ns for event in prof.events())


def test_profiling_in_one_thread_does_not_record_another():
    """A profile records its own thread only; another thread's ops run unprofiled meanwhile."""
    started, other_done = threading.Event(), threading.Event()
    seen = {}

    def other():
        started.wait(timeout=30)
        seen["included"] = _profiler_included()
        seen["value"] = (tp.ones(4) * 3).sum().item()
        other_done.set()

    mine = tp.ones(2)
    thread = threading.Thread(target=other)
    thread.start()
    with profile() as prof:
        started.set()
        assert other_done.wait(timeout=30)
        mine.neg()
    thread.join()
    assert seen == {"included": False, "value": 12.0}
    assert [event.name for event in prof.events()] == ["neg"]
    assert {event.thread for event in prof.events()} == {threading.get_native_id()}


def test_profile_inside_a_thread_leaves_the_main_thread_alone():
    """A profile opened in a worker thread neither records nor includes the key in the main thread."""
    inside, release = threading.Event(), threading.Event()
    result = {}

    def worker():
        with profile() as prof:
            tp.ones(2).exp()
            inside.set()
            release.wait(timeout=30)
        result["names"] = [event.name for event in prof.events()]

    thread = threading.Thread(target=worker)
    thread.start()
    assert inside.wait(timeout=30)
    assert not _profiler_included()
    np.testing.assert_allclose(tp.ones(2).sin().numpy(), np.sin(np.ones(2)), rtol=1e-6)
    release.set()
    thread.join()
    assert result["names"] == ["fill_", "exp"]  # tp.ones fills its new tensor


def test_profiles_do_not_nest_in_a_thread():
    """A second profile in the same thread is refused; the first keeps recording."""
    a = tp.ones(1)
    inner = profile()
    with profile() as outer:
        with pytest.raises(RuntimeError, match="already running in this thread"):
            with inner:
                pass
        a.neg()
    assert [event.name for event in outer.events()] == ["neg"]
    assert not _profiler_included()
    with inner:  # the refused profile was left stopped, so it can run later
        a.exp()
    assert [event.name for event in inner.events()] == ["exp"]


def test_activities_must_be_profiler_activities():
    """A wrong activity is a TypeError naming it."""
    with pytest.raises(TypeError, match="'CPU'"):
        profile(activities=["CPU"])


def test_explain_inside_a_profile_shows_the_profiler_fallback():
    """While a profile runs, explain() shows the Profiler key first, handled by its fallback."""
    a = tp.ones(2)
    with profile():
        text = tp.dispatcher.explain("neg", a, a, print_result=False)
    assert "key set {Profiler, cpu}" in text
    assert "-> Profiler fallback" in text
    assert "key set {cpu}" in tp.dispatcher.explain("neg", a, a, print_result=False)


def test_key_fallbacks_are_for_non_backend_keys():
    """register_key_fallback refuses backend keys and Autograd, which have their own mechanisms."""
    with pytest.raises(ValueError, match="non-backend"):
        tp.dispatcher.register_key_fallback(tp.dispatcher.allocate_backend_key("cpu"), lambda *a: None)
    with pytest.raises(ValueError, match="non-backend"):
        tp.dispatcher.register_key_fallback(tp.dispatcher.AUTOGRAD, lambda *a: None)
