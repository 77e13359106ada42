"""The Autocast dispatch key's kernels: what ``tp.autocast`` does to an op's inputs.

While an autocast region is active in a thread, the Autocast key is in that thread's include set
(autocast_mode keeps it there), so every call resolves through this layer first. An op with a
casting policy gets a kernel on the key; every other op falls through it for free (its table
entry is the same kernel as without autocast). A kernel looks at the device type of the call's
first tensor: if autocast is enabled for that device type, it casts the floating inputs the policy
names with ordinary ``Tensor.to`` calls (recorded by autograd, so gradients flow back in the
inputs' own dtypes) and calls the op again with the Autocast key excluded, so the op's
decomposition and kernels see only the cast inputs and cast nothing again.

The policies are PyTorch's (its autocast op lists), mapped onto tensorplug's operators:

* ``lower``: matrix products, convolutions and recurrent layers run in the autocast dtype
  (float32 and the other half type are cast; float64 is left alone, as in PyTorch);
* ``fp32``: ops that lose too much in half precision (losses, reductions, transcendental
  functions, linear algebra) run in float32 (half-precision inputs are cast up);
* ``promote``: ops whose inputs must share one dtype run in the widest floating dtype among them;
* ``keep``: run in the inputs' dtypes, with nothing inside cast (a function PyTorch's device list
  leaves alone, though tensorplug writes it with ops that would be cast);
* ``refuse``: raise (binary_cross_entropy on accelerators, as PyTorch does).

The CPU has PyTorch's CPU lists; every other device type gets PyTorch's CUDA lists, the ones its
accelerators share. A weight cast to the autocast dtype (a float32 leaf that requires grad) is
cached until the outermost autocast region exits, as PyTorch does, so a layer used many times in
one forward casts its weights once.
"""
from __future__ import annotations

from .. import dispatcher
from ..dispatcher import AUTOCAST, MaskKeys, call, redispatch, register_kernel
from ..frontend import autocast_hook
from ..frontend import dtypes as _dt
from ..frontend.ops.autocast_fronts import FRONTED_UNARY
from ..frontend.tensor import Tensor
from . import _state
from .autocast_mode import get_autocast_dtype

__all__ = ["register_kernels", "POLICIES"]

