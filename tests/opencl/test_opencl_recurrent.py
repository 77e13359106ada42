"""The OpenCL backend's fused whole-sequence recurrent ops (lstm/gru/rnn_sequence_forward and
_backward, backends/opencl/recurrent.py): the values and gradients of the ops' decompositions on
the same device and of PyTorch in float64, at sizes that leave partial row blocks and partial
strips of hidden units (batch 1 and odd, hidden not a multiple of 8 or 32, one step), through
nn.LSTM/GRU/RNN with several layers, both directions, given and default initial states; and one
launch per layer direction for the recurrence (issue 14). That the dispatcher picks these kernels is
checked in test_opencl_fused_ops.py."""
import collections

import numpy as np
import pytest

import tensorplug as tp
from tensorplug.backends.opencl import OpenCLBackend
from tensorplug.dispatcher import get_operator

AVAILABLE, REASON = OpenCLBackend().is_available()
pytestmark = pytest.mark.skipif(not AVAILABLE, reason=f"OpenCL backend unavailable: {REASON}")

DEV = "opencl"
# (steps, batch, hidden): one step; batch 1 and an odd batch (a work-item takes two rows); hidden
# below, at and past a strip (8 float32 lanes forward for the LSTM/GRU, 32 for the RNN and backward).
SIZES = [(1, 1, 1), (1, 3, 5), (4, 1, 9), (5, 3, 17), (3, 5, 33), (2, 4, 40)]
GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}


@pytest.fixture
def torch():
    """PyTorch, the reference of the tests that take it (tensorplug itself does not need it)."""
    return pytest.importorskip("torch", reason="PyTorch (the reference) is not installed: pip install torch==2.13.0")


def _has_float64() -> bool:
    from tensorplug.backends.opencl import storage

    tp.ones(1, device=DEV)
    return all(s.has_fp64 for s in storage.devices())


def _operands(cell, steps, batch, hidden, dtype, seed):
    """The forward op's operands and random incoming gradients, on the device."""
    rng = np.random.default_rng(seed)
    gates = GATES[cell]

    def t(*shape, scale=1.0):
        return tp.tensor(rng.standard_normal(shape) * scale, dtype=dtype, device=DEV)

    inputs = {"projected": t(steps, batch, gates * hidden), "w_hh": t(gates * hidden, hidden, scale=0.5),
              "h0": t(batch, hidden)}
    if cell == "lstm":
        inputs["c0"] = t(batch, hidden)
    if cell == "gru":
        inputs["b_hh"] = t(gates * hidden)
    grads = {"grad_hs": t(steps, batch, hidden), "grad_hn": t(batch, hidden), "grad_cn": t(batch, hidden)}
    return inputs, grads


def _run(cell, inputs, grads, use):
    """Forward and backward of one layer direction with ``use(op_name)`` as each op's kernel:
    (forward outputs, backward outputs)."""
    p, w, h0 = inputs["projected"], inputs["w_hh"], inputs["h0"]
    if cell == "lstm":
        forward = use("lstm_sequence_forward")(p, w, h0, inputs["c0"])
        hs, cs, acts = forward
        backward = use("lstm_sequence_backward")(w, h0, inputs["c0"], hs, cs, acts, grads["grad_hs"], grads["grad_hn"],
                                                 grads["grad_cn"])
    elif cell == "gru":
        forward = use("gru_sequence_forward")(p, w, inputs["b_hh"], h0)
        hs, acts = forward
        backward = use("gru_sequence_backward")(w, h0, hs, acts, grads["grad_hs"], grads["grad_hn"])
    else:
        nonlinearity = cell[4:]
        forward = (use("rnn_sequence_forward")(p, w, h0, nonlinearity),)
        backward = use("rnn_sequence_backward")(w, h0, forward[0], grads["grad_hs"], grads["grad_hn"], nonlinearity)
    return forward, backward


def _fused(name):
    from tensorplug.backends.opencl import recurrent

    return recurrent.table()[name]


def _decomposed(name):
    return get_operator(name).decomposition


def _host(t):
    return t.cpu().numpy().astype(np.float64)


