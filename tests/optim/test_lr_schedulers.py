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
    assert getattr(tp_sched, "last_epoch", None) == getattr(th_sched, "last_epoch", None)  # ChainedScheduler has none


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
        ("LinearLR", dict()),
        ("LinearLR", dict(start_factor=0.01, end_factor=0.5, total_iters=7)),
        ("ConstantLR", dict()),
        ("ConstantLR", dict(factor=0.25, total_iters=3)),
        ("MultiplicativeLR", dict(lr_lambda=lambda epoch: 0.9 if epoch % 3 else 1.1)),
        ("PolynomialLR", dict()),
        ("PolynomialLR", dict(total_iters=9, power=2.0)),
        ("CosineAnnealingWarmRestarts", dict(T_0=4)),
        ("CosineAnnealingWarmRestarts", dict(T_0=3, T_mult=2, eta_min=0.001)),
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


@pytest.mark.parametrize("kwargs", [
    dict(base_lr=0.01, max_lr=0.1, step_size_up=3),
    dict(base_lr=0.01, max_lr=0.1, step_size_up=2, step_size_down=5, mode="triangular2"),
    dict(base_lr=0.001, max_lr=0.05, step_size_up=4, mode="exp_range", gamma=0.95, base_momentum=0.7),
    dict(base_lr=0.01, max_lr=0.1, step_size_up=3, scale_fn=lambda x: 0.5 ** x, scale_mode="iterations"),
])
def test_cyclic_matches_torch(kwargs):
    """CyclicLR's rates and SGD momenta match torch's through several cycles, every mode."""
    _compare(lambda o: S.CyclicLR(o, **kwargs), lambda o: T.CyclicLR(o, **kwargs), momentum=0.9, steps=24,
             momentum_key="momentum")


def test_cyclic_adam_beta1_and_errors():
    """With Adam, CyclicLR cycles beta1; without momentum it refuses cycle_momentum; a bad mode
    without scale_fn raises torch's error."""
    _compare(lambda o: S.CyclicLR(o, base_lr=0.001, max_lr=0.01, step_size_up=2),
             lambda o: T.CyclicLR(o, base_lr=0.001, max_lr=0.01, step_size_up=2), optimizer="Adam", steps=9,
             momentum_key="betas")
    opt, _ = _pair("Adagrad")
    with pytest.raises(ValueError, match="must support momentum or beta1"):
        S.CyclicLR(opt, base_lr=0.01, max_lr=0.1)
    with pytest.raises(ValueError, match="mode is invalid and scale_fn is None"):
        S.CyclicLR(opt, base_lr=0.01, max_lr=0.1, mode="sawtooth", cycle_momentum=False)
    sched = S.CyclicLR(opt, base_lr=0.01, max_lr=0.1, step_size_up=2, scale_fn=lambda x: 0.5, cycle_momentum=False)
    opt.step()
    sched.step()
    state = sched.state_dict()
    assert state["_custom_height"] is None and state["last_epoch"] == 1  # a lambda is not saved
    sched.step()
    sched.load_state_dict(state)
    assert sched.last_epoch == 1 and sched.scale_fn(3) == 0.5


def test_one_cycle_adam_beta1():
    """With Adam, OneCycleLR cycles beta1 and leaves beta2 alone, as torch does."""
    _compare(lambda o: S.OneCycleLR(o, max_lr=0.01, total_steps=20), lambda o: T.OneCycleLR(o, max_lr=0.01, total_steps=20),
             optimizer="Adam", steps=19, momentum_key="betas")


def _warmup_then_cosine(lib):
    """torchvision's classification recipe: LinearLR warmup, then cosine, through SequentialLR."""
    sched = lib.optim.lr_scheduler

    def make(optimizer):
        warmup = sched.LinearLR(optimizer, start_factor=0.01, total_iters=5)
        cosine = sched.CosineAnnealingLR(optimizer, T_max=15, eta_min=1e-4)
        return sched.SequentialLR(optimizer, schedulers=[warmup, cosine], milestones=[5])
    return make


def _three_phases(lib):
    sched = lib.optim.lr_scheduler

    def make(optimizer):
        return sched.SequentialLR(optimizer, [sched.ConstantLR(optimizer, factor=0.5, total_iters=2),
                                              sched.ExponentialLR(optimizer, gamma=0.9),
                                              sched.StepLR(optimizer, step_size=3)], milestones=[4, 10])
    return make


