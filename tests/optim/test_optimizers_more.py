"""Adadelta, Adamax, NAdam, RAdam, ASGD, Rprop and LBFGS: against NumPy float64 references written
from PyTorch's documented update rules (run everywhere), and against torch.optim when installed."""
import copy
import math

import numpy as np
import pytest

import tensorplug as tp

STEPS = 12
SHAPES = [(4, 3), (5,)]


def _torch():
    try:
        import torch
    except ImportError:
        pytest.skip("PyTorch is not installed")
    return torch


def _data(steps=STEPS):
    rng = np.random.default_rng(0)
    inits = [rng.standard_normal(s) for s in SHAPES]
    grads = [[rng.standard_normal(s) for s in SHAPES] for _ in range(steps)]
    return inits, grads


# --- NumPy references: one function per optimizer, (param, grad, state, hyperparameters) -> param ------
def ref_adadelta(p, g, s, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, maximize=False):
    g = -g if maximize else g
    g = g + weight_decay * p
    s.setdefault("square_avg", np.zeros_like(p))
    s.setdefault("acc_delta", np.zeros_like(p))
    s["square_avg"] = rho * s["square_avg"] + (1 - rho) * g * g
    delta = np.sqrt(s["acc_delta"] + eps) / np.sqrt(s["square_avg"] + eps) * g
    s["acc_delta"] = rho * s["acc_delta"] + (1 - rho) * delta * delta
    return p - lr * delta


def ref_adamax(p, g, s, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, maximize=False):
    g = -g if maximize else g
    g = g + weight_decay * p
    t = s["t"] = s.get("t", 0) + 1
    s["m"] = betas[0] * s.get("m", 0) + (1 - betas[0]) * g
    s["u"] = np.maximum(betas[1] * s.get("u", np.zeros_like(p)), np.abs(g) + eps)
    return p - lr / (1 - betas[0] ** t) * s["m"] / s["u"]


def ref_nadam(p, g, s, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
              decoupled_weight_decay=False, maximize=False):
    g = -g if maximize else g
    t = s["t"] = s.get("t", 0) + 1
    if decoupled_weight_decay:
        p = p * (1 - lr * weight_decay)
    else:
        g = g + weight_decay * p
    mu = betas[0] * (1 - 0.5 * 0.96 ** (t * momentum_decay))
    mu_next = betas[0] * (1 - 0.5 * 0.96 ** ((t + 1) * momentum_decay))
    s["prod"] = s.get("prod", 1.0) * mu
    s["m"] = betas[0] * s.get("m", 0) + (1 - betas[0]) * g
    s["v"] = betas[1] * s.get("v", 0) + (1 - betas[1]) * g * g
    denom = np.sqrt(s["v"] / (1 - betas[1] ** t)) + eps
    return p - lr * (1 - mu) / (1 - s["prod"]) * g / denom - lr * mu_next / (1 - s["prod"] * mu_next) * s["m"] / denom


def ref_radam(p, g, s, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False,
              maximize=False):
    g = -g if maximize else g
    t = s["t"] = s.get("t", 0) + 1
    if decoupled_weight_decay:
        p = p * (1 - lr * weight_decay)
    else:
        g = g + weight_decay * p
    b1, b2 = betas
    s["m"] = b1 * s.get("m", 0) + (1 - b1) * g
    s["v"] = b2 * s.get("v", 0) + (1 - b2) * g * g
    m_hat = s["m"] / (1 - b1**t)
    rho_inf = 2 / (1 - b2) - 1
    rho_t = rho_inf - 2 * t * b2**t / (1 - b2**t)
    if rho_t <= 5:
        return p - lr * m_hat
    r = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
    return p - lr * m_hat * r * math.sqrt(1 - b2**t) / (np.sqrt(s["v"]) + eps)


def ref_asgd(p, g, s, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, maximize=False):
    g = -g if maximize else g
    t = s["t"] = s.get("t", 0) + 1
    g = g + weight_decay * p
    eta, mu = s.get("eta", lr), s.get("mu", 1.0)
    p = p * (1 - lambd * eta) - eta * g
    s["ax"] = p.copy() if mu == 1 else s["ax"] + mu * (p - s["ax"])
    s["eta"] = lr / (1 + lambd * lr * t) ** alpha
    s["mu"] = 1 / max(1, t - t0)
    return p


