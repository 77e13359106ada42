"""``tp._inductor.config``: the TorchInductor flags performance scripts set, with PyTorch 2.13's
defaults; kept so that those scripts run (tensorplug runs eagerly; no flag changes anything)."""
from .._flag_module import install_flags

install_flags(__name__, {
    "coordinate_descent_tuning": False,
    "coordinate_descent_check_all_directions": False,
    "fx_graph_cache": True,
    "freezing": False,
    "max_autotune": False,
    "max_autotune_gemm": False,
    "max_autotune_pointwise": False,
    "epilogue_fusion": True,
    "aggressive_fusion": False,
    "conv_1x1_as_mm": False,
    "force_fuse_int_mm_with_mul": False,
    "use_mixed_mm": True,
    "shape_padding": True,
    "fallback_random": False,
    "debug": False,
    "cpp_wrapper": False,
    "triton": {"unique_kernel_names": True, "cudagraphs": False, "cudagraph_trees": True},
})
