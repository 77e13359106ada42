"""``tp.nn``: neural-network building blocks with torch.nn's names and semantics.

``Module`` and ``Parameter`` are the base; layers, containers, recurrent and transformer layers
build on them; ``tp.nn.functional`` holds the stateless functions, ``tp.nn.init`` the
initializations and ``tp.nn.utils`` gradient clipping.

>>> import tensorplug as tp
>>> model = tp.nn.Sequential(tp.nn.Linear(4, 8), tp.nn.ReLU(), tp.nn.Linear(8, 2))
>>> model(tp.randn(3, 4)).shape
(3, 2)
"""
from . import functional, init, utils
from .activation import *  # noqa: F401,F403
from .activation import __all__ as _activation_all
from .containers import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .layers import *  # noqa: F401,F403
from .layers import __all__ as _layers_all
from .loss import *  # noqa: F401,F403
from .loss import __all__ as _loss_all
from .module import Module, RemovableHandle
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter
from .instancenorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from .padding import *  # noqa: F401,F403
from .padding import __all__ as _padding_all
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from ._multihead_attention import MultiheadAttention
from .adaptive import AdaptiveLogSoftmaxWithLoss
from ._linear_cross_entropy import LinearCrossEntropyLoss, LinearCrossEntropyOptions
from ._sync_batchnorm import SyncBatchNorm
from .transformer import (Transformer, TransformerDecoder, TransformerDecoderLayer, TransformerEncoder,
                          TransformerEncoderLayer)
from . import attention, modules, parallel
from .parallel import DataParallel
from .extra_layers import *  # noqa: F401,F403
from .extra_layers import __all__ as _extra_layers_all
from .lazy import *  # noqa: F401,F403
from .lazy import __all__ as _lazy_all

__all__ = (
    ["functional", "init", "utils", "Module", "RemovableHandle", "Parameter", "Buffer", "UninitializedParameter",
     "UninitializedBuffer", "Sequential", "ModuleList",
     "ModuleDict", "ParameterList", "ParameterDict", "RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell",
     "LSTMCell", "GRUCell", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "MultiheadAttention",
     "Transformer", "TransformerEncoderLayer", "TransformerEncoder", "TransformerDecoderLayer", "TransformerDecoder",
     "attention", "parallel", "DataParallel", "SyncBatchNorm", "AdaptiveLogSoftmaxWithLoss",
     "LinearCrossEntropyLoss", "LinearCrossEntropyOptions"]
    + _activation_all + _layers_all + _loss_all + _padding_all + _extra_layers_all
    + _lazy_all
)
