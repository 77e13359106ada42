"""Run a tensorplug module and a PyTorch module with the same weights; compare outputs and grads."""
import numpy as np

import tensorplug as tp

TOL = {"float32": dict(rtol=1e-4, atol=1e-5), "float64": dict(rtol=1e-9, atol=1e-10)}


def copy_torch_weights(torch_module, tp_module) -> None:
    """Load the torch module's state_dict into the tensorplug one (through load_state_dict)."""
    state = {k: tp.tensor(v.detach().cpu().numpy()) for k, v in torch_module.state_dict().items()}
    tp_module.load_state_dict(state)


def flatten(value) -> list:
    """The tensors of a (possibly nested) tuple of outputs, in order."""
    if isinstance(value, (tuple, list)):
        return [t for item in value for t in flatten(item)]
    return [] if value is None else [value]


def to_numpy(value) -> np.ndarray:
    return np.asarray(value.detach().cpu().numpy() if hasattr(value, "detach") else value)


def assert_close(actual, expected, tol, what="") -> None:
    np.testing.assert_allclose(to_numpy(actual), to_numpy(expected), err_msg=what, **tol)


def check_module(torch, tp_module, torch_module, arrays, dtype="float64", tol=None, kwargs=None, grad=True):
    """Copy torch's weights into ``tp_module``, run both on ``arrays`` (float arrays require grad),
    compare every output, then the gradients of the inputs and parameters for a random output
    gradient."""
    tol = tol or TOL[dtype]
    kwargs = kwargs or {}
    if dtype == "float64":
        torch_module.double()
        tp_module.double()
    copy_torch_weights(torch_module, tp_module)
    tp_inputs, torch_inputs = [], []
    for a in arrays:
        a = np.asarray(a)
        needs_grad = grad and a.dtype.kind == "f"
        if a.dtype.kind == "f":
            a = a.astype(dtype)
        tp_inputs.append(tp.tensor(a, requires_grad=needs_grad))
        torch_inputs.append(torch.tensor(a, requires_grad=needs_grad))
    tp_out = flatten(tp_module(*tp_inputs, **kwargs.get("tp", {})))
    torch_out = flatten(torch_module(*torch_inputs, **kwargs.get("torch", {})))
    assert len(tp_out) == len(torch_out)
    for i, (a, b) in enumerate(zip(tp_out, torch_out)):
        assert tuple(a.shape) == tuple(b.shape), (i, a.shape, b.shape)
        assert_close(a, b, tol, f"output {i}")
    if not grad:
        return tp_out, torch_out
    rng = np.random.default_rng(1)
    tp_total, torch_total = 0, 0
    for a, b in zip(tp_out, torch_out):
        if not b.requires_grad:
            continue
        g = rng.standard_normal(tuple(b.shape)).astype(dtype)
        tp_total = tp_total + (a * tp.tensor(g)).sum()
        torch_total = torch_total + (b * torch.tensor(g)).sum()
    tp_total.backward()
    torch_total.backward()
    for i, (a, b) in enumerate(zip(tp_inputs, torch_inputs)):
        if b.grad is not None:
            assert_close(a.grad, b.grad, tol, f"grad of input {i}")
    tp_params = dict(tp_module.named_parameters())
    for name, param in torch_module.named_parameters():
        if param.grad is None:
            assert tp_params[name].grad is None, name
        else:
            assert tp_params[name].grad is not None, name
            assert_close(tp_params[name].grad, param.grad, tol, f"grad of {name}")
    return tp_out, torch_out
