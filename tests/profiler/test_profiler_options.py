"""profile_memory, with_stack, with_flops and with_modules: PyTorch's counts, recorded on every
device (cpu, opencl, npdev), against numbers worked out by hand and against PyTorch 2.13's own
profiler where it is installed."""
import sys

import pytest

import tensorplug as tp
from tensorplug.profiler import profile, record_function
from tensorplug.profiler._recorder import module_ranges

try:
    import torch
except ImportError:  # the reference; tensorplug itself does not need it
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch (the reference) is not installed: pip install torch==2.13.0")


def _events(prof, name):
    return [event for event in prof.events() if event.name == name]


def _subtree_flops(event) -> int:
    return (event.flops or 0) + sum(_subtree_flops(child) for child in event.cpu_children)


def test_flops_of_products_convolutions_and_elementwise(device):
    a, b = tp.randn(64, 128, device=device), tp.randn(128, 32, device=device)
    image, weight = tp.randn(2, 3, 8, 8, device=device), tp.randn(4, 3, 3, 3, device=device)
    batch_a, batch_b = tp.randn(5, 6, 7, device=device), tp.randn(5, 7, 3, device=device)
    with profile(with_flops=True) as prof:
        a @ b
        tp.bmm(batch_a, batch_b)
        tp.nn.functional.conv2d(image, weight, padding=1)
        a + a
        a * 2.0
        a.exp()
    matmuls = [event.flops for event in _events(prof, "matmul") if event.cpu_parent is None]
    assert matmuls == [2 * 64 * 128 * 32, 2 * 5 * 6 * 7 * 3]
    # The convolution's count sits on whichever event runs its kernel: conv2d itself, or the
    # product of the decomposition (npdev).
    conv = [event for event in _events(prof, "conv2d") if event.cpu_parent is None][0]
    assert _subtree_flops(conv) == 2 * (2 * 4 * 8 * 8) * (3 * 3 * 3)  # output elements x taps
    assert [event.flops for event in _events(prof, "add")] == [64 * 128]
    assert [event.flops for event in _events(prof, "mul")] == [64 * 128]
    assert [event.flops for event in _events(prof, "exp")] == [None]  # not counted, as in PyTorch
    table = prof.key_averages().table()
    assert "Total KFLOPs" in table and "--" in table


def test_without_the_options_nothing_extra_is_recorded():
    a = tp.randn(8, 8)
    with profile() as prof:
        a @ a
    event = _events(prof, "matmul")[0]
    assert event.flops is None and event.stack == [] and event.cpu_memory_usage == 0
    table = prof.key_averages().table()
    assert "FLOPs" not in table and "CPU Mem" not in table and "Source Location" not in table


def test_memory_of_outputs_and_of_temporaries_freed_inside_a_range(device):
    a = tp.randn(64, 128, device=device)
    nbytes = 64 * 128 * 4
    with profile(profile_memory=True) as prof:
        kept = a + a  # noqa: F841 - alive after the profile: its bytes stay counted
        with record_function("scratch"):
            temporary = a * 3.0
            del temporary  # freed inside the range
    on_cpu = device == "cpu"
    add = _events(prof, "add")[0]
    own, other = ("self_cpu_memory_usage", "self_device_memory_usage") if on_cpu else (
        "self_device_memory_usage", "self_cpu_memory_usage")
    assert getattr(add, own) == nbytes and getattr(add, other) == 0
    scratch = _events(prof, "scratch")[0]
    assert getattr(scratch, own) == -nbytes  # the release, in the range that was open
    total = scratch.cpu_memory_usage if on_cpu else scratch.device_memory_usage
    assert total == 0  # the multiplication's output (its child) and its release cancel
    table = prof.key_averages().table(sort_by="self_cpu_memory_usage" if on_cpu else "self_device_memory_usage")
    assert ("CPU Mem" if on_cpu else "Device Mem") in table and "32.00 KB" in table and "-32.00 KB" in table


