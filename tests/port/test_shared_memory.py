"""Shared CPU tensors between processes (issue 13): share_memory_(), Module.share_memory() and
tp.multiprocessing, as pytorch/examples' mnist_hogwild uses them."""
import gc
import importlib.util
import os

import pytest

import tensorplug as tp
import tensorplug.multiprocessing as mp

STEPS, LR = 3, 0.125


def _memory_files() -> int:
    """How many of tensorplug's shared memory files this process has open."""
    count = 0
    for name in os.listdir("/proc/self/fd"):
        try:
            count += "tensorplug_shared" in os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            pass
    return count


def _data():
    return tp.arange(12, dtype=tp.float32).reshape(3, 4) / 8


def _train(rank, model, lock):
    """mnist_hogwild's train(): an SGD optimizer in each process over the one shared model. The
    loss is linear, so each step moves the parameters by the same amount (checked by the parent)."""
    tp.manual_seed(rank)
    optimizer = tp.optim.SGD(model.parameters(), lr=LR)
    for _ in range(STEPS):
        with lock:  # no lost updates: the total is exact
            optimizer.zero_grad()
            model(_data()).sum().backward()
            optimizer.step()


def _expected(model):
    """The parameters after 2 * STEPS of those steps, replayed here on a copy."""
    replay = tp.nn.Linear(4, 1)
    replay.load_state_dict(model.state_dict())
    optimizer = tp.optim.SGD(replay.parameters(), lr=LR)
    for _ in range(2 * STEPS):
        optimizer.zero_grad()
        replay(_data()).sum().backward()
        optimizer.step()
    return replay


@pytest.mark.parametrize("start_method", ["fork", "spawn"])
def test_hogwild_processes_update_one_model(start_method):
    """Two processes train the parent's shared model in place; the parent sees every step."""
    context = mp.get_context(start_method)
    model = tp.nn.Linear(4, 1)
    assert model.share_memory() is model
    expected = _expected(model)
    lock = context.Lock()
    processes = [context.Process(target=_train, args=(rank, model, lock)) for rank in range(2)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(30)
    assert [p.exitcode for p in processes] == [0, 0]
    assert model.weight.tolist() == expected.weight.tolist()
    assert model.bias.tolist() == expected.bias.tolist()


def _update(queue, done):
    """Receives tensors through a queue, updates them in place, sends a new shared one back."""
    shared, view, plain, param = queue.get()
    done.put((shared.is_shared(), view.is_shared(), plain.is_shared(), type(param).__name__, param.requires_grad,
              view.storage_offset(), view.stride()))
    view.add_(1)
    plain.add_(1)
    param.data.mul_(3)
    done.put(tp.full((2,), 7.0).share_memory_())
    done.put(shared)
    queue.get()  # stay alive until the parent received what was sent


@pytest.mark.parametrize("strategy", ["file_descriptor", "file_system"])
def test_queue_sends_shared_tensors_by_memory_and_others_by_value(strategy):
    """Through a queue, shared tensors and views arrive on the same memory; others as copies."""
    before = mp.get_sharing_strategy()
    mp.set_sharing_strategy(strategy)
    try:
        context = mp.get_context("fork")  # a queue pickles whatever the start method
        queue, done = context.Queue(), context.Queue()
        shared = tp.zeros(3, 4).share_memory_()
        view = shared.t()[1:]  # a view made after sharing: offset and strides travel with it
        plain = tp.zeros(2)
        param = tp.nn.Parameter(tp.ones(2)).share_memory_()
        process = context.Process(target=_update, args=(queue, done))
        process.start()
        queue.put((shared, view, plain, param))
        assert done.get(timeout=30) == (True, True, False, "Parameter", True, 1, (1, 4))
        fresh, back = done.get(timeout=30), done.get(timeout=30)
        queue.put("received")
        process.join(30)
        assert process.exitcode == 0
        assert shared.tolist() == [[0.0, 1.0, 1.0, 1.0]] * 3
        assert plain.tolist() == [0.0, 0.0] and param.tolist() == [3.0, 3.0]
        assert fresh.is_shared() and fresh.tolist() == [7.0, 7.0]  # alive after its sender exited
        assert back._storage is shared._storage  # a tensor coming home lands on its own storage
    finally:
        mp.set_sharing_strategy(before)


def _write_through_pipe(connection):
    t = connection.recv()
    t.fill_(5.0)
    connection.send(t.is_shared())


def test_pipe_to_a_forkserver_child():
    """A shared tensor sent through a Pipe to a forkserver child is written in place."""
    context = mp.get_context("forkserver")
    parent_end, child_end = context.Pipe()
    process = context.Process(target=_write_through_pipe, args=(child_end,))
    process.start()
    t = tp.zeros(2, dtype=tp.int64).share_memory_()
    parent_end.send(t)
    assert parent_end.recv() is True
    process.join(30)
    assert t.tolist() == [5, 5]


def test_share_memory_moves_the_storage_in_place():
    """Values, views made before and dtypes are kept; a second call changes nothing."""
    base = tp.arange(6, dtype=tp.float64)
    view = base[2:4]
    assert not base.is_shared()
    assert base.share_memory_() is base and base.is_shared() and view.is_shared()
    storage = base._storage
    base.share_memory_()
    assert base._storage is storage
    base.add_(1)
    assert view.tolist() == [3.0, 4.0]
    for t in (tp.zeros(0), tp.ones(2, dtype=tp.complex64), tp.tensor([True, False]), tp.tensor(3)):
        values = t.tolist()
        assert t.share_memory_().is_shared() and t.tolist() == values


def test_module_share_memory_shares_parameters_grads_and_buffers():
    """Module.share_memory() shares every parameter, its grad and every buffer, keeping identity."""
    model = tp.nn.Sequential(tp.nn.Linear(2, 2), tp.nn.BatchNorm1d(2))
    model(tp.randn(4, 2)).sum().backward()
    weight = model[0].weight
    model.share_memory()
    assert model[0].weight is weight
    tensors = list(model.parameters()) + [p.grad for p in model.parameters()] + list(model.buffers())
    assert all(t.is_shared() for t in tensors)


def test_memory_is_freed_with_the_last_tensor():
    """Dropping the last tensor over a shared storage closes its memory file; none has a name."""
    before = _memory_files()
    t = tp.ones(1000).share_memory_()
    view = t[10:]
    held = _memory_files()
    assert held > before
    del t
    gc.collect()
    assert _memory_files() == held  # the view still holds it
    del view
    gc.collect()
    assert _memory_files() == before
    assert not [name for name in os.listdir("/dev/shm") if name.startswith("tensorplug_shared")]


@pytest.mark.skipif(importlib.util.find_spec("tensorplug_npdev") is None, reason="the npdev example plugin is not installed")
def test_other_devices_are_refused():
    """As PyTorch for devices without inter-process memory: RuntimeError, nothing shared."""
    t = tp.zeros(2, device="npdev")
    with pytest.raises(RuntimeError, match="only available on CPU"):
        t.share_memory_()
    assert not t.is_shared()


def test_same_answers_as_torch():
    """is_shared before and after, views, and the refusal on a device without shared memory."""
    torch = pytest.importorskip("torch")
    reference, ours = torch.arange(4.0), tp.arange(4.0)
    answers = []
    for lib, t in ((torch, reference), (tp, ours)):
        view = t[1:]
        before = t.is_shared()
        t.share_memory_()
        answers.append((before, t.is_shared(), view.is_shared(), t.share_memory_() is t))
    assert answers[0] == answers[1]
    with pytest.raises(RuntimeError, match="only available on CPU"):
        torch.zeros(1, device="meta").share_memory_()
