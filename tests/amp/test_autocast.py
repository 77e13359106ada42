"""tp.autocast casts: PyTorch's op lists on the CPU (checked against PyTorch 2.13 where installed),
its accelerator lists on other devices, values against NumPy float64 on the rounded inputs, and the
state rules (per thread, nesting, weight cache, backward, checkpoint, custom_fwd/custom_bwd)."""
import threading

import numpy as np
import pytest

import tensorplug as tp
from tensorplug.conformance.opdb._core import round_to
from tensorplug.utils.checkpoint import checkpoint

F = tp.nn.functional


def _torch():
    try:
        import torch
    except ImportError:
        pytest.skip("PyTorch is not installed: the CPU lists are checked against torch==2.13.0")
    return torch


def _round(a: np.ndarray, dtype) -> np.ndarray:
    """float32 values rounded to ``dtype`` (nearest, ties to even), as float64."""
    return round_to(np.asarray(a, np.float32).astype(np.float64), dtype.name)


# --- what each op returns on the CPU, against PyTorch --------------------------------------------------
def _cases(lib):
    F_ = lib.nn.functional
    lib.manual_seed(0)
    x, w = lib.randn(4, 6, 8), lib.randn(5, 8)
    y = F_.linear(x, w)  # float32 here; inside autocast the cases are re-run
    return {
        "linear": lambda: F_.linear(x, w),
        "matmul": lambda: x @ w.T,
        "bmm": lambda: lib.bmm(x, x.transpose(1, 2)),
        "addmm": lambda: lib.addmm(lib.zeros(6, 5), x[0], w.T),
        "addmv": lambda: lib.addmv(lib.zeros(6), x[0], w[0]),
        "baddbmm": lambda: lib.baddbmm(lib.zeros(4, 6, 6), x, x.transpose(1, 2)),
        "addbmm": lambda: lib.addbmm(lib.zeros(6, 6), x, x.transpose(1, 2)),
        "addr": lambda: lib.addr(lib.zeros(6, 5), x[0, :, 0], w[:, 0]),
        "prelu": lambda: lib.nn.functional.prelu(F_.linear(x, w) * 1.0, lib.full((1,), 0.25)),
        "tensordot": lambda: lib.tensordot(x, w, dims=([2], [1])),
        "mv": lambda: lib.mv(x[0], w[0]),
        "dot": lambda: lib.dot(w[0], w[0]),
        "einsum": lambda: lib.einsum("ij,kj->ik", x[0], w),
        "conv1d": lambda: F_.conv1d(x, lib.randn(3, 6, 3)),
        "conv2d": lambda: F_.conv2d(x.unsqueeze(0), lib.randn(3, 4, 3, 3)),
        "conv_transpose2d": lambda: F_.conv_transpose2d(x.unsqueeze(0), lib.randn(4, 3, 3, 3)),
        "sdpa": lambda: F_.scaled_dot_product_attention(x, x, x),
        "rnn": lambda: lib.nn.RNN(8, 5)(x)[0],
        "gru": lambda: lib.nn.GRU(8, 5)(x)[0],
        "softmax_of_lower": lambda: F_.linear(x, w).softmax(-1),
        "sum_of_lower": lambda: F_.linear(x, w).sum(),
        "mse_loss": lambda: F_.mse_loss(F_.linear(x, w), lib.zeros(4, 6, 5)),
        "cross_entropy": lambda: F_.cross_entropy(F_.linear(x, w)[0], lib.tensor([0, 1, 2, 3, 4, 0])),
        "nll_loss": lambda: F_.nll_loss(F_.linear(x, w)[0], lib.tensor([0, 1, 2, 3, 4, 0])),
        "smooth_l1_loss": lambda: F_.smooth_l1_loss(F_.linear(x, w), lib.zeros(4, 6, 5)),
        "l1_loss": lambda: F_.l1_loss(F_.linear(x, w), lib.zeros(4, 6, 5)),
        "huber_loss": lambda: F_.huber_loss(F_.linear(x, w), lib.zeros(4, 6, 5)),
        "bce": lambda: F_.binary_cross_entropy(lib.sigmoid(F_.linear(x, w)), lib.full((4, 6, 5), 0.5)),
        "bce_with_logits": lambda: F_.binary_cross_entropy_with_logits(F_.linear(x, w), lib.full((4, 6, 5), 0.5)),
        "prod": lambda: F_.linear(x, w).prod(),
        "cdist": lambda: lib.cdist(F_.linear(x, w), y),
        "trace": lambda: F_.linear(x, w)[0].trace(),
        "inv": lambda: lib.linalg.inv(F_.linear(x, w)[0, :5] + 5 * lib.eye(5)),
        "fft": lambda: lib.fft.fft(F_.linear(x, w)),
        "quantile": lambda: lib.quantile(F_.linear(x, w).flatten(), 0.5),
        "float64_matmul": lambda: x.double() @ w.double().T,
        "cat": lambda: lib.cat([F_.linear(x, w), y]),
        "bilinear": lambda: F_.bilinear(x, x, lib.randn(3, 8, 8)),
        "layer_norm_of_lower": lambda: F_.layer_norm(F_.linear(x, w), (5,), lib.ones(5), lib.zeros(5)),
        "batch_norm_of_lower": lambda: lib.nn.BatchNorm1d(6)(F_.linear(x, w)),
        "group_norm_of_lower": lambda: F_.group_norm(F_.linear(x, w), 2, lib.ones(6), lib.zeros(6)),
    }


