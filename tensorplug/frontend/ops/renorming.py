"""``renorm``: rescale each slice along a dim whose p-norm exceeds ``maxnorm`` down to it,
composite over ``linalg.vector_norm`` and ``where`` (gradients for free), as PyTorch's
decomposition: ``input * where(norm > maxnorm, maxnorm / (norm + 1e-7), 1)``."""
from __future__ import annotations

from .. import dtypes as _dt
from ..shapes import normalize_dim
from ..tensor import Tensor
from ._common import write_inplace, write_out
from ._composite import composite
from .out_rehearsal import rehearse_out

__all__ = ["renorm"]

_SCALAR_TYPE_NAMES = {"int8": "Char", "uint8": "Byte", "int16": "Short", "int32": "Int", "int64": "Long", "bool": "Bool"}


@composite("renorm")
def _renorm(input: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:
    from ...linalg import vector_norm
    from .elementwise import where

    others = tuple(d for d in range(input.ndim) if d != dim)
    # Half-precision inputs take their norm in float32, as PyTorch's accumulate type does.
    acc = _dt.float32 if input._dtype in (_dt.float16, _dt.bfloat16) else None
    norm = vector_norm(input, p, others, keepdim=True, dtype=acc)
    factor = where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0)
    return input * factor.to(input._dtype)


def _check(input, p, dim, maxnorm) -> tuple:
    if not isinstance(input, Tensor):
        raise TypeError(f"renorm(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if not (input._dtype.is_floating_point or input._dtype.is_complex):
        raise RuntimeError("linalg.vector_norm: Expected a floating point or complex tensor as input. "
                           f"Got {_SCALAR_TYPE_NAMES.get(input._dtype.name, input._dtype.name)}")
    if input.ndim <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.ndim} dimensions")
    p, maxnorm = float(p), float(maxnorm)
    if not p > 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm:g}")
    return p, normalize_dim("renorm", dim, input.ndim), maxnorm


def renorm(input, p, dim, maxnorm, *, out=None) -> Tensor:
    """Each slice ``input.select(dim, i)`` whose ``p``-norm exceeds ``maxnorm``, scaled to norm
    ``maxnorm`` (by ``maxnorm / (norm + 1e-7)``); the other slices unchanged.

    >>> tp.renorm(tp.tensor([[1.0, 2.0], [3.0, 4.0]]), 1, 0, 3).tolist()
    [[1.0, 2.0], [1.2857142686843872, 1.7142857313156128]]
    """
    if out is not None:
        rehearse_out(renorm, locals())
    p, d, maxnorm = _check(input, p, dim, maxnorm)
    return write_out("renorm", out, _renorm(input, p, d, maxnorm))


def renorm_(self, p, dim, maxnorm) -> Tensor:
    """In-place :func:`renorm`."""
    p, d, maxnorm = _check(self, p, dim, maxnorm)
    return write_inplace("renorm_", self, _renorm(self, p, d, maxnorm))


#: Tensor methods this module provides: name -> function (attached by frontend.methods).
TENSOR_METHODS: dict = {"renorm": renorm, "renorm_": renorm_}
