"""Matrix products: matmul and the ops built on it."""
from __future__ import annotations

import numpy as np

from ._core import FLOAT_DTYPES, INT_DTYPES, Arg, ErrorCase, OpEntry, Sample

_TOL = {"float32": (1e-4, 1e-4), "float16": (4e-3, 2e-2), "bfloat16": (2e-2, 1e-1)}
DTYPES = FLOAT_DTYPES + INT_DTYPES


def _tp():
    import tensorplug

    return tensorplug


#: K = 4096 products of ones: a 16-bit accumulator stops counting (float16 at 2048, bfloat16 at
#: 256); the contract requires float32 or wider accumulation, so the exact answer is 4096.
_ONES_K = 4096


def _pair_samples(pairs, large=None, ones=False):
    def samples(dtype):
        for name, a, b in pairs:
            yield Sample((Arg(a[0], layout=a[1] if len(a) > 1 else "contiguous"),
                          Arg(b[0], layout=b[1] if len(b) > 1 else "contiguous")), name=name)
        if large and dtype in ("float32", "float64", "int64"):
            yield Sample((Arg(large[0]), Arg(large[1])), name="large", large=True)
        if ones and dtype in FLOAT_DTYPES:
            yield Sample((Arg((1, _ONES_K), values=(1.0,) * _ONES_K), Arg((_ONES_K, 2), values=(1.0,) * (2 * _ONES_K))),
                         name="K=4096 ones (accumulator width)", grad=False)

    return samples


def _grad(pairs):
    def samples():
        for name, a, b in pairs:
            yield Sample((Arg(a), Arg(b)), name=name)

    return samples


_MATMUL = [
    ("matrix", ((3, 4),), ((4, 5),)),
    ("batched broadcast", ((2, 3, 4),), ((4, 5),)),
    ("vector-matrix", ((4,),), ((4, 3),)),
    ("matrix-vector", ((3, 4),), ((4,),)),
    ("dot", ((5,),), ((5,),)),
    ("transposed", ((3, 4), "transposed"), ((4, 5), "transposed")),
    ("strided", ((3, 4), "strided"), ((4, 2), "strided")),
    ("empty K", ((3, 0),), ((0, 4),)),
]

def _renorm_ref(x, p, dim, maxnorm):
    others = tuple(d for d in range(x.ndim) if d != dim)
    norm = np.sum(np.abs(x) ** p, axis=others, keepdims=True) ** (1.0 / p)
    return x * np.where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0)


def _matrix_exp_ref(x):
    """exp of each matrix by its eigendecomposition, V exp(L) V^-1 (another method than the
    scaled Taylor series tensorplug runs); the samples are small random matrices, whose
    eigenvectors are well conditioned."""
    values, vectors = np.linalg.eig(x.astype(np.float64))
    result = vectors @ (np.exp(values)[..., :, None] * np.linalg.inv(vectors))
    return result.real


def _ormqr_ref(a, tau, other):
    """Q @ other, Q = H_1 ... H_k built explicitly from the reflectors (v_i: a 1 at row i, a's
    column i below it), in float64, batch by batch."""
    a, tau, other = (np.asarray(x, dtype=np.float64) for x in (a, tau, other))
    result = np.empty(np.broadcast_shapes(a.shape[:-2], other.shape[:-2]) + other.shape[-2:])
    m = a.shape[-2]
    for index in np.ndindex(a.shape[:-2]):
        Q = np.eye(m)
        for i in range(tau.shape[-1]):
            v = np.zeros(m)
            v[i], v[i + 1:] = 1.0, a[index][i + 1:, i]
            Q = Q @ (np.eye(m) - tau[index][i] * np.outer(v, v))
        result[index] = Q @ other[index]
    return result


