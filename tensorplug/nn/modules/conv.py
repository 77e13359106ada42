"""``tp.nn.modules.conv``: PyTorch's import path for the convolution classes, their bases
(``isinstance(m, nn.modules.conv._ConvNd)`` picks every convolution, transposed ones too) and
the size helpers custom convolution layers import from it."""
from .. import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..layers import _ConvNd, _ConvTransposeNd
from ..lazy import (LazyConv1d, LazyConv2d, LazyConv3d, LazyConvTranspose1d, LazyConvTranspose2d,
                    LazyConvTranspose3d)
from .utils import _pair, _reverse_repeat_tuple, _single, _triple

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "LazyConv1d",
           "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d", "_ConvNd",
           "_ConvTransposeNd", "_single", "_pair", "_triple", "_reverse_repeat_tuple"]
