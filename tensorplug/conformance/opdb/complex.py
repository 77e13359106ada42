"""Complex tensors: a few representative ops of each kind on complex64 and complex128, against
NumPy's complex128.

A backend never sees a complex dtype: the Complex dispatch key rewrites every complex op as real
ops on (real, imag) pairs (docs/complex.md). So a backend's complex results are only as right as
the real primitives they are built from, which is what this family shows a vendor, per backend.

The database compares real values, so, as in the spectral family, complex inputs are given as
(real, imag) pairs (a trailing dim of 2, read with ``view_as_complex``) and complex results are
read back with ``view_as_real``; the dtype column is the part dtype (float32 for complex64,
float64 for complex128). The gradient checks differentiate with respect to the pairs, which is
PyTorch's complex gradient convention (dL/dx + i dL/dy).
"""
from __future__ import annotations

import numpy as np

from ._core import Arg, OpEntry, Sample

_DTYPES = ("float32", "float64")
# complex64 functions are computed from float32 parts with a few roundings each.
_TOL = {"float32": (2e-4, 2e-5), "float64": (1e-10, 1e-11)}


def _z(tp, pairs):
    return tp.view_as_complex(pairs.contiguous())


def _np_z(pairs):
    return np.asarray(pairs)[..., 0] + 1j * np.asarray(pairs)[..., 1]


def _pairs(z):
    z = np.asarray(z, dtype=np.complex128)
    return np.stack([z.real, z.imag], -1)


def _entry(name, call, ref, samples, grad_sample, complex_out=True):
    """An entry whose ``call(tp, *complex tensors, **kwargs)`` and ``ref(*complex128 arrays,
    **kwargs)`` see complex values; the pairs are unpacked and packed here."""

    def tp_call(tp, *pairs, **kwargs):
        result = call(tp, *(_z(tp, p) for p in pairs), **kwargs)
        return tp.view_as_real(result) if complex_out else result

    def np_ref(*pairs, **kwargs):
        result = ref(*(_np_z(p) for p in pairs), **kwargs)
        return _pairs(result) if complex_out else np.asarray(result, dtype=np.float64)

    return OpEntry(f"complex.{name}", "complex", np_ref, samples, dtypes=_DTYPES, call=tp_call, tolerances=_TOL,
                   grad_samples=lambda: iter([grad_sample]))


def _unary_samples(low=-2.0, high=2.0):
    def samples(dtype):
        yield Sample((Arg((7, 2), low=low, high=high),), name="vector")
        yield Sample((Arg((3, 4, 2), low=low, high=high, layout="transposed"),), name="transposed")
        yield Sample((Arg((256, 64, 2), low=low, high=high),), name="large", large=True)

    return samples


def _unary(name, call, ref, low=-2.0, high=2.0, complex_out=True):
    return _entry(name, call, ref, _unary_samples(low, high), Sample((Arg((2, 3, 2), low=low, high=high),)),
                  complex_out)


def _binary_samples(dtype):
    yield Sample((Arg((4, 5, 2)), Arg((4, 5, 2), nonzero=True)), name="same shape")
    yield Sample((Arg((3, 1, 2)), Arg((1, 4, 2), nonzero=True)), name="broadcast")
    yield Sample((Arg((128, 256, 2)), Arg((128, 256, 2), nonzero=True)), name="large", large=True)


def _binary(name, call, ref):
    return _entry(name, call, ref, _binary_samples, Sample((Arg((2, 3, 2)), Arg((2, 3, 2), nonzero=True))))


def _reduction_samples(dtype):
    yield Sample((Arg((4, 6, 2), low=-1.2, high=1.2),), {"dim": 1}, name="dim=1")
    yield Sample((Arg((5, 3, 2), low=-1.2, high=1.2, layout="transposed"),), {"dim": 0}, name="transposed, dim=0")
    yield Sample((Arg((64, 512, 2), low=-1.0, high=1.0),), {"dim": 1}, name="large", large=True)


