"""Run a tensorplug module and the same torch.nn module with equal weights on the same inputs;
compare outputs and the gradients of inputs and parameters."""
import numpy as np
import pytest

import tensorplug as tp

TOL = {"float64": dict(rtol=1e-9, atol=1e-10), "float32": dict(rtol=1e-4, atol=1e-5)}
DEVICES = ["cpu", "opencl", "npdev"]


def device_param(device):
    """``device`` as a pytest param, skipped with tp.backends.status()'s reason when it is not usable."""
    status = {s.device_type: s for s in tp.backends.status()}.get(device)
    if status is None:
        reason = f"no installed plugin registers the {device!r} device type"
    elif status.state in ("ready", "loaded"):
        return pytest.param(device, id=device)
    else:
        reason = f"{device} backend {status.state}: {status.detail}"
    return pytest.param(device, id=device, marks=pytest.mark.skip(reason=reason))


DEVICE_PARAMS = [device_param(device) for device in DEVICES]


@pytest.fixture(autouse=True, scope="module")
def torch_single_thread():
    """PyTorch with one intra-op thread while a module runs: these models are far too small for
    threads, and on a busy 2-core machine its OpenMP threads made each step 10x slower."""
    torch = pytest.importorskip("torch", reason="PyTorch 2.13 is the reference")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def load_torch_weights(torch_module, tp_module, device="cpu"):
    """Give ``tp_module`` torch's weights through load_state_dict (names and shapes must agree)."""
    state = {k: tp.tensor(v.detach().cpu().numpy()) for k, v in torch_module.state_dict().items()}
    tp_module.load_state_dict(state)
    return tp_module.to(device)


def _convert(lib, value, dtype, device, requires_grad):
    """A NumPy array as ``lib``'s tensor: floats in ``dtype`` (requiring grad if asked), bools as is."""
    if not isinstance(value, np.ndarray):
        return value
    if value.dtype.kind == "f":
        value = value.astype(dtype)
    t = lib.tensor(value)
    if lib is tp:
        t = t.to(device)
    if requires_grad and value.dtype.kind == "f":
        t.requires_grad_(True)
    return t


def numpy_of(t):
    return t.detach().cpu().numpy()


def compare(torch, ours, theirs, args, kwargs=None, device="cpu", dtype="float64", grad=True):
    """Copy ``theirs``'s weights into ``ours``, call both with ``args`` (float arrays require grad)
    and ``kwargs`` (masks: bool or float arrays), and compare the output, then the gradients of
    the inputs and of every parameter for one random output gradient."""
    kwargs = kwargs or {}
    tol = TOL[dtype]
    theirs = theirs.to(getattr(torch, dtype))
    ours = load_torch_weights(theirs, ours.to(getattr(tp, dtype)), device).train(theirs.training)
    tp_args = [_convert(tp, a, dtype, device, grad) for a in args]
    torch_args = [_convert(torch, a, dtype, device, grad) for a in args]
    tp_kwargs = {k: _convert(tp, v, dtype, device, False) for k, v in kwargs.items()}
    torch_kwargs = {k: _convert(torch, v, dtype, device, False) for k, v in kwargs.items()}
    out, expected = ours(*tp_args, **tp_kwargs), theirs(*torch_args, **torch_kwargs)
    assert out.device.type == device
    assert tuple(out.shape) == tuple(expected.shape)
    np.testing.assert_allclose(numpy_of(out), numpy_of(expected), err_msg="output", **tol)
    if not grad:
        return
    g = np.random.default_rng(1).standard_normal(tuple(expected.shape)).astype(dtype)
    (out * tp.tensor(g).to(device)).sum().backward()
    (expected * torch.tensor(g)).sum().backward()
    for i, (a, b) in enumerate(zip(tp_args, torch_args)):
        if isinstance(b, torch.Tensor) and b.grad is not None:
            np.testing.assert_allclose(numpy_of(a.grad), numpy_of(b.grad), err_msg=f"grad of input {i}", **tol)
    params = dict(ours.named_parameters())
    for name, p in theirs.named_parameters():
        if p.grad is None:
            assert params[name].grad is None, name
        else:
            assert params[name].grad is not None, name
            np.testing.assert_allclose(numpy_of(params[name].grad), numpy_of(p.grad), err_msg=f"grad of {name}", **tol)
