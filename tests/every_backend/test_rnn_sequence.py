"""The GRU's and the Elman RNN's whole-sequence ops (fused in C++ on the CPU, decomposed elsewhere)
give the values and gradients of a step-by-step NumPy float64 reference and of PyTorch, on every
backend (issue 14)."""
import numpy as np
import pytest

import tensorplug as tp

# mode -> (module class, keyword arguments)
_MODES = {"gru": ("GRU", {}), "rnn_tanh": ("RNN", {"nonlinearity": "tanh"}),
          "rnn_relu": ("RNN", {"nonlinearity": "relu"})}


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _numpy_layer(mode, x, w_ih, w_hh, b_ih, b_hh, h):
    """One layer direction, step by step, in float64, from PyTorch's documented equations;
    returns the outputs (T, B, H)."""
    hidden = w_hh.shape[1]
    outs = []
    for t in range(x.shape[0]):
        xi, hh = x[t] @ w_ih.T + b_ih, h @ w_hh.T + b_hh
        if mode == "gru":
            r = _sigmoid(xi[:, :hidden] + hh[:, :hidden])
            z = _sigmoid(xi[:, hidden:2 * hidden] + hh[:, hidden:2 * hidden])
            n = np.tanh(xi[:, 2 * hidden:] + r * hh[:, 2 * hidden:])
            h = (1 - z) * n + z * h
        else:
            h = np.tanh(xi + hh) if mode == "rnn_tanh" else np.maximum(xi + hh, 0)
        outs.append(h)
    return np.stack(outs)


def _numeric_grad(fn, value, eps=1e-6):
    grad = np.zeros_like(value)
    for index in np.ndindex(value.shape):
        plus, minus = value.copy(), value.copy()
        plus[index] += eps
        minus[index] -= eps
        grad[index] = (fn(plus) - fn(minus)) / (2 * eps)
    return grad


