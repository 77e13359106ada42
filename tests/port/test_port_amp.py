"""tp.amp.GradScaler, tp.cuda.amp and tp.autocast's state: PyTorch's behaviour, on CPU and without CUDA."""
import numpy as np
import pytest

import tensorplug as tp

cuda_available = tp.cuda.is_available()


def _torch():
    try:
        import torch
    except ImportError:
        pytest.skip("PyTorch is not installed")
    return torch


def _model_and_optimizer(lib, value=1.0):
    w = lib.tensor([value, -value], requires_grad=True)
    return w, lib.optim.SGD([w], lr=0.5)


# --- GradScaler disabled ------------------------------------------------------------------------------
def test_disabled_scaler_is_transparent():
    """enabled=False: scale returns its argument, step is optimizer.step(), update does nothing."""
    scaler = tp.amp.GradScaler("cpu", enabled=False)
    w, opt = _model_and_optimizer(tp)
    loss = (w * w).sum()
    assert scaler.scale(loss) is loss
    scaler.scale(loss).backward()
    scaler.unscale_(opt)
    assert scaler.step(opt) is None
    scaler.update()
    np.testing.assert_allclose(w.detach().numpy(), [0.0, 0.0])  # w - 0.5 * 2w
    assert scaler.state_dict() == {} and scaler.get_scale() == 1.0 and not scaler.is_enabled()
    scaler.load_state_dict({})


@pytest.mark.skipif(cuda_available, reason="CUDA is available here")
def test_cuda_scaler_without_cuda_warns_and_disables():
    with pytest.warns(UserWarning, match="CUDA is not available.*Disabling"):
        scaler = tp.amp.GradScaler("cuda")
    assert not scaler.is_enabled()
    with pytest.warns(FutureWarning, match="torch.amp.GradScaler"), pytest.warns(UserWarning, match="Disabling"):
        old = tp.cuda.amp.GradScaler(init_scale=8.0)
    w, opt = _model_and_optimizer(tp)
    loss = (w * w).sum()
    assert old.scale(loss) is loss and not old.is_enabled()


def test_scaler_with_closure_passes_it_through_when_disabled():
    scaler = tp.amp.GradScaler("cpu", enabled=False)
    w, opt = _model_and_optimizer(tp)

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss

    assert scaler.step(opt, closure).item() == 2.0


# --- GradScaler enabled on CPU: exact values ----------------------------------------------------------
def _scaled_steps(lib, grads_list, **kwargs):
    """Run one scaler over steps whose raw gradients are given; return (scales, params, states)."""
    scaler = lib.amp.GradScaler("cpu", **kwargs)
    w, opt = _model_and_optimizer(lib)
    scales, params = [], []
    for grads in grads_list:
        opt.zero_grad()
        loss = (w * lib.tensor(grads)).sum()  # d loss / d w = grads
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        scales.append(float(scaler.get_scale()))
        params.append(w.detach().numpy().copy())
    return scales, params, scaler.state_dict()


STEPS = [[1.0, 2.0], [0.5, 0.5], [float("inf"), 1.0], [1.0, 1.0], [float("nan"), 0.0], [2.0, 2.0], [1.0, 0.0]]


def test_scaler_exact_values():
    """Scale 4, growth every 2 clean steps, backoff 0.5: steps with inf/NaN are skipped and halve
    the scale; the gradients the optimizer sees are unscaled."""
    scales, params, state = _scaled_steps(tp, STEPS, init_scale=4.0, growth_interval=2)
    assert scales == [4.0, 8.0, 4.0, 4.0, 2.0, 2.0, 4.0]
    expected, w = [], np.array([1.0, -1.0])
    for grads in STEPS:
        if np.all(np.isfinite(grads)):
            w = w - 0.5 * np.array(grads)
        expected.append(w)
    np.testing.assert_allclose(params, expected)
    assert state == {"scale": 4.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 2,
                     "_growth_tracker": 0}


def test_scaler_matches_torch():
    torch = _torch()
    ours = _scaled_steps(tp, STEPS, init_scale=4.0, growth_interval=2)
    theirs = _scaled_steps(torch, STEPS, init_scale=4.0, growth_interval=2)
    assert ours[0] == theirs[0]
    np.testing.assert_allclose(ours[1], theirs[1])
    assert ours[2] == theirs[2]


