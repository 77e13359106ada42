"""``tp.nn.utils.stateless``: where PyTorch 1.x kept ``functional_call``. It now lives in
``tp.func``; this one warns as PyTorch's does and runs :func:`tensorplug.func.functional_call`.

>>> import tensorplug as tp
>>> import warnings
>>> layer = tp.nn.Linear(2, 1)
>>> with warnings.catch_warnings():
...     warnings.simplefilter("ignore", FutureWarning)
...     out = functional_call(layer, {"weight": tp.ones(1, 2), "bias": tp.zeros(1)}, (tp.tensor([[1.0, 2.0]]),))
>>> out.tolist()
[[3.0]]
"""
from __future__ import annotations

import warnings
from typing import Any

from ...func import functional_call as _func_functional_call

__all__ = ["functional_call"]


def functional_call(module, parameters_and_buffers: dict, args: Any = None, kwargs: dict | None = None, *,
                    tie_weights: bool = True, strict: bool = False):
    """Deprecated spelling of ``tp.func.functional_call``: ``module(*args, **kwargs)`` with the named
    parameters and buffers replaced for the call."""
    warnings.warn(
        "`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and will be removed in a future "
        "version of PyTorch. Please use `torch.func.functional_call` instead which is a drop-in replacement.",
        FutureWarning, stacklevel=2,
    )
    return _func_functional_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict)
