"""Activation modules: thin wrappers over ``nn.functional`` that keep their arguments.

>>> import tensorplug as tp
>>> tp.nn.LeakyReLU(0.2)
LeakyReLU(negative_slope=0.2)
"""
from __future__ import annotations

from . import functional as F
from .module import Module

__all__ = [
    "ReLU", "ReLU6", "LeakyReLU", "ELU", "SELU", "CELU", "GELU", "SiLU", "Mish", "Softplus", "Hardtanh", "Hardsigmoid",
    "Hardswish", "Tanh", "Sigmoid", "LogSigmoid", "Softsign", "Tanhshrink", "Threshold", "GLU", "Softmax", "Softmin",
    "LogSoftmax",
]


class _Inplace(Module):
    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class ReLU(_Inplace):
    def forward(self, input):
        return F.relu(input, inplace=self.inplace)


class ReLU6(_Inplace):
    def forward(self, input):
        return F.relu6(input, inplace=self.inplace)


class SELU(_Inplace):
    def forward(self, input):
        return F.selu(input, inplace=self.inplace)


class SiLU(_Inplace):
    def forward(self, input):
        return F.silu(input, inplace=self.inplace)


class Mish(_Inplace):
    def forward(self, input):
        return F.mish(input, inplace=self.inplace)


class Hardsigmoid(_Inplace):
    def forward(self, input):
        return F.hardsigmoid(input, inplace=self.inplace)


class Hardswish(_Inplace):
    def forward(self, input):
        return F.hardswish(input, inplace=self.inplace)


class LeakyReLU(Module):
    def __init__(self, negative_slope: float = 0.01, inplace: bool = False):
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class ELU(Module):
    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input):
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class CELU(ELU):
    def forward(self, input):
        return F.celu(input, self.alpha, self.inplace)


class GELU(Module):
    def __init__(self, approximate: str = "none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Softplus(Module):
    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Hardtanh(Module):
    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
        super().__init__()
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}" + (", inplace=True" if self.inplace else "")


class Threshold(Module):
    def __init__(self, threshold: float, value: float, inplace: bool = False):
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}" + (", inplace=True" if self.inplace else "")


class Tanh(Module):
    def forward(self, input):
        return F.tanh(input)


class Sigmoid(Module):
    def forward(self, input):
        return F.sigmoid(input)


class LogSigmoid(Module):
    def forward(self, input):
        return F.logsigmoid(input)


class Softsign(Module):
    def forward(self, input):
        return F.softsign(input)


class Tanhshrink(Module):
    def forward(self, input):
        return F.tanhshrink(input)


class GLU(Module):
    def __init__(self, dim: int = -1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class _SoftmaxBase(Module):
    def __init__(self, dim: int | None = None):
        super().__init__()
        self.dim = dim

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax(_SoftmaxBase):
    def forward(self, input):
        return F.softmax(input, self.dim)


class Softmin(_SoftmaxBase):
    def forward(self, input):
        return F.softmin(input, self.dim)


class LogSoftmax(_SoftmaxBase):
    def forward(self, input):
        return F.log_softmax(input, self.dim)


# --- added for issue 13 ---------------------------------------------------------------------------
class PReLU(Module):
    """``F.prelu`` with a learned slope: one (``num_parameters=1``) or one per channel, each
    starting at ``init``."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None):
        from ..frontend.factories import empty
        from .parameter import Parameter

        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(empty(num_parameters, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        from . import init as _init

        _init.constant_(self.weight, self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class RReLU(Module):
    """``F.rrelu``: random negative slopes in [lower, upper] while training, their mean in eval."""

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}" + (", inplace=True" if self.inplace else "")


class Hardshrink(Module):
    def __init__(self, lambd: float = 0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return F.hardshrink(input, self.lambd)

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Softshrink(Hardshrink):
    def forward(self, input):
        return F.softshrink(input, self.lambd)


class Softmax2d(Module):
    """Softmax over the channels of a (N, C, H, W) or (C, H, W) input."""

    def forward(self, input):
        if input.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.ndim}D instead")
        return F.softmax(input, -3)


__all__ += ["PReLU", "RReLU", "Hardshrink", "Softshrink", "Softmax2d"]
