"""sgd_step_, SGD's update as one op: tp.optim.SGD follows torch.optim.SGD's trajectory for every
option (momentum 0 or not, dampening, Nesterov, weight decay, maximize) on every backend, and the
op keeps its arguments' contract (issue 14)."""
import itertools

import numpy as np
import pytest

import tensorplug as tp
from tensorplug.optim._fused import sgd_step_
from tests.torch_reference import torch_or_skip


def _option_sets():
    for momentum, dampening, nesterov, weight_decay, maximize in itertools.product(
            (0.0, 0.9), (0.0, 0.3), (False, True), (0.0, 0.1), (False, True)):
        if nesterov and (momentum == 0 or dampening != 0):
            continue  # refused by both libraries
        if momentum == 0 and dampening != 0:
            continue  # dampening only acts on the buffer
        yield dict(momentum=momentum, dampening=dampening, nesterov=nesterov, weight_decay=weight_decay,
                   maximize=maximize)


_OPTIONS = list(_option_sets())


def _trajectory(lib, device, values, grads, options):
    """The parameters after each step, and the momentum buffers after the last."""
    params = [lib.tensor(v, device=device, requires_grad=True) if lib is tp else lib.tensor(v, requires_grad=True)
              for v in values]
    opt = lib.optim.SGD(params, lr=0.05, **options)
    seen = []
    for step in grads:
        for p, g in zip(params, step):
            if g is None:
                p.grad = None
            else:
                p.grad = lib.tensor(g, device=device) if lib is tp else lib.tensor(g)
        opt.step()
        seen.append([p.detach().cpu().numpy().copy() for p in params])
    buffers = [opt.state[p].get("momentum_buffer") for p in params]
    return seen, [None if b is None else b.cpu().numpy() for b in buffers]


@pytest.mark.parametrize("options", _OPTIONS, ids=lambda o: "-".join(f"{k}={v}" for k, v in o.items() if v) or "plain")
def test_sgd_matches_torch_in_float64(device, options):
    """Four steps on two float64 parameters (a matrix and a vector; the vector misses a gradient in
    the second step) match torch.optim.SGD's parameters and momentum buffers."""
    torch = torch_or_skip()
    rng = np.random.default_rng(14)
    values = [rng.standard_normal((5, 3)), rng.standard_normal(4)]
    grads = [[rng.standard_normal(v.shape) for v in values] for _ in range(4)]
    grads[1][1] = None
    ours, our_buffers = _trajectory(tp, device, values, grads, options)
    theirs, their_buffers = _trajectory(torch, None, values, grads, options)
    for step_ours, step_theirs in zip(ours, theirs):
        for a, b in zip(step_ours, step_theirs):
            np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-14)
    for a, b in zip(our_buffers, their_buffers):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-14)


def test_sgd_float32_matches_torch(device):
    """float32 parameters with every option on: PyTorch's values to float32 rounding."""
    torch = torch_or_skip()
    rng = np.random.default_rng(2)
    values = [rng.standard_normal((6, 7)).astype(np.float32)]
    grads = [[rng.standard_normal((6, 7)).astype(np.float32)] for _ in range(3)]
    options = dict(momentum=0.9, dampening=0.1, weight_decay=0.01, maximize=True)
    ours, _ = _trajectory(tp, device, values, grads, options)
    theirs, _ = _trajectory(torch, None, values, grads, options)
    np.testing.assert_allclose(ours[-1][0], theirs[-1][0], rtol=1e-6, atol=1e-6)


def test_momentum_buffer_requires_momentum():
    """A buffer is given exactly when momentum is not 0."""
    p, g = tp.ones(3), tp.ones(3)
    with pytest.raises(ValueError, match="momentum_buffer"):
        sgd_step_(p, g, None, 0.1, 0.9, 0.0, 0.0, False, False, True)
    with pytest.raises(ValueError, match="momentum_buffer"):
        sgd_step_(p, g, tp.zeros(3), 0.1, 0.0, 0.0, 0.0, False, False, True)


def test_update_bumps_versions():
    """The parameter and the buffer get new versions: a graph that saved either refuses backward."""
    p = tp.ones(4, requires_grad=True)
    saved = (p * p).sum()
    buf = tp.zeros(4, requires_grad=True)
    saved_buf = (buf * buf).sum()
    with tp.no_grad():
        sgd_step_(p, tp.ones(4), buf, 0.1, 0.9, 0.0, 0.0, False, False, False)
    for loss in (saved, saved_buf):
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            loss.backward()


def test_non_contiguous_gradient():
    """A strided gradient (a column of a matrix) gives the same update as its contiguous copy."""
    rng = np.random.default_rng(5)
    g = tp.tensor(rng.standard_normal((6, 2)))[:, 0]
    results = []
    for grad in (g, g.contiguous()):
        p = tp.tensor(np.arange(6.0), requires_grad=True)
        opt = tp.optim.SGD([p], lr=0.1, momentum=0.5, nesterov=True)
        for _ in range(2):
            p.grad = grad
            opt.step()
        results.append(p.detach().numpy())
    np.testing.assert_array_equal(results[0], results[1])
