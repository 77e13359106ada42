"""tp.utils.checkpoint: gradients equal torch.utils.checkpoint's (both variants, every backend),
dropout masks replayed from the saved generator states, activations really not kept."""
import numpy as np
import pytest

import tensorplug as tp
from tensorplug.utils.checkpoint import CheckpointError, checkpoint, checkpoint_sequential

torch = pytest.importorskip("torch", reason="PyTorch 2.13's torch.utils.checkpoint is the reference")
import torch.utils.checkpoint  # noqa: E402


def _device_param(device):
    status = {s.device_type: s for s in tp.backends.status()}.get(device)
    if status is None:
        reason = f"no installed plugin registers the {device!r} device type"
    elif status.state in ("ready", "loaded"):
        return pytest.param(device, id=device)
    else:
        reason = f"{device} backend {status.state}: {status.detail}"
    return pytest.param(device, id=device, marks=pytest.mark.skip(reason=reason))


DEVICES = [_device_param(d) for d in ("cpu", "opencl", "npdev")]


@pytest.fixture(autouse=True, scope="module")
def _torch_single_thread():
    """PyTorch with one intra-op thread here: the models are tiny, and on a busy 2-core machine
    its OpenMP threads wait on each other."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _mlp(lib, width=6, depth=4):
    layers = []
    for _ in range(depth):
        layers += [lib.nn.Linear(width, width), lib.nn.Tanh()]
    return lib.nn.Sequential(*layers)


def _twin(device="cpu", dtype="float64", **kwargs):
    """The same MLP in both libraries (torch's weights copied into tensorplug's)."""
    theirs = _mlp(torch, **kwargs).to(getattr(torch, dtype))
    ours = _mlp(tp, **kwargs).to(getattr(tp, dtype))
    ours.load_state_dict({k: tp.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    return ours.to(device), theirs


def _assert_same_grads(ours, theirs, pairs=(), tol=None):
    tol = tol or dict(rtol=1e-9, atol=1e-12)
    for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert (p.grad is None) == (q.grad is None), name
        if q.grad is not None:
            np.testing.assert_allclose(p.grad.cpu().numpy(), q.grad.numpy(), err_msg=name, **tol)
    for a, b in pairs:
        np.testing.assert_allclose(a.cpu().numpy(), b.numpy(), **tol)


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_checkpoint_gradients_match_torch(use_reentrant):
    """Output and gradients of a two-argument checkpointed function equal torch's, for both variants."""
    ours, theirs = _twin()
    x, y = np.random.randn(3, 6), np.random.randn(3, 6)
    tx, ty = tp.tensor(x, requires_grad=True), tp.tensor(y, requires_grad=True)
    qx, qy = torch.tensor(x, requires_grad=True), torch.tensor(y, requires_grad=True)

    def body(lib_model):
        return lambda a, b, scale: lib_model(a * scale + b).sin()

    out = checkpoint(body(ours), tx, ty, 2.0, use_reentrant=use_reentrant)
    ref = torch.utils.checkpoint.checkpoint(body(theirs), qx, qy, 2.0, use_reentrant=use_reentrant)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-12)
    assert out.grad_fn.name() == "CheckpointFunctionBackward"
    (out ** 2).sum().backward()
    (ref ** 2).sum().backward()
    _assert_same_grads(ours, theirs, [(tx.grad, qx.grad), (ty.grad, qy.grad)])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("use_reentrant", [True, False])
def test_checkpoint_sequential_matches_torch(use_reentrant, device):
    """checkpoint_sequential over an nn.Sequential gives torch's gradients on every backend."""
    ours, theirs = _twin(device, "float32", depth=5)
    x = np.random.randn(4, 6).astype(np.float32)
    tx, qx = tp.tensor(x).to(device).requires_grad_(), torch.tensor(x, requires_grad=True)
    out = checkpoint_sequential(ours, 3, tx, use_reentrant=use_reentrant)
    ref = torch.utils.checkpoint.checkpoint_sequential(theirs, 3, qx, use_reentrant=use_reentrant)
    assert out.device.type == device
    np.testing.assert_allclose(out.detach().cpu().numpy(), ref.detach().numpy(), rtol=1e-5, atol=1e-6)
    out.sum().backward()
    ref.sum().backward()
    _assert_same_grads(ours, theirs, [(tx.grad, qx.grad)], tol=dict(rtol=1e-4, atol=1e-6))


def test_non_reentrant_keyword_arguments_and_autograd_grad():
    """Without reentrancy, keyword arguments reach the function and tp.autograd.grad with
    respect to parameters inside it works, as torch's."""
    ours, theirs = _twin()
    x = np.random.randn(2, 6)
    tx, qx = tp.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out = checkpoint(lambda a, *, shift: ours(a + shift), tx, shift=0.5, use_reentrant=False)
    ref = torch.utils.checkpoint.checkpoint(lambda a, *, shift: theirs(a + shift), qx, shift=0.5, use_reentrant=False)
    weight, ref_weight = ours[0].weight, theirs[0].weight
    grads = tp.autograd.grad(out.sum(), [weight, tx])
    ref_grads = torch.autograd.grad(ref.sum(), [ref_weight, qx])
    for a, b in zip(grads, ref_grads):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-9)
    assert weight.grad is None


