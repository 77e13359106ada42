"""``tp.nn.utils.parametrizations``: ``weight_norm`` and ``spectral_norm`` written as
parametrizations (``tp.nn.utils.parametrize``), PyTorch's current forms of the legacy
``tp.nn.utils.weight_norm``/``spectral_norm`` hooks, with its names and state_dict keys; and
``orthogonal`` (tensorplug/nn/utils/_orthogonal.py).

>>> import tensorplug as tp
>>> layer = weight_norm(tp.nn.Linear(3, 2))
>>> [name for name, _ in layer.named_parameters()]
['bias', 'parametrizations.weight.original0', 'parametrizations.weight.original1']
"""
from __future__ import annotations

from ...frontend.tensor import Tensor
from .._normalization import normalize
from ..layers import _ConvTransposeNd
from ..module import Module
from . import _power_iteration as power
from . import parametrize
from ._orthogonal import orthogonal
from ._weight_norm import _norm_except_dim

__all__ = ["weight_norm", "spectral_norm", "orthogonal"]


class _WeightNorm(Module):
    """``original0`` is the magnitude g, ``original1`` the direction v: g * v / ||v||."""

    def __init__(self, dim: int | None = 0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return weight_v * (weight_g / _norm_except_dim(weight_v, self.dim))

    def right_inverse(self, weight: Tensor) -> tuple:
        return _norm_except_dim(weight, self.dim), weight


def _legacy_weight_norm_keys(name: str):
    """A load_state_dict pre-hook that renames the legacy ``nn.utils.weight_norm`` keys
    (``<name>_g``, ``<name>_v``) to this parametrization's before the module loads them."""

    def rename(state_dict, prefix, *unused) -> None:
        legacy = (f"{prefix}{name}_g", f"{prefix}{name}_v")
        if all(key in state_dict for key in legacy):
            for i, key in enumerate(legacy):
                state_dict[f"{prefix}parametrizations.{name}.original{i}"] = state_dict.pop(key)

    return rename


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Reparametrize ``module.<name>`` as g * v / ||v||, the norm over every dim but ``dim``
    (over the whole tensor when ``dim`` is None): g is
    ``module.parametrizations.<name>.original0``, v ``original1``. A state dict saved with the
    legacy ``nn.utils.weight_norm`` (keys ``<name>_g``, ``<name>_v``) loads too. Returns ``module``."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    module._register_load_state_dict_pre_hook(_legacy_weight_norm_keys(name))
    return module


class _SpectralNorm(Module):
    """``weight / sigma``, sigma the largest singular value of ``weight`` seen as a matrix whose
    rows run along ``dim``, estimated by power iteration on the buffers ``_u`` (left singular
    vector) and ``_v`` (right); a 1-D weight is simply normalized."""

    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12):
        super().__init__()
        rank = weight.ndim
        if not -rank <= dim < rank:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{rank}, {rank - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError(
                f"Expected n_power_iterations to be positive, but got n_power_iterations={n_power_iterations}")
        self.dim = dim % rank
        self.eps = eps
        if rank == 1:
            return
        self.n_power_iterations = n_power_iterations
        matrix = power.as_matrix(weight.detach(), self.dim)
        u, v = power.random_unit_vectors(matrix, eps)
        self.register_buffer("_u", u)
        self.register_buffer("_v", v)
        # Fifteen warm-up steps (PyTorch's choice): the first forward starts from a good
        # estimate of sigma, not from random vectors.
        power.refine(matrix, self._u, self._v, 15, eps, u_first=True)

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return normalize(weight, dim=0, eps=self.eps)
        matrix = power.as_matrix(weight, self.dim)
        if self.training:
            power.refine(matrix, self._u, self._v, self.n_power_iterations, self.eps, u_first=True)
        return power.divided_by_sigma(weight, matrix, self._u, self._v)

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: int | None = None) -> Module:
    """Reparametrize ``module.<name>`` as ``original / sigma``, sigma its largest singular value,
    estimated by ``n_power_iterations`` steps of power iteration at each access in training mode
    (none in eval mode). ``dim`` defaults to 1 for ConvTranspose modules and 0 otherwise. Returns
    ``module``."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if isinstance(module, _ConvTransposeNd) else 0
    return parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