def _reduction(name, call, ref, complex_out=True):
    return _entry(name, call, ref, _reduction_samples, Sample((Arg((3, 4, 2), low=-1.2, high=1.2),), {"dim": 1}),
                  complex_out)


def _matmul_samples(dtype):
    yield Sample((Arg((3, 4, 2)), Arg((4, 5, 2))), name="matrix @ matrix")
    yield Sample((Arg((2, 3, 4, 2)), Arg((4, 2, 2))), name="batched @ matrix")
    yield Sample((Arg((128, 128, 2)), Arg((128, 128, 2))), name="large", large=True)


def _square_samples(dtype):
    # a dominant diagonal keeps the systems well conditioned (the reference is float64 LAPACK)
    yield Sample((Arg((3, 3, 2), values=_dominant(3)),), name="3 x 3")
    yield Sample((Arg((2, 4, 4, 2), values=np.stack([_dominant(4, 1), _dominant(4, 2)])),), name="batch of 4 x 4")


def _dominant(n, seed=0):
    rng = np.random.default_rng(seed)
    pairs = rng.uniform(-1, 1, (n, n, 2))
    pairs[..., 0] += n * np.eye(n)
    return np.round(pairs, 3)


def _solve_samples(dtype):
    yield Sample((Arg((3, 3, 2), values=_dominant(3)), Arg((3, 2, 2))), name="3 x 3, two right-hand sides")


ENTRIES = (
    _binary("mul", lambda tp, a, b: a * b, lambda a, b: a * b),
    _binary("div", lambda tp, a, b: a / b, lambda a, b: a / b),
    _unary("exp", lambda tp, z: tp.exp(z), np.exp),
    _unary("log", lambda tp, z: tp.log(z), np.log, low=0.1, high=2.0),
    _unary("sqrt", lambda tp, z: tp.sqrt(z), np.sqrt, low=0.1, high=2.0),
    _unary("sin", lambda tp, z: tp.sin(z), np.sin),
    _unary("tanh", lambda tp, z: tp.tanh(z), np.tanh),
    _unary("asinh", lambda tp, z: tp.asinh(z), np.arcsinh),
    _unary("atanh", lambda tp, z: tp.atanh(z), np.arctanh, low=-0.8, high=0.8),
    _unary("pow", lambda tp, z: z ** 2.5, lambda z: z ** 2.5, low=0.1, high=2.0),
    _unary("abs", lambda tp, z: tp.abs(z), np.abs, low=0.1, high=2.0, complex_out=False),
    _unary("angle", lambda tp, z: tp.angle(z), np.angle, low=0.1, high=2.0, complex_out=False),
    _reduction("sum", lambda tp, z, dim: z.sum(dim), lambda z, dim: z.sum(dim)),
    _reduction("prod", lambda tp, z, dim: z.prod(dim), lambda z, dim: z.prod(dim)),
    _reduction("cumsum", lambda tp, z, dim: z.cumsum(dim), lambda z, dim: np.cumsum(z, dim)),
    _reduction("var", lambda tp, z, dim: z.var(dim), lambda z, dim: np.var(z, dim, ddof=1), complex_out=False),
    _reduction("norm", lambda tp, z, dim: tp.norm(z, dim=dim), lambda z, dim: np.linalg.norm(z, axis=dim),
               complex_out=False),
    _entry("matmul", lambda tp, a, b: a @ b, lambda a, b: a @ b, _matmul_samples,
           Sample((Arg((2, 3, 2)), Arg((3, 2, 2))))),
    _entry("linalg.inv", lambda tp, a: tp.linalg.inv(a), np.linalg.inv, _square_samples,
           Sample((Arg((3, 3, 2), values=_dominant(3)),))),
    _entry("linalg.det", lambda tp, a: tp.linalg.det(a), np.linalg.det, _square_samples,
           Sample((Arg((3, 3, 2), values=_dominant(3)),))),
    _entry("linalg.solve", lambda tp, a, b: tp.linalg.solve(a, b), np.linalg.solve, _solve_samples,
           Sample((Arg((3, 3, 2), values=_dominant(3)), Arg((3, 2, 2))))),
)
