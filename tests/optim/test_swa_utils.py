"""tp.optim.swa_utils (issue 13): AveragedModel, SWALR, update_bn and the averaging functions,
against PyTorch 2.13 and against NumPy."""

import math

import numpy as np
import pytest

import tensorplug as tp
from tensorplug.optim import swa_utils


def _model(lib, seed=0):
    """Linear -> BatchNorm1d -> Linear with weights from NumPy, in tensorplug or torch."""
    rng = np.random.default_rng(seed)
    model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4), lib.nn.Linear(4, 2))
    with lib.no_grad():
        for p in model.parameters():
            p.copy_(lib.tensor(rng.standard_normal(tuple(p.shape)), dtype=lib.float32))
    return model


def _perturb(lib, model, seed):
    rng = np.random.default_rng(seed)
    with lib.no_grad():
        for p in model.parameters():
            p.add_(lib.tensor(rng.standard_normal(tuple(p.shape)), dtype=lib.float32))
        model(lib.tensor(rng.standard_normal((5, 3)), dtype=lib.float32))  # moves the BatchNorm buffers


def test_swa_is_the_mean_and_ema_the_decayed_average_in_float64():
    """Three updates: SWA equals the NumPy mean of the snapshots, EMA the NumPy recurrence."""
    model = tp.nn.Linear(3, 2).double()
    swa = swa_utils.AveragedModel(model)
    ema = swa_utils.AveragedModel(model, multi_avg_fn=swa_utils.get_ema_multi_avg_fn(0.9))
    ema_one = swa_utils.AveragedModel(model, avg_fn=swa_utils.get_ema_avg_fn(0.9))
    snapshots, expected_ema = [], None
    for seed in range(3):
        with tp.no_grad():
            model.weight.add_(tp.tensor(np.random.default_rng(seed).standard_normal((2, 3))))
        w = model.weight.detach().numpy().copy()
        snapshots.append(w)
        expected_ema = w if expected_ema is None else 0.9 * expected_ema + 0.1 * w
        for averaged in (swa, ema, ema_one):
            averaged.update_parameters(model)
    np.testing.assert_allclose(swa.module.weight.detach().numpy(), np.mean(snapshots, 0), rtol=1e-12)
    np.testing.assert_allclose(ema.module.weight.detach().numpy(), expected_ema, rtol=1e-12)
    np.testing.assert_allclose(ema_one.module.weight.detach().numpy(), expected_ema, rtol=1e-12)
    assert swa.n_averaged.item() == 3 and swa.n_averaged.dtype == tp.int64


def test_update_bn_recomputes_statistics_as_numpy():
    """update_bn resets the running mean/var to the cumulative averages over the loader's batches."""
    model = tp.nn.Sequential(tp.nn.BatchNorm1d(2, momentum=0.3)).double()
    batches = [np.random.default_rng(k).standard_normal((6, 2)) for k in range(3)]
    model.eval()
    swa_utils.update_bn([(tp.tensor(b), 0) for b in batches], model)
    bn = model[0]
    np.testing.assert_allclose(bn.running_mean.numpy(), np.mean([b.mean(0) for b in batches], 0), rtol=1e-12)
    np.testing.assert_allclose(bn.running_var.numpy(), np.mean([b.var(0, ddof=1) for b in batches], 0), rtol=1e-12)
    assert bn.momentum == 0.3 and not model.training