CASE_NAMES = list(_cases(tp))


@pytest.mark.parametrize("dtype_name", ["bfloat16", "float16"])
@pytest.mark.parametrize("case", CASE_NAMES)
def test_cpu_output_dtype_matches_torch(case, dtype_name):
    torch = _torch()
    with torch.autocast("cpu", dtype=getattr(torch, dtype_name)):
        expected = _cases(torch)[case]().dtype
    with tp.autocast("cpu", dtype=getattr(tp, dtype_name)):
        got = _cases(tp)[case]().dtype
    assert got.name == str(expected).replace("torch.", "")


def test_cpu_lstm_runs_in_the_lower_dtype():
    """PyTorch's CPU list names its LSTM layer (mkldnn_rnn_layer); its oneDNN kernel is not
    available on every CPU, so this is checked against the list, not a run."""
    with tp.autocast("cpu"):
        out, (h, c) = tp.nn.LSTM(8, 5, num_layers=2)(tp.randn(3, 2, 8))
    assert out.dtype is h.dtype is c.dtype is tp.bfloat16


# --- values against NumPy --------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype_name", ["bfloat16", "float16"])
def test_linear_value_is_the_lower_precision_product(device, dtype_name):
    """linear under autocast = float64 product of the inputs rounded to the autocast dtype,
    rounded once more to it (PyTorch accumulates in float32 too)."""
    if not tp.amp.is_autocast_available(device) or dtype_name not in tp.backends._probe.probe(device).backend.autocast_dtypes:
        with pytest.raises(RuntimeError, match="autocast"):
            tp.autocast(device, dtype=getattr(tp, dtype_name))
        return
    dtype = getattr(tp, dtype_name)
    rng = np.random.default_rng(1)
    x, w, b = rng.standard_normal((7, 33)), rng.standard_normal((5, 33)), rng.standard_normal(5)
    tx, tw, tb = (tp.tensor(a, dtype=tp.float32, device=device) for a in (x, w, b))
    with tp.autocast(device, dtype=dtype):
        out = F.linear(tx, tw, tb)
    assert out.dtype is dtype
    expected = _round(x.astype(np.float32), dtype) @ _round(w.astype(np.float32), dtype).T + _round(b.astype(np.float32), dtype)
    eps = 2.0 ** -8 if dtype is tp.bfloat16 else 2.0 ** -11
    np.testing.assert_allclose(out.float().cpu().numpy(), expected, rtol=2 * eps, atol=2 * eps * np.abs(expected).max())


def test_accelerator_lists_on_a_non_cpu_device(device):
    """Every device other than the CPU follows PyTorch's accelerator lists: products in the
    lower dtype, softmax / layer_norm / losses in float32, binary_cross_entropy refused."""
    if device == "cpu" or not tp.amp.is_autocast_available(device):
        pytest.skip(f"{device}: not an accelerator that declares autocast dtypes")
    x = tp.randn(4, 8, device=device)
    w = tp.randn(3, 8, device=device, requires_grad=True)
    with tp.autocast(device):
        dtype = tp.get_autocast_dtype(device)
        y = F.linear(x, w)
        assert y.dtype is dtype
        assert y.softmax(-1).dtype is tp.float32
        assert F.layer_norm(y, (3,)).dtype is tp.float32
        assert F.layer_norm(y, (3,), tp.ones(3, device=device), tp.zeros(3, device=device)).dtype is tp.float32
        loss = F.mse_loss(y, tp.zeros(4, 3, device=device))
        assert loss.dtype is tp.float32
        with pytest.raises(RuntimeError, match="binary_cross_entropy: unsafe to autocast.*with_logits"):
            F.binary_cross_entropy(tp.sigmoid(y), tp.full((4, 3), 0.5, device=device))
    loss.backward()
    assert w.grad.dtype is tp.float32
    xr, wr = _round(x.cpu().numpy(), dtype), _round(w.detach().cpu().numpy(), dtype)
    expected_grad = 2 * (_round(xr @ wr.T, dtype)).T @ xr / 12  # d mean((x w^T)^2) / dw
    np.testing.assert_allclose(w.grad.cpu().numpy(), expected_grad, rtol=2e-2, atol=2e-2 * np.abs(expected_grad).max())


