"""The user-facing autograd API: grad modes, detach, requires_grad_, retain_grad, hooks,
custom Functions and anomaly detection."""
import threading

import numpy as np
import pytest

import tensorplug as tp
from autograd_reference import as_numpy, leaf


@pytest.fixture(autouse=True)
def _grad_mode_restored():
    """Every test starts and ends with grad mode on (a failing test must not leak no_grad)."""
    assert tp.is_grad_enabled()
    yield
    enabled = tp.is_grad_enabled()
    tp.set_grad_enabled(True)
    assert enabled, "the test left grad mode disabled"


# --- grad modes -----------------------------------------------------------------------------------
def test_no_grad_context_manager():
    """Inside no_grad results do not require grad; grad mode returns afterwards."""
    x = leaf([1.0])
    with tp.no_grad():
        assert not tp.is_grad_enabled()
        y = x * 2
    assert tp.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None
    assert (x * 2).requires_grad


@pytest.mark.parametrize("form", ["called", "bare"])
def test_no_grad_decorator(form):
    """@tp.no_grad() and @tp.no_grad both disable grad inside the function only."""
    decorator = tp.no_grad() if form == "called" else tp.no_grad

    @decorator
    def double(t):
        """Doubles."""
        return t * 2, tp.is_grad_enabled()

    y, enabled = double(leaf([1.0]))
    assert not enabled and not y.requires_grad
    assert tp.is_grad_enabled()
    assert double.__doc__ == "Doubles."


def test_enable_grad_inside_no_grad():
    """enable_grad re-enables recording inside no_grad, as a context manager and a decorator."""
    x = leaf([1.0])

    @tp.enable_grad()
    def triple(t):
        return t * 3

    with tp.no_grad():
        with tp.enable_grad():
            y = x * 2
        z = triple(x)
        w = x * 4
    assert y.requires_grad and z.requires_grad and not w.requires_grad


def test_set_grad_enabled_as_function_call():
    """set_grad_enabled(False) called as a function switches grad off until switched back."""
    x = leaf([1.0])
    tp.set_grad_enabled(False)
    try:
        assert not tp.is_grad_enabled()
        assert not (x * 2).requires_grad
    finally:
        tp.set_grad_enabled(True)
    assert (x * 2).requires_grad


@pytest.mark.parametrize("mode", [False, True])
def test_set_grad_enabled_as_context_manager(mode):
    """with set_grad_enabled(mode) records or not, then restores the previous mode."""
    x = leaf([1.0])
    with tp.set_grad_enabled(mode):
        assert tp.is_grad_enabled() is mode
        y = x * 2
    assert y.requires_grad is mode
    assert tp.is_grad_enabled()
    with tp.no_grad():
        with tp.set_grad_enabled(True):
            assert (x * 2).requires_grad
        assert not tp.is_grad_enabled()


def test_grad_mode_restored_after_exception():
    """An exception inside no_grad still restores grad mode."""
    with pytest.raises(ValueError):
        with tp.no_grad():
            raise ValueError("boom")
    assert tp.is_grad_enabled()


def test_inference_mode():
    """inference_mode disables recording (context manager and decorator); inference_mode(False) does not."""
    x = leaf([1.0])
    with tp.inference_mode():
        assert not tp.is_grad_enabled()
        assert tp.autograd.is_inference_mode_enabled()
        y = x * 2
    assert not y.requires_grad
    assert not tp.autograd.is_inference_mode_enabled()

    @tp.inference_mode()
    def f(t):
        return t * 2

    assert not f(x).requires_grad
    with tp.inference_mode(False):
        assert (x * 2).requires_grad


