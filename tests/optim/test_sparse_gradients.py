"""Sparse gradients in the optimizers (issue 13): SparseAdam against a NumPy float64 reference of
PyTorch's documented update on every backend, SGD, Adagrad and LBFGS take them as PyTorch does,
the others refuse them with PyTorch's messages; and the whole set against torch.optim itself."""
import copy
import math
import warnings

import numpy as np
import pytest

import tensorplug as tp

BATCHES = [[1, 4, 4, 0], [2, 2, 5, 1], [3], []]
ROWS, COLS = 6, 3


def _initial():
    return np.random.default_rng(0).standard_normal((ROWS, COLS))


def _loss_grad(batch) -> np.ndarray:
    """The dense gradient of sum(embedding(batch) * arange) with respect to the weight."""
    g = np.zeros((ROWS, COLS))
    for k, row in enumerate(batch):
        g[row] += np.arange(k * COLS, (k + 1) * COLS)
    return g


def _devices():
    """Every backend present; those that cannot run here are skipped with the reason status() gives."""
    params = []
    status = {s.device_type: s for s in tp.backends.status()}
    for name in ("cpu", "opencl", "npdev"):
        state = status.get(name)
        if state is None or state.state not in ("ready", "loaded"):
            reason = "no plugin registers it" if state is None else f"{state.state}: {state.detail}"
            params.append(pytest.param(name, marks=pytest.mark.skip(reason=f"{name}: {reason}")))
        else:
            params.append(name)
    return params


def _train(L, make_optimizer, device=None, padding_idx=None, batches=BATCHES, dtype=None):
    emb = L.nn.Embedding(ROWS, COLS, sparse=True, padding_idx=padding_idx)
    with L.no_grad():
        emb.weight.copy_(L.tensor(_initial(), dtype=dtype or L.float32))
    if device is not None:
        emb = emb.to(device)
    opt = make_optimizer(L, emb.parameters())
    for batch in batches:
        opt.zero_grad()
        index = L.tensor(batch, dtype=L.int64)
        out = emb(index.to(device) if device is not None else index)
        weights = L.arange(out.numel(), dtype=out.dtype).reshape(out.shape)
        (out * (weights.to(device) if device is not None else weights)).sum().backward()
        opt.step()
    return emb.weight.detach().cpu().numpy().astype(np.float64), opt