_LOWER = ("matmul", "mm", "bmm", "baddbmm", "addbmm", "linear", "addmm", "einsum", "conv1d", "conv2d", "conv3d",
          "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "prelu")
_LOSSES = ("mse_loss", "nll_loss", "smooth_l1_loss", "cross_entropy")
_FFT = ("fft",)  # fft/__init__.py's three transforms, which check the dtype before their operators
# Functions of nn.functional that are not operators but are on PyTorch's lists (decorated with
# autocast_function): losses computed in float32 on every device (PyTorch 2.13's CPU and CUDA
# lists both name each of them).
_FP32_FUNCTIONS = ("binary_cross_entropy_with_logits", "l1_loss", "huber_loss", "kl_div", "poisson_nll_loss",
                   "soft_margin_loss", "triplet_margin_loss", "cosine_embedding_loss", "hinge_embedding_loss",
                   "margin_ranking_loss", "multi_margin_loss", "multilabel_margin_loss", "ctc_loss")
# Functions cast before their operators are dispatched, as they check their inputs' dtypes or
# allocate their output first: the matrix products and convolutions, the recurrent layers (one
# direction of one layer of nn.LSTM/GRU/RNN), tp.linalg's solvers and decompositions, tp.fft's
# transforms, the norms, quantile and prod.
_FUNCTIONS = _FP32_FUNCTIONS + ("mm", "bmm", "baddbmm", "addbmm", "addr", "addmm", "addmv", "prelu", "conv1d", "conv2d",
                                "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
                                "binary_cross_entropy", "bilinear", "layer_norm", "group_norm", "cosine_similarity",
                                "lstm", "gru",
                                "rnn", "linalg", "matmul", "prod", "fft", "quantile", "mv", "dot")
# The primitive ops and Python functions PyTorch's CUDA list runs in float32 besides the above:
# transcendental functions, pow (also x ** y, 2 ** x) and 2 / x, sums, scans and distances. The
# primitives' public functions are fronted by the policy before their C fast paths allocate
# (frontend/ops/autocast_fronts.py); out= and dtype= calls are not autocast, as in PyTorch.
_FP32_ACCELERATOR = FRONTED_UNARY + ("pow", "__rtruediv__", "sum", "cumsum", "cumprod", "dist", "pdist", "rms_norm")
_KEEP_ACCELERATOR = ("acosh", "asinh", "atanh", "digamma", "erfc", "trace", "avg_pool2d", "adaptive_avg_pool")
_FUNCTIONS += _FP32_ACCELERATOR + ("adaptive_avg_pool",)

#: Per device kind ("cpu", or "accelerator" for every other device type): op name -> policy.
POLICIES: dict[str, dict[str, str]] = {
    "cpu": {
        **dict.fromkeys(_LOWER + ("lstm", "rnn"), "lower"),
        **dict.fromkeys(("linalg",) + _LOSSES + _FFT + _FP32_FUNCTIONS + ("binary_cross_entropy", "prod", "quantile",
                                                                      "cdist", "trace"), "fp32"),
        # PyTorch's CPU autocast leaves these alone: they stay in their inputs' dtypes.
        **dict.fromkeys(("bilinear", "mv", "dot"), "keep"),
        # PyTorch's CPU GRU is not autocast: it stays in its inputs' dtype.
        "gru": "keep",
    },
    "accelerator": {
        **dict.fromkeys(_LOWER + ("addmv", "addr", "lstm", "gru", "rnn"), "lower"),
        **dict.fromkeys(("linalg",) + _LOSSES + _FFT + (
            "softplus", "layer_norm", "norm", "vector_norm_along", "cdist", "logsumexp", "softmax", "log_softmax",
            "prod", "group_norm", "cosine_similarity") + _FP32_FUNCTIONS + _FP32_ACCELERATOR, "fp32"),
        **dict.fromkeys(("bilinear", "dot"), "promote"),
        # Native kernels in PyTorch, which its list leaves in their inputs' dtype, but written
        # here with the float32 ops above (exp, log, sum, ...).
        **dict.fromkeys(_KEEP_ACCELERATOR, "keep"),
        "mv": "lower",
        # PyTorch refuses it on its GPUs: in half precision the log of a sigmoid's output saturates.
        "binary_cross_entropy": "refuse",
    },
}

_HALF = (_dt.float16, _dt.bfloat16)
_WITHOUT_AUTOCAST = MaskKeys(deny=AUTOCAST.mask)


def _first_tensor(args: tuple, kwargs: dict) -> Tensor | None:
    for value in (*args, *kwargs.values()):
        if isinstance(value, Tensor):
            return value
        if isinstance(value, (list, tuple)):
            for item in value:
                if isinstance(item, Tensor):
                    return item
    return None


def _cast_to_lower(t: Tensor, target: _dt.dtype, state) -> Tensor:
    """``t`` in the autocast dtype; a float32 leaf that requires grad (a weight) is cast once per
    autocast region (its cast is reused while its version is unchanged)."""
    cacheable = state.cache_enabled and t._dtype is _dt.float32 and t.requires_grad and t.grad_fn is None
    if not cacheable:
        return t.to(target)
    entry = state.cache.get(id(t))
    if entry is not None and entry[0] is t and entry[1] == t._version and entry[2]._dtype is target:
        return entry[2]
    cast = t.to(target)
    state.cache[id(t)] = (t, t._version, cast)  # holding t keeps its id from being reused
    return cast


def _map_tensors(args: tuple, kwargs: dict, device_type: str, convert) -> tuple[tuple, dict]:
    """Apply ``convert`` to every floating tensor on ``device_type`` among the arguments (also
    inside a list or tuple argument, as einsum's operands)."""

    def one(value):
        if isinstance(value, Tensor):
            if value._dtype.is_floating_point and value._device.type == device_type:
                return convert(value)
            return value
        if isinstance(value, (list, tuple)) and any(isinstance(item, Tensor) for item in value):
            return type(value)(one(item) for item in value)
        return value

    return tuple(one(a) for a in args), {k: one(v) for k, v in kwargs.items()}


def _cast_inputs(policy: str, args: tuple, kwargs: dict, device_type: str, state) -> tuple[tuple, dict]:
    if policy == "keep":
        return args, kwargs
    if policy == "lower":
        target = state.dtypes.get(device_type) or get_autocast_dtype(device_type)
        return _map_tensors(args, kwargs, device_type, lambda t: t if t._dtype in (_dt.float64, target)
                            else _cast_to_lower(t, target, state))
    if policy == "fp32":
        return _map_tensors(args, kwargs, device_type, lambda t: t.float() if t._dtype in _HALF else t)
    # promote: the widest floating dtype among the inputs.
    widest = None
    for value in (*args, *kwargs.values()):
        if isinstance(value, Tensor) and value._dtype.is_floating_point:
            widest = value._dtype if widest is None else _dt.promote_types(widest, value._dtype)
    return _map_tensors(args, kwargs, device_type, lambda t: t if t._dtype is widest else t.to(widest))


def _policy(name: str, args: tuple, kwargs: dict):
    """(policy, device type) for a call of ``name`` while the Autocast key is on, or None when
    autocast is not enabled for the device type of the call's first tensor."""
    first = _first_tensor(args, kwargs)
    if first is None:
        return None
    device_type = first._device.type
    if not _state.current.enabled.get(device_type, False):
        return None
    policy = POLICIES["cpu" if device_type == "cpu" else "accelerator"].get(name)
    return None if policy is None else (policy, device_type)


def _refuse(name: str, device_type: str):
    raise RuntimeError(
        f"{name}: unsafe to autocast on '{device_type}': in half precision the log of a sigmoid's output saturates. "
        f"Combine the sigmoid and the loss into binary_cross_entropy_with_logits (nn.BCEWithLogitsLoss), which is "
        f"safe to autocast, or compute this loss outside the autocast region"
    )


def _kernel_for(op):
    name = op.name

    def autocast_kernel(below: int, *args, **kwargs):
        found = _policy(name, args, kwargs)
        if found is None:
            return redispatch(op, below, *args, **kwargs)
        args, kwargs = _cast_inputs(found[0], args, kwargs, found[1], _state.current)
        with _WITHOUT_AUTOCAST:
            return call(op, *args, **kwargs)

    autocast_kernel.__name__ = f"autocast_{name}"
    return autocast_kernel


def _apply_to_function(name: str, fn, args: tuple, kwargs: dict):
    """Run the Python function ``fn`` under the policy POLICIES names for ``name``
    (frontend/autocast_hook.py calls this while the thread's Autocast key is on).

    ``fn`` always runs with the Autocast key excluded: either its policy applied to it as a whole,
    or its tensors are on a device type autocast leaves alone (or whose list does not name it,
    where PyTorch's kernel casts nothing inside either)."""
    found = _policy(name, args, kwargs)
    if found is not None:
        policy, device_type = found
        if policy == "refuse":
            _refuse(name, device_type)
        args, kwargs = _cast_inputs(policy, args, kwargs, device_type, _state.current)
    with _WITHOUT_AUTOCAST:
        return fn(*args, **kwargs)


def register_kernels() -> None:
    """Put a casting kernel on the Autocast key of every composite operator some policy names
    (once the ops exist: tensorplug/__init__ calls this after importing linalg and fft), and
    install the policy of the decorated Python functions.

    A primitive operator takes no kernel: it writes into an output its frontend function
    allocated in the inputs' dtype, so it is cast at that function (decorated through
    frontend/autocast_hook.py), before the output exists."""
    autocast_hook.install(_apply_to_function)
    operators = dispatcher.operators()
    for name in sorted(set(POLICIES["cpu"]) | set(POLICIES["accelerator"])):
        op = operators.get(name)
        if op is not None and op.decomposition is not None:
            register_kernel(op, AUTOCAST, _kernel_for(op))
        elif name not in _FUNCTIONS:
            raise AssertionError(f"autocast policy {name!r}: neither a composite operator nor a decorated function")
