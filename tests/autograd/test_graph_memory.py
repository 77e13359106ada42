"""Autograd and memory: saved tensors are freed by backward, and the graph has no reference cycles."""
import gc
import weakref

import numpy as np
import pytest

import tensorplug as tp
from autograd_reference import leaf


@pytest.fixture
def gc_disabled():
    """Reference counting alone must free the graph: the cycle collector is off during the test."""
    gc.collect()
    gc.disable()
    yield
    gc.enable()


def allocated():
    return tp.cpu.memory_stats()["allocated_bytes"]


def block_bytes(numel):
    """What the allocator counts for a float32 tensor of ``numel`` elements (blocks are rounded)."""
    before = allocated()
    t = tp.empty(numel)
    size = allocated() - before
    del t
    return size


def mlp_params():
    rng = np.random.default_rng(0)
    w1 = tp.tensor(rng.standard_normal((64, 128)).astype(np.float32), requires_grad=True)
    b1 = tp.zeros(128, requires_grad=True)
    w2 = tp.tensor(rng.standard_normal((128, 10)).astype(np.float32), requires_grad=True)
    return w1, b1, w2


def mlp_loss(params, x):
    w1, b1, w2 = params
    h = (x @ w1 + b1).relu()
    return ((h @ w2).tanh() ** 2).mean()


def test_mlp_forward_backward_returns_to_baseline(gc_disabled):
    """After forward+backward of a small MLP and `del loss`, allocated bytes are the baseline
    plus the parameters' .grad (saved activations are gone)."""
    params = mlp_params()
    x = tp.randn(32, 64)
    baseline = allocated()
    loss = mlp_loss(params, x)
    assert allocated() > baseline  # activations are alive while the graph is
    loss.backward()
    del loss
    grad_bytes = sum(block_bytes(p.numel()) for p in params)
    assert allocated() == baseline + grad_bytes
    for p in params:
        p.grad = None
    assert allocated() == baseline


def test_repeated_training_steps_do_not_grow(gc_disabled):
    """Ten forward+backward+update steps leave memory where one step leaves it."""
    params = mlp_params()
    x = tp.randn(32, 64)

    def step():
        loss = mlp_loss(params, x)
        loss.backward()
        with tp.no_grad():
            for p in params:
                p -= 0.01 * p.grad
                p.grad = None
        del loss

    step()
    after_one = allocated()
    for _ in range(10):
        step()
    assert allocated() == after_one


def test_deleting_the_output_frees_the_graph_without_backward(gc_disabled):
    """A forward whose output is deleted without backward frees every saved tensor at once."""
    params = mlp_params()
    x = tp.randn(32, 64)
    baseline = allocated()
    loss = mlp_loss(params, x)
    del loss
    assert allocated() == baseline


def test_intermediate_dies_with_the_output(gc_disabled):
    """Weakrefs to an intermediate and to its grad_fn die when the output is deleted (no cycles)."""
    x = leaf([1.0, 2.0])
    h = x.exp()  # exp saves its output: the node must not keep h's grad_fn alive through it
    y = (h * h).sin()
    h_ref = weakref.ref(h)
    node_ref = weakref.ref(h.grad_fn)
    del h
    assert node_ref() is not None  # y's graph still needs exp's node
    del y
    assert h_ref() is None and node_ref() is None


def test_intermediate_dies_after_backward(gc_disabled):
    """After backward and `del loss`, nothing keeps an intermediate or its node alive."""
    x = leaf([1.0, 2.0])
    h = x.exp()
    loss = (h * h).sin().sum()
    h_ref, node_ref = weakref.ref(h), weakref.ref(h.grad_fn)
    del h
    loss.backward()
    del loss
    assert h_ref() is None and node_ref() is None


@pytest.mark.parametrize("op", ["exp", "tanh", "sigmoid", "sqrt", "reciprocal", "cumprod", "prod", "amax"])
def test_output_saving_ops_make_no_cycle(gc_disabled, op):
    """Ops that save their own output do not form a cycle: the output dies at `del`."""
    x = leaf([[0.5, 1.0], [1.5, 2.0]])
    fn = {"cumprod": lambda t: t.cumprod(1), "prod": lambda t: t.prod(1), "amax": lambda t: t.amax(1)}.get(op, getattr(tp, op))
    y = fn(x)
    y_ref, node_ref = weakref.ref(y), weakref.ref(y.grad_fn)
    del y
    assert y_ref() is None and node_ref() is None


def test_leaf_accumulator_does_not_keep_leaf_alive(gc_disabled):
    """A leaf used in a graph dies when both the leaf and the graph are deleted."""
    x = leaf([1.0, 2.0])
    y = (x * x).sum()
    x_ref = weakref.ref(x)
    del x
    y.backward()
    del y
    assert x_ref() is None


def test_saved_tensors_released_after_backward(gc_disabled):
    """After backward (no retain_graph) a node no longer holds its saved tensors' memory."""
    x = tp.randn(1000, 100, requires_grad=True)
    y = x.exp()
    z = (y * 2).sin()  # sin saves y*2 (a 400 kB temporary)
    loss = z.sum()
    before = allocated()
    loss.backward()
    # sin's saved input (y * 2, referenced only by the graph) is released; x.grad is new
    assert allocated() == before + block_bytes(x.numel()) - block_bytes(1000 * 100)
    del loss, z, y


def test_retain_graph_keeps_saved_tensors(gc_disabled):
    """With retain_graph=True saved tensors stay allocated until the graph is deleted."""
    x = tp.randn(1000, 100, requires_grad=True)
    z = (x * 2).sin()  # sin saves x * 2, which nothing else references
    before = allocated()
    z.backward(tp.ones(1000, 100), retain_graph=True)
    grad_bytes = block_bytes(x.numel())
    assert allocated() == before + grad_bytes  # only x.grad is new; nothing freed
    del z
    assert allocated() == before + grad_bytes - 2 * block_bytes(1000 * 100)  # z and sin's saved input


def test_sum_does_not_keep_its_input_alive(gc_disabled):
    """sum's backward needs only its input's shape: the summed tensor is freed after forward, as
    in PyTorch (a graph keeps only what some formula reads)."""
    x = tp.randn(1000, 100, requires_grad=True)
    before = allocated()
    loss = (x * 2).sin().sum()  # alive: x * 2 (saved by sin) and the 0-d loss
    assert allocated() <= before + block_bytes(1000 * 100) + block_bytes(1)
    del loss


def test_add_does_not_keep_its_inputs_alive(gc_disabled):
    """add's backward reads no input: a temporary added to something dies after forward."""
    x = tp.randn(1000, 100, requires_grad=True)
    before = allocated()
    y = x.sin() + 1.0  # sin saves x (a leaf); the sin output is only an input of add
    assert allocated() == before + block_bytes(1000 * 100)
    del y
