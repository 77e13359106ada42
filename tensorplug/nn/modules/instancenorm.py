"""``tp.nn.modules.instancenorm``: PyTorch's import path for the instance-norm classes (their base
``_InstanceNorm`` shares ``_NormBase`` with batch norm but is not a ``_BatchNorm``)."""
from ..instancenorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d, _InstanceNorm
from ..layers import _NormBase
from ..lazy import LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d",
           "LazyInstanceNorm3d", "_InstanceNorm", "_NormBase"]