def test_grad_mode_is_thread_local():
    """no_grad in one thread does not affect another thread running at the same time."""
    inside = threading.Event()
    checked = threading.Event()
    seen = {}

    def disabling():
        with tp.no_grad():
            inside.set()
            checked.wait(10)
            seen["disabled-thread"] = tp.is_grad_enabled()

    def observing():
        inside.wait(10)
        seen["other-thread"] = tp.is_grad_enabled()
        seen["other-thread-records"] = (leaf([1.0]) * 2).requires_grad
        checked.set()

    threads = [threading.Thread(target=disabling), threading.Thread(target=observing)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert seen == {"disabled-thread": False, "other-thread": True, "other-thread-records": True}
    assert tp.is_grad_enabled()


def test_new_thread_starts_with_grad_enabled():
    """A thread started from inside no_grad has grad enabled (thread-local default)."""
    seen = []
    with tp.no_grad():
        t = threading.Thread(target=lambda: seen.append(tp.is_grad_enabled()))
        t.start()
        t.join(10)
    assert seen == [True]


# --- detach, requires_grad_ ----------------------------------------------------------------------------
def test_detach_shares_storage_and_leaves_graph():
    """detach() gives a leaf not requiring grad that shares storage with the original."""
    x = leaf([1.0, 2.0])
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.grad_fn is None and d.is_leaf
    d[0] = 100.0
    assert as_numpy(y)[0] == 100.0
    assert y.requires_grad  # the original is untouched


def test_detach_in_place():
    """detach_() turns a non-leaf into a leaf that does not require grad."""
    x = leaf([1.0, 2.0])
    y = x * 2
    y.detach_()
    assert not y.requires_grad and y.grad_fn is None and y.is_leaf


def test_requires_grad_in_place():
    """requires_grad_() makes a leaf start recording and returns it; requires_grad_(False) stops."""
    x = tp.ones(2, dtype=tp.float64)
    assert x.requires_grad_() is x and x.requires_grad
    (x * 3).sum().backward()
    np.testing.assert_array_equal(as_numpy(x.grad), [3.0, 3.0])
    x.requires_grad_(False)
    assert not (x * 3).requires_grad


def test_requires_grad_false_on_non_leaf_raises():
    """Only leaves may change requires_grad: requires_grad_(False) on a non-leaf raises."""
    y = leaf([1.0]) * 2
    with pytest.raises(RuntimeError, match=r"only change requires_grad flags of leaf variables"):
        y.requires_grad_(False)


@pytest.mark.parametrize("dtype", ["int64", "int32", "bool"])
def test_integer_tensor_cannot_require_grad(dtype):
    """Integer and bool tensors cannot require grad: requires_grad_() and the factory raise."""
    t = tp.zeros(2, dtype=getattr(tp, dtype))
    with pytest.raises(RuntimeError, match=r"only Tensors of floating point"):
        t.requires_grad_()
    with pytest.raises(RuntimeError, match=r"only Tensors of floating point"):
        tp.tensor([1, 0], dtype=getattr(tp, dtype), requires_grad=True)


# --- retain_grad, hooks ---------------------------------------------------------------------------
def test_retain_grad_on_non_leaf():
    """retain_grad() keeps an intermediate's gradient after backward."""
    x = leaf([1.0, 2.0])
    h = x * 3
    h.retain_grad()
    assert h.retains_grad and not x.retains_grad
    (h * h).sum().backward()
    np.testing.assert_allclose(as_numpy(h.grad), [6.0, 12.0])
    np.testing.assert_allclose(as_numpy(x.grad), [18.0, 36.0])


def test_retain_grad_accumulates():
    """A retained gradient accumulates over two backward passes, like a leaf's."""
    x = leaf([1.0])
    h = x * 3
    h.retain_grad()
    y = (h * h).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(as_numpy(h.grad), [12.0])


def test_retain_grad_on_leaf_is_a_no_op():
    """retain_grad() on a leaf changes nothing: the leaf gets its .grad anyway."""
    x = leaf([2.0])
    x.retain_grad()
    (x * x).sum().backward()
    np.testing.assert_allclose(as_numpy(x.grad), [4.0])


def test_hook_on_leaf_modifies_grad():
    """A hook on a leaf sees its gradient and may replace what is accumulated."""
    x = leaf([1.0, 2.0])
    seen = []
    x.register_hook(lambda g: seen.append(as_numpy(g).copy()))
    x.register_hook(lambda g: g * 10)
    (x * 3).sum().backward()
    np.testing.assert_allclose(seen[0], [3.0, 3.0])
    np.testing.assert_allclose(as_numpy(x.grad), [30.0, 30.0])


def test_hook_on_non_leaf_modifies_upstream_grad():
    """A hook on an intermediate replaces the gradient that flows on to the leaves."""
    x = leaf([1.0, 2.0])
    h = x * 2
    h.register_hook(lambda g: g + 1)
    (h * h).sum().backward()
    # dL/dh = 2h = [4, 8]; +1 -> [5, 9]; times dh/dx = 2
    np.testing.assert_allclose(as_numpy(x.grad), [10.0, 18.0])


def test_hook_handle_remove():
    """handle.remove() unregisters a hook."""
    x = leaf([1.0])
    handle = x.register_hook(lambda g: g * 100)
    handle.remove()
    (x * 2).sum().backward()
    np.testing.assert_allclose(as_numpy(x.grad), [2.0])


def test_hook_on_tensor_not_requiring_grad_raises():
    """register_hook needs a tensor that requires grad."""
    with pytest.raises(RuntimeError, match=r"doesn't require gradient"):
        tp.ones(1).register_hook(lambda g: g)


def test_hook_on_non_leaf_used_twice_sees_summed_grad():
    """A hook on a tensor used twice runs once, with the sum of both uses' gradients."""
    x = leaf([1.0])
    h = x * 1
    seen = []
    h.register_hook(lambda g: seen.append(float(g.item())))
    (h * 2 + h * 3).sum().backward()
    assert seen == [5.0]


# --- custom Functions ---------------------------------------------------------------------------
class Square(tp.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * x * grad


def test_custom_function_square():
    """A custom Square Function backpropagates 2x and passes gradcheck."""
    x = leaf([1.0, -2.0, 3.0])
    y = Square.apply(x)
    assert y.requires_grad and y.grad_fn is not None and "Square" in y.grad_fn.name()
    y.sum().backward()
    np.testing.assert_allclose(as_numpy(x.grad), [2.0, -4.0, 6.0])
    assert tp.autograd.gradcheck(Square.apply, [leaf([0.5, 1.5])])


def test_custom_function_inside_a_graph():
    """A custom Function composes with ordinary ops on both sides."""
    x = leaf([1.0, 2.0])
    (Square.apply(x.sin()) * 3).sum().backward()
    x_np = np.array([1.0, 2.0])
    np.testing.assert_allclose(as_numpy(x.grad), 6 * np.sin(x_np) * np.cos(x_np))


def test_custom_function_under_no_grad_records_nothing():
    """Applied under no_grad a Function's output does not require grad."""
    with tp.no_grad():
        y = Square.apply(leaf([1.0]))
    assert not y.requires_grad


def test_custom_function_saved_tensors_freed_after_backward():
    """A second backward through a Function without retain_graph raises."""
    x = leaf([1.0])
    y = Square.apply(x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match=r"Trying to backward through the graph a second time"):
        y.backward()


def test_custom_function_needs_input_grad_and_none_grads():
    """ctx.needs_input_grad tells which inputs need gradients; None is a valid gradient."""
    seen = {}

    class Scale(tp.autograd.Function):
        @staticmethod
        def forward(ctx, x, w, factor):
            ctx.save_for_backward(x, w)
            ctx.factor = factor
            return x * w * factor

        @staticmethod
        def backward(ctx, grad):
            seen["needs"] = ctx.needs_input_grad
            x, w = ctx.saved_tensors
            gx = grad * w * ctx.factor if ctx.needs_input_grad[0] else None
            gw = grad * x * ctx.factor if ctx.needs_input_grad[1] else None
            return gx, gw, None

    x, w = leaf([1.0, 2.0]), leaf([3.0, 4.0], requires_grad=False)
    Scale.apply(x, w, 2.0).sum().backward()
    assert tuple(seen["needs"]) == (True, False, False)
    np.testing.assert_allclose(as_numpy(x.grad), [6.0, 8.0])
    assert w.grad is None


def test_custom_function_multiple_outputs():
    """A Function with two outputs gets both outputs' gradients in backward."""

    class TwoWays(tp.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g2, g3):
            return g2 * 2 + g3 * 3

    x = leaf([1.0, 2.0])
    a, b = TwoWays.apply(x)
    (a * 10 + b).sum().backward()
    np.testing.assert_allclose(as_numpy(x.grad), [23.0, 23.0])


def test_custom_function_one_output_unused():
    """When one output is unused, backward receives zeros for it (materialize_grads)."""
    received = []

    class TwoWays(tp.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g2, g3):
            received.append(as_numpy(g3).copy())
            return g2 * 2 + g3 * 3

    x = leaf([1.0, 2.0])
    a, _ = TwoWays.apply(x)
    a.sum().backward()
    np.testing.assert_array_equal(received[0], [0.0, 0.0])
    np.testing.assert_allclose(as_numpy(x.grad), [2.0, 2.0])


def test_custom_function_mark_non_differentiable():
    """An output marked non-differentiable does not require grad; the other one does."""

    class ValuesAndMask(tp.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            mask = (x > 0).to(x.dtype)
            ctx.mark_non_differentiable(mask)
            ctx.save_for_backward(mask)
            return x * mask, mask

        @staticmethod
        def backward(ctx, grad, grad_mask):
            (mask,) = ctx.saved_tensors
            return grad * mask

    x = leaf([-1.0, 2.0])
    values, mask = ValuesAndMask.apply(x)
    assert values.requires_grad and not mask.requires_grad
    values.sum().backward()
    np.testing.assert_array_equal(as_numpy(x.grad), [0.0, 1.0])


def test_custom_function_wrong_number_of_gradients_raises():
    """A backward returning too few gradients raises RuntimeError."""

    class Bad(tp.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, grad):
            return grad

    x, y = leaf([1.0]), leaf([2.0])
    with pytest.raises(RuntimeError, match=r"incorrect number of gradients"):
        Bad.apply(x, y).sum().backward()


# --- anomaly detection ------------------------------------------------------------------------------
class FailingBackward(tp.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 1

    @staticmethod
    def backward(ctx, grad):
        raise ValueError("broken backward")


def forward_site_for_anomaly(x):
    return FailingBackward.apply(x)


def test_detect_anomaly_reports_forward_traceback():
    """With anomaly detection a failing backward names the forward call that made the node."""
    x = leaf([1.0])
    with tp.autograd.set_detect_anomaly(True):
        y = forward_site_for_anomaly(x).sum()
        with pytest.raises(Exception) as info:
            y.backward()
    message = str(info.value)
    assert "broken backward" in message
    assert "forward_site_for_anomaly" in message


def test_without_anomaly_detection_the_original_error_propagates():
    """Without anomaly detection the backward's own exception comes through."""
    x = leaf([1.0])
    with pytest.raises(ValueError, match=r"broken backward"):
        forward_site_for_anomaly(x).sum().backward()


def test_set_detect_anomaly_restores_previous_mode():
    """set_detect_anomaly used as a context manager switches back on exit."""
    with tp.autograd.set_detect_anomaly(True):
        pass
    x = leaf([1.0])
    y = forward_site_for_anomaly(x).sum()
    assert y.grad_fn.next_functions[0][0]._forward_trace is None


def test_detect_anomaly_nan_check():
    """With anomaly detection a backward that returns NaN raises, naming the node."""

    class NanBackward(tp.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, grad):
            return grad * float("nan")

    x = leaf([1.0])
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"), tp.autograd.detect_anomaly():
        assert tp.is_anomaly_enabled() and tp.is_anomaly_check_nan_enabled()
        y = (NanBackward.apply(x) * 2).sum()
        with pytest.raises(RuntimeError, match=r"returned nan values"):
            y.backward()


def test_nan_check_can_be_disabled():
    """set_detect_anomaly(True, check_nan=False) lets NaN gradients through."""
    x = leaf([0.0])
    with tp.autograd.set_detect_anomaly(True, check_nan=False):
        assert tp.is_anomaly_enabled() and not tp.is_anomaly_check_nan_enabled()
        (x.log() * 0).sum().backward()
    assert not tp.is_anomaly_enabled() and tp.is_anomaly_check_nan_enabled()
    assert np.isnan(as_numpy(x.grad)[0])
