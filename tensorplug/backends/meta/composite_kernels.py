"""Meta kernels for the composite ops whose decomposition computes on host arrays.

Most composite ops decompose into primitives and run on the meta device as they are. The FFT and
``tp.linalg`` factorizations decompose into NumPy calls on the host copy of their input, which a
meta tensor cannot give; the contract lets a backend override exactly these ops (their derivative
is explicit), so here each one allocates results of the shapes and dtypes its decomposition
returns, and computes nothing. Gradients still come from each op's derivative, which is written
with other ops and so runs on meta too.

Each kernel receives the op's arguments as the frontend checked and normalized them
(docs/backend-contract.md, "Fused kernels for composite ops") and allocates through
``new_empty``, as the contract asks of fused kernels.
"""
from __future__ import annotations

from typing import Any, Callable

__all__ = ["composite_kernels"]


def _fft_c2c(input: Any, dims: tuple, normalization: int, forward: bool) -> Any:
    return input.new_empty(input.shape)


def _fft_r2c(input: Any, dims: tuple, normalization: int, onesided: bool) -> Any:
    shape = list(input.shape)
    if onesided:
        shape[dims[-1]] = shape[dims[-1]] // 2 + 1
    return input.new_empty(tuple(shape) + (2,))  # (real, imag) pairs


def _fft_c2r(input: Any, dims: tuple, normalization: int, last_dim_size: int) -> Any:
    shape = list(input.shape[:-1])  # the pairs' dim goes
    shape[dims[-1]] = last_dim_size
    return input.new_empty(tuple(shape))


def _square_batch(A: Any) -> tuple:
    """(batch shape, n) of a batch of square matrices."""
    return tuple(A.shape[:-2]), A.shape[-1]


def _same_as(A: Any, *args: Any) -> Any:
    return A.new_empty(A.shape)


def _solution(A: Any, B: Any, *args: Any) -> Any:
    return B.new_empty(B.shape, dtype=A.dtype)


def _det(A: Any) -> Any:
    return A.new_empty(tuple(A.shape[:-2]))


def _slogdet(A: Any) -> tuple:
    batch = tuple(A.shape[:-2])
    return A.new_empty(batch), A.new_empty(batch, dtype=A.dtype.to_real())


def _qr(A: Any, mode: str) -> tuple:
    batch, (m, n) = tuple(A.shape[:-2]), A.shape[-2:]
    k = min(m, n)
    if mode == "r":
        return A.new_empty((0,)), A.new_empty(batch + (k, n))
    if mode == "complete":
        return A.new_empty(batch + (m, m)), A.new_empty(batch + (m, n))
    return A.new_empty(batch + (m, k)), A.new_empty(batch + (k, n))


def _geqrf(A: Any) -> tuple:
    batch, (m, n) = tuple(A.shape[:-2]), A.shape[-2:]
    return A.new_empty(batch + (m, n)), A.new_empty(batch + (min(m, n),))


def _svd(A: Any, full_matrices: bool) -> tuple:
    batch, (m, n) = tuple(A.shape[:-2]), A.shape[-2:]
    k = min(m, n)
    left, right = (m, n) if full_matrices else (k, k)
    return (A.new_empty(batch + (m, left)), A.new_empty(batch + (k,), dtype=A.dtype.to_real()),
            A.new_empty(batch + (right, n)))


def _svdvals(A: Any) -> Any:
    return A.new_empty(tuple(A.shape[:-2]) + (min(A.shape[-2:]),), dtype=A.dtype.to_real())


def _eigh(A: Any, UPLO: str) -> tuple:
    batch, n = _square_batch(A)
    return A.new_empty(batch + (n,), dtype=A.dtype.to_real()), A.new_empty(A.shape)


def _eigvalsh(A: Any, UPLO: str) -> Any:
    batch, n = _square_batch(A)
    return A.new_empty(batch + (n,), dtype=A.dtype.to_real())


def _eig(A: Any) -> tuple:
    batch, n = _square_batch(A)
    complex_dtype = A.dtype.to_complex()
    return A.new_empty(batch + (n,), dtype=complex_dtype), A.new_empty(A.shape, dtype=complex_dtype)


def _eigvals(A: Any) -> Any:
    batch, n = _square_batch(A)
    return A.new_empty(batch + (n,), dtype=A.dtype.to_complex())


def _lstsq(A: Any, B: Any, rcond: Any, driver: Any) -> tuple:
    # Which results are filled (the residuals need every A of full rank) depends on values;
    # PyTorch has no meta kernel for lstsq either.
    raise NotImplementedError(
        f"linalg.lstsq: cannot run on meta tensors (A of shape {list(A.shape)}): whether it returns residuals "
        f"depends on the rank of A, which a meta tensor does not have"
    )


def composite_kernels() -> dict[str, Callable[..., Any]]:
    """Op name -> meta kernel for every composite op whose decomposition reads host arrays."""
    return {
        "fft_c2c": _fft_c2c, "fft_r2c": _fft_r2c, "fft_c2r": _fft_c2r,
        "linalg_inv": _same_as, "linalg_cholesky": _same_as, "linalg_det": _det, "linalg_slogdet": _slogdet,
        "linalg_solve": _solution, "linalg_solve_triangular": _solution,
        "linalg_qr": _qr, "geqrf": _geqrf, "linalg_svd": _svd, "linalg_svdvals": _svdvals,
        "linalg_eigh": _eigh, "linalg_eigvalsh": _eigvalsh, "linalg_eig": _eig, "linalg_eigvals": _eigvals,
        "linalg_lstsq": _lstsq,
    }
