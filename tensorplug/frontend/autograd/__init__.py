"""Autograd: reverse-mode differentiation as a layer of the dispatcher (the Autograd key).

``register_derivatives()`` (called by ``import tensorplug`` once every op is defined) makes
the derivative of each differentiable primitive its Autograd kernel, so gradients work the same
on every backend.
"""
from .derivatives import register_all as register_derivatives
from .function import Function, FunctionCtx
from .functional import backward, detect_anomaly, grad, gradcheck, gradgradcheck, set_detect_anomaly
from .grad_mode import enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad, set_grad_enabled
from .graph import Node
from .variable import Variable

__all__ = [
    "Function", "FunctionCtx", "Node", "backward", "detect_anomaly", "enable_grad", "grad", "gradcheck",
    "gradgradcheck", "inference_mode", "register_derivatives", "is_grad_enabled", "is_inference_mode_enabled", "no_grad",
    "set_detect_anomaly", "set_grad_enabled", "Variable",
]
