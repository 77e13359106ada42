"""Activation modules: ``nn.functional`` calls that keep their arguments as attributes.

Each module declares its options (PyTorch's constructor arguments, in order, with their defaults)
once, in the class statement; the constructor, ``inspect.signature`` and the repr follow from
that declaration, and ``forward`` passes the options on by name.

>>> import tensorplug as tp
>>> tp.nn.LeakyReLU(0.2)
LeakyReLU(negative_slope=0.2)
"""
from __future__ import annotations

import inspect
import warnings

from . import functional as F
from .module import Module

__all__ = [
    "ReLU", "ReLU6", "LeakyReLU", "ELU", "SELU", "CELU", "GELU", "SiLU", "Mish", "Softplus", "Hardtanh", "Hardsigmoid",
    "Hardswish", "Tanh", "Sigmoid", "LogSigmoid", "Softsign", "Tanhshrink", "Threshold", "GLU", "Softmax", "Softmin",
    "LogSoftmax", "PReLU", "RReLU", "Hardshrink", "Softshrink", "Softmax2d",
]

_REQUIRED = inspect.Parameter.empty


class _Activation(Module):
    """A module around one functional activation.

    Subclasses name their options in the class statement, ``class LeakyReLU(_Activation,
    options={"negative_slope": 0.01, "inplace": False})``, and implement ``forward``. ``inplace``
    appears in the repr only when it is True, as in PyTorch.
    """

    _options: dict = {}
    _bare_repr = False  # Hardshrink(0.5): the single option's value without its name

    def __init_subclass__(cls, options: dict | None = None, bare_repr: bool | None = None, **kwargs):
        super().__init_subclass__(**kwargs)
        if options is not None:
            cls._options = dict(options)
        if bare_repr is not None:
            cls._bare_repr = bare_repr
        parameters = [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default)
                      for name, default in cls._options.items()]
        cls._option_signature = inspect.Signature(parameters, return_annotation=None)
        # What inspect.signature(cls) reports: the options, unless the class wrote its own
        # constructor (None sends inspect to that __init__ instead of a parent's signature).
        cls.__signature__ = None if "__init__" in cls.__dict__ else cls._option_signature

    def __init__(self, *args, **kwargs):
        super().__init__()
        name = type(self).__name__
        try:
            bound = self._option_signature.bind(*args, **kwargs)
        except TypeError as error:
            raise TypeError(f"{name}(): {error}") from None
        bound.apply_defaults()
        for option, value in bound.arguments.items():
            setattr(self, option, value)

    def extra_repr(self) -> str:
        shown = [(option, getattr(self, option)) for option in self._options
                 if option != "inplace" or self.inplace]
        if self._bare_repr:
            return ", ".join(str(value) for _, value in shown)
        return ", ".join(f"{option}={value!r}" if isinstance(value, str) else f"{option}={value}"
                         for option, value in shown)


_INPLACE = {"inplace": False}


class ReLU(_Activation, options=_INPLACE):
    def forward(self, input):
        return F.relu(input, inplace=self.inplace)


class SELU(_Activation, options=_INPLACE):
    def forward(self, input):
        return F.selu(input, inplace=self.inplace)


class SiLU(_Activation, options=_INPLACE):
    def forward(self, input):
        return F.silu(input, inplace=self.inplace)


class Mish(_Activation, options=_INPLACE):
    def forward(self, input):
        return F.mish(input, inplace=self.inplace)


class Hardsigmoid(_Activation, options=_INPLACE):
    def forward(self, input):
        return F.hardsigmoid(input, inplace=self.inplace)


class Hardswish(_Activation, options=_INPLACE):
    def forward(self, input):
        return F.hardswish(input, inplace=self.inplace)


class LeakyReLU(_Activation, options={"negative_slope": 0.01, "inplace": False}):
    def forward(self, input):
        return F.leaky_relu(input, negative_slope=self.negative_slope, inplace=self.inplace)


class ELU(_Activation, options={"alpha": 1.0, "inplace": False}):
    def forward(self, input):
        return F.elu(input, alpha=self.alpha, inplace=self.inplace)


class CELU(ELU):
    def forward(self, input):
        return F.celu(input, alpha=self.alpha, inplace=self.inplace)


class GELU(_Activation, options={"approximate": "none"}):
    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)


class Softplus(_Activation, options={"beta": 1.0, "threshold": 20.0}):
    def forward(self, input):
        return F.softplus(input, beta=self.beta, threshold=self.threshold)


class Hardtanh(_Activation, options={"min_val": -1.0, "max_val": 1.0, "inplace": False}):
    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False,
                 min_value: float | None = None, max_value: float | None = None):
        # min_value / max_value are PyTorch's old names, still accepted with a warning.
        for old, new in (("min_value", "min_val"), ("max_value", "max_val")):
            if locals()[old] is not None:
                warnings.warn(f"keyword argument `{old}` is deprecated and renamed to `{new}`", FutureWarning,
                              stacklevel=2)
        min_val = min_val if min_value is None else min_value
        max_val = max_val if max_value is None else max_value
        super().__init__(min_val, max_val, inplace)
        if self.max_val <= self.min_val:
            raise ValueError(f"Hardtanh: max_val ({self.max_val}) must be greater than min_val ({self.min_val})")

    def forward(self, input):
        return F.hardtanh(input, min_val=self.min_val, max_val=self.max_val, inplace=self.inplace)


class ReLU6(Hardtanh):
    """Hardtanh fixed to [0, 6] (a Hardtanh subclass, as in PyTorch)."""

    def __init__(self, inplace: bool = False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""

    def forward(self, input):
        return F.relu6(input, inplace=self.inplace)


class Threshold(_Activation, options={"threshold": _REQUIRED, "value": _REQUIRED, "inplace": False}):
    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, inplace=self.inplace)


class Tanh(_Activation):
    def forward(self, input):
        return F.tanh(input)


class Sigmoid(_Activation):
    def forward(self, input):
        return F.sigmoid(input)


class LogSigmoid(_Activation):
    def forward(self, input):
        return F.logsigmoid(input)


class Softsign(_Activation):
    def forward(self, input):
        return F.softsign(input)


class Tanhshrink(_Activation):
    def forward(self, input):
        return F.tanhshrink(input)


class Softmax2d(_Activation):
    """Softmax over the channels of a (N, C, H, W) or (C, H, W) input."""

    def forward(self, input):
        if input.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.ndim}D instead")
        return F.softmax(input, -3)


class GLU(_Activation, options={"dim": -1}):
    def forward(self, input):
        return F.glu(input, dim=self.dim)


class Softmax(_Activation, options={"dim": None}):
    def forward(self, input):
        return F.softmax(input, dim=self.dim)


class Softmin(_Activation, options={"dim": None}):
    def forward(self, input):
        return F.softmin(input, dim=self.dim)


class LogSoftmax(_Activation, options={"dim": None}):
    def forward(self, input):
        return F.log_softmax(input, dim=self.dim)


class Hardshrink(_Activation, options={"lambd": 0.5}, bare_repr=True):
    def forward(self, input):
        return F.hardshrink(input, lambd=self.lambd)


class Softshrink(Hardshrink):
    def forward(self, input):
        return F.softshrink(input, lambd=self.lambd)


class RReLU(_Activation, options={"lower": 1.0 / 8, "upper": 1.0 / 3, "inplace": False}):
    """``F.rrelu``: random negative slopes in [lower, upper] while training, their mean in eval."""

    def forward(self, input):
        return F.rrelu(input, lower=self.lower, upper=self.upper, training=self.training, inplace=self.inplace)


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