@pytest.mark.parametrize("call, error, message", [
    (lambda m, o: swa_utils.AveragedModel(m, avg_fn=swa_utils.get_ema_avg_fn(),
                                          multi_avg_fn=swa_utils.get_ema_multi_avg_fn()), AssertionError, "Only one"),
    (lambda m, o: swa_utils.get_ema_multi_avg_fn(2), ValueError, "Invalid decay value 2"),
    (lambda m, o: swa_utils.SWALR(o, 0.1, anneal_strategy="x"), ValueError, "must be one of 'cos' or 'linear'"),
    (lambda m, o: swa_utils.SWALR(o, 0.1, anneal_epochs=-1), ValueError, "equal or greater than 0, got -1"),
    (lambda m, o: swa_utils.SWALR(o, [0.1, 0.2]), ValueError, "swa_lr must have the same length"),
])
def test_errors_as_pytorch(call, error, message):
    """Bad arguments raise PyTorch's exceptions and messages."""
    model = tp.nn.Linear(2, 2)
    with pytest.raises(error, match=message):
        call(model, tp.optim.SGD(model.parameters(), lr=1.0))


def _torch():
    return pytest.importorskip("torch", reason="PyTorch is the reference; CI has none")


@pytest.mark.parametrize("options", [
    dict(), dict(use_buffers=True), dict(multi_avg_fn="ema"), dict(avg_fn="ema", use_buffers=True),
    dict(multi_avg_fn="swa"),
], ids=str)
def test_averaged_model_matches_torch(options):
    """Parameters, buffers and outputs of the averaged model equal torch's after four updates."""
    torch = _torch()
    results = []
    for lib, utils in ((tp, swa_utils), (torch, torch.optim.swa_utils)):
        kwargs = dict(options)
        if kwargs.get("multi_avg_fn") == "ema":
            kwargs["multi_avg_fn"] = utils.get_ema_multi_avg_fn(0.8)
        if kwargs.get("multi_avg_fn") == "swa":
            kwargs["multi_avg_fn"] = utils.get_swa_multi_avg_fn()
        if kwargs.get("avg_fn") == "ema":
            kwargs["avg_fn"] = utils.get_ema_avg_fn(0.7)
        model = _model(lib)
        averaged = utils.AveragedModel(model, **kwargs)
        for seed in range(4):
            _perturb(lib, model, seed + 10)
            averaged.update_parameters(model)
        averaged.eval()
        out = averaged(lib.tensor(np.ones((2, 3)), dtype=lib.float32))
        state = {k: v.detach().numpy() for k, v in averaged.state_dict().items()}
        results.append((state, out.detach().numpy()))
    (tp_state, tp_out), (th_state, th_out) = results
    assert sorted(tp_state) == sorted(th_state)
    for key in th_state:
        np.testing.assert_allclose(tp_state[key], th_state[key], rtol=1e-5, atol=1e-6, err_msg=key)
    np.testing.assert_allclose(tp_out, th_out, rtol=1e-5, atol=1e-6)


def test_update_bn_matches_torch():
    """update_bn on an averaged model gives torch's running statistics and eval outputs."""
    torch = _torch()
    batches = [np.random.default_rng(k).standard_normal((8, 3)) for k in range(4)]
    results = []
    for lib, utils in ((tp, swa_utils), (torch, torch.optim.swa_utils)):
        model = _model(lib)
        averaged = utils.AveragedModel(model)
        averaged.update_parameters(model)
        utils.update_bn([lib.tensor(b, dtype=lib.float32) for b in batches], averaged)
        bn = averaged.module[1]
        results.append([bn.running_mean.numpy(), bn.running_var.numpy(), bn.num_batches_tracked.numpy()])
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("strategy, epochs", [("cos", 5), ("linear", 3), ("cos", 0), ("linear", 1)])
def test_swalr_matches_torch(strategy, epochs):
    """SWALR's learning rates, two groups with two swa_lr values, equal torch's step by step."""
    torch = _torch()
    rates = []
    for lib in (tp, torch):
        groups = [{"params": [lib.ones(2, requires_grad=True)]}, {"params": [lib.ones(2, requires_grad=True)], "lr": 0.3}]
        opt = lib.optim.SGD(groups, lr=1.0)
        sched = lib.optim.swa_utils.SWALR(opt, swa_lr=[0.05, 0.01], anneal_epochs=epochs, anneal_strategy=strategy)
        seen = [sched.get_last_lr()]
        for _ in range(8):
            opt.step()
            sched.step()
            seen.append(sched.get_last_lr())
        rates.append(seen)
    np.testing.assert_allclose(np.array(rates[0]), np.array(rates[1]), rtol=1e-12)


