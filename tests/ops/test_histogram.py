"""tp.histogram: NumPy's float64 histogram for counts, weights, densities and edges on every
backend; PyTorch 2.13 for the widened degenerate range and the errors (issue 13)."""
import numpy as np
import pytest

import tensorplug as tp
from device_params import every_device, torch_or_skip


@pytest.mark.parametrize("device", every_device())
@pytest.mark.parametrize("bins", [7, "edges"])
@pytest.mark.parametrize("weighted,density", [(False, False), (True, False), (True, True)])
def test_matches_numpy(device, bins, weighted, density, rng):
    data = rng.normal(size=(6, 9))
    weights = rng.uniform(0.1, 2.0, size=data.shape) if weighted else None
    edges = np.array([-1.5, -0.2, 0.0, 0.7, 1.9])
    numpy_bins = edges if bins == "edges" else 7
    value_range = None if bins == "edges" else (-1.0, 1.0)
    expected, expected_edges = np.histogram(data, numpy_bins, range=value_range, weights=weights, density=density)
    hist, got_edges = tp.histogram(
        tp.tensor(data, device=device), tp.tensor(edges, device=device) if bins == "edges" else 7, range=value_range,
        weight=None if weights is None else tp.tensor(weights, device=device), density=density)
    np.testing.assert_allclose(hist.cpu().numpy(), expected, rtol=1e-12)
    np.testing.assert_allclose(got_edges.cpu().numpy(), expected_edges, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("device", every_device())
def test_range_from_data_and_degenerate_ranges(device):
    data = np.array([1.0, 2.0, 1.0, 4.0, 2.5, 4.0])
    hist, edges = tp.histogram(tp.tensor(data, device=device), 4)
    expected, expected_edges = np.histogram(data, 4)
    np.testing.assert_array_equal(hist.cpu().numpy(), expected)
    np.testing.assert_allclose(edges.cpu().numpy(), expected_edges)
    # min == max widens by 1/2 each way (histc widens by 1), a given range included
    hist, edges = tp.histogram(tp.tensor([2.0, 2.0], device=device), 2)
    assert hist.tolist() == [0.0, 2.0] and edges.tolist() == [1.5, 2.0, 2.5]
    hist, edges = tp.histogram(tp.tensor([0.0, 1.0, 2.0], device=device), 2, range=(0.0, 0.0))
    assert hist.tolist() == [0.0, 1.0] and edges.tolist() == [-0.5, 0.0, 0.5]
    hist, edges = tp.histogram(tp.tensor([], device=device), 2)
    assert hist.tolist() == [0.0, 0.0] and edges.tolist() == [0.0, 0.5, 1.0]


def test_result_names_method_and_float32_agree_with_pytorch():
    x = [1.0, 2.0, 1.0, 4.0, 2.5, 0.3, 3.3]
    result = tp.tensor(x).histogram(5)
    assert result.hist.dtype == tp.float32 and result.bin_edges.dtype == tp.float32
    torch = torch_or_skip()
    expected = torch.histogram(torch.tensor(x), 5)
    np.testing.assert_array_equal(result.hist.numpy(), expected.hist.numpy())
    np.testing.assert_allclose(result.bin_edges.numpy(), expected.bin_edges.numpy(), rtol=1e-6)


BAD = [
    (lambda L: L.histogram(L.tensor([1, 2]), 2), (RuntimeError, NotImplementedError)),
    (lambda L: L.histogram(L.tensor([1.0, 2.0]), 0), RuntimeError),
    (lambda L: L.histogram(L.tensor([1.0, 2.0]), 2, range=(3.0, 1.0)), RuntimeError),
    (lambda L: L.histogram(L.tensor([1.0, 2.0]), 2, weight=L.ones(3)), RuntimeError),
    (lambda L: L.histogram(L.tensor([1.0, 2.0]), 2, weight=L.ones(2, dtype=L.float64)), RuntimeError),
    (lambda L: L.histogram(L.tensor([1.0, 2.0], dtype=L.float64), L.tensor([0.0, 1.0])), RuntimeError),
    (lambda L: L.histogram(L.tensor([1.0, 2.0]), L.tensor([[0.0, 1.0]])), RuntimeError),
    (lambda L: L.histogram(L.tensor([1.0, float("inf")]), 2), RuntimeError),
]


@pytest.mark.parametrize("case", range(len(BAD)))
def test_bad_arguments_raise_as_pytorch(case):
    call, error = BAD[case]
    with pytest.raises(error, match="histogram"):
        call(tp)
    torch = pytest.importorskip("torch")
    with pytest.raises(error):
        call(torch)
