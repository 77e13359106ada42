"""nn.utils.parametrizations.orthogonal against PyTorch 2.13: the three maps, the starting weight
(the given orthogonal matrix, or the Q of its QR with a positive diagonal), gradients through the
map, state_dict keys, assignment, and the errors."""
import numpy as np
import pytest

import tensorplug as tp
from tensorplug.nn.utils import parametrizations

torch = pytest.importorskip("torch", reason="PyTorch 2.13 is the reference for the orthogonal parametrization")

RNG = np.random.default_rng(4)
MAPS = ["matrix_exp", "cayley", "householder"]


def _pair(weight, orthogonal_map, **kwargs):
    """The same Linear (float64, weight given, no bias) made orthogonal in both libraries."""
    layers = []
    for lib in (tp, torch):
        layer = lib.nn.Linear(weight.shape[1], weight.shape[0], bias=False, dtype=lib.float64)
        with lib.no_grad():
            layer.weight.copy_(lib.tensor(weight))
        module = parametrizations if lib is tp else torch.nn.utils.parametrizations
        layers.append(module.orthogonal(layer, orthogonal_map=orthogonal_map, **kwargs))
    return layers


@pytest.mark.parametrize("orthogonal_map", MAPS)
def test_square_weight_starts_and_trains_as_pytorch(orthogonal_map):
    ours, theirs = _pair(RNG.standard_normal((4, 4)), orthogonal_map)
    np.testing.assert_allclose(ours.weight.detach().numpy(), theirs.weight.detach().numpy(), atol=1e-12)
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
    x = RNG.standard_normal((3, 4))
    # The starting point is -I, where the map's gradient is special (a cancelled diagonal): move
    # away from it with one step first, then compare the gradients of the stored tensor.
    for layer, lib in ((ours, tp), (theirs, torch)):
        optimizer = lib.optim.SGD(layer.parameters(), lr=0.1)
        for _ in range(2):
            optimizer.zero_grad()
            (layer(lib.tensor(x)) ** 3).sum().backward()
            optimizer.step()
    np.testing.assert_allclose(ours.weight.detach().numpy(), theirs.weight.detach().numpy(), atol=1e-10)
    np.testing.assert_allclose(ours.parametrizations.weight.original.grad.numpy(),
                               theirs.parametrizations.weight.original.grad.numpy(), atol=1e-10)


@pytest.mark.parametrize("shape", [(5, 2), (2, 5)])
def test_rectangular_weight_is_orthonormal_along_its_short_side(shape):
    """The completion to a square base draws random columns (as PyTorch's), so only the
    properties are compared: orthonormal rows or columns, the default map householder."""
    ours, theirs = _pair(RNG.standard_normal(shape), None)
    for layer in (ours, theirs):
        w = layer.weight.detach().numpy()
        gram = w @ w.T if shape[0] < shape[1] else w.T @ w
        np.testing.assert_allclose(gram, np.eye(min(shape)), atol=1e-12)
    assert ours.parametrizations.weight[0].orthogonal_map == "householder"
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())


def test_an_orthogonal_weight_is_kept_and_can_be_assigned():
    q = np.linalg.qr(RNG.standard_normal((3, 3)))[0]
    ours, theirs = _pair(q, "cayley")
    np.testing.assert_allclose(ours.weight.detach().numpy(), q, atol=1e-14)
    other = np.linalg.qr(RNG.standard_normal((3, 3)))[0]
    ours.weight = tp.tensor(other)
    theirs.weight = torch.tensor(other)
    np.testing.assert_allclose(ours.weight.detach().numpy(), theirs.weight.detach().numpy(), atol=1e-14)


def test_without_trivialization_the_weight_is_the_unconstrained_tensor():
    weight = RNG.standard_normal((3, 3))
    ours, theirs = _pair(weight, "matrix_exp", use_trivialization=False)
    np.testing.assert_array_equal(ours.parametrizations.weight.original.detach().numpy(), weight)
    np.testing.assert_allclose(ours.weight.detach().numpy(), theirs.weight.detach().numpy(), atol=1e-12)
    assert "parametrizations.weight.0.base" not in ours.state_dict()
    with pytest.raises(NotImplementedError, match="not possible to assign"):
        ours.weight = tp.eye(3, dtype=tp.float64)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), "identity"])
def test_householder_without_trivialization_stores_geqrf_factors_as_pytorch(shape):
    """The stored tensor is the weight's reflectors (geqrf) with column signs on the diagonal; an
    identity weight (geqrf reflects nothing: tau 0) maps back to itself."""
    weight = np.eye(4) if shape == "identity" else RNG.standard_normal(shape)
    ours, theirs = _pair(weight, "householder", use_trivialization=False)
    np.testing.assert_allclose(ours.parametrizations.weight.original.detach().numpy(),
                               theirs.parametrizations.weight.original.detach().numpy(), atol=1e-14)
    np.testing.assert_allclose(ours.weight.detach().numpy(), theirs.weight.detach().numpy(), atol=1e-14)
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
    q = np.linalg.qr(RNG.standard_normal(weight.shape if weight.shape[0] >= weight.shape[1] else weight.shape[::-1]))[0]
    q = q if weight.shape[0] >= weight.shape[1] else q.T
    ours.weight = tp.tensor(q)
    np.testing.assert_allclose(ours.weight.detach().numpy(), q, atol=1e-14)


def test_bad_arguments_raise_before_registering():
    with pytest.raises(ValueError, match="Got a tensor of 1 dimensions"):
        parametrizations.orthogonal(tp.nn.BatchNorm1d(3))
    with pytest.raises(ValueError, match='has to be one of "matrix_exp", "cayley", "householder". Got: qr'):
        parametrizations.orthogonal(tp.nn.Linear(3, 3), orthogonal_map="qr")
    with pytest.raises(ValueError, match="no parameter or buffer with name 'kernel'"):
        parametrizations.orthogonal(tp.nn.Linear(3, 3), name="kernel")
    with pytest.raises(ValueError, match="of shape"):
        parametrizations.orthogonal(tp.nn.Linear(3, 3)).weight = tp.eye(2)
