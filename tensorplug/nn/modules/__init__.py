"""PyTorch's ``torch.nn.modules`` path, for programs that spell it: ``tp.nn.modules.module``
holds ``Module`` and the global module hooks (``register_module_full_backward_hook``, ...);
``batchnorm``, ``instancenorm``, ``conv`` and ``loss`` the layer classes with the private bases
training code tests with ``isinstance`` or subclasses (``_BatchNorm``, ``_NormBase``, ``_ConvNd``,
``_Loss``, ``_WeightedLoss``); ``utils`` the ``_pair``-style helpers and
``consume_prefix_in_state_dict_if_present``. The layers themselves live in ``tp.nn``."""
from . import batchnorm, conv, instancenorm, loss, module, utils
from .module import Module

__all__ = ["Module", "batchnorm", "conv", "instancenorm", "loss", "module", "utils"]
