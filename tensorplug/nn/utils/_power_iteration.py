"""The largest singular value of a weight by power iteration, shared by both spectral norms
(the legacy hook in ``_spectral_norm`` and the parametrization in ``parametrizations``).

The weight is seen as a matrix whose rows run along one dim. ``u`` and ``v`` estimate its first
left and right singular vectors and persist between calls as buffers; each step refines them in
place (``out=``), so a module sharing the buffers sees the update, and without a graph: they
enter sigma as constants, as in PyTorch.
"""
from __future__ import annotations

from ...frontend.autograd import no_grad
from ...frontend.tensor import Tensor
from .._normalization import normalize


def as_matrix(weight: Tensor, dim: int) -> Tensor:
    """``weight`` with ``dim`` moved to the front and every other dim flattened into columns."""
    moved = weight.movedim(dim, 0)
    return moved.reshape(moved.shape[0], -1)


def random_unit_vectors(matrix: Tensor, eps: float) -> tuple[Tensor, Tensor]:
    """Starting ``u`` (one entry per row) and ``v`` (per column), normal draws scaled to norm 1."""
    with no_grad():
        return tuple(normalize(matrix.new_empty(n).normal_(0, 1), dim=0, eps=eps) for n in matrix.shape)


def refine(matrix: Tensor, u: Tensor, v: Tensor, steps: int, eps: float, *, u_first: bool) -> None:
    """``steps`` power-iteration steps on ``u`` and ``v`` in place. The legacy hook updates ``v``
    first and the parametrization ``u`` first, as their PyTorch counterparts do."""
    with no_grad():
        for _ in range(steps):
            if u_first:
                normalize(matrix.mv(v), dim=0, eps=eps, out=u)
            normalize(matrix.t().mv(u), dim=0, eps=eps, out=v)
            if not u_first:
                normalize(matrix.mv(v), dim=0, eps=eps, out=u)


def divided_by_sigma(weight: Tensor, matrix: Tensor, u: Tensor, v: Tensor) -> Tensor:
    """``weight / (u . matrix v)``, with copies of ``u`` and ``v``: the next training step
    rewrites the buffers in place, which must not touch this step's graph."""
    return weight / u.clone().dot(matrix.mv(v.clone()))