def test_scaler_state_dict_round_trip_and_errors():
    scaler = tp.amp.GradScaler("cpu", init_scale=16.0, growth_interval=3)
    other = tp.amp.GradScaler("cpu")
    other.load_state_dict(scaler.state_dict())
    assert other.get_scale() == 16.0 and other.get_growth_interval() == 3
    with pytest.raises(RuntimeError, match="state dict is empty"):
        other.load_state_dict({})
    w, opt = _model_and_optimizer(tp)
    scaler.scale((w * w).sum()).backward()
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="already been called"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
        scaler.step(opt)
    scaler.update()
    with pytest.raises(ValueError, match="growth factor"):
        tp.amp.GradScaler("cpu", growth_factor=1.0)


def test_scale_nested_outputs():
    scaler = tp.amp.GradScaler("cpu", init_scale=2.0)
    a, b = tp.ones(1), tp.ones(2)
    out = scaler.scale({"x": [a, (b,)]})
    assert out["x"][0].tolist() == [2.0] and out["x"][1][0].tolist() == [2.0, 2.0]


@pytest.mark.parametrize("bad_on", ["cpu", "other"])
def test_scaler_checks_gradients_on_every_device(device, bad_on):
    """Parameters on two devices: an inf on either skips the step and halves the scale; the other
    gradients are unscaled all the same."""
    a = tp.tensor([1.0, 2.0], requires_grad=True)
    b = tp.tensor([3.0], device=device, requires_grad=True)
    opt = tp.optim.SGD([a, b], lr=1.0)
    scaler = tp.amp.GradScaler("cpu", init_scale=8.0)
    bad = float("inf")
    grad_a = [bad, 1.0] if bad_on == "cpu" else [1.0, 1.0]
    grad_b = [bad] if bad_on == "other" else [2.0]
    loss = (a * tp.tensor(grad_a)).sum() + (b * tp.tensor(grad_b, device=device)).sum()
    scaler.scale(loss).backward()
    scaler.step(opt)
    assert a.tolist() == [1.0, 2.0] and b.tolist() == [3.0]  # skipped
    finite_b = 2.0 if bad_on == "cpu" else None
    if finite_b is not None:
        assert b.grad.tolist() == [finite_b]  # 16 / 8: unscaled even though the step was skipped
    scaler.update()
    assert scaler.get_scale() == 4.0
    assert tp.amp.grad_scaler.OptState.STEPPED.value == 2


# --- autocast -----------------------------------------------------------------------------------------
def test_autocast_records_state_and_casts():
    assert not tp.is_autocast_enabled("cpu")
    with tp.autocast("cpu", dtype=tp.bfloat16):
        assert tp.is_autocast_enabled("cpu") and tp.get_autocast_dtype("cpu") is tp.bfloat16
        with tp.autocast("cpu", enabled=False):
            assert not tp.is_autocast_enabled("cpu")
        assert tp.is_autocast_enabled("cpu")
        y = tp.ones(2, 3) @ tp.ones(3, 4)
        assert y.dtype is tp.bfloat16  # as PyTorch (tests/amp has the op lists)
    assert not tp.is_autocast_enabled("cpu") and tp.get_autocast_dtype("cpu") is tp.bfloat16

    @tp.amp.autocast("cpu")
    def inside():
        return tp.is_autocast_enabled("cpu")

    assert inside() and not tp.is_autocast_enabled("cpu")


def test_autocast_disables_itself_as_torch_does():
    with pytest.warns(UserWarning, match="target dtype is not supported"):
        ctx = tp.autocast("cpu", dtype=tp.float32)
    with ctx:
        assert not tp.is_autocast_enabled("cpu")
    if not cuda_available:
        with pytest.warns(UserWarning, match="CUDA is not available"):
            ctx = tp.autocast("cuda")
        with ctx:
            assert not tp.is_autocast_enabled("cuda")
        with pytest.warns(FutureWarning), pytest.warns(UserWarning, match="CUDA is not available"):
            tp.cuda.amp.autocast()
    with pytest.raises(ValueError, match="device_type"):
        tp.autocast(0)


def test_autocast_state_matches_torch():
    torch = _torch()
    with tp.autocast("cpu"), torch.autocast("cpu"):
        assert tp.is_autocast_enabled("cpu") == torch.is_autocast_enabled("cpu")
        assert tp.get_autocast_dtype("cpu").name == str(torch.get_autocast_dtype("cpu")).replace("torch.", "")
    assert tp.is_autocast_enabled("cpu") == torch.is_autocast_enabled("cpu")
    assert tp.get_autocast_dtype("cuda").name == str(torch.get_autocast_dtype("cuda")).replace("torch.", "")