def _chained(lib):
    sched = lib.optim.lr_scheduler

    def make(optimizer):
        return sched.ChainedScheduler([sched.ConstantLR(optimizer, factor=0.5, total_iters=3),
                                       sched.ExponentialLR(optimizer, gamma=0.9),
                                       sched.MultiStepLR(optimizer, milestones=[6, 9], gamma=0.5)])
    return make


@pytest.mark.parametrize("make", [_warmup_then_cosine, _three_phases, _chained])
def test_sequential_matches_torch(make):
    """SequentialLR hands over at each milestone exactly as torch's (the next scheduler restarts
    at its epoch 0), for AdamW as for SGD."""
    _compare(make(tp), make(torch), optimizer="AdamW", steps=24)
    _compare(make(tp), make(torch), steps=24)


def test_linear_and_constant_closed_forms_and_errors():
    """step(epoch) gives torch's closed forms; factors outside their ranges raise torch's errors."""
    for name, kwargs in (("LinearLR", dict(start_factor=0.1, total_iters=4)), ("ConstantLR", dict(factor=0.5))):
        tp_opt, th_opt = _pair()
        ours, theirs = getattr(S, name)(tp_opt, **kwargs), getattr(T, name)(th_opt, **kwargs)
        tp_opt.step()
        th_opt.step()
        for epoch in (3, 7, 0):
            with pytest.warns(UserWarning, match="epoch parameter"):
                ours.step(epoch)
            with pytest.warns(UserWarning, match="epoch parameter"):
                theirs.step(epoch)
            assert ours.get_last_lr() == theirs.get_last_lr()
    opt, _ = _pair()
    with pytest.raises(ValueError, match="Starting multiplicative factor"):
        S.LinearLR(opt, start_factor=0)
    with pytest.raises(ValueError, match="Ending multiplicative factor"):
        S.LinearLR(opt, end_factor=1.5)
    with pytest.raises(ValueError, match="Constant multiplicative factor"):
        S.ConstantLR(opt, factor=2.0)


def test_sequential_errors_and_state_dict():
    """SequentialLR refuses no schedulers, a wrong milestone count and another optimizer's
    scheduler; its state_dict holds each scheduler's and restores the schedule."""
    opt, _ = _pair()
    other, _ = _pair()
    with pytest.raises(ValueError, match="at least one scheduler"):
        S.SequentialLR(opt, [], [])
    with pytest.raises(ValueError, match="one more than the number of milestone"):
        S.SequentialLR(opt, [S.ConstantLR(opt)], [3])
    with pytest.raises(ValueError, match="same optimizer"):
        S.SequentialLR(opt, [S.ConstantLR(opt), S.ExponentialLR(other, gamma=0.5)], [3])
    with pytest.raises(ValueError, match="does not support `ReduceLROnPlateau`"):
        S.ChainedScheduler([S.ConstantLR(opt), S.ReduceLROnPlateau(opt)])
    with pytest.raises(ValueError, match="at least one scheduler to be chained"):
        S.ChainedScheduler([])
    with pytest.raises(TypeError, match="lr_lambda should be a function"):
        S.MultiplicativeLR(opt, lr_lambda=0.5)
    opt, _ = _pair()
    sched = _warmup_then_cosine(tp)(opt)
    for _ in range(7):
        opt.step()
        sched.step()
    state = sched.state_dict()
    assert len(state["_schedulers"]) == 2 and state["last_epoch"] == 7
    rates = []
    for _ in range(3):
        opt.step()
        sched.step()
        rates.append(sched.get_last_lr()[0])
    opt2, _ = _pair()
    restored = _warmup_then_cosine(tp)(opt2)
    restored.load_state_dict(state)
    opt2.param_groups[0]["lr"] = state["_last_lr"][0]
    again = []
    for _ in range(3):
        opt2.step()
        restored.step()
        again.append(restored.get_last_lr()[0])
    assert again == rates


