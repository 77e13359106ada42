"""``convert_conv2d_weight_memory_format`` / ``convert_conv3d_weight_memory_format``: lay out
the weights of every (transposed) convolution in a model in one memory format, as
``torch.nn.utils.convert_conv*_weight_memory_format``.

Only the layout changes: each weight stays the same Parameter object (an optimizer holding it
keeps working) with the same values, and the convolutions give the same outputs. Other modules
and tensors are left as they are.

>>> import tensorplug as tp
>>> model = tp.nn.Sequential(tp.nn.Conv2d(2, 3, 3), tp.nn.ReLU())
>>> model = convert_conv2d_weight_memory_format(model, tp.channels_last)
>>> model[0].weight.is_contiguous(memory_format=tp.channels_last)
True
"""
from __future__ import annotations

from typing import TypeVar

from ...frontend.autograd import no_grad
from ...frontend.memory_format import check_memory_format, preserve_format
from ..layers import Conv2d, Conv3d, ConvTranspose2d, ConvTranspose3d
from ..module import Module
from ..parameter import replace_tensor_data

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]

ModuleT = TypeVar("ModuleT", bound=Module)


def _relayout_weights(op: str, module: ModuleT, memory_format, conv_types: tuple) -> ModuleT:
    """Give the weight of every module of ``conv_types`` in ``module`` (itself included) the layout
    ``memory_format``, in place."""
    memory_format = check_memory_format(op, memory_format)
    if memory_format is preserve_format:
        # A layout to convert to is needed; PyTorch refuses it too ("Unsupported memory format").
        raise RuntimeError(f"{op}(): memory_format must be tensorplug.channels_last(_3d) or contiguous_format, "
                           "not preserve_format")
    for submodule in module.modules():
        if isinstance(submodule, conv_types) and submodule.weight is not None:
            with no_grad():
                replace_tensor_data(submodule.weight, submodule.weight.detach().clone(memory_format=memory_format))
    return module


def convert_conv2d_weight_memory_format(module: ModuleT, memory_format) -> ModuleT:
    """Lay out the weights of ``module``'s Conv2d and ConvTranspose2d layers in ``memory_format``
    (``tp.channels_last`` or ``tp.contiguous_format``), in place; returns ``module``."""
    return _relayout_weights("convert_conv2d_weight_memory_format", module, memory_format, (Conv2d, ConvTranspose2d))


def convert_conv3d_weight_memory_format(module: ModuleT, memory_format) -> ModuleT:
    """Lay out the weights of ``module``'s Conv3d and ConvTranspose3d layers in ``memory_format``
    (``tp.channels_last_3d`` or ``tp.contiguous_format``), in place; returns ``module``."""
    return _relayout_weights("convert_conv3d_weight_memory_format", module, memory_format, (Conv3d, ConvTranspose3d))
