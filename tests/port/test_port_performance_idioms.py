"""Names performance-minded scripts use that probe batch (a) found missing (issue 13):
``torch.autograd.profiler``, ``backends.mkldnn``/``opt_einsum``, ``torch.cpu.amp``,
``torch._dynamo``/``_inductor`` config flags, ``Module.compile``, ``Tensor.is_inference``,
``is_inference_mode_enabled``, the anomaly-mode queries and the inter-op thread count; against
fixed expectations, and torch where it is installed."""
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tensorplug as tp

try:
    import torch
except ImportError:  # the reference; tensorplug itself does not need it
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch (the reference) is not installed: pip install torch==2.13.0")


def test_autograd_profiler_profiles_and_can_be_switched_off():
    from tensorplug.autograd import profiler

    x = tp.ones(4, 4)
    with profiler.profile(record_shapes=True) as prof:
        with profiler.record_function("block"):
            y = (x @ x).relu()
    names = [event.name for event in prof.function_events]
    assert names[:3] == ["block", "matmul", "relu"]
    assert "matmul" in prof.key_averages().table(sort_by="self_cpu_time_total")
    np.testing.assert_array_equal(y.numpy(), np.full((4, 4), 4.0))
    with profiler.profile(enabled=False) as idle:
        x + 1
    assert len(idle.function_events) == 0
    with profiler.emit_nvtx(), profiler.emit_itt():
        assert (x + 1).sum().item() == 32.0


@needs_torch
def test_mkldnn_and_opt_einsum_flags_have_torch_names_and_defaults():
    for name in ("enabled", "deterministic"):
        assert getattr(tp.backends.mkldnn, name) == getattr(torch.backends.mkldnn, name)
    assert tp.backends.opt_einsum.enabled is False and tp.backends.opt_einsum.strategy is None
    assert tp.backends.mkldnn.is_available() is False and tp.backends.opt_einsum.is_available() is False
    with tp.backends.mkldnn.flags(enabled=False):
        assert tp.backends.mkldnn.enabled is False
    assert tp.backends.mkldnn.enabled is True
    with tp.backends.opt_einsum.flags(enabled=True, strategy="greedy"):
        assert tp.backends.opt_einsum.enabled and tp.backends.opt_einsum.strategy == "greedy"
    assert tp.backends.opt_einsum.strategy is None


def test_cpu_amp_spellings_warn_and_work():
    with pytest.warns(FutureWarning, match=r"torch.cpu.amp.autocast\(args...\)` is deprecated"):
        context = tp.cpu.amp.autocast()
    with context:
        product = tp.ones(2, 3) @ tp.ones(3, 2)
    assert product.dtype is tp.bfloat16 and product.float().tolist() == [[3.0, 3.0], [3.0, 3.0]]
    with pytest.warns(FutureWarning, match="torch.amp.GradScaler\\('cpu', args...\\)"):
        scaler = tp.cpu.amp.GradScaler(init_scale=8.0)
    assert scaler.get_scale() == 8.0 and scaler.scale(tp.tensor(2.0)).item() == 16.0


def test_dynamo_and_inductor_flags_refuse_unknown_names_and_patch_restores():
    import tensorplug._dynamo.config as dynamo_config

    assert dynamo_config is tp._dynamo.config
    before = dynamo_config.cache_size_limit
    assert before == 8
    with tp._dynamo.config.patch(cache_size_limit=64, suppress_errors=True):
        assert dynamo_config.cache_size_limit == 64 and dynamo_config.suppress_errors
    assert dynamo_config.cache_size_limit == before and not dynamo_config.suppress_errors
    with pytest.raises(AttributeError, match="does not exist"):
        tp._dynamo.config.cache_size_limt = 64
    inductor = tp._inductor.config
    with inductor.patch({"triton.cudagraphs": True, "coordinate_descent_tuning": True}):
        assert inductor.triton.cudagraphs and inductor.coordinate_descent_tuning
    assert not inductor.triton.cudagraphs and not inductor.coordinate_descent_tuning
    with pytest.raises(AttributeError, match="does not exist"):
        inductor.triton.unique_kernel_name = False
    tp._dynamo.reset()
    x = tp.ones(3)
    tp._dynamo.mark_dynamic(x, 0)
    assert tp._dynamo.disable(abs) is abs and tp._dynamo.optimize("inductor")(abs) is abs


@needs_torch
def test_flag_defaults_match_torch():
    import torch._dynamo.config
    import torch._inductor.config

    for name in tp._dynamo.config._flag_names:
        assert getattr(tp._dynamo.config, name) == getattr(torch._dynamo.config, name), name
    for name in tp._inductor.config._flag_names - {"triton"}:
        assert getattr(tp._inductor.config, name) == getattr(torch._inductor.config, name), name
    for name in ("unique_kernel_names", "cudagraphs", "cudagraph_trees"):
        assert getattr(tp._inductor.config.triton, name) == getattr(torch._inductor.config.triton, name)


def test_module_compile_checks_options_and_keeps_running_eagerly():
    model = tp.nn.Linear(2, 1)
    with tp.no_grad():
        model.weight.copy_(tp.tensor([[1.0, 2.0]]))
        model.bias.fill_(0.5)
    assert model.compile(mode="max-autotune", dynamic=False) is None
    assert model(tp.tensor([[1.0, 1.0]])).item() == 3.5
    with pytest.raises(RuntimeError, match="Either mode or options"):
        model.compile(mode="default", options={})


def test_inference_mode_is_not_no_grad_for_the_query():
    assert not tp.is_inference_mode_enabled()
    with tp.no_grad():
        assert not tp.is_inference_mode_enabled()
    with tp.inference_mode():
        assert tp.is_inference_mode_enabled()
        with tp.inference_mode(False):
            assert not tp.is_inference_mode_enabled() and tp.is_grad_enabled()
        y = tp.ones(2) * 2
        assert tp.is_inference_mode_enabled()
    assert not tp.is_inference_mode_enabled()
    assert y.is_inference() is False  # tensorplug makes no inference tensors (docs/deviations.md)

    @tp.inference_mode(False)
    def records():
        return tp.is_inference_mode_enabled(), tp.is_grad_enabled()

    with tp.inference_mode():
        assert records() == (False, True)


def test_anomaly_queries_follow_the_mode():
    assert not tp.is_anomaly_enabled()
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        mode = tp.autograd.detect_anomaly(check_nan=False)
    assert not tp.is_anomaly_enabled()  # switched on by entering, as in PyTorch
    with mode:
        assert tp.is_anomaly_enabled() and not tp.is_anomaly_check_nan_enabled()
    assert not tp.is_anomaly_enabled() and tp.is_anomaly_check_nan_enabled()


def test_interop_threads_can_be_set_once():
    script = textwrap.dedent("""
        import tensorplug as tp
        assert tp.get_num_interop_threads() >= 1
        for bad, message in ((0, "positive integer"), (2.0, "expects an int")):
            try:
                tp.set_num_interop_threads(bad)
            except RuntimeError as error:
                assert message in str(error), error
            else:
                raise AssertionError(bad)
        tp.set_num_interop_threads(3)
        assert tp.get_num_interop_threads() == 3
        try:
            tp.set_num_interop_threads(2)
        except RuntimeError as error:
            assert "cannot set number of interop threads" in str(error)
        else:
            raise AssertionError("second call accepted")
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-W", "error", "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