def test_custom_scheduler_on_the_legacy_base_matches_torch():
    """A scheduler written against the pre-2.0 base, `_LRScheduler`, runs as under torch."""
    def make(lib):
        class InverseSqrt(lib.optim.lr_scheduler._LRScheduler):
            def get_lr(self):
                return [base / max(1, self.last_epoch) ** 0.5 for base in self.base_lrs]
        return InverseSqrt

    _compare(lambda o: make(tp)(o), lambda o: make(torch)(o), steps=10)


def test_warm_restarts_fractional_epochs_match_torch():
    """CosineAnnealingWarmRestarts.step(epoch + i / iters), as SGDR's authors step it within an
    epoch, gives torch's rates; a negative epoch and bad periods raise torch's errors."""
    for kwargs in (dict(T_0=3), dict(T_0=2, T_mult=3, eta_min=0.01)):
        tp_opt, th_opt = _pair()
        ours, theirs = S.CosineAnnealingWarmRestarts(tp_opt, **kwargs), T.CosineAnnealingWarmRestarts(th_opt, **kwargs)
        for epoch in (0.25, 1.5, 2.0, 3.75, 7.5, 11.0, 30.2):
            ours.step(epoch)
            theirs.step(epoch)
            assert ours.get_last_lr() == theirs.get_last_lr() and ours.T_i == theirs.T_i
            assert ours.last_epoch == theirs.last_epoch
    with pytest.raises(ValueError, match="non-negative epoch"):
        ours.step(-1)
    with pytest.raises(ValueError, match="positive integer T_0"):
        S.CosineAnnealingWarmRestarts(tp_opt, T_0=0)
    with pytest.raises(ValueError, match="T_mult >= 1"):
        S.CosineAnnealingWarmRestarts(tp_opt, T_0=2, T_mult=1.5)


PLATEAU_METRICS = [1.0, 0.9, 0.9, 0.95, 0.91, 0.9, 0.85, 0.86, 0.87, 0.9, 0.9, 0.9, 0.84, 0.9, 0.9, 0.9, 0.9, 0.9]


@pytest.mark.parametrize("kwargs", [
    dict(patience=2),
    dict(mode="max", factor=0.5, patience=1, threshold=0.01),
    dict(patience=1, threshold=0.02, threshold_mode="abs", cooldown=2, min_lr=0.004),
    dict(patience=0, factor=0.2, min_lr=[0.01], eps=1e-3),
])
def test_reduce_on_plateau_matches_torch(kwargs):
    """ReduceLROnPlateau reduces after the same epochs as torch's for every mode, threshold,
    cooldown and floor; a 0-d tensor metric reads as a number."""
    tp_opt, th_opt = _pair()
    ours, theirs = S.ReduceLROnPlateau(tp_opt, **kwargs), T.ReduceLROnPlateau(th_opt, **kwargs)
    assert ours.get_last_lr() == theirs.get_last_lr()
    for metric in PLATEAU_METRICS:
        tp_opt.step()
        th_opt.step()
        ours.step(tp.tensor(metric, dtype=tp.float64))
        theirs.step(metric)
        assert ours.get_last_lr() == theirs.get_last_lr()
        assert (ours.best, ours.num_bad_epochs, ours.cooldown_counter) == (theirs.best, theirs.num_bad_epochs,
                                                                           theirs.cooldown_counter)


def test_reduce_on_plateau_errors_and_state_dict():
    """torch's errors for factor, mode, threshold_mode and min_lr; the state_dict restores the
    counters and the comparison."""
    opt, _ = _pair()
    with pytest.raises(ValueError, match="Factor should be < 1.0"):
        S.ReduceLROnPlateau(opt, factor=1.0)
    with pytest.raises(ValueError, match="mode up is unknown"):
        S.ReduceLROnPlateau(opt, mode="up")
    with pytest.raises(ValueError, match="threshold mode pct is unknown"):
        S.ReduceLROnPlateau(opt, threshold_mode="pct")
    with pytest.raises(ValueError, match="expected 1 min_lrs, got 2"):
        S.ReduceLROnPlateau(opt, min_lr=[0.0, 0.0])
    sched = S.ReduceLROnPlateau(opt, mode="max", patience=1)
    for metric in (1.0, 0.5, 0.5):
        sched.step(metric)
    state = sched.state_dict()
    restored = S.ReduceLROnPlateau(opt)
    restored.load_state_dict(state)
    assert (restored.mode, restored.best, restored.mode_worse) == ("max", 1.0, -math.inf)


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
