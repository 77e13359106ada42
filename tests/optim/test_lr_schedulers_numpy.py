"""Learning-rate schedulers against their closed forms in NumPy float64, without PyTorch (CI has
none): the recursive forms the schedulers compute agree with the closed forms to 1e-12, and the
composing schedulers, ReduceLROnPlateau, the state dicts, warnings and errors behave as documented."""
import gc
import math
import warnings
import weakref

import numpy as np
import pytest

import tensorplug as tp

S = tp.optim.lr_scheduler


def _optimizer(kind="SGD", lrs=(0.1,), **kwargs):
    groups = [{"params": [tp.ones(2, requires_grad=True)], "lr": lr} for lr in lrs]
    return getattr(tp.optim, kind)(groups, **kwargs)


def _rates(optimizer, scheduler, steps, key="lr"):
    """The value of ``key`` in each param group after construction and after each step."""
    seen = [[group[key] for group in optimizer.param_groups]]
    for _ in range(steps):
        optimizer.step()
        scheduler.step()
        seen.append([group[key] for group in optimizer.param_groups])
    return np.array(seen, dtype=np.float64)


def _per_epoch(fn, steps, bases):
    """The expected rates: ``fn(epoch, base)`` for every epoch 0..steps and base rate."""
    return np.array([[fn(epoch, base) for base in bases] for epoch in range(steps + 1)], dtype=np.float64)


BASES = (0.1, 0.03)
STEPS = 30


