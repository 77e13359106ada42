"""``tp.nn.utils.prune``: zero out entries or channels of a module's tensor through a mask, with
``torch.nn.utils.prune``'s classes, functions and state_dict keys.

Pruning ``module.<name>`` moves the parameter to ``<name>_orig``, stores the mask as the buffer
``<name>_mask`` and installs the pruning method as a forward pre-hook that sets the plain
attribute ``module.<name> = <name>_orig * <name>_mask`` before every forward. The optimizer keeps
updating the original values; the forward only sees the kept ones. Pruning the same tensor again
prunes among what the mask still keeps (entries for unstructured methods, channels along ``dim``
for structured ones), and the hook becomes a :class:`PruningContainer` holding every method
applied. :func:`remove` makes the pruning permanent.

``amount`` is a count (int) or a fraction in [0, 1] of the entries (channels) still kept; a
fraction is rounded with Python's ``round`` (0.5 * 5 prunes 2).

Ties: :class:`L1Unstructured` prunes the entries of lowest magnitude and :class:`LnStructured`
keeps the channels of largest norm, both picked with tensorplug's ``topk``, which among equal
values prefers the lowest indices (pruned first by L1Unstructured, kept first by LnStructured).
PyTorch's ``topk`` gives no order among ties, so the two libraries may pick different entries of
equal importance; the number pruned is the same.

>>> import tensorplug as tp
>>> layer = tp.nn.Linear(2, 3)
>>> with tp.no_grad():
...     _ = layer.weight.copy_(tp.tensor([[1.0, -5.0], [0.5, 2.0], [-3.0, 4.0]]))
>>> _ = l1_unstructured(layer, "weight", amount=2)
>>> layer.weight.tolist()
[[0.0, -5.0], [0.0, 2.0], [-3.0, 4.0]]
>>> sorted(layer.state_dict())
['bias', 'weight_mask', 'weight_orig']
"""
from __future__ import annotations

import abc
import numbers
from collections.abc import Iterable

from ...frontend.autograd import no_grad
from ...frontend.factories import ones_like, rand, zeros_like
from ...frontend.memory_format import contiguous_format
from ...frontend.ops.joining import cat
from ...frontend.tensor import Tensor
from ..module import Module
from ..parameter import replace_tensor_data

__all__ = [
    "BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured", "L1Unstructured", "RandomStructured",
    "LnStructured", "CustomFromMask", "identity", "random_unstructured", "l1_unstructured", "random_structured",
    "ln_structured", "global_unstructured", "custom_from_mask", "remove", "is_pruned",
]


# --- amount and dim checks ------------------------------------------------------------------

def _check_amount(amount) -> None:
    """At construction: ``amount`` is a non-negative count or a fraction in [0, 1]."""
    # bool is an int to Python, but pruning "True entries" is a caller's mistake.
    if isinstance(amount, bool) or not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if isinstance(amount, numbers.Integral):
        out_of_range = amount < 0
    else:
        out_of_range = not 0.0 <= float(amount) <= 1.0
    if out_of_range:
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a non-negative integer")


def _count_to_prune(amount, available: int) -> int:
    """How many of ``available`` entries (channels) ``amount`` prunes; a count above it raises."""
    if isinstance(amount, numbers.Integral):
        if amount > available:
            raise ValueError(f"amount={amount} should be smaller than the number of parameters to prune={available}")
        return int(amount)
    return round(float(amount) * available)


def _check_multidimensional(t: Tensor) -> None:
    if t.dim() <= 1:
        raise ValueError(
            f"Structured pruning can only be applied to multidimensional tensors. Found tensor of shape "
            f"{tuple(t.shape)} with {t.dim()} dims"
        )


def _channel_dim(dim: int, t: Tensor) -> int:
    """``dim`` as a non-negative dim of ``t``, or IndexError."""
    if not -t.dim() <= dim < t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {tuple(t.shape)}")
    return dim % t.dim()


# --- the masks ------------------------------------------------------------------------------

