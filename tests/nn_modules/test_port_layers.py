"""Padding modules, InstanceNorm1d/2d/3d, RNNCell/LSTMCell/GRUCell and RNNBase.flatten_parameters:
exact or NumPy float64 expected values (run everywhere) and PyTorch parity when it is installed."""
import numpy as np
import pytest

import tensorplug as tp

from module_parity import check_module


def _torch():
    try:
        import torch
    except ImportError:
        pytest.skip("PyTorch is not installed")
    return torch


# --- padding -------------------------------------------------------------------------------------------
ROW = np.array([[[1.0, 2.0, 3.0]]])  # (N, C, L)


@pytest.mark.parametrize("module,expected", [
    (tp.nn.ReflectionPad1d(2), [3, 2, 1, 2, 3, 2, 1]),
    (tp.nn.ReflectionPad1d((1, 0)), [2, 1, 2, 3]),
    (tp.nn.ReplicationPad1d(2), [1, 1, 1, 2, 3, 3, 3]),
    (tp.nn.ReplicationPad1d((0, 1)), [1, 2, 3, 3]),
    (tp.nn.ConstantPad1d(1, 7.5), [7.5, 1, 2, 3, 7.5]),
    (tp.nn.ConstantPad1d((2, -1), 0.0), [0, 0, 1, 2]),
    (tp.nn.ZeroPad1d((0, 2)), [1, 2, 3, 0, 0]),
], ids=lambda v: repr(v) if isinstance(v, tp.nn.Module) else "")
def test_pad1d_exact(module, expected):
    out = module(tp.tensor(ROW))
    np.testing.assert_array_equal(out.numpy()[0, 0], expected)


def test_pad2d_exact_and_unbatched():
    x = np.arange(6.0).reshape(1, 2, 3)  # unbatched (C, H, W)
    np.testing.assert_array_equal(tp.nn.ReflectionPad2d((1, 1, 1, 0))(tp.tensor(x)).numpy(),
                                  np.pad(x, ((0, 0), (1, 0), (1, 1)), mode="reflect"))
    np.testing.assert_array_equal(tp.nn.ReplicationPad2d(1)(tp.tensor(x[None])).numpy(),
                                  np.pad(x[None], ((0, 0), (0, 0), (1, 1), (1, 1)), mode="edge"))
    np.testing.assert_array_equal(tp.nn.ZeroPad2d((2, 0, 0, 1))(tp.tensor(x)).numpy(),
                                  np.pad(x, ((0, 0), (0, 1), (2, 0))))
    np.testing.assert_array_equal(tp.nn.ConstantPad2d(1, -1.0)(tp.tensor(x)).numpy(),
                                  np.pad(x, ((0, 0), (1, 1), (1, 1)), constant_values=-1.0))
    cube = np.arange(12.0).reshape(1, 1, 2, 2, 3)
    np.testing.assert_array_equal(tp.nn.ReflectionPad3d(1)(tp.tensor(cube)).numpy(),
                                  np.pad(cube, ((0, 0), (0, 0), (1, 1), (1, 1), (1, 1)), mode="reflect"))


def test_pad_gradients_accumulate_into_edges():
    """Replicated and reflected elements send their gradient back to their source."""
    x = tp.tensor([[[1.0, 2.0, 3.0]]], requires_grad=True)
    tp.nn.ReplicationPad1d(2)(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy()[0, 0], [3, 1, 3])
    x.grad = None
    tp.nn.ReflectionPad1d(2)(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy()[0, 0], [2, 3, 2])


def test_pad_errors_and_reprs():
    with pytest.raises(ValueError, match="expected 2D or 3D input"):
        tp.nn.ReflectionPad1d(1)(tp.ones(1, 1, 2, 2))
    with pytest.raises(RuntimeError, match="Padding size should be less than"):
        tp.nn.ReflectionPad1d(3)(tp.ones(1, 1, 3))
    with pytest.raises(ValueError, match="tuple of 4 ints"):
        tp.nn.ZeroPad2d((1, 2))
    assert repr(tp.nn.ReflectionPad2d(2)) == "ReflectionPad2d((2, 2, 2, 2))"
    assert repr(tp.nn.ConstantPad1d(2, 3.5)) == "ConstantPad1d(padding=(2, 2), value=3.5)"
    assert repr(tp.nn.ZeroPad2d(1)) == "ZeroPad2d((1, 1, 1, 1))"


PAD_CASES = [("ReflectionPad1d", (2,), (2, 3, 5)), ("ReflectionPad2d", ((1, 2, 0, 1),), (2, 3, 4, 5)),
             ("ReplicationPad1d", ((3, 1),), (3, 6)), ("ReplicationPad2d", (2,), (1, 2, 3, 3)),
             ("ZeroPad2d", ((1, 0, 2, 1),), (2, 2, 3, 3)), ("ConstantPad1d", (2, 0.5), (2, 2, 4)),
             ("ConstantPad2d", ((1, -1, 0, 2), 2.0), (2, 3, 3)), ("ReflectionPad3d", (1,), (1, 1, 2, 3, 3)),
             ("ReplicationPad3d", (1,), (1, 2, 2, 2)), ("ZeroPad1d", (1,), (2, 3))]


