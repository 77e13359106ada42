"""tp.asarray (torch.asarray, missing before; found by a namespace probe of PyTorch 2.13): which
calls alias their input, which copy, and which refuse with copy=False, as PyTorch decides."""
import numpy as np
import pytest

import tensorplug as tp


def _outcomes(L):
    outcomes = []
    t, array = L.ones(3), np.ones(3)
    for obj, kwargs in [(t, {}), (t, {"dtype": L.float64}), (t, {"copy": True}), (t, {"dtype": L.float64, "copy": False}),
                        (array, {}), (array, {"dtype": L.float32}), (array, {"dtype": L.float32, "copy": False}),
                        (3, {}), (3.0, {}), ([1, 2.5], {}), (True, {}), ([1.0], {"copy": False})]:
        try:
            result = L.asarray(obj, **kwargs)
        except ValueError:
            outcomes.append("ValueError")
            continue
        pointer = obj.data_ptr() if isinstance(obj, L.Tensor) else obj.ctypes.data if isinstance(obj, np.ndarray) else None
        outcomes.append((result is obj, result.data_ptr() == pointer, str(result.dtype).split(".")[-1],
                         result.tolist()))
    leaf = L.ones(2)
    assert L.asarray(leaf, requires_grad=True) is leaf and leaf.requires_grad
    return outcomes


def test_asarray_aliases_and_copies_as_pytorch_does():
    torch = pytest.importorskip("torch", reason="PyTorch 2.13 is the reference here")
    assert _outcomes(tp) == _outcomes(torch)