def ref_rprop(p, g, s, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), maximize=False):
    g = -g if maximize else g
    prev = s.get("prev", np.zeros_like(p))
    size = s.get("size", np.full_like(p, lr))
    agreement = np.sign(g * prev)
    size = np.clip(size * np.where(agreement > 0, etas[1], np.where(agreement < 0, etas[0], 1.0)), *step_sizes)
    g = np.where(agreement < 0, 0.0, g)
    s["prev"], s["size"] = g, size
    return p - np.sign(g) * size


REFERENCES = {"Adadelta": ref_adadelta, "Adamax": ref_adamax, "NAdam": ref_nadam, "RAdam": ref_radam,
              "ASGD": ref_asgd, "Rprop": ref_rprop}

CASES = [
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-5, weight_decay=0.1, maximize=True)),
    ("Adamax", dict()),
    ("Adamax", dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
    ("Adamax", dict(lr=0.01, maximize=True)),
    ("NAdam", dict()),
    ("NAdam", dict(lr=0.01, betas=(0.8, 0.99), weight_decay=0.1, momentum_decay=0.01)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("RAdam", dict()),
    ("RAdam", dict(lr=0.01, betas=(0.5, 0.9), weight_decay=0.1)),  # rho_t > 5 from the start
    ("RAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("ASGD", dict()),
    ("ASGD", dict(lr=0.05, lambd=0.01, alpha=0.5, t0=3, weight_decay=0.1)),  # averaging starts at step 4
    ("ASGD", dict(lr=0.05, maximize=True)),
    ("Rprop", dict()),
    ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.1), maximize=True)),
]
IDS = [f"{name}-{i}" for i, (name, _) in enumerate(CASES)]


def _run_tensorplug(name, kwargs, inits, grads, dtype):
    params = [tp.tensor(a, dtype=dtype, requires_grad=True) for a in inits]
    opt = getattr(tp.optim, name)(params, **kwargs)
    for step_grads in grads:
        for p, g in zip(params, step_grads):
            p.grad = tp.tensor(g, dtype=dtype)
        opt.step()
    return params, opt


@pytest.mark.parametrize("name,kwargs", CASES, ids=IDS)
def test_matches_numpy_reference(name, kwargs):
    """12 steps in float64 agree with the NumPy float64 reference (float32 step counters and, for
    NAdam and ASGD, float32 mu_product / eta as PyTorch keeps them, limit the agreement to ~1e-6)."""
    inits, grads = _data()
    params, opt = _run_tensorplug(name, kwargs, inits, grads, tp.float64)
    reference = REFERENCES[name]
    for i, p in enumerate(params):
        expected, state = inits[i], {}
        for step_grads in grads:
            expected = reference(expected, step_grads[i], state, **kwargs)
        np.testing.assert_allclose(p.detach().numpy(), expected, rtol=1e-5, atol=1e-7)
        if name == "ASGD":
            np.testing.assert_allclose(opt.state[p]["ax"].numpy(), state["ax"], rtol=1e-5, atol=1e-7)


def _run_torch(name, kwargs, inits, grads):
    torch = _torch()
    params = [torch.tensor(a, dtype=torch.float32, requires_grad=True) for a in inits]
    opt = getattr(torch.optim, name)(params, **kwargs)
    for step_grads in grads:
        for p, g in zip(params, step_grads):
            p.grad = torch.tensor(g, dtype=torch.float32)
        opt.step()
    return params, opt


