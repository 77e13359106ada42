"""The legacy ``nn.utils.weight_norm`` / ``remove_weight_norm``: a parameter ``name`` split into a
magnitude ``name_g`` and a direction ``name_v``, recombined as g * v / ||v|| before every forward
by a forward pre-hook (torch.nn.utils.weight_norm's names, shapes and state_dict keys).

>>> import tensorplug as tp
>>> import warnings
>>> with warnings.catch_warnings():
...     warnings.simplefilter("ignore", FutureWarning)
...     layer = weight_norm(tp.nn.Linear(3, 2))
>>> layer.weight_g.shape, layer.weight_v.shape
((2, 1), (2, 3))
"""
from __future__ import annotations

import warnings

from ...frontend.tensor import Tensor
from ..parameter import Parameter

__all__ = ["weight_norm", "remove_weight_norm", "WeightNorm"]


def _norm_except_dim(v: Tensor, dim: int) -> Tensor:
    """The 2-norm of ``v`` over every dim but ``dim``, kept with size 1 (dim -1: over all of v)."""
    if dim == -1:
        return v.norm(2)
    if dim == 0:
        return v.reshape(v.shape[0], -1).norm(2, dim=1).reshape((v.shape[0],) + (1,) * (v.ndim - 1))
    if dim == v.ndim - 1:
        return v.reshape(-1, v.shape[-1]).norm(2, dim=0).reshape((1,) * (v.ndim - 1) + (v.shape[-1],))
    return _norm_except_dim(v.transpose(0, dim), 0).transpose(0, dim)


class WeightNorm:
    """The forward pre-hook that recomputes ``module.<name>`` from ``<name>_g`` and ``<name>_v``."""

    def __init__(self, name: str, dim: int):
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module) -> Tensor:
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return v * (g / _norm_except_dim(v, self.dim))

    def __call__(self, module, inputs) -> None:
        setattr(module, self.name, self.compute_weight(module))

    def remove(self, module) -> None:
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.detach()))


def weight_norm(module, name: str = "weight", dim: int | None = 0):
    """Reparameterize ``module.<name>`` as ``<name>_g * <name>_v / ||<name>_v||`` (the norm over
    every dim but ``dim``; over the whole tensor when ``dim`` is None); returns ``module``.

    Deprecated in PyTorch in favour of ``parametrizations.weight_norm``; it warns as PyTorch does.
    """
    warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of `torch.nn.utils.parametrizations.weight_norm`.",
                  FutureWarning, stacklevel=2)
    for hook in module._forward_pre_hooks.values():
        if isinstance(hook, WeightNorm) and hook.name == name:
            raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
    weight = getattr(module, name)
    fn = WeightNorm(name, dim)
    del module._parameters[name]
    module.register_parameter(name + "_g", Parameter(_norm_except_dim(weight.detach(), fn.dim)))
    module.register_parameter(name + "_v", Parameter(weight.detach()))
    setattr(module, name, fn.compute_weight(module))
    module.register_forward_pre_hook(fn)
    return module


def remove_reparametrization(module, name: str, kind: type, label: str):
    """Remove ``module``'s forward pre-hook of type ``kind`` for parameter ``name`` (weight_norm's,
    spectral_norm's), letting the hook put the plain parameter back."""
    for key, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, kind) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"{label} of '{name}' not found in {module}")


def remove_weight_norm(module, name: str = "weight"):
    """Undo :func:`weight_norm`: ``<name>`` becomes one parameter again, holding g * v / ||v||."""
    return remove_reparametrization(module, name, WeightNorm, "weight_norm")
