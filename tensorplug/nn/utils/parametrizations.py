"""``tp.nn.utils.parametrizations``: ``weight_norm`` and ``spectral_norm`` written as
parametrizations (``tp.nn.utils.parametrize``), PyTorch's current forms of the legacy
``tp.nn.utils.weight_norm``/``spectral_norm`` hooks, with its names and state_dict keys.

>>> import tensorplug as tp
>>> layer = weight_norm(tp.nn.Linear(3, 2))
>>> [name for name, _ in layer.named_parameters()]
['bias', 'parametrizations.weight.original0', 'parametrizations.weight.original1']
"""
from __future__ import annotations

from ...frontend.autograd import no_grad
from ...frontend.tensor import Tensor
from .._normalization import normalize
from ..layers import _ConvTransposeNd
from ..module import Module
from . import parametrize
from ._weight_norm import _norm_except_dim

__all__ = ["weight_norm", "spectral_norm"]


class _WeightNorm(Module):
    """``original0`` is the magnitude g, ``original1`` the direction v: g * v / ||v||."""

    def __init__(self, dim: int | None = 0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return weight_v * (weight_g / _norm_except_dim(weight_v, self.dim))

    def right_inverse(self, weight: Tensor) -> tuple:
        return _norm_except_dim(weight, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Reparametrize ``module.<name>`` as g * v / ||v||, the norm over every dim but ``dim``
    (over the whole tensor when ``dim`` is None): g is
    ``module.parametrizations.<name>.original0``, v ``original1``. A state dict saved with the
    legacy ``nn.utils.weight_norm`` (keys ``<name>_g``, ``<name>_v``) loads too. Returns ``module``."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def _weight_norm_compat_hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                 error_msgs) -> None:
        # As PyTorch: rename the legacy keys to the parametrization's before this module loads.
        g_key = f"{prefix}{name}_g"
        v_key = f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            original0 = state_dict.pop(g_key)
            original1 = state_dict.pop(v_key)
            state_dict[f"{prefix}parametrizations.{name}.original0"] = original0
            state_dict[f"{prefix}parametrizations.{name}.original1"] = original1

    module._register_load_state_dict_pre_hook(_weight_norm_compat_hook)
    return module


class _SpectralNorm(Module):
    """``weight / sigma``, sigma the largest singular value of ``weight`` as a matrix with rows
    along ``dim``, estimated by power iteration with the buffers ``_u`` and ``_v``."""

    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12):
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError(
                f"Expected n_power_iterations to be positive, but got n_power_iterations={n_power_iterations}"
            )
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight.detach())
            height, width = weight_mat.shape
            with no_grad():
                u = weight_mat.new_empty(height).normal_(0, 1)
                v = weight_mat.new_empty(width).normal_(0, 1)
                self.register_buffer("_u", normalize(u, dim=0, eps=self.eps))
                self.register_buffer("_v", normalize(v, dim=0, eps=self.eps))
            # As PyTorch: start from a good estimate rather than from random vectors.
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.ndim) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        # u and v are updated in place (out=), so that a module sharing these buffers (a
        # replica) sees the update, as PyTorch relies on; they enter sigma as constants.
        with no_grad():
            for _ in range(n_power_iterations):
                self._u = normalize(weight_mat.mv(self._v), dim=0, eps=self.eps, out=self._u)
                self._v = normalize(weight_mat.t().mv(self._u), dim=0, eps=self.eps, out=self._v)

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        # Clones: the next training forward updates _u and _v in place, which must not touch
        # what this step's graph uses.
        u = self._u.clone()
        v = self._v.clone()
        sigma = u.dot(weight_mat.mv(v))
        return weight / sigma

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