def test_autocast_of_one_device_type_leaves_others_alone(device):
    other = "cpu" if device != "cpu" else None
    if other is None:
        pytest.skip("needs a device besides the CPU")
    a = tp.randn(2, 3, device=device)
    with tp.autocast("cpu"):
        assert (a @ a.T).dtype is tp.float32  # the CPU's region casts no other device's tensors


# --- gradients and training, against PyTorch -------------------------------------------------------------
def _mlp_steps(lib, steps=8):
    lib.manual_seed(0)
    rng = np.random.default_rng(0)
    data = lib.tensor(rng.standard_normal((32, 10)), dtype=lib.float32)
    target = lib.tensor(rng.integers(0, 3, 32))
    w1 = lib.tensor(rng.standard_normal((16, 10)) * 0.3, dtype=lib.float32, requires_grad=True)
    w2 = lib.tensor(rng.standard_normal((3, 16)) * 0.3, dtype=lib.float32, requires_grad=True)
    opt = lib.optim.SGD([w1, w2], lr=0.1)
    losses, grads = [], None
    for _ in range(steps):
        opt.zero_grad()
        with lib.autocast("cpu", dtype=lib.bfloat16):
            hidden = lib.nn.functional.relu(lib.nn.functional.linear(data, w1))
            logits = lib.nn.functional.linear(hidden, w2)
            loss = lib.nn.functional.cross_entropy(logits, target)
        loss.backward()
        if grads is None:
            grads = (w1.grad.detach().numpy().copy(), w2.grad.detach().numpy().copy(), str(logits.dtype))
        opt.step()
        losses.append(loss.item())
    return losses, grads


def test_training_steps_match_torch():
    torch = _torch()
    ours, our_grads = _mlp_steps(tp)
    theirs, their_grads = _mlp_steps(torch)
    assert our_grads[2].replace("tensorplug.", "") == their_grads[2].replace("torch.", "") == "bfloat16"
    for g, h in zip(our_grads[:2], their_grads[:2]):
        np.testing.assert_allclose(g, h, rtol=3e-2, atol=3e-2 * np.abs(h).max())
    np.testing.assert_allclose(ours, theirs, rtol=2e-2)
    assert ours[-1] < ours[0]


def test_backward_inside_the_region_does_not_cast():
    """Backward ops run in the dtypes autocast chose for the forward, wherever backward() is called."""
    w = tp.randn(4, 6, requires_grad=True)
    x = tp.randn(3, 6)
    with tp.autocast("cpu"):
        F.linear(x, w).float().pow(2).sum().backward()
        inside = w.grad.clone()
    w.grad = None
    with tp.autocast("cpu"):
        loss = F.linear(x, w).float().pow(2).sum()
    loss.backward()
    np.testing.assert_array_equal(inside.numpy(), w.grad.numpy())
    assert w.grad.dtype is tp.float32


# --- state rules ----------------------------------------------------------------------------------------
def test_weights_are_cast_once_per_region_and_recast_after_a_change():
    lin = tp.nn.Linear(6, 4)
    x = tp.randn(2, 6)
    with tp.autocast("cpu"):
        first = lin(x)
        second = lin(x)
        # Both products read one cast of the weight: the same autograd node feeds both.
        cast_nodes = [{id(fn) for fn, _ in out.grad_fn.next_functions if fn is not None and "Copy" in fn.name()}
                      for out in (first, second)]
        assert cast_nodes[0] and cast_nodes[0] == cast_nodes[1]
        with tp.no_grad():
            lin.weight.mul_(2)
        third = lin(x)
    np.testing.assert_allclose(third.detach().float().numpy(), 2 * first.detach().float().numpy() - lin.bias.detach().numpy(),
                               rtol=2e-2, atol=2e-2)
    with tp.autocast("cpu", cache_enabled=False):
        assert not tp.is_autocast_cache_enabled()
    assert tp.is_autocast_cache_enabled()


