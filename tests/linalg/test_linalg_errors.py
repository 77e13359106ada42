"""Bad input to tp.linalg raises PyTorch 2.13's exception types and messages, on every device."""
import numpy as np
import pytest

import tensorplug as tp


def _t(array, device, dtype=tp.float32):
    return tp.tensor(array, dtype=dtype, device=device)


def test_linalg_error_is_a_runtime_error():
    """LinAlgError subclasses RuntimeError, as torch.linalg.LinAlgError does."""
    assert issubclass(tp.linalg.LinAlgError, RuntimeError)


def test_singular_matrices_name_the_batch_element(device):
    """inv and solve name the first singular batch element and the zero pivot."""
    batch = np.stack([np.eye(2), np.zeros((2, 2)), np.zeros((2, 2))])
    with pytest.raises(tp.linalg.LinAlgError, match=r"^linalg\.inv: \(Batch element 1\): The diagonal element 1 is zero"):
        tp.linalg.inv(_t(batch, device))
    with pytest.raises(tp.linalg.LinAlgError, match=r"^linalg\.inv: The diagonal element 2 is zero, the inversion could "
                                                    r"not be completed because the input matrix is singular\.$"):
        tp.linalg.inv(_t([[1.0, 2.0], [2.0, 4.0]], device))
    with pytest.raises(tp.linalg.LinAlgError, match=r"^torch\.linalg\.solve: \(Batch element 1\): The solver failed "
                                                    r"because the input matrix is singular\.$"):
        tp.linalg.solve(_t(batch, device), _t(np.ones((3, 2)), device))


def test_cholesky_names_the_minor(device):
    """cholesky names the batch element and the first leading minor that is not positive."""
    batch = np.stack([np.eye(3), np.diag([1.0, 1.0, -1.0])])
    with pytest.raises(tp.linalg.LinAlgError, match=r"^linalg\.cholesky: \(Batch element 1\): The factorization could "
                                                    r"not be completed because the input is not positive-definite \(the "
                                                    r"leading minor of order 3 is not positive-definite\)\.$"):
        tp.linalg.cholesky(_t(batch, device))
    with pytest.raises(RuntimeError, match="leading minor of order 1"):
        tp.linalg.cholesky(_t(-np.eye(2), device))


@pytest.mark.parametrize("name", ["inv", "det", "slogdet", "cholesky", "eigh", "eigvalsh"])
def test_non_square_and_one_dimensional(device, name):
    """Square-matrix functions refuse other shapes before anything runs."""
    func = getattr(tp.linalg, name)
    with pytest.raises(RuntimeError, match=f"linalg.{name}: A must be batches of square matrices, but they are 2 by 3 matrices"):
        func(_t(np.ones((2, 3)), device))
    with pytest.raises(RuntimeError, match=f"linalg.{name}: The input tensor A must have at least 2 dimensions."):
        func(_t(np.ones(3), device))


@pytest.mark.parametrize("name", ["inv", "det", "slogdet", "cholesky", "eigh", "qr", "svd", "svdvals", "matrix_rank"])
def test_integer_input(device, name):
    """Integer input is refused with PyTorch's message (no silent cast)."""
    with pytest.raises(RuntimeError, match=f"linalg.{name}: Expected a floating point or complex tensor as input. Got Long"):
        getattr(tp.linalg, name)(_t(np.eye(2), device, tp.int64))


def test_half_precision_is_refused():
    """LAPACK has no half-precision routines: PyTorch's message."""
    with pytest.raises(RuntimeError, match="linalg.inv: Low precision dtypes not supported. Got Half"):
        tp.linalg.inv(tp.eye(2, dtype=tp.float16))


def test_argument_errors(device):
    """Mismatched dtypes and shapes, unknown modes, drivers and UPLO."""
    A = _t(np.eye(2), device)
    with pytest.raises(RuntimeError, match="linalg.solve: Expected A and B to have the same dtype, but found A of type "
                                           "Float and B of type Double instead"):
        tp.linalg.solve(A, _t(np.ones(2), device, tp.float64))
    with pytest.raises(RuntimeError, match=r"linalg.solve: Incompatible shapes of A and B for the equation AX = B \(2x2 and 3x1\)"):
        tp.linalg.solve(A, _t(np.ones(3), device))
    with pytest.raises(RuntimeError, match="qr received unrecognized mode 'x'"):
        tp.linalg.qr(A, mode="x")
    with pytest.raises(RuntimeError, match="Expected UPLO argument to be 'L' or 'U', but got X"):
        tp.linalg.eigh(A, UPLO="X")
    with pytest.raises(RuntimeError, match=r"torch.linalg.lstsq: input.size\(-2\) should match other.size\(-2\)"):
        tp.linalg.lstsq(_t(np.ones((3, 2)), device), _t(np.ones((4, 2)), device))
    with pytest.raises(RuntimeError, match="parameter `driver` should be one of"):
        tp.linalg.lstsq(A, A, driver="magic")
    with pytest.raises(RuntimeError, match=r"linalg.pinv\(Long\{\[2\]\}\): expected a tensor with 2 or more dimensions"):
        tp.linalg.pinv(_t(np.ones(2), device, tp.int64))


def test_different_devices():
    """Operands on two devices are refused, naming the op."""
    status = {s.device_type: s for s in tp.backends.status()}.get("npdev")
    if status is None or status.state not in ("ready", "loaded"):
        pytest.skip("npdev unavailable: a second device is needed")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device.*linalg.solve"):
        tp.linalg.solve(tp.eye(2), tp.ones(2, device="npdev"))
