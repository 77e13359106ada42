"""The orthogonal parametrization: ``module.weight`` kept orthogonal (orthonormal columns, or
rows for a wide matrix) while the optimizer moves an unconstrained tensor.

Three maps turn the unconstrained tensor into an orthogonal matrix, with PyTorch's names:
``matrix_exp`` and ``cayley`` read its lower triangle as a skew-symmetric matrix A and take
exp(A) or (I - A/2)^-1 (I + A/2); ``householder`` reads its strict lower triangle as Householder
vectors. With ``use_trivialization`` (the default) the result multiplies a fixed orthogonal
``base`` buffer, and the unconstrained tensor starts at the value that maps to the identity, so
the layer starts at ``base``: the given weight itself when it is orthogonal, else the Q of its QR
decomposition (R's diagonal made positive), as PyTorch starts.
"""
from __future__ import annotations

from ...frontend.autograd import no_grad
from ...frontend.factories import eye, randn, zeros_like
from ...frontend.dtypes import finfo
from ...frontend.ops.closeness import allclose
from ...frontend.ops.joining import cat
from ...frontend.tensor import Tensor
from ..module import Module

MAPS = ("matrix_exp", "cayley", "householder")


def _linalg():
    # tp.linalg is imported after tp.nn (tensorplug/__init__.py), so it is looked up on use.
    from ... import linalg

    return linalg


def _is_orthogonal(Q: Tensor) -> bool:
    """Whether Q's columns are orthonormal, to within 10 n float epsilons (PyTorch's test)."""
    n, k = Q.shape[-2], Q.shape[-1]
    identity = eye(k, dtype=Q.dtype, device=Q.device)
    return allclose(Q.mH @ Q, identity, atol=10.0 * n * finfo(Q.dtype).eps)


def _make_orthogonal(A: Tensor) -> Tensor:
    """The Q of A = QR with R's diagonal positive (the unique such Q for a full-rank A)."""
    Q, R = _linalg().qr(A)
    return Q * R.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


class _Orthogonal(Module):
    def __init__(self, weight: Tensor, orthogonal_map: str, *, use_trivialization: bool = True):
        super().__init__()
        if weight.is_complex() and orthogonal_map == "householder":
            raise ValueError("The householder parametrization does not support complex tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:
        n, k = X.shape[-2], X.shape[-1]
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map == "householder":
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = _linalg().householder_product(A, tau)
            # The reflections' product has columns of either sign; X's diagonal picks them.
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        else:
            X = X.tril()
            if n != k:
                X = cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = X - X.mH
            if self.orthogonal_map == "matrix_exp":
                Q = _linalg().matrix_exp(A)
            else:
                identity = eye(n, dtype=A.dtype, device=A.device)
                Q = _linalg().solve(identity - 0.5 * A, identity + 0.5 * A)
            if n != k:
                Q = Q[..., :k]
        if getattr(self, "base", None) is not None:
            Q = self.base @ Q
        return Q.mT if transposed else Q

    @no_grad()
    def right_inverse(self, Q: Tensor) -> Tensor:
        if Q.shape != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                             f"Got a tensor of shape {Q.shape}.")
        Q_init = Q
        n, k = Q.shape[-2], Q.shape[-1]
        transposed = n < k
        if transposed:
            Q = Q.mT
            n, k = k, n
        if "base" not in self._buffers and self.orthogonal_map == "householder":
            return self._householder_factors(Q, transposed)
        if "base" not in self._buffers:
            # (registration lets this pass and stores the weight as it is, as PyTorch's does)
            raise NotImplementedError("It is not possible to assign to the matrix exponential or the Cayley "
                                      "parametrizations when use_trivialization=False.")
        if n == k:
            Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
        else:
            # Complete the columns to a square matrix with random ones before orthogonalising.
            extra = randn(*Q.shape[:-2], n, n - k, dtype=Q.dtype, device=Q.device)
            Q = _make_orthogonal(cat([Q, extra], dim=-1))
        self.base = Q
        # -I maps to I under every map: A = X - X^H cancels the diagonal, and the Householder
        # vectors are zero with tau = 2, each reflection's sign undone by the diagonal of -1.
        start = zeros_like(Q_init)
        start.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
        return start


    @staticmethod
    def _householder_factors(Q: Tensor, transposed: bool) -> Tensor:
        """The tensor that ``forward`` maps to the Q factor of ``Q``'s QR decomposition (``Q``
        itself when it is orthogonal): geqrf's reflectors below the diagonal, and on it the signs
        that ``forward`` multiplies the columns by: R's diagonal signs, flipped where geqrf left a
        column unreflected (tau 0), because ``forward`` always reflects (its tau is 2 there)."""
        from ...linalg._householder import geqrf  # tp.linalg is imported after tp.nn

        A, tau = geqrf(Q)
        signs = A.diagonal(dim1=-2, dim2=-1)
        signs.copy_(signs.sign() * (1.0 - 2.0 * (tau == 0).to(A.dtype)))
        return A.mT if transposed else A


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """Keep ``module.<name>`` (a matrix or a batch of them) orthogonal. ``orthogonal_map`` is
    ``"matrix_exp"`` (the default for square or complex matrices), ``"cayley"`` or
    ``"householder"`` (the default otherwise). Returns ``module``."""
    from . import parametrize

    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        square = weight.shape[-2] == weight.shape[-1]
        orthogonal_map = "matrix_exp" if square or weight.is_complex() else "householder"
    if orthogonal_map not in MAPS:
        raise ValueError(f'orthogonal_map has to be one of "matrix_exp", "cayley", "householder". Got: {orthogonal_map}')
    parametrization = _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, parametrization, unsafe=True)
    return module