def test_nesting_disabling_and_the_state_api_match_torch():
    torch = _torch()
    for lib in (tp, torch):
        a = lib.ones(2, 3)
        with lib.autocast("cpu"):
            assert (a @ a.T).dtype is lib.bfloat16
            with lib.autocast("cpu", enabled=False):
                assert (a @ a.T).dtype is lib.float32 and not lib.is_autocast_enabled("cpu")
            with lib.autocast("cpu", dtype=lib.float16):
                assert (a @ a.T).dtype is lib.float16
            assert (a @ a.T).dtype is lib.bfloat16
        assert (a @ a.T).dtype is lib.float32
        lib.set_autocast_enabled("cpu", True)
        try:
            assert (a @ a.T).dtype is lib.get_autocast_dtype("cpu")
        finally:
            lib.set_autocast_enabled("cpu", False)
        assert (a @ a.T).dtype is lib.float32
        lib.clear_autocast_cache()


def test_autocast_state_is_per_thread():
    a = tp.ones(2, 3)
    seen = {}

    def other():
        seen["enabled"] = tp.is_autocast_enabled("cpu")
        seen["dtype"] = (a @ a.T).dtype

    with tp.autocast("cpu"):
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
        assert (a @ a.T).dtype is tp.bfloat16
    assert seen == {"enabled": False, "dtype": tp.float32}


def test_float64_complex_and_integer_tensors_are_not_cast():
    with tp.autocast("cpu"):
        d = tp.ones(2, 2, dtype=tp.float64)
        assert (d @ d).dtype is tp.float64
        c = tp.ones(2, 2, dtype=tp.complex64)
        assert (c @ c).dtype is tp.complex64
        i = tp.ones(2, 2, dtype=tp.int64)
        assert (i @ i).dtype is tp.int64


def test_checkpoint_recomputes_under_the_first_runs_autocast_state():
    lin = tp.nn.Linear(8, 4)
    x = tp.randn(3, 8, requires_grad=True)
    with tp.autocast("cpu"):
        out = checkpoint(lambda t: F.relu(lin(t)), x, use_reentrant=False)
        assert out.dtype is tp.bfloat16
        loss = out.float().sum()
    loss.backward()  # outside the region: the recomputation still casts, or the check would fail
    checkpointed = (lin.weight.grad.clone(), x.grad.clone())
    lin.zero_grad()
    x.grad = None
    with tp.autocast("cpu"):
        loss = F.relu(lin(x)).float().sum()
    loss.backward()
    np.testing.assert_array_equal(checkpointed[0].numpy(), lin.weight.grad.numpy())
    np.testing.assert_array_equal(checkpointed[1].numpy(), x.grad.numpy())


def test_custom_fwd_casts_inputs_and_custom_bwd_restores_the_state():
    seen = {}

    class Square(tp.autograd.Function):
        @staticmethod
        @tp.amp.custom_fwd(device_type="cpu", cast_inputs=tp.float32)
        def forward(ctx, a):
            seen["forward"] = (a.dtype, tp.is_autocast_enabled("cpu"))
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        @tp.amp.custom_bwd(device_type="cpu")
        def backward(ctx, grad):
            seen["backward"] = tp.is_autocast_enabled("cpu")
            (a,) = ctx.saved_tensors
            return 2 * a * grad

    a = tp.ones(3, dtype=tp.bfloat16, requires_grad=True)
    with tp.autocast("cpu"):
        out = Square.apply(a)
    out.sum().backward()
    assert seen == {"forward": (tp.float32, False), "backward": False}
    assert out.dtype is tp.float32 and a.grad.dtype is tp.bfloat16

    class Plain(tp.autograd.Function):
        @staticmethod
        @tp.amp.custom_fwd(device_type="cpu")
        def forward(ctx, a):
            seen["plain"] = tp.is_autocast_enabled("cpu")
            return (a @ a.T).float()

        @staticmethod
        @tp.amp.custom_bwd(device_type="cpu")
        def backward(ctx, grad):
            seen["plain backward"] = tp.is_autocast_enabled("cpu")
            return grad.sum(0, keepdim=True).T @ tp.ones(1, 2) * 0

    b = tp.ones(2, 2, requires_grad=True)
    with tp.autocast("cpu"):
        result = Plain.apply(b)
    result.sum().backward()
    assert seen["plain"] is True and seen["plain backward"] is True


def test_grad_scaler_with_float16_autocast_trains():
    lin = tp.nn.Linear(4, 1)
    opt = tp.optim.SGD(lin.parameters(), lr=0.05)
    scaler = tp.amp.GradScaler("cpu", init_scale=2.0 ** 10)
    x, y = tp.randn(64, 4), tp.randn(64, 1)
    losses = []
    for _ in range(20):
        opt.zero_grad()
        with tp.autocast("cpu", dtype=tp.float16):
            loss = F.mse_loss(lin(x), y)
        assert loss.dtype is tp.float32
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    assert all(p.grad.dtype is tp.float32 for p in lin.parameters())
