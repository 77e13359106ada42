"""complex64/complex128 tensors on every device: storage, views, arithmetic and the complex
functions, against NumPy's complex128 results."""
import numpy as np
import pytest

import tensorplug as tp

DTYPES = [(tp.complex64, np.complex64, 1e-5), (tp.complex128, np.complex128, 1e-12)]


def _values(shape, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def _close(ours, expected, rtol):
    got = ours.cpu().numpy()
    assert got.shape == np.shape(expected)
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("dtype,np_dtype,rtol", DTYPES)
def test_roundtrip_and_dtype(device, dtype, np_dtype, rtol):
    """A complex array goes to the device and back unchanged; Python complex data infers complex64."""
    values = _values((3, 4)).astype(np_dtype)
    t = tp.tensor(values, device=device)
    assert t.dtype is dtype and t.is_complex() and tp.is_complex(t) and not t.is_floating_point()
    assert t.element_size() == np.dtype(np_dtype).itemsize
    np.testing.assert_array_equal(t.cpu().numpy(), values)
    assert tp.tensor([1 + 2j, 3.5], device=device).dtype is tp.complex64
    assert tp.tensor([1 + 2j], device=device).tolist() == [1 + 2j]


@pytest.mark.parametrize("dtype,np_dtype,rtol", DTYPES)
def test_arithmetic(device, dtype, np_dtype, rtol):
    """+, -, *, / between complex tensors, with real tensors and with Python numbers, broadcast."""
    a, b = _values((3, 4), 1), _values((4,), 2)
    r = np.random.default_rng(3).standard_normal((3, 1))
    ta, tb = tp.tensor(a, dtype=dtype, device=device), tp.tensor(b, dtype=dtype, device=device)
    tr = tp.tensor(r, dtype=dtype.to_real(), device=device)
    a, b = a.astype(np_dtype), b.astype(np_dtype)
    _close(ta + tb, a + b, rtol)
    _close(ta - tb, a - b, rtol)
    _close(ta * tb, a * b, rtol)
    _close(ta / tb, a / b, rtol)
    _close(-ta, -a, rtol)
    _close(ta * tr, a * r, rtol)
    _close(tr - ta, r - a, rtol)
    _close(ta * 2.5 + 1, a * 2.5 + 1, rtol)
    _close(ta * (1 - 2j), a * (1 - 2j), rtol)
    _close(2j / ta, 2j / a, rtol)
    _close(tp.sub(ta, tb, alpha=2), a - 2 * b, rtol)


def test_promotion(device):
    """Complex wins over real; the wider part dtype decides the width, as torch.result_type."""
    c64 = tp.zeros(2, dtype=tp.complex64, device=device)
    assert (c64 + tp.zeros(2, dtype=tp.float64, device=device)).dtype is tp.complex128
    assert (c64 + tp.zeros(2, dtype=tp.int64, device=device)).dtype is tp.complex64
    assert (tp.zeros(2, device=device) * 1j).dtype is tp.complex64
    assert (tp.zeros(2, dtype=tp.float64, device=device) * 1j).dtype is tp.complex128
    assert tp.promote_types(tp.complex64, tp.float64) is tp.complex128
    assert tp.promote_types(tp.complex128, tp.complex64) is tp.complex128


@pytest.mark.parametrize("dtype,np_dtype,rtol", DTYPES)
def test_complex_functions(device, dtype, np_dtype, rtol):
    """abs and angle are real; conj, real, imag, complex and polar agree with NumPy."""
    z = _values((2, 5), 4)
    t = tp.tensor(z, dtype=dtype, device=device)
    assert t.abs().dtype is dtype.to_real()
    _close(t.abs(), np.abs(z), rtol)
    _close(abs(t), np.abs(z), rtol)
    _close(t.angle(), np.angle(z), rtol)
    _close(t.conj(), np.conj(z), rtol)
    _close(t.real, z.real, rtol)
    _close(t.imag, z.imag, rtol)
    re, im = tp.tensor(z.real, dtype=dtype.to_real(), device=device), tp.tensor(z.imag, dtype=dtype.to_real(), device=device)
    assert tp.complex(re, im).dtype is dtype
    _close(tp.complex(re, im), z, rtol)
    _close(tp.polar(re.abs(), im), np.abs(z.real) * np.exp(1j * z.imag), rtol)
    _close(t.sum(), z.sum(), rtol)
    _close(t.sum(dim=1), z.sum(axis=1), rtol)
    _close(t.mean(0), z.mean(axis=0), rtol)


def test_angle_of_real(device):
    """angle of a real tensor: 0 for non-negative values, pi for negative ones, NaN kept."""
    x = np.array([-2.0, 0.0, 3.0, np.nan])
    _close(tp.tensor(x, device=device).angle(), np.angle(x), 1e-7)


def test_views_share_storage(device):
    """view_as_real, real and imag are views: writes through them change the complex tensor."""
    t = tp.tensor([1 + 2j, 3 - 4j], device=device)
    pairs = tp.view_as_real(t)
    assert pairs.shape == (2, 2) and pairs.dtype is tp.float32
    pairs[0, 1] = 7.0
    t.real[1] = -1.0
    t.imag = tp.tensor([0.5, 0.25], device=device)
    assert t.tolist() == [1 + 0.5j, -1 + 0.25j]
    back = tp.view_as_complex(pairs)
    back[0] = 9 - 9j
    assert t.tolist()[0] == 9 - 9j


def test_views_of_complex_tensors(device):
    """Transpose, slices and reshape are plain views of complex tensors."""
    z = _values((3, 4), 5).astype(np.complex64)
    t = tp.tensor(z, device=device)
    _close(t.T, z.T, 0)
    _close(t[1:, ::2], z[1:, ::2], 0)
    _close(t.reshape(4, 3), z.reshape(4, 3), 0)
    _close(t.T.contiguous(), z.T, 0)
    _close(tp.view_as_real(t.T), np.stack([z.T.real, z.T.imag], -1), 0)


def test_factories_and_casts(device):
    """zeros, ones and full make complex tensors; casts go both ways (to real warns, as PyTorch)."""
    assert tp.full((2,), 1 - 1j, device=device).tolist() == [1 - 1j, 1 - 1j]
    assert tp.zeros(2, dtype=tp.complex128, device=device).tolist() == [0j, 0j]
    assert tp.ones(1, dtype=tp.complex64, device=device).tolist() == [1 + 0j]
    x = tp.tensor([1.5, -2.0], device=device)
    assert x.to(tp.complex64).tolist() == [1.5 + 0j, -2 + 0j]
    z = tp.tensor([1.5 + 2j], device=device)
    assert z.to(tp.complex128).dtype is tp.complex128
    with pytest.warns(UserWarning, match="discards the imaginary part"):
        assert z.to(tp.float32).tolist() == [1.5]


def test_moves_between_devices(device):
    """A complex tensor moves to and from the CPU intact."""
    z = _values((2, 3), 6)
    t = tp.tensor(z, dtype=tp.complex128)
    np.testing.assert_array_equal(t.to(device).cpu().numpy(), z)


def test_printing():
    """Complex tensors print as PyTorch prints them."""
    assert repr(tp.tensor([1 + 2j, 3 - 1j])) == "tensor([1.+2.j, 3.-1.j])"
    assert repr(tp.tensor([1.5 + 2j, -0.25 - 1j])) == "tensor([ 1.5000+2.j, -0.2500-1.j])"
    assert repr(tp.tensor([1j], dtype=tp.complex128)) == "tensor([0.+1.j], dtype=tensorplug.complex128)"


@pytest.mark.parametrize("dtype,np_dtype,rtol", DTYPES)
def test_exp_log_matmul_where_indexing_compare(device, dtype, np_dtype, rtol):
    """exp, log, matrix products, where, tensor indexing and ==/!= on complex tensors."""
    a, b = _values((3, 4), 9), _values((4, 2), 10)
    ta, tb = tp.tensor(a, dtype=dtype, device=device), tp.tensor(b, dtype=dtype, device=device)
    _close(ta.exp(), np.exp(a), rtol)
    _close(ta.log(), np.log(a), rtol)
    _close(ta @ tb, a @ b, rtol * 10)
    _close(tp.matmul(ta[0], tb), a[0] @ b, rtol * 10)
    _close(tp.where(ta.real > 0, ta, 2j), np.where(a.real > 0, a, 2j), rtol)
    _close(tp.where(ta.real > 0, ta.real, 2j), np.where(a.real > 0, a.real, 2j), rtol)
    _close(ta[tp.tensor([2, 0, 2], device=device)], a[[2, 0, 2]], rtol)
    c = ta.clone()
    c[0, 1] = 5.0
    assert (ta == c).tolist() == (a == np.where(np.arange(12).reshape(3, 4) == 1, 5.0, a)).tolist()
    assert (ta != c).sum().item() == 1
    assert (ta == ta[0, 0].item()).sum().item() == 1
    _close(tp.sgn(tp.tensor([3 + 4j, 0j], dtype=dtype, device=device)), np.array([0.6 + 0.8j, 0j]), rtol)


def test_randn_complex(device):
    """randn with a complex dtype draws each part with variance 1/2, as PyTorch; normal_ takes a
    complex mean."""
    z = tp.randn(100_000, dtype=tp.complex64, device=device).cpu().numpy()
    assert z.dtype == np.complex64
    assert abs(z.real.var() - 0.5) < 0.02 and abs(z.imag.var() - 0.5) < 0.02
    assert abs(z.mean()) < 0.02 and abs(np.corrcoef(z.real, z.imag)[0, 1]) < 0.02
    w = tp.empty(100_000, dtype=tp.complex128, device=device).normal_(1 - 2j, 2.0).cpu().numpy()
    assert abs(w.mean() - (1 - 2j)) < 0.05 and abs(np.mean(np.abs(w - (1 - 2j)) ** 2) - 4.0) < 0.1
