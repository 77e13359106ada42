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
from ...frontend.tensor import Tensor
from .._normalization import normalize
from ..layers import _ConvTransposeNd
from ..parameter import Parameter
from ._weight_norm import remove_reparametrization

__all__ = ["spectral_norm", "remove_spectral_norm", "SpectralNorm"]


class SpectralNorm:
    """The forward pre-hook that sets ``module.<name>`` to ``<name>_orig / sigma``."""

    def __init__(self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12):
        if n_power_iterations <= 0:
            raise ValueError(
                "Expected n_power_iterations to be positive, but "
                f"got n_power_iterations={n_power_iterations}"
            )
        self.name = name
        self.dim = dim
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        """``weight`` as a matrix whose rows run along ``dim``."""
        weight_mat = weight
        if self.dim != 0:
            weight_mat = weight_mat.permute(self.dim, *[d for d in range(weight_mat.ndim) if d != self.dim])
        return weight_mat.reshape(weight_mat.shape[0], -1)

    def compute_weight(self, module, do_power_iteration: bool) -> Tensor:
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            # As PyTorch: u and v are updated in place (the buffers themselves) and enter sigma as
            # constants; clones keep a later in-place update from touching this step's graph.
            with no_grad():
                for _ in range(self.n_power_iterations):
                    v = normalize(weight_mat.t().mv(u), dim=0, eps=self.eps, out=v)
                    u = normalize(weight_mat.mv(v), dim=0, eps=self.eps, out=u)
                u = u.clone()
                v = v.clone()
        sigma = u.dot(weight_mat.mv(v))
        return weight / sigma

    def __call__(self, module, inputs) -> None:
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))

    def remove(self, module) -> None:
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    @staticmethod
    def apply(module, name: str, n_power_iterations: int, dim: int, eps: float) -> "SpectralNorm":
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        if weight is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        with no_grad():
            height, width = fn.reshape_weight_to_matrix(weight).shape
            u = normalize(weight.new_empty(height).normal_(0, 1), dim=0, eps=fn.eps)
            v = normalize(weight.new_empty(width).normal_(0, 1), dim=0, eps=fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        # A plain attribute until the first forward, so that ``module.weight`` still reads.
        setattr(module, fn.name, weight.detach())
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        return fn


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
