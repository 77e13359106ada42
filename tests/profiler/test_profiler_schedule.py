"""``schedule`` and ``profile.step()``: which steps are recorded, and when on_trace_ready runs."""
import pytest

import tensorplug as tp
from tensorplug.profiler import ProfilerAction, profile, schedule

_CASES = [
    dict(wait=1, warmup=1, active=2),
    dict(wait=0, warmup=0, active=1, repeat=2),
    dict(wait=2, warmup=1, active=3, repeat=1, skip_first=2),
    dict(wait=1, warmup=2, active=1, skip_first_wait=1),
]


@pytest.mark.parametrize("arguments", _CASES)
def test_schedule_matches_pytorch(arguments):
    """The step -> action function gives PyTorch's actions for the same arguments."""
    torch_profiler = pytest.importorskip("torch.profiler", reason="torch is the reference for schedule()")
    mine = schedule(**arguments)
    if arguments["warmup"] == 0:
        # PyTorch warns that its device tracer starts cold; tensorplug's has nothing to warm up.
        with pytest.warns(UserWarning, match="warmup"):
            theirs = torch_profiler.schedule(**arguments)
    else:
        theirs = torch_profiler.schedule(**arguments)
    assert [mine(step).name for step in range(30)] == [theirs(step).name for step in range(30)]


def test_schedule_refuses_bad_arguments():
    """active must be positive: a schedule that never records is an error."""
    with pytest.raises(ValueError, match="active"):
        schedule(wait=1, warmup=0, active=0)


def test_steps_record_only_active_steps_and_hand_each_cycle_over():
    """Wait and warm-up steps are dropped; each cycle's active steps reach on_trace_ready."""
    cycles = []

    def ready(prof):
        cycles.append([(event.name, tuple(map(tuple, event.input_shapes or ()))) for event in prof.events()])

    tensors = [tp.ones(step + 1) for step in range(8)]
    with profile(schedule=schedule(wait=1, warmup=1, active=2, repeat=2), on_trace_ready=ready,
                 record_shapes=True) as prof:
        for step in range(8):
            tensors[step].neg()  # the shape tells the step apart
            prof.step()
    assert prof.step_num == 8

    def step_events(step):
        return [(f"ProfilerStep#{step}", ()), ("neg", ((step + 1,), (step + 1,)))]

    assert cycles == [step_events(2) + step_events(3), step_events(6) + step_events(7)]
    assert all(event.cpu_parent is not None for event in prof.events() if event.name == "neg")


def test_exit_while_active_saves_the_cycle():
    """Leaving the context during active steps hands the partial cycle over."""
    cycles = []
    a = tp.ones(2)
    with profile(schedule=schedule(wait=0, warmup=0, active=3), on_trace_ready=lambda p: cycles.append(p.events())) as prof:
        a.neg()
        prof.step()
        a.exp()
    assert [[event.name for event in cycle] for cycle in cycles] == [
        ["ProfilerStep#0", "neg", "ProfilerStep#1", "exp"]]


def test_step_without_a_running_profiler_raises():
    """step() outside the context is an error, not a silent no-op."""
    prof = profile()
    with pytest.raises(RuntimeError, match="not running"):
        prof.step()


def test_actions_are_pytorchs():
    """The action names are PyTorch's."""
    assert [action.name for action in ProfilerAction] == ["NONE", "WARMUP", "RECORD", "RECORD_AND_SAVE"]
