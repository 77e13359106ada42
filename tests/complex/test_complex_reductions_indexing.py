"""prod, cumsum, cumprod and the index ops (gather, scatter, index_put_, index_add_, masked_fill,
setitem) on complex tensors, on every device: values against NumPy's complex128 results,
gradients against central differences and PyTorch 2.13."""
import numpy as np
import pytest

import tensorplug as tp
from complex_gradients import numeric_gradient

DTYPES = [(tp.complex64, 1e-5), (tp.complex128, 1e-12)]


def _values(shape, seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def _close(ours, expected, rtol):
    got = ours.cpu().numpy()
    assert got.shape == np.shape(expected) and got.dtype.kind == "c"
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("dtype,rtol", DTYPES, ids=["complex64", "complex128"])
def test_prod(device, dtype, rtol):
    """prod over everything, over one dim (odd and even sizes), keepdim, an exact zero inside,
    an empty dim (1) and a 0-d tensor."""
    z = _values((3, 5), 1)
    t = tp.tensor(z, dtype=dtype, device=device)
    z = t.cpu().numpy().astype(np.complex128)
    _close(t.prod(), z.prod(), rtol * 10)
    _close(t.prod(0), z.prod(0), rtol * 10)
    _close(t.prod(1), z.prod(1), rtol * 10)
    _close(t.prod(-1, keepdim=True), z.prod(-1, keepdims=True), rtol * 10)
    _close(tp.prod(t[:, :4], 1), z[:, :4].prod(1), rtol * 10)
    holed = t.clone()
    holed[1, 2] = 0
    assert holed.prod(1).tolist()[1] == 0j
    _close(t[:, :0].prod(1), np.ones(3), 0)
    _close(t[0, 0].prod(), z[0, 0], rtol)
    assert t.prod().dtype is dtype


@pytest.mark.parametrize("dtype,rtol", DTYPES, ids=["complex64", "complex128"])
def test_scans(device, dtype, rtol):
    """cumsum and cumprod keep the complex dtype (they used to drop the imaginary part)."""
    z = _values((4, 7), 2)
    t = tp.tensor(z, dtype=dtype, device=device)
    z = t.cpu().numpy().astype(np.complex128)
    for dim in (0, 1, -1):
        _close(t.cumsum(dim), np.cumsum(z, dim), rtol * 10)
        _close(t.cumprod(dim), np.cumprod(z, dim), rtol * 100)
    assert t.cumsum(0).dtype is dtype and t.cumprod(1).dtype is dtype
    _close(tp.cumsum(tp.tensor([1.0, 2.0], device=device), 0, dtype=dtype), np.array([1, 3]), 0)


@pytest.mark.parametrize("dtype,rtol", DTYPES, ids=["complex64", "complex128"])
def test_gather_scatter_index_ops(device, dtype, rtol):
    """gather, scatter (tensor and number sources, reduce='add'), scatter_add, index_add_,
    index_select, index_put_ (plain and accumulating), setitem and masked_fill with a complex value."""
    z = _values((3, 4), 3)
    src = _values((3, 4), 4)
    t = tp.tensor(z, dtype=dtype, device=device)
    s = tp.tensor(src, dtype=dtype, device=device)
    z, src = t.cpu().numpy(), s.cpu().numpy()
    index = np.array([[2, 0, 1, 1], [0, 2, 2, 0]])
    ti = tp.tensor(index, device=device)
    _close(t.gather(0, ti), np.take_along_axis(z, index, 0), rtol)
    expected = z.copy()
    for (i, j), k in np.ndenumerate(index):
        expected[k, j] = src[i, j]
    _close(t.scatter(0, ti, s), expected, rtol)
    expected = z.copy()
    for (i, j), k in np.ndenumerate(index):
        expected[k, j] = 2 - 1j
    _close(t.scatter(0, ti, 2 - 1j), expected, rtol)
    expected = z.copy()
    for (i, j), k in np.ndenumerate(index):
        expected[k, j] += src[i, j]
    _close(t.scatter_add(0, ti, s), expected, rtol)
    _close(t.clone().scatter_(0, ti, s, reduce="add"), expected, rtol)
    rows = tp.tensor([2, 0, 2], device=device)
    expected = z.copy()
    np.add.at(expected, [2, 0, 2], src)
    _close(t.clone().index_add_(0, rows, s), expected, rtol)
    _close(t.index_select(1, tp.tensor([3, 0], device=device)), z[:, [3, 0]], rtol)
    expected = z.copy()
    expected[[0, 2], [1, 3]] = src[0, :2]
    _close(t.clone().index_put_((tp.tensor([0, 2], device=device), tp.tensor([1, 3], device=device)), s[0, :2]),
           expected, rtol)
    expected = z.copy()
    np.add.at(expected, ([0, 0], [1, 1]), src[0, :2])
    _close(t.clone().index_put_((tp.tensor([0, 0], device=device), tp.tensor([1, 1], device=device)), s[0, :2],
                                accumulate=True), expected, rtol)
    c = t.clone()
    c[tp.tensor([1], device=device)] = 5j
    c[:, tp.tensor([0], device=device)] = s[:, :1]
    expected = z.copy()
    expected[1] = 5j
    expected[:, [0]] = src[:, :1]
    _close(c, expected, rtol)
    mask = z.real > 0
    _close(t.masked_fill(tp.tensor(mask, device=device), 1 - 3j), np.where(mask, 1 - 3j, z), rtol)
    c = t.clone()
    c.masked_fill_(tp.tensor(mask, device=device), 2.5)
    _close(c, np.where(mask, 2.5, z), rtol)


def test_complex_fill_of_real_tensor_is_refused():
    """A complex value cannot fill a real tensor, named before anything runs."""
    with pytest.raises(RuntimeError, match="masked_fill.*complex"):
        tp.zeros(2).masked_fill(tp.tensor([True, False]), 1j)


# --- gradients ------------------------------------------------------------------------------


def _np_scatter(z, index, src):
    out = z.copy()
    for (i, j), k in np.ndenumerate(index):
        out[k, j] = src[i, j]
    return out


_INDEX = np.array([[2, 0, 1, 1]])
_MASK = np.array([[True, False, True, False]] * 3)
W = 0.3 - 0.8j


def _setitem(L, z):
    c = z * 1
    c[L.tensor([0, 2], device=z.device)] = z[1] * 2
    return (c * W).real.sum()


def _np_setitem(z):
    c = z * 1
    c[[0, 2]] = z[1] * 2
    return (c * W).real.sum()


# name -> (tensorplug/torch expression of a real loss of z (3, 4), the NumPy expression)
CASES = {
    "prod": (lambda L, z: (z.prod() * W).real, lambda z: (z.prod() * W).real),
    "prod_dim": (lambda L, z: (z.prod(1) * W).imag.sum(), lambda z: (z.prod(1) * W).imag.sum()),
    "cumsum": (lambda L, z: (z.cumsum(1) ** 2 * W).real.sum(), lambda z: (np.cumsum(z, 1) ** 2 * W).real.sum()),
    "cumprod": (lambda L, z: (z.cumprod(1) * W).real.sum(), lambda z: (np.cumprod(z, 1) * W).real.sum()),
    "gather": (lambda L, z: (z.gather(0, L.tensor(_INDEX, device=z.device)) ** 2).imag.sum(),
               lambda z: (np.take_along_axis(z, _INDEX, 0) ** 2).imag.sum()),
    "scatter": (lambda L, z: ((z * 1).scatter(0, L.tensor(_INDEX, device=z.device), z[:1] * 3j) * W).real.sum(),
                lambda z: (_np_scatter(z, _INDEX, z[:1] * 3j) * W).real.sum()),
    "index_add": (lambda L, z: ((z * 1).index_add(0, L.tensor([2, 2], device=z.device), z[:2] ** 2) * W).real.sum(),
                  lambda z: ((z + np.array([[0], [0], [1]]) * (z[:1] ** 2 + z[1:2] ** 2)) * W).real.sum()),
    "setitem": (_setitem, _np_setitem),
    "masked_fill": (lambda L, z: (z.masked_fill(L.tensor(_MASK, device=z.device), 2j) ** 2).real.sum(),
                    lambda z: (np.where(_MASK, 2j, z) ** 2).real.sum()),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_matches_finite_differences(device, name):
    expression, reference = CASES[name]
    z = _values((3, 4), 7) * 0.8
    t = tp.tensor(z, dtype=tp.complex128, device=device, requires_grad=True)
    expression(tp, t).backward()
    assert t.grad.dtype is tp.complex128
    np.testing.assert_allclose(t.grad.cpu().numpy(), numeric_gradient(reference, z), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_matches_pytorch(name):
    torch = pytest.importorskip("torch", reason="PyTorch 2.13 is a reference here (pip install torch==2.13.0)")
    expression, _ = CASES[name]
    z = _values((3, 4), 8) * 0.8
    ours = tp.tensor(z, dtype=tp.complex128, requires_grad=True)
    theirs = torch.tensor(z, dtype=torch.complex128, requires_grad=True)
    expression(tp, ours).backward()
    expression(torch, theirs).backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.resolve_conj().numpy(), rtol=1e-10, atol=1e-12)


def test_prod_gradient_with_a_zero(device):
    """The product's gradient at an exact zero is the product of the others, not NaN (no
    division by the elements)."""
    z = np.array([2 + 1j, 0j, 1 - 1j])
    t = tp.tensor(z, dtype=tp.complex128, device=device, requires_grad=True)
    t.prod().real.backward()
    # d Re(abc)/d b at b = 0: conj(a c) in PyTorch's convention
    np.testing.assert_allclose(t.grad.cpu().numpy(), [0, np.conj(z[0] * z[2]), 0], atol=1e-12)
