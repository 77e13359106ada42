"""default_collate: tensors, numbers, NumPy arrays, dicts, tuples, namedtuples and strings."""
from collections import namedtuple

import numpy as np
import pytest

import tensorplug as tp
from tensorplug.utils.data import default_collate, default_convert

Point = namedtuple("Point", "x y")


def test_tensors_stack():
    """Tensors stack on a new first dimension."""
    out = default_collate([tp.ones(2), tp.zeros(2)])
    assert out.shape == (2, 2) and out.tolist() == [[1.0, 1.0], [0.0, 0.0]]


def test_numbers():
    """Floats become float64, ints int64, bools bool, as torch."""
    assert default_collate([1.5, 2.0]).dtype is tp.float64
    assert default_collate([1, 2]).dtype is tp.int64
    assert default_collate([True, False]).dtype is tp.bool


def test_numpy_arrays_and_scalars():
    """NumPy arrays stack into tensors of their dtype; NumPy scalars become a tensor."""
    out = default_collate([np.arange(3, dtype=np.int32), np.arange(3, dtype=np.int32)])
    assert out.dtype is tp.int32 and out.shape == (2, 3)
    assert default_collate([np.float32(1), np.float32(2)]).dtype is tp.float32


def test_dicts_tuples_namedtuples_strings():
    """Containers collate field by field; tuples give lists; strings stay lists."""
    batch = [{"x": tp.ones(2), "pair": (1, "a"), "p": Point(1.0, tp.zeros(1))} for _ in range(3)]
    out = default_collate(batch)
    assert out["x"].shape == (3, 2)
    assert isinstance(out["pair"], list) and out["pair"][0].tolist() == [1, 1, 1] and out["pair"][1] == ("a",) * 3  # torch keeps the transposed tuple
    assert isinstance(out["p"], Point) and out["p"].x.dtype is tp.float64 and out["p"].y.shape == (3, 1)


def test_errors():
    """Ragged sequences and unsupported types raise torch's errors."""
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([[1, 2], [1]])
    with pytest.raises(TypeError, match="default_collate: batch must contain"):
        default_collate([object(), object()])


def test_default_convert():
    """default_convert turns arrays into tensors and leaves other values."""
    out = default_convert({"a": np.ones(2), "b": "s", "c": 3})
    assert isinstance(out["a"], tp.Tensor) and out["b"] == "s" and out["c"] == 3
