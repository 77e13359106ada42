"""``tp._dynamo.config``: the TorchDynamo flags scripts set, with PyTorch 2.13's defaults.

tensorplug runs eagerly (``tp.compile`` is the identity), so no flag changes what runs; they are
kept so that scripts tuning them run, and a misspelt one fails as in PyTorch.
"""
from .._flag_module import install_flags

install_flags(__name__, {
    "suppress_errors": False,
    "verbose": False,
    "cache_size_limit": 8,
    "recompile_limit": 8,
    "accumulated_cache_size_limit": 256,
    "accumulated_recompile_limit": 256,
    "optimize_ddp": True,
    "capture_scalar_outputs": False,
    "capture_dynamic_output_shape_ops": False,
    "automatic_dynamic_shapes": True,
    "assume_static_by_default": True,
    "specialize_int": False,
    "force_parameter_static_shapes": True,
    "guard_nn_modules": True,
    "error_on_recompile": False,
})
