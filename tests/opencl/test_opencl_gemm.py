"""The OpenCL backend's register-blocked matmul (6 rows x 16 columns per work-item, b read in place
or packed into strips first) against NumPy in float64: sizes that are not multiples of the block
(partial row blocks, partial column strips, N below one strip), transposed and otherwise strided
operands, batches, both paths of the packing choice, float64 and the 16-bit floats."""
import numpy as np
import pytest

import tensorplug as tp
from tensorplug.backends.opencl import OpenCLBackend

AVAILABLE, REASON = OpenCLBackend().is_available()
pytestmark = pytest.mark.skipif(not AVAILABLE, reason=f"OpenCL backend unavailable: {REASON}")

DEV = "opencl"


def _needs(dtype):
    if dtype == "float64":
        from tensorplug.backends.opencl import storage

        if not all(s.has_fp64 for s in storage.devices()):
            pytest.skip("the OpenCL device has no float64")


def _check(got, want, k, dtype="float32"):
    tol = {"float32": 3e-6, "float64": 1e-13, "float16": 2e-3, "bfloat16": 1.6e-2}[dtype] * np.sqrt(k)
    host = got.cpu()
    if dtype in ("float16", "bfloat16"):
        host = host.float()
    np.testing.assert_allclose(host.numpy().astype(np.float64), want, rtol=tol, atol=tol * max(1.0, np.abs(want).max()))


# (batch, m, k, n): partial blocks everywhere; 128 rows and more take the packed path; a transposed
# a with n < m runs as out^T = b^T a^T (gemm_blocked), batches included.
SHAPES = [(1, 1, 1, 1), (1, 5, 3, 7), (1, 6, 16, 16), (1, 7, 17, 17), (2, 13, 33, 31), (1, 128, 784, 512),
          (1, 130, 70, 10), (3, 129, 5, 40), (1, 300, 2, 1), (1, 1, 1000, 3)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", SHAPES)
def test_matmul_layouts(shape, dtype):
    """a @ b with a and b each contiguous or transposed (the four layouts nn.Linear and its
    gradients produce), against float64 NumPy."""
    _needs(dtype)
    b_, m, k, n = shape
    rng = np.random.default_rng(m * 1000 + k + n)
    a = rng.standard_normal((b_, m, k))
    b = rng.standard_normal((b_, k, n))
    want = a @ b
    for a_t in (False, True):
        for b_t in (False, True):
            at = tp.tensor(np.ascontiguousarray(a.transpose(0, 2, 1)) if a_t else a, dtype=getattr(tp, dtype),
                           device=DEV)
            bt = tp.tensor(np.ascontiguousarray(b.transpose(0, 2, 1)) if b_t else b, dtype=getattr(tp, dtype),
                           device=DEV)
            at = at.transpose(1, 2) if a_t else at
            bt = bt.transpose(1, 2) if b_t else bt
            _check(at @ bt, want, k, dtype)


def test_matmul_sliced_operands_and_strided_out():
    """Operands that are slices of bigger tensors (row strides beyond their width, offsets), an
    expanded batch, and 2-D @ 2-D written into a transposed out= view."""
    rng = np.random.default_rng(3)
    big_a = rng.standard_normal((40, 50))
    big_b = rng.standard_normal((60, 70))
    a, b = big_a[3:32:2, 5:44], big_b[7:46, 1:66:3]  # (15, 39) @ (39, 22), both strided
    at = tp.tensor(big_a, dtype=tp.float32, device=DEV)[3:32:2, 5:44]
    bt = tp.tensor(big_b, dtype=tp.float32, device=DEV)[7:46, 1:66:3]
    _check(at @ bt, a @ b, 39)
    out = tp.empty(22, 15, device=DEV)
    tp.matmul(at, bt, out=out.t())
    _check(out, (a @ b).T, 39)
    # a batch of one b broadcast against three a's
    a3 = rng.standard_normal((3, 9, 39))
    _check(tp.tensor(a3, dtype=tp.float32, device=DEV) @ bt, a3 @ b, 39)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_matmul_16_bit(dtype):
    """16-bit floats keep their dtype (they go through the tiled kernel, computed in float32)."""
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((37, 21)), rng.standard_normal((21, 19))
    at, bt = tp.tensor(a, dtype=getattr(tp, dtype), device=DEV), tp.tensor(b, dtype=getattr(tp, dtype), device=DEV)
    got = at @ bt
    assert got.dtype is getattr(tp, dtype)
    # the reference from the operands as rounded to 16 bits
    _check(got, at.cpu().float().numpy().astype(np.float64) @ bt.cpu().float().numpy().astype(np.float64), 21, dtype)


def test_matmul_special_values():
    """inf and NaN propagate as in float64 NumPy (no lane of a partial strip leaks into another)."""
    a = np.ones((7, 5))
    b = np.ones((5, 18))
    a[2, 1] = np.inf
    b[3, 17] = np.nan
    with np.errstate(invalid="ignore"):  # NumPy 2.4 warns about the inf - inf it computes
        want = a @ b
    got = (tp.tensor(a, dtype=tp.float32, device=DEV) @ tp.tensor(b, dtype=tp.float32, device=DEV)).cpu().numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite])