def _zero_lowest_entries(scores: Tensor, default_mask: Tensor, amount) -> Tensor:
    """``default_mask`` with the entries of the ``amount`` lowest ``scores`` set to 0."""
    count = _count_to_prune(amount, scores.numel())
    mask = default_mask.clone(memory_format=contiguous_format)
    if count:
        lowest = scores.reshape(-1).topk(count, largest=False).indices
        mask.view(-1).index_fill_(0, lowest, 0)
    return mask


def _keep_channels(t: Tensor, default_mask: Tensor, amount, dim: int, channel_scores) -> Tensor:
    """A mask keeping, along ``dim``, the channels of highest ``channel_scores(t, dim)`` (a 1-D
    tensor, one score per channel) once ``amount`` of them are pruned; and-ed with ``default_mask``."""
    _check_multidimensional(t)
    dim = _channel_dim(dim, t)
    channels = t.shape[dim]
    count = _count_to_prune(amount, channels)
    if count == 0:
        return default_mask.clone()
    kept = channel_scores(t, dim).topk(channels - count).indices
    mask = zeros_like(t)
    mask.index_fill_(dim, kept, 1)
    return mask * default_mask.to(dtype=mask.dtype)


def _random_channel_scores(t: Tensor, dim: int) -> Tensor:
    return rand(t.shape[dim], device=t.device)


def _prune_among_kept(method: "BasePruningMethod", t: Tensor, default_mask: Tensor) -> Tensor:
    """The mask after ``method`` prunes only what ``default_mask`` still keeps: the entries equal to
    1 (unstructured), the channels along ``method.dim`` not wholly zero (structured), or the whole
    tensor (global)."""
    kind = getattr(method, "PRUNING_TYPE", None)
    mask = default_mask.to(dtype=t.dtype).clone(memory_format=contiguous_format)
    if kind == "unstructured":
        kept = (default_mask.reshape(-1) == 1).nonzero().reshape(-1)
        among_kept = method.compute_mask(t.reshape(-1).index_select(0, kept), default_mask.reshape(-1).index_select(0, kept))
        mask.view(-1).index_copy_(0, kept, among_kept.to(dtype=mask.dtype))
    elif kind == "structured":
        _check_multidimensional(t)
        dim = _channel_dim(method.dim, t)
        other_dims = [d for d in range(t.dim()) if d != dim]
        live = (default_mask.abs().sum(dim=other_dims) != 0).nonzero().reshape(-1)
        among_live = method.compute_mask(t.index_select(dim, live), default_mask.index_select(dim, live))
        mask.index_copy_(dim, live, among_live.to(dtype=mask.dtype))
    elif kind == "global":
        mask = method.compute_mask(t, default_mask).to(dtype=mask.dtype)
    else:
        raise ValueError(f"Unrecognized PRUNING_TYPE {kind}")
    return mask


# --- installing a method on a module -----------------------------------------------------------

def _pruning_hooks(module: Module, name: str) -> list:
    """(key, method) of each pruning hook of ``module`` acting on ``name``."""
    return [(key, hook) for key, hook in module._forward_pre_hooks.items()
            if isinstance(hook, BasePruningMethod) and hook._tensor_name == name]


def _install(module: Module, name: str, method: "BasePruningMethod", importance_scores: Tensor | None) -> "BasePruningMethod":
    """Prune ``module.<name>`` with ``method`` (composed with any earlier pruning of it); returns
    the hook now installed. Every check and the mask come before the module changes, so a bad
    call leaves it as it was."""
    method._tensor_name = name
    earlier = _pruning_hooks(module, name)
    if len(earlier) > 1:
        raise ValueError(f"Avoid adding multiple pruning hooks to the same tensor {name} of module {module}. "
                         "Use a PruningContainer.")
    current = getattr(module, name)
    if importance_scores is None:
        importance_scores = current
    elif tuple(importance_scores.shape) != tuple(current.shape):
        raise ValueError(f"importance_scores should have the same shape as parameter {name} of {module}, got "
                         f"{tuple(importance_scores.shape)} vs {tuple(current.shape)}")
    with no_grad():
        if earlier:
            mask = _prune_among_kept(method, importance_scores.detach(), module._buffers[name + "_mask"].detach())
        else:
            mask = method.compute_mask(importance_scores.detach(), ones_like(current.detach()))
    if earlier:
        key, previous = earlier[0]
        hook = previous if isinstance(previous, PruningContainer) else PruningContainer(previous)
        hook.add_pruning_method(method)
        # Re-registered below, so the container runs after the module's other pre-hooks, as in PyTorch.
        del module._forward_pre_hooks[key]
        module._hook_options.pop(key, None)
    else:
        hook = method
        module.register_parameter(name + "_orig", current)
        del module._parameters[name]
    module.register_buffer(name + "_mask", mask)
    setattr(module, name, hook.apply_mask(module))
    module.register_forward_pre_hook(hook)
    return hook


