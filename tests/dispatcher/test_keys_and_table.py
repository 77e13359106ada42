"""The dispatch-key table on its own: priorities, fallthrough, fallbacks, caching, explain."""
import itertools

import pytest

import tensorplug as tp
from tensorplug import dispatcher
from tensorplug.dispatcher import AUTOGRAD, INPLACE_OR_VIEW, Operator

_counter = itertools.count()


@pytest.fixture
def key():
    """A fresh backend key (keys are process-wide, so each test makes its own name)."""
    return dispatcher.allocate_backend_key(f"testdev{next(_counter)}")


def _op(name, **kwargs):
    return Operator(f"test_{name}_{next(_counter)}", **kwargs)


def test_priority_order_is_fixed():
    """Autograd outranks InplaceOrView, which outranks every backend key."""
    k = dispatcher.allocate_backend_key("prio_dev")
    keys = dispatcher.keys_in(AUTOGRAD.mask | INPLACE_OR_VIEW.mask | k.mask)
    assert [x.name for x in keys] == ["Autograd", "InplaceOrView", "prio_dev"]


def test_backend_keys_are_allocated_per_device_type(key):
    """Registering a backend allocates a new key; asking again returns the same one."""
    assert key.is_backend
    assert dispatcher.allocate_backend_key(key.name) is key
    other = dispatcher.allocate_backend_key(key.name + "_b")
    assert other.bit != key.bit


def test_backend_kernel_runs(key):
    """A kernel registered for a backend key handles key sets whose top key is that backend."""
    op = _op("plain")
    dispatcher.register_kernel(op, key, lambda x: ("backend", x))
    assert op.lookup(key.mask)(1) == ("backend", 1)


def test_autograd_kernel_receives_keyset_below(key):
    """Wrapper kernels get the key set below themselves, to redispatch."""
    op = _op("ag")
    dispatcher.register_kernel(op, key, lambda x: x + 1)
    dispatcher.register_kernel(op, AUTOGRAD, lambda ks, x: dispatcher.redispatch(op, ks, x) * 10)
    assert op.lookup(AUTOGRAD.mask | key.mask)(1) == 20


def test_fallthrough_skips_a_key(key):
    """A fallthrough on InplaceOrView passes the call to the backend."""
    op = _op("ft")
    dispatcher.register_kernel(op, INPLACE_OR_VIEW, lambda ks, x: "inplace")
    dispatcher.register_kernel(op, key, lambda x: "backend")
    assert op.lookup(INPLACE_OR_VIEW.mask | key.mask)(0) == "inplace"
    dispatcher.register_fallthrough(op, INPLACE_OR_VIEW)
    assert op.lookup(INPLACE_OR_VIEW.mask | key.mask)(0) == "backend"


def test_composite_fills_backend_and_autograd_slots(key):
    """A composite op without an override runs its decomposition, above autograd too."""
    op = _op("comp", decomposition=lambda x: ("decomposed", x))
    assert op.lookup(key.mask)(3) == ("decomposed", 3)
    assert op.lookup(AUTOGRAD.mask | key.mask)(3) == ("decomposed", 3)
    assert "CompositeImplicit" in op.resolve(AUTOGRAD.mask | key.mask).source


def test_composite_override_needs_a_derivative(key):
    """Overriding a differentiable composite op without an explicit derivative is refused."""
    op = _op("comp2", decomposition=lambda x: x)
    with pytest.raises(ValueError, match="no explicit derivative"):
        dispatcher.register_kernel(op, key, lambda x: x)
    dispatcher.register_kernel(op, AUTOGRAD, lambda ks, x: dispatcher.redispatch(op, ks, x))
    dispatcher.register_kernel(op, key, lambda x: ("fused", x))
    assert op.lookup(key.mask)(1) == ("fused", 1)
    assert op.lookup(AUTOGRAD.mask | key.mask)(1) == ("fused", 1)


def test_composite_on_two_backends_runs_its_decomposition(key):
    """A fused kernel reads one device's storages: a key set with two backend keys (a 0-d CPU
    tensor beside another device's tensor) runs the decomposition in the backend slot, below the
    op's own Autograd kernel (its explicit derivative); one backend still gets the fused kernel."""
    other = dispatcher.allocate_backend_key(key.name + "_second")
    op = _op("comp3", decomposition=lambda x: ("decomposed", x))
    dispatcher.register_kernel(op, AUTOGRAD, lambda ks, x: ("derivative",) + dispatcher.redispatch(op, ks, x))
    dispatcher.register_kernel(op, key, lambda x: ("fused", x))
    assert op.lookup(key.mask)(1) == ("fused", 1)
    assert op.lookup(key.mask | other.mask)(1) == ("decomposed", 1)
    assert "2 backends" in op.resolve(key.mask | other.mask).source
    assert op.lookup(AUTOGRAD.mask | key.mask | other.mask)(1) == ("derivative", "decomposed", 1)


def test_boxed_fallback_gets_the_op(key):
    """A backend without a kernel for an op uses its boxed fallback, which is told the op."""
    op = _op("fb")
    seen = []
    dispatcher.register_backend_fallback(key, lambda o, args, kwargs: seen.append((o, args)) or "fallback")
    assert op.lookup(key.mask)(5) == "fallback"
    assert seen == [(op, (5,))]


def test_missing_kernel_raises_naming_op_and_backend(key):
    op = _op("missing")
    with pytest.raises(NotImplementedError, match=f"{op.name}.*{key.name}"):
        op.lookup(key.mask)()


def test_table_is_cached_and_rebuilt_on_registration(key):
    """Lookups are cached per key set; a new registration invalidates the cache."""
    op = _op("cache")
    dispatcher.register_kernel(op, key, lambda: 1)
    assert op.lookup(key.mask)() == 1
    assert key.mask in op.table
    dispatcher.register_kernel(op, key, lambda: 2)
    assert key.mask not in op.table
    assert op.lookup(key.mask)() == 2


def test_exclude_keys_is_thread_local(key):
    """ExcludeKeys removes a key for this thread only."""
    import threading

    seen = {}
    with dispatcher.ExcludeKeys(AUTOGRAD.mask):
        assert dispatcher.local_state.mask & AUTOGRAD.mask == 0
        thread = threading.Thread(target=lambda: seen.setdefault("mask", dispatcher.local_state.mask))
        thread.start()
        thread.join()
    assert seen["mask"] & AUTOGRAD.mask
    assert dispatcher.local_state.mask & AUTOGRAD.mask


def test_explain_shows_the_cpu_path(capsys):
    """explain() names the key set and the kernel a real CPU call runs."""
    a = tp.ones(3)
    text = tp.dispatcher.explain("add", a, a)
    assert "cpu" in text and "kernel" in text
    assert "add" in capsys.readouterr().out


def test_explain_shows_autograd_fallthrough():
    """With requires_grad the Autograd key is in the set; explain says what it does."""
    a = tp.ones(3, requires_grad=True)
    text = tp.dispatcher.explain("mul", a, a, print_result=False)
    assert "Autograd" in text
