"""Learning-rate schedulers produce torch's learning rates (and momenta) step by step."""
import math

import pytest

import tensorplug as tp

torch = pytest.importorskip("torch")


def _pair(optimizer="SGD", **opt_kwargs):
    opt_kwargs.setdefault("lr", 0.1)
    tp_opt = getattr(tp.optim, optimizer)([tp.ones(2, requires_grad=True)], **opt_kwargs)
    th_opt = getattr(torch.optim, optimizer)([torch.ones(2, requires_grad=True)], **opt_kwargs)
    return tp_opt, th_opt


def _compare(make_tp, make_th, optimizer="SGD", steps=25, momentum_key=None, **opt_kwargs):
    tp_opt, th_opt = _pair(optimizer, **opt_kwargs)
    tp_sched, th_sched = make_tp(tp_opt), make_th(th_opt)
    assert tp_sched.get_last_lr() == th_sched.get_last_lr()
    for _ in range(steps):
        tp_opt.step()
        th_opt.step()
        tp_sched.step()
        th_sched.step()
        assert tp_sched.get_last_lr() == th_sched.get_last_lr()  # exact: same float operations
        assert tp_opt.param_groups[0]["lr"] == th_opt.param_groups[0]["lr"]
        if momentum_key is not None:
            assert tp_opt.param_groups[0][momentum_key] == th_opt.param_groups[0][momentum_key]
    assert tp_sched.last_epoch == th_sched.last_epoch


S = tp.optim.lr_scheduler
T = torch.optim.lr_scheduler


@pytest.mark.parametrize(
    "name,kwargs",
    [
        ("StepLR", dict(step_size=3)),
        ("StepLR", dict(step_size=4, gamma=0.5)),
        ("MultiStepLR", dict(milestones=[2, 5, 5, 11], gamma=0.3)),
        ("ExponentialLR", dict(gamma=0.9)),
        ("CosineAnnealingLR", dict(T_max=7)),
        ("CosineAnnealingLR", dict(T_max=5, eta_min=0.01)),
        ("LambdaLR", dict(lr_lambda=lambda epoch: 0.95**epoch / (1 + epoch))),
    ],
)
def test_matches_torch(name, kwargs):
    """25 steps of each scheduler give torch's learning rates exactly."""
    _compare(lambda o: getattr(S, name)(o, **kwargs), lambda o: getattr(T, name)(o, **kwargs))


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(max_lr=1.0, total_steps=25),
        dict(max_lr=0.5, total_steps=25, anneal_strategy="linear", pct_start=0.4),
        dict(max_lr=0.5, epochs=5, steps_per_epoch=5, three_phase=True, div_factor=10.0, final_div_factor=100.0),
        dict(max_lr=0.3, total_steps=25, base_momentum=0.7, max_momentum=0.9),
    ],
)
def test_one_cycle_sgd_momentum(kwargs):
    """OneCycleLR's learning rates and SGD momenta match torch over the whole cycle."""
    _compare(lambda o: S.OneCycleLR(o, **kwargs), lambda o: T.OneCycleLR(o, **kwargs), momentum=0.9,
             steps=24, momentum_key="momentum")


def test_one_cycle_adam_beta1():
    """With Adam, OneCycleLR cycles beta1 and leaves beta2 alone, as torch does."""
    _compare(lambda o: S.OneCycleLR(o, max_lr=0.01, total_steps=20), lambda o: T.OneCycleLR(o, max_lr=0.01, total_steps=20),
             optimizer="Adam", steps=19, momentum_key="betas")


def test_one_cycle_errors():
    """Too many steps, or no step count, raise torch's ValueErrors."""
    opt, _ = _pair(momentum=0.9)
    with pytest.raises(ValueError, match="total_steps OR"):
        S.OneCycleLR(opt, max_lr=1.0)
    sched = S.OneCycleLR(opt, max_lr=1.0, total_steps=2)
    opt.step()
    sched.step()
    sched.step()
    with pytest.raises(ValueError, match="Tried to step 3 times"):
        sched.step()


def test_closed_form_with_epoch_warns_and_matches():
    """step(epoch) uses the closed form (with torch's deprecation warning)."""
    opt, _ = _pair()
    sched = S.CosineAnnealingLR(opt, T_max=10)
    opt.step()
    with pytest.warns(UserWarning, match="epoch parameter"):
        sched.step(4)
    assert sched.get_last_lr()[0] == pytest.approx(0.1 * (1 + math.cos(math.pi * 4 / 10)) / 2)


def test_warns_when_scheduler_steps_before_optimizer():
    """Calling scheduler.step() before optimizer.step() warns, as torch does."""
    opt, _ = _pair()
    sched = S.StepLR(opt, step_size=2)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        sched.step()


def test_state_dict_round_trip():
    """A scheduler's state dict restores last_epoch and the learning rates."""
    opt, _ = _pair(momentum=0.9)
    sched = S.StepLR(opt, step_size=2, gamma=0.5)
    for _ in range(5):
        opt.step()
        sched.step()
    state = sched.state_dict()
    assert "optimizer" not in state and state["last_epoch"] == 5
    opt2, _ = _pair(momentum=0.9)
    opt2.load_state_dict(opt.state_dict())
    sched2 = S.StepLR(opt2, step_size=99)
    sched2.load_state_dict(state)
    assert sched2.step_size == 2 and sched2.get_last_lr() == sched.get_last_lr()
    opt.step()
    opt2.step()
    sched.step()
    sched2.step()
    assert sched2.get_last_lr() == sched.get_last_lr() == [0.0125]


def test_initial_lr_and_resume_check():
    """The scheduler records initial_lr; resuming (last_epoch >= 0) without it is a KeyError."""
    opt, _ = _pair()
    S.ExponentialLR(opt, gamma=0.5)
    assert opt.param_groups[0]["initial_lr"] == 0.1
    fresh, _ = _pair()
    with pytest.raises(KeyError, match="initial_lr"):
        S.ExponentialLR(fresh, gamma=0.5, last_epoch=3)
    with pytest.raises(TypeError, match="is not an Optimizer"):
        S.StepLR(object(), step_size=1)