# --- the methods ----------------------------------------------------------------------------

class BasePruningMethod(abc.ABC):
    """The base of pruning methods: subclasses define :meth:`compute_mask` and a ``PRUNING_TYPE``
    ("unstructured", "structured" with a ``dim``, or "global")."""

    # The tensor this method prunes, set when it is applied to a module.
    _tensor_name: str | None = None

    def __call__(self, module: Module, inputs) -> None:
        """The forward pre-hook: set ``module.<name>`` to the original tensor times the mask."""
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abc.abstractmethod
    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The mask for importance scores ``t``, keeping nothing that ``default_mask`` prunes."""

    def _applied_name(self) -> str:
        if self._tensor_name is None:
            raise AttributeError(f"{type(self).__name__} has not been applied to a module tensor (apply() sets it)")
        return self._tensor_name

    def apply_mask(self, module: Module) -> Tensor:
        """``module.<name>_orig * module.<name>_mask``: the pruned tensor."""
        name = self._applied_name()
        return getattr(module, name + "_orig") * getattr(module, name + "_mask")

    @classmethod
    def apply(cls, module: Module, name: str, *args, importance_scores: Tensor | None = None, **kwargs) -> "BasePruningMethod":
        """Prune ``module.<name>`` with ``cls(*args, **kwargs)``; returns the installed hook."""
        return _install(module, name, cls(*args, **kwargs), importance_scores)

    def prune(self, t: Tensor, default_mask: Tensor | None = None, importance_scores: Tensor | None = None) -> Tensor:
        """``t`` times this method's mask (computed from ``importance_scores``, else from ``t``)."""
        scores = t if importance_scores is None else importance_scores
        if tuple(scores.shape) != tuple(t.shape):
            raise ValueError(f"importance_scores should have the same shape as tensor t, got "
                             f"{tuple(scores.shape)} vs {tuple(t.shape)}")
        with no_grad():
            mask = self.compute_mask(scores.detach(), ones_like(t.detach()) if default_mask is None else default_mask)
        return t * mask

    def remove(self, module: Module) -> None:
        """Make the pruning permanent: ``<name>`` becomes a parameter again (the ``<name>_orig``
        object, so optimizers holding it keep working) holding the pruned values; ``<name>_orig``
        and ``<name>_mask`` go away."""
        name = self._applied_name()
        with no_grad():
            pruned = self.apply_mask(module)
        if name in module.__dict__:
            delattr(module, name)
        original = module._parameters[name + "_orig"]
        replace_tensor_data(original, pruned)
        del module._parameters[name + "_orig"]
        del module._buffers[name + "_mask"]
        setattr(module, name, original)


