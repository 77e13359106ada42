"""In-place operations and autograd: version checks, leaves, views of non-leaves, setitem."""
import numpy as np
import pytest

import tensorplug as tp
from autograd_reference import as_numpy, compare_with_torch, leaf, torch_module

MODIFIED = r"one of the variables needed for gradient computation has been modified by an inplace operation"
LEAF_INPLACE = r"a leaf Variable that requires grad is being used in an in-place operation"


def against_torch(fn, arrays, **kwargs):
    torch = torch_module()
    compare_with_torch(lambda *a: fn(tp, *a), lambda *a: fn(torch, *a), arrays, **kwargs)


def test_modified_saved_input_raises_with_versions():
    """Changing an input saved by mul before backward raises PyTorch's message with both versions."""
    x = leaf([1.0, 2.0])
    y = x * 2
    z = y * y
    y.add_(1)
    with pytest.raises(RuntimeError, match=MODIFIED) as info:
        z.sum().backward()
    assert "is at version 1; expected version 0 instead" in str(info.value)


def test_modified_saved_output_raises_with_versions():
    """Changing an output saved by exp (twice) reports version 2, expected 0."""
    x = leaf([1.0, 2.0])
    y = x.exp()
    y.mul_(2)
    y.add_(1)
    with pytest.raises(RuntimeError, match=MODIFIED) as info:
        y.sum().backward()
    assert "is at version 2; expected version 0 instead" in str(info.value)


def test_modified_saved_leaf_raises():
    """A leaf not requiring grad, saved by mul and modified afterwards, is caught too."""
    x = leaf([1.0, 2.0])
    w = leaf([3.0, 4.0], requires_grad=False)
    y = x * w
    w.mul_(2)
    with pytest.raises(RuntimeError, match=MODIFIED):
        y.sum().backward()


def test_views_share_the_version_counter():
    """An in-place op through a view bumps the base's version and every other view's."""
    x = leaf([1.0, 2.0, 3.0])
    y = x * 2
    v, w = y[0:2], y.view(3, 1)
    assert y._version == v._version == w._version == 0
    v.mul_(2)
    assert y._version == v._version == w._version == 1
    y.add_(1)
    assert y._version == v._version == w._version == 2


def test_modifying_a_view_of_a_saved_tensor_raises():
    """Writing through a view of a tensor saved for backward is detected at backward."""
    x = leaf([1.0, 2.0, 3.0])
    y = x * 2
    z = y.sin()
    y[1:].mul_(2)
    with pytest.raises(RuntimeError, match=MODIFIED):
        z.sum().backward()


def test_unsaved_tensor_may_be_modified():
    """add saves nothing: modifying its input afterwards is fine (as in PyTorch)."""
    x = leaf([1.0, 2.0])
    y = x * 2
    z = y + 1
    y.mul_(5)
    z.sum().backward()
    np.testing.assert_allclose(as_numpy(x.grad), [2.0, 2.0])


LEAF_OPS = {
    "add_": lambda x: x.add_(1),
    "mul_": lambda x: x.mul_(2),
    "iadd": lambda x: x.__iadd__(1.0),
    "sin_": lambda x: x.sin_(),
    "zero_": lambda x: x.zero_(),
    "fill_": lambda x: x.fill_(3.0),
    "copy_": lambda x: x.copy_(tp.ones(3, dtype=tp.float64)),
    "clamp_": lambda x: x.clamp_(0.0, 1.0),
    "setitem": lambda x: x.__setitem__(0, 5.0),
    "setitem-mask": lambda x: x.__setitem__(tp.tensor([True, False, True]), 5.0),
    "scatter_": lambda x: x.scatter_(0, tp.tensor([1]), 5.0),
}