ENTRIES = [
    OpEntry("matmul", "linalg", np.matmul, _pair_samples(_MATMUL, ((96, 128), (128, 80)), ones=True), dtypes=DTYPES, method="matmul",
            grad_samples=_grad([("matrix", (2, 3), (3, 2)), ("batched", (2, 2, 3), (3, 2))]), primitive="matmul",
            tolerances=_TOL, errors=(ErrorCase(lambda d: _tp().matmul(_tp().ones(2, 3, device=d), _tp().ones(2, 3, device=d)),
                                               RuntimeError, r"cannot be multiplied", "shape mismatch"),)),
    OpEntry("mm", "linalg", np.matmul, _pair_samples([m for m in _MATMUL if len(m[1][0]) == 2 and len(m[2][0]) == 2]),
            dtypes=DTYPES, method="mm", grad_samples=_grad([("matrix", (2, 3), (3, 2))]), tolerances=_TOL,
            errors=(ErrorCase(lambda d: _tp().mm(_tp().ones(2, 3, device=d), _tp().ones(2, 3, device=d)), RuntimeError,
                              r"mm\(\): mat1 and mat2 shapes cannot be multiplied \(2x3 and 2x3\)", "shape mismatch"),)),
    OpEntry("bmm", "linalg", np.matmul, _pair_samples([("batched", ((2, 3, 4),), ((2, 4, 5),)),
                                                       ("transposed", ((2, 3, 4), "transposed"), ((2, 4, 5),))]),
            dtypes=DTYPES, method="bmm", grad_samples=_grad([("batched", (2, 2, 3), (2, 3, 2))]), tolerances=_TOL),
    OpEntry("mv", "linalg", np.matmul, _pair_samples([("matrix-vector", ((3, 4),), ((4,),))]), dtypes=DTYPES, method="mv",
            grad_samples=_grad([("matrix-vector", (2, 3), (3,))]), tolerances=_TOL),
    OpEntry("dot", "linalg", np.dot, _pair_samples([("vectors", ((5,),), ((5,),)), ("strided", ((4,), "strided"), ((4,),))]),
            dtypes=DTYPES, method="dot", grad_samples=_grad([("vectors", (3,), (3,))]), tolerances=_TOL),
    OpEntry("outer", "linalg", np.outer, _pair_samples([("vectors", ((3,),), ((4,),))]), dtypes=DTYPES, method="outer",
            grad_samples=_grad([("vectors", (3,), (2,))]), tolerances=_TOL),
    OpEntry("addmm", "linalg", lambda c, a, b: c + a @ b,
            lambda dtype: iter([Sample((Arg((3, 5)), Arg((3, 4)), Arg((4, 5))), name="matrices"),
                                Sample((Arg((5,)), Arg((3, 4)), Arg((4, 5))), name="broadcast bias")]),
            dtypes=FLOAT_DTYPES, method="addmm", tolerances=_TOL,
            grad_samples=lambda: iter([Sample((Arg((2, 2)), Arg((2, 3)), Arg((3, 2))), name="matrices")])),
    OpEntry("einsum", "linalg", lambda a, b: np.einsum("ij,jk->ik", a, b), _pair_samples([("ij,jk->ik", ((3, 4),), ((4, 5),))]),
            dtypes=FLOAT_DTYPES, call=lambda tp, a, b: tp.einsum("ij,jk->ik", a, b), tolerances=_TOL,
            grad_samples=_grad([("ij,jk->ik", (2, 3), (3, 2))])),
    OpEntry("renorm", "linalg", _renorm_ref,
            lambda dtype: iter([Sample((Arg((3, 4, 2)), 2.0, 0, 2.0), name="p=2, dim=0"),
                                Sample((Arg((3, 4), layout="transposed"), 1.0, 1, 1.5), name="p=1, transposed")]),
            dtypes=("float32", "float64"), method="renorm", tolerances=_TOL),
    OpEntry("linalg.multi_dot", "linalg", lambda *ms: np.linalg.multi_dot(ms),
            lambda dtype: iter([Sample((Arg((3, 4)), Arg((4, 5)), Arg((5, 2))), name="three matrices"),
                                Sample((Arg((4,)), Arg((4, 3)), Arg((3,))), name="vectors at both ends"),
                                Sample((Arg((2, 3), layout="transposed"), Arg((3, 3))), name="two, transposed")]),
            dtypes=("float32", "float64"), call=lambda tp, *ms: tp.linalg.multi_dot(list(ms)), tolerances=_TOL,
            grad_samples=lambda: iter([Sample((Arg((2, 3)), Arg((3, 2)), Arg((2, 2))), name="three matrices")])),
    OpEntry("linalg.matrix_exp", "linalg", _matrix_exp_ref,
            lambda dtype: iter([Sample((Arg((3, 3), low=-1.0, high=1.0),), name="3x3"),
                                Sample((Arg((2, 4, 4), low=-2.0, high=2.0),), name="batched, norm above 1"),
                                Sample((Arg((1, 1)),), name="1x1")]),
            dtypes=("float32", "float64"), call=lambda tp, x: tp.linalg.matrix_exp(x),
            tolerances={"float32": (1e-4, 1e-4), "float64": (1e-9, 1e-9)},
            grad_samples=lambda: iter([Sample((Arg((3, 3), low=-1.0, high=1.0),), name="3x3")])),
    OpEntry("ormqr", "linalg", _ormqr_ref,
            lambda dtype: iter([Sample((Arg((4, 3)), Arg((3,)), Arg((4, 2))), name="tall, 3 reflectors"),
                                Sample((Arg((2, 3, 3)), Arg((2, 2)), Arg((2, 3, 4), layout="transposed")),
                                       name="batched, 2 reflectors, transposed other")]),
            dtypes=("float32", "float64"), method="ormqr", tolerances=_TOL,
            grad_samples=lambda: iter([Sample((Arg((3, 2)), Arg((2,)), Arg((3, 2))), name="tall")])),
]
