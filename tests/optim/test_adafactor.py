"""Adafactor against a NumPy float64 reference of its documented update (run everywhere) and
against torch.optim.Adafactor (PyTorch 2.13) when installed: values, state and a state_dict
round trip."""
import copy

import numpy as np
import pytest

import tensorplug as tp

SHAPES = [(4, 3), (2, 3, 5), (5,)]


def _data(steps):
    rng = np.random.default_rng(0)
    inits = [rng.standard_normal(s) for s in SHAPES]
    grads = [[rng.standard_normal(s) for s in SHAPES] for _ in range(steps)]
    return inits, grads


def _reference_step(p, g, s, lr=1e-2, beta2_decay=-0.8, eps=(1e-30, 1e-3), d=1.0, weight_decay=0.0):
    t = s["t"] = s.get("t", 0) + 1
    weight, floor = t ** beta2_decay, eps[0]
    scale = max(eps[1], np.sqrt(np.mean(p * p))) * min(lr, 1 / np.sqrt(t))
    p = p * (1 - lr * weight_decay)
    if g.ndim > 1:
        s["row"] = (1 - weight) * s.get("row", 0) + weight * (g * g).mean(-1, keepdims=True)
        s["col"] = (1 - weight) * s.get("col", 0) + weight * (g * g).mean(-2, keepdims=True)
        v = s["row"] @ s["col"] / np.maximum(s["row"].mean(-2, keepdims=True), floor)
    else:
        s["v"] = (1 - weight) * s.get("v", 0) + weight * g * g
        v = s["v"]
    update = g / np.sqrt(np.maximum(v, floor * floor))
    return p - scale / max(1.0, np.sqrt(np.mean(update * update)) / d) * update


@pytest.mark.parametrize("options", [{}, dict(weight_decay=0.1, d=1.5, lr=0.05)])
def test_adafactor_matches_the_documented_update(options):
    inits, grads = _data(6)
    params = [tp.tensor(a, requires_grad=True) for a in inits]
    opt = tp.optim.Adafactor(params, eps=(1e-30, 1e-3), **options)
    expected, states = [a.copy() for a in inits], [{} for _ in inits]
    for step_grads in grads:
        for p, g in zip(params, step_grads):
            p.grad = tp.tensor(g)
        opt.step()
        expected = [_reference_step(e, g, s, eps=(1e-30, 1e-3), **options)
                    for e, g, s in zip(expected, step_grads, states)]
    for p, e in zip(params, expected):
        np.testing.assert_allclose(p.detach().numpy(), e, rtol=1e-10, atol=1e-12)
    assert sorted(opt.state[params[0]]) == ["col_var", "row_var", "step"]
    assert opt.state[params[1]]["row_var"].shape == (2, 3, 1) and opt.state[params[1]]["col_var"].shape == (2, 1, 5)
    assert sorted(opt.state[params[2]]) == ["step", "variance"]


def test_adafactor_and_its_state_dict_round_trip_match_pytorch():
    torch = pytest.importorskip("torch", reason="PyTorch 2.13 is the reference here")
    inits, grads = _data(4)

    def run(L):
        params = [L.tensor(a, dtype=L.float32, requires_grad=True) for a in inits]
        opt = L.optim.Adafactor(params, lr=0.05, weight_decay=0.01, maximize=True)
        for i, step_grads in enumerate(grads):
            if i == 2:  # continue in a new optimizer from the saved state
                saved = copy.deepcopy(opt.state_dict())
                opt = L.optim.Adafactor(params, lr=0.05, weight_decay=0.01, maximize=True)
                opt.load_state_dict(saved)
            for p, g in zip(params, step_grads):
                p.grad = L.tensor(g, dtype=L.float32)
            opt.step()
        return [p.detach().numpy() for p in params], saved["param_groups"]

    (theirs, their_groups), (ours, our_groups) = run(torch), run(tp)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert our_groups == their_groups


def test_adafactor_refuses_bad_arguments_as_pytorch_does():
    torch = pytest.importorskip("torch", reason="PyTorch 2.13 is the reference here")
    for bad in (dict(lr=-1.0), dict(beta2_decay=0.5), dict(eps=(-1.0, 1e-3)), dict(eps=(None, -1.0)), dict(d=0.5),
                dict(weight_decay=-1.0)):
        with pytest.raises(ValueError) as theirs:
            torch.optim.Adafactor([torch.ones(2, requires_grad=True)], **bad)
        with pytest.raises(ValueError, match=str(theirs.value).split(":")[0]):
            tp.optim.Adafactor([tp.ones(2, requires_grad=True)], **bad)
