"""The legacy ``nn.utils.spectral_norm`` / ``remove_spectral_norm``: a parameter ``name`` kept as
``name_orig`` and divided, before every forward, by its largest singular value sigma, estimated by
power iteration with the buffers ``name_u`` and ``name_v`` (torch.nn.utils.spectral_norm's names,
shapes and state_dict keys).

>>> import tensorplug as tp
>>> layer = spectral_norm(tp.nn.Linear(3, 2))
>>> layer.weight_orig.shape, layer.weight_u.shape, layer.weight_v.shape
((2, 3), (2,), (3,))
"""
from __future__ import annotations

from ...frontend.autograd import no_grad
from ..layers import _ConvTransposeNd
from ..parameter import Parameter
from . import _power_iteration as power
from ._weight_norm import remove_reparametrization

__all__ = ["spectral_norm", "remove_spectral_norm", "SpectralNorm"]


class SpectralNorm:
    """The forward pre-hook that sets ``module.<name>`` to ``<name>_orig / sigma``, refining the
    estimate of sigma by ``n_power_iterations`` steps first when the module is training."""

    def __init__(self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12):
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got n_power_iterations="
                             f"{n_power_iterations}")
        self.name, self.dim, self.n_power_iterations, self.eps = name, dim, n_power_iterations, eps

    def _stored(self, module) -> tuple:
        """The parameter and the two estimate buffers this hook keeps on ``module``."""
        return tuple(getattr(module, self.name + suffix) for suffix in ("_orig", "_u", "_v"))

    def reshape_weight_to_matrix(self, weight):
        """``weight`` as a matrix whose rows run along ``dim`` (PyTorch's public method)."""
        return power.as_matrix(weight, self.dim)

    def compute_weight(self, module, do_power_iteration: bool):
        """``<name>_orig / sigma``, refining u and v first when ``do_power_iteration``."""
        weight, u, v = self._stored(module)
        matrix = power.as_matrix(weight, self.dim)
        if do_power_iteration:
            power.refine(matrix, u, v, self.n_power_iterations, self.eps, u_first=False)
        return power.divided_by_sigma(weight, matrix, u, v)

    def __call__(self, module, inputs) -> None:
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))

    def remove(self, module) -> None:
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        for suffix in ("", "_u", "_v", "_orig"):
            delattr(module, self.name + suffix)
        module.register_parameter(self.name, Parameter(weight.detach()))

    @staticmethod
    def apply(module, name: str, n_power_iterations: int, dim: int, eps: float) -> "SpectralNorm":
        """Install the hook on ``module`` (``spectral_norm`` calls this)."""
        if any(isinstance(h, SpectralNorm) and h.name == name for h in module._forward_pre_hooks.values()):
            raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
        hook = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        if weight is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        u, v = power.random_unit_vectors(power.as_matrix(weight.detach(), dim), eps)
        del module._parameters[name]
        module.register_parameter(name + "_orig", weight)
        # A plain attribute until the first forward, so that ``module.<name>`` still reads.
        setattr(module, name, weight.detach())
        module.register_buffer(name + "_u", u)
        module.register_buffer(name + "_v", v)
        module.register_forward_pre_hook(hook)
        return hook


def spectral_norm(module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12, dim: int | None = None):
    """Reparameterize ``module.<name>`` as ``<name>_orig / sigma``, sigma its largest singular value
    (the tensor reshaped to a matrix with rows along ``dim``), estimated by ``n_power_iterations``
    steps of power iteration per training-mode forward; returns ``module``.

    ``dim`` defaults to 1 for ConvTranspose modules and 0 otherwise, as in PyTorch.
    """
    if dim is None:
        dim = 1 if isinstance(module, _ConvTransposeNd) else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module, name: str = "weight"):
    """Undo :func:`spectral_norm`: ``<name>`` becomes one parameter again, holding
    ``<name>_orig / sigma`` computed with the stored u and v."""
    return remove_reparametrization(module, name, SpectralNorm, "spectral_norm")
