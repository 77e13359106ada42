"""Power-average pooling (``lp_pool1d``, ``lp_pool2d``, ``lp_pool3d``): ``(sum over the window of x^p)^(1/p)``,
written as PyTorch writes it, over average pooling (so it runs wherever avg_pool does)."""
from __future__ import annotations

from ..frontend.ops.elementwise import UNARY
from ._activations import check_tensor, relu
from ._conv import ntuple
from ._pooling import avg_pool1d, avg_pool2d
from ._pooling3d import avg_pool3d

__all__ = ["lp_pool1d", "lp_pool2d", "lp_pool3d"]


def _root(mean, window: int, norm_type: float):
    # sign(mean) * relu(|mean|): a negative window sum (odd p) gives 0, as PyTorch's.
    return (UNARY["sign"](mean) * relu(UNARY["abs"](mean)) * window) ** (1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """The p-norm of each window of a (N, C, L) or (C, L) input.

    >>> F.lp_pool1d(tp.ones(1, 1, 4), 2, 2).tolist()
    [[[1.4142135381698608, 1.4142135381698608]]]
    """
    check_tensor("lp_pool1d", input)
    (kernel,) = ntuple("lp_pool1d", "kernel_size", kernel_size, 1)
    mean = avg_pool1d(input ** norm_type, kernel, stride, 0, ceil_mode)
    return _root(mean, kernel, float(norm_type))


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """The p-norm of each window of a (N, C, H, W) or (C, H, W) input."""
    check_tensor("lp_pool2d", input)
    kh, kw = ntuple("lp_pool2d", "kernel_size", kernel_size, 2)
    mean = avg_pool2d(input ** norm_type, (kh, kw), stride, 0, ceil_mode)
    return _root(mean, kh * kw, float(norm_type))


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """The p-norm of each window of a (N, C, D, H, W) or (C, D, H, W) input."""
    check_tensor("lp_pool3d", input)
    kd, kh, kw = ntuple("lp_pool3d", "kernel_size", kernel_size, 3)
    mean = avg_pool3d(input ** norm_type, (kd, kh, kw), stride, 0, ceil_mode)
    return _root(mean, kd * kh * kw, float(norm_type))
