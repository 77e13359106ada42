"""var, std, var_mean and std_mean have PyTorch 2.13's gradients (its var_backward formula)
where the degrees of freedom N - correction are 0 or negative and at NaN: over every element with
no dim given, or of a 0-d input, grad * inf (NaN where the input equals its mean, so a 0-d NaN
gives -inf for a negative grad); with a dim, (2 / dof) * grad * (input - mean) (issue 16)."""
import itertools
import math
import warnings

import numpy as np
import pytest

import tensorplug as tp

NAN, INF = math.nan, math.inf
INPUTS = {
    "0-d": np.array(1.5), "0-d NaN": np.array(NAN), "0-d inf": np.array(INF), "one": np.array([1.5]),
    "one NaN": np.array([NAN]), "two": np.array([1.0, 2.0]), "two equal": np.array([3.0, 3.0]),
    "two with NaN": np.array([1.0, NAN]), "2x3": np.arange(6.0).reshape(2, 3), "1x3": np.array([[1.0, 4.0, 2.0]]),
}


def _cases():
    for op, (name, x) in itertools.product(("var", "std", "var_mean", "std_mean"), INPUTS.items()):
        dims = [None, 0] if x.ndim <= 1 else [None, 0, 1, (0, 1)]
        for dim, correction in itertools.product(dims, (0, 1, 2, 3)):
            yield pytest.param(op, name, dim, correction, id=f"{op}-{name}-dim={dim}-correction={correction}")


def _run(lib, op, x, dim, correction, device=None):
    """(outputs, input gradient) for the loss -1.5 * first output + 2 * second (if any)."""
    t = lib.tensor(x) if device is None else lib.tensor(x, device=device)
    t.requires_grad_(True)
    kwargs = {} if dim is None else {"dim": dim}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "degrees of freedom is <= 0", in both libraries
        out = getattr(lib, op)(t, correction=correction, **kwargs)
    outs = out if isinstance(out, tuple) else (out,)
    loss = sum((o * w).sum() for o, w in zip(outs, (-1.5, 2.0)))
    loss.backward()
    to_numpy = (lambda v: v.detach().cpu().numpy()) if device is not None else (lambda v: v.detach().numpy())
    return [to_numpy(o) for o in outs], to_numpy(t.grad)


@pytest.mark.parametrize("op, name, dim, correction", list(_cases()))
def test_matches_torch(op, name, dim, correction):
    """Values and the input's gradient equal PyTorch's, signed zeros included."""
    torch = pytest.importorskip("torch", reason="PyTorch 2.13 is the reference for these gradients")
    x = INPUTS[name]
    ours, our_grad = _run(tp, op, x, dim, correction)
    theirs, their_grad = _run(torch, op, x, dim, correction)
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(our_grad, their_grad, rtol=1e-12, equal_nan=True)
    numbers = ~np.isnan(their_grad)
    assert np.array_equal(np.signbit(our_grad)[numbers], np.signbit(their_grad)[numbers])  # -0.0 too


def test_degenerate_rules_by_hand():
    """The rules without PyTorch: a 0-d NaN's variance gradient is grad * inf; with a dim and
    correction N + 1, (2 / -1) * grad * (x - mean)."""
    x = tp.tensor(NAN, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tp.var(x).backward(tp.tensor(-2.0))
    assert x.grad.item() == -INF
    y = tp.tensor([1.0, 2.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tp.var(y, dim=0, correction=3).backward(tp.tensor(3.0))
    assert y.grad.tolist() == [3.0, -3.0]  # -2 * 3 * (x - 1.5)


@pytest.mark.parametrize("op, kwargs", [("var", {}), ("var", {"dim": 1}), ("std", {"dim": 0, "keepdim": True}),
                                        ("var_mean", {"dim": (0, 1)}), ("std_mean", {})], ids=str)
def test_second_derivative_matches_torch(op, kwargs):
    """The formula is differentiable: gradients of gradients equal PyTorch's (the mean's
    coupling between elements included)."""
    torch = pytest.importorskip("torch", reason="PyTorch 2.13 is the reference for these gradients")
    x = np.random.default_rng(0).standard_normal((3, 4))
    results = []
    for lib in (tp, torch):
        t = lib.tensor(x, requires_grad=True)
        out = getattr(lib, op)(t, **kwargs)
        outs = out if isinstance(out, tuple) else (out,)
        (g,) = lib.autograd.grad(sum((o * o).sum() for o in outs), t, create_graph=True)
        (g * lib.tensor(np.arange(12.0).reshape(3, 4))).sum().backward()
        results.append([g.detach().numpy(), t.grad.numpy()])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name, dim, correction", [("0-d NaN", None, 1), ("two", None, 2), ("2x3", 0, 3),
                                                   ("1x3", 1, 3), ("2x3", 1, 1)])
def test_on_every_device(device, name, dim, correction):
    """Each backend gives the CPU's values and gradients in the degenerate cases."""
    x = INPUTS[name]
    for op in ("var_mean", "std"):
        ours, our_grad = _run(tp, op, x, dim, correction, device)
        cpu, cpu_grad = _run(tp, op, x, dim, correction, "cpu")
        for a, b in zip(ours, cpu):
            np.testing.assert_allclose(a, b, rtol=1e-6, equal_nan=True)
        np.testing.assert_allclose(our_grad, cpu_grad, rtol=1e-6, equal_nan=True)


def test_an_empty_dim_list_reduces_every_element_for_the_gradient_too():
    """dim=[] reduces every element; its gradient is that reduction's (2 / (N - 1)) * (x - mean).
    PyTorch 2.13's derivative takes the empty list's size as 1 (+-inf): docs/deviations.md."""
    x = tp.arange(6.0, requires_grad=True)
    tp.var(x, dim=[]).backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 / 5 * (np.arange(6.0) - 2.5))
