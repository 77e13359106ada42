"""Run one expression in tensorplug and in PyTorch on identical inputs; compare values and grads."""
import numpy as np

import tensorplug as tp

TOL = {"float32": dict(rtol=1e-4, atol=1e-5), "float64": dict(rtol=1e-7, atol=1e-9)}


def make_pair(torch, array, dtype="float64", noncontiguous=False, requires_grad=False):
    """(tp leaf, torch leaf, tp input, torch input): the inputs are strided views when asked."""
    array = np.asarray(array)
    if array.dtype.kind == "f":
        array = array.astype(dtype)
    if noncontiguous and array.ndim:
        # Interleave a second copy along the last dim and take every other element.
        array = np.stack([array, np.zeros_like(array)], -1).reshape(array.shape[:-1] + (2 * array.shape[-1],))
    grad = requires_grad and array.dtype.kind == "f"
    a = tp.tensor(array, requires_grad=grad)
    b = torch.tensor(array, requires_grad=grad)
    if noncontiguous and array.ndim:
        return a, b, a[..., ::2], b[..., ::2]
    return a, b, a, b


def to_numpy(value):
    if hasattr(value, "detach"):
        value = value.detach()
    return np.asarray(value.numpy() if hasattr(value, "numpy") else value)


def check(torch, tp_fn, torch_fn, arrays, dtype="float64", noncontiguous=False, grad=True, tol=None, seed=0, grad_args=None):
    """Compare ``tp_fn(*inputs)`` with ``torch_fn(*inputs)``, then their gradients for a random
    output gradient; float arrays (those in ``grad_args`` when given) require grad when ``grad``."""
    tol = tol or TOL[dtype]
    pairs = [
        make_pair(torch, a, dtype, noncontiguous, grad and (grad_args is None or i in grad_args)) if isinstance(a, np.ndarray) else None
        for i, a in enumerate(arrays)
    ]
    tp_args = [p[2] if p else a for p, a in zip(pairs, arrays)]
    torch_args = [p[3] if p else a for p, a in zip(pairs, arrays)]
    ours, theirs = tp_fn(*tp_args), torch_fn(*torch_args)
    ours_list = ours if isinstance(ours, tuple) else (ours,)
    theirs_list = theirs if isinstance(theirs, tuple) else (theirs,)
    for o, t in zip(ours_list, theirs_list):
        assert tuple(o.shape) == tuple(t.shape)
        np.testing.assert_allclose(to_numpy(o), to_numpy(t), **tol)
    if not grad:
        return ours
    out, ref = ours_list[0], theirs_list[0]
    if not ref.requires_grad:
        return ours
    g = np.random.default_rng(seed).standard_normal(tuple(ref.shape)).astype(dtype)
    (out * tp.tensor(g)).sum().backward()
    (ref * torch.tensor(g)).sum().backward()
    for p in pairs:
        if p and p[1].requires_grad:
            assert p[0].grad is not None
            np.testing.assert_allclose(p[0].grad.numpy(), p[1].grad.numpy(), **tol)
    return ours
