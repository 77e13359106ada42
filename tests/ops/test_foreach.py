"""tp._foreach_*: every one of PyTorch 2.13's list ops that tensorplug has, against torch's own on
the same lists (values, in-place results and the returned containers), on every device; an EMA of
weights as timm and diffusers write it."""
import numpy as np
import pytest

import tensorplug as tp
from tensorplug.frontend.ops import foreach

try:
    import torch
except ImportError:  # the reference; tensorplug itself does not need it
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch (the reference) is not installed: pip install torch==2.13.0")

SHAPES = [(3,), (2, 4), ()]


def _lists(lib, device, seed, positive=False):
    rng = np.random.default_rng(seed)
    arrays = [rng.uniform(0.2, 0.9, shape) if positive else rng.uniform(-0.9, 0.9, shape) for shape in SHAPES]
    if lib is tp:
        return [tp.tensor(a, device=device) for a in arrays]
    return [torch.tensor(a) for a in arrays]


def _host(values):
    return [v.cpu().numpy() if isinstance(v, tp.Tensor) else v.numpy() for v in values]


def _same(got, want):
    assert type(got) is type(want) or (isinstance(got, list) and isinstance(want, list))
    for g, w in zip(_host(got), _host(want)):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


@needs_torch
@pytest.mark.parametrize("name", sorted(n for n in foreach.__all__ if n[9:].rstrip("_") in foreach._UNARY))
def test_unary(name, device):
    positive = any(k in name for k in ("log", "sqrt", "rsqrt", "acos", "asin", "lgamma"))
    ours, theirs = _lists(tp, device, 0, positive), _lists(torch, "cpu", 0, positive)
    got, want = getattr(tp, name)(ours), getattr(torch, name)(theirs)
    if name.endswith("_"):
        assert got is ours
        _same(ours, theirs)
    else:
        assert isinstance(got, tuple)
        _same(list(got), list(want))


@needs_torch
@pytest.mark.parametrize("name", sorted(n for n in foreach.__all__ if n[9:].rstrip("_") in foreach._BINARY))
@pytest.mark.parametrize("other", ["list", "number", "numbers"])
def test_binary(name, other, device):
    positive = "pow" in name
    ours, theirs = _lists(tp, device, 1, positive), _lists(torch, "cpu", 1, positive)
    if other == "list":
        o_ours, o_theirs = _lists(tp, device, 2, True), _lists(torch, "cpu", 2, True)
    elif other == "number":
        o_ours = o_theirs = 0.5
    else:
        o_ours = o_theirs = [0.5, 1.5, 2.0]
    got, want = getattr(tp, name)(ours, o_ours), getattr(torch, name)(theirs, o_theirs)
    _same(ours if name.endswith("_") else list(got), theirs if name.endswith("_") else list(want))


@needs_torch
@pytest.mark.parametrize("name", ["addcmul", "addcmul_", "addcdiv", "addcdiv_", "lerp", "lerp_"])
def test_three_operand_ops(name, device):
    ours, theirs = _lists(tp, device, 3), _lists(torch, "cpu", 3)
    a, b = _lists(tp, device, 4, True), _lists(tp, device, 5, True)
    ta, tb = _lists(torch, "cpu", 4, True), _lists(torch, "cpu", 5, True)
    if name.startswith("lerp"):
        got, want = getattr(tp, "_foreach_" + name)(ours, a, 0.3), getattr(torch, "_foreach_" + name)(theirs, ta, 0.3)
    else:
        got = getattr(tp, "_foreach_" + name)(ours, a, b, value=0.7)
        want = getattr(torch, "_foreach_" + name)(theirs, ta, tb, value=0.7)
    _same(ours if name.endswith("_") else list(got), theirs if name.endswith("_") else list(want))


@needs_torch
def test_reductions_copies_and_errors(device):
    ours, theirs = _lists(tp, device, 6), _lists(torch, "cpu", 6)
    _same(list(tp._foreach_norm(ours)), list(torch._foreach_norm(theirs)))
    _same(list(tp._foreach_norm(ours, 1)), list(torch._foreach_norm(theirs, 1)))
    _same(list(tp._foreach_max(ours)), list(torch._foreach_max(theirs)))
    clones = tp._foreach_clone(ours)
    tp._foreach_zero_(ours)
    assert all(float(t.abs().sum()) == 0 for t in ours) and any(float(c.abs().sum()) > 0 for c in clones)
    tp._foreach_copy_(ours, clones)
    _same(ours, theirs)
    with pytest.raises(RuntimeError, match="Tensor lists must have the same number of tensors, got 3 and 1"):
        tp._foreach_add(ours, ours[:1])
    with pytest.raises(TypeError, match="unexpected keyword argument 'alpha'"):
        tp._foreach_mul(ours, 2.0, alpha=2)


@pytest.mark.parametrize("name,reference", [
    ("_foreach_mul", lambda a, b: a * b), ("_foreach_add", lambda a, b: a + b), ("_foreach_div", lambda a, b: a / b),
    ("_foreach_maximum", np.maximum), ("_foreach_pow", np.power)])
def test_binary_against_numpy(name, reference, device):
    """Without PyTorch: each list element against NumPy in float64, list and number operands."""
    ours, others = _lists(tp, device, 8, True), _lists(tp, device, 9, True)
    arrays, other_arrays = [a.copy() for a in _host(ours)], [a.copy() for a in _host(others)]
    for got, a, b in zip(getattr(tp, name)(ours, others), arrays, other_arrays):
        np.testing.assert_allclose(got.cpu().numpy(), reference(a, b), rtol=1e-12, atol=1e-12)
    for got, a in zip(getattr(tp, name)(ours, 0.5), arrays):
        np.testing.assert_allclose(got.cpu().numpy(), reference(a, 0.5), rtol=1e-12, atol=1e-12)
    assert getattr(tp, name + "_")(ours, others) is ours
    for got, a, b in zip(ours, arrays, other_arrays):
        np.testing.assert_allclose(got.cpu().numpy(), reference(a, b), rtol=1e-12, atol=1e-12)


def test_unary_and_norm_against_numpy(device):
    ours = _lists(tp, device, 10, True)
    arrays = [a.copy() for a in _host(ours)]
    for got, a in zip(tp._foreach_sqrt(ours), arrays):
        np.testing.assert_allclose(got.cpu().numpy(), np.sqrt(a), rtol=1e-12)
    for got, a in zip(tp._foreach_norm(ours), arrays):
        np.testing.assert_allclose(float(got), np.sqrt((a * a).sum()), rtol=1e-12)
    tp._foreach_addcmul_(ours, ours, ours, value=2.0)
    for got, a in zip(ours, arrays):
        np.testing.assert_allclose(got.cpu().numpy(), a + 2.0 * a * a, rtol=1e-12)


def test_ema_of_weights(device):
    """timm's ModelEmaV3 / diffusers' EMAModel step: ema = ema * d + (1 - d) * p, in two forms."""
    model = tp.nn.Linear(4, 3).to(device)
    ema = [p.detach().clone() for p in model.parameters()]
    with tp.no_grad():
        for p in model.parameters():
            p.add_(1.0)
        params = list(model.parameters())
        expected = [e.cpu().numpy() * 0.9 + 0.1 * p.detach().cpu().numpy() for e, p in zip(ema, params)]
        tp._foreach_lerp_(ema, params, 0.1)
    for e, want in zip(ema, expected):
        np.testing.assert_allclose(e.cpu().numpy(), want, rtol=1e-6, atol=1e-6)
