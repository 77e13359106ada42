"""tp.fft's argument errors: raised before any kernel runs, naming the function and the value."""
import pytest

import tensorplug as tp


def test_bad_norm():
    """An unknown norm names itself."""
    with pytest.raises(ValueError, match="fft.*Invalid normalization mode: 'half'"):
        tp.fft.fft(tp.ones(4), norm="half")


@pytest.mark.parametrize("call", [
    lambda x: tp.fft.fft(x, n=0),
    lambda x: tp.fft.irfft(x.to(tp.complex64), n=0),
    lambda x: tp.fft.rfftn(x, s=(-2,)),
])
def test_nonpositive_sizes(call):
    """A signal size below 1 is refused."""
    with pytest.raises(RuntimeError, match="Invalid number of data points"):
        call(tp.ones(2, 4))


def test_real_transforms_refuse_complex_input():
    """rfft and ihfft take real input only."""
    z = tp.ones(4, dtype=tp.complex64)
    with pytest.raises(RuntimeError, match="rfft.*real input.*complex64"):
        tp.fft.rfft(z)
    with pytest.raises(RuntimeError, match="ihfft.*real input"):
        tp.fft.ihfft(z)


def test_dims():
    """Repeated dims, a dim out of range and s/dim of different lengths are refused."""
    x = tp.ones(2, 4)
    with pytest.raises(RuntimeError, match="FFT dims must be unique"):
        tp.fft.fftn(x, dim=(0, -2))
    with pytest.raises(IndexError, match="Dimension out of range"):
        tp.fft.fft(x, dim=2)
    with pytest.raises(RuntimeError, match="same length"):
        tp.fft.fftn(x, s=(2, 2), dim=(0,))
    with pytest.raises(RuntimeError, match="shape with 3 values"):
        tp.fft.fftn(x, s=(2, 2, 2))


def test_half_precision_and_non_tensors():
    """float16 is refused with the dtypes that work; a non-tensor input is a TypeError."""
    with pytest.raises(RuntimeError, match="Unsupported dtype float16"):
        tp.fft.fft(tp.ones(4, dtype=tp.float16))
    with pytest.raises(TypeError, match="argument 'input' must be Tensor, not list"):
        tp.fft.fft([1.0, 2.0])
    with pytest.raises(RuntimeError, match="n must be positive"):
        tp.fft.fftfreq(0)


def test_view_as_complex_layout_errors():
    """view_as_complex says which layout rule a tensor breaks."""
    with pytest.raises(RuntimeError, match="last dimension of size 2"):
        tp.view_as_complex(tp.ones(3, 3))
    with pytest.raises(RuntimeError, match="last dimension with stride 1"):
        tp.view_as_complex(tp.ones(2, 4)[:, ::2].T)
    with pytest.raises(RuntimeError, match="only supported for float and double"):
        tp.view_as_complex(tp.ones(3, 2, dtype=tp.int64))
    with pytest.raises(RuntimeError, match="only supported for complex tensors"):
        tp.view_as_real(tp.ones(2))
    with pytest.raises(RuntimeError, match="imag is not implemented for tensors with non-complex dtypes"):
        tp.ones(2).imag
