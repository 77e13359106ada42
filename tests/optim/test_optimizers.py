"""Each optimizer matches torch.optim over 12 steps on identical parameters and gradients."""
import numpy as np
import pytest

import tensorplug as tp

torch = pytest.importorskip("torch")

STEPS = 12

CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.5, maximize=True)),
    ("Adam", dict()),
    ("Adam", dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
    ("Adam", dict(lr=0.01, amsgrad=True)),
    ("Adam", dict(lr=0.01, maximize=True, weight_decay=0.05)),
    ("AdamW", dict()),
    ("AdamW", dict(lr=0.01, weight_decay=0.3, amsgrad=True)),
    ("AdamW", dict(lr=0.01, betas=(0.5, 0.9), maximize=True)),
    ("RMSprop", dict()),
    ("RMSprop", dict(lr=0.01, alpha=0.9, eps=1e-6, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, momentum=0.9)),
    ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5, maximize=True)),
    ("Adagrad", dict()),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1, initial_accumulator_value=0.5, eps=1e-8)),
    ("Adagrad", dict(lr=0.1, maximize=True)),
]


def _run_pair(name, kwargs, steps=STEPS):
    """Run tensorplug's and torch's optimizer side by side; return both final parameters."""
    rng = np.random.default_rng(0)
    shapes = [(4, 3), (5,)]
    inits = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    grads = [[rng.standard_normal(s).astype(np.float32) for s in shapes] for _ in range(steps)]
    tp_params = [tp.tensor(a, requires_grad=True) for a in inits]
    th_params = [torch.tensor(a, requires_grad=True) for a in inits]
    tp_opt = getattr(tp.optim, name)(tp_params, **kwargs)
    th_opt = getattr(torch.optim, name)(th_params, **kwargs)
    for step_grads in grads:
        for p, q, g in zip(tp_params, th_params, step_grads):
            p.grad = tp.tensor(g)
            q.grad = torch.tensor(g)
        tp_opt.step()
        th_opt.step()
    return tp_params, th_params, tp_opt, th_opt


@pytest.mark.parametrize("name,kwargs", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_matches_torch(name, kwargs):
    """Parameters after 12 steps agree with torch.optim to float32 rounding."""
    tp_params, th_params, _, _ = _run_pair(name, kwargs)
    for p, q in zip(tp_params, th_params):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("name,kwargs", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_state_matches_torch(name, kwargs):
    """The optimizer state has torch's keys and values (step counts, moments, buffers)."""
    _, _, tp_opt, th_opt = _run_pair(name, kwargs, steps=3)
    tp_sd, th_sd = tp_opt.state_dict(), th_opt.state_dict()
    assert sorted(tp_sd["state"]) == sorted(th_sd["state"])
    for index, th_state in th_sd["state"].items():
        tp_state = tp_sd["state"][index]
        assert sorted(tp_state) == sorted(th_state)
        for key, value in th_state.items():
            assert tp_state[key].dtype.name == str(value.dtype).replace("torch.", "")
            np.testing.assert_allclose(tp_state[key].numpy(), value.numpy(), rtol=2e-5, atol=2e-6)
    tp_group = {k: v for k, v in tp_sd["param_groups"][0].items()}
    th_group = {k: v for k, v in th_sd["param_groups"][0].items()}
    assert sorted(tp_group) == sorted(th_group)
    assert tp_group == th_group


def test_params_update_in_place_without_graph():
    """A step changes the parameter object itself and records no autograd history."""
    w = tp.ones(3, requires_grad=True)
    opt = tp.optim.Adam([w], lr=0.1)
    (w * w).sum().backward()
    before = w._version
    opt.step()
    assert w.grad_fn is None and w.requires_grad and w._version > before
    assert not np.allclose(w.detach().numpy(), 1.0)


def test_skips_parameters_without_grad():
    """Parameters whose grad is None are left alone and get no state."""
    a, b = tp.ones(2, requires_grad=True), tp.ones(2, requires_grad=True)
    opt = tp.optim.SGD([a, b], lr=0.5, momentum=0.9)
    a.grad = tp.ones(2)
    opt.step()
    np.testing.assert_allclose(a.detach().numpy(), [0.5, 0.5])
    np.testing.assert_allclose(b.detach().numpy(), [1.0, 1.0])
    assert b not in opt.state


def test_closure_runs_with_grad_and_returns_loss():
    """step(closure) evaluates the closure with grad enabled and returns its loss."""
    w = tp.tensor([2.0], requires_grad=True)
    opt = tp.optim.SGD([w], lr=0.25)

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert loss.item() == 4.0
    np.testing.assert_allclose(w.detach().numpy(), [1.0])


def test_param_groups_override_defaults():
    """Per-group hyperparameters override the constructor's; the rest come from defaults."""
    a, b = tp.ones(2, requires_grad=True), tp.ones(2, requires_grad=True)
    opt = tp.optim.SGD([{"params": [a]}, {"params": b, "lr": 0.5}], lr=0.1, momentum=0.9)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]
    assert opt.param_groups[1]["momentum"] == 0.9 and opt.param_groups[1]["params"] == [b]
    c = tp.ones(1, requires_grad=True)
    opt.add_param_group({"params": [c], "momentum": 0.0})
    assert opt.param_groups[2]["lr"] == 0.1 and opt.param_groups[2]["momentum"] == 0.0


def test_zero_grad():
    """zero_grad sets grads to None by default, or zeroes them in place with set_to_none=False."""
    w = tp.ones(2, requires_grad=True)
    opt = tp.optim.SGD([w], lr=0.1)
    w.grad = tp.ones(2)
    grad = w.grad
    opt.zero_grad(set_to_none=False)
    assert w.grad is grad and w.grad.tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert w.grad is None


@pytest.mark.parametrize(
    "make, error, message",
    [
        (lambda w: tp.optim.SGD(w[0], lr=0.1), TypeError, "iterable of Tensors or dicts"),
        (lambda w: tp.optim.SGD([], lr=0.1), ValueError, "empty parameter list"),
        (lambda w: tp.optim.SGD([w[0], w[0]], lr=0.1), ValueError, "duplicate parameters"),
        (lambda w: tp.optim.SGD([{"params": w[0]}, {"params": w[0]}], lr=0.1), ValueError, "more than one parameter group"),
        (lambda w: tp.optim.SGD([w[0] * 2], lr=0.1), ValueError, "non-leaf"),
        (lambda w: tp.optim.SGD([1.0], lr=0.1), TypeError, "can only optimize Tensors"),
        (lambda w: tp.optim.SGD(w, lr=-1.0), ValueError, "Invalid learning rate"),
        (lambda w: tp.optim.SGD(w, lr=0.1, nesterov=True), ValueError, "Nesterov momentum requires"),
        (lambda w: tp.optim.Adam(w, betas=(1.0, 0.9)), ValueError, "Invalid beta parameter at index 0"),
        (lambda w: tp.optim.Adam(w, fused=True), NotImplementedError, "fused"),
    ],
)
def test_argument_errors(make, error, message):
    """Bad parameters and hyperparameters raise PyTorch's exception types and messages."""
    params = [tp.ones(2, requires_grad=True)]
    with pytest.raises(error, match=message):
        make(params)