@pytest.mark.parametrize("mode", list(_MODES))
# hidden 11: the CPU kernels' eight-lane gate pass and its scalar tail.
@pytest.mark.parametrize("steps,batch,hidden", [(5, 3, 4), (1, 1, 2), (4, 0, 3), (3, 2, 11)])
def test_layer_matches_numpy(device, mode, steps, batch, hidden):
    """One layer: outputs, h_n, and the gradients of the input, h0 and every weight against
    central differences of the float64 reference."""
    rng = np.random.default_rng(steps * 10 + hidden)
    features = 3
    cls, kwargs = _MODES[mode]
    layer = getattr(tp.nn, cls)(features, hidden, **kwargs).to(device)
    params = {n: p.detach().cpu().numpy().astype(np.float64) for n, p in layer.named_parameters()}
    values = {"x": rng.standard_normal((steps, batch, features)), "h0": rng.standard_normal((batch, hidden)),
              **params}
    weights = rng.standard_normal((steps, batch, hidden))  # a loss that weighs every output

    def numpy_loss(**changed):
        v = {**values, **changed}
        outs = _numpy_layer(mode, v["x"], v["weight_ih_l0"], v["weight_hh_l0"], v["bias_ih_l0"], v["bias_hh_l0"], v["h0"])
        return (outs * weights).sum() + 2 * outs[-1].sum(), outs

    xt = tp.tensor(values["x"], dtype=tp.float32, device=device, requires_grad=True)
    h0 = tp.tensor(values["h0"][None], dtype=tp.float32, device=device, requires_grad=True)
    out, h_n = layer(xt, h0)
    _, expected = numpy_loss()
    np.testing.assert_allclose(out.detach().cpu().numpy(), expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(h_n[0].detach().cpu().numpy(), expected[-1], rtol=1e-4, atol=1e-5)

    loss = (out * tp.tensor(weights, dtype=tp.float32, device=device)).sum() + 2 * h_n.sum()
    loss.backward()
    if not batch:
        return
    got = {"x": xt.grad.cpu().numpy(), "h0": h0.grad[0].cpu().numpy(),
           **{n: p.grad.cpu().numpy() for n, p in layer.named_parameters()}}
    for name, value in values.items():
        numeric = _numeric_grad(lambda v: numpy_loss(**{name: v})[0], value)
        np.testing.assert_allclose(got[name], numeric, rtol=1e-3, atol=1e-4, err_msg=f"gradient of {name}")


@pytest.mark.parametrize("mode", list(_MODES))
@pytest.mark.parametrize("layers,bidirectional,batch_first,bias,batch,hidden", [
    (1, False, False, True, 3, 5), (2, True, False, True, 3, 10), (2, False, True, True, 3, 10),
    (1, True, True, False, 3, 5),
    (1, False, False, True, 64, 72)])  # 64 x 72 states: the CPU kernels split the batch over threads
def test_matches_pytorch_where_installed(device, mode, layers, bidirectional, batch_first, bias, batch, hidden):
    """Layers and directions stacked, batch_first, without bias: outputs, h_n and every gradient
    (input, h0, weights) against PyTorch in float64."""
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")
    cls, kwargs = _MODES[mode]
    options = dict(num_layers=layers, bidirectional=bidirectional, batch_first=batch_first, bias=bias, **kwargs)
    ours = getattr(tp.nn, cls)(6, hidden, **options)
    theirs = getattr(torch.nn, cls)(6, hidden, **options).double()
    with torch.no_grad():
        for (name, p), (their_name, q) in zip(ours.named_parameters(), theirs.named_parameters()):
            assert name == their_name
            q.copy_(torch.tensor(p.detach().numpy()))
    ours = ours.to(device)
    rng = np.random.default_rng(layers * 4 + bidirectional * 2 + batch_first)
    x = rng.standard_normal((batch, 7, 6) if batch_first else (7, batch, 6))
    h0 = rng.standard_normal((layers * (2 if bidirectional else 1), batch, hidden))
    w_out = rng.standard_normal(x.shape[:2] + (hidden * (2 if bidirectional else 1),))
    xt = tp.tensor(x, dtype=tp.float32, device=device, requires_grad=True)
    ht = tp.tensor(h0, dtype=tp.float32, device=device, requires_grad=True)
    xq, hq = torch.tensor(x, requires_grad=True), torch.tensor(h0, requires_grad=True)
    (o1, h1), (o2, h2) = ours(xt, ht), theirs(xq, hq)
    np.testing.assert_allclose(o1.detach().cpu().numpy(), o2.detach().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(h1.detach().cpu().numpy(), h2.detach().numpy(), rtol=1e-4, atol=1e-5)
    ((o1 * tp.tensor(w_out, dtype=tp.float32, device=device)).sum() + 2 * h1.sum()).backward()
    ((o2 * torch.tensor(w_out)).sum() + 2 * h2.sum()).backward()
    np.testing.assert_allclose(xt.grad.cpu().numpy(), xq.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ht.grad.cpu().numpy(), hq.grad.numpy(), rtol=1e-4, atol=1e-5)
    for (name, p), q in zip(ours.named_parameters(), theirs.parameters()):
        np.testing.assert_allclose(p.grad.cpu().numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)


@pytest.mark.parametrize("mode", list(_MODES))
def test_float64_matches_pytorch_where_installed(device, mode):
    """float64 (the CPU's second fused dtype; npdev's optional one) to 1e-10."""
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")
    if device == "opencl":
        pytest.skip("the OpenCL backend does not declare float64")
    cls, kwargs = _MODES[mode]
    ours = getattr(tp.nn, cls)(4, 3, num_layers=2, bidirectional=True, dtype=tp.float64, **kwargs)
    theirs = getattr(torch.nn, cls)(4, 3, num_layers=2, bidirectional=True, **kwargs).double()
    with torch.no_grad():
        for p, q in zip(ours.parameters(), theirs.parameters()):
            q.copy_(torch.tensor(p.detach().numpy()))
    ours = ours.to(device)
    x = np.random.default_rng(3).standard_normal((6, 2, 4))
    xt, xq = tp.tensor(x, device=device, requires_grad=True), torch.tensor(x, requires_grad=True)
    (o1, h1), (o2, h2) = ours(xt), theirs(xq)
    np.testing.assert_allclose(o1.detach().cpu().numpy(), o2.detach().numpy(), rtol=1e-10, atol=1e-12)
    (o1.sum() + h1.sum()).backward()
    (o2.sum() + h2.sum()).backward()
    np.testing.assert_allclose(xt.grad.cpu().numpy(), xq.grad.numpy(), rtol=1e-10, atol=1e-12)
    for p, q in zip(ours.parameters(), theirs.parameters()):
        np.testing.assert_allclose(p.grad.cpu().numpy(), q.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("mode", list(_MODES))
def test_unbatched_input_matches_pytorch_where_installed(mode):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")
    cls, kwargs = _MODES[mode]
    ours = getattr(tp.nn, cls)(4, 3, **kwargs)
    theirs = getattr(torch.nn, cls)(4, 3, **kwargs)
    with torch.no_grad():
        for p, q in zip(ours.parameters(), theirs.parameters()):
            q.copy_(torch.tensor(p.detach().numpy()))
    x = np.random.default_rng(4).standard_normal((5, 4)).astype(np.float32)
    (o1, h1), (o2, h2) = ours(tp.tensor(x)), theirs(torch.tensor(x))
    assert o1.shape == tuple(o2.shape) and h1.shape == tuple(h2.shape)
    np.testing.assert_allclose(o1.detach().numpy(), o2.detach().numpy(), rtol=1e-5, atol=1e-6)


def _graph_nodes(tensor) -> list:
    seen, stack, names = set(), [tensor.grad_fn], []
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        names.append(node.name())
        stack.extend(next_node for next_node, _ in node.next_functions)
    return names


@pytest.mark.parametrize("mode", list(_MODES))
def test_one_graph_node_per_layer_direction(mode):
    """The recurrence is one autograd node per layer direction, however long the sequence."""
    cls, kwargs = _MODES[mode]
    net = getattr(tp.nn, cls)(3, 4, num_layers=2, bidirectional=True, **kwargs)
    short, long = (_graph_nodes(net(tp.randn(steps, 2, 3))[0]) for steps in (3, 12))
    recurrences = [name for name in long if name.endswith("SequenceBackward")]
    assert recurrences == [("GRU" if mode == "gru" else "RNN") + "SequenceBackward"] * 4
    assert len(short) == len(long)


def test_empty_sequence_raises_pytorchs_error():
    with pytest.raises(RuntimeError, match="Expected sequence length to be larger than 0 in RNN"):
        tp.nn.GRU(3, 4)(tp.randn(0, 2, 3))


@pytest.mark.parametrize("op,call", [
    ("gru_sequence_forward", lambda: __import__("tensorplug.nn._gru_sequence", fromlist=["GRUSequence"]).GRUSequence.apply(
        tp.randn(5, 2, 12), tp.randn(12, 4), tp.randn(9), tp.randn(2, 4))),
    ("rnn_sequence_forward", lambda: __import__("tensorplug.nn._rnn_sequence", fromlist=["RNNSequence"]).RNNSequence.apply(
        tp.randn(5, 2, 4), tp.randn(4, 4), tp.randn(3, 4), "tanh")),
])
def test_bad_shapes_raise_naming_the_op_and_shapes(op, call):
    with pytest.raises(RuntimeError, match=rf"{op}: shapes do not match .*got projected \[5, 2, \d+\]"):
        call()


def test_bad_nonlinearity_raises():
    from tensorplug.nn._rnn_sequence import RNNSequence

    with pytest.raises(ValueError, match="rnn_sequence_forward: nonlinearity must be 'tanh' or 'relu', got 'gelu'"):
        RNNSequence.apply(tp.randn(5, 2, 4), tp.randn(4, 4), tp.randn(2, 4), "gelu")


@pytest.mark.parametrize("op", ["gru_sequence_forward", "gru_sequence_backward", "rnn_sequence_forward",
                                "rnn_sequence_backward"])
def test_cpu_runs_the_fused_kernels(op):
    """The CPU's table holds the C++ kernels' adapters, not the per-step decomposition."""
    from tensorplug.backends import _registry
    from tensorplug.dispatcher import get_operator

    tp.ones(1)
    kernel = get_operator(op).kernels[_registry.backend_key("cpu")]
    kernel = getattr(kernel, "__wrapped__", kernel)  # check mode wraps it
    assert kernel.__module__ == "tensorplug.backends.cpu.kernels" and kernel.__name__ == "_" + op


@pytest.mark.parametrize("cls,kwargs", [("GRU", {}), ("RNN", {"nonlinearity": "tanh"}), ("RNN", {"nonlinearity": "relu"}),
                                         ("LSTM", {})], ids=["gru", "rnn_tanh", "rnn_relu", "lstm"])
def test_second_order_gradients_match_pytorch_where_installed(device, cls, kwargs):
    """backward(create_graph=True) through the whole-sequence ops (the LSTM's too) builds a graph:
    d/dθ of <v, d(sum out^2 + h_n^2)/dx> for every parameter θ and x, against PyTorch float64:
    the ops' own backward is not differentiable, so this takes their graph-building path."""
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")
    ours = getattr(tp.nn, cls)(3, 4, num_layers=2, bidirectional=True, **kwargs)
    theirs = getattr(torch.nn, cls)(3, 4, num_layers=2, bidirectional=True, **kwargs).double()
    with torch.no_grad():
        for p, q in zip(ours.parameters(), theirs.parameters()):
            q.copy_(torch.tensor(p.detach().numpy()))
    ours = ours.to(device)
    rng = np.random.default_rng(7)
    x, v = rng.standard_normal((5, 2, 3)), rng.standard_normal((5, 2, 3))
    results = []
    for lib, net, dev in ((tp, ours, device), (torch, theirs, "cpu")):
        xt = lib.tensor(x, dtype=lib.float32 if lib is tp else lib.float64, device=dev, requires_grad=True)
        out, state = net(xt)
        h_n = state[0] if cls == "LSTM" else state
        (g,) = lib.autograd.grad((out ** 2).sum() + (h_n ** 2).sum(), [xt], create_graph=True)
        params = [xt, *net.parameters()]
        second = lib.autograd.grad((g * lib.tensor(v, dtype=g.dtype, device=dev)).sum(), params, allow_unused=True)
        results.append([np.zeros(tuple(p.shape)) if s is None else s.detach().cpu().numpy() for p, s in zip(params, second)])
    for name, a, b in zip(["x"] + [n for n, _ in ours.named_parameters()], *results):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-4, err_msg=name)

