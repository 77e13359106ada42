"""What a profile records for each op on each backend: the op, the dispatch key and kernel that
``explain()`` names, shapes, dtypes, devices, nesting, backward ops, user ranges, device time."""
import numpy as np
import pytest

import tensorplug as tp
import tensorplug.nn.functional as F
from tensorplug.backends import _registry
from tensorplug.profiler import ProfilerActivity, profile, record_function


def _explained(op: str, *tensors):
    """(source, kernel) as ``tp.dispatcher.explain`` prints them for a call on ``tensors``."""
    lines = tp.dispatcher.explain(op, *tensors, print_result=False).splitlines()
    source = next(line.split("-> ", 1)[1] for line in lines if line.lstrip().startswith("->"))
    kernel = next(line.split("runs ", 1)[1] for line in lines if line.lstrip().startswith("runs "))
    return source, kernel


def _ops(events):
    return [event for event in events if event.kind == "op"]


def test_op_sequence_names_keys_kernels_shapes_dtypes(device):
    """Each op is one event naming the kernel explain() names, with its arguments' shapes and dtypes."""
    a = tp.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], device=device)
    b = tp.ones(2, 3, device=device)
    c = tp.ones(3, 2, device=device)
    i = tp.arange(6, device=device)
    with profile(record_shapes=True) as prof:
        total = (a + b).exp().sum(dim=1)
        product = a @ c
        doubled = i * 2
    events = _ops(prof.events())
    assert [event.name for event in events] == ["add", "exp", "sum", "matmul", "mul"]
    calls = {"add": (a, b), "exp": (a,), "sum": (a,), "matmul": (a, c), "mul": (i,)}
    for event in events:
        source, kernel = _explained(event.name, *calls[event.name])
        assert (event.source, event.kernel) == (source, kernel), event.name
        assert event.dispatch_key == device  # a backend key is named by its device type
        assert event.backend_source == source
        assert event.device == str(a.device)
        assert event.cpu_parent is None and event.cpu_children == []
    # Kernels take their output first; matmul's operands are batched to 3-D by the frontend.
    assert [event.input_shapes for event in events] == [
        [[2, 3], [2, 3], [2, 3]], [[2, 3], [2, 3]], [[2, 1], [2, 3], []], [[1, 2, 2], [1, 2, 3], [1, 3, 2]],
        [[6], [6], []],
    ]
    assert [event.input_types for event in events] == [
        ["float32"] * 3, ["float32"] * 2, ["float32", "float32", "ScalarList"], ["float32"] * 3,
        ["int64", "int64", "Scalar"],
    ]
    np.testing.assert_allclose(total.cpu().numpy(), np.exp(np.array([[2.0, 3, 4], [5, 6, 7]])).sum(axis=1), rtol=1e-5)
    np.testing.assert_allclose(product.cpu().numpy(), np.array([[6.0, 6], [15, 15]]))
    np.testing.assert_array_equal(doubled.cpu().numpy(), np.arange(6) * 2)


def test_shapes_are_only_recorded_when_asked(device):
    """Without record_shapes an event has no shapes or dtypes (PyTorch's default)."""
    a = tp.ones(4, device=device)
    with profile() as prof:
        a.neg()
    (event,) = prof.events()
    assert event.input_shapes is None and event.input_types is None


def test_composite_op_nests_its_primitives(device):
    """A composite op's event contains its decomposition's ops; self time excludes them."""
    # softplus has no explicit derivative, so no backend may fuse it: it always decomposes.
    x = tp.tensor([-1.0, 0.5, 2.0], device=device)
    with profile(record_shapes=True) as prof:
        y = F.softplus(x)
    softplus = prof.events()[0]
    assert softplus.name == "softplus"
    assert (softplus.source, softplus.kernel) == _explained("softplus", x, 1.0, 20.0)
    assert softplus.source == "CompositeImplicit decomposition"
    assert softplus.cpu_children, "the decomposition's primitives are children of the composite op"
    assert prof.events()[1:] == [e for c in softplus.cpu_children for e in [c] + _descendants(c)]
    for child in softplus.cpu_children:
        assert child.cpu_parent is softplus
        assert softplus.start_ns <= child.start_ns <= child.end_ns <= softplus.end_ns
    assert softplus.self_cpu_time_total_ns == softplus.cpu_time_total_ns - sum(c.cpu_time_total_ns for c in softplus.cpu_children)
    np.testing.assert_allclose(y.cpu().numpy(), np.log1p(np.exp(np.array([-1.0, 0.5, 2.0]))), rtol=1e-6)


