"""The CPU fallback: ops a backend lacks run on the CPU through host copies, warn once per op and
are counted; results land in the backend's own memory, in any layout, with autograd intact."""
import warnings

import numpy as np
import pytest

import tensorplug as tp
from tensorplug import dispatcher
from tensorplug.backends import FallbackWarning, plugin_manager
from tensorplug.backends.api import backend_storage


@pytest.fixture(scope="module")
def dev():
    """fallbackdev (fill_, add, neg, sum only) registered in-process."""
    if "fallbackdev" not in plugin_manager.records:
        plugin_manager.add("fallbackdev", "fallback_backend:plugin")
    return "fallbackdev"


@pytest.fixture(autouse=True)
def fresh_stats():
    tp.backends.reset_fallback_stats()
    yield
    tp.backends.reset_fallback_stats()


def _quietly(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FallbackWarning)
        return fn()


def test_missing_op_warns_once_and_is_counted(dev):
    """The first fallback call of an op warns, naming device and op; later calls are only counted."""
    a = tp.tensor([1.0, 2.0, 3.0], device=dev)
    with pytest.warns(FallbackWarning, match=r"'fallbackdev' backend has no kernel for 'mul'.*fallback_stats"):
        b = a * 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        c = a * b
    assert tp.backends.fallback_stats() == {"fallbackdev": {"mul": 2}}
    np.testing.assert_array_equal(c.cpu().numpy(), [2.0, 8.0, 18.0])


def test_native_kernels_are_not_counted(dev):
    """Ops the backend implements never reach the fallback."""
    a = tp.ones(3, device=dev)
    (a + a).neg().sum()
    assert tp.backends.fallback_stats() == {}


def test_warning_points_at_the_callers_line(dev):
    """The warning is attributed to the user's code, not to tensorplug's internals."""
    with pytest.warns(FallbackWarning) as record:
        tp.ones(2, device=dev) - 1
    assert record[0].filename == __file__


def test_result_stays_in_device_memory(dev):
    """The fallback's outputs are the backend's own storages, not CPU memory."""
    import fallback_backend

    with pytest.warns(FallbackWarning):
        out = tp.ones(2, 2, device=dev) @ tp.ones(2, 2, device=dev)
    assert isinstance(backend_storage(out), fallback_backend.FallbackStorage)
    assert out.device.type == dev
    np.testing.assert_array_equal(out.cpu().numpy(), np.full((2, 2), 2.0))


def test_strided_output_without_native_copy(dev):
    """An in-place op on a column view is written back even though the backend has no copy_."""
    x = _quietly(lambda: tp.arange(12, dtype=tp.float32).reshape(3, 4).to(dev))
    with pytest.warns(FallbackWarning, match="'mul'"):
        x[:, 1].mul_(10)
    expected = np.arange(12, dtype=np.float32).reshape(3, 4)
    expected[:, 1] *= 10
    np.testing.assert_array_equal(x.cpu().numpy(), expected)


def test_strided_output_with_native_copy():
    """A backend with a native copy_ gets a strided write-back staged through it (toydev has copy_)."""
    if "toydev" not in plugin_manager.records:
        plugin_manager.add("toydev", "toy_backend:plugin")
    x = tp.ones(3, 4).to("toydev")
    with pytest.warns(FallbackWarning, match="'toydev'.*'mul'"):
        x[:, 2].mul_(5)
    expected = np.ones((3, 4), np.float32)
    expected[:, 2] = 5
    np.testing.assert_array_equal(x.cpu().numpy(), expected)


def test_in_place_ops_that_read_their_output(dev):
    """index_put_ with accumulate and scatter_add see the output's old values."""
    y = tp.ones(4, device=dev)
    with pytest.warns(FallbackWarning):
        y.index_put_((tp.tensor([1, 1, 3], device=dev),), tp.tensor([1.0, 2.0, 5.0], device=dev), accumulate=True)
        z = tp.zeros(2, 3, device=dev).scatter_add(1, tp.tensor([[0, 0], [2, 1]], device=dev), tp.ones(2, 2, device=dev))
    np.testing.assert_array_equal(y.cpu().numpy(), [1.0, 4.0, 1.0, 6.0])
    np.testing.assert_array_equal(z.cpu().numpy(), [[2.0, 0.0, 0.0], [0.0, 1.0, 1.0]])


