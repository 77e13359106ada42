"""Muon against a NumPy float64 reference of its documented update on every backend, and against
torch.optim.Muon (PyTorch 2.13) when installed: values, state, a state_dict round trip and the
argument checks. Both libraries orthogonalize in bfloat16, so the orthogonalized part of a step is
compared at bfloat16's tolerance while the momentum buffer and the weight decay are exact."""
import copy

import numpy as np
import pytest

import tensorplug as tp
from tests.torch_reference import torch_or_skip

SHAPES = [(4, 6), (7, 3)]
COEFFICIENTS = (3.4445, -4.775, 2.0315)
# bfloat16 keeps 8 bits: after five iterations an entry of the orthogonalized update (of size
# up to about 0.8) is off by up to about 0.05.
ORTHOGONAL_ATOL = 0.08


def _data(steps):
    rng = np.random.default_rng(0)
    inits = [rng.standard_normal(s) for s in SHAPES]
    grads = [[rng.standard_normal(s) for s in SHAPES] for _ in range(steps)]
    return inits, grads


def _orthogonalized(update, steps=5, eps=1e-7):
    a, b, c = COEFFICIENTS
    x = update.T if update.shape[0] > update.shape[1] else update
    x = x / max(np.linalg.norm(x), eps)
    for _ in range(steps):
        gram = x @ x.T
        x = a * x + (b * gram + c * gram @ gram) @ x
    return x.T if update.shape[0] > update.shape[1] else x


def _reference_step(p, g, buf, lr, weight_decay=0.1, momentum=0.95, nesterov=True, adjust_lr_fn=None):
    """The step as documented (buffer as a running mean), returning the new parameter and buffer."""
    buf = momentum * buf + (1 - momentum) * g
    update = momentum * buf + (1 - momentum) * g if nesterov else buf
    rows, cols = p.shape
    scale = 0.2 * np.sqrt(max(rows, cols)) if adjust_lr_fn == "match_rms_adamw" else np.sqrt(max(1, rows / cols))
    return p * (1 - lr * weight_decay) - lr * scale * _orthogonalized(update), buf


@pytest.mark.parametrize("options", [dict(lr=0.02), dict(lr=0.05, nesterov=False, weight_decay=0.0,
                                                         adjust_lr_fn="match_rms_adamw")])
def test_muon_matches_the_documented_update(device, options):
    inits, grads = _data(3)
    params = [tp.tensor(a, device=device, requires_grad=True) for a in inits]
    opt = tp.optim.Muon(params, **options)
    buffers = [np.zeros(s) for s in SHAPES]
    for step_grads in grads:
        # Each step is checked from the parameters it starts at, so bfloat16's error does not compound.
        starts = [p.detach().cpu().numpy().copy() for p in params]
        for p, g in zip(params, step_grads):
            p.grad = tp.tensor(g, device=device)
        opt.step()
        for i, (p, g) in enumerate(zip(params, step_grads)):
            expected, buffers[i] = _reference_step(starts[i], g, buffers[i], **options)
            np.testing.assert_allclose(opt.state[p]["momentum_buffer"].cpu().numpy(), buffers[i], rtol=1e-12)
            np.testing.assert_allclose(p.detach().cpu().numpy(), expected, rtol=0,
                                       atol=ORTHOGONAL_ATOL * options["lr"] * np.sqrt(7 / 3))
    assert sorted(opt.state[params[0]]) == ["momentum_buffer"]
    assert all(p.dtype == tp.float64 for p in params)


def test_muon_and_its_state_dict_round_trip_match_pytorch():
    torch = torch_or_skip()
    inits, grads = _data(4)

    def run(L):
        params = [L.tensor(a, dtype=L.float32, requires_grad=True) for a in inits]
        make = lambda: L.optim.Muon(params, lr=0.02, weight_decay=0.05, adjust_lr_fn="original")  # noqa: E731
        opt = make()
        for i, step_grads in enumerate(grads):
            if i == 2:  # continue in a new optimizer from the saved state
                saved = copy.deepcopy(opt.state_dict())
                opt = make()
                opt.load_state_dict(saved)
            for p, g in zip(params, step_grads):
                p.grad = L.tensor(g, dtype=L.float32)
            opt.step()
        buffers = [opt.state[p]["momentum_buffer"].numpy() for p in params]
        return [p.detach().numpy() for p in params], buffers, saved["param_groups"]

    (theirs, their_buffers, their_groups), (ours, our_buffers, our_groups) = run(torch), run(tp)
    for a, b in zip(our_buffers, their_buffers):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=0, atol=4 * ORTHOGONAL_ATOL * 0.02 * np.sqrt(7 / 3))
    assert our_groups == their_groups


def test_muon_refuses_bad_arguments_as_pytorch_does():
    torch = torch_or_skip()
    constructor_errors = (dict(lr=-1.0), dict(weight_decay=-1.0), dict(momentum=-0.5), dict(adjust_lr_fn="cosine"))
    for bad in constructor_errors:
        with pytest.raises(ValueError) as theirs:
            torch.optim.Muon([torch.ones(2, 2, requires_grad=True)], **bad)
        with pytest.raises(ValueError, match=str(theirs.value)):
            tp.optim.Muon([tp.ones(2, 2, requires_grad=True)], **bad)
    for shape in [(3,), (2, 3, 4)]:
        with pytest.raises(ValueError) as theirs:
            torch.optim.Muon([torch.ones(shape, requires_grad=True)])
        with pytest.raises(ValueError, match=str(theirs.value).split(":")[0]):
            tp.optim.Muon([tp.ones(shape, requires_grad=True)])
    for bad in (dict(ns_steps=100), dict(ns_coefficients=(1.0, 2.0))):
        w = tp.ones(2, 3, requires_grad=True)
        opt = tp.optim.Muon([w], **bad)
        w.grad = tp.ones(2, 3)
        with pytest.raises(ValueError, match="Number of steps|exactly 3 values"):
            opt.step()
        assert opt.state[w] == {} and w.detach().numpy().tolist() == [[1.0] * 3] * 2  # nothing moved


def test_muon_refuses_complex_parameters():
    w = tp.ones(2, 2, dtype=tp.complex64, requires_grad=True)
    opt = tp.optim.Muon([w])
    w.grad = tp.ones(2, 2, dtype=tp.complex64)
    with pytest.raises(RuntimeError, match="Muon does not support complex parameters"):
        opt.step()
