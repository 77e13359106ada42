"""``tp.onnx``: present so ``import tensorplug.onnx`` works; tensorplug cannot export ONNX.

Exporting needs a graph of the program, and tensorplug runs eagerly without tracing one. To
move a model elsewhere, save its weights: ``tp.save(model.state_dict(), "model.safetensors")``
(safetensors, readable by PyTorch, ONNX tool chains and most frameworks), then export from a
framework that traces.
"""
from __future__ import annotations

__all__ = ["export", "is_in_onnx_export", "OnnxExporterError"]

_MESSAGE = (
    "tensorplug cannot export ONNX: it runs operations eagerly and records no graph to export. Save the weights "
    "instead (tp.save(model.state_dict(), 'model.safetensors'): the safetensors format, which PyTorch loads with "
    "safetensors.torch.load_file), and export from PyTorch if you need an ONNX file."
)


class OnnxExporterError(RuntimeError):
    """PyTorch's exporter error type, for ``except`` clauses that name it."""


def export(model=None, args=(), f=None, *posargs, **kwargs):
    """Always raises NotImplementedError: see the module's documentation for what to do instead."""
    raise NotImplementedError(_MESSAGE)


def dynamo_export(*args, **kwargs):
    raise NotImplementedError(_MESSAGE)


def is_in_onnx_export() -> bool:
    return False