@pytest.mark.parametrize("name,kwargs", CASES, ids=IDS)
def test_matches_torch(name, kwargs):
    """Parameters and state after 12 float32 steps agree with torch.optim; param groups are equal."""
    inits, grads = _data()
    th_params, th_opt = _run_torch(name, kwargs, inits, grads)
    tp_params, tp_opt = _run_tensorplug(name, kwargs, inits, grads, tp.float32)
    for p, q in zip(tp_params, th_params):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=2e-5, atol=2e-6)
    tp_sd, th_sd = tp_opt.state_dict(), th_opt.state_dict()
    for index, th_state in th_sd["state"].items():
        tp_state = tp_sd["state"][index]
        assert sorted(tp_state) == sorted(th_state)
        for key, value in th_state.items():
            assert tp_state[key].dtype.name == str(value.dtype).replace("torch.", ""), key
            np.testing.assert_allclose(tp_state[key].numpy(), value.numpy(), rtol=2e-5, atol=2e-6)
    assert tp_sd["param_groups"] == th_sd["param_groups"]


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_state_dict_round_trip_continues_identically(name):
    """Saving the state after 5 steps and loading it into a fresh optimizer gives the same next steps."""
    inits, grads = _data(8)
    params, opt = _run_tensorplug(name, {}, inits, grads[:5], tp.float32)
    copies = [p.detach().clone().requires_grad_(True) for p in params]
    other = getattr(tp.optim, name)(copies)
    other.load_state_dict(copy.deepcopy(opt.state_dict()))  # a saved state, not the live tensors
    for step_grads in grads[5:]:
        for p, c, g in zip(params, copies, step_grads):
            p.grad, c.grad = tp.tensor(g, dtype=tp.float32), tp.tensor(g, dtype=tp.float32)
        opt.step()
        other.step()
    for p, c in zip(params, copies):
        np.testing.assert_array_equal(p.detach().numpy(), c.detach().numpy())


@pytest.mark.parametrize("name,bad", [("Adadelta", dict(rho=1.5)), ("Adamax", dict(betas=(1.0, 0.9))),
                                      ("NAdam", dict(momentum_decay=-1)), ("RAdam", dict(eps=-1)),
                                      ("ASGD", dict(lr=-1)), ("Rprop", dict(etas=(1.5, 1.2)))])
def test_invalid_hyperparameters(name, bad):
    with pytest.raises(ValueError, match="Invalid"):
        getattr(tp.optim, name)([tp.zeros(1, requires_grad=True)], **bad)


# --- LBFGS ----------------------------------------------------------------------------------------------
A = np.array([[3.0, 0.5, 0.0], [0.5, 2.0, 0.3], [0.0, 0.3, 1.0]])
B = np.array([1.0, -2.0, 0.5])


def _lbfgs_quadratic(lib, x0, **kwargs):
    """Minimize 0.5 x'Ax - b'x with LBFGS; returns the optimizer, x, the first losses, closure calls."""
    x = lib.tensor(x0, requires_grad=True)
    a, b = lib.tensor(A), lib.tensor(B)
    opt = lib.optim.LBFGS([x], **kwargs)
    calls = [0]

    def closure():
        calls[0] += 1
        opt.zero_grad()
        loss = 0.5 * (x @ (a @ x)) - (b * x).sum()
        loss.backward()
        return loss

    losses = [float(opt.step(closure).detach()) for _ in range(3)]
    return opt, x, losses, calls[0]


def ref_lbfgs_direction(g, pairs, H_diag):
    """The two-loop recursion of Nocedal and Wright (Algorithm 7.4): -H g."""
    q = -g.copy()
    alphas = []
    for s, y in reversed(pairs):
        rho = 1.0 / y.dot(s)
        alpha = rho * s.dot(q)
        q -= alpha * y
        alphas.append(alpha)
    r = H_diag * q
    for (s, y), alpha in zip(pairs, reversed(alphas)):
        rho = 1.0 / y.dot(s)
        r += s * (alpha - rho * y.dot(r))
    return r


