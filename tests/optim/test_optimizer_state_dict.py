"""Optimizer state dicts: PyTorch's structure, and a round trip that resumes training exactly."""
import copy

import numpy as np
import pytest

import tensorplug as tp

torch = pytest.importorskip("torch")


def _train(opt, params, grads):
    for step_grads in grads:
        for p, g in zip(params, step_grads):
            p.grad = tp.tensor(g)
        opt.step()


def _grads(steps, seed=0):
    rng = np.random.default_rng(seed)
    return [[rng.standard_normal((3, 2)).astype(np.float32), rng.standard_normal(4).astype(np.float32)] for _ in range(steps)]


@pytest.mark.parametrize(
    "name,kwargs",
    [("SGD", dict(lr=0.1, momentum=0.9)), ("Adam", dict(lr=0.01, amsgrad=True)), ("AdamW", dict(lr=0.01)),
     ("RMSprop", dict(centered=True, momentum=0.3)), ("Adagrad", dict(lr_decay=0.1))],
)
def test_round_trip_resumes_identically(name, kwargs):
    """Training 5 steps, saving, loading into a fresh optimizer and training 5 more equals 10 straight."""
    grads = _grads(10)
    init = [np.ones((3, 2), np.float32), np.arange(4, dtype=np.float32)]
    straight = [tp.tensor(a, requires_grad=True) for a in init]
    opt = getattr(tp.optim, name)(straight, **kwargs)
    _train(opt, straight, grads)

    first = [tp.tensor(a, requires_grad=True) for a in init]
    opt1 = getattr(tp.optim, name)(first, **kwargs)
    _train(opt1, first, grads[:5])
    saved = copy.deepcopy(opt1.state_dict())
    resumed = [tp.tensor(p.detach().numpy(), requires_grad=True) for p in first]
    opt2 = getattr(tp.optim, name)(resumed, lr=123.0) if name != "Adagrad" else getattr(tp.optim, name)(resumed)
    opt2.load_state_dict(saved)
    assert opt2.param_groups[0]["lr"] == opt1.param_groups[0]["lr"]
    assert opt2.param_groups[0]["params"] == resumed
    _train(opt2, resumed, grads[5:])
    for a, b in zip(straight, resumed):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def test_structure_is_torchs():
    """Ints name parameters across groups; state holds tensors; groups list their param ints."""
    a, b, c = (tp.ones(2, requires_grad=True) for _ in range(3))
    opt = tp.optim.Adam([{"params": [a, b]}, {"params": [c], "lr": 0.5}])
    for p in (a, c):
        p.grad = tp.ones(2)
    opt.step()
    sd = opt.state_dict()
    assert sorted(sd) == ["param_groups", "state"]
    assert [g["params"] for g in sd["param_groups"]] == [[0, 1], [2]]
    assert sorted(sd["state"]) == [0, 2]
    assert sorted(sd["state"][0]) == ["exp_avg", "exp_avg_sq", "step"]
    assert isinstance(sd["state"][0]["step"], tp.Tensor) and sd["state"][0]["step"].item() == 1.0


def test_loads_torch_state_dict_values():
    """A torch optimizer's state dict, converted tensor by tensor, continues as torch does."""
    grads = _grads(8)
    init = [np.ones((3, 2), np.float32), np.arange(4, dtype=np.float32)]
    th = [torch.tensor(a, requires_grad=True) for a in init]
    th_opt = torch.optim.Adam(th, lr=0.02)
    for step_grads in grads[:4]:
        for p, g in zip(th, step_grads):
            p.grad = torch.tensor(g)
        th_opt.step()
    th_sd = th_opt.state_dict()
    converted = {
        "state": {i: {k: tp.tensor(v.numpy()) for k, v in s.items()} for i, s in th_sd["state"].items()},
        "param_groups": th_sd["param_groups"],
    }
    mine = [tp.tensor(p.detach().numpy(), requires_grad=True) for p in th]
    opt = tp.optim.Adam(mine)
    opt.load_state_dict(converted)
    _train(opt, mine, grads[4:])
    for step_grads in grads[4:]:
        for p, g in zip(th, step_grads):
            p.grad = torch.tensor(g)
        th_opt.step()
    for a, b in zip(mine, th):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=2e-5, atol=2e-6)


def test_load_casts_state_to_param_dtype():
    """Floating state is cast to the parameter's dtype; the step count stays as saved."""
    w = tp.ones(2, dtype=tp.float64, requires_grad=True)
    opt = tp.optim.Adam([w])
    opt.load_state_dict({
        "state": {0: {"step": tp.tensor(3.0), "exp_avg": tp.ones(2), "exp_avg_sq": tp.ones(2)}},
        "param_groups": [dict(opt.state_dict()["param_groups"][0])],
    })
    assert opt.state[w]["exp_avg"].dtype == tp.float64
    assert opt.state[w]["step"].dtype == tp.float32


def test_load_rejects_mismatched_groups():
    """A state dict with other group counts or sizes is refused with PyTorch's message."""
    a, b = tp.ones(2, requires_grad=True), tp.ones(2, requires_grad=True)
    sd = tp.optim.SGD([a, b], lr=0.1).state_dict()
    with pytest.raises(ValueError, match="doesn't match the size"):
        tp.optim.SGD([a], lr=0.1).load_state_dict(sd)
    with pytest.raises(ValueError, match="different number of parameter groups"):
        tp.optim.SGD([{"params": [a]}, {"params": [b]}], lr=0.1).load_state_dict(sd)