@pytest.mark.parametrize("make,closed_form", [
    (lambda o: S.StepLR(o, step_size=4, gamma=0.5), lambda k, b: b * 0.5 ** (k // 4)),
    (lambda o: S.MultiStepLR(o, milestones=[9, 3, 9, 20], gamma=0.3),
     lambda k, b: b * 0.3 ** sum(m <= k for m in (3, 9, 9, 20))),
    (lambda o: S.ExponentialLR(o, gamma=0.9), lambda k, b: b * 0.9**k),
    (lambda o: S.ConstantLR(o, factor=0.25, total_iters=6), lambda k, b: b * (0.25 if k < 6 else 1.0)),
    (lambda o: S.LinearLR(o, start_factor=0.1, end_factor=0.8, total_iters=7),
     lambda k, b: b * (0.1 + 0.7 * min(k, 7) / 7)),
    (lambda o: S.PolynomialLR(o, total_iters=12, power=2.5), lambda k, b: b * (1 - min(k, 12) / 12) ** 2.5),
    (lambda o: S.CosineAnnealingLR(o, T_max=7, eta_min=0.002),
     lambda k, b: 0.002 + (b - 0.002) * (1 + np.cos(np.pi * k / 7)) / 2),
    (lambda o: S.LambdaLR(o, lr_lambda=lambda k: 1 / (1 + k) ** 0.5), lambda k, b: b / (1 + k) ** 0.5),
    (lambda o: S.MultiplicativeLR(o, lr_lambda=lambda k: 0.95), lambda k, b: b * 0.95**k),
])
def test_recursive_forms_follow_the_closed_forms(make, closed_form):
    """30 steps of each scheduler, two param groups: the rates are the closed form's within 1e-12
    (the cosine past T_max climbs back, as its closed form does)."""
    optimizer = _optimizer(lrs=BASES)
    got = _rates(optimizer, make(optimizer), STEPS)
    np.testing.assert_allclose(got, _per_epoch(closed_form, STEPS, BASES), rtol=1e-12, atol=1e-15)


def test_step_with_an_epoch_uses_the_closed_form_and_warns():
    """step(epoch) jumps to the closed form at that epoch, with the deprecation warning."""
    optimizer = _optimizer(lrs=BASES)
    scheduler = S.CosineAnnealingLR(optimizer, T_max=10)
    optimizer.step()
    for epoch in (4, 13, 0, 7):
        with pytest.warns(UserWarning, match="epoch parameter"):
            scheduler.step(epoch)
        want = [b * (1 + math.cos(math.pi * epoch / 10)) / 2 for b in BASES]
        np.testing.assert_allclose(scheduler.get_last_lr(), want, rtol=1e-15)
        assert scheduler.last_epoch == epoch


def test_recursive_forms_carry_outside_changes():
    """Halving the rate by hand mid-schedule carries on: ExponentialLR keeps multiplying the
    halved rate (the recursive form), while LambdaLR recomputes from the base rate."""
    optimizer = _optimizer()
    exponential = S.ExponentialLR(optimizer, gamma=0.8)
    for _ in range(3):
        optimizer.step()
        exponential.step()
    optimizer.param_groups[0]["lr"] /= 2
    optimizer.step()
    exponential.step()
    assert exponential.get_last_lr()[0] == pytest.approx(0.1 * 0.8**4 / 2, rel=1e-14)
    optimizer = _optimizer()
    lam = S.LambdaLR(optimizer, lr_lambda=lambda k: 0.8**k)
    optimizer.param_groups[0]["lr"] = 5.0
    optimizer.step()
    lam.step()
    assert lam.get_last_lr()[0] == pytest.approx(0.08, rel=1e-14)


def test_warm_restarts_periods_and_fractional_epochs():
    """SGDR with T_0=3, T_mult=2: periods of 3, 6, 12 epochs, each a cosine from the base rate;
    a fractional epoch lands inside its period."""
    optimizer = _optimizer(lrs=BASES)
    scheduler = S.CosineAnnealingWarmRestarts(optimizer, T_0=3, T_mult=2, eta_min=0.001)

    def expected(epoch, base):
        start, period = 0, 3
        while epoch >= start + period:
            start, period = start + period, period * 2
        return 0.001 + (base - 0.001) * (1 + math.cos(math.pi * (epoch - start) / period)) / 2

    np.testing.assert_allclose(_rates(optimizer, scheduler, 25), _per_epoch(expected, 25, BASES), rtol=1e-12)
    scheduler.step(10.5)  # in the period of 12 that starts at epoch 3 + 6 = 9
    assert (scheduler.T_i, scheduler.T_cur, scheduler.last_epoch) == (12, 1.5, 10)
    want = 0.001 + (0.1 - 0.001) * (1 + math.cos(math.pi * 1.5 / 12)) / 2
    assert scheduler.get_last_lr()[0] == pytest.approx(want, rel=1e-12)


def test_cyclic_triangular_modes_and_momentum():
    """CyclicLR: a triangle from base_lr to max_lr (up 2 steps, down 4), halved each cycle in
    triangular2; momentum runs the opposite way between its bounds."""
    optimizer = _optimizer(momentum=0.9)
    scheduler = S.CyclicLR(optimizer, base_lr=0.01, max_lr=0.07, step_size_up=2, step_size_down=4,
                           mode="triangular2", base_momentum=0.8, max_momentum=0.95)
    group = optimizer.param_groups[0]
    lrs, momenta = [group["lr"]], [group["momentum"]]
    for _ in range(18):
        optimizer.step()
        scheduler.step()
        lrs.append(group["lr"])
        momenta.append(group["momentum"])
    # How far up the triangle each step of a 6-step cycle is, and each cycle's height.
    climbed = np.array([[0, 0.5, 1, 0.75, 0.5, 0.25][k % 6] * 0.5 ** (k // 6) for k in range(19)])
    np.testing.assert_allclose(lrs, 0.01 + 0.06 * climbed, rtol=1e-12)
    np.testing.assert_allclose(momenta, 0.95 - 0.15 * climbed, rtol=1e-12)
    assert (group["base_momentum"], group["max_momentum"]) == (0.8, 0.95)


def test_cyclic_exp_range_and_custom_scale():
    """exp_range scales by gamma**iteration; a custom scale_fn with scale_mode='cycle' gets the
    cycle number (1, 2, ...). Adam's beta1 cycles and beta2 stays."""
    optimizer = _optimizer("Adam", betas=(0.9, 0.99))
    scheduler = S.CyclicLR(optimizer, base_lr=0.001, max_lr=0.011, step_size_up=3, mode="exp_range", gamma=0.9)
    got = _rates(optimizer, scheduler, 12)[:, 0]
    triangle = [0, 1 / 3, 2 / 3, 1, 2 / 3, 1 / 3]
    np.testing.assert_allclose(got, [0.001 + 0.01 * triangle[k % 6] * 0.9**k for k in range(13)], rtol=1e-12)
    assert optimizer.param_groups[0]["betas"][1] == 0.99
    optimizer = _optimizer()
    scheduler = S.CyclicLR(optimizer, base_lr=0.0, max_lr=1.0, step_size_up=1, scale_fn=lambda c: 1 / c,
                           cycle_momentum=False)
    got = _rates(optimizer, scheduler, 6)[:, 0]
    np.testing.assert_allclose(got, [0, 1, 0, 1 / 2, 0, 1 / 3, 0], atol=1e-15)


@pytest.mark.parametrize("strategy", ["cos", "linear"])
def test_one_cycle_endpoints_and_shape(strategy):
    """OneCycleLR: starts at max_lr/div_factor, reaches max_lr at the end of warmup, ends at
    initial/final_div_factor; momentum goes max -> base -> max; every step on the anneal curve."""
    total, pct = 21, 0.25
    optimizer = _optimizer(momentum=0.9)
    scheduler = S.OneCycleLR(optimizer, max_lr=0.5, total_steps=total, pct_start=pct, anneal_strategy=strategy,
                             div_factor=10.0, final_div_factor=100.0, base_momentum=0.8, max_momentum=0.95)
    lrs = _rates(optimizer, scheduler, total - 1)[:, 0]

    def anneal(start, end, t):
        if strategy == "cos":
            return end + (start - end) * (1 + math.cos(math.pi * t)) / 2
        return start + (end - start) * t

    peak = pct * total - 1
    want = [anneal(0.05, 0.5, k / peak) if k <= peak else anneal(0.5, 0.0005, (k - peak) / (total - 1 - peak))
            for k in range(total)]
    np.testing.assert_allclose(lrs, want, rtol=1e-12)
    assert lrs[0] == pytest.approx(0.05) and lrs[-1] == pytest.approx(0.0005)
    assert max(lrs) == pytest.approx(0.5, rel=0.1)
    assert optimizer.param_groups[0]["momentum"] == pytest.approx(0.95)
    optimizer.step()
    scheduler.step()  # step total_steps is still allowed, as in PyTorch
    with pytest.raises(ValueError, match=f"Tried to step {total + 1} times"):
        scheduler.step()


def test_one_cycle_three_phases_returns_to_the_initial_rate():
    """three_phase: up to max_lr, back down to the initial rate at twice the warmup, then to min_lr."""
    optimizer = _optimizer(momentum=0.9)
    scheduler = S.OneCycleLR(optimizer, max_lr=1.0, epochs=4, steps_per_epoch=5, pct_start=0.25,
                             three_phase=True, anneal_strategy="linear")
    lrs = _rates(optimizer, scheduler, 19)[:, 0]
    np.testing.assert_allclose(lrs[[0, 4, 8, 19]], [0.04, 1.0, 0.04, 0.04 / 1e4], rtol=1e-12)


def test_sequential_warmup_then_cosine():
    """LinearLR warmup for 4 epochs, then cosine from the base rate, restarting at its epoch 0."""
    optimizer = _optimizer(lrs=BASES)
    warmup = S.LinearLR(optimizer, start_factor=0.2, total_iters=4)
    cosine = S.CosineAnnealingLR(optimizer, T_max=10, eta_min=0.0)
    scheduler = S.SequentialLR(optimizer, [warmup, cosine], milestones=[4])

    def expected(k, base):
        if k < 4:
            return base * (0.2 + 0.8 * k / 4)
        return base * (1 + math.cos(math.pi * (k - 4) / 10)) / 2

    np.testing.assert_allclose(_rates(optimizer, scheduler, 14), _per_epoch(expected, 14, BASES), rtol=1e-12)
    assert scheduler.last_epoch == 14 and cosine.last_epoch == 10


def test_chained_schedulers_multiply():
    """ChainedScheduler composes a ConstantLR warmup with ExponentialLR: the factors multiply."""
    optimizer = _optimizer(lrs=BASES)
    scheduler = S.ChainedScheduler([S.ConstantLR(optimizer, factor=0.5, total_iters=3),
                                    S.ExponentialLR(optimizer, gamma=0.9)])
    expected = _per_epoch(lambda k, b: b * (0.5 if k < 3 else 1.0) * 0.9**k, 10, BASES)
    np.testing.assert_allclose(_rates(optimizer, scheduler, 10), expected, rtol=1e-12)
    assert not hasattr(scheduler, "last_epoch")


def test_reduce_on_plateau_after_patience_with_cooldown_and_floor():
    """min mode, patience 2, cooldown 1, floor 0.004: the rate drops tenfold once three epochs in a
    row fail to improve, not during the cooldown, and never below the floor."""
    optimizer = _optimizer()
    scheduler = S.ReduceLROnPlateau(optimizer, patience=2, cooldown=1, min_lr=0.004)
    metrics = [1.0, 0.5, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6]
    rates = []
    for metric in metrics:
        scheduler.step(tp.tensor(metric, dtype=tp.float64))
        rates.append(scheduler.get_last_lr()[0])
    # Bad epochs start at index 2; the third (index 4) reduces; one cooldown epoch (index 5) does
    # not count, so the next reduction is three bad epochs later (index 8), then the floor.
    want = [0.1] * 4 + [0.01] * 4 + [0.004] * 5
    np.testing.assert_allclose(rates, want, rtol=1e-12)
    assert scheduler.best == 0.5


def test_reduce_on_plateau_max_mode_and_thresholds():
    """max mode with an absolute threshold: a gain below the threshold counts as no gain."""
    optimizer = _optimizer()
    scheduler = S.ReduceLROnPlateau(optimizer, mode="max", patience=0, factor=0.5, threshold=0.1,
                                    threshold_mode="abs")
    for metric in (1.0, 1.05, 1.2, 1.25):
        scheduler.step(metric)
    assert scheduler.get_last_lr() == [pytest.approx(0.025)]  # 1.05 and 1.25 are not gains of 0.1
    assert scheduler.best == 1.2


def test_state_dict_round_trips():
    """A restored scheduler continues the schedule; callable objects' attributes are saved,
    plain functions are not."""
    optimizer = _optimizer()
    scheduler = S.StepLR(optimizer, step_size=2, gamma=0.5)
    for _ in range(5):
        optimizer.step()
        scheduler.step()
    state = scheduler.state_dict()
    assert "optimizer" not in state and state["last_epoch"] == 5
    other = _optimizer()
    other.load_state_dict(optimizer.state_dict())
    restored = S.StepLR(other, step_size=99)
    restored.load_state_dict(state)
    other.step()
    restored.step()
    assert restored.step_size == 2 and restored.get_last_lr() == [pytest.approx(0.1 * 0.5**3)]

    class Decay:
        def __init__(self):
            self.rate = 0.5

        def __call__(self, epoch):
            return self.rate**epoch

    decay = Decay()
    lam = S.LambdaLR(_optimizer(lrs=BASES), lr_lambda=[lambda k: 1.0, decay])
    saved = lam.state_dict()
    assert saved["lr_lambdas"] == [None, {"rate": 0.5}]
    decay.rate = 0.9
    lam.load_state_dict(saved)
    assert decay.rate == 0.5

    optimizer = _optimizer()
    plateau = S.ReduceLROnPlateau(optimizer, mode="max")
    plateau.step(2.0)
    fresh = S.ReduceLROnPlateau(_optimizer())
    fresh.load_state_dict(plateau.state_dict())
    assert (fresh.mode, fresh.best, fresh.mode_worse) == ("max", 2.0, -math.inf)


def test_sequential_state_dict_holds_each_member():
    optimizer = _optimizer()
    scheduler = S.SequentialLR(optimizer, [S.ConstantLR(optimizer, factor=0.5, total_iters=2),
                                           S.ExponentialLR(optimizer, gamma=0.9)], milestones=[3])
    for _ in range(4):
        optimizer.step()
        scheduler.step()
    state = scheduler.state_dict()
    assert [member["last_epoch"] for member in state["_schedulers"]] == [2, 1]
    other = _optimizer()
    restored = S.SequentialLR(other, [S.ConstantLR(other, factor=0.5, total_iters=2),
                                      S.ExponentialLR(other, gamma=0.9)], milestones=[3])
    restored.load_state_dict(state)
    other.param_groups[0]["lr"] = scheduler.get_last_lr()[0]
    for _ in range(3):
        optimizer.step()
        other.step()
        scheduler.step()
        restored.step()
    assert restored.get_last_lr() == scheduler.get_last_lr() == [pytest.approx(0.1 * 0.9**4)]


def test_step_order_warnings():
    """Stepping the scheduler before the optimizer warns once; replacing optimizer.step after
    the scheduler was made warns that the order can no longer be checked; the right order is
    silent, and the optimizer's step still runs (closure and return value included)."""
    optimizer = _optimizer()
    scheduler = S.StepLR(optimizer, step_size=1)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        scheduler.step()
    optimizer = _optimizer()
    scheduler = S.StepLR(optimizer, step_size=1)
    optimizer.step = lambda closure=None: None
    with pytest.warns(UserWarning, match="has been overridden"):
        scheduler.step()
    optimizer = _optimizer()
    scheduler = S.ExponentialLR(optimizer, gamma=0.5)
    S.StepLR(optimizer, step_size=3)  # a second scheduler does not wrap the step twice
    assert optimizer.step(lambda: 7.0) == 7.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scheduler.step()
        scheduler.step()


def test_the_step_wrapper_does_not_keep_the_optimizer_alive():
    """The wrapper on optimizer.step refers to its optimizer weakly: no reference cycle."""
    optimizer = _optimizer()
    scheduler = S.ExponentialLR(optimizer, gamma=0.5)
    gone = weakref.ref(optimizer)
    gc.disable()
    try:
        del scheduler, optimizer
        assert gone() is None
    finally:
        gc.enable()


def test_resuming_needs_initial_lr():
    """last_epoch >= 0 resumes from each group's initial_lr, which must be there."""
    with pytest.raises(KeyError, match="initial_lr"):
        S.ExponentialLR(_optimizer(), gamma=0.5, last_epoch=3)
    optimizer = _optimizer()
    optimizer.param_groups[0]["initial_lr"] = 0.2
    scheduler = S.StepLR(optimizer, step_size=2, gamma=0.5, last_epoch=3)
    assert scheduler.base_lrs == [0.2] and scheduler.last_epoch == 4
    assert scheduler.get_last_lr() == [pytest.approx(0.05)]  # epoch 4 is a step boundary


@pytest.mark.parametrize("make,error,match", [
    (lambda o: S.ConstantLR(o, factor=1.5), ValueError, "Constant multiplicative factor"),
    (lambda o: S.LinearLR(o, start_factor=0.0), ValueError, "Starting multiplicative factor"),
    (lambda o: S.LinearLR(o, end_factor=-0.1), ValueError, "Ending multiplicative factor"),
    (lambda o: S.LambdaLR(o, lr_lambda=[abs, abs]), ValueError, "Expected 1 lr_lambdas, but got 2"),
    (lambda o: S.MultiplicativeLR(o, lr_lambda=2), TypeError, "lr_lambda should be a function"),
    (lambda o: S.CosineAnnealingWarmRestarts(o, T_0=0), ValueError, "positive integer T_0"),
    (lambda o: S.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=0), ValueError, "T_mult >= 1"),
    (lambda o: S.CosineAnnealingWarmRestarts(o, T_0=2, eta_min="0"), ValueError, "float or int eta_min"),
    (lambda o: S.CyclicLR(o, base_lr=[0.1, 0.2], max_lr=1.0), ValueError, "base_lr must have the same length"),
    (lambda o: S.CyclicLR(o, base_lr=0.1, max_lr=1.0, mode="saw"), ValueError, "mode is invalid"),
    (lambda o: S.OneCycleLR(o, max_lr=1.0), ValueError, "total_steps OR"),
    (lambda o: S.OneCycleLR(o, max_lr=1.0, epochs=2, steps_per_epoch=0), ValueError,
     "positive integer steps_per_epoch"),
    (lambda o: S.OneCycleLR(o, max_lr=1.0, total_steps=5, pct_start=1), ValueError, "pct_start"),
    (lambda o: S.OneCycleLR(o, max_lr=1.0, total_steps=5, anneal_strategy="cosine"), ValueError, "anneal_strategy"),
    (lambda o: S.ReduceLROnPlateau(o, factor=1.0), ValueError, "Factor should be < 1.0"),
    (lambda o: S.ReduceLROnPlateau(o, threshold_mode="pct"), ValueError, "threshold mode pct is unknown"),
    (lambda o: S.SequentialLR(o, [S.StepLR(o, 2)], milestones=[1]), ValueError, "one more than the number"),
    (lambda o: S.SequentialLR(o, [S.StepLR(o, 2), S.StepLR(_optimizer(), 2)], milestones=[1]), ValueError,
     "same optimizer"),
    (lambda o: S.ChainedScheduler([S.ReduceLROnPlateau(o)]), ValueError, "does not support `ReduceLROnPlateau`"),
    (lambda o: S.StepLR(object(), step_size=1), TypeError, "object is not an Optimizer"),
])
def test_errors(make, error, match):
    with pytest.raises(error, match=match):
        make(_optimizer(momentum=0.9))
