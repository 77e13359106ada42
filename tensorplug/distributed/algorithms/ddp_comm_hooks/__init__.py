"""``torch.distributed.algorithms.ddp_comm_hooks``' module path: the built-in DDP communication
hooks (``default_hooks``, ``powerSGD_hook``, ``debugging_hooks``), and ``DDPCommHookType`` with
``register_ddp_comm_hook``, which install one of them by name.

>>> register_ddp_comm_hook(DDPCommHookType.POWER_SGD, ddp_model)   # state: the process group
"""
from __future__ import annotations

from enum import Enum
from functools import partial

from . import debugging_hooks, default_hooks, powerSGD_hook

__all__ = ["default_hooks", "powerSGD_hook", "debugging_hooks", "DDPCommHookType", "register_ddp_comm_hook"]

# PowerSGD installed by type starts compressing at this iteration, PyTorch's choice for the enum.
_ENUM_POWER_SGD_START = 1_000


def _install(comm_hook, model, state) -> None:
    model.register_comm_hook(state, comm_hook)


def _install_power_sgd(comm_hook, model, state, matrix_approximation_rank: int) -> None:
    """``state`` is the process group (None: the world), as for the other types; PowerSGD's own
    state is made around it."""
    power_state = powerSGD_hook.PowerSGDState(process_group=state, matrix_approximation_rank=matrix_approximation_rank,
                                              start_powerSGD_iter=_ENUM_POWER_SGD_START)
    model.register_comm_hook(power_state, comm_hook)


def _not_in_tensorplug(name: str, model, state) -> None:
    raise NotImplementedError(
        f"register_ddp_comm_hook: DDPCommHookType.{name} (a quantization hook) is not supported by tensorplug; "
        "FP16_COMPRESS, BF16_COMPRESS or POWER_SGD compress the gradients too")


class DDPCommHookType(Enum):
    """The built-in hooks by name; a member's value installs it: ``value(model=, state=)``."""

    ALLREDUCE = partial(_install, default_hooks.allreduce_hook)
    FP16_COMPRESS = partial(_install, default_hooks.fp16_compress_hook)
    BF16_COMPRESS = partial(_install, default_hooks.bf16_compress_hook)
    QUANTIZE_PER_TENSOR = partial(_not_in_tensorplug, "QUANTIZE_PER_TENSOR")
    QUANTIZE_PER_CHANNEL = partial(_not_in_tensorplug, "QUANTIZE_PER_CHANNEL")
    POWER_SGD = partial(_install_power_sgd, powerSGD_hook.powerSGD_hook, matrix_approximation_rank=1)
    POWER_SGD_RANK2 = partial(_install_power_sgd, powerSGD_hook.powerSGD_hook, matrix_approximation_rank=2)
    BATCHED_POWER_SGD = partial(_install_power_sgd, powerSGD_hook.batched_powerSGD_hook, matrix_approximation_rank=1)
    BATCHED_POWER_SGD_RANK2 = partial(_install_power_sgd, powerSGD_hook.batched_powerSGD_hook,
                                      matrix_approximation_rank=2)
    NOOP = partial(_install, debugging_hooks.noop_hook)


def register_ddp_comm_hook(comm_hook_type: DDPCommHookType, model, state=None) -> None:
    """Installs the hook ``comm_hook_type`` names on the DDP ``model``; ``state`` is the process
    group (None: the world)."""
    if not isinstance(comm_hook_type, DDPCommHookType):
        raise TypeError(f"register_ddp_comm_hook: comm_hook_type must be a DDPCommHookType, got "
                        f"{type(comm_hook_type).__name__}")
    comm_hook_type.value(model=model, state=state)
