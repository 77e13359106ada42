"""``tp.linalg``: PyTorch 2.13's torch.linalg (norms, solvers, determinants, decompositions).

Norms are composites over tensorplug ops and run on every device. The solvers and
decompositions run LAPACK through NumPy: on the CPU on host views of the tensors, on every other
device through the host fallback (copied to the host and back); a backend with a native solver
registers a kernel for the op (``linalg_inv``, ``linalg_svd``, ...) and replaces that route.
Each has an explicit derivative, so gradients (and second derivatives) flow on every device.
docs/linalg.md says what runs where and the numeric fine print.

>>> import tensorplug as tp
>>> A = tp.tensor([[4.0, 2.0], [2.0, 3.0]])
>>> tp.linalg.cholesky(A).tolist()
[[2.0, 0.0], [1.0, 1.4142135381698608]]
"""
from ..frontend.ops.linalg import matmul
from ..frontend.ops.products import linalg_cross as cross
from ..frontend.views import diagonal as _diagonal
from ._aliases import matrix_power
from ._checks import LinAlgError
from ._conditioning import cond
from ._householder import householder_product
from ._decompositions import eig, eigh, eigvals, eigvalsh, qr, svd, svdvals
from ._least_squares import lstsq, matrix_rank, pinv
from ._lu import lu, lu_factor, lu_factor_ex, lu_solve
from ._matrix_functions import matrix_exp, multi_dot
from ._norms import matrix_norm, norm, vector_norm
from ._solvers import cholesky, det, inv, slogdet, solve, solve_triangular
from ._vecdot import vecdot
from ._with_info import cholesky_ex, inv_ex, solve_ex
from ._tensor_forms import tensorinv, tensorsolve, vander

__all__ = [
    "LinAlgError", "cholesky", "cond", "cross", "det", "diagonal", "eig", "eigh", "eigvals", "eigvalsh", "householder_product", "inv", "lstsq", "lu", "lu_factor", "lu_factor_ex", "lu_solve", "matmul", "matrix_exp", "matrix_norm",
    "matrix_power", "multi_dot", "matrix_rank", "norm", "pinv", "qr", "slogdet", "solve", "solve_triangular", "svd", "svdvals",
    "vecdot", "vector_norm", "cholesky_ex", "inv_ex", "solve_ex", "tensorinv", "tensorsolve", "vander",
]


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """The diagonals of the matrices in ``A`` (a view): tp.diagonal over the last two dims."""
    return _diagonal(A, offset, dim1, dim2)