@pytest.mark.parametrize("cell", list(GATES))
@pytest.mark.parametrize("steps,batch,hidden", SIZES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matches_the_decomposition(cell, steps, batch, hidden, dtype):
    """Forward outputs (states, activated gates) and every gradient equal the decomposition's on the
    same device: to rounding in float64, within float32's rounding of 1 + H terms otherwise."""
    if dtype == "float64" and not _has_float64():
        pytest.skip("the OpenCL device has no float64")
    inputs, grads = _operands(cell, steps, batch, hidden, getattr(tp, dtype), steps * 100 + hidden)
    fused = _run(cell, inputs, grads, _fused)
    reference = _run(cell, inputs, grads, _decomposed)
    tol = 1e-12 if dtype == "float64" else 2e-5
    for got_part, want_part in zip(fused, reference):
        for got, want in zip(got_part, want_part):
            assert got.shape == want.shape and got.dtype == want.dtype
            want = _host(want)
            np.testing.assert_allclose(_host(got), want, rtol=tol, atol=tol * max(1.0, np.abs(want).max()))


def _torch_reference(torch, cell, inputs, grads):
    """The recurrence written step by step with PyTorch's float64 ops, differentiated by its
    autograd: (hs, grad_projected, grad_w_hh, grad_h0, and grad_c0 or grad_b_hh)."""
    ref = {k: torch.tensor(_host(v), requires_grad=True) for k, v in inputs.items()}
    p, w, h = ref["projected"], ref["w_hh"], ref["h0"]
    hidden = w.shape[1]
    c = ref.get("c0")
    hs = []
    for t in range(p.shape[0]):
        if cell == "lstm":
            gates = p[t] + h @ w.T
            i, f, g, o = gates.split(hidden, 1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
        elif cell == "gru":
            rec = h @ w.T + ref["b_hh"]
            pr, pz, pn = p[t].split(hidden, 1)
            rr, rz, rn = rec.split(hidden, 1)
            r, z = torch.sigmoid(pr + rr), torch.sigmoid(pz + rz)
            h = (1 - z) * torch.tanh(pn + r * rn) + z * h
        else:
            pre = p[t] + h @ w.T
            h = torch.tanh(pre) if cell == "rnn_tanh" else torch.relu(pre)
        hs.append(h)
    hs = torch.stack(hs)
    g = {k: torch.tensor(_host(v)) for k, v in grads.items()}
    loss = (hs * g["grad_hs"]).sum() + (h * g["grad_hn"]).sum()
    if cell == "lstm":
        loss = loss + (c * g["grad_cn"]).sum()
    loss.backward()
    extra = {"lstm": [ref.get("c0")], "gru": [ref.get("b_hh")]}.get(cell, [])
    return [hs.detach()] + [t.grad for t in [p, w, ref["h0"]] + extra]


@pytest.mark.parametrize("cell", list(GATES))
@pytest.mark.parametrize("steps,batch,hidden", [(1, 1, 3), (6, 3, 17), (3, 2, 33)])
def test_matches_pytorch_float64(torch, cell, steps, batch, hidden):
    """hs and the gradients of projected, W_hh, h0 (and c0, b_hh) equal PyTorch's autograd through
    the same recurrence in float64 (float32 on the device)."""
    inputs, grads = _operands(cell, steps, batch, hidden, tp.float32, steps * 7 + hidden)
    (forward, backward) = _run(cell, inputs, grads, _fused)
    got = [forward[0]] + list(backward)
    if cell == "lstm":
        got = got[:4] + [got[4]]  # grad_c0
    elif cell == "gru":
        got = got[:3] + [got[4], got[3]]  # grad_h0, then grad_b_hh, as the reference lists them
    for ours, want in zip(got, _torch_reference(torch, cell, inputs, grads)):
        want = want.numpy()
        np.testing.assert_allclose(_host(ours), want, rtol=1e-4, atol=1e-4 * max(1.0, np.abs(want).max()))


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("layers,bidirectional,batch_first,given", [
    (1, False, False, False), (2, True, False, True), (3, False, True, True), (2, True, True, False)])
def test_modules_match_pytorch(torch, kind, layers, bidirectional, batch_first, given):
    """nn.LSTM/GRU/RNN on OpenCL: outputs, final states and the gradients of the input, the
    initial states and every parameter equal PyTorch's (float32, odd sizes)."""
    rng = np.random.default_rng(layers * 10 + bidirectional)
    features, hidden, steps, batch = 5, 11, 4, 3
    ours = getattr(tp.nn, kind)(features, hidden, num_layers=layers, bidirectional=bidirectional,
                                batch_first=batch_first)
    theirs = getattr(torch.nn, kind)(features, hidden, num_layers=layers, bidirectional=bidirectional,
                                     batch_first=batch_first)
    with torch.no_grad():
        for p, q in zip(ours.parameters(), theirs.parameters()):
            q.copy_(torch.tensor(p.detach().numpy()))
    ours = ours.to(DEV)
    x = rng.standard_normal((batch, steps, features) if batch_first else (steps, batch, features)).astype(np.float32)
    xt = tp.tensor(x, device=DEV, requires_grad=True)
    xq = torch.tensor(x, requires_grad=True)
    states_shape = (layers * (2 if bidirectional else 1), batch, hidden)
    count = 2 if kind == "LSTM" else 1
    states = [rng.standard_normal(states_shape).astype(np.float32) for _ in range(count)]
    ts = [tp.tensor(s, device=DEV, requires_grad=True) for s in states]
    qs = [torch.tensor(s, requires_grad=True) for s in states]
    if given:
        (o1, f1), (o2, f2) = ours(xt, tuple(ts) if count == 2 else ts[0]), theirs(xq, tuple(qs) if count == 2 else qs[0])
    else:
        (o1, f1), (o2, f2) = ours(xt), theirs(xq)
    f1 = f1 if kind == "LSTM" else (f1,)
    f2 = f2 if kind == "LSTM" else (f2,)
    np.testing.assert_allclose(o1.detach().cpu().numpy(), o2.detach().numpy(), rtol=1e-5, atol=1e-5)
    for a, b in zip(f1, f2):
        np.testing.assert_allclose(a.detach().cpu().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-5)
    weights = rng.standard_normal(o2.shape).astype(np.float32)
    ((o1 * tp.tensor(weights, device=DEV)).sum() + sum(s.sum() for s in f1)).backward()
    ((o2 * torch.tensor(weights)).sum() + sum(s.sum() for s in f2)).backward()
    np.testing.assert_allclose(xt.grad.cpu().numpy(), xq.grad.numpy(), rtol=1e-4, atol=1e-5)
    if given:
        for a, b in zip(ts, qs):
            np.testing.assert_allclose(a.grad.cpu().numpy(), b.grad.numpy(), rtol=1e-4, atol=1e-5)
    for p, q in zip(ours.parameters(), theirs.parameters()):
        np.testing.assert_allclose(p.grad.cpu().numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_one_launch_per_layer_direction(monkeypatch):
    """An LSTM layer direction's forward is two kernels (W_hh's packing and the whole sequence) and
    its backward three (packing, the sequence, grad_w_hh's matmul): the decompositions made
    some 40 and 60 per step."""
    from tensorplug.backends.opencl import fused, kernels, recurrent

    launches = collections.Counter()
    build = kernels._kernel

    def counting(state, family, dtype, name):
        knl = build(state, family, dtype, name)

        def launch(*args):
            launches[name] += 1
            return knl(*args)

        return launch

    for module in (kernels, fused, recurrent):
        monkeypatch.setattr(module, "_kernel", counting)
    inputs, grads = _operands("lstm", 35, 20, 64, tp.float32, 0)
    _run("lstm", inputs, grads, lambda name: (launches.clear(), _fused(name))[1])
    # _run cleared the count before the backward op, so what is left is the backward's.
    assert launches == {"rnn_pack": 1, "lstm_backward": 1, "matmul_blocked": 1}
    launches.clear()
    _fused("lstm_sequence_forward")(inputs["projected"], inputs["w_hh"], inputs["h0"], inputs["c0"])
    assert launches == {"rnn_pack": 1, "lstm_forward": 1}


@pytest.mark.parametrize("name,args", [
    ("lstm_sequence_forward", lambda t: (t(3, 2, 8), t(8, 2), t(2, 2), t(2, 3))),
    ("gru_sequence_forward", lambda t: (t(3, 2, 6), t(6, 2), t(5), t(2, 2))),
    ("rnn_sequence_backward", lambda t: (t(2, 2), t(2, 2), t(3, 2, 2), t(3, 1, 2), t(2, 2), "tanh")),
])
def test_bad_shapes_raise_before_any_kernel(name, args):
    """A direct call of an op with shapes that do not fit raises RuntimeError naming the op and the
    shapes (the kernels would read past a buffer)."""
    operands = args(lambda *shape: tp.zeros(*shape, device=DEV))
    with pytest.raises(RuntimeError, match=f"{name}: shapes do not match .*expected"):
        _fused(name)(*operands)


@pytest.mark.parametrize("cell", list(GATES))
def test_saturated_gates_and_nan(cell):
    """Gate inputs far past where sigmoid and tanh saturate (|x| up to 300, e^x beyond float32),
    tiny ones (tanh's series) and a NaN give the decomposition's values: 0, 1, +-1 and no inf,
    NaN only where the NaN reaches."""
    inputs, grads = _operands(cell, 3, 3, 9, tp.float32, 5)
    rng = np.random.default_rng(6)
    p = rng.choice([-300.0, -90.0, -40.0, -1e-3, 0.0, 2e-4, 30.0, 89.0, 300.0], size=tuple(inputs["projected"].shape))
    p[1, 2, 3] = np.nan
    inputs["projected"] = tp.tensor(p, dtype=tp.float32, device=DEV)
    for got_part, want_part in zip(_run(cell, inputs, grads, _fused), _run(cell, inputs, grads, _decomposed)):
        for got, want in zip(got_part, want_part):
            want = _host(want)
            np.testing.assert_allclose(_host(got), want, rtol=2e-5, atol=2e-5 * max(1.0, np.abs(np.nan_to_num(want)).max()),
                                       equal_nan=True)


def test_other_dtypes_and_empty_batches_run_the_decomposition():
    """float16 and an empty batch leave the fused kernel to the decomposition: same results."""
    rng = np.random.default_rng(3)
    p = tp.tensor(rng.standard_normal((2, 3, 8)), dtype=tp.float16, device=DEV)
    w, h = tp.tensor(rng.standard_normal((8, 2)), dtype=tp.float16, device=DEV), tp.zeros(3, 2, dtype=tp.float16,
                                                                                            device=DEV)
    for got, want in zip(_fused("lstm_sequence_forward")(p, w, h, h), _decomposed("lstm_sequence_forward")(p, w, h, h)):
        np.testing.assert_array_equal(got.cpu().float().numpy(), want.cpu().float().numpy())
    empty = tp.zeros(2, 0, 4, device=DEV)
    hs = _fused("rnn_sequence_forward")(empty, tp.zeros(4, 4, device=DEV), tp.zeros(0, 4, device=DEV), "relu")
    assert hs.shape == (2, 0, 4)