def ref_lbfgs_fixed_steps(x0, steps, lr, max_iter, history):
    """NumPy L-BFGS on 0.5 x'Ax - b'x with PyTorch's fixed step rule: ``steps`` calls of ``step``, one
    closure per iteration except the last of each call. Returns x and the memory: the (s, y) pairs,
    H_diag and the first loop's coefficients of the last direction (oldest pair first)."""
    xs, pairs, H_diag, n_iter, d, t, g_prev, alphas = x0.copy(), [], 1.0, 0, None, None, None, None
    for _ in range(steps):
        g = A @ xs - B
        for it in range(1, max_iter + 1):
            n_iter += 1
            if n_iter == 1:
                d = -g
            else:
                y, s = g - g_prev, d * t
                if y.dot(s) > 1e-10:
                    pairs = (pairs + [(s, y)])[-history:]
                    H_diag = y.dot(s) / y.dot(y)
                d = ref_lbfgs_direction(g, pairs, H_diag)
                q, alphas = -g.copy(), [0.0] * len(pairs)
                for i in reversed(range(len(pairs))):
                    alphas[i] = pairs[i][0].dot(q) / pairs[i][1].dot(pairs[i][0])
                    q -= alphas[i] * pairs[i][1]
            g_prev = g
            t = min(1.0, 1.0 / np.abs(g).sum()) * lr if n_iter == 1 else lr
            xs = xs + t * d
            if it != max_iter:
                g = A @ xs - B
    return xs, pairs, H_diag, alphas


def test_lbfgs_matches_numpy_reference():
    """Iterations in float64 follow the NumPy L-BFGS with PyTorch's fixed step rule, exactly enough."""
    x0 = np.array([1.0, 1.0, 1.0])
    opt, x, losses, calls = _lbfgs_quadratic(tp, x0, lr=0.5, max_iter=4, history_size=2)
    xs = ref_lbfgs_fixed_steps(x0, 3, lr=0.5, max_iter=4, history=2)[0]
    np.testing.assert_allclose(x.detach().numpy(), xs, rtol=1e-12, atol=1e-12)
    assert calls == 3 * 4
    assert opt.state_dict()["state"][0]["n_iter"] == 12 and opt.state_dict()["state"][0]["func_evals"] == 12


LBFGS_STATE_KEYS = {"func_evals", "n_iter", "d", "t", "old_dirs", "old_stps", "ro", "H_diag", "prev_flat_grad",
                    "prev_loss", "al"}


