"""Indexing a device tensor with CPU indices and values, as PyTorch allows it: CPU index tensors
are moved to the indexed tensor's device, a 0-d CPU value joins as a number, and any other
tensor on another device is refused with the devices named, before a kernel runs (an index_put_
with CPU values used to reach the OpenCL and npdev kernels and fail inside them)."""
import numpy as np
import pytest

import tensorplug as tp


def test_cpu_index_tensor_reads_and_writes(device):
    """x[cpu_index] and x[cpu_index] = number work on every device."""
    x = tp.arange(5.0, device=device)
    index = tp.tensor([3, 0])
    assert x[index].cpu().tolist() == [3.0, 0.0]
    x[index] = 9.0
    assert x.cpu().tolist() == [9.0, 1.0, 2.0, 9.0, 4.0]
    mask = tp.tensor([True, False, True, False, False])
    x[mask] = -1.0
    assert x.cpu().tolist() == [-1.0, 1.0, -1.0, 9.0, 4.0]


def test_zero_dim_cpu_value_joins_as_a_number(device):
    x = tp.zeros(4, device=device)
    x[tp.tensor([1, 2], device=device)] = tp.tensor(7.0)
    x.index_put_((tp.tensor([0], device=device),), tp.tensor(5.0), accumulate=True)
    assert x.cpu().tolist() == [5.0, 7.0, 7.0, 0.0]


def test_values_on_another_device_are_refused(device):
    """A 1-d CPU value tensor for a device tensor is an error naming both devices (PyTorch's rule)."""
    if device == "cpu":
        pytest.skip("needs a second device: the CPU tensor is on the indexed tensor's device here")
    x = tp.zeros(4, device=device)
    index = tp.tensor([0, 1], device=device)
    for write in (lambda: x.index_put_((index,), tp.tensor([1.0, 2.0])), lambda: x.__setitem__(index, tp.tensor([1.0, 2.0]))):
        with pytest.raises(RuntimeError, match=f"Expected all tensors to be on the same device.*{device}.*cpu"):
            write()
    np.testing.assert_array_equal(x.cpu().numpy(), np.zeros(4, np.float32))
