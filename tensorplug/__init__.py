"""tensorplug: a PyTorch-style eager tensor library whose backends are plugins.

>>> import tensorplug as tp
>>> x = tp.ones(2, 3)
>>> (x + 1).sum().item()
12.0
"""
from __future__ import annotations

from . import backends, dispatcher
from .frontend import autograd
from .frontend import fallback as _fallback, kernel_checks as _kernel_checks  # the registry's CPU fallback and check mode
from .frontend import methods as _methods  # attaches Tensor methods and operators
from .frontend.autograd import enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad, set_grad_enabled
from .frontend.autograd.functional import is_anomaly_check_nan_enabled, is_anomaly_enabled
from .frontend.device import device, get_default_device, set_default_device
from .frontend.dtypes import (
    bfloat16, bool, cdouble, cfloat, complex64, complex128, double, dtype, float, float16, float32, float64,
    get_default_dtype, half, int, finfo, iinfo, int8, int16, int32, int64, long, promote_types, set_default_dtype, short, uint8,
    uint16, uint32, uint64, float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz,
)
from .frontend.factories import (
    arange, as_tensor, asarray, bernoulli, empty, empty_like, eye, from_numpy, frombuffer, full, full_like, linspace, logspace, ones,
    ones_like, rand, rand_like, randint, randint_like, randn, randn_like, randperm, tensor, zeros, zeros_like,
)
from .frontend.methods import add, clamp, clip, div, sub, true_divide
from .frontend.ops.copying import clone
from .frontend.storage import TypedStorage, UntypedStorage
from .frontend.memory_format import (
    channels_last, channels_last_3d, contiguous_format, memory_format, preserve_format,
)
from .frontend.ops.elementwise import ALIASES as _ELEMENTWISE_ALIASES, BINARY as _BINARY, COMPARE as _COMPARE, UNARY as _UNARY, where
from .frontend.ops.indexing import argwhere, gather, index_select, nonzero, scatter, scatter_add, take
from .frontend.ops.foreach import *  # noqa: E402,F401,F403  (torch._foreach_mul_, _foreach_lerp_, ...)
from .frontend.ops.linalg import bmm, dot, matmul, mm, mv
from .frontend.ops.autocast_fronts import FRONTS as _AUTOCAST_FRONTS
from .frontend.ops.reductions import all, amax, amin, any, argmax, argmin, cumprod, cumsum, max, mean, min, prod, sum
from .frontend.ops.joining import cat, stack
from .frontend.ops.math_ops import *  # noqa: F401,F403  (the op library lists its names in __all__)
from .frontend.ops.shaping import *  # noqa: F401,F403
from .frontend.ops.sorting import *  # noqa: F401,F403
from .frontend.ops.special_functions import *  # noqa: F401,F403
from .frontend.ops.zeta_functions import *  # noqa: F401,F403
from .frontend.ops.pointwise import *  # noqa: F401,F403
from .frontend.ops.float_classes import *  # noqa: F401,F403
from .frontend.ops.adjacent_floats import *  # noqa: F401,F403
from .frontend.ops.products import *  # noqa: F401,F403
from .frontend.ops.stacking import *  # noqa: F401,F403
from .frontend.ops.rearranging import *  # noqa: F401,F403
from .frontend.ops.scans import *  # noqa: F401,F403
from .frontend.ops.statistics import *  # noqa: F401,F403
from .frontend.ops.index_updates import *  # noqa: F401,F403
from .frontend.ops.view_scatters import *  # noqa: F401,F403
from .frontend.ops.type_queries import *  # noqa: F401,F403
from .frontend.ops.spellings import *  # noqa: F401,F403  (tp.pi, tp.arctan2, tp.typename, ...)
from .frontend.index_factories import *  # noqa: F401,F403
from .frontend.extra_factories import *  # noqa: F401,F403
from .frontend.samplers import *  # noqa: F401,F403
from .frontend.ops.closeness import allclose, equal, isclose
from .frontend.ops.diagonals import diag, trace
from .frontend.ops.differences import diff
from .frontend.ops.distance import cdist
from .frontend.ops.histograms import bincount, histc, histogram
from .frontend.ops.scatter_reduce import index_reduce, scatter_reduce
from .frontend.ops.kronecker import kron
from .frontend.ops.quantiles import nanquantile, quantile
from .frontend.ops.renorming import renorm
from .frontend.ops.sampling import multinomial
from .frontend.ops.searching import bucketize, searchsorted
from .frontend.size import Size
from .frontend.printing import set_printoptions
from .frontend.random import Generator, get_rng_state, initial_seed, manual_seed, seed, set_rng_state
from .frontend.random import default_generator as _default_generator