def _descendants(event) -> list:
    return [e for c in event.cpu_children for e in [c] + _descendants(c)]


def test_autograd_forward_and_backward_are_recorded(device):
    """An op on a tensor that requires grad runs through its autograd kernel (as explain() says),
    reaching the backend's kernel; the backward pass's ops are recorded too."""
    x = tp.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)
    w = tp.tensor([4.0, 5.0, 6.0], device=device)
    with profile(record_shapes=True) as prof:
        y = (x * w).sum()
        with record_function("backward"):
            y.backward()
    events = prof.events()
    mul = events[0]
    assert mul.name == "mul" and mul.dispatch_key == "Autograd"
    assert (mul.source, mul.kernel) == _explained("mul", x, w)
    assert mul.backend_key == device and mul.backend_source == f"{device} kernel"
    (backward,) = [event for event in events if event.name == "backward"]
    assert backward.is_user_annotation and backward.cpu_parent is None
    below = [event for event in events if event.cpu_parent is backward]
    assert below, "the backward pass ran ops"
    assert "mul" in [event.name for event in below]  # d(x * w)/dx = grad * w
    assert all(event.device == str(x.device) for event in below)
    np.testing.assert_allclose(x.grad.cpu().numpy(), [4.0, 5.0, 6.0])


def test_record_function_ranges_nest(device):
    """record_function makes a user range (as a context manager and as a decorator) around its ops."""
    a = tp.ones(5, device=device)

    @record_function("decorated")
    def twice(t):
        return t * 2

    with profile() as prof:
        with record_function("outer"):
            with record_function("inner"):
                a.exp()
            twice(a)
    names = [(event.name, event.cpu_parent.name if event.cpu_parent else None) for event in prof.events()]
    assert names == [("outer", None), ("inner", "outer"), ("exp", "inner"), ("decorated", "outer"), ("mul", "decorated")]
    outer = prof.events()[0]
    assert outer.cpu_time_total_ns == outer.self_cpu_time_total_ns + sum(c.cpu_time_total_ns for c in outer.cpu_children)


def test_record_function_without_profiler_records_nothing():
    """Outside a profile, record_function is inert and the decorated function still runs."""
    @record_function("idle")
    def plus_one(t):
        return t + 1

    with record_function("idle"):
        result = plus_one(tp.ones(2))
    np.testing.assert_array_equal(result.numpy(), [2.0, 2.0])


def test_device_time_with_a_device_activity(device, monkeypatch):
    """With a device activity, a kernel on a non-CPU device is synchronized before and after and its
    time counts as device time; CPU kernels (host time) and CPU-only profiles have none."""
    backend = _registry.backend_for(device)
    calls = []
    original = backend.synchronize
    monkeypatch.setattr(backend, "synchronize", lambda index: (calls.append(index), original(index)))
    a = tp.ones(8, device=device)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as prof:
        a.exp()
        F.softplus(a)
    kernels = [event for event in prof.events() if event.backend_source == f"{device} kernel"]
    assert len(kernels) >= 2  # exp, and softplus's primitives
    softplus = next(event for event in prof.events() if event.name == "softplus")
    if device == "cpu":
        assert calls == []
        assert all(event.device_time_total == 0 for event in prof.events())
    else:
        assert len(calls) == 2 * len(kernels)
        assert all(event.self_device_time_total_ns == event.self_cpu_time_total_ns > 0 for event in kernels)
        assert softplus.self_device_time_total == 0  # a decomposition runs no kernel of its own
        assert softplus.device_time_total_ns == sum(child.device_time_total_ns for child in softplus.cpu_children)
    calls.clear()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        a.exp()
    assert calls == [] and prof.events()[0].device_time_total == 0


def test_cuda_activity_is_the_generic_device_activity():
    """Scripts written for PyTorch name ProfilerActivity.CUDA; here it times any non-CPU device."""
    status = {line.device_type: line.state for line in tp.backends.status()}
    if status.get("npdev") not in ("loaded", "ready"):
        pytest.skip(f"npdev: {status.get('npdev', 'not installed')} (tp.backends.status())")
    a = tp.ones(3, device="npdev")
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        a.exp()
    assert prof.events()[0].self_device_time_total > 0
