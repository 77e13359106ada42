"""What a profile gives out: a Chrome trace that chrome://tracing and Perfetto read, per-op
averages whose totals are the events' sums, and PyTorch's text table."""
import json
from collections import defaultdict

import pytest

import tensorplug as tp
import tensorplug.nn.functional as F
from tensorplug.profiler import ProfilerActivity, profile, record_function


def _profile_some_work(device):
    x = tp.tensor([[-1.0, 2.0], [3.0, -4.0]], device=device, requires_grad=True)
    w = tp.ones(2, 2, device=device)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1], record_shapes=True) as prof:
        with record_function("forward"):
            loss = F.relu(x @ w).sum()
        with record_function("backward"):
            loss.backward()
        (w + 1).exp()
    return prof


def _trace(prof, tmp_path):
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    return json.loads(path.read_text())


def test_chrome_trace_is_well_formed(device, tmp_path):
    """Complete events carry name, category, pid/tid, microsecond ts/dur and the op's dispatch facts."""
    prof = _profile_some_work(device)
    trace = _trace(prof, tmp_path)
    events = trace["traceEvents"]
    assert all(event["ph"] in ("X", "M") for event in events)
    complete = [event for event in events if event["ph"] == "X"]
    ops = [event for event in complete if event["cat"] == "cpu_op"]
    assert len(ops) == sum(1 for event in prof.events() if event.kind == "op")
    for event in complete:
        assert isinstance(event["name"], str) and event["name"]
        assert isinstance(event["pid"], int) and isinstance(event["tid"], int)
        assert isinstance(event["ts"], (int, float)) and isinstance(event["dur"], (int, float))
        assert event["ts"] >= 0 and event["dur"] >= 0
    by_id = {event.id: event for event in prof.events()}
    for event in ops:
        recorded = by_id[event["args"]["External id"]]
        assert event["name"] == recorded.name
        assert event["args"]["Kernel"] == recorded.kernel
        assert event["args"]["Dispatch key"] == recorded.dispatch_key
        assert event["args"]["Dispatch source"] == recorded.source
        assert event["args"]["Device"] == (str(tp.device(device, 0)) if device != "cpu" else "cpu")
        assert event["args"]["Input Dims"] == recorded.input_shapes
        assert event["args"]["Input type"] == recorded.input_types
        assert event["dur"] == pytest.approx(recorded.cpu_time_total, abs=1e-3)
    user = {event["name"] for event in complete if event["cat"] == "user_annotation"}
    assert user == {"forward", "backward"}
    kernels = [event for event in complete if event["cat"] == "kernel"]
    if device == "cpu":
        assert kernels == []
    else:
        assert kernels and all(event["pid"] != ops[0]["pid"] for event in kernels)
        # The device track names the device's kernel, also under an autograd wrapper.
        assert {by_id[event["args"]["External id"]].backend_kernel for event in kernels} == {
            event["args"]["Kernel"] for event in kernels}
        assert all(event["args"]["Kernel"].startswith(("tensorplug.backends", "tensorplug_npdev")) for event in kernels)
        named = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
        assert {named[event["pid"]] for event in kernels} == {str(tp.device(device, 0))}


def test_chrome_trace_timestamps_nest_per_thread(device, tmp_path):
    """On each track, start times never go back and every event lies inside its parent."""
    prof = _profile_some_work(device)
    trace = _trace(prof, tmp_path)
    complete = [event for event in trace["traceEvents"] if event["ph"] == "X"]
    tracks = defaultdict(list)
    for event in complete:
        tracks[(event["pid"], event["tid"])].append(event)
    for track in tracks.values():
        starts = [event["ts"] for event in track]
        assert starts == sorted(starts)
    host = {event["args"]["External id"]: event for event in complete if event["cat"] != "kernel"}
    nested = 0
    for recorded in prof.events():
        if recorded.cpu_parent is None:
            continue
        child, parent = host[recorded.id], host[recorded.cpu_parent.id]
        assert (child["pid"], child["tid"]) == (parent["pid"], parent["tid"])
        assert parent["ts"] <= child["ts"] + 1e-6
        assert child["ts"] + child["dur"] <= parent["ts"] + parent["dur"] + 1e-6
        nested += 1
    assert nested >= 3  # forward's matmul and relu, relu's primitives, backward's ops


def test_key_averages_add_up_the_events(device):
    """Per name: the call count, total and self times are the sums over that name's events."""
    prof = _profile_some_work(device)
    events = prof.events()
    averages = prof.key_averages()
    assert sorted(average.key for average in averages) == sorted({event.name for event in events})
    for average in averages:
        mine = [event for event in events if event.name == average.key]
        assert average.count == len(mine)
        assert average.cpu_time_total_ns == sum(event.cpu_time_total_ns for event in mine)
        assert average.self_cpu_time_total_ns == sum(event.self_cpu_time_total_ns for event in mine)
        assert average.device_time_total_ns == sum(event.device_time_total_ns for event in mine)
        assert average.self_device_time_total_ns == sum(event.self_device_time_total_ns for event in mine)
        assert average.cpu_time == pytest.approx(average.cpu_time_total / average.count)
    top_level = sum(event.cpu_time_total_ns for event in events if event.cpu_parent is None)
    assert sum(average.self_cpu_time_total_ns for average in averages) == top_level


def test_key_averages_by_input_shape():
    """group_by_input_shape splits one op name by the shapes it ran on."""
    small, large = tp.ones(2), tp.ones(3)
    with profile(record_shapes=True) as prof:
        small.exp()
        large.exp()
        small.exp()
    rows = {tuple(map(tuple, row.input_shapes)): row.count for row in prof.key_averages(group_by_input_shape=True)}
    assert rows == {((2,), (2,)): 2, ((3,), (3,)): 1}


def test_table_sorts_limits_and_names_the_kernels():
    """The table lists rows largest first by the sort column, at most row_limit of them."""
    a = tp.ones(64, 64)
    with profile() as prof:
        for _ in range(3):
            a.exp()
        a @ a
        a.neg()
    averages = prof.key_averages()
    text = averages.table(sort_by="count", row_limit=2)
    lines = text.splitlines()
    header = next(line for line in lines if line.startswith("Name"))
    for column in ("Self CPU %", "Self CPU", "CPU total", "CPU time avg", "# of Calls", "Dispatched to"):
        assert column in header
    rows = [line for line in lines[lines.index(header) + 2:] if line and not line.startswith("-")]
    rows = [line for line in rows if not line.startswith("Self CPU time total")]
    assert len(rows) == 2 and rows[0].startswith("exp")
    assert "cpu kernel" in rows[0]
    assert text.rstrip().splitlines()[-1].startswith("Self CPU time total:")
    ordered = averages.table(sort_by="self_cpu_time_total").splitlines()
    names = [line.split()[0] for line in ordered[3:6]]
    expected = [row.key for row in sorted(averages, key=lambda row: row.self_cpu_time_total, reverse=True)]
    assert names == expected


def test_table_refuses_an_unknown_sort_key():
    """A misspelt sort_by is a ValueError listing the valid ones."""
    with profile() as prof:
        tp.ones(1)
    with pytest.raises(ValueError, match="self_cpu_time_total"):
        prof.key_averages().table(sort_by="self_cpu")