default_generator = _default_generator("cpu")  # the CPU's generator object, as torch.default_generator
from .frontend.shapes import broadcast_shapes
from .frontend.tensor import Tensor, is_tensor
from .frontend.views import (
    as_strided, broadcast_tensors, broadcast_to, diagonal, expand, flatten, movedim, narrow, permute,
    ravel, reshape, select, squeeze, swapaxes, t, transpose, unflatten, unsqueeze,
)

__version__ = "0.1.0"

globals().update(_UNARY)
globals().update({k: v for k, v in _BINARY.items() if k not in ("add", "sub", "div")})
globals().update(_COMPARE)
# exp, log, pow, sum, ... with autocast's float32 policy applied before their C fast paths (issue 13).
globals().update(_AUTOCAST_FRONTS)
from .frontend.ops.decimal_round import round  # noqa: E402  (round(decimals=...); decimals=0 is UNARY["round"])
multiply, subtract, divide = _BINARY["mul"], sub, div
greater, less, greater_equal, less_equal, not_equal = _COMPARE["gt"], _COMPARE["lt"], _COMPARE["ge"], _COMPARE["le"], _COMPARE["ne"]
globals().update({alias: globals()[name] for alias, name in _ELEMENTWISE_ALIASES.items()})


def set_num_threads(n: int) -> None:
    """Threads used by CPU kernels (OpenMP and OpenBLAS together)."""
    from .backends.cpu._load import load_kernels

    load_kernels().set_num_threads(n)


def get_num_threads() -> int:
    from .backends.cpu._load import load_kernels

    return load_kernels().get_num_threads()


def is_floating_point(input: Tensor) -> bool:
    return input.is_floating_point()


def numel(input: Tensor) -> int:
    return input.numel()