def test_memory_tracking_leaves_the_backends_as_they_were(device):
    a = tp.randn(4, device=device)
    backend = a._device._backend
    before = dict(vars(backend))
    with profile(profile_memory=True):
        a + a
    assert vars(backend) == before  # the wrapper is gone with the profile, a backend's own allocate back
    with profile() as prof:
        b = a + a
    assert _events(prof, "add")[0].self_cpu_memory_usage == 0
    assert b.cpu().tolist() == (a + a).cpu().tolist()


def _caller(x):
    return x.exp()  # the line the stacks must name


def test_stacks_name_the_calling_lines_and_group(device):
    x = tp.randn(4, device=device)
    layer = tp.nn.Linear(4, 2).to(device)
    with profile(with_stack=True) as prof:
        _caller(x)
        x.exp()
        layer(x)
    exps = _events(prof, "exp")
    line = _caller.__code__.co_firstlineno + 1
    assert exps[0].stack[0] == f"{__file__}({line}): _caller"
    assert exps[0].stack[1].endswith("test_stacks_name_the_calling_lines_and_group")
    assert exps[1].stack[0].endswith("test_stacks_name_the_calling_lines_and_group")
    linear_stack = [event for event in prof.events() if event.name in ("linear", "matmul")][0].stack
    assert "tensorplug/nn/" in linear_stack[0]  # the nn layer is kept, the frontend's frames are not
    assert not any("tensorplug/frontend" in frame or "tensorplug/dispatcher" in frame for event in prof.events()
                   for frame in event.stack)
    grouped = [row for row in prof.key_averages(group_by_stack_n=1) if row.key == "exp"]
    assert len(grouped) == 2 and grouped[0].count == grouped[1].count == 1
    assert "Source Location" in prof.key_averages(group_by_stack_n=2).table()
    assert len([row for row in prof.key_averages() if row.key == "exp"]) == 1


def test_module_ranges_hold_their_ops(device):
    model = tp.nn.Sequential(tp.nn.Linear(4, 8), tp.nn.ReLU(), tp.nn.Linear(8, 2)).to(device)
    x = tp.randn(3, 4, device=device)
    with profile(with_modules=True) as prof:
        model(x)
        model[0](x)  # a second call of the same module keeps its name
    names = [event.name for event in prof.events() if event.name.startswith("nn.Module")]
    assert names == ["nn.Module: Sequential_0", "nn.Module: Linear_0", "nn.Module: ReLU_0", "nn.Module: Linear_1",
                     "nn.Module: Linear_0"]
    relu_range = _events(prof, "nn.Module: ReLU_0")[0]
    assert relu_range.cpu_parent.name == "nn.Module: Sequential_0"
    assert [child.name for child in relu_range.cpu_children] == ["relu"]
    assert module_ranges[0] == 0  # off again: modules pay nothing outside the profile
    with profile() as plain:
        model(x)
    assert not any(event.name.startswith("nn.Module") for event in plain.events())


@needs_torch
def test_flops_and_memory_agree_with_torch():
    """The same program under both profilers: mm, conv2d and add FLOPs, and add's output bytes."""
    def program(lib):
        a, b = lib.ones(32, 48), lib.ones(48, 16)
        image, weight = lib.ones(2, 3, 10, 10), lib.ones(5, 3, 3, 3)
        lib.mm(a, b)
        lib.nn.functional.conv2d(image, weight, stride=2)
        return a + a

    ours = profile(with_flops=True, profile_memory=True)
    with ours:
        program(tp)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], with_flops=True,
                                profile_memory=True) as theirs:
        program(torch)
    torch_flops = {event.name: event.flops for event in theirs.events() if event.flops}
    assert _events(ours, "matmul")[0].flops == torch_flops["aten::mm"]
    assert sum(event.flops or 0 for event in _events(ours, "conv2d")) == torch_flops["aten::conv2d"]
    assert _events(ours, "add")[0].flops == torch_flops["aten::add"]
    torch_add = [event for event in theirs.events() if event.name == "aten::add"][0]
    assert _events(ours, "add")[0].self_cpu_memory_usage == torch_add.self_cpu_memory_usage