def test_input_without_grad_as_torch():
    """With an input that needs no grad, the reentrant variant warns and leaves the parameters
    without gradients (PyTorch's behaviour); the non-reentrant one reaches them."""
    ours, theirs = _twin()
    x = np.random.randn(2, 6)
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        out = checkpoint(ours, tp.tensor(x), use_reentrant=True)
    assert not out.requires_grad
    out = checkpoint(ours, tp.tensor(x), use_reentrant=False)
    ref = torch.utils.checkpoint.checkpoint(theirs, torch.tensor(x), use_reentrant=False)
    out.sum().backward()
    ref.sum().backward()
    _assert_same_grads(ours, theirs)


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_dropout_masks_are_replayed(use_reentrant):
    """The recomputation draws the forward's dropout masks (gradients equal the plain run's), and
    leaves the generator where the plain run leaves it; without preserve_rng_state they differ."""
    model = tp.nn.Sequential(tp.nn.Linear(8, 16), tp.nn.Dropout(0.5), tp.nn.ReLU(), tp.nn.Linear(16, 4))
    x = tp.randn(5, 8, requires_grad=True)

    def grads(run):
        model.zero_grad()
        x.grad = None
        tp.manual_seed(7)
        run(x).pow(2).sum().backward()
        after = tp.rand(3)
        return [p.grad.numpy().copy() for p in model.parameters()] + [x.grad.numpy().copy()], after.numpy()

    plain, plain_after = grads(model)
    replayed, replayed_after = grads(lambda a: checkpoint(model, a, use_reentrant=use_reentrant))
    for a, b in zip(plain, replayed):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(plain_after, replayed_after)
    fresh, _ = grads(lambda a: checkpoint(model, a, use_reentrant=use_reentrant, preserve_rng_state=False))
    assert any(not np.array_equal(a, b) for a, b in zip(plain, fresh))


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_activations_are_not_kept(use_reentrant):
    """After the forward of a 24-layer chain, checkpointing in 4 segments holds 9 activations for
    backward where the plain run holds 24 (tp.cpu.memory_allocated), with equal gradients."""
    width, depth = 128, 24
    model = tp.nn.Sequential(*[m for _ in range(depth) for m in (tp.nn.Linear(width, width), tp.nn.Tanh())])
    x = tp.randn(64, width, requires_grad=True)

    def run(forward):
        model.zero_grad()
        x.grad = None
        before = tp.cpu.memory_allocated()
        out = forward(x)
        held = tp.cpu.memory_allocated() - before
        out.sum().backward()
        return held, [p.grad.numpy().copy() for p in model.parameters()] + [x.grad.numpy().copy()]

    plain_held, plain_grads = run(model)
    held, grads = run(lambda a: checkpoint_sequential(model, 4, a, use_reentrant=use_reentrant))
    activation = 64 * width * 4
    assert plain_held >= depth * activation  # each tanh output, which the next Linear saves too
    # Kept: the outputs of the 3 checkpointed segments (the inputs of the next) and the 6 tanh
    # outputs of the last, un-checkpointed segment: 9 activations instead of 24.
    assert held <= 9 * activation, (held, plain_held)
    for a, b in zip(plain_grads, grads):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


def test_closure_activation_is_not_checkpointed_with_a_warning():
    """A function reading a non-leaf tensor that requires grad from its closure runs without
    checkpointing (warned, naming the node) and its gradients stay right."""
    w = tp.randn(4, 4, requires_grad=True)
    h = w * 2
    x = tp.randn(3, 4, requires_grad=True)
    with pytest.warns(UserWarning, match="neither one of its arguments nor a leaf .*MulBackward0"):
        out = checkpoint(lambda a: (a @ h).tanh(), x, use_reentrant=False)
    out.sum().backward()
    tw, tx = torch.tensor(w.detach().numpy(), requires_grad=True), torch.tensor(x.detach().numpy(), requires_grad=True)
    (tx @ (tw * 2)).tanh().sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_errors_and_warnings_follow_torch():
    """Missing use_reentrant warns; keyword arguments or context_fn with reentrancy, a bad
    determinism_check, an input changed in place and a recomputation of another shape raise."""
    x = tp.randn(2, 3, requires_grad=True)
    with pytest.warns(UserWarning, match="the use_reentrant parameter should be passed explicitly"):
        checkpoint(tp.sin, x)
    with pytest.warns(UserWarning, match="checkpoint_sequential: the use_reentrant parameter"):
        checkpoint_sequential([tp.sin, tp.cos], 2, x)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: dim"):
        checkpoint(tp.sum, x, use_reentrant=True, dim=0)
    with pytest.raises(ValueError, match="determinism_check should be one of"):
        checkpoint(tp.sin, x, use_reentrant=False, determinism_check="strict")
    y = x * 1
    out = checkpoint(tp.sin, y, use_reentrant=False)
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()
    calls = []

    def grows(a):
        calls.append(1)
        return a.repeat(len(calls), 1).sin()

    with pytest.raises(CheckpointError, match=r"recomputed output 0 differs from the first run's: \[2, 3\]"):
        checkpoint(grows, x, use_reentrant=False).sum().backward()
