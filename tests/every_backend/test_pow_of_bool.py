"""pow with bool operands (issue 13): PyTorch's result dtypes and values on every backend."""
import pytest

import tensorplug as tp


def test_result_dtypes_and_values(device):
    """bool ** int is int64, bool ** float is float32, bool ** True/False stays bool, as PyTorch."""
    b = tp.tensor([True, False], device=device)
    i = tp.tensor([2, 3], device=device)
    cases = [
        (lambda: b ** 2, tp.int64, [1, 0]),
        (lambda: b ** 2.0, tp.float32, [1.0, 0.0]),
        (lambda: 2 ** b, tp.int64, [2, 1]),
        (lambda: b ** i, tp.int64, [1, 0]),
        (lambda: i ** b, tp.int64, [2, 1]),
        (lambda: b.float() ** b, tp.float32, [1.0, 1.0]),
        (lambda: 2.5 ** b, tp.float32, [2.5, 1.0]),
        (lambda: tp.pow(b, True), tp.bool, [True, False]),
        (lambda: b ** False, tp.bool, [True, True]),
        (lambda: tp.pow(b, 0), tp.int64, [1, 1]),
    ]
    for call, dtype, values in cases:
        result = call()
        assert result.dtype is dtype and result.cpu().tolist() == values


def test_bool_computation_is_refused():
    """pow computed in bool (bool ** bool tensor, True ** bool tensor) is refused; so is a negative int power."""
    b = tp.tensor([True, False])
    with pytest.raises(TypeError, match="not implemented for 'Bool'"):
        b ** b
    with pytest.raises(TypeError, match="not implemented for 'Bool'"):
        True ** b
    with pytest.raises(RuntimeError, match="negative integer powers"):
        b ** -1
    with pytest.raises(RuntimeError, match="can't be cast"):
        b.pow_(2)
