"""The parts of comm hooks, Join and FSDP that need no process group: GradBucket's views,
argument errors, and the module paths and option names PyTorch programs import."""
import numpy as np
import pytest

import tensorplug as tp
import tensorplug.distributed as dist
from tensorplug.distributed.algorithms import Join, JoinHook, Joinable

try:
    import torch
except ImportError:  # the reference; tensorplug itself does not need it
    torch = None


def test_grad_bucket_gradients_are_views_of_the_buffer():
    params = [tp.zeros(2, 3), tp.zeros(4)]
    flat = tp.tensor(np.arange(10, dtype=np.float64))
    bucket = dist.GradBucket(1, flat, params, [0, 6], is_last=True)
    grads = bucket.gradients()
    assert [tuple(g.shape) for g in grads] == [(2, 3), (4,)]
    assert np.array_equal(grads[1].numpy(), np.arange(6, 10))
    flat[7] = 100.0  # a view: the change shows through
    assert float(bucket.gradients()[1][1]) == 100.0
    assert bucket.index() == 1 and bucket.is_last() and bucket.parameters()[0] is params[0]
    replacement = tp.ones(10, dtype=tp.float64)
    bucket.set_buffer(replacement)
    assert bucket.buffer() is replacement
    with pytest.raises(ValueError, match="expected a tensor of 10 elements"):
        bucket.set_buffer(tp.ones(3))


class _Nothing(Joinable):
    def join_hook(self, **kwargs):
        return JoinHook()

    @property
    def join_device(self):
        return tp.device("cpu")

    @property
    def join_process_group(self):
        return None


def test_join_arguments_are_checked_before_any_collective():
    with pytest.raises(ValueError, match="at least one joinable"):
        Join([])
    with pytest.raises(TypeError, match="is not a Joinable"):
        Join([object()])
    with pytest.raises(TypeError):
        Joinable()  # abstract, as PyTorch's
    assert Join.notify_join_context(_Nothing()) is None  # outside a Join: nothing to count


def test_fsdp_needs_a_process_group():
    from tensorplug.distributed.fsdp import FullyShardedDataParallel

    with pytest.raises(ValueError, match="init_process_group"):
        FullyShardedDataParallel(tp.nn.Linear(2, 2))


@pytest.mark.skipif(torch is None, reason="PyTorch (the reference) is not installed: pip install torch==2.13.0")
def test_module_paths_and_option_names_match_torch():
    import torch.distributed.algorithms.ddp_comm_hooks.default_hooks as torch_hooks
    import torch.distributed.algorithms.join as torch_join
    import torch.distributed.fsdp as torch_fsdp

    from tensorplug.distributed import fsdp
    from tensorplug.distributed.algorithms import join
    from tensorplug.distributed.algorithms.ddp_comm_hooks import default_hooks

    for ours, theirs in ((default_hooks, torch_hooks), (join, torch_join), (fsdp, torch_fsdp)):
        assert all(hasattr(theirs, name) for name in ours.__all__), [n for n in ours.__all__ if not hasattr(theirs, n)]
    assert set(join.__all__) == {"Join", "Joinable", "JoinHook"}
    assert list(fsdp.ShardingStrategy.__members__) == list(torch_fsdp.ShardingStrategy.__members__)
    assert list(fsdp.BackwardPrefetch.__members__) == list(torch_fsdp.BackwardPrefetch.__members__)
    assert fsdp.CPUOffload().offload_params == torch_fsdp.CPUOffload().offload_params
    assert issubclass(tp.nn.parallel.DistributedDataParallel, Joinable)