def _sparse_adam_reference(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
    p, m, v = _initial(), np.zeros((ROWS, COLS)), np.zeros((ROWS, COLS))
    for t, batch in enumerate(BATCHES, start=1):
        g = -_loss_grad(batch) if maximize else _loss_grad(batch)
        rows = sorted(set(batch))
        m[rows] += (1 - betas[0]) * (g[rows] - m[rows])
        v[rows] += (1 - betas[1]) * (g[rows] ** 2 - v[rows])
        step_size = lr * math.sqrt(1 - betas[1] ** t) / (1 - betas[0] ** t)
        p[rows] -= step_size * m[rows] / (np.sqrt(v[rows]) + eps)
    return p


@pytest.mark.parametrize("device", _devices())
@pytest.mark.parametrize("kwargs", [dict(lr=0.1), dict(lr=0.05, betas=(0.5, 0.7), eps=1e-3, maximize=True)])
def test_sparse_adam_matches_numpy(device, kwargs):
    """Only the rows a gradient holds move, by Adam's step with eps outside the bias correction;
    an empty batch still counts a step."""
    got, opt = _train(tp, lambda L, params: L.optim.SparseAdam(params, **kwargs), device)
    np.testing.assert_allclose(got, _sparse_adam_reference(**kwargs), rtol=1e-5, atol=1e-6)
    (state,) = opt.state.values()
    assert state["step"] == len(BATCHES) and isinstance(state["step"], int)


def test_sparse_adam_refuses_dense_gradients_and_sparse_parameters():
    """PyTorch's errors: a dense gradient, a sparse parameter, bad hyperparameters."""
    w = tp.zeros(3, requires_grad=True)
    w.grad = tp.ones(3)
    with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients, please consider Adam"):
        tp.optim.SparseAdam([w]).step()
    sparse = tp.sparse_coo_tensor([[0, 1]], [1.0, 2.0], (3,))
    with pytest.raises(ValueError, match=r"Sparse params at indices \[\[0, 1\]\]: SparseAdam requires dense"):
        tp.optim.SparseAdam([tp.zeros(2, requires_grad=True), sparse])
    with pytest.raises(ValueError, match="Invalid learning rate: 0"):
        tp.optim.SparseAdam([w], lr=0)
    with pytest.raises(ValueError, match="Invalid epsilon value"):
        tp.optim.SparseAdam([w], eps=0.0)
    with pytest.raises(ValueError, match="Invalid beta parameter at index 0"):
        tp.optim.SparseAdam([w], betas=(1.0, 0.9))
    with pytest.raises(TypeError, match="iterable of Tensors"):
        tp.optim.SparseAdam(w)


def test_sparse_adam_state_dict_round_trip():
    """The state (int step, moment buffers) saves and loads into a fresh optimizer, which goes on
    exactly as the first would have."""
    first, opt = _train(tp, lambda L, params: L.optim.SparseAdam(params, lr=0.1), batches=BATCHES[:2])
    emb = tp.nn.Embedding(ROWS, COLS, sparse=True)
    with tp.no_grad():
        emb.weight.copy_(tp.tensor(first, dtype=tp.float32))
    resumed = tp.optim.SparseAdam(emb.parameters(), lr=0.1)
    resumed.load_state_dict(copy.deepcopy(opt.state_dict()))  # (state_dict() holds the live buffers)
    for o, w in ((opt, opt.param_groups[0]["params"][0]), (resumed, emb.weight)):
        o.zero_grad()
        out = tp.nn.functional.embedding(tp.tensor([3, 1]), w, sparse=True)
        out.sum().backward()
        o.step()
    np.testing.assert_allclose(emb.weight.detach().numpy(), opt.param_groups[0]["params"][0].detach().numpy())
    assert resumed.state[emb.weight]["step"] == 3


@pytest.mark.parametrize("device", _devices())
def test_sgd_and_adagrad_take_sparse_gradients(device):
    """SGD with momentum and Adagrad move as with the same gradients in dense form."""
    for make in (lambda L, params: L.optim.SGD(params, lr=0.1, momentum=0.9, nesterov=True),
                 lambda L, params: L.optim.Adagrad(params, lr=0.1, lr_decay=0.01)):
        got, _ = _train(tp, make, device)
        emb = tp.nn.Embedding(ROWS, COLS)
        with tp.no_grad():
            emb.weight.copy_(tp.tensor(_initial(), dtype=tp.float32))
        opt = make(tp, emb.parameters())
        for batch in BATCHES:
            opt.zero_grad()
            emb.weight.grad = tp.tensor(_loss_grad(batch), dtype=tp.float32)
            opt.step()
        np.testing.assert_allclose(got, emb.weight.detach().numpy(), rtol=1e-5, atol=1e-6)


def _optimizers():
    return [("SparseAdam", dict(lr=0.1)), ("SparseAdam", dict(lr=0.05, betas=(0.5, 0.7), eps=1e-3, maximize=True)),
            ("SGD", dict(lr=0.1)), ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True)),
            ("SGD", dict(lr=0.1, weight_decay=0.1)), ("SGD", dict(lr=0.1, maximize=True, momentum=0.5, dampening=0.1)),
            ("Adagrad", dict(lr=0.1)), ("Adagrad", dict(lr=0.1, lr_decay=0.1, maximize=True)),
            ("Adagrad", dict(lr=0.1, weight_decay=0.1)), ("Adam", dict(lr=0.1)), ("AdamW", dict(lr=0.1)),
            ("RMSprop", dict(lr=0.1)), ("NAdam", dict(lr=0.1)), ("RAdam", dict(lr=0.1)), ("Adamax", dict(lr=0.1)),
            ("Adadelta", dict(lr=0.1)), ("ASGD", dict(lr=0.1)), ("Rprop", dict(lr=0.1)), ("LBFGS", dict(lr=0.1))]


def test_every_optimizer_matches_pytorch():
    """Each optimizer trains a sparse embedding to PyTorch's weights, or raises its error."""
    torch = pytest.importorskip("torch", reason="torch.optim is the reference here")

    def outcome(L, name, kwargs):
        def make(L, params):
            return getattr(L.optim, name)(params, **kwargs)

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # PyTorch's note on sparse invariant checks
            try:
                if name == "LBFGS":
                    return _lbfgs(L, make)
                return _train(L, make, padding_idx=4)[0]
            except RuntimeError as exc:
                return str(exc)

    for name, kwargs in _optimizers():
        got, want = outcome(tp, name, kwargs), outcome(torch, name, kwargs)
        if isinstance(want, str):
            assert got == want, name
        else:
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=f"{name} {kwargs}")


def _lbfgs(L, make):
    emb = L.nn.Embedding(ROWS, COLS, sparse=True)
    with L.no_grad():
        emb.weight.copy_(L.tensor(_initial(), dtype=L.float32))
    opt = make(L, emb.parameters())
    index = L.tensor([1, 4, 4, 0])

    def closure():
        opt.zero_grad()
        loss = (emb(index) ** 2).sum()
        loss.backward()
        return loss

    for _ in range(2):
        opt.step(closure)
    return emb.weight.detach().numpy().astype(np.float64)
