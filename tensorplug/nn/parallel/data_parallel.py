"""``DataParallel`` on one device: what PyTorch's reduces to without several GPUs.

PyTorch splits each batch over ``device_ids``, runs a replica of the module on each and gathers
the outputs. On one device that is the module itself: ``forward`` calls ``self.module`` (after
moving tensor inputs to ``device_ids[0]`` when one is given), and the wrapper only adds the
``module.`` prefix to parameter and state-dict names, as PyTorch's does. Without an accelerator
PyTorch ignores ``device_ids``; so does this. More than one device is refused (NotImplementedError)
rather than silently running on one.
"""
from __future__ import annotations

from ...frontend.device import device as _device
from ...frontend.tensor import Tensor
from ..module import Module

__all__ = ["DataParallel", "data_parallel"]


def _accelerator_type() -> str | None:
    from ... import accelerator

    found = accelerator.current_accelerator()
    return None if found is None else found.type


def _resolve_ids(device_ids, accelerator_type: str) -> list:
    """``device_ids`` (ints or devices) as devices; ints name devices of the accelerator."""
    return [_device(accelerator_type, d) if isinstance(d, int) else _device(d) for d in device_ids]


def _to_device(value, dev):
    """Tensors in ``value`` (nested in lists, tuples and dicts) moved to ``dev``; the rest as is."""
    if isinstance(value, Tensor):
        return value.to(dev)
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(_to_device(v, dev) for v in value))
    if isinstance(value, (list, tuple)):
        return type(value)(_to_device(v, dev) for v in value)
    if isinstance(value, dict):
        return {k: _to_device(v, dev) for k, v in value.items()}
    return value


class DataParallel(Module):
    """``tp.nn.DataParallel(module)``: ``.module`` is the wrapped module; ``forward`` runs it."""

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0) -> None:
        super().__init__()
        self.module = module
        self.dim = dim
        accelerator_type = None if device_ids is None else _accelerator_type()
        if accelerator_type is None:
            # No accelerator: PyTorch ignores device_ids. No ids on one: run where the module is.
            self.device_ids = []
            self.output_device = None
            self.src_device_obj = None
            return
        devices = _resolve_ids(list(device_ids), accelerator_type)
        if len(devices) > 1:
            raise NotImplementedError(
                f"DataParallel over {len(devices)} devices ({', '.join(map(str, devices))}) is not supported by "
                "tensorplug: it runs on one device; pass one device id, or none"
            )
        self.device_ids = devices
        self.src_device_obj = devices[0]
        self.output_device = devices[0] if output_device is None else _device(output_device)

    def _check_placement(self) -> None:
        for t in list(self.module.parameters()) + list(self.module.buffers()):
            if t.device != self.src_device_obj:
                raise RuntimeError(
                    f"module must have its parameters and buffers on device {self.src_device_obj} (device_ids[0]) but "
                    f"found one of them on device: {t.device}"
                )

    def forward(self, *inputs, **kwargs):
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        self._check_placement()
        outputs = self.module(*_to_device(inputs, self.src_device_obj), **_to_device(kwargs, self.src_device_obj))
        return outputs if self.output_device == self.src_device_obj else _to_device(outputs, self.output_device)


def data_parallel(module: Module, inputs, device_ids=None, output_device=None, dim: int = 0, module_kwargs=None):
    """The functional form: run ``module(*inputs, **module_kwargs)`` as ``DataParallel`` would."""
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    wrapper = DataParallel(module, device_ids, output_device, dim)
    return wrapper(*inputs, **(module_kwargs or {}))
