"""The smallest and largest value of an index tensor as one op, for check_index_range (issue 14).

The range check before gather, scatter, index_select and the class-index losses reads both
extremes back to the host. Composed of frontend ops it is six kernel launches (the ignored
value replaced by 0, amin, amax, and the two copies that stack them) before that read: on
OpenCL, where each launch costs tens of microseconds of host time, more than cross_entropy's
own two kernels take to launch. A backend may compute both extremes in one kernel.
"""
from __future__ import annotations

from ...dispatcher import Operator, local_state
from ..tensor import Tensor

__all__ = ["INDEX_EXTREMES", "index_extremes"]


def _index_extremes_decomposition(index, ignore):
    from .elementwise import COMPARE, where
    from .joining import stack
    from .reductions import amax, amin

    values = index if ignore is None else where(COMPARE["eq"](index, ignore), 0, index)
    return stack([amin(values), amax(values)])


INDEX_EXTREMES = Operator("index_extremes", decomposition=_index_extremes_decomposition, differentiable=False)


def index_extremes(index: Tensor, ignore) -> Tensor:
    """``[min, max]`` of a non-empty integer ``index`` (its dtype), values equal to ``ignore`` (an
    int, or None for none) counted as 0."""
    keys = (index._keys | local_state.include) & local_state.mask
    return INDEX_EXTREMES.lookup(keys)(index, ignore)