@pytest.mark.parametrize("name,args,shape", PAD_CASES, ids=[c[0] for c in PAD_CASES])
def test_pad_matches_torch(name, args, shape):
    torch = _torch()
    x = np.random.default_rng(0).standard_normal(shape)
    check_module(torch, getattr(tp.nn, name)(*args), getattr(torch.nn, name)(*args), [x])
    assert repr(getattr(tp.nn, name)(*args)) == repr(getattr(torch.nn, name)(*args))


# --- InstanceNorm ---------------------------------------------------------------------------------------
def _instance_norm_reference(x, eps=1e-5):
    axes = tuple(range(2, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + eps)


@pytest.mark.parametrize("cls,shape", [(tp.nn.InstanceNorm1d, (2, 3, 7)), (tp.nn.InstanceNorm2d, (2, 3, 4, 5)),
                                       (tp.nn.InstanceNorm3d, (2, 3, 2, 3, 4))])
def test_instance_norm_numpy(cls, shape):
    x = np.random.default_rng(0).standard_normal(shape) * 3 + 1
    np.testing.assert_allclose(cls(3)(tp.tensor(x)).numpy(), _instance_norm_reference(x), rtol=1e-10, atol=1e-12)
    # Unbatched input: a batch of one.
    np.testing.assert_allclose(cls(3)(tp.tensor(x[0])).numpy(), _instance_norm_reference(x[:1])[0], rtol=1e-10,
                               atol=1e-12)


def test_instance_norm_affine_and_running_stats_numpy():
    x = np.random.default_rng(1).standard_normal((4, 2, 6))
    m = tp.nn.InstanceNorm1d(2, affine=True, track_running_stats=True, momentum=0.2).double()
    assert sorted(m.state_dict()) == ["bias", "num_batches_tracked", "running_mean", "running_var", "weight"]
    with tp.no_grad():
        m.weight.copy_(tp.tensor([2.0, 0.5], dtype=tp.float64))
        m.bias.copy_(tp.tensor([1.0, -1.0], dtype=tp.float64))
    out = m(tp.tensor(x)).detach().numpy()
    np.testing.assert_allclose(out, _instance_norm_reference(x) * np.array([2.0, 0.5])[:, None]
                               + np.array([1.0, -1.0])[:, None], rtol=1e-10, atol=1e-12)
    # Running statistics: the mean over the batch of per-instance mean and unbiased variance.
    mean = x.mean(axis=2).mean(axis=0)
    var = x.var(axis=2, ddof=1).mean(axis=0)
    np.testing.assert_allclose(m.running_mean.numpy(), 0.8 * 0 + 0.2 * mean, rtol=1e-10)
    np.testing.assert_allclose(m.running_var.numpy(), 0.8 * 1 + 0.2 * var, rtol=1e-10)
    m.eval()  # eval normalizes with the running statistics
    expected = (x - m.running_mean.numpy()[:, None]) / np.sqrt(m.running_var.numpy()[:, None] + 1e-5)
    expected = expected * np.array([2.0, 0.5])[:, None] + np.array([1.0, -1.0])[:, None]
    np.testing.assert_allclose(m(tp.tensor(x)).detach().numpy(), expected, rtol=1e-10, atol=1e-12)


def test_instance_norm_checks():
    with pytest.raises(ValueError, match="expected 3D or 4D input"):
        tp.nn.InstanceNorm2d(3)(tp.ones(3, 4))
    with pytest.raises(ValueError, match="to match num_features"):
        tp.nn.InstanceNorm1d(3, affine=True)(tp.ones(2, 4, 5))
    with pytest.warns(UserWarning, match="does not match num_features"):
        tp.nn.InstanceNorm1d(3)(tp.ones(2, 4, 5))


@pytest.mark.parametrize("name,kwargs,shape", [
    ("InstanceNorm1d", dict(), (2, 3, 7)), ("InstanceNorm2d", dict(affine=True), (2, 3, 4, 5)),
    ("InstanceNorm2d", dict(affine=True, track_running_stats=True), (3, 3, 4, 4)),
    ("InstanceNorm1d", dict(track_running_stats=True, momentum=None), (3, 7)),
    ("InstanceNorm3d", dict(affine=True), (1, 3, 2, 3, 4)),
])
def test_instance_norm_matches_torch(name, kwargs, shape):
    torch = _torch()
    x = np.random.default_rng(2).standard_normal(shape)
    ours, theirs = getattr(tp.nn, name)(3, **kwargs), getattr(torch.nn, name)(3, **kwargs)
    assert repr(ours) == repr(theirs)
    check_module(torch, ours, theirs, [x])
    for key, value in theirs.state_dict().items():
        np.testing.assert_allclose(ours.state_dict()[key].numpy(), value.numpy(), rtol=1e-9, err_msg=key)
    ours.eval(), theirs.eval()
    check_module(torch, ours, theirs, [x])


# --- cells ----------------------------------------------------------------------------------------------
def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


def _weights(cell):
    return [None if p is None else p.detach().numpy() for p in (cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh)]


def test_cells_numpy_reference():
    rng = np.random.default_rng(3)
    x, h, c = rng.standard_normal((4, 3)), rng.standard_normal((4, 5)), rng.standard_normal((4, 5))
    tx, th, tc = (tp.tensor(a) for a in (x, h, c))

    cell = tp.nn.RNNCell(3, 5).double()
    w_ih, w_hh, b_ih, b_hh = _weights(cell)
    np.testing.assert_allclose(cell(tx, th).detach().numpy(), np.tanh(x @ w_ih.T + b_ih + h @ w_hh.T + b_hh), rtol=1e-12)
    relu = tp.nn.RNNCell(3, 5, bias=False, nonlinearity="relu").double()
    w_ih, w_hh, _, _ = _weights(relu)
    np.testing.assert_allclose(relu(tx).detach().numpy(), np.maximum(x @ w_ih.T, 0), rtol=1e-12)

    lstm = tp.nn.LSTMCell(3, 5).double()
    w_ih, w_hh, b_ih, b_hh = _weights(lstm)
    i, f, g, o = np.split(x @ w_ih.T + b_ih + h @ w_hh.T + b_hh, 4, axis=1)
    c_next = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
    h_next = _sigmoid(o) * np.tanh(c_next)
    got_h, got_c = lstm(tx, (th, tc))
    np.testing.assert_allclose(got_h.detach().numpy(), h_next, rtol=1e-12)
    np.testing.assert_allclose(got_c.detach().numpy(), c_next, rtol=1e-12)

    gru = tp.nn.GRUCell(3, 5).double()
    w_ih, w_hh, b_ih, b_hh = _weights(gru)
    x_r, x_z, x_n = np.split(x @ w_ih.T + b_ih, 3, axis=1)
    h_r, h_z, h_n = np.split(h @ w_hh.T + b_hh, 3, axis=1)
    r, z = _sigmoid(x_r + h_r), _sigmoid(x_z + h_z)
    n = np.tanh(x_n + r * h_n)
    np.testing.assert_allclose(gru(tx, th).detach().numpy(), (1 - z) * n + z * h, rtol=1e-12)


def test_cell_shapes_unbatched_and_errors():
    cell = tp.nn.LSTMCell(3, 5)
    h, c = cell(tp.ones(3))
    assert h.shape == (5,) and c.shape == (5,)
    assert tp.nn.GRUCell(3, 5)(tp.ones(2, 3)).shape == (2, 5)
    assert [n for n, _ in cell.named_parameters()] == ["weight_ih", "weight_hh", "bias_ih", "bias_hh"]
    assert cell.weight_ih.shape == (20, 3)
    with pytest.raises(ValueError, match="Expected input to be 1D or 2D, got 3D"):
        tp.nn.RNNCell(3, 4)(tp.ones(2, 2, 3))
    with pytest.raises(RuntimeError, match="expected hx of shape"):
        tp.nn.GRUCell(3, 4)(tp.ones(2, 3), tp.ones(3, 4))
    with pytest.raises(TypeError, match="tuple"):
        tp.nn.LSTMCell(3, 4)(tp.ones(2, 3), tp.ones(2, 4))
    with pytest.raises(ValueError, match="Unknown nonlinearity"):
        tp.nn.RNNCell(3, 4, nonlinearity="gelu")


@pytest.mark.parametrize("name,kwargs", [("RNNCell", dict()), ("RNNCell", dict(nonlinearity="relu", bias=False)),
                                         ("LSTMCell", dict()), ("GRUCell", dict()), ("GRUCell", dict(bias=False))])
def test_cells_match_torch(name, kwargs):
    torch = _torch()
    rng = np.random.default_rng(4)
    ours, theirs = getattr(tp.nn, name)(3, 5, **kwargs), getattr(torch.nn, name)(3, 5, **kwargs)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    x, h = rng.standard_normal((4, 3)), rng.standard_normal((4, 5))
    check_module(torch, ours, theirs, [x])
    if name == "LSTMCell":
        c = rng.standard_normal((4, 5))
        tp_out = ours(tp.tensor(x), (tp.tensor(h), tp.tensor(c)))
        th_out = theirs(torch.tensor(x), (torch.tensor(h), torch.tensor(c)))
        for a, b in zip(tp_out, th_out):
            np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-10)
    else:
        check_module(torch, ours, theirs, [x, h])
        check_module(torch, ours, theirs, [x[0], h[0]])


def test_flatten_parameters_is_a_no_op():
    lstm = tp.nn.LSTM(3, 4, num_layers=2)
    before = {k: v.numpy().copy() for k, v in lstm.state_dict().items()}
    assert lstm.flatten_parameters() is None
    assert all(np.array_equal(before[k], v.numpy()) for k, v in lstm.state_dict().items())
    tp.nn.GRU(2, 2).flatten_parameters()