@pytest.mark.parametrize("op", sorted(LEAF_OPS))
def test_inplace_on_leaf_requiring_grad_raises(op):
    """In-place ops on a leaf that requires grad raise PyTorch's message."""
    x = leaf([1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match=LEAF_INPLACE):
        LEAF_OPS[op](x)


@pytest.mark.parametrize("op", ["mul_", "setitem"])
def test_inplace_on_view_of_leaf_raises(op):
    """In-place ops on a view of a leaf that requires grad raise ('a view of a leaf Variable')."""
    x = leaf([1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match=r"a view of a leaf Variable that requires grad is being used in an in-place operation"):
        if op == "mul_":
            x[1:].mul_(2)
        else:
            x[1:][0] = 4.0


X = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
W = np.array([[1.0, 2.0, -1.0], [0.5, -0.5, 3.0]])


def _chain(m, x):
    y = x * 2
    y.add_(1)
    y.mul_(3)
    return y * y


NON_LEAF = {
    "add-then-mul": (lambda m, x: _chain(m, x), [X]),
    "mul-by-tensor": (lambda m, x, w: (x * 1).mul_(w).add_(w * w) * x, [X, W]),
    "div-sub-pow": (lambda m, x: (x + 3).div_(2).sub_(0.5).pow_(2), [X]),
    "exp-then-use": (lambda m, x: (x * 1).exp_() * 2, [X]),
    "sin-cos": (lambda m, x: (x * 1).sin_().cos_(), [X]),
    "clamp-relu": (lambda m, x: (x * 1).clamp_(max=1.0).relu_() * x, [X]),
    "iadd-imul": (lambda m, x: _iops(x * 1), [X]),
    "zero-then-add": (lambda m, x, w: (x * 1).zero_().add_(w), [X, W]),
    "copy-from-grad-tensor": (lambda m, x, w: (x * 1).copy_(w * 2) * x, [X, W]),
}


def _iops(y):
    y += 1
    y *= 3.0
    y -= 2
    return y


@pytest.mark.parametrize("case", sorted(NON_LEAF))
def test_inplace_on_non_leaf_matches_torch(case):
    """In-place ops on a non-leaf give PyTorch's values and gradients."""
    fn, arrays = NON_LEAF[case]
    against_torch(fn, arrays)


def test_inplace_on_non_leaf_updates_grad_fn():
    """After y.add_(1), y's grad_fn is the add's node, as in PyTorch (AddBackward0)."""
    x = leaf([1.0])
    y = x * 2
    y.add_(1)
    assert y.grad_fn.name() == "AddBackward0"
    assert y.grad_fn.next_functions[0][0].name() == "MulBackward0"


def _view_then(m, x, body):
    y = x * 2
    body(m, y)
    return y * y


VIEW_CASES = {
    "setitem-row-number": lambda m, y: y.__setitem__(0, 5.0),
    "slice-mul_": lambda m, y: y[1:].mul_(2),
    "column-add_": lambda m, y: y[:, 1].add_(10),
    "select-exp_": lambda m, y: y.select(1, 2).exp_(),
    "transposed-view": lambda m, y: y.t()[0].mul_(3),
    "view-of-view": lambda m, y: y[1][1:].sub_(1),
    "narrow-sin_": lambda m, y: y.narrow(1, 0, 2).sin_(),
    "reshape-view": lambda m, y: y.view(-1)[1:4].mul_(-1),
    "setitem-slice-number": lambda m, y: y.__setitem__((slice(None), slice(0, 2)), 0.0),
    "two-writes": lambda m, y: (y[0].mul_(2), y[:, 0].add_(1)),
    "diagonal-zero_": lambda m, y: y.diagonal().zero_(),
}


@pytest.mark.parametrize("case", sorted(VIEW_CASES))
def test_inplace_on_view_of_non_leaf_matches_torch(case):
    """In-place ops through a view of a non-leaf rebase the base's history: gradients match PyTorch."""
    against_torch(lambda m, x: _view_then(m, x, VIEW_CASES[case]), [X])


def _view_with_grad_value(m, x, w):
    y = x * 2
    y[:, 1] += w[:, 0]
    y[1] = w[1] * w[1]
    y[0, :2].mul_(w[0, :2])
    return y.sin()


def test_inplace_on_view_with_grad_operand_matches_torch():
    """Writes through views whose right-hand side requires grad give both inputs PyTorch's gradients."""
    against_torch(_view_with_grad_value, [X, W])


def test_inplace_on_view_base_grad_fn_is_copyslices():
    """After an in-place op on a view, the base's grad_fn is CopySlices, as in PyTorch."""
    x = leaf([1.0, 2.0])
    y = x * 2
    y[0].mul_(3)
    assert y.grad_fn.name() == "CopySlices"


SETITEM = {
    "row": lambda m, z, v: z.__setitem__(1, v[0]),
    "column": lambda m, z, v: z.__setitem__((slice(None), 0), v[:, 1] * 2),
    "slice-block": lambda m, z, v: z.__setitem__((slice(1, 3), slice(0, 3)), v[:2, :3]),
    "int-list": lambda m, z, v: z.__setitem__([0, 2], v[1:3]),
    "bool-mask": lambda m, z, v: z.__setitem__(m.tensor([True, False, True]), v[:2].exp()),
    "two-int-lists": lambda m, z, v: z.__setitem__(([0, 2], [1, 3]), v[0, :2]),
    "broadcast-value": lambda m, z, v: z.__setitem__((slice(None), 2), v[0, 0]),
    "mask-elements": lambda m, z, v: z.__setitem__(m.tensor(np.eye(3, 4, dtype=bool)), v[0, :3]),
}


@pytest.mark.parametrize("case", sorted(SETITEM))
def test_setitem_value_requiring_grad_into_zeros_matches_torch(case):
    """z = zeros(...); z[index] = v (v requires grad) routes v's gradient as PyTorch does."""
    v_np = np.random.default_rng(5).uniform(-1, 1, (3, 4))

    def fn(m, v):
        z = m.zeros(3, 4, dtype=m.float64)
        SETITEM[case](m, z, v)
        return z * z + z

    against_torch(fn, [v_np])


def test_setitem_into_zeros_records_history():
    """After z[1] = v with v requiring grad, z requires grad and has a grad_fn."""
    z = tp.zeros(3, dtype=tp.float64)
    z[tp.tensor([0, 2])] = leaf([1.0, 2.0])
    assert z.requires_grad and z.grad_fn is not None


def test_scatter_into_zeros_with_src_requiring_grad_matches_torch():
    """zeros().scatter_(dim, index, src) and scatter_add with src requiring grad match PyTorch."""
    src = np.random.default_rng(6).uniform(-1, 1, (2, 3))

    def fn(m, s):
        z = m.zeros(2, 4, dtype=m.float64)
        z.scatter_(1, m.tensor([[0, 3, 1], [2, 0, 3]]), s)
        a = m.zeros(2, 4, dtype=m.float64).scatter_add(1, m.tensor([[0, 0, 1], [3, 3, 3]]), s * s)
        return z + a

    against_torch(fn, [src])


def test_no_grad_inplace_update_of_leaves_matches_torch():
    """Optimizer-style updates under no_grad work on leaves and match PyTorch over three steps."""
    torch = torch_module()
    rng = np.random.default_rng(9)
    w_np, x_np, t_np = rng.uniform(-1, 1, (3, 2)), rng.uniform(-1, 1, (4, 3)), rng.uniform(-1, 1, (4, 2))
    finals = []
    for m, mk in ((tp, lambda v: leaf(v)), (torch, lambda v: torch.tensor(v, requires_grad=True))):
        w = mk(w_np)
        x, t = m.tensor(x_np, dtype=m.float64), m.tensor(t_np, dtype=m.float64)
        for _ in range(3):
            loss = ((x @ w).tanh() - t).pow(2).mean()
            loss.backward()
            with m.no_grad():
                w -= 0.5 * w.grad
                w.grad.zero_()
        assert w.is_leaf and w.requires_grad and w.grad_fn is None
        finals.append(np.asarray(w.detach().numpy()))
    np.testing.assert_allclose(finals[0], finals[1], rtol=1e-12)


def test_no_grad_setitem_and_copy_on_leaf():
    """Under no_grad, x[0] = ..., x.copy_() and x.zero_() on a leaf requiring grad are allowed."""
    x = leaf([1.0, 2.0, 3.0])
    with tp.no_grad():
        x[0] = 10.0
        x.mul_(2)
        x[1:].copy_(tp.tensor([0.5, 0.25], dtype=tp.float64))
    np.testing.assert_array_equal(as_numpy(x), [20.0, 0.5, 0.25])
    assert x.is_leaf and x.requires_grad
    (x * x).sum().backward()
    np.testing.assert_array_equal(as_numpy(x.grad), [40.0, 1.0, 0.5])


def test_inplace_on_detached_tensor_is_seen_by_the_original():
    """detach() shares storage and version: modifying it in place invalidates saved values."""
    x = leaf([1.0, 2.0])
    y = x.exp()
    y.detach().mul_(2)
    with pytest.raises(RuntimeError, match=MODIFIED):
        y.sum().backward()


@pytest.mark.parametrize("name", ["leaky_relu_", "elu_", "hardtanh_"])
def test_inplace_activation_on_non_leaf_gets_the_right_gradient(name):
    """In-place composites compute from a copy while recording, so saved values stay intact."""
    import tensorplug.nn.functional as F

    x = tp.tensor([-2.0, -0.5, 0.5, 2.0], dtype=tp.float64, requires_grad=True)
    y = getattr(F, name)(x * 1)
    y.sum().backward()
    reference = {"leaky_relu_": [0.01, 0.01, 1.0, 1.0], "elu_": [np.exp(-2.0), np.exp(-0.5), 1.0, 1.0],
                 "hardtanh_": [0.0, 1.0, 1.0, 0.0]}[name]
    np.testing.assert_allclose(x.grad.numpy(), reference, rtol=1e-12)