def test_averaging_on_every_device(device):
    """An averaged model on each backend (device=...) holds the CPU's average, and update_bn runs there."""
    model = _model(tp)
    averaged = swa_utils.AveragedModel(model, device=device)
    reference = swa_utils.AveragedModel(model)
    for seed in range(3):
        _perturb(tp, model, seed)
        averaged.update_parameters(model)
        reference.update_parameters(model)
    assert averaged.n_averaged.device.type == device
    swa_utils.update_bn([tp.randn(6, 3) for _ in range(2)], averaged, device=device)
    for (key, got), want in zip(averaged.state_dict().items(), reference.state_dict().values()):
        assert got.device.type == device
        if "running" not in key and "num_batches" not in key:
            np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=1e-6, err_msg=key)


@pytest.mark.parametrize("strategy", ["cos", "linear"])
@pytest.mark.parametrize("epochs", [0, 1, 4])
def test_swalr_follows_the_annealing_formula(strategy, epochs):
    """Alone on an optimizer, SWALR's k-th rate is swa_lr * a + lr * (1 - a), a the annealing
    weight at k / anneal_epochs (cos: (1 - cos(pi f)) / 2, linear: f), swa_lr at once without epochs."""
    def weight(k):
        if epochs == 0:
            return 1.0
        fraction = min(1.0, k / epochs)
        return fraction if strategy == "linear" else (1 - math.cos(math.pi * fraction)) / 2

    opt = tp.optim.SGD([tp.ones(1, requires_grad=True)], lr=0.8)
    sched = swa_utils.SWALR(opt, swa_lr=0.05, anneal_epochs=epochs, anneal_strategy=strategy)
    assert sched.anneal_func(0.5) == pytest.approx(0.5)
    for k in range(1, 7):
        opt.step()
        sched.step()
        np.testing.assert_allclose(sched.get_last_lr(), [0.05 * weight(k) + 0.8 * (1 - weight(k))], rtol=1e-12)


def test_swalr_state_dict_round_trip():
    """The state dict holds PyTorch's keys and resumes the schedule."""
    def make():
        opt = tp.optim.SGD([tp.ones(1, requires_grad=True)], lr=1.0)
        return opt, swa_utils.SWALR(opt, swa_lr=0.1, anneal_epochs=5, anneal_strategy="linear")

    opt, sched = make()
    for _ in range(2):
        opt.step()
        sched.step()
    saved = sched.state_dict()
    assert saved["_anneal_strategy"] == "linear" and saved["anneal_epochs"] == 5
    other_opt, other = make()
    other_opt.param_groups[0]["lr"] = opt.param_groups[0]["lr"]
    other.load_state_dict(saved)
    other_opt.step()
    other.step()
    np.testing.assert_allclose(other.get_last_lr(), [0.1 * 0.6 + 1.0 * 0.4], rtol=1e-12)


def test_ema_of_integer_tensors_and_decay_checks():
    """Integer buffers follow the same average, truncated as copy_ does; decays outside [0, 1]
    are refused."""
    ema = swa_utils.get_ema_multi_avg_fn(0.5)
    counts = [tp.tensor([10, 3], dtype=tp.int64)]
    ema(counts, [tp.tensor([4, 8], dtype=tp.int64)], None)
    np.testing.assert_array_equal(counts[0].numpy(), np.trunc(0.5 * np.array([10, 3]) + 0.5 * np.array([4, 8])))
    for bad in (-0.1, 1.5):
        with pytest.raises(ValueError, match="Invalid decay value"):
            swa_utils.get_ema_avg_fn(bad)
