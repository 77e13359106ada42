"""The public functions of the primitive ops that PyTorch's accelerator autocast runs in float32.

PyTorch's CUDA autocast (the list tensorplug follows on every device type but the CPU) computes
its transcendental functions, ``pow`` and the sums and scans of float16/bfloat16 inputs in
float32. These ops' common cases run in C (tensorplug/csrc/hotpath.cpp) and allocate their output
in the input's dtype, so the Autocast key cannot cast them below the function: their public
function and Tensor method are fronted by a dispatch step that applies the policy first
(autocast_hook.autocast_front; issue 13). Ops built on them inside tensorplug call the same
public functions, so a region's composite ops follow the policy too, as PyTorch's do.
"""
from __future__ import annotations

from ..autocast_hook import autocast_front
from . import reductions
from .elementwise import BINARY, UNARY

__all__ = ["FRONTED_UNARY", "FRONTS"]

#: The unary ops on PyTorch 2.13's CUDA "ops that can autocast to float32" list.
FRONTED_UNARY = ("acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log1p", "log2", "reciprocal",
                 "rsqrt", "sinh", "tan")

#: Public name -> fronted function (tp.<name> and Tensor.<name>).
FRONTS = {name: autocast_front(name, UNARY[name]) for name in FRONTED_UNARY}
# PyTorch's names: pow(input, exponent), and pow(self=2.0, exponent=t) for a number base.
FRONTS["pow"] = autocast_front("pow", BINARY["pow"], {"exponent": "other", "self": "input"})
for _name in ("sum", "cumsum", "cumprod"):
    FRONTS[_name] = autocast_front(_name, getattr(reductions, _name))