def test_two_output_primitive(dev):
    """sort writes values and indices; both come back."""
    with pytest.warns(FallbackWarning, match="'sort'"):
        values, indices = tp.tensor([3.0, float("nan"), 1.0, 2.0], device=dev).sort(descending=True)
    np.testing.assert_array_equal(values.cpu().numpy(), [np.nan, 3.0, 2.0, 1.0])
    np.testing.assert_array_equal(indices.cpu().numpy(), [1, 0, 3, 2])


def test_autograd_through_the_fallback(dev):
    """The fallback sits below autograd: gradients of fallback ops are those of the CPU."""
    w = tp.tensor([1.0, -2.0, 3.0], device=dev, requires_grad=True)
    with pytest.warns(FallbackWarning):
        (w * w * 0.5 + w.exp()).sum().backward()
    np.testing.assert_allclose(w.grad.cpu().numpy(), np.array([1.0, -2.0, 3.0]) + np.exp([1.0, -2.0, 3.0]), rtol=1e-6)
    assert w.grad.device.type == dev


def test_random_numbers_match_the_cpu(dev):
    """Random primitives through the fallback get the device's (seed, offset): the CPU's numbers."""
    _quietly(lambda: tp.rand(1, device=dev))  # creates the device's generator
    tp.manual_seed(7)
    got = _quietly(lambda: tp.rand(6, device=dev)).cpu()
    tp.manual_seed(7)
    assert got.tolist() == tp.rand(6).tolist()


def test_plugin_defined_op_is_written_back(dev):
    """An op that is neither primitive nor composite (a plugin's own) with only a CPU kernel: what
    it changes is found and written back."""
    name = "test_fallback_double_"
    op = dispatcher.operators().get(name) or dispatcher.Operator(name, differentiable=False)
    cpu_key = tp.backends._registry.backend_key("cpu")

    def double_cpu(t):
        t.copy_(t * 2)
        return t.sum()

    dispatcher.register_kernel(op, cpu_key, double_cpu)
    x = tp.tensor([1.0, 2.0], device=dev)
    with pytest.warns(FallbackWarning, match=name):
        total = dispatcher.call(op, x)
    np.testing.assert_array_equal(x.cpu().numpy(), [2.0, 4.0])
    assert total.device.type == dev and total.item() == 6.0


def test_backend_fallback_wins_over_the_default():
    """A backend that brings its own fallback() keeps it: no CPU fallback, no warning, no count."""
    import fallback_backend

    if "ownfallbackdev" not in plugin_manager.records:
        plugin_manager.add("ownfallbackdev", "fallback_backend:own_fallback_plugin")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(NotImplementedError, match="ownfallbackdev has no mul"):
            tp.ones(2, device="ownfallbackdev") * 2
    assert fallback_backend.OwnFallbackBackend.fallback_calls == ["mul"]
    assert tp.backends.fallback_stats() == {}


def test_cpu_has_no_default_fallback():
    """The CPU backend never falls back to itself."""
    from tensorplug.frontend.fallback import fallback_for

    assert fallback_for("cpu") is None


def test_status_lists_missing_primitives(dev):
    """status() names the primitives that run through the fallback."""
    tp.ones(1, device=dev)
    report = {s.device_type: s for s in tp.backends.status()}
    assert report[dev].state == "ready"
    assert {"mul", "copy_", "sort"} <= set(report[dev].missing_primitives)
    assert "add" not in report[dev].missing_primitives
    assert "missing primitives (run through fallback): " in report[dev].detail


def test_zero_dim_and_broadcast_operands(dev):
    """0-d tensors, numbers and broadcast (stride-0) inputs keep their shapes through the fallback."""
    s = tp.tensor(3.0, device=dev)
    with pytest.warns(FallbackWarning):
        r = s * s
        m = tp.ones(2, 3, device=dev) * tp.tensor([1.0, 2.0, 3.0], device=dev)
    assert r.shape == () and r.item() == 9.0
    np.testing.assert_array_equal(m.cpu().numpy(), [[1.0, 2.0, 3.0]] * 2)
