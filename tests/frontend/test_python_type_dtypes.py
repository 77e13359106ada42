"""Python's ``bool``, ``int``, ``float`` and ``complex`` given where a dtype goes, read as PyTorch
reads them (bool, int64, float64, complex128): NT-Xent implementations build their negatives
mask with ``torch.ones((N, N), dtype=bool)``, which raised AttributeError (program batch (e))."""
import numpy as np
import pytest

import tensorplug as tp


def every_device():
    """cpu, opencl and npdev, each skipped with the reason its backend gives when it cannot run."""
    report = {status.device_type: status for status in tp.backends.status()}
    params = []
    for name in ("cpu", "opencl", "npdev"):
        status = report.get(name)
        ready = status is not None and status.state in ("ready", "loaded")
        reason = f"{name} backend unavailable: {status.detail if status else 'no plugin'}"
        params.append(pytest.param(name, id=name, marks=() if ready else pytest.mark.skip(reason=reason)))
    return params


EXPECTED = {bool: tp.bool, int: tp.int64, float: tp.float64, complex: tp.complex128}

FACTORIES = {
    "ones": lambda t, d: tp.ones(2, 2, dtype=t, device=d),
    "zeros": lambda t, d: tp.zeros((2,), dtype=t, device=d),
    "empty": lambda t, d: tp.empty(3, dtype=t, device=d),
    "full": lambda t, d: tp.full((2,), 1, dtype=t, device=d),
    "eye": lambda t, d: tp.eye(2, dtype=t, device=d),
    "tensor": lambda t, d: tp.tensor([1, 0], dtype=t, device=d),
    "as_tensor": lambda t, d: tp.as_tensor([1, 0], dtype=t, device=d),
    "ones_like": lambda t, d: tp.ones_like(tp.zeros(2, device=d), dtype=t),
    "zeros_like": lambda t, d: tp.zeros_like(tp.zeros(2, device=d), dtype=t),
    "full_like": lambda t, d: tp.full_like(tp.zeros(2, device=d), 1, dtype=t),
    "new_ones": lambda t, d: tp.zeros(2, device=d).new_ones(2, dtype=t),
    "to": lambda t, d: tp.tensor([1.5, 0.0], device=d).to(t),
    "to(dtype=)": lambda t, d: tp.tensor([1.5, 0.0], device=d).to(dtype=t),
    "sum(dtype=)": lambda t, d: tp.tensor([1, 0], device=d).sum(dtype=t),
}


@pytest.mark.parametrize("device", every_device())
@pytest.mark.parametrize("name", sorted(FACTORIES))
@pytest.mark.parametrize("python_type", [bool, int, float], ids=lambda t: t.__name__)
def test_python_type_is_read_as_its_dtype(name, python_type, device):
    result = FACTORIES[name](python_type, device)
    assert result.dtype is EXPECTED[python_type], (name, result.dtype)


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_complex_is_complex128(name):
    assert FACTORIES[name](complex, "cpu").dtype is tp.complex128


@pytest.mark.parametrize("device", every_device())
def test_ntxent_negatives_mask(device):
    """The idiom that found it: an (N, N) all-True bool mask with the diagonal and the positive
    pairs cleared, then used to pick the negatives."""
    n, half = 6, 3
    mask = tp.ones((n, n), dtype=bool, device=device).fill_diagonal_(0)
    for i in range(half):
        mask[i, half + i] = 0
        mask[half + i, i] = 0
    expected = ~np.eye(n, dtype=bool)
    for i in range(half):
        expected[i, half + i] = expected[half + i, i] = False
    assert mask.dtype is tp.bool
    np.testing.assert_array_equal(mask.cpu().numpy(), expected)
    similarity = tp.arange(n * n, dtype=float, device=device).reshape(n, n)
    np.testing.assert_array_equal(similarity[mask].reshape(n, -1).cpu().numpy(),
                                  np.arange(n * n, dtype=np.float64).reshape(n, n)[expected].reshape(n, -1))


def test_positional_bool_after_a_dtype_is_still_non_blocking():
    """``x.to(dtype, True)``: the bool is non_blocking, not a second dtype."""
    x = tp.tensor([1.5])
    assert x.to(tp.float64, True).dtype is tp.float64
    assert x.to("cpu", False).dtype is tp.float32


def test_matches_pytorch():
    torch = pytest.importorskip("torch")
    for python_type in (bool, int, float, complex):
        ours = tp.ones(2, dtype=python_type).dtype.name
        theirs = str(torch.ones(2, dtype=python_type).dtype).removeprefix("torch.")
        assert ours == theirs
        assert tp.tensor([1.0]).to(python_type).dtype.name == str(torch.tensor([1.0]).to(python_type).dtype).removeprefix("torch.")