class PruningContainer(BasePruningMethod):
    """The pruning methods applied, in turn, to one tensor; its mask is the last method's,
    computed among the entries (channels) the earlier ones kept."""

    def __init__(self, *args):
        self._pruning_methods: tuple = ()
        self._tensor_name = None
        # One method, one iterable of methods (another container included), or several methods.
        methods = args[0] if len(args) == 1 and isinstance(args[0], Iterable) else args
        for method in methods:
            self.add_pruning_method(method)

    def add_pruning_method(self, method: BasePruningMethod) -> None:
        """Append ``method``, which must act on the same tensor as the ones already held."""
        if not isinstance(method, BasePruningMethod):
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if self._tensor_name is None and not self._pruning_methods:
            self._tensor_name = method._tensor_name
        elif method._tensor_name != self._tensor_name:
            raise ValueError(f"Can only add pruning methods acting on the parameter named '{self._tensor_name}' to "
                             f"PruningContainer. Found '{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, index):
        return self._pruning_methods[index]

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The last method's mask, computed among what ``default_mask`` keeps."""
        if not self._pruning_methods:
            raise ValueError("PruningContainer.compute_mask(): the container holds no pruning method")
        return _prune_among_kept(self._pruning_methods[-1], t, default_mask)


class Identity(BasePruningMethod):
    """Prunes nothing: the mask is all ones (the reparametrization without pruning)."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """``default_mask`` unchanged."""
        return default_mask

    @classmethod
    def apply(cls, module: Module, name: str) -> BasePruningMethod:
        """Install the identity pruning on ``module.<name>``."""
        return super().apply(module, name)


class RandomUnstructured(BasePruningMethod):
    """Prunes ``amount`` entries chosen uniformly at random (tensorplug's generator)."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount) -> None:
        _check_amount(amount)
        self.amount = amount

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """``default_mask`` with ``amount`` random entries set to 0."""
        return _zero_lowest_entries(rand(t.shape, device=t.device), default_mask, self.amount)

    @classmethod
    def apply(cls, module: Module, name: str, amount) -> BasePruningMethod:
        """Prune ``amount`` random entries of ``module.<name>``."""
        return super().apply(module, name, amount=amount)


class L1Unstructured(BasePruningMethod):
    """Prunes the ``amount`` entries of smallest absolute value."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount) -> None:
        _check_amount(amount)
        self.amount = amount

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """``default_mask`` with the ``amount`` entries of smallest ``|t|`` set to 0."""
        return _zero_lowest_entries(t.abs(), default_mask, self.amount)

    @classmethod
    def apply(cls, module: Module, name: str, amount, importance_scores: Tensor | None = None) -> BasePruningMethod:
        """Prune the ``amount`` entries of ``module.<name>`` of smallest magnitude (of
        ``importance_scores`` when given)."""
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class RandomStructured(BasePruningMethod):
    """Prunes ``amount`` whole channels along ``dim``, chosen uniformly at random."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim: int = -1) -> None:
        _check_amount(amount)
        self.amount = amount
        self.dim = dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """Zero ``amount`` random channels of ``t`` along ``dim``, and-ed with ``default_mask``."""
        return _keep_channels(t, default_mask, self.amount, self.dim, _random_channel_scores)

    @classmethod
    def apply(cls, module: Module, name: str, amount, dim: int = -1) -> BasePruningMethod:
        """Prune ``amount`` random channels of ``module.<name>`` along ``dim``."""
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prunes the ``amount`` channels along ``dim`` of smallest ``n``-norm (``n`` as ``Tensor.norm``'s
    ``p``: a number, ``inf``, ``-inf`` or ``"fro"``)."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, n, dim: int = -1) -> None:
        _check_amount(amount)
        if n != "fro" and (isinstance(n, bool) or not isinstance(n, numbers.Real)):
            raise ValueError(f"LnStructured: n must be a number, inf, -inf or 'fro' (the vector norm of each channel), got {n!r}")
        self.amount = amount
        self.n = n
        self.dim = dim

    def _channel_norms(self, t: Tensor, dim: int) -> Tensor:
        other_dims = [d for d in range(t.dim()) if d != dim]
        # "fro" of one channel's entries is their 2-norm (Tensor.norm wants a matrix for "fro" with dims).
        return t.norm(p=2 if self.n == "fro" else self.n, dim=other_dims)

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """Zero the ``amount`` channels of smallest norm along ``dim``, and-ed with ``default_mask``."""
        return _keep_channels(t, default_mask, self.amount, self.dim, self._channel_norms)

    @classmethod
    def apply(cls, module: Module, name: str, amount, n, dim, importance_scores: Tensor | None = None) -> BasePruningMethod:
        """Prune the ``amount`` channels of ``module.<name>`` along ``dim`` of smallest ``n``-norm
        (of ``importance_scores`` when given)."""
        return super().apply(module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes where the given ``mask`` is 0."""

    PRUNING_TYPE = "global"

    def __init__(self, mask: Tensor) -> None:
        self.mask = mask

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """``default_mask * mask``."""
        if tuple(default_mask.shape) != tuple(self.mask.shape):
            raise ValueError(f"CustomFromMask: default_mask shape {tuple(default_mask.shape)} must match self.mask "
                             f"shape {tuple(self.mask.shape)}")
        return default_mask * self.mask.to(device=default_mask.device, dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module: Module, name: str, mask: Tensor) -> BasePruningMethod:
        """Prune ``module.<name>`` where ``mask`` is 0."""
        return super().apply(module, name, mask=mask)


# --- the functions ----------------------------------------------------------------------------

def identity(module: Module, name: str) -> Module:
    """Reparametrize ``module.<name>`` as ``<name>_orig * <name>_mask`` with a mask of ones; returns ``module``."""
    Identity.apply(module, name)
    return module


def random_unstructured(module: Module, name: str, amount) -> Module:
    """Prune ``amount`` random entries of ``module.<name>``; returns ``module``."""
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module: Module, name: str, amount, importance_scores: Tensor | None = None) -> Module:
    """Prune the ``amount`` entries of ``module.<name>`` of smallest magnitude; returns ``module``."""
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module: Module, name: str, amount, dim: int) -> Module:
    """Prune ``amount`` random channels of ``module.<name>`` along ``dim``; returns ``module``."""
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module: Module, name: str, amount, n, dim: int, importance_scores: Tensor | None = None) -> Module:
    """Prune the ``amount`` channels of ``module.<name>`` along ``dim`` of smallest ``n``-norm; returns ``module``."""
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def custom_from_mask(module: Module, name: str, mask: Tensor) -> Module:
    """Prune ``module.<name>`` where ``mask`` is 0; returns ``module``."""
    CustomFromMask.apply(module, name, mask)
    return module


def global_unstructured(parameters, pruning_method, importance_scores: dict | None = None, **kwargs) -> None:
    """Prune the ``(module, name)`` tensors of ``parameters`` as one: ``pruning_method(**kwargs)``
    (an unstructured method) chooses among all their entries together, so a fraction ``amount``
    may prune some tensors more than others. ``importance_scores`` maps ``(module, name)`` to
    scores used in place of the tensor."""
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    if importance_scores is None:
        importance_scores = {}
    elif not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    pairs = list(parameters)
    if not pairs:
        raise ValueError("global_unstructured(): parameters holds no (module, name) pair")
    method = pruning_method(**kwargs)
    if getattr(method, "PRUNING_TYPE", None) != "unstructured":
        raise TypeError(f'Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method '
                        f"{pruning_method} of type {getattr(method, 'PRUNING_TYPE', None)}")
    tensors = [getattr(module, name) for module, name in pairs]
    scores, masks = [], []
    for (module, name), current in zip(pairs, tensors):
        score = importance_scores.get((module, name), current)
        if tuple(score.shape) != tuple(current.shape):
            raise ValueError(f"global_unstructured(): importance_scores for {name} of {module} have shape "
                             f"{tuple(score.shape)}, the tensor {tuple(current.shape)}")
        scores.append(score.detach().reshape(-1))
        earlier_mask = module._buffers.get(name + "_mask")
        masks.append((ones_like(current.detach()) if earlier_mask is None else earlier_mask).reshape(-1))
    with no_grad():
        combined = _prune_among_kept(method, cat(scores), cat(masks))
    start = 0
    for (module, name), current in zip(pairs, tensors):
        custom_from_mask(module, name, combined[start:start + current.numel()].reshape(current.shape))
        start += current.numel()


def remove(module: Module, name: str) -> Module:
    """Make the pruning of ``module.<name>`` permanent (see :meth:`BasePruningMethod.remove`); returns ``module``."""
    for key, hook in _pruning_hooks(module, name):
        hook.remove(module)
        del module._forward_pre_hooks[key]
        module._hook_options.pop(key, None)
        return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed")


def is_pruned(module: Module) -> bool:
    """Whether ``module`` or any of its submodules has a pruning hook."""
    return any(isinstance(hook, BasePruningMethod)
               for submodule in module.modules() for hook in submodule._forward_pre_hooks.values())
