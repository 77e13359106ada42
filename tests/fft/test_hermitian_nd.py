"""fft.hfft2/hfftn/ihfft2/ihfftn (issue 13) against NumPy's definitions in float64: ihfftn is
the conjugate of the onesided forward transform divided by the size, hfftn the real inverse of
the conjugated half times the size; norm= scales as PyTorch's."""
import numpy as np
import pytest

import tensorplug as tp

R = np.random.default_rng(14)


@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
def test_ihfftn_and_hfftn(norm):
    x = R.standard_normal((4, 6))
    n = x.size
    factor = {None: 1.0 / n, "ortho": 1.0 / np.sqrt(n), "forward": 1.0}[norm]
    want = np.conj(np.fft.rfftn(x)) * factor
    np.testing.assert_allclose(tp.fft.ihfftn(tp.tensor(x), norm=norm).numpy(), want, atol=1e-12)
    np.testing.assert_allclose(tp.fft.ihfft2(tp.tensor(x), norm=norm).numpy(), want, atol=1e-12)
    half = R.standard_normal((4, 4)) + 1j * R.standard_normal((4, 4))
    out_n = 4 * 6
    back = {None: 1.0, "ortho": 1.0 / np.sqrt(out_n), "forward": 1.0 / out_n}[norm]
    want = np.fft.irfftn(np.conj(half), s=(4, 6), axes=(0, 1)) * out_n * back
    np.testing.assert_allclose(tp.fft.hfftn(tp.tensor(half), s=(4, 6), norm=norm).numpy(), want, atol=1e-12)
    np.testing.assert_allclose(tp.fft.hfft2(tp.tensor(half), s=(4, 6), norm=norm).numpy(), want, atol=1e-12)