def test_lbfgs_state_holds_the_memory_under_pytorchs_names():
    """The state under the first parameter: the (s, y) pairs, 1 / y.s, H_diag and the coefficients
    of the last direction (one slot per history entry, unused ones None), as the NumPy reference."""
    x0 = np.array([1.0, 1.0, 1.0])
    opt, x, _, _ = _lbfgs_quadratic(tp, x0, lr=0.5, max_iter=4, history_size=3)
    _, pairs, H_diag, alphas = ref_lbfgs_fixed_steps(x0, 3, lr=0.5, max_iter=4, history=3)
    state = opt.state[x]
    assert set(state) == LBFGS_STATE_KEYS
    assert len(state["old_stps"]) == len(state["old_dirs"]) == len(state["ro"]) == len(pairs) == 3
    for got_s, got_y, got_rho, (s, y) in zip(state["old_stps"], state["old_dirs"], state["ro"], pairs):
        np.testing.assert_allclose(got_s.numpy(), s, rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(got_y.numpy(), y, rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(float(got_rho), 1.0 / y.dot(s), rtol=1e-10)
    np.testing.assert_allclose(float(state["H_diag"]), H_diag, rtol=1e-10)
    assert len(state["al"]) == 3
    np.testing.assert_allclose([float(a) for a in state["al"]], alphas, rtol=1e-9, atol=1e-14)
    # A longer history than pairs so far: the slots past them stay None.
    _, _, _, short_alphas = ref_lbfgs_fixed_steps(x0, 3, lr=0.5, max_iter=1, history=5)
    opt, x, _, _ = _lbfgs_quadratic(tp, x0, lr=0.5, max_iter=1, history_size=5)
    assert len(short_alphas) == 2 and opt.state[x]["al"][2:] == [None] * 3
    np.testing.assert_allclose([float(a) for a in opt.state[x]["al"][:2]], short_alphas, rtol=1e-9, atol=1e-14)


def test_lbfgs_first_iteration_leaves_no_coefficients():
    """Until a direction comes from the memory there are no coefficients to keep (as PyTorch)."""
    x = tp.tensor([1.0, 1.0, 1.0], dtype=tp.float64, requires_grad=True)
    opt = tp.optim.LBFGS([x], max_iter=1)

    def closure():
        opt.zero_grad()
        loss = (x * x).sum()
        loss.backward()
        return loss

    opt.step(closure)
    assert set(opt.state[x]) == LBFGS_STATE_KEYS - {"al"}
    assert opt.state[x]["H_diag"] == 1 and opt.state[x]["old_stps"] == []


def test_lbfgs_state_dict_round_trip_continues_the_iterations():
    """One step, the state dict loaded into a fresh optimizer over new parameters, two more steps:
    the NumPy reference's three steps."""
    x0 = np.array([1.0, 1.0, 1.0])
    a, b = tp.tensor(A), tp.tensor(B)

    def run(x, opt, steps):
        def closure():
            opt.zero_grad()
            loss = 0.5 * (x @ (a @ x)) - (b * x).sum()
            loss.backward()
            return loss

        for _ in range(steps):
            opt.step(closure)

    x = tp.tensor(x0, requires_grad=True)
    first = tp.optim.LBFGS([x], lr=0.5, max_iter=4, history_size=2)
    run(x, first, 1)
    saved = copy.deepcopy(first.state_dict())
    resumed_x = tp.tensor(x.detach().numpy(), requires_grad=True)
    resumed = tp.optim.LBFGS([resumed_x], lr=0.5, max_iter=4, history_size=2)
    resumed.load_state_dict(saved)
    run(resumed_x, resumed, 2)
    want = ref_lbfgs_fixed_steps(x0, 3, lr=0.5, max_iter=4, history=2)[0]
    np.testing.assert_allclose(resumed_x.detach().numpy(), want, rtol=1e-12, atol=1e-12)
    assert resumed.state[resumed_x]["n_iter"] == 12


def test_lbfgs_treats_several_parameters_as_one_vector():
    """x split over two parameters of other shapes follows the same NumPy iterations."""
    x0 = np.array([1.0, -0.5, 2.0])
    head = tp.tensor(x0[:2].reshape(2, 1), requires_grad=True)
    tail = tp.tensor(x0[2:], requires_grad=True)
    a, b = tp.tensor(A), tp.tensor(B)
    opt = tp.optim.LBFGS([head, tail], lr=0.3, max_iter=5, history_size=3)

    def closure():
        opt.zero_grad()
        x = tp.cat([head.reshape(-1), tail])
        loss = 0.5 * (x @ (a @ x)) - (b * x).sum()
        loss.backward()
        return loss

    for _ in range(2):
        opt.step(closure)
    want = ref_lbfgs_fixed_steps(x0, 2, lr=0.3, max_iter=5, history=3)[0]
    np.testing.assert_allclose(head.detach().numpy().reshape(-1), want[:2], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(tail.detach().numpy(), want[2:], rtol=1e-12, atol=1e-12)
    assert set(opt.state) == {head}  # all state lives under the first parameter


def test_lbfgs_state_keys_match_torch():
    torch = _torch()
    for lib in (tp, torch):
        opt, x, _, _ = _lbfgs_quadratic(lib, np.array([1.0, 2.0, -1.0]), max_iter=3)
        assert set(opt.state[x]) == LBFGS_STATE_KEYS, lib.__name__
    for lib in (tp, torch):  # a gradient already below tolerance_grad: only the counters
        opt, x, _, _ = _lbfgs_quadratic(lib, np.linalg.solve(A, B))
        assert set(opt.state[x]) == {"func_evals", "n_iter"}, lib.__name__


def test_lbfgs_converges_to_the_minimum():
    opt, x, losses, calls = _lbfgs_quadratic(tp, np.array([4.0, -3.0, 2.0]))
    np.testing.assert_allclose(x.detach().numpy(), np.linalg.solve(A, B), rtol=1e-4, atol=1e-6)
    assert losses[0] > losses[1] >= losses[2]


def test_lbfgs_matches_torch():
    torch = _torch()
    for kwargs in (dict(), dict(lr=0.5, max_iter=4, history_size=2), dict(lr=0.1, max_iter=7, max_eval=5)):
        _, ours, our_losses, our_calls = _lbfgs_quadratic(tp, np.array([1.0, 2.0, -1.0]), **kwargs)
        theirs_opt, theirs, their_losses, their_calls = _lbfgs_quadratic(torch, np.array([1.0, 2.0, -1.0]), **kwargs)
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(our_losses, their_losses, rtol=1e-10)
        assert our_calls == their_calls, kwargs


def _rosenbrock_lbfgs(lib, steps, **kwargs):
    """LBFGS on the Rosenbrock function from (-1.5, 2); returns x, the losses, closure calls and iterations."""
    x = lib.tensor([-1.5, 2.0], dtype=lib.float64, requires_grad=True)
    opt = lib.optim.LBFGS([x], **kwargs)

    def closure():
        opt.zero_grad()
        loss = (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2
        loss.backward()
        return loss

    losses = [float(opt.step(closure).detach()) for _ in range(steps)]
    return x.detach().numpy(), losses, opt.state[x]["func_evals"], opt.state[x]["n_iter"]


def test_lbfgs_strong_wolfe_reaches_the_minimum():
    """Rosenbrock's valley defeats fixed steps; the strong Wolfe search reaches its minimum (1, 1)."""
    x, losses, evals, iters = _rosenbrock_lbfgs(tp, 3, line_search_fn="strong_wolfe")
    np.testing.assert_allclose(x, [1.0, 1.0], atol=1e-5)
    assert losses[0] == 12.5 and losses[2] < 1e-6
    assert evals > iters  # the line search evaluates more than once per iteration somewhere


def test_lbfgs_strong_wolfe_keeps_the_conditions():
    """Every step the search returns decreases the loss enough and flattens the slope (c1 = 1e-4,
    c2 = 0.9), checked on a quadratic where both are known in closed form."""
    from tensorplug.optim._line_search import strong_wolfe

    hessian, gradient = np.diag([1.0, 30.0]), np.array([3.0, -2.0])
    loss_at = lambda v: 0.5 * v @ hessian @ v + gradient @ v  # noqa: E731
    grad_at = lambda v: hessian @ v + gradient  # noqa: E731
    x0 = np.array([2.0, 1.0])
    d = -grad_at(x0)
    slope0 = grad_at(x0) @ d
    for t0 in (1e-3, 0.05, 1.0, 40.0):
        def evaluate(t):
            v = x0 + t * d
            return loss_at(v), grad_at(v), grad_at(v) @ d

        loss, grad, t, evals = strong_wolfe(evaluate, t0, loss_at(x0), grad_at(x0), slope0, np.abs(d).max())
        assert loss <= loss_at(x0) + 1e-4 * t * slope0
        assert abs(grad @ d) <= 0.9 * abs(slope0)
        assert 1 <= evals <= 25


def test_lbfgs_strong_wolfe_matches_torch():
    torch = _torch()
    for kwargs in (dict(), dict(lr=0.5, max_iter=5, history_size=3), dict(max_iter=7, max_eval=9)):
        kwargs["line_search_fn"] = "strong_wolfe"
        ours, our_losses, our_evals, our_iters = _rosenbrock_lbfgs(tp, 6, **kwargs)
        theirs, their_losses, their_evals, their_iters = _rosenbrock_lbfgs(torch, 6, **kwargs)
        np.testing.assert_allclose(ours, theirs, rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(our_losses, their_losses, rtol=1e-6, atol=1e-12)
        assert (our_evals, our_iters) == (their_evals, their_iters), kwargs


def test_lbfgs_refusals():
    w = tp.zeros(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        tp.optim.LBFGS([w], line_search_fn="backtracking")
    with pytest.raises(ValueError, match="parameter groups"):
        tp.optim.LBFGS([{"params": [w]}, {"params": [tp.zeros(1, requires_grad=True)]}])
    with pytest.raises(RuntimeError, match="closure"):
        tp.optim.LBFGS([w]).step(None)