def is_complex(input: Tensor) -> bool:
    """Whether ``input`` has a complex dtype (complex64 or complex128)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"is_complex(): argument 'input' must be Tensor, not {type(input).__name__}")
    return input.is_complex()


from . import cpu, library, nn, optim, testing, utils  # noqa: E402  (need the names above)
from . import accelerator, amp, cuda, onnx  # noqa: E402  (PyTorch's first-lines surface; none loads a device)
from .amp import GradScaler  # noqa: E402  (also at the top level in PyTorch)
from .cuda import OutOfMemoryError  # noqa: E402  (what `except torch.OutOfMemoryError` catches)
from . import distributed  # noqa: E402  (MPI loads on init_process_group, not here)
from . import linalg, random, sparse, special  # noqa: E402
from .special import gammainc as igamma, gammaincc as igammac, i0  # noqa: E402  (PyTorch's top-level names)
# tp.distributions (26 ms of import on this project's machines) loads on first use, through
# __getattr__ below, like every other submodule not imported here.
from .linalg._aliases import (  # noqa: E402  (PyTorch's top-level names for tp.linalg's functions)
    chain_matmul, cholesky_inverse, cholesky_solve, det, geqrf, inverse, logdet, matrix_exp, orgqr, ormqr, pinverse,
    slogdet, svd, top_level_matrix_power as matrix_power,
)
from .compiler import compile  # noqa: E402  (the identity: tensorplug is eager)
from . import _dynamo, _inductor  # noqa: E402,F401  (their config flags, which scripts set; nothing compiles)
from . import hub, jit, multiprocessing  # noqa: E402  (jit is the identity, as compile; hub explains itself)
from . import func  # noqa: E402  (torch.func's transforms, over autograd)
from .func import vmap  # noqa: E402  (PyTorch's top-level torch.vmap is torch.func.vmap)
from . import profiler  # noqa: E402  (registers the Profiler key's fallback; costs nothing until a profile runs)
from .sparse import sparse_coo, sparse_coo_tensor, spmm, strided  # noqa: E402

sparse.attach()
from .frontend import dlpack as _dlpack  # noqa: E402
from .frontend.dlpack import from_dlpack  # noqa: E402

_dlpack.attach()
from .frontend.legacy import (  # noqa: E402  (PyTorch's legacy constructors)
    BFloat16Tensor, BoolTensor, ByteTensor, CharTensor, DoubleTensor, FloatTensor, HalfTensor, IntTensor, LongTensor,
    ShortTensor,
)
from ._settings import *  # noqa: E402,F401,F403  (use_deterministic_algorithms, set_float32_matmul_precision, ...)
from .amp import (  # noqa: E402
    autocast, clear_autocast_cache, get_autocast_dtype, is_autocast_cache_enabled, is_autocast_enabled,
    set_autocast_cache_enabled, set_autocast_dtype, set_autocast_enabled,
)
from .frontend.serialization import *  # noqa: E402,F401,F403  (save, load)
from .nn.functional import relu  # noqa: E402
from .nn._torch_names import *  # noqa: E402,F401,F403  (torch.softmax, torch.conv2d, torch.layer_norm, ...)
from .nn._aten_losses import *  # noqa: E402,F401,F403  (torch.kl_div, torch.cosine_embedding_loss, ...)

autograd.register_derivatives()
from .frontend.autograd import profiler as _autograd_profiler  # noqa: E402,F401  (tp.autograd.profiler, over tp.profiler)


def _alias_autograd_modules() -> None:
    # PyTorch's module paths (`from torch.autograd.graph import saved_tensors_hooks`): autograd
    # lives in frontend/, so its modules are registered under tp.autograd's name as well. Every one
    # of them is loaded by now, so none is ever loaded a second time under the other name.
    import sys

    real = autograd.__name__
    for name, module in list(sys.modules.items()):
        if name == real or name.startswith(real + "."):
            sys.modules[__name__ + ".autograd" + name[len(real):]] = module


_alias_autograd_modules()
from .frontend import complex as _complex  # noqa: E402  (the Complex key's kernels, after the ops exist)
from .frontend.complex import (  # noqa: E402
    angle, complex, conj, conj_physical, imag, is_conj, polar, real, resolve_conj, view_as_complex, view_as_real,
)

_complex.register()
from . import fft  # noqa: E402
from .fft._stft import istft, stft  # noqa: E402

Tensor.stft, Tensor.istft = stft, istft
from .amp import _casting as _autocast_casting  # noqa: E402

_autocast_casting.register_kernels()  # the Autocast key's kernels, once linalg's and fft's ops exist
from .array_api import _tensor_methods as _array_api_methods  # noqa: E402,F401  (Tensor.__array_namespace__, to_device)


def __getattr__(name: str):
    """``tp.npdev``, ``tp.opencl``, ...: the runtime module of an installed device type (streams,
    events, synchronize, memory statistics), made on first access. A real submodule of that name
    always wins (it is imported instead), so this never shadows one."""
    if name.startswith("_"):
        raise AttributeError(f"module 'tensorplug' has no attribute {name!r}")
    import importlib.util

    if importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return importlib.import_module(f"{__name__}.{name}")
    from ._device_runtime import device_module

    module = device_module(name)
    globals()[name] = module
    return module
