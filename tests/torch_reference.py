"""Run one expression in tensorplug (on any device) and in PyTorch on identical inputs; compare
shapes, dtypes, values and the gradients of the floating inputs."""
import numpy as np
import pytest

import tensorplug as tp


def torch_or_skip():
    """PyTorch, the reference; skips the test without it."""
    return pytest.importorskip("torch", reason="PyTorch 2.13 is the reference here (pip install torch==2.13.0)")


def _tensor(lib, array, device, requires_grad):
    if not isinstance(array, np.ndarray):
        return array
    t = lib.tensor(array, device=device) if lib is tp else lib.tensor(array)
    if requires_grad and array.dtype.kind == "f":
        t.requires_grad_(True)
    return t


def _host(t) -> np.ndarray:
    t = t.detach()
    return t.cpu().numpy() if hasattr(t, "cpu") else t.numpy()


def _tolerance(dtype, rtol: float, atol: float) -> dict:
    if dtype is tp.float64 or not dtype.is_floating_point:
        return dict(rtol=rtol, atol=atol)
    return dict(rtol=max(rtol, 1e-5), atol=max(atol, 1e-5))


def compare(torch, fn, arrays, device="cpu", grad=True, rtol=1e-6, atol=1e-7, seed=0):
    """``fn(lib, *inputs)`` for lib = tensorplug (inputs on ``device``) and lib = torch; every
    output must match in shape, dtype and value (NaN where PyTorch has NaN); then, for a random
    output gradient, the gradients of the float inputs (when PyTorch's output requires grad).
    ``rtol``/``atol`` are for float64; narrower dtypes get at least 1e-5 (their rounding)."""
    ours_in = [_tensor(tp, a, device, grad) for a in arrays]
    theirs_in = [_tensor(torch, a, None, grad) for a in arrays]
    ours, theirs = fn(tp, *ours_in), fn(torch, *theirs_in)
    ours_out = list(ours) if isinstance(ours, (tuple, list)) else [ours]
    theirs_out = list(theirs) if isinstance(theirs, (tuple, list)) else [theirs]
    assert len(ours_out) == len(theirs_out)
    for o, t in zip(ours_out, theirs_out):
        assert tuple(o.shape) == tuple(t.shape), (o.shape, t.shape)
        assert o.dtype.name == str(t.dtype).removeprefix("torch."), (o.dtype, t.dtype)
        np.testing.assert_allclose(_host(o).astype(np.float64), _host(t).astype(np.float64), equal_nan=True,
                                   **_tolerance(o.dtype, rtol, atol))
    first, reference = ours_out[0], theirs_out[0]
    if not (grad and reference.requires_grad and reference.dtype.is_floating_point):
        return ours
    weights = np.random.default_rng(seed).standard_normal(tuple(reference.shape))
    (first * tp.tensor(weights, dtype=first.dtype, device=device)).sum().backward()
    (reference * torch.tensor(weights, dtype=reference.dtype)).sum().backward()
    for o, t in zip(ours_in, theirs_in):
        if isinstance(t, torch.Tensor) and t.requires_grad:
            expected = np.zeros(tuple(t.shape)) if t.grad is None else t.grad.numpy()
            got = np.zeros(tuple(o.shape)) if o.grad is None else _host(o.grad)
            np.testing.assert_allclose(got, expected, equal_nan=True, **_tolerance(o.dtype, rtol, atol))
    return ours


def assert_same_error(torch, call, error, words) -> None:
    """``call(lib)`` raises ``error`` (matching ``words``) in tensorplug and in PyTorch alike."""
    with pytest.raises(error, match=words):
        call(tp)
    with pytest.raises(error, match=words):
        call(torch)
