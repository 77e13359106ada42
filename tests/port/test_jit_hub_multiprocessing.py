"""tp.jit, tp.multiprocessing and tp.hub (issue 13): PyTorch programs that use them run unchanged."""
import os
import pickle

import pytest

import tensorplug as tp


def _square_into(index, queue, values):
    """A spawned worker: sends back index and the square of its tensor."""
    queue.put((index, (values * values).tolist()))


def _fail(index):
    raise ValueError(f"worker {index} failed on purpose")


def test_jit_decorators_return_their_argument():
    """script, trace, ignore, unused and export give back the very function or module."""
    model = tp.nn.Linear(2, 2)

    @tp.jit.script
    def double(x):
        return x * 2

    class Net(tp.nn.Module):
        @tp.jit.ignore
        def debug(self):
            return "kept"

        @tp.jit.unused
        def training_only(self):
            return "kept"

        @tp.jit.export
        def exported(self):
            return "kept"

        @tp.jit.ignore(drop=True)
        def dropped(self):
            return "kept"

    net = Net()
    assert double(tp.tensor(3)).item() == 6
    assert tp.jit.script(model) is model and tp.jit.trace(model, tp.zeros(1, 2)) is model
    assert tp.jit.trace(double, (tp.zeros(1),)) is double
    assert [net.debug(), net.training_only(), net.exported(), net.dropped()] == ["kept"] * 4
    assert not tp.jit.is_scripting() and not tp.jit.is_tracing()
    assert tp.jit.annotate(list, [1]) == [1]
    with pytest.raises(NotImplementedError, match="state_dict"):
        tp.jit.save(model, "m.pt")
    with pytest.raises(TypeError):
        tp.jit.script(3)


def test_sharing_strategy_names():
    """PyTorch's strategy names are accepted and recorded; others raise ValueError."""
    mp = tp.multiprocessing
    before = mp.get_sharing_strategy()
    assert before in mp.get_all_sharing_strategies()
    try:
        mp.set_sharing_strategy("file_system")
        assert mp.get_sharing_strategy() == "file_system"
        with pytest.raises(ValueError, match="not one of"):
            mp.set_sharing_strategy("shared_everything")
    finally:
        mp.set_sharing_strategy(before)
    assert mp.Queue is not None and mp.Process is not None and callable(mp.get_context)


@pytest.mark.skipif(os.cpu_count() is None, reason="needs process support")
def test_spawn_runs_workers_with_tensor_copies():
    """spawn runs fn(i, *args) in fresh processes; tensors arrive as copies, results come back by queue."""
    mp = tp.multiprocessing
    context = mp.get_context("spawn")
    queue = context.SimpleQueue()
    values = tp.tensor([1.0, 2.0])
    mp.spawn(_square_into, args=(queue, values), nprocs=2)
    results = sorted(queue.get() for _ in range(2))
    assert results == [(0, [1.0, 4.0]), (1, [1.0, 4.0])]
    assert values.tolist() == [1.0, 2.0]


def test_spawn_reports_a_failing_worker():
    """A worker's exception comes back as ProcessRaisedException carrying its traceback."""
    with pytest.raises(tp.multiprocessing.ProcessRaisedException, match="failed on purpose"):
        tp.multiprocessing.spawn(_fail, nprocs=1)
    error = tp.multiprocessing.ProcessRaisedException("message", 0, 1)
    assert pickle.loads(pickle.dumps(error)).error_index == 0


def test_hub_explains_that_it_needs_pytorch():
    """tp.hub's loaders raise NotImplementedError saying what to do instead; get_dir/set_dir work."""
    for call in (lambda: tp.hub.load("pytorch/vision", "resnet18"), lambda: tp.hub.list("pytorch/vision"),
                 lambda: tp.hub.load_state_dict_from_url("https://example.com/m.pt")):
        with pytest.raises(NotImplementedError, match="safetensors"):
            call()
    before = tp.hub.get_dir()
    tp.hub.set_dir("/tmp/hub-dir")
    try:
        assert tp.hub.get_dir() == "/tmp/hub-dir"
    finally:
        tp.hub._hub_dir = None
    assert tp.hub.get_dir() == before
